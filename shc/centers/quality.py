"""Stage 2: the quality of a set of centers (the paper's Table 3): minimum and mean distance, S_loss and the
Spearman correlation with S; d_min of very many centers by packed bits; and a lower bound on S_loss."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import spearmanr

from shc.centers._kernels import _pack, _packed_min
from shc.centers.distance import _as_sign_matrix, _offdiag, _resolve_min_distance, hamming_distances
from shc.similarity import validate_similarity

__all__ = [
    "center_quality", "distance_cap_bound", "geometry_lesson", "packed_min_distance", "relaxation_bound",
    "unit_diagonal_bound",
]


def center_quality(centers: Any, similarity: Any | None = None) -> dict[str, float]:
    """Quality of a set of centers (the paper's Table 3, plus two diagnostics).

    Returns
    -------
    dict with
        ``d_min``            minimum pairwise Hamming distance (Eq. 44),
        ``num_at_d_min``     number of unordered pairs at that distance,
        ``mean_distance``    mean pairwise Hamming distance,
        and, when ``similarity`` is given,
        ``s_loss``           per-entry mean of (S - H H^T / q)^2 (Eq. 45 divided by C^2, as the paper's
                             table values are; e.g. about 0.11 for random 16-bit centers on CIFAR-100),
        ``spearman``         Spearman correlation between the off-diagonal entries of S and H H^T / q
                             (how well the centers' geometry follows the semantics); NaN when either
                             side is constant (undefined).
    """
    H = _as_sign_matrix(centers)
    C, q = H.shape
    if C < 2:
        raise ValueError("center_quality needs at least two centers.")
    distances = _offdiag(hamming_distances(H))
    d_min = int(distances.min())
    result: dict[str, float] = {
        "d_min": d_min,
        "num_at_d_min": int((distances == d_min).sum() // 2),
        "mean_distance": float(distances.mean()),
    }
    if similarity is not None:
        S = validate_similarity(similarity, num_classes=C)
        gram = H @ H.T / q
        result["s_loss"] = float(np.mean((S - gram) ** 2))
        upper = np.triu_indices(C, k=1)
        s_values, gram_values = S[upper], gram[upper]
        defined = C > 2 and np.ptp(s_values) > 0 and np.ptp(gram_values) > 0
        result["spearman"] = float(spearmanr(s_values, gram_values).statistic) if defined else float("nan")
    return result


def _reversals(values: Any) -> int:
    """How often a sequence changes direction (flat steps skipped)."""
    steps = np.sign(np.diff(np.asarray(values, dtype=float)))
    steps = steps[steps != 0]
    return int(np.sum(steps[1:] != steps[:-1]))


def geometry_lesson(semantic: Any | None = None, shc: Any | None = None, mds: Any | None = None,
                    shc_s_loss: Any | None = None) -> dict[str, float]:
    """What one (C, q) setting teaches about stage 2 (each entry only where its inputs are given):

    - ``semantic colliding pairs`` / ``semantic d_min``: class pairs whose semantic-only centers (no distance
      term, Eq. 46-49) are equal (Hamming distance 0: no image can tell the two classes apart), and d_min;
    - ``shc cycles``, ``shc S_loss reversals``, ``shc S_loss rises``, ``shc S_loss start``: Algorithm 1's
      S_loss over its outer cycles (``shc_s_loss``, cycle 0 the MDS start): how often it changes direction
      (oscillation) and rises;
    - ``shc bits moved from mds``, ``shc share of bits moved``, ``shc centers unchanged``: how far SHC's centers
      ``shc`` are from their MDS start ``mds`` (mean Hamming distance per center, its share of q, and the
      number of centers left as they started).
    """
    row: dict[str, float] = {}
    if semantic is not None:
        distances = _offdiag(hamming_distances(_as_sign_matrix(semantic)))
        row["semantic colliding pairs"] = int((distances == 0).sum() // 2)
        row["semantic d_min"] = int(distances.min())
    if shc_s_loss is not None:
        trace = np.asarray(shc_s_loss, dtype=float)
        row["shc cycles"] = int(trace.size - 1)
        row["shc S_loss reversals"] = _reversals(trace)
        row["shc S_loss rises"] = int(np.sum(np.diff(trace) > 0))
        row["shc S_loss start"] = float(trace[0])
    if shc is not None and mds is not None:
        start, end = _as_sign_matrix(mds), _as_sign_matrix(shc)
        if start.shape != end.shape:
            raise ValueError(f"shc and mds centers must have one shape, got {end.shape} and {start.shape}.")
        moved = np.sum(start != end, axis=1)
        row["shc bits moved from mds"] = float(moved.mean())
        row["shc share of bits moved"] = float(moved.mean() / start.shape[1])
        row["shc centers unchanged"] = int(np.sum(moved == 0))
    return row


def packed_min_distance(centers: Any) -> int:
    """d_min of +-1 centers by popcount over packed bits: O(C^2 q / 64) time, O(C q / 8) memory, for C
    where the (C, C) matrix of :func:`shc.centers.center_quality` does not fit (C = 40,000: 12.8 GB)."""
    H = np.asarray(centers)
    if H.ndim != 2 or H.shape[0] < 2 or not np.all(np.abs(H) == 1):
        raise ValueError(f"centers must be a (C, q) array of +-1 with C >= 2, got shape {H.shape}.")
    return int(_packed_min(_pack(H)))


def relaxation_bound(similarity: Any, num_bits: int) -> float:
    """A lower bound on the per-entry S_loss of any centers: ``H H^T / q`` is positive semidefinite of
    rank <= q, so ``||S - H H^T / q||_F^2 >= sum(eig(S)^2) - sum of the q largest positive eig(S)^2``
    (Eckart-Young); returned divided by C^2."""
    S = validate_similarity(similarity)
    values = np.linalg.eigvalsh(S)
    kept = np.sort(values[values > 0])[::-1][: int(num_bits)]
    return float((np.sum(values**2) - np.sum(kept**2)) / S.shape[0] ** 2)


def unit_diagonal_bound(similarity: Any, num_bits: int) -> float:
    """A lower bound on the per-entry S_loss of any centers, at least :func:`relaxation_bound`:
    ``G = H H^T / q`` is positive semidefinite of rank <= q *with unit diagonal*, so its eigenvalues
    mu_1 >= ... >= mu_q >= 0 sum to ``trace G = C``. By the Hoffman-Wielandt inequality
    ``||S - G||_F^2 >= sum_i (lambda_i - mu_i)^2`` (both sorted), hence

        ||S - G||_F^2 >= min { sum_{i <= q} (lambda_i - mu_i)^2 : mu >= 0, sum mu = C } + sum_{i > q} lambda_i^2,

    the minimum being the Euclidean projection of the q largest eigenvalues of S onto that simplex
    (``mu_i = max(lambda_i + theta, 0)``, theta fixed by the sum). For S = I it is the Welch bound
    ``(1 / q - 1 / C)`` per entry; it matters where C >> q (C = 1000, q = 32: about 9x the relaxation
    bound on stage-1-like S). Returned divided by C^2."""
    S = validate_similarity(similarity)
    C, k = S.shape[0], min(int(num_bits), S.shape[0])
    if k < 1:
        raise ValueError(f"num_bits must be >= 1, got {num_bits}.")
    values = np.linalg.eigvalsh(S)[::-1]
    top = values[:k]
    # theta: the sum of max(top + theta, 0) rises with theta; the k candidate supports are the top j values
    sums = np.cumsum(top)
    thetas = (C - sums) / np.arange(1, k + 1)
    support = int(np.flatnonzero(top + thetas > 0)[-1]) + 1
    mu = np.maximum(top + thetas[support - 1], 0.0)
    return float((np.sum((top - mu) ** 2) + np.sum(values[k:] ** 2)) / C**2)


def _cap_dual(off: np.ndarray, lam: float, values: tuple[float, float], step: float) -> tuple[float, float]:
    """For :func:`distance_cap_bound`: the sum over ``off`` of min_g (s - g)^2 - lam g^2 over the lattice
    ``g in {values[0], values[0] - step, ..., values[1]}`` and the sum of the minimisers' g^2. The minimum of a
    quadratic over a 1-d lattice is at a lattice neighbour of its stationary point (convex, lam < 1) or at an
    end (concave or linear, lam >= 1), so four candidates per entry are exact."""
    top, bottom = values
    count = int(round((top - bottom) / step))
    if lam < 1:
        position = np.clip((top - off / (1 - lam)) / step, 0, count)
        candidates = (top - np.floor(position) * step, top - np.ceil(position) * step)
    else:
        candidates = ()
    best_f = best_g = None
    for g in (*candidates, np.full_like(off, top), np.full_like(off, bottom)):
        f = (off - g) ** 2 - lam * g**2
        if best_f is None:
            best_f, best_g = f, g
        else:
            better = f < best_f
            best_f, best_g = np.where(better, f, best_f), np.where(better, g, best_g)
    return float(best_f.sum()), float(np.sum(best_g**2))


def distance_cap_bound(similarity: Any, num_bits: int, min_distance: int | None = None,
                       iterations: int = 60) -> float:
    """A lower bound on the per-entry S_loss of any centers *that keep the minimum distance* d (default the
    GV distance, Eq. 43), tighter than :func:`unit_diagonal_bound` where q is large beside C or S has many
    entries above the distance cap.

    For +-1 centers at pairwise Hamming distance >= d, every off-diagonal entry of ``G = H H^T / q`` lies on
    the lattice ``{1 - 2k / q : k = d, ..., q}`` (at most the cap ``1 - 2d / q``), the diagonal is 1, and
    ``sum_{i != j} G_ij^2 = ||G||_F^2 - C >= C^2 / q - C`` (the q nonzero eigenvalues of G sum to C). For
    every lam >= 0, weak duality on that last constraint gives

        ||S - G||_F^2 >= sum_i (S_ii - 1)^2 + lam (C^2 / q - C) + sum_{i != j} min_g [(S_ij - g)^2 - lam g^2],

    the minimum over the lattice, entry by entry. The dual is concave in lam; it is maximised by bisection on
    its supergradient over [0, 2 + q / d] (beyond that every minimiser is -1 and the dual falls). Returned
    divided by C^2. ``d = 0`` leaves only the lattice and the energy: still a bound for any centers."""
    S = validate_similarity(similarity)
    C, q = S.shape[0], int(num_bits)
    if q < 1:
        raise ValueError(f"num_bits must be >= 1, got {num_bits}.")
    d = _resolve_min_distance(C, q, min_distance)
    if d > q:
        raise ValueError(f"min_distance {d} exceeds num_bits {q}: no two centers can be that far apart.")
    off = S[~np.eye(C, dtype=bool)]
    diagonal = float(np.sum((np.diag(S) - 1.0) ** 2))
    energy = C * C / q - C
    values, step = (1.0 - 2.0 * d / q, -1.0), 2.0 / q

    def dual(lam: float) -> tuple[float, float]:
        total, squares = _cap_dual(off, lam, values, step)
        return diagonal + lam * energy + total, energy - squares

    low, high = 0.0, 2.0 + q / max(d, 1)
    best, slope = dual(low)
    if slope > 0:  # at lam = 0 the energy constraint binds: raise lam while the supergradient says so
        for _ in range(int(iterations)):
            middle = (low + high) / 2
            value, slope = dual(middle)
            best = max(best, value)
            low, high = (middle, high) if slope > 0 else (low, middle)
    return float(best / C**2)
