"""Speed and memory of ``shc.metrics`` against DeepHash-pytorch's ``CalcTopMap``.

The paper's CIFAR-100 protocol: 5,000 queries, 45,000 database items, 64 bits,
100 classes, single-label. Codes are class centres with random bit flips, so
ranks are realistic. Both sides get the same float32 -1/+1 codes and float32
one-hot labels. ``CalcTopMap`` (DeepHash-pytorch ``utils/tools.py``, copied
into many hashing repositories; re-implemented below with the same numpy calls
per query) computes one topk per call with a Python loop over queries; it is
timed on a subset of queries and extrapolated linearly to all of them. Peak
memory is the tracemalloc peak of numpy allocations during a separate,
untimed call.

Run: ``PYTHONPATH=. python benchmarks/bench_metrics.py [--quick]``
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc
from collections.abc import Callable

import numpy as np

from shc.metrics import DEFAULT_KS, evaluate

TOPKS = (100, 1000, None)


# --------------------------------------------------------------------------- #
# The DeepHash-pytorch CalcTopMap loop, re-implemented step for step (same numpy calls per query)
# --------------------------------------------------------------------------- #
def calc_top_map(db_codes, query_codes, db_labels, query_labels, topk, sort_kind=None):
    """mAP@topk the CalcTopMap way: a Python loop over queries, one topk per call.

    Per query: relevance = (labels dot product > 0) as float32, distance =
    0.5 * (q - code . db_codes^T), ``np.argsort`` of the distances, relevance
    reordered and cut to ``[:topk]``, AP = mean(count / rank) over its relevant
    ranks (0 if none); mean over all queries. ``sort_kind=None`` is the
    original's np.argsort default (quicksort, unstable: ties in arbitrary order);
    ``"stable"`` breaks ties by database index, as ``shc.metrics`` does.
    """
    n_bits = db_codes.shape[1]
    total = 0.0
    for i in range(query_labels.shape[0]):
        relevance = (np.dot(query_labels[i, :], db_labels.transpose()) > 0).astype(np.float32)
        distance = 0.5 * (n_bits - np.dot(query_codes[i, :], db_codes.transpose()))
        relevance = relevance[np.argsort(distance, kind=sort_kind)][0:topk]
        n_hits = np.sum(relevance).astype(int)
        if n_hits == 0:
            continue
        count = np.linspace(1, n_hits, n_hits)
        rank = np.asarray(np.where(relevance == 1)) + 1.0
        total += np.mean(count / rank)
    return total / query_labels.shape[0]


# --------------------------------------------------------------------------- #
# Data and measurement
# --------------------------------------------------------------------------- #
def cifar100_like(n_queries: int, n_db: int, n_bits: int, n_classes: int, flip: float = 0.2, seed: int = 0):
    """float32 -1/+1 codes near per-class centres and float32 one-hot labels (DeepHash's format)."""
    rng = np.random.default_rng(seed)
    centres = rng.choice(np.float32([-1, 1]), size=(n_classes, n_bits))
    one_hot = np.eye(n_classes, dtype=np.float32)

    def split(n: int):
        classes = np.arange(n) % n_classes
        codes = centres[classes] * np.where(rng.random((n, n_bits)) < flip, np.float32(-1), np.float32(1))
        return codes, one_hot[classes]

    return (*split(n_queries), *split(n_db))


def timed(fn: Callable[[], object], repeats: int = 1) -> tuple[float, float, object]:
    """Wall seconds of the fastest of ``repeats`` runs, that run's process CPU seconds, and its result."""
    best = (float("inf"), 0.0, None)
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        best = min(best, (wall, cpu, result), key=lambda run: run[0])
    return best


def peak_mb(fn: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return (tracemalloc.get_traced_memory()[1] - base) / 2**20
    finally:
        tracemalloc.stop()


def run(quick: bool = False) -> list[dict]:
    """Time our metrics and CalcTopMap on the CIFAR-100 protocol; one dict per table row.

    Timed rows have implementation, queries, db, bits, seconds, speed-up (CalcTopMap x3
    time / this time, for the same job; None for the reference rows and the row with more work) and peak MB. Check rows have
    implementation, topk, ours, abs_diff_stable and abs_diff_quicksort: |our mAP -
    CalcTopMap's| on the reference subset, with a stable argsort in the re-implementation
    (ties by index, as ours: equal to rounding) and with the original unstable quicksort.
    """
    n_queries, n_db, n_bits, n_classes = (500, 4500, 64, 100) if quick else (5000, 45000, 64, 100)
    n_reference = 50 if quick else 300  # CalcTopMap queries actually run; time is extrapolated
    query_codes, query_labels, db_codes, db_labels = cifar100_like(n_queries, n_db, n_bits, n_classes)
    sizes = {"queries": n_queries, "db": n_db, "bits": n_bits}

    def ours(topks=TOPKS, ks=(), pr=False, n=n_queries):
        return evaluate(query_codes[:n], query_labels[:n], db_codes, db_labels, topks=topks, ks=ks, pr=pr)

    def reference(topk, n=n_reference, sort_kind=None):
        topk = n_db if topk is None else topk
        return calc_top_map(db_codes, query_codes[:n], db_labels, query_labels[:n], topk, sort_kind)

    repeats = 1 if quick else 3
    ours(n=10)  # warm-up
    ours_map = timed(ours, repeats)
    ours_all = timed(lambda: ours(ks=DEFAULT_KS, pr=True), repeats)
    reference(TOPKS[0], n=10)  # warm-up
    scale = n_queries / n_reference  # CalcTopMap's time is linear in the number of queries
    per_topk = {topk: timed(lambda: reference(topk), repeats) for topk in TOPKS}  # the same repeats as ours
    reference_three = [scale * sum(run[i] for run in per_topk.values()) for i in (0, 1)]
    reference_one = [scale * per_topk[1000][i] for i in (0, 1)]
    reference_peak = peak_mb(lambda: reference(None, n=10))

    def row(implementation, wall, cpu, peak, ours_row=True):  # speed-up: the same job only (mAP at three topk)
        return {"implementation": implementation, **sizes, "seconds": round(wall, 3),
                "speed-up": round(reference_three[0] / wall, 1) if ours_row else None,
                "peak MB": round(peak, 1), "cpu seconds": round(cpu, 3)}  # fmt: skip

    rows = [
        row("shc.metrics.evaluate: mAP@100, @1000, @ALL", *ours_map[:2], peak_mb(ours)),
        row("shc.metrics.evaluate: + P@K, R@K (101 K), PR curve", *ours_all[:2],
            peak_mb(lambda: ours(ks=DEFAULT_KS, pr=True)), ours_row=False),  # more work than the reference's
        row(f"CalcTopMap x3 (topk 100, 1000, ALL; {n_reference} queries, extrapolated)", *reference_three,
            reference_peak, ours_row=False),
        row(f"CalcTopMap x1 (topk 1000 only; {n_reference} queries, extrapolated)", *reference_one,
            reference_peak, ours_row=False),
    ]  # fmt: skip

    subset = ours(n=n_reference)
    for topk in TOPKS:
        key = "mAP@ALL" if topk is None else f"mAP@{topk}"
        rows.append({
            "implementation": f"{key} on {n_reference} queries", "topk": topk, "ours": round(subset[key], 6),
            "abs_diff_stable": abs(subset[key] - reference(topk, sort_kind="stable")),
            "abs_diff_quicksort": abs(subset[key] - per_topk[topk][2]),
        })  # fmt: skip
    return rows


def format_table(rows: list[dict]) -> str:
    timed = [row for row in rows if "seconds" in row]
    checks = [row for row in rows if "ours" in row]
    width = max(len(row["implementation"]) for row in timed)
    lines = [f"{'implementation':<{width}} {'queries':>7} {'db':>6} {'bits':>4} {'seconds':>8} {'speed-up':>8}"
             f" {'peak MB':>8} {'cpu s':>8}"]
    for row in timed:
        speed_up = "-" if row["speed-up"] is None else f"{row['speed-up']:.1f}x"
        lines.append(
            f"{row['implementation']:<{width}} {row['queries']:>7} {row['db']:>6} {row['bits']:>4}"
            f" {row['seconds']:>8.3f} {speed_up:>8} {row['peak MB']:>8.1f} {row['cpu seconds']:>8.3f}"
        )
    reference_three, reference_one = (row for row in timed if row["implementation"].startswith("CalcTopMap"))
    lines += [
        "",
        "speed-up: CalcTopMap x3 seconds / this row's seconds (our one call computes the three topk);"
        f" mAP row against one CalcTopMap call: {reference_one['seconds'] / timed[0]['seconds']:.1f}x;"
        f" in CPU seconds: {reference_three['cpu seconds'] / timed[0]['cpu seconds']:.1f}x"
        f" and {reference_one['cpu seconds'] / timed[0]['cpu seconds']:.1f}x.",
        "cpu s: process CPU time of the timed run (all threads); wall seconds = cpu s / cores actually had.",
        "peak MB: tracemalloc peak of numpy allocations during the call, inputs excluded.",
        f"CPUs usable: {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else os.cpu_count()};"
        " load average at the end: "
        + ", ".join(f"{load:.1f}" for load in os.getloadavg())
        + " (other processes on the machine slow every row).",
        "",
        "mAP equality with CalcTopMap on the same queries (|ours - reference|):",
    ]
    for row in checks:
        lines.append(
            f"  {row['implementation']}: ours {row['ours']:.6f}; stable argsort {row['abs_diff_stable']:.1e};"
            f" original (quicksort, ties in arbitrary order) {row['abs_diff_quicksort']:.1e}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a 10x smaller problem (smoke test)")
    print(format_table(run(quick=parser.parse_args().quick)))
