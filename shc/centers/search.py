"""Stage 2, beyond Algorithm 1: exact local search for semantic hash centers (center method ``"shc-ls"``).

Problem (the semantic part of the paper's Eq. 22 with its distance constraint; Eq. 14, Eq. 17):

    minimise  L(H) = ||S - H H^T / q||_F^2    over H in {-1, +1}^{C x q}
    subject to D(h_i, h_j) = (q - h_i . h_j) / 2 >= d   for all i != j.

Exact single-bit-flip moves. Flipping bit k of h_i (old value s = h_ik) changes h_i . h_j by
``-2 s h_jk`` for every j != i, so R = S - H H^T / q changes by ``2 s h_jk / q`` in row and column i and

    Delta L_ik = (8 / q) h_ik A_ik + 8 (C - 1) / q^2,   A_ik = sum_{j != i} R_ij h_jk.

R is kept implicitly: with ``P = S H`` (C x q) and ``Q = H^T H`` (q x q),
``A_i = P_i - h_i Q / q - (S_ii - 1) h_i``, so one move costs O(q) to evaluate, all q moves of a center
O(q^2), and a flip O(C) to apply (column k of P, row and column k of Q, row and column i of the distance
matrix D). Feasibility: the flip changes D_ij by ``+s h_jk``, i.e. it lowers D_ij exactly for the j whose
bit k differs from h_ik; it is allowed iff no such j sits at D_ij == d. ``V_ik`` counts those j and is
kept up to date from the pairs that enter or leave distance d; a move is feasible iff ``V_ik == 0``.
The search never visits an infeasible H.

The moves, the flips and the annealing are compiled kernels of :mod:`shc.centers._kernels`.
:func:`local_search_centers` runs, from several starts (the MDS centers, Algorithm 1's result, a
rounded spectral embedding of S repaired to distance d; on request the rounded point of the continuous
relaxation, :func:`shc.centers.spherical_relaxation`): best-improvement descent per center, simulated
annealing over feasible single flips (random moves, Metropolis acceptance, geometric cooling), and a
final descent; the best H over all starts is finished by a descent over single and double flips
(:func:`shc.centers._kernels._descend` with ``pairs``) and returned.

Double flips. Flipping bits k and m of h_i together changes L by ``Delta L_ik + Delta L_im +
(16 / q^2) (h_ik h_im Q_km - 1)`` (flipping k moves A_im by ``2 h_ik (Q_km - h_ik h_im) / q``). It moves
D_ij by -2 only for the j that differ from h_i in both bits, so it is feasible iff no such j sits at
distance d or d + 1: a pair at distance d whose every single flip is blocked can still move, one bit
towards and one away. Everything is seeded (numba's generator), so the
same inputs and seed give the same centers. :func:`steepest_descent` is the plain numpy reference, and
:func:`distance_tradeoff` the price of separation (at the distances of :func:`distance_grid`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shc.centers._kernels import _anneal, _descend, _pack, _packed_min, _repair, _uphill_scale
from shc.centers.distance import _check_sizes, _resolve_min_distance
from shc.centers.mds import mds_centers
from shc.centers.quality import center_quality, packed_min_distance, relaxation_bound, spherical_relaxation
from shc.centers.semantic import CenterOptimisation, optimize_semantic_centers
from shc.similarity import validate_similarity
from shc.validation import hamming_distance_matrix, sign_pm1, whole_number

__all__ = ["LS_DEFAULTS", "distance_grid", "distance_tradeoff", "local_search_centers", "steepest_descent"]

#: The starts :func:`local_search_centers` knows; each draws its annealing seed from its place here.
START_NAMES = ("mds", "shc", "spectral", "relax")

#: Defaults of :func:`local_search_centers`.
LS_DEFAULTS: dict[str, Any] = {
    "starts": ("mds", "shc", "spectral"),
    "anneal_sweeps": None,  # None: about 2e8 / (C q^2) sweeps of C q proposals, clipped to [10, 300]
    "t_start": 0.3,  # initial / final temperature, in units of the median uphill move at the local optimum
    "t_end": 0.01,
    "shc_cycles": 5,  # Algorithm 1 cycles for the "shc" start (it is only a start)
    "max_shc_classes": 2000,  # above this C the Algorithm 1 start is skipped (its loop is Python per center)
    "pair_moves": True,  # finish the best start with a descent over single and double flips
    "relax_steps": 100,  # the "relax" start (not a default start): spherical_relaxation's steps per penalty
    "max_relax_classes": 3000,  # above this C the "relax" start is skipped (dense (C, C) products a step)
}


# --------------------------------------------------------------------------------------------
# State: P = S H, Q = H^T H, D (distances), V (blocked moves), L (objective)
# --------------------------------------------------------------------------------------------
def _build_state(H: np.ndarray, S: np.ndarray, d: int, block: int = 2048):
    """The search state of a feasible H (int8, modified in place by the search): the packed bits,
    ``PT = (S H)^T`` (q x C, so that a flip updates one contiguous row), ``Q = H^T H``, ``V`` and L."""
    C, q = H.shape
    Hf = H.astype(np.float32)
    PT = np.ascontiguousarray((S @ H.astype(S.dtype)).T, dtype=np.float64)
    Q = (H.T.astype(np.int64) @ H.astype(np.int64)).astype(np.float64)
    V = np.empty((C, q), dtype=np.int32)
    for a in range(0, C, block):  # V_ik = #{j at distance d with h_jk != h_ik} = (n_i - h_ik (T H)_ik) / 2
        tight = (np.rint((q - Hf[a:a + block] @ Hf.T) / 2) == d).astype(np.float32)
        tight[np.arange(tight.shape[0]), np.arange(a, a + tight.shape[0])] = 0.0
        V[a:a + block] = np.rint((tight.sum(axis=1)[:, None] - H[a:a + block] * (tight @ Hf)) / 2)
    return _pack(H), PT, Q, V, _objective(H, S)


def _objective(H: np.ndarray, S: np.ndarray, block: int = 2048) -> float:
    """L(H) = ||S - H H^T / q||_F^2, in row blocks."""
    q = H.shape[1]
    Hf = H.astype(np.float32 if S.dtype == np.float32 else np.float64)
    return float(sum(np.sum((S[a:a + block] - Hf[a:a + block] @ Hf.T / q).astype(np.float64) ** 2)
                     for a in range(0, H.shape[0], block)))


def _search_from(H0, S, d, seed, sweeps, t_start, t_end, history, start_name):
    """Descent, annealing, descent from one feasible start; appends to ``history``; returns (H, L)."""
    C, q = H0.shape
    H = np.array(H0, dtype=np.int8, order="C")
    packed, PT, Q, V, L = _build_state(H, S, d)
    rng = np.random.default_rng(seed)
    _record(history, start_name, "start", L, C, packed)
    L, _ = _descend(H, packed, S, PT, Q, V, d, L, rng.permutation(C))
    _record(history, start_name, "descent", L, C, packed)
    if sweeps > 0:
        unit = _uphill_scale(H, S, PT, Q, V)
        blocks = int(np.clip(sweeps, 4, 50 if C <= 2000 else 10))
        best_H, _, trace, d_trace = _anneal(H, packed, S, PT, Q, V, d, L, t_start * unit, t_end * unit,
                                                 int(sweeps) * C * q, blocks, int(rng.integers(2**31 - 1)))
        for value, d_min in zip(trace, d_trace):
            _record(history, start_name, "anneal", float(value), C, None, d_min)
        H = best_H
        packed, PT, Q, V, L = _build_state(H, S, d)  # fresh state: no accumulated round-off
        L, _ = _descend(H, packed, S, PT, Q, V, d, L, rng.permutation(C))
        _record(history, start_name, "final descent", L, C, packed)
    return H, L


def _pair_descent(H0, S, d, seed, history, start_name):
    """Descent over single and double flips (:func:`shc.centers._kernels._descend` with ``pairs``) from ``H0``."""
    H = np.array(H0, dtype=np.int8, order="C")
    packed, PT, Q, V, L = _build_state(H, S, d)
    order = np.random.default_rng(seed + 104729).permutation(H.shape[0])
    L, _ = _descend(H, packed, S, PT, Q, V, d, L, order, True)
    _record(history, start_name, "pair descent", L, H.shape[0], packed)
    return H, L


def _record(history, start, stage, L, C, packed, d_min=None):
    d_min = int(_packed_min(packed)) if packed is not None else int(d_min)
    history.append({"cycle": len(history), "start": start, "stage": stage, "objective": float(L),
                    "s_loss": float(L) / C**2, "d_min": d_min})


# --------------------------------------------------------------------------------------------
# Starts
# --------------------------------------------------------------------------------------------
def _top_eigenpairs(S: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest eigenpairs of symmetric S (exact up to C = 3000, else randomized subspace iteration)."""
    C = S.shape[0]
    if C <= 3000:
        values, vectors = np.linalg.eigh(S.astype(np.float64))
        return values[::-1][:k], vectors[:, ::-1][:, :k]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((C, k + 16)).astype(S.dtype)
    for _ in range(4):
        X, _ = np.linalg.qr(S @ X)
    small = X.T @ (S @ X)
    values, rotation = np.linalg.eigh((small + small.T) / 2)
    order = np.argsort(values)[::-1][:k]
    return values[order], X @ rotation[:, order]


def _spectral_start(S: np.ndarray, q: int, d: int, seed: int) -> np.ndarray | None:
    """Signs of the rank-q embedding of S (rotated by a few ITQ steps), repaired to distance d; None if
    the repair fails."""
    values, vectors = _top_eigenpairs(S, q, seed)
    X = np.zeros((S.shape[0], q))
    X[:, :values.size] = vectors * np.sqrt(np.maximum(values, 0.0))  # C < q: fewer than q eigenpairs exist
    return _embedding_signs(X, d, seed)


def _relaxation_start(S: np.ndarray, q: int, d: int, seed: int, steps: int) -> np.ndarray | None:
    """The ``"relax"`` start: signs of :func:`shc.centers.spherical_relaxation`'s point (``steps`` per
    penalty), ITQ-rotated and repaired to distance d (:func:`_embedding_signs`); None if that fails."""
    try:
        _, U = spherical_relaxation(S, q, min_distance=d, steps=steps)
    except RuntimeError:  # no iterate met the cap
        return None
    return _embedding_signs(U, d, seed)


def _embedding_signs(X: np.ndarray, d: int, seed: int, itq_steps: int = 10) -> np.ndarray | None:
    """Signs of the (C, q) embedding X after ``itq_steps`` ITQ steps (the rotation that best matches X to its
    signs, from a seeded random one), repaired to distance d by the greedy shortfall descent; None if the
    repair fails. ``benchmarks/dual_start.py`` uses it too."""
    q = X.shape[1]
    rng = np.random.default_rng(seed)
    rotation = np.linalg.qr(rng.standard_normal((q, q)))[0]
    for _ in range(itq_steps):
        B = sign_pm1(X @ rotation, np.float64)
        u, _, vt = np.linalg.svd(X.T @ B)
        rotation = u @ vt
    H = sign_pm1(X @ rotation)
    D = hamming_distance_matrix(H, dtype=np.int32)
    ok = _repair(H, D, d, int(rng.integers(2**31 - 1)), 20 * H.shape[0])
    return H if ok else None


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------
def local_search_centers(similarity: Any, num_bits: int, min_distance: int | None = None, seed: int = 0,
                         init: Any | None = None, starts: tuple[str, ...] = LS_DEFAULTS["starts"],
                         anneal_sweeps: int | None = LS_DEFAULTS["anneal_sweeps"],
                         t_start: float = LS_DEFAULTS["t_start"], t_end: float = LS_DEFAULTS["t_end"],
                         shc_cycles: int = LS_DEFAULTS["shc_cycles"],
                         max_shc_classes: int = LS_DEFAULTS["max_shc_classes"],
                         pair_moves: bool = LS_DEFAULTS["pair_moves"],
                         relax_steps: int = LS_DEFAULTS["relax_steps"],
                         max_relax_classes: int = LS_DEFAULTS["max_relax_classes"]) -> CenterOptimisation:
    """Semantic hash centers by exact feasible local search (center method ``"shc-ls"``).

    Minimises ``||S - H H^T / q||_F^2`` (Eq. 14) subject to ``D(h_i, h_j) >= d`` (Eq. 22; ``d`` the
    Gilbert-Varshamov distance of Eq. 13 unless ``min_distance`` is given) by descent and simulated
    annealing over single-bit flips with exact objective changes (module docstring), from each of
    ``starts`` (``"mds"``: :func:`shc.centers.mds_centers`, or ``init`` when given; ``"shc"``: Algorithm
    1 run for ``shc_cycles`` cycles from the MDS centers, skipped above ``max_shc_classes`` classes;
    ``"spectral"``: signs of the rank-q embedding of S repaired to distance d, skipped if the repair
    fails; ``"relax"``, not a default: the point of :func:`shc.centers.spherical_relaxation` after
    ``relax_steps`` steps per penalty, rotated and repaired the same way, skipped above
    ``max_relax_classes`` classes). Every visited H has ``d_min >= d``; the best over all starts is returned.
    The default starts compete before ``pair_moves``' closing descent; ``"relax"`` gets its own and then
    competes, so adding it never returns worse centers than the default starts alone. On the stage-1-like
    family it lowers S_loss in 12 of 18 cases, by up to 3.6 % (C = 1000, 32 bits: 0.795 -> 0.789 of MDS;
    docs/centers.md) for a few seconds; it is not a default, so centers of the default search, and the grids
    trained on them, stay as they are.

    ``anneal_sweeps`` sets the annealing length in units of C q proposals (0: descent only; None: about
    2e8 / (C q^2), clipped to [10, 300], under a second per start at C = 555, q = 64). ``t_start`` and
    ``t_end`` are the temperatures in units of the median uphill move at the first local optimum.

    ``pair_moves`` (default True) finishes the best start with a descent over single and double flips of
    one center (module docstring), which keeps pairs at distance d movable.

    Returns a :class:`shc.centers.CenterOptimisation`; its history has one record per stage and
    annealing block (``cycle``, ``start``, ``stage``, ``objective`` = L, ``s_loss`` = L / C^2, ``d_min``)
    and ``best_cycle`` points at the returned centers' record: the ``"pair descent"`` of the winning
    start (the last record unless a losing ``"relax"`` start ran after it), or its ``"final descent"`` without
    ``pair_moves``.
    """
    S = validate_similarity(similarity)
    C, q = _check_sizes(S.shape[0], num_bits)
    d = _resolve_min_distance(C, q, min_distance)
    unknown = sorted(set(starts) - set(START_NAMES))
    if unknown or not starts or len(set(starts)) < len(starts):
        raise ValueError(f"starts must be a non-empty subset of {START_NAMES} without repeats, got {starts!r}.")
    if not 0 < t_end <= t_start:
        raise ValueError(f"temperatures must satisfy 0 < t_end <= t_start, got t_start={t_start}, t_end={t_end}.")
    if C > 3000:
        S = S.astype(np.float32)  # halves the largest array; the objective is accumulated in float64
    sweeps = (int(np.clip(2e8 / (C * q * q), 10, 300)) if anneal_sweeps is None
              else whole_number(anneal_sweeps, "anneal_sweeps"))
    if init is not None:
        mds = np.asarray(init).astype(np.int8)
        if mds.shape != (C, q) or not np.all(np.abs(mds) == 1):
            raise ValueError(f"init must be a ({C}, {q}) array of +-1, got shape {mds.shape}.")
    else:
        mds = mds_centers(C, q, min_distance=d, seed=seed)
    if packed_min_distance(mds) < d:
        raise ValueError(f"the start centers must have d_min >= {d}; pass feasible init or lower min_distance.")
    candidates = {"mds": lambda: mds,
                  "shc": lambda: optimize_semantic_centers(S, q, min_distance=d, init=mds, seed=seed,
                                                           cycles=shc_cycles).centers if C <= max_shc_classes else None,
                  "spectral": lambda: _spectral_start(S, q, d, seed),
                  "relax": lambda: _relaxation_start(S, q, d, seed, relax_steps) if C <= max_relax_classes else None}
    history: list[dict[str, Any]] = []
    # the default starts compete before the closing descent; the opt-in "relax" start is finished on its own
    # and then competes, so adding it never returns worse centers than the default starts alone
    finished: list[tuple[np.ndarray, float, int]] = []
    for group in ([name for name in starts if name != "relax"], [name for name in starts if name == "relax"]):
        best_H, best_L, best_cycle = None, np.inf, 0
        for name in group:
            start = candidates[name]()
            if start is None:
                continue
            H, L = _search_from(start, S, d, seed + 7919 * START_NAMES.index(name), sweeps, t_start, t_end, history,
                                name)
            if L < best_L - 1e-9:
                best_H, best_L, best_cycle = H.copy(), L, len(history) - 1
        if best_H is None:
            continue
        if pair_moves:
            best_H, best_L = _pair_descent(best_H, S, d, seed, history, history[best_cycle]["start"])
            best_cycle = len(history) - 1
        finished.append((best_H, best_L, best_cycle))
    if not finished:
        raise RuntimeError(f"none of the starts {tuple(starts)} gave feasible centers at d = {d}; add 'mds' to starts.")
    best_H, best_L, best_cycle = finished[0]
    for H, L, cycle in finished[1:]:
        if L < best_L - 1e-9:
            best_H, best_L, best_cycle = H, L, cycle
    params = {"starts": tuple(starts), "anneal_sweeps": sweeps, "t_start": t_start, "t_end": t_end,
              "shc_cycles": shc_cycles, "max_shc_classes": max_shc_classes, "pair_moves": pair_moves,
              "relax_steps": relax_steps, "max_relax_classes": max_relax_classes}
    return CenterOptimisation(best_H.astype(np.int8), history, best_cycle, d, params)


def steepest_descent(similarity: Any, init: Any, min_distance: int) -> np.ndarray:
    """Plain feasible steepest descent (the ``ls-plain`` reference): from ``init``, flip the single bit
    of lowest exact Delta L among all (i, k) that keep every distance >= d, until none improves.

    Plain numpy with R = S - H H^T / q and A = R_offdiag H kept explicitly (O(C q) per flip); independent
    of the compiled kernels, so the tests use it as their reference.
    """
    S = validate_similarity(similarity)
    H = np.array(init, dtype=np.float64)
    C, q = H.shape
    R = S - H @ H.T / q
    np.fill_diagonal(R, 0.0)
    A = R @ H
    D = np.rint((q - H @ H.T) / 2)
    np.fill_diagonal(D, q + 1)
    def first_feasible(candidates):  # the best move whose flip keeps every D_ij >= d
        for batch in range(0, candidates.size, 64):
            rows, bits = np.divmod(candidates[batch:batch + 64], q)
            # blocked: some j at distance d whose bit k differs from h_ik (the flip would lower D_ij)
            blocked = ((D[rows] == min_distance) & (H[:, bits].T != H[rows, bits][:, None])).any(axis=1)
            if not blocked.all():
                first = int(np.argmin(blocked))
                return rows[first], bits[first]
        return None

    while True:
        delta = (8.0 / q * H * A + 8.0 * (C - 1) / q**2).ravel()
        improving = np.flatnonzero(delta < -1e-9)
        few = improving[np.argpartition(delta[improving], 63)[:64]] if improving.size > 64 else improving
        move = first_feasible(few[np.argsort(delta[few], kind="stable")])
        if move is None and improving.size > 64:
            rest = np.setdiff1d(improving, few)
            move = first_feasible(rest[np.argsort(delta[rest], kind="stable")])
        if move is None:
            return H.astype(np.int8)
        i, k = move
        s = H[i, k]
        change = 2.0 * s * H[:, k] / q  # change of R_ij, j != i
        change[i] = 0.0
        A += np.outer(change, H[i])  # rows j != i: the R_ji term with the old h_i ...
        R[:, i] += change
        R[i, :] += change
        A[:, k] -= 2.0 * s * R[:, i]  # ... and bit k of h_i itself
        A[i] += change @ H
        D[i, :] += s * H[:, k]
        D[:, i] += s * H[:, k]
        D[i, i] = q + 1
        H[i, k] = -s


def distance_grid(largest: int, points: int = 6) -> list[int]:
    """Required distances for :func:`distance_tradeoff`: ``points`` evenly spaced from 0 to ``largest`` (the GV
    distance, say), rounded to whole bits, without repeats, ascending: ``distance_grid(7) == [0, 1, 3, 4, 6, 7]``."""
    for name, value, least in (("largest", largest, 0), ("points", points, 2)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise ValueError(f"{name} must be an integer of at least {least}, got {value!r}.")
    return sorted({int(d) for d in np.linspace(0, largest, points).round()})


def distance_tradeoff(similarity: Any, num_bits: int, distances: Any, seed: int = 0, **options: Any) -> list[dict]:
    """The price of separation: shc-ls centers for each required distance d in ``distances``.

    One row per d: ``d``, the reached ``d_min``, ``s_loss`` (per entry) and ``spearman`` of
    :func:`shc.centers.quality.center_quality`, and the relaxation ``bound`` (the same for every d). S_loss can
    only rise with d up to search noise; ``options`` go to :func:`local_search_centers`.
    """
    S = validate_similarity(similarity)
    bound = relaxation_bound(S, num_bits)
    rows = []
    for d in distances:
        H = local_search_centers(S, num_bits, min_distance=int(d), seed=seed, **options).centers
        quality = center_quality(H, S)
        rows.append({"d": int(d), "d_min": quality["d_min"], "s_loss": quality["s_loss"],
                     "spearman": quality["spearman"], "bound": bound})
    return rows
