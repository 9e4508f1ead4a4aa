"""Reachability: did the hashing network reach the targets it was trained towards?

A comparison of target sets (random, CSQ, MDS, SHC centers, or codes that a method learns) means something
only if each network actually produced its own targets: a network that cannot reach most bits of its centers
measures the backbone, not the centers (issue 35, docs/standard.md). Stage 3 therefore records, on the
training and the query set at the selected epoch:

- **center hit rate**: the share of images whose nearest target (Hamming) is their own class's. Ties count
  fractionally: an image at the minimum distance from its own target and from ``k - 1`` others scores ``1/k``
  (the chance that a uniformly random tie order ranks its own first).
- **center bit error**: the mean share of bits in which an image's code differs from its own class's target,
  ``d_H(b, h_y) / q``.
- **majority bit error**: the same against its class's **majority code**, the bitwise majority (sign of the
  sum, ``sign(0) = +1``) of the class's *training* codes. It measures how consistently a class is coded,
  whatever the targets: low majority error with high center error is a network that codes each class
  consistently but elsewhere than its target.

The targets are the method's fixed centers (SHC, CSQ, MDS, random, ...), the codes a method learned for its
classes (CRH's final assignment, OrthoHash's codebook), or, for methods without class codes (GreedyHash, LTH,
DPSH, ...), their classes' majority codes: then the hit rate says how well a nearest-class-code rule recovers
the class from a code. ``reach_targets`` in ``metrics.json`` says which. Single-label data only (multi-label
rows have no one own target; the functions refuse them).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shc.validation import class_labels, hamming_distance_matrix, sign_codes, sign_pm1

__all__ = ["REACHABILITY_KEYS", "REACHED", "additive_bits", "additive_fit", "center_hit_rate", "class_hit_rates",
           "majority_codes", "nearest_target_distance", "reachability"]

#: The numbers :func:`reachability` returns, per split (``metrics.json`` prefixes them ``train_`` / ``query_``).
REACHABILITY_KEYS = ("center_hit_rate", "center_bit_error", "majority_bit_error")
#: The training center hit rate from which a network counts as having reached its targets (issue 35's bar): below
#: it, a ranking of that run against others measures what the network could fit, not the targets.
REACHED = 0.9


def _check(codes: Any, labels: Any, num_classes: int) -> tuple[np.ndarray, np.ndarray]:
    codes = sign_codes(codes, "codes")
    labels = class_labels(labels, "labels", len(codes), num_classes)
    if labels.ndim != 1:
        raise ValueError("reachability needs one class per image (class indices); multi-hot labels have no single "
                         "own target.")
    return codes, labels.astype(np.int64)


def majority_codes(codes: Any, labels: Any, num_classes: int) -> np.ndarray:
    """Each class's bitwise majority code ``sign(sum of its codes)`` (``sign(0) = +1``), int8 (C, q).

    A class with no image gets +1 everywhere (it is never looked up by an image of its own).
    """
    codes, labels = _check(codes, labels, num_classes)
    sums = np.zeros((num_classes, codes.shape[1]), np.int64)
    np.add.at(sums, labels, codes.astype(np.int64))
    return sign_pm1(sums)


def _distances(codes: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Hamming distances (n, C) of ±1 codes to ±1 targets, ``(q - b h^T) / 2``."""
    return hamming_distance_matrix(codes, targets, dtype=np.int32)


def _hits(codes: Any, labels: Any, targets: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Each image's hit (1, 1/k in a tie of k, or 0), its class, and the number of classes."""
    targets = sign_codes(targets, "targets")
    codes, labels = _check(codes, labels, len(targets))
    if codes.shape[1] != targets.shape[1]:
        raise ValueError(f"codes have {codes.shape[1]} bits and targets {targets.shape[1]}; they must match.")
    distances = _distances(codes, targets)
    nearest = distances.min(axis=1)
    own = distances[np.arange(len(labels)), labels]
    tied = (distances == nearest[:, None]).sum(axis=1)
    return np.where(own == nearest, 1.0 / tied, 0.0), labels, len(targets)


def center_hit_rate(codes: Any, labels: Any, targets: Any) -> float:
    """Share of images whose nearest target is their own class's, ties counted fractionally (module docstring)."""
    hits, _, _ = _hits(codes, labels, targets)
    return float(np.mean(hits))


def class_hit_rates(codes: Any, labels: Any, targets: Any) -> np.ndarray:
    """The center hit rate of each class's images, (C,) float; NaN for a class with no image.

    Where :func:`center_hit_rate` says *whether* a network reached its targets, this says *which* classes it
    missed (their mean, weighted by each class's image count, is the overall hit rate)."""
    hits, labels, num_classes = _hits(codes, labels, targets)
    counts = np.bincount(labels, minlength=num_classes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(labels, weights=hits, minlength=num_classes) / counts


def nearest_target_distance(targets: Any) -> np.ndarray:
    """Each target's Hamming distance to the nearest *other* target, (C,) int: how crowded its neighbourhood is
    (the minimum over classes is the code's d_min)."""
    targets = sign_codes(targets, "targets")
    if len(targets) < 2:
        raise ValueError(f"{len(targets)} target given; the distance to the nearest other needs at least 2.")
    distances = _distances(targets, targets)
    np.fill_diagonal(distances, targets.shape[1] + 1)
    return distances.min(axis=1)


def reachability(codes: Any, labels: Any, targets: Any, majority: Any) -> dict[str, float]:
    """The three reachability numbers of one split (:data:`REACHABILITY_KEYS`).

    Parameters
    ----------
    codes, labels : array-like
        The split's ±1 codes (n, q) and class indices (n,).
    targets : array-like
        (C, q) ±1: each class's target (its center, or the code the method learned for it).
    majority : array-like
        (C, q) ±1: each class's majority code (:func:`majority_codes` of the *training* codes).
    """
    targets, majority = sign_codes(targets, "targets"), sign_codes(majority, "majority")
    codes, labels = _check(codes, labels, len(targets))
    if not codes.shape[1] == targets.shape[1] == majority.shape[1] or len(majority) != len(targets):
        raise ValueError(f"codes {codes.shape}, targets {targets.shape} and majority codes {majority.shape} must "
                         "share the code length, and targets and majority codes have one row per class.")
    return {
        "center_hit_rate": center_hit_rate(codes, labels, targets),
        "center_bit_error": float(np.mean(codes != targets[labels])),
        "majority_bit_error": float(np.mean(codes != majority[labels])),
    }


def additive_fit(targets: Any, class_items: Any) -> np.ndarray:
    """The codes an **additive** network would give composite classes, fitted to their targets bit by bit:
    ``sign(sum_p g_p(item_p) + b)`` (int8, (C, q)), with the per-position scores ``g_p`` and bias ``b`` of each bit
    minimising the hinge loss ``sum_c max(0, 1 - h_cj (sum_p g_p(item_cp) + b))`` (a linear programme, scipy's HiGHS).

    An additive code is the ceiling of a backbone that pools each item position separately straight into a linear
    hash layer (``composite_cnn``, ``composite3_cnn``) even with perfect item recognition, up to receptive fields
    that cross item borders (docs/standard-fine.md). Where a bit is additive at all the fit reproduces it exactly
    (zero hinge loss is feasible and optimal); elsewhere its agreement with the targets is a lower bound on the best
    additive agreement (the hinge is a relaxation of counting wrong classes).

    Parameters
    ----------
    targets : array-like
        (C, q) ±1 codes of the classes.
    class_items : array-like
        (C, k) non-negative ints: the item at each of the ``k`` positions of each class.
    """
    from scipy.optimize import linprog

    targets = sign_codes(targets, "targets")
    items = np.asarray(class_items)
    if items.ndim != 2 or len(items) != len(targets) or not np.issubdtype(items.dtype, np.integer) or items.min() < 0:
        raise ValueError(f"class_items must be (C, k) non-negative integers with C = {len(targets)} rows (the item at "
                         f"each position of each class), got shape {items.shape}.")
    sizes = items.max(axis=0) + 1
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    design = np.zeros((len(items), int(sizes.sum()) + 1))  # one column per (position, item), then the bias
    np.put_along_axis(design, items + offsets, 1.0, axis=1)
    design[:, -1] = 1.0
    classes, weights = design.shape
    cost = np.concatenate([np.zeros(weights), np.ones(classes)])  # variables: scores and bias, then the slacks
    bounds = [(None, None)] * weights + [(0, None)] * classes
    fitted = np.empty_like(targets, dtype=np.int8)
    for j, bit in enumerate(targets.T):
        # h_c (x_c . w) >= 1 - s_c  <=>  -h_c x_c . w - s_c <= -1
        constraints = np.hstack([-(bit[:, None] * design), -np.eye(classes)])
        result = linprog(cost, A_ub=constraints, b_ub=-np.ones(classes), bounds=bounds, method="highs")
        if result.status != 0:
            raise RuntimeError(f"the hinge LP of bit {j} did not solve ({result.message}); report this.")
        fitted[:, j] = sign_pm1(design @ result.x[:weights])
    return fitted


def additive_bits(targets: Any, class_items: Any) -> np.ndarray:
    """Which bits of composite-class targets an additive network can produce for every class (:func:`additive_fit`
    reproduces them exactly): (q,) bool."""
    return np.all(additive_fit(targets, class_items) == sign_codes(targets, "targets"), axis=0)
