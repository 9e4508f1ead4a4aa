"""Does the rank-cap bound's dual point make a better start for shc-ls? (issue 25, item 5)

The case is stage 2's worst stage-1-like case, ``stage1_like_similarity(1000, seed=1032)`` at 32 bits (GV
distance 8), where shc-ls from its own starts ends at 0.795 of MDS's S_loss against the issue's 0.75.

:func:`shc.centers.rank_cap_bound` raises a Lagrangian dual whose inner minimisers are two matrices that look
like ``G = H H^T / q``: G1 (positive semidefinite, rank q, trace C) and G2 (unit diagonal, entries on the
lattice the distance allows). Neither is a code, but both are shaped by what the other set forbids. The script
runs the ascent for 100 and 400 steps (``--steps``) and, for each of G1 and G2 at the best iterate, takes the rank-q
embedding (top q eigenvectors times the square roots of their eigenvalues), rotates it by 30 ITQ steps from a
seeded random rotation, takes signs, repairs the pairs below d with the same greedy repair as shc-ls's
spectral start, and runs shc-ls from it alone (``init=``, ``starts=("mds",)``): annealing as the default, and
descent only (``anneal_sweeps=0``: single flips, then single and double flips). Four seeds each. It prints
shc-ls from its own starts beside them, with its default annealing length and with twice that.

Run: ``python benchmarks/dual_start.py [--steps 100 400]`` (about six minutes on 2 cores with the default
steps); results: docs/centers.md.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_centers import stage1_like_similarity

from shc.centers import center_quality, generate_centers, gv_min_distance, local_search_centers
from shc.centers.quality import _rank_cap_ascent
from shc.centers.search import _embedding_signs

C, Q, SEEDS = 1000, 32, 4


def embedding_start(G: np.ndarray, q: int, d: int, seed: int) -> np.ndarray | None:
    """Signs of the rank-q embedding of G after 30 ITQ rotation steps, repaired to distance d (None if the
    repair fails): shc-ls's spectral start (``_embedding_signs``), from G instead of S."""
    values, vectors = np.linalg.eigh(G)
    return _embedding_signs(vectors[:, -q:] * np.sqrt(np.maximum(values[-q:], 0.0)), d, seed, itq_steps=30)


def main(steps: tuple[int, ...] = (100, 400)) -> None:
    S = stage1_like_similarity(C, seed=C + Q)
    d = gv_min_distance(C, Q)
    mds = center_quality(generate_centers("mds", C, Q), S)["s_loss"]
    print(f"C={C}, q={Q}, d={d}")
    default_sweeps = int(np.clip(2e8 / (C * Q * Q), 10, 300))  # shc-ls's default annealing length here
    for sweeps in (default_sweeps, 2 * default_sweeps):
        start = time.perf_counter()
        own = local_search_centers(S, Q, seed=0, anneal_sweeps=sweeps).centers
        print(f"shc-ls from its own starts, {sweeps} annealing sweeps: {center_quality(own, S)['s_loss'] / mds:.4f} "
              f"of MDS ({time.perf_counter() - start:.1f} s)")
    for iterations in steps:
        start = time.perf_counter()
        bound, hints = _rank_cap_ascent(S, Q, d, iterations, 0.95)
        print(f"rank-cap ascent, {iterations} steps: bound {bound / C**2 / mds:.4f} of MDS "
              f"({time.perf_counter() - start:.0f} s)")
        for name, G in zip(("G1", "G2"), hints):
            for sweeps, label in ((None, "annealing"), (0, "descent only")):
                ends, starts, seconds = [], [], []
                for seed in range(SEEDS):
                    H = embedding_start(G, Q, d, seed)
                    if H is None:
                        continue
                    starts.append(center_quality(H, S)["s_loss"] / mds)
                    begin = time.perf_counter()
                    result = local_search_centers(S, Q, seed=seed, init=H, starts=("mds",), anneal_sweeps=sweeps)
                    seconds.append(time.perf_counter() - begin)
                    quality = center_quality(result.centers, S)
                    assert quality["d_min"] >= d
                    ends.append(quality["s_loss"] / mds)
                print(f"  from {name}, {label}: {len(ends)} of {SEEDS} starts repaired; start "
                      f"{np.median(starts):.3f} (median) -> shc-ls best {min(ends):.4f}, median {np.median(ends):.4f}, "
                      f"worst {max(ends):.4f} of MDS, d_min >= {d} ({np.mean(seconds):.1f} s each)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 400],
                        help="ascent lengths to start from (default: 100 400)")
    main(tuple(parser.parse_args().steps))
