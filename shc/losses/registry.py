"""The one loss registry and what the loss families share.

:data:`LOSSES` holds every loss class by name (the registry idiom of :mod:`shc.registry`);
:func:`register_loss` adds one, :func:`build_loss` instantiates one. The helpers below serve more than one
family: the checks of outputs, labels and options, the label and target tensors, the quantisation error
``mean(| |u| - 1 |^p)`` and :class:`CodeBank`, the memory bank of training codes (DPSH's likelihood and
MDS's pair term).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from shc.registry import Registry
from shc.validation import class_labels, finite_number, sign_codes

__all__ = ["LOSSES", "CodeBank", "build_loss", "register_loss"]

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
        if not ((labels == 0) | (labels == 1)).all():
            raise ValueError("multi-hot labels must hold 0/1 only; threshold soft labels first, or pass class indices.")
        if (labels.sum(dim=1) <= 0).any():
            raise ValueError("every multi-hot label row needs a positive class; drop unlabelled samples.")
    else:
        raise ValueError(
            f"labels must be (B,) class indices or (B, C) multi-hot rows, got shape {tuple(labels.shape)}."
        )


def _centers_tensor(centers: Any) -> torch.Tensor:
    return torch.as_tensor(sign_codes(centers, "centers"), dtype=torch.float32)


def _quantization_error(u: torch.Tensor, power: float = 2.0) -> torch.Tensor:
    """``mean(| |u| - 1 |^power)`` over samples and bits; ``power=2`` is ``mean((u - sign u)^2)``."""
    return (u.abs() - 1).abs().pow(power).mean()


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


def _check_codes(outputs: torch.Tensor, num_bits: int) -> None:
    if outputs.ndim != 2 or outputs.shape[1] != num_bits:
        raise ValueError(
            f"outputs must be (B, {num_bits}) codes of the hashing network, got shape {tuple(outputs.shape)}; "
            "build the loss with the network's num_bits."
        )


def _positive_number(value: float, name: str, allow_zero: bool = False) -> float:
    """``value`` as a float, checked finite and > 0 (>= 0 with ``allow_zero``)."""
    return finite_number(value, name, minimum=0, strict=not allow_zero)


def _label_tensor(train_labels: Any, num_classes: int) -> torch.Tensor:
    """The training split's labels as int64 (N,) class indices or float32 (N, C) multi-hot, validated."""
    labels = class_labels(train_labels, "train_labels", num_classes=num_classes)
    if len(labels) == 0:
        raise ValueError("train_labels is empty; pass the training split's labels, e.g. splits.train.labels.")
    if labels.ndim == 2 and not labels.any(axis=1).all():
        raise ValueError(f"train_labels has {int((~labels.any(axis=1)).sum())} multi-hot rows without a class; "
                         "drop unlabelled samples.")
    return torch.from_numpy(labels.astype(np.int64 if labels.ndim == 1 else np.float32))


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
