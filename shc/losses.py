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

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LOSSES", "CenterLoss", "ClassificationLoss", "build_loss", "register_loss"]

LOSSES: dict[str, type[nn.Module]] = {}
_LossClass = TypeVar("_LossClass", bound=type[nn.Module])


def register_loss(name: str) -> Callable[[_LossClass], _LossClass]:
    """Class decorator adding a loss to :data:`LOSSES` under ``name``."""

    def decorate(loss_class: _LossClass) -> _LossClass:
        if name in LOSSES and LOSSES[name] is not loss_class:
            raise ValueError(
                f"a loss named {name!r} is already registered ({LOSSES[name].__qualname__}); pick another name."
            )
        LOSSES[name] = loss_class
        return loss_class

    return decorate


def build_loss(name: str, **kwargs: Any) -> nn.Module:
    """Instantiate the loss registered as ``name`` with ``kwargs``."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; choose one of {sorted(LOSSES)}.")
    return LOSSES[name](**kwargs)


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
        centers = centers.detach() if isinstance(centers, torch.Tensor) else torch.as_tensor(np.asarray(centers))
        if centers.ndim != 2 or 0 in centers.shape:
            raise ValueError(f"centers must be a (C, q) matrix, got shape {tuple(centers.shape)}.")
        if not torch.all((centers == 1) | (centers == -1)):
            raise ValueError("centers must contain only -1 and +1; binarise them with shc.models.hash_codes.")
        if gamma < 0:
            raise ValueError(f"gamma must be non-negative, got {gamma}.")
        if not 0 < eps < 1:
            raise ValueError(f"eps must lie in (0, 1), got {eps}.")
        generator = torch.Generator().manual_seed(seed)
        tie_signs = torch.randint(0, 2, (centers.shape[1],), generator=generator) * 2 - 1
        self.register_buffer("centers", centers.float())
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
