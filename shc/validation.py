"""Input validation shared by every module: one place for what a code, a label array and a distance are.

Each function accepts numpy arrays, array-likes and (detached, CPU) torch tensors, returns a numpy
array, and raises a ValueError/TypeError that names the argument, what was found and the fix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["class_labels", "device_name", "finite_number", "hamming_distance_matrix", "seed_value", "sign_codes",
           "sign_pm1", "to_numpy", "whole_number"]


def device_name(device: Any, name: str = "device") -> str:
    """``device`` if it is ``"auto"``, ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (whether CUDA is there is for the
    code that uses it to say)."""
    if isinstance(device, str) and (device in ("auto", "cpu", "cuda")
                                    or (device.startswith("cuda:") and device[5:].isdigit())):
        return device
    raise ValueError(f"{name} must be 'auto', 'cpu', 'cuda' or 'cuda:N' (N a GPU number), got {device!r}.")


def seed_value(seed: Any, name: str = "seed") -> int:
    """``seed`` as an int if it is a non-negative integer (numpy's generators take nothing else)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {seed!r}.")
    return int(seed)


def finite_number(value: Any, name: str, minimum: float | None = None, strict: bool = False) -> float:
    """``value`` as a float if it is a finite real number (not a bool), ``>= minimum`` (``> minimum`` if
    ``strict``) when a minimum is given."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}.")
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}.")
    if minimum is not None and (value < minimum or (strict and value == minimum)):
        raise ValueError(f"{name} must be {'>' if strict else '>='} {minimum:g}, got {value}.")
    return float(value)


def whole_number(value: Any, name: str, minimum: int = 0) -> int:
    """``value`` as an int if it is an integer (an int, a numpy integer or a float with no fraction; not a bool)
    ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or int(value) != value:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def to_numpy(x: Any, name: str) -> np.ndarray:
    """numpy view of an array-like or a torch tensor (detached, on the CPU; bfloat16 -> float32)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # torch.Tensor, without importing torch
        x = x.detach().cpu()
        if x.is_floating_point() and x.element_size() < 4:
            x = x.float()  # numpy has no bfloat16; half precision values are exact in float32
        x = x.numpy()
    x = np.asarray(x)
    if x.dtype == object or not (np.issubdtype(x.dtype, np.number) or x.dtype == bool):
        raise TypeError(f"{name} must be a numeric array or tensor; got dtype {x.dtype}.")
    return x


def sign_codes(codes: Any, name: str = "codes", shape: tuple[int, int] | None = None) -> np.ndarray:
    """A non-empty 2-D (n, q) array of -1/+1 codes (dtype kept), optionally of exactly ``shape``."""
    codes = to_numpy(codes, name)
    if codes.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D (n_items, n_bits) array of -1/+1; got shape {codes.shape}"
            " (for a single code use codes[None, :])."
        )
    if codes.shape[0] == 0 or codes.shape[1] == 0:
        raise ValueError(f"{name} is empty (shape {codes.shape}); pass at least one code of at least one bit.")
    if shape is not None and codes.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {codes.shape}.")
    if not np.all((codes == 1) | (codes == -1)):
        bad = codes[(codes != 1) & (codes != -1)].ravel()[0].item()
        raise ValueError(
            f"{name} must contain only -1 and +1; found {bad!r}. Binarise real-valued outputs"
            " with sign (e.g. np.where(x >= 0, 1, -1)), and map {0, 1} bits with 2 * b - 1."
        )
    return codes


def class_labels(labels: Any, name: str = "labels", n_items: int | None = None, num_classes: int | None = None,
                 items_name: str = "codes") -> np.ndarray:
    """(n,) integer class indices or (n, C) multi-hot 0/1 rows, validated.

    ``n_items`` checks the row count against the ``items_name`` it labels; ``num_classes`` checks the range
    of class indices (and the width of multi-hot rows).
    """
    labels = to_numpy(labels, name)
    if labels.ndim not in (1, 2):
        raise ValueError(
            f"{name} must be class indices of shape (n,) or multi-hot of shape (n, n_classes);"
            f" got shape {labels.shape}."
        )
    if n_items is not None and labels.shape[0] != n_items:
        raise ValueError(
            f"{name} has {labels.shape[0]} rows but {items_name} has {n_items};"
            " pass one label (row) per item."
        )
    if labels.ndim == 1:
        if not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"{name} is 1-D, so it must hold integer class indices; got dtype {labels.dtype}"
                " (convert with .astype(int) or .long(), or pass multi-hot labels of shape (n, n_classes))."
            )
        if labels.size and labels.min() < 0:
            raise ValueError(f"{name} must be class indices >= 0, got {labels.min()}; a negative label is no "
                             "class (drop unlabelled items, or give them a class of their own).")
        if num_classes is not None and labels.size and (labels.min() < 0 or labels.max() >= num_classes):
            raise ValueError(f"{name} must lie in [0, {num_classes - 1}], got values in [{labels.min()}, "
                             f"{labels.max()}]; check the number of classes or the label encoding.")
    else:
        if labels.shape[1] == 1:  # y.reshape(-1, 1): read as multi-hot, class 0 would be no class at all
            raise ValueError(
                f"{name} has shape {labels.shape}: one column is ambiguous (class indices in a column, or multi-hot"
                f" of one class); pass class indices 1-D ({name}.ravel()), or multi-hot with a column per class."
            )
        if not np.all((labels == 0) | (labels == 1)):
            raise ValueError(
                f"{name} is 2-D, so it must be multi-hot with values 0/1 only; found other values"
                " (threshold soft labels first, or pass 1-D class indices)."
            )
        if num_classes is not None and labels.shape[1] != num_classes:
            raise ValueError(f"multi-hot {name} must have {num_classes} columns, got {labels.shape[1]}.")
    return labels


def sign_pm1(x: Any, dtype: Any = np.int8) -> np.ndarray:
    """``sign(x)`` in {-1, +1} with ``sign(0) = +1``, the one tie rule of every code in the package (Eq. 39;
    :func:`shc.models.hash_codes` is this with a divergence check). NaN is not checked here: callers that may
    meet it (network outputs) check first."""
    return np.where(np.asarray(x) >= 0, 1, -1).astype(dtype)


#: Rows of ``a`` per matrix product in :func:`hamming_distance_matrix` (bounds its float32 scratch to
#: ``block x len(b)``).
DISTANCE_BLOCK = 2048


def hamming_distance_matrix(a: Any, b: Any | None = None, dtype: Any = np.int64) -> np.ndarray:
    """Hamming distances between the rows of two -1/+1 code arrays, via ``D = (q - A B^T) / 2`` (Eq. 17).

    ``b`` None gives the (n, n) pairwise distances of ``a``; the result is (n, m) of ``dtype`` (int64 unless
    asked). The products run in float32 (BLAS) over row blocks of :data:`DISTANCE_BLOCK`: every partial sum of
    +-1 products is an integer of magnitude at most q, exact in float32 for q < 2**24, so the distances are
    exact. For many database codes use :class:`shc.retrieval.HashIndex` or :mod:`shc.metrics`, which never
    build the full matrix.
    """
    a = sign_codes(a, "a")
    b = a if b is None else sign_codes(b, "b")
    q = a.shape[1]
    if b.shape[1] != q:
        raise ValueError(f"a and b must have the same number of bits, got {q} and {b.shape[1]}.")
    if q >= 2**24:
        raise ValueError(f"codes of {q} bits are too long for exact float32 products; split them into chunks of "
                         "fewer than 2**24 bits and add the chunks' distances.")
    a32, b32t = a.astype(np.float32), b.astype(np.float32).T
    out = np.empty((a.shape[0], b.shape[0]), dtype=dtype)
    for start in range(0, a.shape[0], DISTANCE_BLOCK):
        out[start:start + DISTANCE_BLOCK] = np.rint((q - a32[start:start + DISTANCE_BLOCK] @ b32t) / 2)
    return out
