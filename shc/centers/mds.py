"""Stage 2, ``"mds"``: minimal-distance-separated centers, every pairwise distance >= d (Gilbert-Varshamov,
Eq. 13), pushed apart beyond that by a vectorised greedy bit-flip search (our algorithm; Wang et al.'s goal);
above :data:`DENSE_MDS_LIMIT` classes the greedy Gilbert-Varshamov code of :func:`greedy_code` (packed bits)."""

from __future__ import annotations

import numpy as np

from shc.centers._kernels import _greedy_packed
from shc.centers.baselines import _balanced_random_rows, _is_power_of_two, csq_centers
from shc.centers.distance import _check_sizes, _offdiag, _resolve_min_distance
from shc.validation import whole_number

__all__ = ["DENSE_MDS_LIMIT", "MDS_DEFAULTS", "greedy_code", "mds_centers"]

MDS_DEFAULTS: dict[str, float | int] = {"max_sweeps": 200, "restarts": 500}
#: Above this many classes "mds" is the packed-bit greedy code (no C x C matrix; :func:`greedy_code`).
DENSE_MDS_LIMIT = 2000


def _distance_penalty(distances: np.ndarray, min_distance: int, target: float, hard_weight: float) -> np.ndarray:
    """Per-pair penalty of the MDS search: a heavy squared hinge below d plus a soft one below ``target``."""
    return hard_weight * np.maximum(min_distance - distances, 0.0) ** 2 + np.maximum(target - distances, 0.0) ** 2


def mds_centers(num_classes: int, num_bits: int, min_distance: int | None = None, seed: int = 0, max_sweeps: int = 200,
                restarts: int = 500) -> np.ndarray:
    """Minimal-distance-separated centers (the goal of Wang et al.'s MDS, CVPR 2023).

    Every pairwise Hamming distance is >= ``min_distance`` (default: :func:`gv_min_distance`), and
    distances are pushed apart beyond that. Where the Hadamard centers already satisfy the bound
    (C <= 2q, q a power of two) they are returned as they are (d_min = q/2, Table 3, C=100 q=64).

    Otherwise our own algorithm: start from CSQ's centers (balanced random rows where no Hadamard
    matrix exists) and run a greedy single-bit-flip descent on
    ``sum_{i != j} w * relu(d - D_ij)^2 + relu(q/2 - D_ij)^2`` (w large), one center at a time; the flip
    gains of all q bits of a center come from one vectorised product (the change of D_ij when bit k of
    h_i flips is ``h_ik h_jk``). It stops when a full sweep finds no improving flip; a local minimum
    that leaves pairs closer than d gets one center of each such pair redrawn and descends again (up to
    ``restarts`` times), so small crowded cases (e.g. C=17, q=8, d=3) are solved too. Above
    :data:`DENSE_MDS_LIMIT` classes the centers are the greedy Gilbert-Varshamov code of
    :func:`greedy_code` (packed bits, d_min >= d, not pushed further apart).
    """
    C, q = _check_sizes(num_classes, num_bits)
    d = _resolve_min_distance(C, q, min_distance)
    max_sweeps, restarts = whole_number(max_sweeps, "max_sweeps", minimum=1), whole_number(restarts, "restarts")
    if C > DENSE_MDS_LIMIT:
        return greedy_code(C, q, min_distance=d, seed=seed)
    rng = np.random.default_rng(seed)
    if _is_power_of_two(q):
        H = csq_centers(C, q, seed=seed).astype(np.float64)
        if C <= 2 * q and q // 2 >= d:
            return H.astype(np.int8)
    else:
        H = _balanced_random_rows(rng, C, q)

    target, hard_weight = q / 2.0, 100.0 * q * q
    gram = H @ H.T
    for _ in range(restarts + 1):
        _descend(H, gram, d, target, hard_weight, rng, max_sweeps)
        distances = (q - gram) / 2
        np.fill_diagonal(distances, q)
        too_close = np.flatnonzero((distances < d).any(axis=1))
        if too_close.size == 0:
            return H.astype(np.int8)
        # A local minimum with pairs closer than d: redraw one center of each such pair and descend again.
        redraw = too_close[rng.random(too_close.size) < 0.5] if too_close.size > 1 else too_close
        H[redraw] = _balanced_random_rows(rng, redraw.size, q)
        gram = H @ H.T
    achieved = int(_offdiag((q - gram) / 2).min())
    raise RuntimeError(
        f"MDS search reached d_min={achieved} < {d} for C={C}, q={q} within {restarts} restarts of {max_sweeps} "
        f"sweeps. Such a code may not exist: the Gilbert-Varshamov argument guarantees {C} codes at distance "
        f"{d - 1} only (e.g. no 21 codes of 8 bits are 3 apart). Pass min_distance={d - 1}, or use more bits."
    )


def _descend(H: np.ndarray, gram: np.ndarray, d: int, target: float, hard_weight: float,
             rng: np.random.Generator, max_sweeps: int) -> None:
    """Greedy single-bit-flip descent of the MDS penalty, in place on ``H`` and its Gram matrix."""
    q = H.shape[1]
    for _ in range(max_sweeps):
        improved = False
        for i in rng.permutation(H.shape[0]):
            distances = (q - gram[i]) / 2.0
            base = _distance_penalty(distances, d, target, hard_weight)
            up = _distance_penalty(distances + 1.0, d, target, hard_weight) - base
            down = _distance_penalty(distances - 1.0, d, target, hard_weight) - base
            up[i] = down[i] = 0.0
            # D_ij changes by +h_ik h_jk when bit k of h_i flips: +1 where the bits agree, -1 otherwise.
            gains = 0.5 * (up + down).sum() + 0.5 * H[i] * ((up - down) @ H)
            k = int(np.argmin(gains))
            if gains[k] < -1e-9:
                delta = -2.0 * H[i, k] * H[:, k]  # change of h_i . h_j
                delta[i] = 0.0
                gram[i] += delta
                gram[:, i] += delta
                H[i, k] = -H[i, k]
                improved = True
        if not improved:
            return


def greedy_code(num_classes: int, num_bits: int, min_distance: int | None = None, seed: int = 0,
                max_tries: int | None = None) -> np.ndarray:
    """C codes with pairwise distance >= d by the greedy Gilbert-Varshamov construction, for large C.

    Random candidates are kept when they are at distance >= d from every code kept so far; codes are
    packed 64 bits to a uint64 word and compared by popcount, so memory is O(C q / 8) bytes and no C x C
    matrix is formed. Raises RuntimeError when ``max_tries`` candidates (default 50 C) were not enough.
    """
    C, q = _check_sizes(num_classes, num_bits)
    d = _resolve_min_distance(C, q, min_distance)
    words = (q + 63) // 64
    last_bits = q - 64 * (words - 1)
    last_mask = np.uint64((1 << last_bits) - 1) if last_bits < 64 else np.uint64(2**64 - 1)
    tries = 50 * C if max_tries is None else int(max_tries)
    packed, kept = _greedy_packed(C, words, last_mask, d, seed, tries)
    if kept < C:
        raise RuntimeError(
            f"greedy_code found only {kept} of {C} codes of {q} bits at distance >= {d} in {tries} tries; "
            "lower min_distance or raise max_tries."
        )
    bits = np.unpackbits(packed.view(np.uint8).reshape(C, words * 8), axis=1, bitorder="little")[:, :q]
    return (bits.astype(np.int8) * 2 - 1).astype(np.int8)
