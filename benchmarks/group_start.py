"""Does shc-ls's worst stage-1-like case improve from a start that knows the class groups? (issue 25, item 5)

The case is ``stage1_like_similarity(1000, seed=1032)`` at 32 bits (GV distance 8), where shc-ls ends at
0.79 of MDS's S_loss against the issue's 0.75. The start is an oracle the real search never has: the
simulated classifier's true groups. Each group gets a random center; each class is its group's center with
``r`` random bits flipped (two classes of a group then sit about ``2 r (1 - r/q)`` apart); pairs closer than d
are repaired by a greedy descent that flips, for one center of a violating pair, the bit leaving the fewest
violations. shc-ls then runs from that start alone (``init=``, ``starts=("mds",)``).

Then a second move the search lacks: a *group bit flip*, bit k of every center of a set T at once. Distances
inside T do not change, so the pairs at distance d inside a group, which block most single and double flips,
do not block it. The script prints, at shc-ls's own result, how many group flips exist (T = each true group of
two or more classes, and each cluster of average-linkage clusterings of ``1 - S`` cut at 20, 50, 100, 200 and
400 clusters), how many the distance blocks, and the best exact change of L among them, blocked or not.
Last, the group flips that are never blocked: per bit k, the pairs at distance d that differ in bit k form a
graph, and flipping bit k of a whole connected component keeps every distance >= d (inside, the pairs still
differ in k; a pair from it to outside at distance d agrees in k, or it would be in the component). Single
flips are its one-center components; the script prints the components of two or more centers, the largest,
and the best exact change of L among their flips.
And one chain move (an ejection chain of depth 2): for every single flip (i, k) that the distance blocks,
flip bit k of i and, for each center j that blocks it (at distance d, differing in bit k), the bit m of j
that agrees with i, is not blocked for j, and changes L least on its own; such a j returns to distance d
from i. The script prints how many chains it formed, how many keep d_min >= d, and the best exact change of
L among those (about 30 s).
Last of the moves, a tabu search over single flips (the issue's remaining candidate): each step takes the
best move not made in the last 100-300 steps, uphill if need be. Feasible moves only from shc-ls's result;
then any move, with the shortfall below d charged at a weight that rises while the search stays below d and
falls while it stays above (strategic oscillation), from shc-ls's result and from the MDS centers. The
script prints each one's best feasible S_loss against its start (about two minutes for the three).

Run: ``python benchmarks/group_start.py`` (about five minutes on 2 cores); results: docs/centers.md.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from bench_centers import stage1_like_similarity
from scipy.cluster.hierarchy import fcluster, linkage
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial.distance import squareform

from shc.centers import center_quality, generate_centers, gv_min_distance, local_search_centers
from shc.centers._kernels import _flip, _move_delta
from shc.centers.search import _build_state
from shc.validation import hamming_distance_matrix

C, Q = 1000, 32


def repair(H: np.ndarray, d: int, rng: np.random.Generator, max_flips: int = 20_000) -> np.ndarray:
    """Flip bits until every pair of rows is at Hamming distance >= d (greedy, ties broken at random;
    raises if it cannot)."""
    H = H.copy()
    q = H.shape[1]
    for _ in range(max_flips):
        D = (q - H @ H.T) // 2
        np.fill_diagonal(D, q)
        bad = np.argwhere(D < d)
        if len(bad) == 0:
            return H
        i = bad[rng.integers(len(bad))][0]
        trial = np.repeat(H[i][None], q, axis=0)
        trial[np.arange(q), np.arange(q)] *= -1  # row b: center i with bit b flipped
        distances = (q - trial @ H.T) // 2
        distances[:, i] = q
        violations = (distances < d).sum(axis=1) + 0.5 * rng.random(q)  # ties broken at random (no cycles)
        H[i] = trial[int(np.argmin(violations))]
    raise RuntimeError(f"the repair left pairs below distance {d} after {max_flips} flips")


def _residual_and_tight(H: np.ndarray, S: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``R = S - H H^T / q`` (diagonal 0) and the boolean matrix of the pairs at distance exactly d."""
    q = H.shape[1]
    Hi = H.astype(np.int64)
    R = S - Hi @ Hi.T / q
    np.fill_diagonal(R, 0.0)
    at_d = (q - Hi @ Hi.T) // 2 == d
    np.fill_diagonal(at_d, False)
    return R, at_d


def group_flips(H: np.ndarray, S: np.ndarray, d: int, sets: list[np.ndarray]) -> tuple[int, int, float, float]:
    """Over every set T in ``sets`` and bit k: flipping bit k of all of T's centers changes only the pairs
    (i in T, j outside), each by ``G_ij -> G_ij - 2 h_ik h_jk / q``, so the exact change of
    ``L = ||S - G||_F^2`` is ``(8 / q) sum_{i in T, j out} R_ij h_ik h_jk + 8 |T| (C - |T|) / q^2`` with
    ``R = S - G``; it is blocked iff some such pair sits at distance d and differs in bit k. Returns (moves,
    blocked, least change of L over the feasible moves, least change over the blocked ones)."""
    C, q = H.shape
    Hf = H.astype(float)
    R, at_d = _residual_and_tight(H, S, d)
    moves = blocked = 0
    best = {True: np.inf, False: np.inf}  # by "blocked"
    for T in sets:
        if len(T) < 2 or len(T) == C:
            continue
        out = np.setdiff1d(np.arange(C), T)
        change = (8 / q) * np.sum(Hf[T] * (R[np.ix_(T, out)] @ Hf[out]), axis=0) + 8 * len(T) * len(out) / q**2
        P = at_d[np.ix_(T, out)].astype(float)
        differing = (P.sum() - np.sum(Hf[T] * (P @ Hf[out]), axis=0)) / 2  # pairs at d that differ in bit k
        moves, blocked = moves + q, blocked + int(np.sum(differing > 0))
        for is_blocked in (True, False):
            chosen = change[(differing > 0) == is_blocked]
            best[is_blocked] = min(best[is_blocked], float(chosen.min())) if chosen.size else best[is_blocked]
    return moves, blocked, best[False], best[True]


def component_flips(H: np.ndarray, S: np.ndarray, d: int) -> tuple[list[tuple[int, np.ndarray]], float]:
    """The flips of bit k of a connected component (two or more centers) of the graph of pairs at distance d
    that differ in bit k, each always feasible. Returns the (k, members) of every such component and the least
    exact change of ``||S - G||_F^2`` among their flips (the formula of :func:`group_flips`)."""
    C, q = H.shape
    Hf = H.astype(float)
    R, at_d = _residual_and_tight(H, S, d)
    found, best = [], np.inf
    for k in range(q):
        signs = Hf[:, k]
        count, labels = connected_components(csr_matrix(at_d & (signs[:, None] != signs[None, :])), directed=False)
        sizes = np.bincount(labels, minlength=count)
        members = np.zeros((count, C))
        members[labels, np.arange(C)] = 1.0
        weighted = R * np.outer(signs, signs)  # R_ij h_ik h_jk
        across = members @ weighted.sum(axis=1) - np.einsum("ci,ij,cj->c", members, weighted, members)
        change = (8 / q) * across + 8 * sizes * (C - sizes) / q**2
        several = sizes >= 2
        found += [(k, np.flatnonzero(labels == c)) for c in np.flatnonzero(several)]
        best = min(best, float(change[several].min())) if several.any() else best
    return found, best


def _flip_change(H: np.ndarray, S: np.ndarray, flips: list[tuple[int, int]]) -> tuple[float, int]:
    """Exact change of ``||S - G||_F^2`` when the (center, bit) pairs of ``flips`` are flipped together (the
    centers' rows recomputed), and the least distance from a flipped center to any other."""
    C, q = H.shape
    new = H.copy()
    for center, bit in flips:
        new[center, bit] *= -1
    rows = np.unique([center for center, _ in flips])
    before, after = (S[rows] - H[rows] @ H.T / q) ** 2, (S[rows] - new[rows] @ new.T / q) ** 2
    change = after - before
    change[np.arange(rows.size), rows] = 0.0
    inside = np.zeros(C, dtype=bool)
    inside[rows] = True
    distances = (q - new[rows] @ new.T) // 2
    distances[np.arange(rows.size), rows] = q
    # entries to centers outside the flipped rows appear twice in L (i, j and j, i), those among them once per row
    return float(2 * change[:, ~inside].sum() + change[:, inside].sum()), int(distances.min())


def ejection_chains(H: np.ndarray, S: np.ndarray, d: int) -> list[tuple[list[tuple[int, int]], float, int]]:
    """Depth-2 ejection chains from every blocked single flip (see the module docstring): each as (its
    (center, bit) flips, exact change of ``||S - G||_F^2``, least distance from a flipped center to any other)."""
    C, q = H.shape
    H = H.astype(np.int64)
    R, tight = _residual_and_tight(H, S, d)
    at_d = tight.astype(np.int64)
    blocked = (at_d.sum(axis=1)[:, None] - H * (at_d @ H)) // 2  # centers at d that differ in each bit
    single = (8 / q) * H * (R @ H) + 8 * (C - 1) / q**2  # exact change of each single flip
    chains = []
    for i, k in np.argwhere(blocked > 0):
        chain = [(int(i), int(k))]
        for j in np.flatnonzero((at_d[i] == 1) & (H[:, k] != H[i, k])):
            allowed = (H[j] == H[i]) & (blocked[j] == 0)
            if not allowed.any():
                break
            chain.append((int(j), int(np.argmin(np.where(allowed, single[j], np.inf)))))
        else:
            change, nearest = _flip_change(H, S, chain)
            chains.append((chain, change, nearest))
    return chains


@numba.njit(cache=False)  # not cached: it calls shc's kernels, and numba's cache would miss edits there
def shortfall_changes(H, D, d, i, out):
    """``out[k]``: the change of the total shortfall ``sum over pairs of max(0, d - D_ij)`` when bit k of h_i
    flips. The flip moves D_ij by -1 where h_j differs from h_i in bit k (the shortfall grows by 1 if
    D_ij <= d) and by +1 where it agrees (the shortfall shrinks by 1 if D_ij < d); only the j with
    D_ij <= d count."""
    C, q = H.shape
    out[:] = 0.0
    for j in range(C):
        if j == i or D[i, j] > d:
            continue
        for k in range(q):
            if H[j, k] != H[i, k]:
                out[k] += 1.0
            elif D[i, j] < d:
                out[k] -= 1.0


@numba.njit(cache=False)
def _tabu(H, packed, S, PT, Q, V, D, d, L, iterations, tenure_min, tenure_max, penalty, seed):
    np.random.seed(seed)
    C, q = H.shape
    entering = np.empty(C, dtype=np.int64)
    tabu_until = np.zeros((C, q), dtype=np.int64)
    change = np.empty(q)
    best_H, best_L = H.copy(), L
    losses, shortfalls = np.empty(iterations), np.zeros(iterations, dtype=np.int64)
    shortfall, weight, streak, was_below = 0, penalty, 0, False
    for step in range(iterations):
        chosen, chosen_i, chosen_k, chosen_short = np.inf, -1, -1, 0
        for i in range(C):
            shortfall_changes(H, D, d, i, change)
            for k in range(q):
                after = shortfall + int(change[k])
                if penalty <= 0.0 and after > 0:
                    continue  # feasible only
                delta = _move_delta(H, S, PT, Q, i, k)
                aspiration = after == 0 and L + delta < best_L - 1e-9
                if tabu_until[i, k] > step and not aspiration:
                    continue
                value = delta + weight * change[k]
                if value < chosen:
                    chosen, chosen_i, chosen_k, chosen_short = value, i, k, int(change[k])
        if chosen_i < 0:
            return best_H, best_L, losses[:step], shortfalls[:step]
        L += _move_delta(H, S, PT, Q, chosen_i, chosen_k)
        s = H[chosen_i, chosen_k]
        for j in range(C):
            if j != chosen_i:
                moved = 1 if H[j, chosen_k] == s else -1
                D[chosen_i, j] += moved
                D[j, chosen_i] += moved
        _flip(H, packed, S, PT, Q, V, chosen_i, chosen_k, d, entering)
        shortfall += chosen_short
        tabu_until[chosen_i, chosen_k] = step + tenure_min + np.random.randint(tenure_max - tenure_min + 1)
        losses[step], shortfalls[step] = L, shortfall
        if shortfall == 0 and L < best_L - 1e-9:
            best_H[:] = H
            best_L = L
        if penalty > 0.0:  # strategic oscillation: 10 steps on one side of d move the weight 10% the other way
            below = shortfall > 0
            streak = streak + 1 if below == was_below else 1
            was_below = below
            if streak >= 10:
                weight *= 1.1 if below else 0.9
                streak = 0
    return best_H, best_L, losses, shortfalls


def tabu_search(H0: np.ndarray, S: np.ndarray, d: int, iterations: int, tenure: tuple[int, int] = (100, 300),
                penalty: float = 0.0, seed: int = 0) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Tabu search over single flips from a feasible H0: each step takes the best move whose (center, bit) is
    not tabu (unless it gives a new best feasible H), then makes that flip tabu for a random tenure in
    ``tenure`` steps. ``penalty`` 0: only moves that keep d_min >= d; > 0: any move, scored by its exact
    change of L plus a weight (starting at ``penalty``) times its change of the shortfall below d, the weight
    rising 10% after 10 steps below d and falling 10% after 10 steps at or above (strategic oscillation).
    Returns the best feasible H, its L, and L and the shortfall after every step."""
    H = np.array(H0, dtype=np.int8, order="C")
    packed, PT, Q, V, L = _build_state(H, S, d)
    D = hamming_distance_matrix(H, dtype=np.int32)
    np.fill_diagonal(D, H.shape[1])
    return _tabu(H, packed, S, PT, Q, V, D, d, L, iterations, tenure[0], tenure[1], penalty, seed)


def clusters(S: np.ndarray, counts: tuple[int, ...]) -> list[np.ndarray]:
    """The clusters of average-linkage clusterings of ``1 - S``, cut at each number of clusters."""
    distance = np.clip(1.0 - S, 0.0, None)
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), "average")
    labels = [fcluster(tree, count, "maxclust") for count in counts]
    return [np.flatnonzero(label == value) for label in labels for value in np.unique(label)]


def main() -> None:
    S, groups = stage1_like_similarity(C, seed=C + Q, return_groups=True)
    d = gv_min_distance(C, Q)
    mds = generate_centers("mds", C, Q, seed=0)
    mds_loss = center_quality(mds, S)["s_loss"]
    own = generate_centers("shc-ls", C, Q, similarity=S, seed=0)
    plain = center_quality(own, S)["s_loss"]
    across = groups[:, None] != groups[None, :]
    errors = (S - own @ own.T / Q) ** 2
    np.fill_diagonal(errors, 0.0)
    print(f"C={C}, q={Q}, d={d}; {np.unique(groups).size} groups, largest {np.bincount(groups).max()}")
    print(f"shc-ls from its own starts: {plain / mds_loss:.3f} of MDS; ||S - G||^2 = {errors.sum():,.0f}, of it "
          f"{errors[across].sum():,.0f} between groups (where S averages {S[across].mean():.3f}); off-diagonal "
          f"energy of G at least C^2/q - C = {C * C / Q - C:,.0f}")
    for name, sets in (("true groups", [np.flatnonzero(groups == g) for g in np.unique(groups)]),
                       ("clusters of S (20-400)", clusters(S, (20, 50, 100, 200, 400)))):
        moves, blocked, feasible, infeasible = group_flips(own, S, d, sets)
        print(f"group bit flips at shc-ls's result, T = {name}: {moves} moves, {blocked} blocked by distance {d}; "
              f"least change of ||S - G||^2 {feasible:+.2f} among the feasible, {infeasible:+.2f} among the "
              f"blocked", flush=True)
    components, best = component_flips(own, S, d)
    print(f"component flips at shc-ls's result: {len(components)} components of 2 or more centers over {Q} bits, "
          f"the largest {max(len(m) for _, m in components)} centers; least change of ||S - G||^2 {best:+.2f}",
          flush=True)
    chains = ejection_chains(own, S, d)
    kept = [change for _, change, nearest in chains if nearest >= d]
    print(f"ejection chains at shc-ls's result: {len(chains)} formed, {len(kept)} keep d_min >= {d}; least change of "
          f"||S - G||^2 among those {min(kept, default=np.inf):+.2f}", flush=True)
    for label, start, steps, penalty in (("shc-ls's result", own, 20_000, 0.0), ("shc-ls's result", own, 20_000, 0.2),
                                         ("the MDS centers", mds, 40_000, 0.2)):
        started = time.perf_counter()
        best, loss, losses, shortfalls = tabu_search(start, S, d, steps, penalty=penalty)
        start_loss = center_quality(start, S)["s_loss"]
        kind = "feasible moves only" if penalty == 0 else f"penalised below d (weight from {penalty})"
        print(f"tabu search from {label}, {kind}: {len(losses):,} steps, {np.mean(shortfalls > 0):.0%} of them "
              f"below d; best feasible {center_quality(best, S)['s_loss'] / mds_loss:.4f} of MDS (start "
              f"{start_loss / mds_loss:.4f}; ||S - G||^2 changed by {loss - start_loss * C * C:+,.2f}; "
              f"{time.perf_counter() - started:.0f} s)", flush=True)
    rng = np.random.default_rng(0)
    for r in (5, 7, 9):
        started = time.perf_counter()
        centers = np.where(rng.random((groups.max() + 1, Q)) < 0.5, -1, 1)
        H0 = centers[groups].copy()
        for i in range(C):
            H0[i, rng.choice(Q, r, replace=False)] *= -1
        H0 = repair(H0, d, rng)
        start = center_quality(H0, S)["s_loss"] / mds_loss
        result = local_search_centers(S, Q, init=H0, starts=("mds",), seed=0)
        quality = center_quality(result.centers, S)
        print(f"group start, r={r}: start {start:.3f} -> shc-ls {quality['s_loss'] / mds_loss:.3f} of MDS, "
              f"d_min {quality['d_min']} ({time.perf_counter() - started:.1f} s)", flush=True)


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    main()
