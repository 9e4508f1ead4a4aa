"""Stage-2 benchmark: time and quality of MDS and SHC centers on the paper's nine (C, q) pairs.

The similarity is a planted-group matrix (``shc.similarity.planted_similarity``, 10 groups), so the
S_loss columns show how much semantic structure each generator recovers. For scale: the authors' MDS
solver takes 30-110 s for a single C=100 case on this 2-core machine (figure from the project's issue
tracker, not re-measured here), and their SHC loop runs in Python over pairs.

Run: ``python benchmarks/run.py --only centers`` (or ``python benchmarks/bench_centers.py``).
"""

from __future__ import annotations

import time

from shc.centers import center_quality, generate_centers, gv_min_distance, optimize_semantic_centers
from shc.similarity import planted_similarity

PAPER_GRID = [(C, q) for C in (100, 196, 555) for q in (16, 32, 64)]


def run(quick: bool = False) -> list[dict]:
    grid = PAPER_GRID[:3] if quick else PAPER_GRID
    rows, total = [], 0.0
    for C, q in grid:
        S = planted_similarity(C, num_groups=10, seed=0)
        start = time.perf_counter()
        mds = generate_centers("mds", C, q, seed=0)
        mds_seconds = time.perf_counter() - start
        start = time.perf_counter()
        shc = optimize_semantic_centers(S, q, init=mds, seed=0)
        shc_seconds = time.perf_counter() - start
        total += mds_seconds + shc_seconds
        mds_q, shc_q = center_quality(mds, S), center_quality(shc.centers, S)
        rows.append({
            "C": C, "q": q, "GV d": gv_min_distance(C, q),
            "MDS s": round(mds_seconds, 2), "SHC s": round(shc_seconds, 2),
            "MDS d_min": mds_q["d_min"], "SHC d_min": shc_q["d_min"],
            "MDS S_loss": round(mds_q["s_loss"], 4), "SHC S_loss": round(shc_q["s_loss"], 4),
            "S_loss drop": f"{1 - shc_q['s_loss'] / mds_q['s_loss']:.0%}",
            "MDS rho_S": round(mds_q["spearman"], 3), "SHC rho_S": round(shc_q["spearman"], 3),
        })
    rows.append({"C": "all", "q": "", "SHC s": round(total, 2), "GV d": "", "MDS s": "(MDS + SHC together)"})
    return rows


if __name__ == "__main__":
    from run import print_table  # noqa: E402  (benchmarks/ is the working directory's sibling)

    print_table("centers", run())
