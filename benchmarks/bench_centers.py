"""Stage-2 benchmark: quality and time of every center generator on hierarchical class similarities.

For each (C, q) case the similarity S is a two-level class hierarchy with noise
(``shc.similarity.hierarchical_similarity``: C / 10 coarse groups, within-group cosine 0.5, noise 0.1,
seed C + q). One table per case: d_min, S_loss (per entry, Eq. 45 / C^2), S_loss relative to the MDS
centers, wall seconds and CPU seconds of the calling thread (a load-robust estimate of idle-machine time)
for random, csq, mds, shc (Algorithm 1, 20 cycles from MDS), shc-ls (``generate_centers("shc-ls")``, its
own MDS start included), semantic (the ablation without distance) and ``ls-plain`` (plain feasible
steepest descent from the MDS centers, ``shc.centers.steepest_descent``; its seconds exclude the
MDS start; only up to C = 600, being a slow numpy reference). ``bound`` is the relaxation lower bound on
S_loss for any centers (``shc.centers.relaxation_bound``). The numba kernels are compiled (and cached on disk) by a
warm-up call whose seconds are reported separately; on a fresh checkout add them once.

Then a summary of the nine paper-sized cases (C in 100, 196, 555 x q in 16, 32, 64) and the two
C = 1000 cases. ``--large`` adds, each in a fresh process so that its peak resident memory (ru_maxrss)
is its own: mds for C = 40,000 at 128 bits (greedy packed-bit code; d_min checked by popcount over all
pairs) and shc-ls for C = 10,000 at 128 bits (S in float32).

Run: ``python benchmarks/bench_centers.py [--large]`` (or ``python benchmarks/run.py --only centers``,
which prints the summary only).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

from shc.centers import (
    center_quality,
    generate_centers,
    gv_min_distance,
    local_search_centers,
    packed_min_distance,
    relaxation_bound,
    steepest_descent,
)
from shc.similarity import hierarchical_similarity

PAPER_GRID = [(C, q) for C in (100, 196, 555) for q in (16, 32, 64)]
IMAGENET_GRID = [(1000, 64), (1000, 128)]
METHODS = ("random", "csq", "mds", "shc", "shc-ls", "semantic", "ls-plain")
PLAIN_MAX_CLASSES = 600  # ls-plain (numpy, O(C q) per flip, about C q / 4 flips) took 5 min at C = 1000, q = 64


def case_similarity(C: int, q: int) -> np.ndarray:
    return hierarchical_similarity(C, num_groups=max(4, C // 10), within=0.5, noise=0.1, seed=C + q)


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    value = function(*args, **kwargs)
    return value, time.perf_counter() - start


def _thread_timed(function, *args, **kwargs):
    """(value, wall seconds, CPU seconds of this thread: BLAS worker threads not counted, waiting for a
    busy core not counted either, so it approximates the idle-machine time of single-threaded code)."""
    start = time.thread_time()
    value, seconds = _timed(function, *args, **kwargs)
    return value, seconds, time.thread_time() - start


def warm_up() -> float:
    """Seconds of the first shc-ls call on a tiny problem: numba compilation (or loading its disk cache)."""
    return _timed(local_search_centers, hierarchical_similarity(30, num_groups=3), 16, anneal_sweeps=2)[1]


def run_case(C: int, q: int) -> tuple[dict, list[dict]]:
    S, d = case_similarity(C, q), gv_min_distance(C, q)
    centers, seconds, cpu = {}, {}, {}
    for method in METHODS[:-1]:
        centers[method], seconds[method], cpu[method] = _thread_timed(generate_centers, method, C, q, similarity=S,
                                                                      seed=0)
    methods = METHODS if C <= PLAIN_MAX_CLASSES else METHODS[:-1]
    if "ls-plain" in methods:
        centers["ls-plain"], seconds["ls-plain"], cpu["ls-plain"] = _thread_timed(steepest_descent, S, centers["mds"], d)
    mds_loss = center_quality(centers["mds"], S)["s_loss"]
    rows = []
    for method in methods:
        quality = center_quality(centers[method], S)
        rows.append({"method": method, "d_min": quality["d_min"], "S_loss": round(quality["s_loss"], 4),
                     "S_loss/MDS": round(quality["s_loss"] / mds_loss, 3), "seconds": round(seconds[method], 2),
                     "thread cpu s": round(cpu[method], 2)})
    bound = relaxation_bound(S, q)
    rows.append({"method": "bound", "S_loss": round(bound, 4), "S_loss/MDS": round(bound / mds_loss, 3)})
    by_method = {row["method"]: row for row in rows}
    summary = {"C": C, "q": q, "d": d,
               **{f"{m}/MDS": by_method[m]["S_loss/MDS"] if m in by_method else "-" for m in ("shc", "ls-plain", "shc-ls")},
               "bound/MDS": by_method["bound"]["S_loss/MDS"], "shc-ls d_min": by_method["shc-ls"]["d_min"],
               "shc-ls s": by_method["shc-ls"]["seconds"], "shc-ls cpu s": by_method["shc-ls"]["thread cpu s"],
               "shc s": by_method["shc"]["seconds"]}
    return summary, rows


def large_row(name: str) -> dict:
    """One --large row, measured in this process (run it in a fresh one)."""
    if name == "mds-40000":
        C, q = 40_000, 128
        centers, seconds, cpu = _thread_timed(generate_centers, "mds", C, q, seed=0)
        d_min, check_seconds = _timed(packed_min_distance, centers)
        extra = {"d_min check s": round(check_seconds, 1)}
    else:
        C, q = 10_000, 128
        S = case_similarity(C, q).astype(np.float32)
        centers, seconds, cpu = _thread_timed(generate_centers, "shc-ls", C, q, similarity=S, seed=0)
        d_min = packed_min_distance(centers)
        mds = generate_centers("mds", C, q, seed=0)
        loss = {key: _block_loss(H, S) for key, H in (("shc-ls", centers), ("mds", mds))}
        extra = {"S_loss": round(loss["shc-ls"], 4), "S_loss/MDS": round(loss["shc-ls"] / loss["mds"], 3)}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB (Linux)
    return {"row": name, "C": C, "q": q, "d": gv_min_distance(C, q), "d_min": d_min, "seconds": round(seconds, 1),
            "thread cpu s": round(cpu, 1), "peak GiB": round(peak, 2), **extra}


def _block_loss(H: np.ndarray, S: np.ndarray, block: int = 2000) -> float:
    Hf, q = H.astype(np.float32), H.shape[1]
    total = sum(float(np.sum((S[a:a + block] - Hf[a:a + block] @ Hf.T / q).astype(np.float64) ** 2))
                for a in range(0, len(H), block))
    return total / len(H) ** 2


def run(quick: bool = False, large: bool = False, verbose: bool = False) -> list[dict]:
    from run import print_table  # benchmarks/ is on sys.path when run from there

    compile_seconds = warm_up()
    summaries = []
    for C, q in PAPER_GRID[:3] if quick else PAPER_GRID + IMAGENET_GRID:
        summary, rows = run_case(C, q)
        summaries.append(summary)
        if verbose:
            print_table(f"C={C}  q={q}  d={summary['d']}", rows)
    nine = [s for s in summaries if (s["C"], s["q"]) in PAPER_GRID]
    long_codes = [s["shc-ls/MDS"] for s in nine if s["q"] >= 32]
    summaries.append({"C": "nine", "q": "", "d": "", "shc/MDS": "", "ls-plain/MDS": "",
                      "shc-ls/MDS": f"median q>=32: {np.median(long_codes):.3f}" if long_codes else "",
                      "shc-ls s": round(sum(s["shc-ls s"] for s in nine), 2),
                      "shc-ls cpu s": round(sum(s["shc-ls cpu s"] for s in nine), 2),
                      "shc s": round(sum(s["shc s"] for s in nine), 2)})
    summaries.append({"C": "numba compile (first call)", "shc-ls s": round(compile_seconds, 2)})
    if large:
        for name in ("mds-40000", "shc-ls-10000"):
            output = subprocess.run([sys.executable, __file__, "--row", name], capture_output=True, text=True, check=True)
            summaries.append(json.loads(output.stdout.strip().splitlines()[-1]))
    return summaries


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="add the C = 40,000 mds and C = 10,000 shc-ls rows")
    parser.add_argument("--quick", action="store_true", help="only the three C = 100 cases")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # internal: one --large row in a fresh process
    args = parser.parse_args()
    if args.row:
        print(json.dumps(large_row(args.row)))
        raise SystemExit(0)
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import os

    from run import print_table

    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"# bench_centers {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {load} at start")
    print_table("summary (S_loss relative to the MDS centers; seconds per method)",
                run(quick=args.quick, large=args.large, verbose=True))
