"""Stage 2: the quality of a set of centers (the paper's Table 3): minimum and mean distance, S_loss and the
Spearman correlation with S; d_min of very many centers by packed bits; and a lower bound on S_loss."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import spearmanr

from shc.centers._kernels import _pack, _packed_min
from shc.centers.distance import _as_sign_matrix, _offdiag, _resolve_min_distance, hamming_distances
from shc.similarity import validate_similarity
from shc.validation import whole_number

__all__ = [
    "center_quality", "distance_cap_bound", "geometry_lesson", "packed_min_distance",
    "psd_cap_bound", "quality_table", "rank_cap_bound", "relaxation_bound", "spherical_relaxation",
    "unit_diagonal_bound",
]


def quality_table(center_sets: dict[str, Any], similarity: Any | None = None, min_distance: int | None = None):
    """:func:`center_quality` of each named set of centers, one row per name (index ``method``), in the given order;
    with ``min_distance`` a first column ``GV distance d`` holding it (what each set was measured against)."""
    import pandas as pd

    table = pd.DataFrame([center_quality(codes, similarity) for codes in center_sets.values()],
                         index=pd.Index(list(center_sets), name="method"))
    if min_distance is not None:
        table.insert(0, "GV distance d", int(min_distance))
    return table


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
    num_bits = whole_number(num_bits, "num_bits", minimum=1)
    values = np.linalg.eigvalsh(S)
    kept = np.sort(values[values > 0])[::-1][:num_bits]
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
    C, k = S.shape[0], min(whole_number(num_bits, "num_bits", minimum=1), S.shape[0])
    values = np.linalg.eigvalsh(S)[::-1]
    mu = _simplex_projection(values[:k], C)
    return float((np.sum((values[:k] - mu) ** 2) + np.sum(values[k:] ** 2)) / C**2)


def _simplex_projection(top: np.ndarray, total: float) -> np.ndarray:
    """The Euclidean projection of ``top`` (sorted, largest first) onto ``{mu >= 0, sum mu = total}``:
    ``mu_i = max(top_i + theta, 0)`` with theta fixed by the sum. The projection keeps the order."""
    # theta: the sum of max(top + theta, 0) rises with theta; the k candidate supports are the top j values
    thetas = (total - np.cumsum(top)) / np.arange(1, top.size + 1)
    support = int(np.flatnonzero(top + thetas > 0)[-1]) + 1
    return np.maximum(top + thetas[support - 1], 0.0)


def _nearest_unit_trace_gram(target: np.ndarray, rank: int) -> tuple[float, np.ndarray]:
    """``min ||G - target||_F^2`` over positive semidefinite G of rank <= ``rank`` and trace C, and the G
    that reaches it (Hoffman-Wielandt, as in :func:`unit_diagonal_bound`: G keeps the eigenvectors of the
    ``rank`` largest eigenvalues of ``target`` and takes their projection onto the simplex)."""
    C = target.shape[0]
    values, vectors = np.linalg.eigh((target + target.T) / 2)
    values, vectors = values[::-1], vectors[:, ::-1]
    mu = _simplex_projection(values[:rank], C)
    value = float(np.sum((values[:rank] - mu) ** 2) + np.sum(values[rank:] ** 2))
    return value, (vectors[:, :rank] * mu) @ vectors[:, :rank].T


def _lattice_min(s: np.ndarray, linear: Any, quadratic: Any, values: tuple[float, float],
                 step: float) -> tuple[np.ndarray, np.ndarray]:
    """Entry by entry, ``min_g (s - g)^2 - linear g - quadratic g^2`` over the lattice ``g in {values[0],
    values[0] - step, ..., values[1]}``, and the minimisers g (``linear`` and ``quadratic`` scalars or arrays
    like ``s``). The quadratic ``(1 - quadratic) g^2 - (2 s + linear) g + s^2`` is least on a 1-d lattice at a
    lattice neighbour of its stationary point where convex, at an end where concave or linear: four candidates
    per entry are exact."""
    top, bottom = values
    count = int(round((top - bottom) / step))
    curvature = 1.0 - np.asarray(quadratic, dtype=float)
    slope = 2.0 * s + linear
    convex = curvature > 0
    stationary = np.where(convex, slope / np.where(convex, 2.0 * curvature, 1.0), top)
    position = np.clip((top - stationary) / step, 0, count)
    best_f = best_g = None
    for g in (top - np.floor(position) * step, top - np.ceil(position) * step, np.full_like(s, top),
              np.full_like(s, bottom)):
        f = curvature * g * g - slope * g + s * s
        if best_f is None:
            best_f, best_g = f, g
        else:
            better = f < best_f
            best_f, best_g = np.where(better, f, best_f), np.where(better, g, best_g)
    return best_f, best_g


def _cap_dual(off: np.ndarray, lam: float, values: tuple[float, float], step: float) -> tuple[float, float]:
    """For :func:`distance_cap_bound`: the sum over ``off`` of min_g (s - g)^2 - lam g^2 over the lattice
    (:func:`_lattice_min`) and the sum of the minimisers' g^2."""
    f, g = _lattice_min(off, 0.0, lam, values, step)
    return float(f.sum()), float(np.sum(g**2))


def distance_cap_bound(similarity: Any, num_bits: int, min_distance: int | None = None,
                       iterations: int = 60) -> float:
    """A lower bound on the per-entry S_loss of any centers *that keep the minimum distance* d (default the
    GV distance, Eq. 13), tighter than :func:`unit_diagonal_bound` where q is large beside C or S has many
    entries above the distance cap.

    For +-1 centers at pairwise Hamming distance >= d, every off-diagonal entry of ``G = H H^T / q`` lies on
    the lattice ``{1 - 2k / q : k = d, ..., q}`` (at most the cap ``1 - 2d / q``), the diagonal is 1, and
    ``sum_{i != j} G_ij^2 = ||G||_F^2 - C >= C^2 / q - C`` (the q nonzero eigenvalues of G sum to C). For
    every lam >= 0, weak duality on that last constraint gives

        ||S - G||_F^2 >= sum_i (S_ii - 1)^2 + lam (C^2 / q - C) + sum_{i != j} min_g [(S_ij - g)^2 - lam g^2],

    the minimum over the lattice, entry by entry. The dual is concave in lam; it is maximised by bisection on
    its supergradient over [0, 2 + q / d] (beyond that every minimiser is -1 and the dual falls). Returned
    divided by C^2. ``d = 0`` leaves only the lattice and the energy: still a bound for any centers."""
    S, q, d = _lattice_inputs(similarity, num_bits, min_distance)
    return float(_cap_bound(S, q, d, iterations)[0] / S.shape[0] ** 2)


def _lattice_inputs(similarity: Any, num_bits: int, min_distance: int | None) -> tuple[np.ndarray, int, int]:
    """Validated (S, q, d) for the bounds that know the minimum distance (d defaults to the GV distance)."""
    S = validate_similarity(similarity)
    C, q = S.shape[0], int(num_bits)
    if q < 1:
        raise ValueError(f"num_bits must be >= 1, got {num_bits}.")
    d = _resolve_min_distance(C, q, min_distance)
    if d > q:
        raise ValueError(f"min_distance {d} exceeds num_bits {q}: no two centers can be that far apart.")
    return S, q, d


def _cap_bound(S: np.ndarray, q: int, d: int, iterations: int) -> tuple[float, float]:
    """:func:`distance_cap_bound` as a sum over all entries (not divided by C^2), and the lam that reaches it."""
    C = S.shape[0]
    off = S[~np.eye(C, dtype=bool)]
    diagonal = float(np.sum((np.diag(S) - 1.0) ** 2))
    energy = C * C / q - C
    values, step = (1.0 - 2.0 * d / q, -1.0), 2.0 / q

    def dual(lam: float) -> tuple[float, float]:
        total, squares = _cap_dual(off, lam, values, step)
        return diagonal + lam * energy + total, energy - squares

    low, high = 0.0, 2.0 + q / max(d, 1)
    best, slope = dual(low)
    best_lam = low
    if slope > 0:  # at lam = 0 the energy constraint binds: raise lam while the supergradient says so
        for _ in range(int(iterations)):
            middle = (low + high) / 2
            value, slope = dual(middle)
            if value > best:
                best, best_lam = value, middle
            low, high = (middle, high) if slope > 0 else (low, middle)
    return float(best), float(best_lam)


PSD_BOUND_MAX_CLASSES = 3000  # two eigendecompositions of a (C, C) matrix per step: about 0.2 s a step at C = 1000
WEIGHT_RANGE = (0.02, 0.98)  # rank_cap_bound: where its weight a may go (a -> 1 divides the lattice part by 0)


def _psd_part(matrix: np.ndarray) -> np.ndarray:
    """The nearest positive semidefinite matrix in Frobenius norm (negative eigenvalues set to 0)."""
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    return (vectors * np.maximum(values, 0.0)) @ vectors.T


def psd_cap_bound(similarity: Any, num_bits: int, min_distance: int | None = None, iterations: int = 300,
                  step: float = 0.1) -> float:
    """A lower bound on the per-entry S_loss of any centers *that keep the minimum distance* d (default the
    GV distance, Eq. 13), at least :func:`distance_cap_bound`: it also knows that ``G = H H^T / q`` is
    positive semidefinite, and that its energy constraint holds on every weighting of the classes, not only
    on all of them at once.

    For +-1 centers two matrices are positive semidefinite: G itself, and ``G o G - J / q`` (``o`` the entrywise
    product, J all ones). The second holds because ``q^2 G o G`` is the Gram matrix of the C vectors of bit
    products ``(h_ia h_ib)_{a, b}``, whose q entries with ``a = b`` are all 1 (they give ``q J``) and whose
    others give a Gram matrix (Delsarte's second Krawtchouk matrix). With ``1^T . 1`` it is the energy
    constraint of :func:`distance_cap_bound`; with the indicator of any subset of classes it is that
    constraint on the subset, so the energy G must carry cannot all sit on the pairs where S wants it. For any
    positive semidefinite A and L, weak duality gives

        ||S - G||_F^2 >= ||S - G||_F^2 - <A, G> - <L, G o G - J / q>
                      >= sum_i [(S_ii - 1)^2 - A_ii - L_ii (1 - 1/q)]
                         + sum_{i != j} (L_ij / q + min_g [(S_ij - g)^2 - A_ij g - L_ij g^2]),

    the minimum over the lattice ``{1 - 2k / q : k = d, ..., q}`` entry by entry (exact from four candidates).
    The right side is concave in (A, L); it is raised by projected supergradient ascent (supergradients
    ``-G*`` and ``J / q - G* o G*`` at the minimisers G*, steps ``step * C / (sqrt(t + 1) ||supergradient||)``,
    each iterate projected onto the positive semidefinite cone), starting from ``A = 0``, ``L = lam J`` where
    lam is the distance-cap bound's own multiplier, so the result is never below that bound. The best iterate
    is returned, less ``C`` times any negative eigenvalue left in A or L by rounding (so the value stays a
    bound in floating point). ``iterations = 0`` returns the distance-cap bound.

    Measured (docs/centers.md): stage-1-like S, C = 1000 at 32 bits: 0.622 of MDS's S_loss for the
    distance-cap bound, 0.71 for this one. Adding the third and fourth Krawtchouk matrices (also positive
    semidefinite for +-1 centers) left it where it was. Cost: two eigendecompositions of (C, C) per step;
    refused above ``PSD_BOUND_MAX_CLASSES`` classes. Returned divided by C^2."""
    S, q, d = _lattice_inputs(similarity, num_bits, min_distance)
    C = S.shape[0]
    if C > PSD_BOUND_MAX_CLASSES:
        raise ValueError(f"psd_cap_bound works on dense (C, C) matrices and is limited to "
                         f"{PSD_BOUND_MAX_CLASSES} classes, got {C}; use distance_cap_bound for larger C.")
    if int(iterations) < 0 or not step > 0:
        raise ValueError(f"need iterations >= 0 and step > 0, got {iterations} and {step}.")
    best, lam = _cap_bound(S, q, d, 60)
    if int(iterations) == 0:
        return float(best / C**2)
    upper = np.triu_indices(C, 1)
    s = S[upper]
    diagonal = float(np.sum((np.diag(S) - 1.0) ** 2))
    values, lattice_step = (1.0 - 2.0 * d / q, -1.0), 2.0 / q
    A, L = np.zeros((C, C)), np.full((C, C), lam)
    best_pair = None  # None: the start (A = 0, L = lam J, positive semidefinite exactly) is still the best
    for t in range(int(iterations)):
        f, g = _lattice_min(s, A[upper], L[upper], values, lattice_step)
        value = (diagonal - np.trace(A) - (1 - 1 / q) * np.trace(L)
                 + 2.0 * float(np.sum(f + L[upper] / q)))
        if value > best:
            best, best_pair = value, (A, L)
        G = np.eye(C)
        G[upper] = g
        G.T[upper] = g
        grad_A, grad_L = -G, 1.0 / q - G * G
        norm = float(np.sqrt(np.sum(grad_A**2) + np.sum(grad_L**2)))
        if norm == 0:
            break
        size = step * C / (np.sqrt(t + 1) * norm)
        A, L = _psd_part(A + size * grad_A), _psd_part(L + size * grad_L)
    if best_pair is not None:  # <A, G> >= -eps C and <L, G o G - J / q> >= -eps C where eps = -min eig
        best -= C * sum(max(0.0, -float(np.linalg.eigvalsh(M)[0])) for M in best_pair)
    return float(best / C**2)


def _rank_cap_dual(S: np.ndarray, q: int, d: int, a: float, B: np.ndarray,
                   L: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`rank_cap_bound`'s dual function at weight ``a`` and multipliers (B, L), not divided by C^2, and
    its two minimisers: G1 (positive semidefinite, rank <= q, trace C) and G2 (unit diagonal, off-diagonal
    entries on the lattice ``{1 - 2k / q : k = d, ..., q}``)."""
    C, b = S.shape[0], 1.0 - a
    upper = np.triu_indices(C, 1)
    T = S - B / (2.0 * a)
    nearest, G1 = _nearest_unit_trace_gram(T, min(q, C))
    f, g = _lattice_min(S[upper], B[upper] / b, L[upper] / b, (1.0 - 2.0 * d / q, -1.0), 2.0 / q)
    value = (a * (nearest - float(np.sum(T**2)) + float(np.sum(S**2)))
             + b * float(np.sum((np.diag(S) - 1.0) ** 2)) - np.trace(B) - (1.0 - 1.0 / q) * np.trace(L)
             + 2.0 * float(np.sum(b * f + L[upper] / q)))
    G2 = np.eye(C)
    G2[upper] = g
    G2.T[upper] = g
    return float(value), G1, G2


def _rank_cap_ascent(S: np.ndarray, q: int, d: int, iterations: int,
                     weight: float) -> tuple[float, tuple[np.ndarray, np.ndarray]]:
    """:func:`rank_cap_bound`'s ascent: the best dual value (not divided by C^2, less C times any negative
    eigenvalue rounding left in its L) and that iterate's two minimisers (G1, G2) of :func:`_rank_cap_dual`,
    the primal hints ``benchmarks/dual_start.py`` starts shc-ls from."""
    C = S.shape[0]
    a = float(weight)
    off = S[np.triu_indices(C, 1)]
    diagonal = float(np.sum((np.diag(S) - 1.0) ** 2))
    target = 2.0 * float(np.sum(off**2)) + C * (C - 1) / q + diagonal  # E ||S - H H^T / q||^2, H uniform random
    B, L = np.zeros((C, C)), np.full((C, C), (1.0 - a) * _cap_bound(S, q, d, 60)[1])
    best, best_L, hints, theta, stall = -np.inf, L, None, 1.0, 0
    for t in range(int(iterations) + 1):
        value, G1, G2 = _rank_cap_dual(S, q, d, a, B, L)
        if value > best:
            best, best_L, hints, stall = value, L, (G1, G2), 0
        else:
            stall += 1
            if stall >= 20:
                theta, stall = theta / 2.0, 0
        if t == int(iterations):
            break
        grad_B, grad_L = G1 - G2, 1.0 / q - G2 * G2
        # the weight's supergradient, ||S - G1*||^2 - ||S - G2*||^2, in units of a C (the scale of B's)
        grad_a = (float(np.sum((S - G1) ** 2)) - float(np.sum((S - G2) ** 2))) / C
        norm = float(np.sum(grad_B**2) + np.sum(grad_L**2)) + grad_a**2
        if norm == 0:
            break
        size = theta * max(target - value, 1e-3 * abs(target)) / norm
        B, L = B + size * grad_B, _psd_part(L + size * grad_L)
        a = float(np.clip(a + size * grad_a / C, WEIGHT_RANGE[0], WEIGHT_RANGE[1]))
    return best - C * max(0.0, -float(np.linalg.eigvalsh(best_L)[0])), hints


def rank_cap_bound(similarity: Any, num_bits: int, min_distance: int | None = None, iterations: int = 400,
                   weight: float = 0.95) -> float:
    """A lower bound on the per-entry S_loss of any centers *that keep the minimum distance* d (default the
    GV distance, Eq. 13) that knows at once what :func:`unit_diagonal_bound` knows (G = H H^T / q is
    positive semidefinite of rank <= q and trace C) and what :func:`psd_cap_bound` knows (every off-diagonal
    entry on the lattice ``{1 - 2k / q : k = d, ..., q}``, and ``G o G - J / q`` positive semidefinite).
    The other bounds each see one side; where both bind (C well above q, similar classes above the distance
    cap) this one is above both.

    It is a Lagrangian decomposition. Split the loss with ``weight`` a in (0, 1) and give each part its own
    copy of G, coupled by a symmetric multiplier B; keep the multiplier L >= 0 of ``G o G - J / q >= 0``. For
    every symmetric B and positive semidefinite L,

        ||S - G||_F^2 >= min_{G1 in R} [a ||S - G1||^2 + <B, G1>]
                         + min_{G2 in Lambda} [(1 - a) ||S - G2||^2 - <B, G2> - <L, G2 o G2 - J / q>],

    R the positive semidefinite (C, C) matrices of rank <= q and trace C, Lambda the matrices with unit diagonal
    and off-diagonal entries on the lattice; G = H H^T / q lies in both. Both minima are exact:
    the first is ``a (||G1 - T||^2 - ||T||^2 + ||S||^2)`` with ``T = S - B / (2 a)``, least at the
    Hoffman-Wielandt point (the q largest eigenvalues of T projected onto the simplex of sum C); the second
    goes entry by entry over the lattice (four candidates each, as in :func:`distance_cap_bound`). The sum is
    concave in (a, B, L) (a minimum of functions affine in them); it is raised by projected supergradient
    ascent (supergradients ``G1* - G2*``, ``J / q - G2* o G2*`` and ``||S - G1*||^2 - ||S - G2*||^2``, the
    last in units of C and a kept in ``WEIGHT_RANGE``), with Polyak steps
    ``theta (target - value) / ||supergradient||^2`` towards the expected S_loss of random centers (a step
    size only, not an assumption of the bound), theta halved after 20 steps without a new best. It starts
    from ``a = weight``, ``B = 0``, ``L = (1 - a) lam J``, lam the distance-cap bound's multiplier, where it
    equals ``a * unit_diagonal_bound + (1 - a) * distance_cap_bound`` (the value
    ``iterations = 0`` returns). The best iterate is returned, less ``C`` times any negative eigenvalue that
    rounding leaves in its L.

    Measured (docs/centers.md): stage-1-like S, C = 100 at 32 bits: 0.18 of MDS's S_loss, where the other
    bounds give at most 0.10; C = 1000 at 32 bits: 0.719, against 0.710 for the PSD-cap bound. Cost: one
    eigendecomposition of (C, C) with vectors and one projection of L per step (about 0.25 s a step at
    C = 1000 on 2 cores); refused above ``PSD_BOUND_MAX_CLASSES`` classes. Returned divided by C^2."""
    S, q, d = _lattice_inputs(similarity, num_bits, min_distance)
    C = S.shape[0]
    if C > PSD_BOUND_MAX_CLASSES:
        raise ValueError(f"rank_cap_bound works on dense (C, C) matrices and is limited to "
                         f"{PSD_BOUND_MAX_CLASSES} classes, got {C}; use distance_cap_bound for larger C.")
    if int(iterations) < 0 or not 0.0 < weight < 1.0:
        raise ValueError(f"need iterations >= 0 and 0 < weight < 1, got {iterations} and {weight}.")
    best, _ = _rank_cap_ascent(S, q, d, int(iterations), float(weight))
    return float(best / C**2)


SPHERE_PENALTIES = (10.0, 100.0, 1000.0, 10000.0)  # spherical_relaxation: the cap penalty, one stage each


def spherical_relaxation(similarity: Any, num_bits: int, min_distance: int | None = None, init: Any | None = None,
                         steps: int = 1000, learning_rate: float = 0.01,
                         margin: float = 0.005) -> tuple[float, np.ndarray]:
    """The continuous relaxation of stage 2 at distance d, solved locally: how much of the gap between the
    lower bounds and the best centers is the +-1 structure itself.

    Every set of +-1 centers at pairwise distance >= d gives unit vectors ``u_i = h_i / sqrt(q)`` in R^q with
    ``u_i . u_j <= 1 - 2d / q`` (Eq. 22) and ``G = U U^T`` (Eq. 14). The relaxation keeps exactly that and
    drops the signs:

        min ||S - U U^T||_F^2   over U in R^(C x q) with unit rows and u_i . u_j <= 1 - 2d / q (i != j),

    so its optimum lies between :func:`rank_cap_bound` (which bounds it from below too: rank <= q, trace C and
    the cap are all it uses of G besides the lattice) and the S_loss of any centers. It is not convex; this
    function finds a local optimum by Adam on the rows' directions (``U = X / |X|`` row by row, exact
    gradient ``2 E U`` with ``E = -2 (S - G) + 2 beta (G - cap')_+`` off the diagonal), ``steps`` steps for
    each cap penalty beta in ``SPHERE_PENALTIES`` at the cap lowered by ``margin``, the step decaying to a tenth
    within each stage. Every ``steps // 10`` steps and at the end of each stage it checks the iterate against
    the true cap and keeps the best one that meets it, so the returned value is the loss of a feasible point: an *upper* estimate of the
    relaxation's optimum, never a lower bound on S_loss. Starts from ``init`` ((C, q), e.g. centers; then
    the result is never worse than it) or the rank-q spectral embedding of S (deterministic; a row that the
    top q eigenvectors leave at 0 gets a seeded random direction).

    Returns ``(s_loss, U)``: the loss divided by C^2 and the (C, q) unit rows that reach it. Measured
    (docs/centers.md): at C = 1000, 32 bits on stage-1-like S it ends at 0.725 of MDS's S_loss
    from the spectral start, from random rows and from shc-ls's centers alike, and with twice the steps, just
    above rank_cap_bound's 0.7215: the relaxation is solved there, and shc-ls's 0.795 is 1.097x it.
    Cost: two (C, C, q) products a step (about 26 s at C = 1000, 32 bits on 2 cores)."""
    S, q, d = _lattice_inputs(similarity, num_bits, min_distance)
    C = S.shape[0]
    if int(steps) < 1 or learning_rate <= 0 or margin < 0:
        raise ValueError(f"need steps >= 1, learning_rate > 0 and margin >= 0, got {steps}, {learning_rate}, "
                         f"{margin}.")
    if init is None:
        values, vectors = np.linalg.eigh(S)
        X = vectors[:, ::-1][:, :q] * np.sqrt(np.maximum(values[::-1][:q], 1e-9))
        X = np.hstack([X, np.zeros((C, q - X.shape[1]))])  # q > C: the spare dimensions start at 0
        lost = np.linalg.norm(X, axis=1) < 1e-9  # a class outside the top eigenvectors (S = I, say)
        X[lost] = np.random.default_rng(0).standard_normal((int(lost.sum()), q))
    else:
        X = np.array(init, dtype=float)
        if X.shape != (C, q) or not np.all(np.isfinite(X)):
            raise ValueError(f"init must be a finite ({C}, {q}) array (one row a class), got shape {X.shape}.")
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("every row of the start must be nonzero (a direction in R^q); perturb init.")
    X = X / norms
    cap = 1.0 - 2.0 * d / q
    off = ~np.eye(C, dtype=bool)

    def loss(U: np.ndarray) -> tuple[float, float]:
        G = U @ U.T
        return float(np.sum((S - G) ** 2)), float(np.max(G[off], initial=-1.0))

    best, best_U = np.inf, X
    first, top = loss(X)
    if top <= cap + 1e-12:
        best = first
    check = max(1, int(steps) // 10)
    for beta in SPHERE_PENALTIES:
        m, v = np.zeros_like(X), np.zeros_like(X)
        for t in range(1, int(steps) + 1):
            norms = np.linalg.norm(X, axis=1, keepdims=True)
            U = X / norms
            G = U @ U.T
            E = -2.0 * (S - G) + 2.0 * beta * np.where(off, np.maximum(G - (cap - margin), 0.0), 0.0)
            grad_U = 2.0 * E @ U
            grad = (grad_U - U * np.sum(U * grad_U, axis=1, keepdims=True)) / norms
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad**2
            rate = learning_rate * (0.1 + 0.9 * (1 - t / int(steps)))  # decays to a tenth within a stage
            X = X - rate * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-12)
            if t % check == 0 or t == int(steps):
                U = X / np.linalg.norm(X, axis=1, keepdims=True)
                value, top = loss(U)
                if top <= cap + 1e-12 and value < best:
                    best, best_U = value, U
    if not np.isfinite(best):
        raise RuntimeError(f"no iterate met the cap {cap:.4f} (raise margin or steps).")
    return float(best / C**2), best_U
