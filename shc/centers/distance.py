"""Stage 2 at the bottom: sizes, Hamming distances between centers, the Gilbert-Varshamov minimum distance
(Theorem 1, Eq. 13) and the bounds on how many codes can keep a distance.

Centers are stored as rows: ``H`` is (C, q) of +-1, row ``i`` the center of class ``i``; Hamming distance and
inner product are related by ``D(h_i, h_j) = (q - h_i . h_j) / 2`` (Theorem 2, Eq. 17).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import comb

from shc.validation import hamming_distance_matrix, sign_codes, whole_number

__all__ = ["distance_table", "gv_min_distance", "hamming_distances", "max_codes_upper_bound"]


def _check_sizes(num_classes: int, num_bits: int) -> tuple[int, int]:
    if not (isinstance(num_classes, (int, np.integer)) and isinstance(num_bits, (int, np.integer))):
        raise TypeError(
            f"num_classes and num_bits must be integers, got {type(num_classes).__name__} and "
            f"{type(num_bits).__name__}."
        )
    num_classes, num_bits = int(num_classes), int(num_bits)
    if num_classes < 2:
        raise ValueError(f"num_classes must be >= 2 (hash centers separate classes), got {num_classes}.")
    if num_bits < 2:
        raise ValueError(f"num_bits must be >= 2, got {num_bits}.")
    if num_bits < 63 and num_classes > 2**num_bits:
        raise ValueError(
            f"{num_classes} classes cannot have distinct centers in {num_bits} bits (at most "
            f"2^{num_bits} = {2**num_bits} codes exist); use more bits."
        )
    return num_classes, num_bits


def _as_sign_matrix(centers: Any) -> np.ndarray:
    return sign_codes(centers, "centers").astype(np.float64)


def hamming_distances(centers: Any) -> np.ndarray:
    """Pairwise Hamming distances (C, C) of +-1 centers, via Eq. 17: D = (q - H H^T) / 2."""
    return hamming_distance_matrix(sign_codes(centers, "centers"))


def distance_table(centers: Any, count: int = 5):
    """The pairwise Hamming distances (Eq. 17) of the first ``count`` centers as a table to show and save, rows and
    columns ``h0``, ``h1``, ...; its index is named ``center``."""
    import pandas as pd

    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 1:
        raise ValueError(f"count must be a positive integer (how many centers to show), got {count!r}.")
    codes = sign_codes(centers, "centers")[: int(count)]
    names = [f"h{i}" for i in range(len(codes))]
    return pd.DataFrame(hamming_distance_matrix(codes), index=pd.Index(names, name="center"), columns=names)


def _offdiag(matrix: np.ndarray) -> np.ndarray:
    return matrix[~np.eye(matrix.shape[0], dtype=bool)]


def gv_min_distance(num_classes: int, num_bits: int) -> int:
    """The Gilbert-Varshamov minimum distance used by MDS and SHC (Theorem 1, Eq. 13).

    The smallest ``d`` with ``sum_{i<d} C(q, i) >= 2^q / C``, computed in exact integer arithmetic
    (``C * sum >= 2^q``): the distance MDS and SHC require. Strictly, the Gilbert-Varshamov argument
    guarantees C codes at distance ``d - 1`` (at ``d`` when the sum equals 2^q / C); reaching ``d`` is
    what the search has to achieve, and :func:`mds_centers` does on every (C, q) of the paper.

    Examples: C=100 gives 4, 10, 24 at q=16, 32, 64; C=555 gives 3, 9, 21.
    """
    num_classes, num_bits = _check_sizes(num_classes, num_bits)
    target, total = 2**num_bits, 0
    for d in range(1, num_bits + 2):
        total += math.comb(num_bits, d - 1)
        if num_classes * total >= target:
            return d
    return num_bits + 1  # unreachable: the full sum is 2^q


def max_codes_upper_bound(num_bits: int, min_distance: int) -> int:
    """An upper bound on A(q, d), the size of any binary code with minimum distance d.

    The smaller of the Hamming (sphere-packing) bound and, where it applies, the Plotkin bound, each also at the
    length and distance of the same code one bit shorter or longer: A(q, d) = A(q - 1, d - 1) for even d, and
    A(q, d) = A(q + 1, d + 1) for odd d (MacWilliams & Sloane, ch. 2, Th. 2 and its corollary). The parity step
    is what bounds C = 150 at q = 8, d = 2 (A(7, 1) = 128) and C = 5 at q = 5, d = 3 (A(6, 4) <= 4).
    """
    q, d = whole_number(num_bits, "num_bits", minimum=1), whole_number(min_distance, "min_distance")
    if d <= 1:
        return 2**q
    if d > q:
        return 1
    other = _sphere_plotkin(q - 1, d - 1) if d % 2 == 0 else _sphere_plotkin(q + 1, d + 1)
    return min(_sphere_plotkin(q, d), other)


def _sphere_plotkin(q: int, d: int) -> int:
    """The Hamming (sphere-packing) bound on A(q, d), and the Plotkin bound where 2d >= q."""
    if d <= 1:
        return 2**q
    if d > q:
        return 1
    t = (d - 1) // 2
    bound = 2**q // int(sum(comb(q, i, exact=True) for i in range(t + 1)))
    if 2 * d > q:
        bound = min(bound, 2 * (d // (2 * d - q)))
    elif 2 * d == q:
        bound = min(bound, 4 * d)
    return bound


def _resolve_min_distance(num_classes: int, num_bits: int, min_distance: int | None) -> int:
    if min_distance is None:
        d = gv_min_distance(num_classes, num_bits)
        bound = max_codes_upper_bound(num_bits, d)
        if num_classes > bound:  # the GV argument guarantees d - 1 only: refused now, not after a long search
            raise ValueError(
                f"No {num_classes} codes of length {num_bits} reach the Gilbert-Varshamov distance d = {d} (Eq. 13 "
                f"guarantees d - 1): the Hamming/Plotkin bounds allow at most {bound}. Pass min_distance={d - 1}, "
                "or use more bits.")
        return d
    d = whole_number(min_distance, "min_distance")
    bound = max_codes_upper_bound(num_bits, d)
    if num_classes > bound:
        raise ValueError(
            f"No {num_classes} codes of length {num_bits} can have pairwise Hamming distance >= {d}: "
            f"the Hamming/Plotkin bounds allow at most {bound}. Lower min_distance (the GV value is "
            f"{gv_min_distance(num_classes, num_bits)}) or use more bits."
        )
    return d
