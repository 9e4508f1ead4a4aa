"""Training objectives, one ``nn.Module`` per method, registered by name.

The training loop (``shc.train``) treats every method alike: a loss is called as
``loss(outputs, labels, indices) -> scalar tensor`` where

- ``outputs`` are the network's outputs for the batch: continuous codes ``u`` (B, q) for hashing
  networks, logits (B, C) for classifiers;
- ``labels`` are int64 class indices (B,) or float multi-hot rows (B, C);
- ``indices`` are the samples' positions in the dataset (B,), for losses with a memory bank; the
  others ignore them.

Register a new method with :func:`register_loss` and build one with :func:`build_loss`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shc.registry import Registry
from shc.validation import class_labels, sign_codes

__all__ = [
    "IDHN_HARD_TOLERANCE",
    "LOSSES",
    "CenterLoss",
    "ClassificationLoss",
    "CRHLoss",
    "CodeBank",
    "DPSHLoss",
    "DTSHLoss",
    "GreedyHashLoss",
    "HashNetLoss",
    "IDHNLoss",
    "LongTailLoss",
    "MDSLoss",
    "OrthoHashLoss",
    "build_loss",
    "class_balanced_weights",
    "class_counts",
    "register_loss",
]

LOSSES: Registry[type[nn.Module]] = Registry("loss")
"""Every loss class by name; ``@register_loss(name)`` adds one."""
register_loss = LOSSES.register


def build_loss(name: str, **kwargs: Any) -> nn.Module:
    """Instantiate the loss registered as ``name`` with ``kwargs``."""
    return LOSSES.get(name)(**kwargs)


def _check_labels(labels: torch.Tensor, batch_size: int, num_classes: int) -> None:
    if labels.shape[0] != batch_size:
        raise ValueError(f"labels has {labels.shape[0]} rows but outputs has {batch_size}; they must match.")
    if labels.ndim == 1:
        if labels.dtype.is_floating_point or labels.dtype == torch.bool:
            raise TypeError(f"class-index labels must be integers, got {labels.dtype}; use labels.long().")
        if labels.numel() and (labels.min() < 0 or labels.max() >= num_classes):
            raise ValueError(
                f"labels must lie in [0, {num_classes - 1}], got values in [{labels.min()}, {labels.max()}]; "
                "check the number of classes of the centers or the classifier."
            )
    elif labels.ndim == 2:
        if labels.shape[1] != num_classes:
            raise ValueError(f"multi-hot labels must have {num_classes} columns, got {labels.shape[1]}.")
        if (labels.sum(dim=1) <= 0).any():
            raise ValueError("every multi-hot label row needs a positive class; drop unlabelled samples.")
    else:
        raise ValueError(
            f"labels must be (B,) class indices or (B, C) multi-hot rows, got shape {tuple(labels.shape)}."
        )


def _centers_tensor(centers: Any) -> torch.Tensor:
    return torch.as_tensor(sign_codes(centers, "centers"), dtype=torch.float32)


@register_loss("center")
class CenterLoss(nn.Module):
    """CSQ's central similarity loss, as SHC trains with it (paper Eq. 41-43).

    ``L = mean BCE((u + 1) / 2, (h + 1) / 2) + gamma * mean((|u| - 1)^2)``, with ``h`` the hash center of
    each sample's class. For +-1 targets the BCE of one bit is ``-log((1 + h u) / 2)``.

    Both terms are means over samples *and bits*, as in CSQ's released code (``nn.BCELoss()`` and
    ``(u.abs() - 1).pow(2).mean()``). The paper writes L_C as a mean over samples of a sum over bits and
    L_Q as a sum over samples and bits: relative to those, our L_C is divided by ``q`` and our L_Q by
    ``N q``. ``gamma = 1e-4``, the paper's value, comes from CSQ and has its meaning under CSQ's means.

    Multi-label samples take the sign of the mean of their classes' centers (CSQ's rule). A bit where
    those centers tie (sum 0) gets a random sign drawn once per loss from ``seed``, the same for every
    sample and class combination (CSQ draws one such vector at construction too).

    Parameters
    ----------
    centers : array-like or torch.Tensor, shape (C, q)
        Hash centers in {-1, +1}; stored as a buffer (moves with ``.to(device)``).
    gamma : float
        Weight of the quantisation term L_Q (Eq. 43).
    seed : int
        Seed of the multi-label tie-break signs.
    eps : float
        ``1 + h u`` is clamped to at least ``eps`` so that a saturated wrong bit costs ``-log(eps / 2)``
        instead of infinity.
    """

    def __init__(self, centers: Any, gamma: float = 1e-4, seed: int = 0, eps: float = 1e-6) -> None:
        super().__init__()
        centers = _centers_tensor(centers)
        if gamma < 0:
            raise ValueError(f"gamma must be non-negative, got {gamma}.")
        if not 0 < eps < 1:
            raise ValueError(f"eps must lie in (0, 1), got {eps}.")
        generator = torch.Generator().manual_seed(seed)
        tie_signs = torch.randint(0, 2, (centers.shape[1],), generator=generator) * 2 - 1
        self.register_buffer("centers", centers)
        self.register_buffer("tie_signs", tie_signs.float())
        self.gamma = float(gamma)
        self.eps = float(eps)

    def targets(self, labels: torch.Tensor) -> torch.Tensor:
        """The +-1 target code of each sample, shape (B, q)."""
        _check_labels(labels, labels.shape[0], self.centers.shape[0])
        return self._targets(labels)

    def _targets(self, labels: torch.Tensor) -> torch.Tensor:
        if labels.ndim == 1:
            return self.centers[labels]
        center_sums = labels.to(self.centers.dtype) @ self.centers  # same sign as the mean
        return torch.where(center_sums == 0, self.tie_signs, torch.sign(center_sums))

    def forward(
        self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None
    ) -> torch.Tensor:
        if outputs.ndim != 2 or outputs.shape[1] != self.centers.shape[1]:
            raise ValueError(
                f"outputs must be (B, {self.centers.shape[1]}) codes to match the centers, "
                f"got {tuple(outputs.shape)}."
            )
        _check_labels(labels, outputs.shape[0], self.centers.shape[0])
        agreement = (self._targets(labels) * outputs).clamp(min=self.eps - 1)
        center_loss = (np.log(2.0) - torch.log1p(agreement)).mean()  # -log((1 + h u) / 2)
        quantization_loss = (outputs.abs() - 1).pow(2).mean()
        return center_loss + self.gamma * quantization_loss

    def extra_repr(self) -> str:
        return f"num_classes={self.centers.shape[0]}, num_bits={self.centers.shape[1]}, gamma={self.gamma}"


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


# ==============================================================================================
# Baselines (the nine methods the paper compares against, Sec. 5.1.3). One loss per method, each
# written from its paper and checked against its official code; docs/baselines.md lists what we
# fixed or chose. All are means over the batch, run in float32 and never loop over samples.
# ==============================================================================================
#: IDHN's tolerance for "hard" pairs: label cosine <= 0.01 or >= 0.99 counts as dissimilar / similar.
IDHN_HARD_TOLERANCE = 0.01


def _signs(u: torch.Tensor) -> torch.Tensor:
    """``sign(u)`` in {-1, +1} with sign(0) = +1 (the convention of ``shc.models.hash_codes``)."""
    return torch.where(u >= 0, 1.0, -1.0).to(u.dtype)


def _quantization_error(u: torch.Tensor, power: float = 2.0) -> torch.Tensor:
    """``mean(| |u| - 1 |^power)`` over samples and bits; ``power=2`` is ``mean((u - sign u)^2)``."""
    return (u.abs() - 1).abs().pow(power).mean()


def _pair_nll(theta: torch.Tensor, similarity: torch.Tensor) -> torch.Tensor:
    """``log(1 + e^theta) - s theta``: the negative log-likelihood of ``s`` under ``sigmoid(theta)``
    (DPSH Eq. 2, HashNet Eq. 4, IDHN), computed with a stable softplus."""
    return F.softplus(theta) - similarity * theta


def _target_matrix(labels: torch.Tensor, num_classes: int) -> torch.Tensor:
    """(B, C) float targets: one-hot rows for class indices, the multi-hot rows themselves otherwise."""
    if labels.ndim == 1:
        return F.one_hot(labels, num_classes).float()
    return labels.float()


def _label_similarity(labels_a: torch.Tensor, labels_b: torch.Tensor) -> torch.Tensor:
    """(A, B) bool: the two samples share a label (the usual s_ij of deep hashing)."""
    if labels_a.ndim != labels_b.ndim:
        raise ValueError(
            "the batch labels and the training labels have different formats (class indices vs multi-hot); "
            "pass train_labels in the format the dataset yields."
        )
    if labels_a.ndim == 1:
        return labels_a[:, None] == labels_b[None, :]
    return (labels_a.float() @ labels_b.float().T) > 0


def _label_cosine(labels: torch.Tensor) -> torch.Tensor:
    """(B, B) cosine of the label vectors in [0, 1] (IDHN's quantified similarity); 0/1 for class indices."""
    if labels.ndim == 1:
        return (labels[:, None] == labels[None, :]).float()
    unit = F.normalize(labels.float(), dim=1)
    return (unit @ unit.T).clamp(0.0, 1.0)


def _off_diagonal(size: int, device: torch.device) -> torch.Tensor:
    return ~torch.eye(size, dtype=torch.bool, device=device)


def _check_codes(outputs: torch.Tensor, num_bits: int) -> None:
    if outputs.ndim != 2 or outputs.shape[1] != num_bits:
        raise ValueError(
            f"outputs must be (B, {num_bits}) codes of the hashing network, got shape {tuple(outputs.shape)}; "
            "build the loss with the network's num_bits."
        )


def _positive_number(value: float, name: str, allow_zero: bool = False) -> float:
    """``value`` as a float, checked finite and > 0 (>= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}.")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}.")
    return float(value)


def _label_tensor(train_labels: Any, num_classes: int) -> torch.Tensor:
    """The training split's labels as int64 (N,) class indices or float32 (N, C) multi-hot, validated."""
    labels = class_labels(train_labels, "train_labels", num_classes=num_classes)
    if len(labels) == 0:
        raise ValueError("train_labels is empty; pass the training split's labels, e.g. splits.train.labels.")
    return torch.from_numpy(labels.astype(np.int64 if labels.ndim == 1 else np.float32))


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


class CodeBank(nn.Module):
    """A memory bank of the latest continuous code of every training sample, with its labels.

    DPSH and MDS's pair term compare the batch with the whole training set through it. ``codes`` (N, q)
    and ``filled`` (N,) are buffers, so checkpoints carry them; the labels are rebuilt from
    ``train_labels`` and not saved. Rows never written are masked out by ``filled``.

    Parameters
    ----------
    train_labels : array-like
        The training split's labels, (N,) class indices or (N, C) multi-hot, in dataset order.
    num_classes, num_bits : int
        C and q.
    """

    def __init__(self, train_labels: Any, num_classes: int, num_bits: int) -> None:
        super().__init__()
        labels = _label_tensor(train_labels, num_classes)
        self.register_buffer("labels", labels, persistent=False)
        self.register_buffer("codes", torch.zeros(len(labels), num_bits))
        self.register_buffer("filled", torch.zeros(len(labels), dtype=torch.bool))

    @torch.no_grad()
    def update(self, codes: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None) -> None:
        """Store the batch's codes (detached) at ``indices``, checking that the labels there match."""
        if indices is None:
            raise ValueError("this loss keeps a memory bank and needs the samples' dataset indices; pass indices.")
        indices = indices.long()
        if indices.ndim != 1 or len(indices) != len(codes):
            raise ValueError(f"indices must be (B,) = ({len(codes)},), got shape {tuple(indices.shape)}.")
        if indices.min() < 0 or indices.max() >= len(self.codes):
            raise ValueError(
                f"indices must lie in [0, {len(self.codes) - 1}] (the training split the bank was built for), "
                f"got [{indices.min()}, {indices.max()}]."
            )
        if not torch.equal(self.labels[indices].to(labels.dtype), labels):
            raise ValueError(
                "the batch labels differ from train_labels at the batch's indices; build the loss with the labels "
                "of the split you train on, in dataset order."
            )
        self.codes[indices] = codes.detach().to(self.codes.dtype)
        self.filled[indices] = True

    def similarity(self, labels: torch.Tensor) -> torch.Tensor:
        """(B, N) bool: batch sample i shares a label with training sample j."""
        return _label_similarity(labels, self.labels)

    def extra_repr(self) -> str:
        return f"num_samples={self.codes.shape[0]}, num_bits={self.codes.shape[1]}"


@register_loss("dpsh")
class DPSHLoss(nn.Module):
    """DPSH: pairwise likelihood against every training sample (Li, Wang & Kang, IJCAI 2016, Eq. 2-5).

    ``L = mean_{i in batch, j in train} [log(1 + e^Theta_ij) - s_ij Theta_ij] + eta mean((u - sign u)^2)``
    with ``Theta_ij = u_i . U_j / 2``, ``s_ij = 1`` when i and j share a label. ``U`` is a bank of the
    latest output of every training sample, updated with the batch (detached) before the loss, as in the
    official code (DPSH_PyTorch) and DeepHash-pytorch; rows not yet seen are left out of the mean
    (DeepHash-pytorch averages their constant log 2 in). The network output is linear (DPSH's
    ``u = W^T phi(x) + v``): use the head option ``activation="identity"``.

    Parameters
    ----------
    train_labels : array-like
        The training split's labels in dataset order (sizes the bank).
    num_classes, num_bits : int
    quantization_weight : float
        ``eta``; 0.1 as DeepHash-pytorch's config (the same means over pairs and over code entries).
    """

    def __init__(self, train_labels: Any, num_classes: int, num_bits: int, quantization_weight: float = 0.1) -> None:
        super().__init__()
        self.bank = CodeBank(train_labels, num_classes, num_bits)
        self.num_classes, self.num_bits = int(num_classes), int(num_bits)
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        self.bank.update(outputs, labels, indices)
        theta = outputs @ self.bank.codes.T / 2
        nll = _pair_nll(theta, self.bank.similarity(labels).float())
        filled = self.bank.filled.float()
        likelihood = (nll * filled).sum() / (outputs.shape[0] * filled.sum())
        return likelihood + self.quantization_weight * _quantization_error(outputs)

    def extra_repr(self) -> str:
        return f"quantization_weight={self.quantization_weight}"


@register_loss("dtsh")
class DTSHLoss(nn.Module):
    """DTSH: triplet likelihood with a margin (Wang, Shi & Kitani, ACCV 2016, Eq. 3-6).

    For every triplet of the batch with anchor a, positive p != a (shares a label with a) and negative n
    (shares none), ``Theta = (u_a . u_p - u_a . u_n) / 2 - margin`` and the triplet costs
    ``-log sigmoid(Theta) = log(1 + e^-Theta)``. The loss averages the triplets of each anchor, then the
    anchors that have any (the official code's and DeepHash-pytorch's weighting), and adds
    ``lambda mean((u - sign u)^2)``. All triplets are used at once through a (B, B, B) tensor: memory
    grows as B^3 (16 M entries at B = 256). Head option ``activation="identity"`` (linear outputs).

    Parameters
    ----------
    num_classes, num_bits : int
    margin : float, optional
        ``alpha``; default ``q / 2``, what the official code passes (``DTSH(codelens)`` -> margin
        ``codelens / 2``).
    quantization_weight : float
        ``lambda``; 1.0 as DeepHash-pytorch (the official code's eta = 100 multiplies a sum over its
        sampled triplets, so it has no fixed value under means).
    """

    def __init__(
        self, num_classes: int, num_bits: int, margin: float | None = None, quantization_weight: float = 1.0
    ) -> None:
        super().__init__()
        self.num_classes, self.num_bits = int(num_classes), int(num_bits)
        self.margin = num_bits / 2 if margin is None else _positive_number(margin, "margin", allow_zero=True)
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        similar = _label_similarity(labels, labels)
        positive = similar & _off_diagonal(len(outputs), outputs.device)
        valid = positive[:, :, None] & ~similar[:, None, :]  # [a, p, n]
        inner = outputs @ outputs.T
        theta = (inner[:, :, None] - inner[:, None, :]) / 2 - self.margin
        per_triplet = F.softplus(-theta) * valid
        triplets = valid.sum(dim=(1, 2))
        has_triplets = triplets > 0
        per_anchor = per_triplet.sum(dim=(1, 2))[has_triplets] / triplets[has_triplets]
        likelihood = per_anchor.mean() if has_triplets.any() else outputs.sum() * 0.0
        return likelihood + self.quantization_weight * _quantization_error(outputs)

    def extra_repr(self) -> str:
        return f"margin={self.margin}, quantization_weight={self.quantization_weight}"


@register_loss("hashnet")
class HashNetLoss(nn.Module):
    """HashNet: weighted pairwise cross-entropy with continuation (Cao et al., ICCV 2017, Eq. 4-6).

    The network gives pre-activations ``z`` (head option ``activation="identity"``); the loss takes
    ``h = tanh(beta z)`` and, over the pairs i != j of the batch,
    ``L = sum_ij w_ij [log(1 + e^{alpha h_i.h_j}) - s_ij alpha h_i.h_j] / |S|`` with the paper's balancing
    weights ``w_ij = |S| / |S_1|`` for similar and ``|S| / |S_0|`` for dissimilar pairs (so L is the mean
    over similar pairs plus the mean over dissimilar pairs). The continuation follows the official code:
    every ``step_size`` training steps ``beta = (1 + gamma * step)^power``; the step counter is a buffer
    (checkpointed) that advances on every call with gradients enabled while the loss is in training mode.

    Parameters
    ----------
    num_classes, num_bits : int
    alpha : float, optional
        Sigmoid scale of the inner product; default ``10 / q`` (the official ``sigmoid_param``).
    step_size, gamma, power : int, float, float
        Continuation schedule, official values 200, 0.005, 0.5.
    """

    def __init__(self, num_classes: int, num_bits: int, alpha: float | None = None, step_size: int = 200,
                 gamma: float = 0.005, power: float = 0.5) -> None:
        super().__init__()
        self.num_classes, self.num_bits = int(num_classes), int(num_bits)
        self.alpha = 10.0 / num_bits if alpha is None else _positive_number(alpha, "alpha")
        if int(step_size) != step_size or step_size < 1:
            raise ValueError(f"step_size must be a positive integer, got {step_size}.")
        self.step_size = int(step_size)
        self.gamma = _positive_number(gamma, "gamma", allow_zero=True)
        self.power = _positive_number(power, "power", allow_zero=True)
        self.register_buffer("step", torch.zeros((), dtype=torch.long))

    @property
    def beta(self) -> float:
        """The current continuation scale: ``(1 + gamma * s)^power``, ``s`` the last multiple of step_size."""
        completed = int(self.step) // self.step_size * self.step_size
        return (1.0 + self.gamma * completed) ** self.power

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        if self.training and torch.is_grad_enabled():
            self.step += 1
        codes = torch.tanh(self.beta * outputs)
        pairs = _off_diagonal(len(outputs), outputs.device)
        similar = _label_similarity(labels, labels)
        nll = _pair_nll(self.alpha * codes @ codes.T, similar.float())
        num_similar = (similar & pairs).sum()
        num_pairs = pairs.sum()
        weights = torch.where(
            similar,
            num_pairs / num_similar.clamp(min=1),
            num_pairs / (num_pairs - num_similar).clamp(min=1),
        )
        return (weights * nll * pairs).sum() / num_pairs.clamp(min=1)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha:.4g}, step={int(self.step)}, beta={self.beta:.4g}"


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
        ``alpha``; 0.1, the official code's weight (``loss1 + 0.1 * loss2``).
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


@register_loss("idhn")
class IDHNLoss(nn.Module):
    """IDHN: soft pairwise similarity for multi-label data (Zhang, Lai & Feng, TMM 2019, Eq. 4-9).

    The network gives ``z`` (head option ``activation="identity"``); the loss takes IDHN's softsign
    ``u = z / (1 + |z|)``. Over the pairs i != j of the batch, with ``s_ij`` the cosine of the two label
    vectors (the quantified similarity, in [0, 1]):

    - hard pairs (``s <= 0.01`` or ``s >= 0.99``): cross-entropy ``log(1 + e^Theta) - s Theta`` with
      ``Theta = scale * u_i.u_j / q``;
    - soft pairs: squared error ``soft_weight * q * ((u_i.u_j / q + 1) / 2 - s)^2``;

    averaged over the pairs, plus ``lambda mean(| |u| - 1 |)``. Constants as the official TensorFlow
    code (``belta = 5``, ``gama = 0.1``, ``alpha = 0.1``). On single-label data every pair is hard, so
    IDHN reduces to the pairwise likelihood (DPSH-like, within the batch).

    Parameters
    ----------
    num_classes, num_bits : int
    scale, soft_weight, quantization_weight : float
    """

    def __init__(self, num_classes: int, num_bits: int, scale: float = 5.0, soft_weight: float = 0.1,
                 quantization_weight: float = 0.1) -> None:
        super().__init__()
        self.num_classes, self.num_bits = int(num_classes), int(num_bits)
        self.scale = _positive_number(scale, "scale")
        self.soft_weight = _positive_number(soft_weight, "soft_weight", allow_zero=True)
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        codes = outputs / (1 + outputs.abs())
        inner = codes @ codes.T / self.num_bits
        similarity = _label_cosine(labels)
        hard = (similarity <= IDHN_HARD_TOLERANCE) | (similarity >= 1 - IDHN_HARD_TOLERANCE)
        cross_entropy = _pair_nll(self.scale * inner, similarity)
        squared = self.soft_weight * self.num_bits * ((inner + 1) / 2 - similarity).pow(2)
        pairs = _off_diagonal(len(outputs), outputs.device)
        pair_loss = torch.where(hard, cross_entropy, squared)[pairs].mean() if len(outputs) > 1 else outputs.sum() * 0.0
        return pair_loss + self.quantization_weight * _quantization_error(codes, power=1)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, soft_weight={self.soft_weight}, quantization_weight={self.quantization_weight}"


def _log1m_softmax(logits: torch.Tensor) -> torch.Tensor:
    """``log(1 - softmax(logits))`` without cancellation, also where a probability rounds to 1.

    ``1 - p_k = sum_{j != k} e^{z_j} / sum_j e^{z_j}``. For every k but the row's arg-max the sum of the
    others is ``total - e^{z_k}``, which keeps the maximal term (no cancellation); for the arg-max it is
    summed directly.
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


@register_loss("crh")
class CRHLoss(nn.Module):
    """CRH: margin cosine cross-entropy to centers reassigned from a multi-head codebook during training
    (Yin et al., "Codebook-Centric Deep Hashing", AAAI 2026, arXiv 2511.12162; Eqs. 1-8).

    **Codebook (Eq. 8).** ``M = codebook_multiple * C`` candidate sub-codes per head; the ``K`` bits are
    split into ``H = K / d`` heads of ``d`` bits, ``d`` the smallest divisor of ``K`` with ``2^d >= M``
    (:func:`shc.codebook.head_width`); each head's candidates are ``M`` distinct +-1 vectors drawn
    uniformly (seeded). Class ``c``'s center ``h_c`` concatenates its assigned sub-code of every head; the
    initial assignment is a random one (distinct candidates per head, seeded).

    **Loss (Eqs. 1-4).** ``cos_c = <u / |u|, h_c / |h_c|>``, logits ``s (cos_c - m y_c)``, cross-entropy
    against ``y / |y|_1`` (class indices: the usual one), plus ``lambda mean((|tanh u| - 1)^2)``. The network
    output ``u`` is linear (head option ``activation="identity"``).

    **Reassignment (Eqs. 5-7).** :meth:`on_epoch_end`, which :func:`shc.train.fit` calls after every
    epoch, re-encodes the training set when the schedule says so (after each of the first
    ``reassign_until`` epochs, then after every ``reassign_every``-th) and gives every class, head by head,
    the distinct candidate minimising the mean squared distance to its samples' sub-codes
    (:func:`shc.codebook.reassign`: greedy in a random class order, the paper's default, or Hungarian).

    State: the codebooks and the assignment are buffers and the log of reassignments (epoch, classes
    whose sub-code changed, mean cost per class) is the module's extra state, so ``fit``'s checkpoints
    carry them and an interrupted run resumes bit-identically. The greedy order after epoch ``e`` is drawn
    from a generator seeded by ``(seed, e)``: no random state to save.

    Parameters
    ----------
    num_classes, num_bits : int
        C (at least 2) and K.
    train_labels : array-like
        The training split's labels in dataset order (the reassignment's class statistics).
    seed : int
        Seeds the codebook, the initial assignment and the greedy orders.
    scale : float, optional
        ``s``; default ``sqrt(2) ln(C - 1)`` (the paper's; needs C >= 3).
    margin : float
        ``m = 0.2``.
    quantization_weight : float, optional
        ``lambda``; default 0.1 on class-index labels, 0 on multi-hot ones (the paper's two settings).
    codebook_multiple : int
        ``M / C`` (2: the paper's M = 2C).
    assignment : {"greedy", "hungarian"}
        Greedy is the paper's default; Hungarian is the exact minimum of Eq. 7's total cost.
    reassign_until, reassign_every : int
        The schedule: reassign after epochs 1..20, then after every 5th (the paper's).
    """

    def __init__(self, num_classes: int, num_bits: int, train_labels: Any, seed: int = 0,
                 scale: float | None = None, margin: float = 0.2, quantization_weight: float | None = None,
                 codebook_multiple: int = 2, assignment: str = "greedy", reassign_until: int = 20,
                 reassign_every: int = 5) -> None:
        from shc.codebook import ASSIGNMENTS, head_width, sample_codebook

        super().__init__()
        self.num_classes, self.num_bits, self.seed = int(num_classes), int(num_bits), int(seed)
        if self.num_classes < 2:
            raise ValueError(f"CRH needs at least 2 classes, got {num_classes}.")
        labels = _label_tensor(train_labels, self.num_classes)
        self.register_buffer("labels", labels, persistent=False)
        if scale is None:
            if self.num_classes < 3:
                raise ValueError("the default scale sqrt(2) ln(C - 1) is 0 for C = 2 classes; pass scale=.")
            scale = math.sqrt(2.0) * math.log(self.num_classes - 1)
        self.scale = _positive_number(scale, "scale")
        self.margin = _positive_number(margin, "margin", allow_zero=True)
        if quantization_weight is None:
            quantization_weight = 0.1 if labels.ndim == 1 else 0.0
        self.quantization_weight = _positive_number(quantization_weight, "quantization_weight", allow_zero=True)
        ASSIGNMENTS.get(assignment)  # an unknown name lists the known ones
        self.assignment_method = assignment
        for name, value in (("codebook_multiple", codebook_multiple), ("reassign_until", reassign_until),
                            ("reassign_every", reassign_every)):
            if isinstance(value, bool) or int(value) != value or value < (0 if name == "reassign_until" else 1):
                raise ValueError(f"{name} must be a {'non-negative' if name == 'reassign_until' else 'positive'} "
                                 f"integer, got {value!r}.")
        self.codebook_multiple, self.reassign_until = int(codebook_multiple), int(reassign_until)
        self.reassign_every = int(reassign_every)
        size = self.codebook_multiple * self.num_classes
        width = head_width(self.num_bits, size)
        rng = np.random.default_rng(self.seed)
        codebooks = sample_codebook(self.num_bits // width, size, width, rng)
        initial = np.stack([rng.permutation(size)[: self.num_classes] for _ in range(len(codebooks))])
        self.register_buffer("codebooks", torch.from_numpy(codebooks.astype(np.float32)))
        self.register_buffer("assignment", torch.from_numpy(initial))
        self.reassignments: list[dict[str, float]] = []

    @property
    def num_heads(self) -> int:
        return self.codebooks.shape[0]

    def centers(self) -> torch.Tensor:
        """(C, K) +-1 float: each class's assigned sub-code of every head, concatenated (Eq. 8)."""
        heads = torch.arange(self.num_heads, device=self.codebooks.device)[:, None]
        return self.codebooks[heads, self.assignment].permute(1, 0, 2).reshape(self.num_classes, self.num_bits)

    def forward(self, outputs: torch.Tensor, labels: torch.Tensor, indices: torch.Tensor | None = None) -> torch.Tensor:
        _check_codes(outputs, self.num_bits)
        _check_labels(labels, outputs.shape[0], self.num_classes)
        cosine = F.normalize(outputs, dim=1) @ self.centers().T / math.sqrt(self.num_bits)  # |h_c| = sqrt(K)
        targets = _target_matrix(labels, self.num_classes)
        logits = self.scale * (cosine - self.margin * targets)
        soft_targets = targets / targets.sum(dim=1, keepdim=True)
        loss = -(soft_targets * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
        if self.quantization_weight:
            loss = loss + self.quantization_weight * (torch.tanh(outputs).abs() - 1).pow(2).mean()
        return loss

    def reassigns_after(self, epoch: int) -> bool:
        """Whether the schedule reassigns after (1-based) ``epoch``."""
        return epoch <= self.reassign_until or epoch % self.reassign_every == 0

    @torch.no_grad()
    def reassign(self, codes: torch.Tensor | np.ndarray, epoch: int) -> dict[str, float]:
        """Reassign the centers from the training set's codes (N, K) (Eqs. 5-7); returns the history entry
        ``{"reassigned": (head, class) pairs whose sub-code changed, "assignment_cost": Eq. 7's total cost
        over the heads, divided by C}``."""
        from shc.codebook import reassign

        codes = np.asarray(codes.cpu() if isinstance(codes, torch.Tensor) else codes, dtype=np.float64)
        if codes.shape != (len(self.labels), self.num_bits):
            raise ValueError(f"codes must be ({len(self.labels)}, {self.num_bits}): one code per training sample "
                             f"of the split the loss was built for, got {codes.shape}.")
        binary = np.where(codes >= 0, 1.0, -1.0)
        rng = np.random.default_rng([self.seed, int(epoch)])
        chosen, costs = reassign(binary, self.labels.cpu().numpy(), self.num_classes,
                                 self.codebooks.cpu().numpy(), self.assignment_method, rng)
        chosen = torch.from_numpy(chosen).to(self.assignment.device)
        changed = int((chosen != self.assignment).sum())
        self.assignment.copy_(chosen)
        entry = {"epoch": int(epoch), "reassigned": changed, "assignment_cost": float(costs.sum() / self.num_classes)}
        self.reassignments.append(entry)
        return {key: entry[key] for key in ("reassigned", "assignment_cost")}

    def on_epoch_end(self, model: nn.Module, train_set: Any, epoch: int) -> dict[str, float] | None:
        """``fit``'s epoch hook: on scheduled epochs, encode ``train_set`` (in dataset order, with the model in
        eval mode, through :func:`shc.train.predict`) and :meth:`reassign`."""
        if not self.reassigns_after(epoch):
            return None
        import torch.distributed as dist

        from shc.train import predict

        entry = self.reassign(predict(model, train_set, batch_size=512), epoch)
        if dist.is_available() and dist.is_initialized():  # every rank trains towards rank 0's centers
            dist.broadcast(self.assignment, src=0)
        return entry

    def get_extra_state(self) -> dict[str, Any]:
        return {"reassignments": [dict(entry) for entry in self.reassignments]}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self.reassignments = [dict(entry) for entry in state["reassignments"]]

    def learned_targets(self) -> np.ndarray:
        """(C, K) int8: the centers the classes hold now (the final assignment after training), the targets whose
        reachability stage 3 measures (:mod:`shc.reachability`)."""
        return self.centers().cpu().numpy().astype(np.int8)

    def artifacts(self) -> dict[str, Any]:
        """Files for the run's stage folder: ``codebook.npy`` (H, M, d), ``class_centers.npy`` (C, K), the
        final centers, and ``reassignments.json`` (the log, one entry per reassignment)."""
        return {"codebook.npy": self.codebooks.cpu().numpy().astype(np.int8),
                "class_centers.npy": self.learned_targets(),
                "reassignments.json": {"assignment": self.assignment_method, "heads": self.num_heads,
                                       "head_bits": self.codebooks.shape[2], "log": self.reassignments}}

    def extra_repr(self) -> str:
        return (f"num_classes={self.num_classes}, num_bits={self.num_bits}, heads={self.num_heads}, "
                f"codebook={tuple(self.codebooks.shape[1:])}, scale={self.scale:.4g}, margin={self.margin}, "
                f"quantization_weight={self.quantization_weight}, assignment={self.assignment_method!r}")
