"""Pairwise and triplet losses: the codes' inner products fitted to the label similarity of pairs (DPSH,
against a bank of every training sample's code; HashNet and IDHN, within the batch) or ordered over
triplets (DTSH). No class targets: only which samples share a label (IDHN: how much).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from shc.losses.registry import (
    CodeBank,
    _check_codes,
    _check_labels,
    _label_similarity,
    _positive_number,
    _quantization_error,
    register_loss,
)

__all__ = ["IDHN_HARD_TOLERANCE", "DPSHLoss", "DTSHLoss", "HashNetLoss", "IDHNLoss"]


#: IDHN's tolerance for "hard" pairs: label cosine <= 0.01 or >= 0.99 counts as dissimilar / similar.
IDHN_HARD_TOLERANCE = 0.01


def _pair_nll(theta: torch.Tensor, similarity: torch.Tensor) -> torch.Tensor:
    """``log(1 + e^theta) - s theta``: the negative log-likelihood of ``s`` under ``sigmoid(theta)``
    (DPSH Eq. 2, HashNet Eq. 4, IDHN), computed with a stable softplus."""
    return F.softplus(theta) - similarity * theta


def _label_cosine(labels: torch.Tensor) -> torch.Tensor:
    """(B, B) cosine of the label vectors in [0, 1] (IDHN's quantified similarity); 0/1 for class indices."""
    if labels.ndim == 1:
        return (labels[:, None] == labels[None, :]).float()
    unit = F.normalize(labels.float(), dim=1)
    return (unit @ unit.T).clamp(0.0, 1.0)


def _off_diagonal(size: int, device: torch.device) -> torch.Tensor:
    return ~torch.eye(size, dtype=torch.bool, device=device)


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
