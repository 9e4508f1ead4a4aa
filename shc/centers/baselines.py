"""Stage 2, the data-independent baselines: ``"random"`` (Bernoulli(0.5) signs, CSQ's random centers) and
``"csq"`` (Hadamard rows, then rows of ``-H``, then random rows with exactly q/2 entries of -1)."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.linalg import hadamard

from shc.centers.distance import _check_sizes

__all__ = ["csq_centers", "hadamard_capacity_table", "random_centers"]


def _balanced_random_rows(rng: np.random.Generator, num_rows: int, num_bits: int) -> np.ndarray:
    """Rows with exactly floor(q/2) entries of -1, in random positions."""
    base = np.ones((num_rows, num_bits), dtype=np.float64)
    base[:, : num_bits // 2] = -1.0
    return rng.permuted(base, axis=1)


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def random_centers(num_classes: int, num_bits: int, seed: int = 0) -> np.ndarray:
    """Bernoulli(0.5) sign centers (CSQ's random hash centers)."""
    C, q = _check_sizes(num_classes, num_bits)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 2, size=(C, q)) * 2 - 1).astype(np.int8)


def csq_centers(num_classes: int, num_bits: int, seed: int = 0) -> np.ndarray:
    """CSQ's Hadamard centers (Yuan et al., CVPR 2020, Sec. 3.2).

    Rows of the q x q Hadamard matrix when C <= q, rows of [H; -H] when C <= 2q; when C > 2q the rows
    past 2q are random vectors with exactly q/2 entries of -1, as in CSQ's released code (the SHC paper
    speaks of Bernoulli draws, whose rows are not balanced; balanced rows keep every distance even). They are drawn
    once, as the papers describe (the SHC paper's Table 3 d_min of CSQ, 14 on Cars at 64 bits, fits a single draw);
    CSQ's released code redraws them, up to 20 times, until their minimum distance exceeds q/4. q must be a power
    of two.
    """
    C, q = _check_sizes(num_classes, num_bits)
    if not _is_power_of_two(q):
        raise ValueError(
            f"CSQ centers need a Hadamard matrix, which exists here only for q a power of two "
            f"(got q={q}); use 16, 32, 64, ... bits or method='mds'."
        )
    hadamard_rows = hadamard(q).astype(np.float64)
    rows = np.concatenate([hadamard_rows, -hadamard_rows])[: min(C, 2 * q)]
    if C > 2 * q:
        rng = np.random.default_rng(seed)
        rows = np.concatenate([rows, _balanced_random_rows(rng, C - 2 * q, q)])
    return rows.astype(np.int8)


def hadamard_capacity_table(num_bits: int, classes: Any = (), seed: int = 0):
    """Where CSQ's Hadamard rows run out: for C in {q, 2q, 2q + 1, 4q} and ``classes`` (e.g. a page's own C), whether
    C <= 2q, the d_min of CSQ's centers (Hadamard rows and their negations up to 2q, then random fill), the GV
    distance d (Eq. 13) and q / 2, the distance of two Hadamard rows. Index ``C``, ascending."""
    import pandas as pd

    from shc.centers.distance import gv_min_distance
    from shc.centers.quality import center_quality

    q = int(num_bits)
    rows = [{"C": c, "C <= 2q": "yes" if c <= 2 * q else "no",
             "d_min of CSQ centers": center_quality(csq_centers(c, q, seed=seed))["d_min"],
             "GV distance d": gv_min_distance(c, q), "q / 2": q // 2}
            for c in sorted({q, 2 * q, 2 * q + 1, 4 * q, *(int(c) for c in classes)})]
    return pd.DataFrame(rows).set_index("C")
