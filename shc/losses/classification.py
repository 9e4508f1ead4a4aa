"""Classification-style losses: a softmax over the classes, whose class scores come either from a
classifier (the stage-1 cross-entropy on logits; GreedyHash's and LTH's linear classifiers on the codes,
owned by the loss) or from the scaled cosines of the code to one fixed +-1 code per class (OrthoHash's
codebook, MDS's centers).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shc.losses.registry import (
    CodeBank,
    _centers_tensor,
    _check_codes,
    _check_labels,
    _label_tensor,
    _positive_number,
    _quantization_error,
    _target_matrix,
    register_loss,
)

__all__ = [
    "ClassificationLoss",
    "GreedyHashLoss",
    "LongTailLoss",
    "MDSLoss",
    "OrthoHashLoss",
    "class_balanced_weights",
    "class_counts",
]


def _signs(u: torch.Tensor) -> torch.Tensor:
    """``sign(u)`` in {-1, +1} with sign(0) = +1 (the convention of ``shc.models.hash_codes``)."""
    return torch.where(u >= 0, 1.0, -1.0).to(u.dtype)


@register_loss("cross_entropy")
class ClassificationLoss(nn.Module):
    """Cross-entropy on logits: the stage-1 classifier objective (Eq. 2-3).

    Class indices use the usual cross-entropy; multi-hot rows are normalised to a target distribution
    (soft-label cross-entropy), which equals the usual loss for one-hot rows.
    """

    def forward(
        self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None
    ) -> torch.Tensor:
        if outputs.ndim != 2:
            raise ValueError(f"outputs must be (B, C) logits, got shape {tuple(outputs.shape)}.")
        _check_labels(labels, outputs.shape[0], outputs.shape[1])
        if labels.ndim == 1:
            return F.cross_entropy(outputs, labels)
        targets = labels.to(outputs.dtype)
        return F.cross_entropy(outputs, targets / targets.sum(dim=1, keepdim=True))


@register_loss("greedyhash")
class GreedyHashLoss(nn.Module):
    """GreedyHash: classification of the binary codes with a straight-through sign (Su et al., NeurIPS 2018).

    ``b = sign(z)`` in the forward pass with the identity gradient (Eq. 7-8: ``b = z + (sign(z) - z)``
    detached), a linear classifier without bias on ``b`` (owned by the loss, trained with the network),
    cross-entropy on class indices or BCE on multi-hot rows, plus the penalty ``alpha mean(| |z| - 1 |^3)``
    (Eq. 9 with p = 3). Head option ``activation="identity"``.

    Parameters
    ----------
    num_classes, num_bits : int
    quantization_weight : float
        ``alpha``; 0.1, the official CIFAR-10 script's weight (``loss1 + 0.1 * loss2``; its ImageNet-100 script uses 1).
    """

    def __init__(self, num_classes: int, num_bits: int, quantization_weight: float = 0.1) -> None:
        super().__init__()
        self.num_classes, self.num_bits = int(num_classes), int(num_bits)
        self.classifier = nn.Linear(self.num_bits, self.num_classes, bias=False)
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        binary = outputs + (_signs(outputs) - outputs).detach()
        logits = self.classifier(binary)
        if labels.ndim == 1:
            classification = F.cross_entropy(logits, labels)
        else:
            classification = F.binary_cross_entropy_with_logits(logits, labels.float())
        return classification + self.quantization_weight * _quantization_error(outputs, power=3)

    def extra_repr(self) -> str:
        return f"quantization_weight={self.quantization_weight}"


def _log1m_softmax(logits: torch.Tensor) -> torch.Tensor:
    """``log(1 - softmax(logits))`` without cancellation, also where a probability rounds to 1.

    ``1 - p_k = sum_{j != k} e^{z_j} / sum_j e^{z_j}``. For every k but the row's arg-max the sum of the
    others is ``total - e^{z_k}``, which keeps the maximal term (no cancellation); for the arg-max it is
    summed directly.

    Limit: the sum is clamped at the dtype's smallest normal number, so where the arg-max leads every other logit
    by more than about 87 (float32) its value stops at ``log(tiny)`` and its gradient is 0. MDS, the one user,
    does not get there with its default scale: its logits are ``s cos`` with ``s = sqrt(q)``, a lead of at most
    ``2 sqrt(q)`` (16 at 64 bits; 64 at 1,024); a ``scale`` above about 43 could (none ships). Computing it
    another way would move every committed MDS run's last digits, so it stays.
    """
    shifted = (logits - logits.max(dim=1, keepdim=True).values).exp()
    total = shifted.sum(dim=1, keepdim=True)
    top = shifted.argmax(dim=1, keepdim=True)
    others_of_top = shifted.scatter(1, top, 0.0).sum(dim=1, keepdim=True)
    others = (total - shifted).scatter(1, top, others_of_top)
    return others.clamp(min=torch.finfo(logits.dtype).tiny).log() - total.log()


@register_loss("mds")
class MDSLoss(nn.Module):
    """MDS's center loss (Wang et al., "Hash centers with minimal distance separation", CVPR 2023).

    As the official code (Wangld5/Center-Hashing, ``OurLoss.cos_eps_loss``): ``p = softmax(s cos(u, h_c))``
    over all C centers, a binary cross-entropy of every ``p_c`` against ``y_c`` (1 for the sample's classes)
    averaged over samples and classes, plus ``lambda mean((|u| - 1)^2)``. The code layer is
    Linear-BatchNorm-tanh (head option ``batch_norm=True``).

    The optional pair term (``pair_weight > 0``; the official code uses 1.0 from its 10th epoch) adds
    ``pair_weight * mean over similar pairs (i in batch, j in train) of log(1 + e^{(1 - cos(u_i, U_j)) / 2})``
    with ``U`` a bank of the training samples' latest outputs (the official code fills it from a momentum
    encoder; here from the network itself).

    Parameters
    ----------
    centers : array-like, shape (C, q)
        +-1 hash centers (``shc.centers.generate_centers("mds", ...)``).
    train_labels : array-like, optional
        The training split's labels; needed only with the pair term.
    scale : float, optional
        ``s``; default ``sqrt(q)``, the official value.
    quantization_weight : float
        ``lambda``; 1e-4, the official value.
    pair_weight : float
        Weight of the pair term; 0 (off) by default.
    """

    def __init__(
        self,
        centers: Any,
        train_labels: Any | None = None,
        scale: float | None = None,
        quantization_weight: float = 1e-4,
        pair_weight: float = 0.0,
    ) -> None:
        super().__init__()
        self.register_buffer("centers", _centers_tensor(centers))
        num_classes, num_bits = self.centers.shape
        self.scale = math.sqrt(num_bits) if scale is None else _positive_number(scale, "scale")
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)
        self.pair_weight = _positive_number(pair_weight, "pair_weight", allow_zero=True)
        self.bank = None
        if self.pair_weight > 0:
            if train_labels is None:
                raise ValueError(
                    "pair_weight > 0 needs the memory bank: pass train_labels (the training split's labels)."
                )
            self.bank = CodeBank(train_labels, num_classes, num_bits)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        num_classes, num_bits = self.centers.shape
        _check_codes(outputs, num_bits)
        _check_labels(labels, outputs.shape[0], num_classes)
        unit = F.normalize(outputs, dim=1)
        logits = self.scale * unit @ F.normalize(self.centers, dim=1).T
        targets = _target_matrix(labels, num_classes)
        log_p = F.log_softmax(logits, dim=1)
        center_loss = -(targets * log_p + (1 - targets) * _log1m_softmax(logits)).mean()
        loss = center_loss + self.quantization_weight * _quantization_error(outputs)
        if self.bank is not None:
            self.bank.update(outputs, labels, indices)
            positive = (self.bank.similarity(labels) & self.bank.filled).float()
            cosine = unit @ F.normalize(self.bank.codes, dim=1).T
            loss = loss + self.pair_weight * (F.softplus((1 - cosine) / 2) * positive).sum() / positive.sum()
        return loss

    def extra_repr(self) -> str:
        return (
            f"num_classes={self.centers.shape[0]}, num_bits={self.centers.shape[1]}, scale={self.scale:.4g}, "
            f"quantization_weight={self.quantization_weight}, pair_weight={self.pair_weight}"
        )


def class_counts(train_labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """Training samples per class (C,) as float64; a multi-label sample counts once for each of its labels."""
    if train_labels.ndim == 1:
        return torch.bincount(train_labels, minlength=num_classes).double()
    return train_labels.double().sum(dim=0)


def class_balanced_weights(counts: Any, beta: float) -> torch.Tensor:
    """Class-balanced weights ``(1 - beta) / (1 - beta^n_c)`` divided by their maximum (Cui et al., CVPR 2019).

    ``(1 - beta^n) / (1 - beta)`` is the "effective number" of ``n`` samples; LTH weights its
    cross-entropy by its inverse. ``beta = 0`` gives equal weights; classes without samples get weight 1
    (they never occur as a target).

    Parameters
    ----------
    counts : array-like, shape (C,)
        Samples per class (:func:`class_counts`).
    beta : float
        In [0, 1).
    """
    if not 0 <= beta < 1:
        raise ValueError(f"beta must lie in [0, 1), got {beta}.")
    counts = torch.as_tensor(np.asarray(counts), dtype=torch.float64)
    weights = (1 - beta) / (1 - beta ** counts.clamp(min=1))
    weights = torch.where(counts > 0, weights, weights.max())
    return (weights / weights.max()).float()


@register_loss("lth")
class LongTailLoss(nn.Module):
    """LTH's class-balanced cross-entropy on the codes (Chen et al., "Long-Tail Hashing", SIGIR 2021).

    A linear classifier (owned by the loss) maps the codes ``u`` to class scores; the loss is
    ``-sum_c w_c y_c log softmax(W u + b)_c`` averaged over the batch, with the class-balanced weights
    :func:`class_balanced_weights` of the training labels (multi-hot rows sum over their classes, as the
    official code's ``targets`` product does). The other half of LTH, the dynamic meta-embedding, is in
    the network: head option ``memory_slots`` (``shc.models.MetaEmbedding``).

    Parameters
    ----------
    train_labels : array-like
        The training split's labels (for the class counts).
    num_classes, num_bits : int
    beta : float
        Class-balance factor in [0, 1); 0.99, the default documented by the official code's options
        (its script runs with 0, plain cross-entropy; the paper finds the weights matter little). On a
        balanced training set every weight is 1.
    """

    def __init__(self, train_labels: Any, num_classes: int, num_bits: int, beta: float = 0.99) -> None:
        super().__init__()
        self.num_classes, self.num_bits, self.beta = int(num_classes), int(num_bits), float(beta)
        counts = class_counts(_label_tensor(train_labels, num_classes), num_classes)
        self.register_buffer("class_weights", class_balanced_weights(counts, beta), persistent=False)
        self.classifier = nn.Linear(self.num_bits, self.num_classes)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        log_p = F.log_softmax(self.classifier(outputs), dim=1)
        targets = _target_matrix(labels, self.num_classes)
        return -(targets * self.class_weights * log_p).sum() / outputs.shape[0]

    def extra_repr(self) -> str:
        return f"beta={self.beta}"


@register_loss("orthohash")
class OrthoHashLoss(nn.Module):
    """OrthoHash: cosine-margin cross-entropy against a fixed +-1 codebook (Hoe et al., NeurIPS 2021, Eq. 8-10).

    ``logits_k = s (cos(u, c_k) - m 1[k in y])`` and cross-entropy on them; multi-hot rows use the
    official "label smoothing" form (soft targets ``y / |y|``, margin on every positive class). The
    codebook has one random +-1 code per class (Bernoulli(0.5), the official ``codebook_method='B'``;
    ``shc.centers.generate_centers("random", ...)``). The code layer is Linear-BatchNorm with no
    activation (head options ``batch_norm=True, activation="identity"``). The optional quantisation
    term is the official cosine one, ``1 - cos(u, sign(u))`` with ``sign(u)`` detached.

    Parameters
    ----------
    centers : array-like, shape (C, q)
        The codebook.
    scale, margin : float
        ``s = 8`` and ``m = 0.2``, the official defaults.
    quantization_weight : float
        0, the official default.
    """

    def __init__(
        self, centers: Any, scale: float = 8.0, margin: float = 0.2, quantization_weight: float = 0.0
    ) -> None:
        super().__init__()
        self.register_buffer("codebook", _centers_tensor(centers))
        self.scale = _positive_number(scale, "scale")
        self.margin = _positive_number(margin, "margin", allow_zero=True)
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        num_classes, num_bits = self.codebook.shape
        _check_codes(outputs, num_bits)
        _check_labels(labels, outputs.shape[0], num_classes)
        cosine = F.normalize(outputs, dim=1) @ F.normalize(self.codebook, dim=1).T
        targets = _target_matrix(labels, num_classes)
        logits = self.scale * (cosine - self.margin * targets)
        soft_targets = targets / targets.sum(dim=1, keepdim=True)
        loss = -(soft_targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
        if self.quantization_weight:
            quantization = 1 - F.cosine_similarity(outputs, _signs(outputs).detach(), dim=1)
            loss = loss + self.quantization_weight * quantization.mean()
        return loss

    def extra_repr(self) -> str:
        num_classes, num_bits = self.codebook.shape
        return (f"num_classes={num_classes}, num_bits={num_bits}, scale={self.scale}, margin={self.margin}, "
                f"quantization_weight={self.quantization_weight}")
