"""Stage 2, the paper's semantic hash centers: ``"shc"`` (Eq. 22-38, Algorithm 1, initialised by ``"mds"``)
and ``"semantic"`` (the ablation without the distance term, Sec. 4.6.1, Eq. 46-49, Table 7 "S only")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from shc.centers.distance import _as_sign_matrix, _check_sizes, _offdiag, _resolve_min_distance, hamming_distances
from shc.centers.mds import mds_centers
from shc.similarity import validate_similarity
from shc.validation import finite_number, whole_number

__all__ = ["SEMANTIC_DEFAULTS", "SHC_DEFAULTS", "CenterOptimisation", "optimize_semantic_centers",
           "semantic_only_centers", "shc_objective"]

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

    def kept_min_distance(self) -> bool:
        """Whether every cycle's H (the start included) kept every pair at distance ``min_distance`` or more."""
        return all(record["d_min"] >= self.min_distance for record in self.history)


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

    Returns the indices of the bits of h_i to flip (empty when the step changes nothing), or None when no
    feasible step exists. For ``h_ik = +-1``, ``h_ik (h_ik - g_ik / eta) = 1 - h_ik g_ik / eta``, so the full step
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
        return flips
    q = H.shape[1]
    base = (q - H @ h) / 2
    if not backtrack:
        new_h = h.copy()
        new_h[flips] = -new_h[flips]
        distances = (q - H @ new_h) / 2
        distances[i] = q
        return flips if distances.min() >= min_distance else None
    order = flips[np.argsort(-strength[flips], kind="stable")]
    # Flipping bit k of h_i changes D_ij by +h_ik h_jk; the distances after each prefix of flips:
    distances = base[:, None] + np.cumsum(h[order] * H[:, order], axis=1)
    distances[i] = q
    feasible = np.flatnonzero(distances.min(axis=0) >= min_distance)
    if feasible.size == 0:
        return None
    return order[: feasible[-1] + 1]


def _h_gradient(H: np.ndarray, i: int, M: np.ndarray, MtM: np.ndarray, MS: np.ndarray, Lambda: np.ndarray,
                alpha: np.ndarray, target: np.ndarray, column_sum: np.ndarray, mu: float, rho: float, beta: float,
                distance_scale: float) -> np.ndarray:
    """dL/dh_i of Algorithm 1's h-subproblem (Eq. 34-35), at ``h_i = H[i]``, the other centers fixed.

    The exact derivative of Eq. 34's L (the pair terms summed over ordered pairs, alpha symmetric), which is Eq. 35
    with two typos of its print corrected: the alpha term is ``-2 sum_j alpha_ij h_j`` (no mu) and the beta term
    ``2 sum_j beta (h_j h_j^T h_i - (q - 2d - k_ij) h_j)``. The pair terms (mu, alpha, beta) are multiplied by
    ``distance_scale`` (1e-4 in the authors' release; 1.0: the unscaled derivative). ``MtM = M^T M``, ``MS = S M``,
    ``target = q - 2d - K[i]``, ``column_sum = H.sum(axis=0)``; M is C x q (the paper's M transposed).
    """
    q = H.shape[1]
    h = H[i]
    pair_weights = -2.0 * alpha[i] + 2.0 * beta * (H @ h - target)
    pair_weights[i] = 0.0
    pairwise = 2.0 * mu * (column_sum - h) + pair_weights @ H
    return (2 / q**2) * (MtM @ h) - (2 / q) * MS[i] + Lambda[i] + rho * (h - M[i]) + distance_scale * pairwise


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
       pair (Eq. 38), once per cycle after every h_i moved (Algorithm 1 prints them inside the loop over i;
       for Lambda that is the same, as lambda_i enters only h_i's step and the next M; alpha stays symmetric
       here). Multipliers are floats (the release made alpha an integer tensor, so it never moved, and
       updated one pair per row).

    The pairwise part of dL/dh_i (mu, alpha, beta terms) is multiplied by ``distance_scale`` (1e-4,
    the authors' release); 1.0 gives the exact gradient of Eq. 26, which is Eq. 35 with two typos of its
    print corrected: its alpha term carries no mu (``-2 sum_j alpha_ij h_j``), and its beta term is
    ``2 beta_ij (h_j h_j^T h_i - (q - 2d - k_ij) h_j)``. Initialised by :func:`mds_centers` unless
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
        finite_number(params[name], name, minimum=0, strict=True)
    finite_number(distance_scale, "distance_scale", minimum=0)
    for name in ("mu", "lambda0", "alpha0"):
        finite_number(params[name], name)
    cycles, inner_steps = whole_number(cycles, "cycles"), whole_number(inner_steps, "inner_steps")
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
                gradient = _h_gradient(H, i, M, MtM, MS, Lambda, alpha, target, column_sum, mu, rho, beta,
                                       distance_scale)
                flips = _projected_step(H, i, gradient, eta, d, backtrack)
                if flips is None:
                    rejected += 1
                    break
                if flips.size == 0:  # a fixed point of h_i's step: the next steps would repeat it
                    break
                column_sum[flips] -= 2 * H[i, flips]
                H[i, flips] = -H[i, flips]
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
    (Eq. 49 as printed; a zero keeps the bit: the exact minimiser of Eq. 47's relaxation would be
    ``(S/q + mu I) M (M^T M / q^2 + mu I)^{-1}``, whose signs can differ). Initialised by :func:`mds_centers`;
    returns the H of lowest s_loss met. No minimum distance is enforced, so d_min may drop (that is the point
    of the ablation).

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
