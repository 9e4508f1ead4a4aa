"""Report building blocks: time of the code embedding (t-SNE / MDS) and of the rank-based PR curve.

Codes are planted: 100 classes, 64-bit centers, 10 % of each code's bits flipped. The embedding uses
``max_points=800`` codes plus the 100 centers (``shc.plots.code_embedding_frame``); the rank-PR rows
compare ``shc.metrics.evaluate`` for mAP@ALL + precision@K with and without ``rank_points=200``. Every row is
the fastest of ``repeats`` runs after one untimed warm-up of each call (the first call pays imports and compiles).

Run: ``python benchmarks/bench_reports.py [--quick] [--repeats N]`` or ``python benchmarks/run.py --only reports``
(``--quick``: smaller database).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from shc.metrics import evaluate
from shc.plots import code_embedding_frame


def _codes(n: int, num_classes: int = 100, num_bits: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    centers = rng.choice(np.array([-1, 1], dtype=np.int8), size=(num_classes, num_bits))
    labels = rng.integers(0, num_classes, n)
    codes = centers[labels] * np.where(rng.random((n, num_bits)) < 0.1, -1, 1).astype(np.int8)
    return centers, labels, codes


def _fastest(call, repeats: int) -> float:
    """Seconds of the fastest of ``repeats`` calls, after one untimed warm-up call."""
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def run(quick: bool = False, repeats: int = 3) -> list[dict]:
    rows = []
    centers, labels, codes = _codes(5000)
    for method in ("tsne", "mds"):
        seconds = _fastest(lambda: code_embedding_frame(codes, labels, np.arange(100) // 5, centers, max_points=800,
                                                        method=method), repeats)
        rows.append({"task": f"code_embedding_frame {method}", "size": "800 codes + 100 centers, 64 bits",
                     "seconds": round(seconds, 2)})  # fmt: skip
    n_db = 5000 if quick else 50000
    _, db_labels, db_codes = _codes(n_db, seed=1)
    _, query_labels, query_codes = _codes(1000, seed=2)
    for rank_points in (0, 200):
        seconds = _fastest(lambda: evaluate(query_codes, query_labels, db_codes, db_labels, topks=(None,), pr=False,
                                            rank_points=rank_points), repeats)
        rows.append({"task": f"evaluate mAP@ALL + P@K, rank_points={rank_points}",
                     "size": f"1000 queries x {n_db} items, 64 bits",
                     "seconds": round(seconds, 3)})  # fmt: skip
    return rows


def main() -> None:
    from run import print_table

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a 10x smaller database for the rank-PR rows")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs a row, the fastest kept (default 3)")
    args = parser.parse_args()
    print_table("reports", run(args.quick, args.repeats))


if __name__ == "__main__":
    main()
