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

Then the stage-1-like family (issue 25 item 5): S built by stage 1's own formula
(``shc.similarity.similarity_from_logits``: masked softmax, per-class mean, row normalisation, symmetry)
from a simulated classifier (``stage1_like_similarity``: prototypes in groups of uneven, Dirichlet(0.5)
sizes, 10 noisy samples per class, about 60 % accuracy at C = 100) for C in 100, 196, 555, 1000 x q in
32, 64, 128, and the real stage-1 S of the standard (fashion-composite) and quick (digits-composite)
presets, seed 0 (``benchmarks/fixtures/stage1_similarity.npz``, float16 upper triangles) at 16, 32, 64
bits. ``ls-plain`` there is the single-flip descent from MDS (numpy up to C = 600, the compiled single-flip
descent above), ``udb`` the unit-diagonal lower bound (``shc.centers.unit_diagonal_bound``), tighter than
``bound`` where C >> q, and ``cap`` the distance-cap lower bound for centers at the GV distance
(``shc.centers.distance_cap_bound``: the lattice of G's entries below the cap 1 - 2d/q, and G's energy),
tighter where q is large beside C, and ``psd`` the PSD-cap lower bound (``shc.centers.psd_cap_bound``: the
cap bound's lattice, and G and G o G - J/q positive semidefinite; never below ``cap``, 300 ascent steps, about a
minute at C = 1000), tighter where C >> q, and ``rank`` the rank-cap lower bound (``shc.centers.rank_cap_bound``:
the unit-diagonal bound's rank and trace and the PSD-cap bound's lattice and G o G - J/q at once, by a Lagrangian
decomposition; 400 ascent steps, about two minutes at C = 1000). Any of the bounds holds; the largest is the one
to read.

Run: ``python benchmarks/bench_centers.py [--large]`` (or ``python benchmarks/run.py --only centers``,
which prints the summary only). Without ``--large`` the whole run took 18 minutes on the idle 2-core machine
(2026-11-25 02:04-02:22), most of it in the stage-1-like part's PSD-cap and rank-cap bounds (300 and 400 ascent
steps, each step about 0.2 s at C = 1000).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from shc.centers import (
    center_quality,
    distance_cap_bound,
    generate_centers,
    gv_min_distance,
    local_search_centers,
    packed_min_distance,
    psd_cap_bound,
    rank_cap_bound,
    relaxation_bound,
    steepest_descent,
    unit_diagonal_bound,
)
from shc.similarity import hierarchical_similarity, similarity_from_logits

PAPER_GRID = [(C, q) for C in (100, 196, 555) for q in (16, 32, 64)]
IMAGENET_GRID = [(1000, 64), (1000, 128)]
METHODS = ("random", "csq", "mds", "shc", "shc-ls", "semantic", "ls-plain")
PLAIN_MAX_CLASSES = 600  # ls-plain (numpy, O(C q) per flip, about C q / 4 flips) took 5 min at C = 1000, q = 64


STAGE1_GRID = [(C, q) for C in (100, 196, 555, 1000) for q in (32, 64, 128)]
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "stage1_similarity.npz"
FIXTURE_BITS = (16, 32, 64)


def case_similarity(C: int, q: int) -> np.ndarray:
    return hierarchical_similarity(C, num_groups=max(4, C // 10), within=0.5, noise=0.1, seed=C + q)


def stage1_like_similarity(num_classes: int, seed: int = 0, samples_per_class: int = 10, within: float = 0.5,
                           dim: int = 64, scale: float = 10.0, noise: float = 2.0,
                           return_groups: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """S as stage 1 builds it (Eq. 5-12, ``similarity_from_logits``) from a simulated classifier.

    Classes fall into ``max(2, C // 10)`` groups of uneven size (group shares drawn from Dirichlet(0.5));
    class c has the unit prototype ``p_c = sqrt(within) z_g + sqrt(1 - within) e_c``; each of its
    ``samples_per_class`` images has the feature ``p_c + noise * N(0, I / dim)`` and the logits
    ``scale * P x`` (a linear classifier on the prototypes; about 60 % accurate at C = 100, 40 % at 1000).
    Seeded: the same arguments give the same S. ``return_groups``: also each class's group (``(S, groups)``),
    the ground truth that ``benchmarks/group_start.py`` starts from."""
    C = int(num_classes)
    if C < 2 or samples_per_class < 1:
        raise ValueError(f"need num_classes >= 2 and samples_per_class >= 1, got {num_classes}, {samples_per_class}.")
    rng = np.random.default_rng(seed)
    num_groups = max(2, C // 10)
    groups = rng.choice(num_groups, size=C, p=rng.dirichlet(np.full(num_groups, 0.5)))
    coarse = rng.standard_normal((num_groups, dim))
    prototypes = np.sqrt(within) * coarse[groups] + np.sqrt(1 - within) * rng.standard_normal((C, dim))
    prototypes /= np.linalg.norm(prototypes, axis=1, keepdims=True)
    labels = np.repeat(np.arange(C), samples_per_class)
    features = prototypes[labels] + noise / np.sqrt(dim) * rng.standard_normal((labels.size, dim))
    S = similarity_from_logits(scale * features @ prototypes.T, labels, C)
    return (S, groups) if return_groups else S


def fixture_similarities() -> dict[str, np.ndarray]:
    """The real stage-1 S of the fixtures file by name (C = 100), rebuilt from float16 upper triangles."""
    out = {}
    with np.load(FIXTURE) as stored:
        for name in stored.files:
            upper = stored[name].astype(np.float64)
            C = int(round((1 + np.sqrt(1 + 8 * upper.size)) / 2))
            S = np.zeros((C, C))
            S[np.triu_indices(C, 1)] = upper
            S += S.T
            np.fill_diagonal(S, 1.0)
            out[name] = S
    return out


def stage1_case(name: str, S: np.ndarray, q: int) -> dict:
    """One row of the stage-1-like family: shc-ls and the single-flip descent from MDS, both against MDS."""
    C = S.shape[0]
    d = gv_min_distance(C, q)
    mds = generate_centers("mds", C, q, seed=0)
    result, seconds, cpu = _thread_timed(generate_centers, "shc-ls", C, q, similarity=S, seed=0)
    if C <= PLAIN_MAX_CLASSES:
        plain = steepest_descent(S, mds, d)
    else:
        plain = local_search_centers(S, q, init=mds, starts=("mds",), anneal_sweeps=0, pair_moves=False).centers
    mds_loss = center_quality(mds, S)["s_loss"]
    quality = center_quality(result, S)
    plain_loss = center_quality(plain, S)["s_loss"]
    return {"S": name, "C": C, "q": q, "d": d, "ls-plain/MDS": round(plain_loss / mds_loss, 3),
            "shc-ls/MDS": round(quality["s_loss"] / mds_loss, 3), "<= plain": quality["s_loss"] <= plain_loss + 1e-12,
            "bound/MDS": round(relaxation_bound(S, q) / mds_loss, 3),
            "udb/MDS": round(unit_diagonal_bound(S, q) / mds_loss, 3),
            "cap/MDS": round(distance_cap_bound(S, q) / mds_loss, 3),
            "psd/MDS": round(psd_cap_bound(S, q) / mds_loss, 3),
            "rank/MDS": round(rank_cap_bound(S, q) / mds_loss, 3), "shc-ls d_min": quality["d_min"],
            "shc-ls s": round(seconds, 2), "shc-ls cpu s": round(cpu, 2)}


def run_stage1_family(quick: bool = False) -> list[dict]:
    """The stage-1-like family and the real fixtures, then a summary row of the simulated cases."""
    rows = []
    for C, q in STAGE1_GRID[:3] if quick else STAGE1_GRID:
        rows.append(stage1_case("simulated", stage1_like_similarity(C, seed=C + q), q))
    simulated = [row["shc-ls/MDS"] for row in rows]
    for name, S in fixture_similarities().items():
        rows.extend(stage1_case(name, S, q) for q in FIXTURE_BITS)
    rows.append({"S": "simulated", "C": "all", "q": ">=32",
                 "shc-ls/MDS": f"median {np.median(simulated):.3f}, max {max(simulated):.3f}",
                 "<= plain": all(row["<= plain"] for row in rows),
                 "shc-ls s": round(sum(row["shc-ls s"] for row in rows[:len(simulated)]), 2),
                 "shc-ls cpu s": round(sum(row["shc-ls cpu s"] for row in rows[:len(simulated)]), 2)})
    return rows


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
    for name, bound in (("bound", relaxation_bound(S, q)), ("udb", unit_diagonal_bound(S, q)),
                        ("cap", distance_cap_bound(S, q))):
        rows.append({"method": name, "S_loss": round(bound, 4), "S_loss/MDS": round(bound / mds_loss, 3)})
    by_method = {row["method"]: row for row in rows}
    summary = {"C": C, "q": q, "d": d,
               **{f"{m}/MDS": by_method[m]["S_loss/MDS"] if m in by_method else "-" for m in ("shc", "ls-plain", "shc-ls")},
               **{f"{m}/MDS": by_method[m]["S_loss/MDS"] for m in ("bound", "udb", "cap")},
               "shc-ls d_min": by_method["shc-ls"]["d_min"],
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
    summaries.append({"C": f"the {len(nine)} paper cases", "q": "", "d": "", "shc/MDS": "", "ls-plain/MDS": "",
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
    parser.add_argument("--quick", action="store_true", help="only the three C = 100 cases, without the stage-1-like "
                        "family")
    parser.add_argument("--row", help=argparse.SUPPRESS)  # internal: one --large row in a fresh process
    args = parser.parse_args()
    if args.row:
        print(json.dumps(large_row(args.row)))
        raise SystemExit(0)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import os

    from run import print_table

    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(f"# bench_centers {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average {load} at start")
    print_table("summary (S_loss relative to the MDS centers; seconds per method)",
                run(quick=args.quick, large=args.large, verbose=True))
    if not args.quick:  # each row runs the PSD-cap and rank-cap ascents: minutes, not a smoke test
        print_table("stage-1-like S (simulated classifier; real stage-1 S of the standard and quick presets, seed 0)",
                    run_stage1_family(quick=False))
