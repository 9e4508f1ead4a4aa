"""Speed and memory of ``shc.retrieval.HashIndex`` against FAISS and a numpy brute force.

Exact top-100 for 1,000 queries, ties broken by ascending id (what ``shc.metrics`` ranks by), over uniformly
random codes of 64 and 128 bits, 100k and 1M codes:

- ours: ``HashIndex.search`` (linear counting selection at these sizes);
- faiss: raw ``faiss.IndexBinaryFlat.search`` (heap selection; its ties are not ordered by id, the distances
  are checked equal to ours);
- numpy: XOR + ``np.bitwise_count`` per block of queries, then a stable argsort (timed on 100 queries and
  extrapolated linearly to 1,000); its ids and distances are the exactness reference for ours.

Ours and FAISS are timed alternately (``--repeats`` rounds, best of each), so load from other processes on
the machine hits both; the ratio column is ours / faiss. ``build s`` is ``HashIndex.add`` (packing and
sorting by id) and ``build MB`` its tracemalloc peak; ``index MB`` the memory the codes and ids hold.

``--mih`` adds multi-index hashing against our linear scan at 10M x 64 bits, k = 100 (uniform codes, the
worst case, and clustered codes: 1,000 centers with 10% of the bits flipped, like trained hash codes near
their hash centers; the two interleaved, ``--repeats`` rounds, best of each), and ``--approximate`` FAISS's binary HNSW and IVF modes with their recall@100 (by
distance: the share of the exact top-100's distances they match) at 100k x 64 bits.

Run: ``PYTHONPATH=. python benchmarks/bench_retrieval.py [--quick] [--mih] [--approximate]``
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import numpy as np

from shc.provenance import cpu_model
from shc.retrieval import HashIndex

K, QUERIES, NUMPY_QUERIES = 100, 1000, 100


def _random_packed(rng: np.random.Generator, n: int, bits: int) -> np.ndarray:
    return rng.integers(0, 256, size=(n, bits // 8), dtype=np.uint8)


def _clustered_packed(rng: np.random.Generator, n: int, bits: int, centers: np.ndarray, flip: float) -> np.ndarray:
    chosen = centers[rng.integers(0, len(centers), n)]
    out = np.empty_like(chosen)
    for lo in range(0, n, 1 << 20):  # bounded temporary memory
        hi = min(n, lo + (1 << 20))
        out[lo:hi] = chosen[lo:hi] ^ np.packbits(rng.random((hi - lo, bits)) < flip, axis=1)
    return out


def numpy_top_k(database: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Brute force: XOR + popcount of every pair (a block of queries at a time), stable argsort (ties by row)."""
    distances = np.empty((len(queries), k), np.int64)
    rows = np.empty((len(queries), k), np.int64)
    block = max(1, (1 << 24) // max(len(database), 1))
    for lo in range(0, len(queries), block):
        d = np.bitwise_count(database[None, :, :] ^ queries[lo:lo + block, None, :]).sum(axis=2, dtype=np.uint16)
        order = np.argsort(d, axis=1, kind="stable")[:, :k]
        rows[lo:lo + block], distances[lo:lo + block] = order, np.take_along_axis(d, order, axis=1)
    return distances, rows


def _timed(function, *args):
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def exact_rows(n_values: list[int], bit_values: list[int], repeats: int) -> list[dict]:
    import faiss

    rows = []
    for bits in bit_values:
        for n in n_values:
            rng = np.random.default_rng(n + bits)
            database, queries = _random_packed(rng, n, bits), _random_packed(rng, QUERIES, bits)
            tracemalloc.start()
            build, index = _timed(lambda: HashIndex(bits).add(database))
            build_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            flat = faiss.IndexBinaryFlat(bits)
            flat.add(database)
            index.search(queries[:4], K)  # compile (numba caches on disk) outside the timing
            ours_times, faiss_times = [], []
            for _ in range(repeats):  # interleaved: both see the same machine load
                seconds, (ours_d, ours_ids) = _timed(index.search, queries, K)
                ours_times.append(seconds)
                seconds, (faiss_d, _) = _timed(flat.search, queries, K)
                faiss_times.append(seconds)
            numpy_seconds, (numpy_d, numpy_rows) = _timed(numpy_top_k, database, queries[:NUMPY_QUERIES], K)
            ours, raw = min(ours_times), min(faiss_times)
            rows.append({
                "case": "exact top-100", "bits": bits, "codes": n, "queries": QUERIES,
                "ours s": f"{ours:.3f}", "faiss s": f"{raw:.3f}",
                "numpy s": f"{numpy_seconds * QUERIES / NUMPY_QUERIES:.1f}",
                "ours/faiss": f"{ours / raw:.2f}",
                "ratio per round": " ".join(f"{a / b:.2f}" for a, b in zip(ours_times, faiss_times)),
                "= numpy (d, ids)": bool(np.array_equal(ours_d[:NUMPY_QUERIES], numpy_d)
                                          and np.array_equal(ours_ids[:NUMPY_QUERIES], numpy_rows)),
                "= faiss d": bool(np.array_equal(ours_d, faiss_d)),
                "build s": f"{build:.3f}", "build MB": f"{build_peak / 2**20:.0f}",
                "index MB": f"{index.nbytes / 2**20:.0f}",
            })
    return rows


def mih_rows(n: int, queries_count: int, repeats: int = 3) -> list[dict]:
    rows = []
    for kind in ("uniform", "clustered"):
        rng = np.random.default_rng(7)
        if kind == "uniform":
            database, queries = _random_packed(rng, n, 64), _random_packed(rng, queries_count, 64)
        else:
            centers = _random_packed(rng, 1000, 64)
            database = _clustered_packed(rng, n, 64, centers, 0.1)
            queries = _clustered_packed(rng, queries_count, 64, centers, 0.1)
        index = HashIndex(64).add(database)
        m = index.default_substrings()
        build, _ = _timed(index._mih_tables, m)
        index.search(queries[:2], K, method="mih")
        index.search(queries[:2], K, method="linear")
        linear = mih = float("inf")
        for _ in range(repeats):  # interleaved, best of each: both see the same machine load
            seconds, (linear_d, linear_ids) = _timed(index.search, queries, K, "linear")
            linear = min(linear, seconds)
            seconds, (mih_d, mih_ids) = _timed(index.search, queries, K, "mih")
            mih = min(mih, seconds)
        tables = index._cache[f"mih{m}"]
        rows.append({
            "case": f"MIH vs linear, {kind} codes", "bits": 64, "codes": n, "queries": queries_count,
            "ours s": f"{mih:.3f}", "linear s": f"{linear:.3f}", "speed-up": f"{linear / mih:.1f}x",
            "= linear (d, ids)": bool(np.array_equal(linear_d, mih_d) and np.array_equal(linear_ids, mih_ids)),
            "auto picks": index.choose_method(K, queries), "m": m, "build s": f"{build:.1f}",
            "index MB": f"{index.nbytes / 2**20:.0f}",
            "tables MB": f"{sum(a.nbytes for a in tables.values()) / 2**20:.0f}",
        })
    return rows


def approximate_rows(n: int) -> list[dict]:
    rng = np.random.default_rng(11)
    centers = _random_packed(rng, 1000, 64)
    database = _clustered_packed(rng, n, 64, centers, 0.1)
    queries = _clustered_packed(rng, QUERIES, 64, centers, 0.1)
    index = HashIndex(64).add(database)
    index.search(queries[:4], K)
    exact, (exact_d, _) = _timed(index.search, queries, K)
    kth = exact_d[:, -1:]
    need_at_kth = (exact_d == kth).sum(axis=1)
    rows = []
    for kind, options in (("hnsw", {"ef_search": 128}), ("hnsw", {"ef_search": 512}), ("ivf", {"nprobe": 8}),
                          ("ivf", {"nprobe": 32})):
        cached = f"{kind}-32-None" in index._cache
        build, _ = _timed(index._faiss_index, kind, 32, None)
        seconds, (approx_d, _) = _timed(lambda: index.search(queries, K, method=kind, **options))
        found = approx_d >= 0  # FAISS pads a missing result with distance -1: not a hit
        matched = (found & (approx_d < kth)).sum(axis=1) + np.minimum((approx_d == kth).sum(axis=1), need_at_kth)
        rows.append({
            "case": f"approximate {kind} " + " ".join(f"{a}={b}" for a, b in options.items()),
            "bits": 64, "codes": n, "queries": QUERIES, "ours s": f"{seconds:.3f}", "exact s": f"{exact:.3f}",
            "recall@100": f"{matched.mean() / K:.3f}", "build s": "(same)" if cached else f"{build:.1f}",
        })
    return rows


def run(quick: bool = False, mih: bool = False, approximate: bool = False, repeats: int = 3) -> list[dict]:
    """The benchmark table as one dict per row (see the module docstring)."""
    rows = exact_rows([10_000, 100_000] if quick else [100_000, 1_000_000], [64, 128], repeats)
    if mih:
        rows += mih_rows(1_000_000 if quick else 10_000_000, 100 if quick else QUERIES, repeats)
    if approximate:
        rows += approximate_rows(20_000 if quick else 100_000)
    return rows


if __name__ == "__main__":
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from run import print_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10x smaller problems (smoke test)")
    parser.add_argument("--mih", action="store_true", help="also MIH vs linear scan at 10M x 64 bits (minutes)")
    parser.add_argument("--approximate", action="store_true", help="also FAISS HNSW / IVF recall@100")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds of ours and FAISS")
    args = parser.parse_args()
    started = time.perf_counter()
    table = run(args.quick, args.mih, args.approximate, args.repeats)
    print_table(f"retrieval ({time.perf_counter() - started:.0f} s, {os.cpu_count()} CPUs, {cpu_model()}, "
                f"{time.strftime('%Y-%m-%d %H:%M')})", table)
