"""The center loss: each code pulled bit by bit towards its class's fixed hash center (CSQ's loss, as SHC
trains with it), with the quantisation term. Every center-loss method of :mod:`shc.methods` (SHC, CSQ and
the center ablations) trains with it; only the centers differ.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from shc.losses.registry import _centers_tensor, _check_labels, _positive_number, register_loss

__all__ = ["CenterLoss"]


@register_loss("center")
class CenterLoss(nn.Module):
    """CSQ's central similarity loss, as SHC trains with it (paper Eq. 41-43).

    ``L = mean BCE((u + 1) / 2, (h + 1) / 2) + gamma * mean((|u| - 1)^2)``, with ``h`` the hash center of
    each sample's class. For +-1 targets the BCE of one bit is ``-log((1 + h u) / 2)``.

    Both terms are means over samples *and bits*, as in CSQ's released code (``nn.BCELoss()`` and
    ``(u.abs() - 1).pow(2).mean()``). The paper writes L_C as a mean over samples of a sum over bits and
    L_Q as a sum over samples and bits: relative to those, our L_C is -(Eq. 41) / ``q`` (Eq. 41 is printed
    without the minus sign of the BCE in Eq. 40, so as printed it is <= 0 and would be maximised) and our L_Q
    is Eq. 42 / ``N q``. ``gamma = 1e-4``, the paper's value, comes from CSQ and has its meaning under CSQ's means.

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
        gamma = _positive_number(gamma, "gamma", allow_zero=True)
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
