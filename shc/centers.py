"""Stage 2: hash centers (paper Sec. 3.2, Algorithm 1) and their quality.

Conventions used throughout (the paper writes ``H`` as q x C columns; we store rows). Equation
numbers count the paper's numbered equations in order (GV bound Eq. 13, objective Eq. 22):

- ``centers`` / ``H``: an (C, q) array of +-1 (int8 on output), row ``i`` is the center of class ``i``.
- Hamming distance and inner product are related by ``D(h_i, h_j) = (q - h_i . h_j) / 2`` (Theorem 2, Eq. 17).
- ``S``: a (C, C) class-similarity matrix with entries in [-1, 1] (stage 1).

Generators, all through :func:`generate_centers`:

``"random"``   Bernoulli(0.5) signs (CSQ's random centers).
``"csq"``      Hadamard rows, then rows of ``-H``, then random rows with exactly q/2 entries of -1 (CSQ).
``"mds"``      every pairwise distance >= d (Gilbert-Varshamov, Eq. 13), pushed apart beyond that by a
               vectorised greedy bit-flip search (our algorithm; Wang et al.'s goal).
``"shc"``      the paper's semantic hash centers (Eq. 22-38, Algorithm 1), initialised by ``"mds"``.
``"semantic"`` the ablation without the distance term (appendix M/H alternation, Table 7 "S only").
``"shc-ls"``   the same constrained semantic objective solved by exact feasible local search from several
               starts (our algorithm, :mod:`shc.center_search`; ``docs/centers.md``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.linalg import hadamard
from scipy.special import comb
from scipy.stats import spearmanr

from shc.registry import Registry
from shc.similarity import validate_similarity
from shc.validation import hamming_distance_matrix, seed_value, sign_codes


#: Paper defaults for Algorithm 1 (Sec. 4.4 "Experimental Settings").
SHC_DEFAULTS: dict[str, float | int] = {
    "rho": 0.2,
    "mu": 0.625,
    "beta": 1e-6,
    "eta": 0.5,
    "lambda0": 0.1,
    "alpha0": 0.0,
    "cycles": 20,
    "inner_steps": 3,
    # The authors' release divides the pairwise (mu / alpha / beta) part of dL/dh_i by 1e4.
    # Without it, mu's bit-balancing pull (about 2.5 per bit) swamps the semantic gradient
    # (about 0.3 per bit) and no semantic update survives the sign projection.
    "distance_scale": 1e-4,
    # Shrink an infeasible projected step instead of rejecting it whole (see _projected_step).
    "backtrack": True,
}
SEMANTIC_DEFAULTS: dict[str, float | int | None] = {"mu": None, "cycles": 20}  # mu None: 1/q
MDS_DEFAULTS: dict[str, float | int] = {"max_sweeps": 200, "restarts": 500}
#: Above this many classes "mds" is the packed-bit greedy code (no C x C matrix; shc.center_search.greedy_code).
DENSE_MDS_LIMIT = 2000


# --------------------------------------------------------------------------------------------
# Validation and small helpers
# --------------------------------------------------------------------------------------------
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


def _offdiag(matrix: np.ndarray) -> np.ndarray:
    return matrix[~np.eye(matrix.shape[0], dtype=bool)]


def _balanced_random_rows(rng: np.random.Generator, num_rows: int, num_bits: int) -> np.ndarray:
    """Rows with exactly floor(q/2) entries of -1, in random positions."""
    base = np.ones((num_rows, num_bits), dtype=np.float64)
    base[:, : num_bits // 2] = -1.0
    return rng.permuted(base, axis=1)


def _is_power_of_two(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


# --------------------------------------------------------------------------------------------
# Minimum distance (Theorem 1) and feasibility bounds
# --------------------------------------------------------------------------------------------
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

    The smaller of the Hamming (sphere-packing) bound and, where it applies, the Plotkin bound.
    """
    q, d = int(num_bits), int(min_distance)
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
        return gv_min_distance(num_classes, num_bits)
    d = int(min_distance)
    if d < 0:
        raise ValueError(f"min_distance must be >= 0, got {d}.")
    bound = max_codes_upper_bound(num_bits, d)
    if num_classes > bound:
        raise ValueError(
            f"No {num_classes} codes of length {num_bits} can have pairwise Hamming distance >= {d}: "
            f"the Hamming/Plotkin bounds allow at most {bound}. Lower min_distance (the GV value is "
            f"{gv_min_distance(num_classes, num_bits)}) or use more bits."
        )
    return d


# --------------------------------------------------------------------------------------------
# Quality (Table 3)
# --------------------------------------------------------------------------------------------
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


# --------------------------------------------------------------------------------------------
# Baseline generators
# --------------------------------------------------------------------------------------------
def random_centers(num_classes: int, num_bits: int, seed: int = 0) -> np.ndarray:
    """Bernoulli(0.5) sign centers (CSQ's random hash centers)."""
    C, q = _check_sizes(num_classes, num_bits)
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 2, size=(C, q)) * 2 - 1).astype(np.int8)


def csq_centers(num_classes: int, num_bits: int, seed: int = 0) -> np.ndarray:
    """CSQ's Hadamard centers (Yuan et al., CVPR 2020, Sec. 3.2).

    Rows of the q x q Hadamard matrix when C <= q, rows of [H; -H] when C <= 2q; when C > 2q the rows
    past 2q are random vectors with exactly q/2 entries of -1, as CSQ does. q must be a power of two.
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
    :func:`shc.center_search.greedy_code` (packed bits, d_min >= d, not pushed further apart).
    """
    C, q = _check_sizes(num_classes, num_bits)
    d = _resolve_min_distance(C, q, min_distance)
    if C > DENSE_MDS_LIMIT:
        from shc.center_search import greedy_code  # it imports this module

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
    for _ in range(int(restarts) + 1):
        _descend(H, gram, d, target, hard_weight, rng, int(max_sweeps))
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


# --------------------------------------------------------------------------------------------
# SHC: Algorithm 1
# --------------------------------------------------------------------------------------------
@dataclass
class CenterOptimisation:
    """Result of :func:`optimize_semantic_centers` / :func:`semantic_only_centers`.

    ``centers`` is the best feasible H met (lowest objective); ``history`` has one dict per outer cycle
    (cycle 0 is the initial H) with the objective, s_loss, d_min, constraint residuals and counts of
    accepted / guard-rejected column updates.
    """

    centers: np.ndarray
    history: list[dict[str, float]] = field(default_factory=list)
    best_cycle: int = 0
    min_distance: int = 0
    params: dict[str, Any] = field(default_factory=dict)


def shc_objective(H: np.ndarray, S: np.ndarray, mu: float) -> float:
    """Eq. 22 (with the distance term as it enters the update): ||S - H H^T / q||_F^2 + mu sum_{i!=j} h_i.h_j."""
    q = H.shape[1]
    gram = H @ H.T
    column_sum = H.sum(axis=0)
    return float(np.sum((S - gram / q) ** 2) + mu * (column_sum @ column_sum - np.trace(gram)))


def _shc_record(cycle, H, M, K, S, d, objective_mu, accepted, rejected) -> dict[str, float]:
    q = H.shape[1]
    gram = H @ H.T
    off = ~np.eye(H.shape[0], dtype=bool)
    distances = (q - gram[off]) / 2
    return {
        "cycle": cycle,
        "objective": shc_objective(H, S, objective_mu),
        "s_loss": float(np.mean((S - gram / q) ** 2)),
        "d_min": int(distances.min()),
        "violation": int((distances < d).sum() // 2),
        "proxy_residual": float(np.sqrt(np.mean((H - M) ** 2))) if M is not None else float("nan"),
        "slack_residual": float(np.mean(np.abs((q - 2 * d - gram - K)[off]))) if K is not None else float("nan"),
        "accepted_updates": accepted,
        "rejected_updates": rejected,
    }


def _projected_step(
    H: np.ndarray, i: int, gradient: np.ndarray, eta: float, min_distance: int, backtrack: bool
) -> np.ndarray | None:
    """One guarded projected-gradient step for center i (Eq. 36).

    Returns the new h_i, ``H[i]`` itself when the step changes nothing, or None when no feasible step
    exists. For ``h_ik = +-1``, ``h_ik (h_ik - g_ik / eta) = 1 - h_ik g_ik / eta``, so the full step
    ``sign(h_i - g / eta)`` flips exactly the bits where ``h_ik g_ik > eta`` (equality gives a zero, which
    keeps the bit); a smaller step size flips only the strongest of them. With ``backtrack`` an
    infeasible full step is shrunk to the largest step whose projection keeps distance >= d to every other
    center (the longest feasible prefix of the flips ordered by ``h_ik g_ik``); without it the step is
    rejected whole, as in the authors' release.
    """
    h = H[i]
    strength = h * gradient
    flips = np.flatnonzero(strength > eta)  # sign(h - g/eta) != h (Eq. 36); a zero step keeps the bit
    if flips.size == 0:
        return h
    q = H.shape[1]
    base = (q - H @ h) / 2
    if not backtrack:
        new_h = h.copy()
        new_h[flips] = -new_h[flips]
        distances = (q - H @ new_h) / 2
        distances[i] = q
        return new_h if distances.min() >= min_distance else None
    order = flips[np.argsort(-strength[flips], kind="stable")]
    # Flipping bit k of h_i changes D_ij by +h_ik h_jk; the distances after each prefix of flips:
    distances = base[:, None] + np.cumsum(h[order] * H[:, order], axis=1)
    distances[i] = q
    feasible = np.flatnonzero(distances.min(axis=0) >= min_distance)
    if feasible.size == 0:
        return None
    new_h = h.copy()
    chosen = order[: feasible[-1] + 1]
    new_h[chosen] = -new_h[chosen]
    return new_h


def optimize_semantic_centers(
    similarity: Any,
    num_bits: int,
    min_distance: int | None = None,
    init: Any | None = None,
    seed: int = 0,
    rho: float = 0.2,
    mu: float = 0.625,
    beta: float = 1e-6,
    eta: float = 0.5,
    lambda0: float = 0.1,
    alpha0: float = 0.0,
    cycles: int = 20,
    inner_steps: int = 3,
    distance_scale: float = 1e-4,
    backtrack: bool = True,
) -> CenterOptimisation:
    """Semantic hash centers by the paper's Algorithm 1 (Eq. 22-38).

    Minimises ``||S - H H^T / q||_F^2 + mu sum_{i != j} h_i . h_j`` subject to ``D(h_i, h_j) >= d`` with
    the augmented Lagrangian of Eq. 26 (proxy ``M = H``, slack ``k_ij >= 0``, multipliers ``Lambda``
    and ``alpha``), alternating for ``cycles`` outer cycles:

    1. ``M`` in closed form (Eq. 29): ``M = (2/q S H + Lambda + rho H)(2/q^2 H^T H + rho I)^{-1}``.
    2. ``K = max(q - 2d - H H^T + alpha / beta, 0)`` (Eq. 33).
    3. For each center i, ``inner_steps`` projected gradient steps
       ``h_i <- sign(h_i - dL/dh_i / eta)`` (Eq. 35-36); a step is accepted only if h_i keeps
       distance >= d to every other center (the guard of the authors' release), a zero keeps the bit.
       With ``backtrack`` (default) an infeasible step is shrunk to the largest feasible step size
       rather than dropped (the release drops it, and then about 95% of the steps are lost).
    4. ``Lambda += rho (H - M)`` (Eq. 37) and ``alpha_ij += beta (q - 2d - h_i.h_j - k_ij)`` for every
       pair (Eq. 38). Multipliers are floats (the release made alpha an integer tensor, so it never
       moved, and updated one pair per row).

    The pairwise part of dL/dh_i (mu, alpha, beta terms) is multiplied by ``distance_scale`` (1e-4,
    the authors' release); set 1.0 for the literal Eq. 35. Initialised by :func:`mds_centers` unless
    ``init`` is given. Returns the best feasible H met, by the objective evaluated with the same
    scaled mu.
    """
    S = validate_similarity(similarity)
    C = S.shape[0]
    C, q = _check_sizes(C, num_bits)
    d = _resolve_min_distance(C, q, min_distance)
    params = dict(rho=rho, mu=mu, beta=beta, eta=eta, lambda0=lambda0, alpha0=alpha0, cycles=cycles,
                  inner_steps=inner_steps, distance_scale=distance_scale, backtrack=backtrack)
    for name in ("rho", "beta", "eta"):
        if not params[name] > 0:
            raise ValueError(f"{name} must be > 0, got {params[name]}.")
    H = (mds_centers(C, q, min_distance=d, seed=seed) if init is None else _as_sign_matrix(init)).astype(np.float64)
    if H.shape != (C, q):
        raise ValueError(f"init must have shape ({C}, {q}), got {H.shape}.")
    start_distance = int(_offdiag(hamming_distances(H)).min())
    objective_mu = mu * distance_scale

    Lambda = np.full((C, q), float(lambda0))
    alpha = np.full((C, C), float(alpha0))
    np.fill_diagonal(alpha, 0.0)
    eye_q = np.eye(q)
    off = ~np.eye(C, dtype=bool)
    bound = q - 2 * d  # the constraint h_i . h_j <= q - 2d (Eq. 22)

    history = [_shc_record(0, H, None, None, S, d, objective_mu, 0, 0)]
    best_H, best_objective, best_cycle = H.copy(), history[0]["objective"], 0
    for cycle in range(1, int(cycles) + 1):
        M = np.linalg.solve(2 / q**2 * H.T @ H + rho * eye_q, (2 / q * S @ H + Lambda + rho * H).T).T
        gram = H @ H.T
        K = np.maximum(bound - gram + alpha / beta, 0.0)
        K[~off] = 0.0
        MtM, MS = M.T @ M, S @ M  # fixed during the H-step
        column_sum = H.sum(axis=0)
        accepted = rejected = 0
        for i in range(C):
            target = bound - K[i]
            for _ in range(int(inner_steps)):
                h = H[i]
                inner = H @ h
                pair_weights = -2.0 * alpha[i] + 2.0 * beta * (inner - target)
                pair_weights[i] = 0.0
                pairwise = 2.0 * mu * (column_sum - h) + pair_weights @ H
                gradient = (2 / q**2) * (MtM @ h) - (2 / q) * MS[i] + Lambda[i] + rho * (h - M[i]) \
                    + distance_scale * pairwise
                new_h = _projected_step(H, i, gradient, eta, d, backtrack)
                if new_h is None:
                    rejected += 1
                    break
                if new_h is h:
                    break
                column_sum += new_h - h
                H[i] = new_h
                accepted += 1
        Lambda += rho * (H - M)
        gram = H @ H.T
        residual = bound - gram - K
        residual[~off] = 0.0
        alpha += beta * residual
        record = _shc_record(cycle, H, M, K, S, d, objective_mu, accepted, rejected)
        history.append(record)
        if record["objective"] < best_objective and record["d_min"] >= min(d, start_distance):
            best_H, best_objective, best_cycle = H.copy(), record["objective"], cycle
    return CenterOptimisation(best_H.astype(np.int8), history, best_cycle, d, params)


def semantic_only_centers(similarity: Any, num_bits: int, init: Any | None = None, seed: int = 0,
                          mu: float | None = None, cycles: int = 20) -> CenterOptimisation:
    """SHC without the distance term (the paper's ablation, Sec. 4.6.1, Eq. 46-49).

    Minimises ``||S - H M^T / q||_F^2 + mu ||H - M||_F^2`` by alternating, in row form,
    ``M = (S/q + mu I) H (H^T H / q^2 + mu I)^{-1}`` (the paper prints this without the inverse; the
    inverse is what setting the gradient to zero gives) and ``H = sign((S/q + mu I) M (M^T M)^+)``
    (Eq. 49; a zero keeps the bit). Initialised by :func:`mds_centers`; returns the H of lowest
    s_loss met. No minimum distance is enforced, so d_min may drop (that is the point of the ablation).

    The paper gives no mu for this ablation. The default ``mu = 1/q`` puts the proxy coupling on the
    scale of ``S/q``; with the main objective's 0.625 the coupling dominates and the alternation stays
    at its MDS start on the digits-composite S (s_loss unchanged at 16, 32 and 64 bits), while 1/q
    lowers s_loss by 30-50% there.
    """
    S = validate_similarity(similarity)
    C, q = _check_sizes(S.shape[0], num_bits)
    mu = 1.0 / q if mu is None else mu
    if not mu > 0:
        raise ValueError(f"mu must be > 0, got {mu}.")
    H = (mds_centers(C, q, seed=seed) if init is None else _as_sign_matrix(init)).astype(np.float64)
    if H.shape != (C, q):
        raise ValueError(f"init must have shape ({C}, {q}), got {H.shape}.")
    left = S / q + mu * np.eye(C)
    history = [_shc_record(0, H, None, None, S, 0, 0.0, 0, 0)]
    best_H, best_loss, best_cycle = H.copy(), history[0]["s_loss"], 0
    for cycle in range(1, int(cycles) + 1):
        M = np.linalg.solve(H.T @ H / q**2 + mu * np.eye(q), (left @ H).T).T
        step = left @ M @ np.linalg.pinv(M.T @ M)
        changed = int(np.sum((step != 0) & (np.sign(step) != H)))
        H = np.where(step == 0, H, np.sign(step))
        record = _shc_record(cycle, H, M, None, S, 0, 0.0, changed, 0)
        history.append(record)
        if record["s_loss"] < best_loss:
            best_H, best_loss, best_cycle = H.copy(), record["s_loss"], cycle
    return CenterOptimisation(best_H.astype(np.int8), history, best_cycle, 0, {"mu": mu, "cycles": cycles})


# --------------------------------------------------------------------------------------------
# Front door
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CenterGenerator:
    """One center method: ``run(C, q, S, seed, **options) -> (centers, history)``, its options, whether it needs S."""

    name: str
    run: Any
    options: tuple[str, ...]
    needs_similarity: bool


def _without_history(function):
    return lambda C, q, S, seed, **options: (function(C, q, seed=seed, **options), [])


def _with_history(function):
    def run(C, q, S, seed, **options):
        result = function(S, q, seed=seed, **options)
        return result.centers, result.history

    return run


def _local_search(S, q, seed=0, **options):
    from shc.center_search import local_search_centers  # it imports this module

    return local_search_centers(S, q, seed=seed, **options)


#: Every center method by name; a new one is one ``CENTER_GENERATORS.register(name, CenterGenerator(...))``.
CENTER_GENERATORS: Registry[CenterGenerator] = Registry("center method")
for _generator in (
    CenterGenerator("random", _without_history(random_centers), (), False),
    CenterGenerator("csq", _without_history(csq_centers), (), False),
    CenterGenerator("mds", _without_history(mds_centers), ("min_distance", *MDS_DEFAULTS), False),
    CenterGenerator("shc", _with_history(optimize_semantic_centers), ("min_distance", "init", *SHC_DEFAULTS), True),
    CenterGenerator("semantic", _with_history(semantic_only_centers), ("init", *SEMANTIC_DEFAULTS), True),
    CenterGenerator("shc-ls", _with_history(_local_search), ("min_distance", "init", "starts", "anneal_sweeps",
                                                             "t_start", "t_end", "shc_cycles", "max_shc_classes"),
                    True),
):
    CENTER_GENERATORS.register(_generator.name, _generator)
CENTER_METHODS = tuple(CENTER_GENERATORS.names())
SEMANTIC_METHODS = tuple(name for name, g in CENTER_GENERATORS.items() if g.needs_similarity)


def run_center_method(method: str, num_classes: int, num_bits: int, similarity: Any | None = None, seed: int = 0,
                      **options: Any) -> tuple[np.ndarray, list[dict[str, float]]]:
    """:func:`generate_centers` plus the optimiser's record (one dict per iteration; empty for the
    generators without iterations): what stage 2 stores."""
    generator = CENTER_GENERATORS.get(method)
    C, q = _check_sizes(num_classes, num_bits)
    seed = seed_value(seed)
    unknown = sorted(set(options) - set(generator.options))
    if unknown:
        allowed = ", ".join(generator.options) or "none"
        raise TypeError(f"Unknown option(s) {unknown} for method {method!r}; allowed: {allowed}.")
    if generator.needs_similarity:
        if similarity is None:
            raise ValueError(
                f"method {method!r} needs a similarity matrix (stage 1); pass similarity=S of shape ({C}, {C})."
            )
        validate_similarity(similarity, num_classes=C)
    return generator.run(C, q, similarity, seed, **options)


def generate_centers(method: str, num_classes: int, num_bits: int, similarity: Any | None = None, seed: int = 0,
                     **options: Any) -> np.ndarray:
    """Generate C hash centers of q bits with one of :data:`CENTER_METHODS`.

    Parameters
    ----------
    method : {"random", "csq", "mds", "shc", "semantic", "shc-ls"}
    num_classes, num_bits : int
        C >= 2 and q >= 2 with C <= 2^q.
    similarity : (C, C) array, required for "shc", "semantic" and "shc-ls"
        The stage-1 similarity S (entries in [-1, 1], symmetric).
    seed : int
        Same inputs and seed give the same centers on every run.
    **options
        Method options: ``min_distance`` and ``max_sweeps`` for "mds"; ``min_distance``, ``init`` and
        the Algorithm 1 parameters of :data:`SHC_DEFAULTS` for "shc"; ``mu``, ``cycles``, ``init`` for
        "semantic"; those of :func:`shc.center_search.local_search_centers` for "shc-ls".

    Returns
    -------
    (C, q) int8 array with entries in {-1, +1}.
    """
    return run_center_method(method, num_classes, num_bits, similarity, seed, **options)[0]


__all__ = [
    "CENTER_GENERATORS",
    "CENTER_METHODS",
    "CenterGenerator",
    "run_center_method",
    "CenterOptimisation",
    "SHC_DEFAULTS",
    "center_quality",
    "csq_centers",
    "generate_centers",
    "gv_min_distance",
    "hamming_distances",
    "max_codes_upper_bound",
    "mds_centers",
    "optimize_semantic_centers",
    "random_centers",
    "semantic_only_centers",
    "shc_objective",
    "validate_similarity",
]
