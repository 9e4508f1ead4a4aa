"""Every retrieval metric in one pass over query chunks: :func:`evaluate`.

Queries are processed in chunks on a small thread pool; :func:`_chunk_sums` ranks a chunk (numpy's stable
radix sort: ties by database index), AP@K by index comes from the ranks of the relevant items
(:func:`_average_precision`), and the tie-aware numbers and the radius PR curve from the distance histograms
(:mod:`shc.metrics.tie_aware`). mAP@K alone on single-label codes takes the compiled kernel of
:mod:`shc.metrics._kernel` where numba is installed. :func:`_finalize` averages the sums over queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from shc.metrics._inputs import (DEFAULT_KS, _check_chunk_size, _check_num_workers, _Data, _map_key, _Plan, _plan,
                                 _validate)
from shc.metrics._kernel import _backend, _compiled_average_precision
from shc.metrics._packing import _hamming_distances, _relevance
from shc.metrics.tie_aware import _distance_histograms, _expected_hits, _tie_aware_average_precision


def evaluate(
    query_codes: Any,
    query_labels: Any,
    db_codes: Any,
    db_labels: Any,
    topks: Sequence[int | None] = (100, 1000, None),
    ks: Iterable[int] = DEFAULT_KS,
    pr: bool = True,
    tie_aware: bool = False,
    *,
    rank_points: int = 0,
    per_query: bool = False,
    chunk_size: int | None = None,
    num_workers: int | None = None,
) -> dict[str, Any]:
    """Every retrieval metric of the paper in one pass over query chunks.

    Parameters
    ----------
    query_codes, query_labels, db_codes, db_labels
        As in :func:`mean_average_precision`.
    topks : sequence of int or None
        The K of mAP@K; None is the whole database ("ALL").
    ks : iterable of int
        The K of precision@K and recall@K (default K = 1, 5, 10, ..., 500).
    pr : bool
        Also compute the Hamming-radius PR curve (see :func:`pr_curve`).
    tie_aware : bool
        Also compute the tie-aware mAP@K (see :func:`mean_average_precision`) and the expected
        precision@K, recall@K and rank-based PR curve over random orders within ties.
    rank_points : int
        If > 0, also the rank-based PR curve at ``rank_cutoffs(n_db, rank_points)`` (see
        :func:`rank_pr_curve`).
    per_query : bool
        Also return every query's AP@K (see :func:`average_precision_per_query`).
    chunk_size, num_workers
        As in :func:`mean_average_precision`.

    Returns
    -------
    dict
        ``"mAP@<K>"`` (float; ``"mAP@ALL"`` for None) for each K of ``topks``;
        ``"k"`` (int array), ``"precision@k"``, ``"recall@k"`` (float arrays);
        if ``pr``: ``"pr_radius"``, ``"pr_precision"``, ``"pr_recall"``;
        if ``tie_aware``: ``"tie_aware_mAP@<K>"`` for each K of ``topks``, ``"tie_aware_precision@k"``
        and ``"tie_aware_recall@k"`` (if ``ks``), ``"tie_aware_rank_precision"`` and
        ``"tie_aware_rank_recall"`` (if ``rank_points``);
        if ``rank_points``: ``"rank_k"``, ``"rank_precision"``, ``"rank_recall"``;
        if ``per_query``: ``"AP@<K>"`` (and ``"tie_aware_AP@<K>"``), (n_queries,) float arrays.
    """
    data = _validate(query_codes, query_labels, db_codes, db_labels)
    plan = _plan(data, topks, ks, pr, tie_aware, rank_points, per_query)
    chunk_size = _check_chunk_size(chunk_size, data.n_db)
    num_workers = _check_num_workers(num_workers)
    kernel = _compiled_average_precision() if _kernel_applies(data, plan) else None
    if kernel is not None:  # mAP only, single-label: one compiled pass per query, no sort
        labels = np.ascontiguousarray(data.query_labels, dtype=np.int64)
        db_labels = np.ascontiguousarray(data.db_labels, dtype=np.int64)
        ap = kernel(data.query_codes, np.ascontiguousarray(data.db_codes.T), labels, db_labels, plan.topk_cut)
        return _finalize({"ap": ap.sum(axis=0), "ap_rows": ap}, data, plan)

    starts = range(0, data.n_queries, chunk_size)
    chunks = [slice(start, min(start + chunk_size, data.n_queries)) for start in starts]

    def work(rows: slice) -> dict[str, np.ndarray]:
        return _chunk_sums(data, plan, rows)

    num_workers = min(num_workers, len(chunks))
    if num_workers == 1:
        sums = [work(rows) for rows in chunks]
    else:
        with ThreadPoolExecutor(num_workers) as pool:
            sums = list(pool.map(work, chunks))  # in chunk order: deterministic
    total = {name: np.concatenate([s[name] for s in sums]) if name in _PER_QUERY_SUMS
             else np.sum([s[name] for s in sums], axis=0) for name in sums[0]}  # fmt: skip
    return _finalize(total, data, plan)


_PER_QUERY_SUMS = frozenset({"ap_rows", "tie_aware_ap_rows"})  # one row per query: concatenated, not summed


def _kernel_applies(data: _Data, plan: _Plan) -> bool:
    return (data.single_label and data.db_codes.dtype == np.uint64 and not len(plan.ks) and not plan.pr
            and not plan.tie_aware and not len(plan.rank_cut)
            and _backend() != "numpy")


# --------------------------------------------------------------------------- #
# Chunk kernel: per-query metrics of a slice of queries, summed over queries
# --------------------------------------------------------------------------- #
def _chunk_sums(data: _Data, plan: _Plan, rows: slice) -> dict[str, np.ndarray]:
    distances = _hamming_distances(data, rows)
    n_rows, n_db = distances.shape
    order = np.argsort(distances, axis=1, kind="stable")  # radix sort: ties keep index order
    order += np.arange(0, n_rows * n_db, n_db)[:, None]  # flat indices into the chunk
    # Everything below needs only where the relevant items land in each ranking.
    ranked = np.flatnonzero(np.take(_relevance(data, rows).ravel(), order))  # flat (row, rank), row-major
    row, rank = np.divmod(ranked, n_db)
    first = np.searchsorted(ranked, np.arange(n_rows + 1) * n_db)  # row r: ranked[first[r]:first[r + 1]]
    n_relevant = np.diff(first)
    has_relevant = n_relevant > 0
    sums = {"n_with_relevant": np.array(np.count_nonzero(has_relevant))}

    if len(plan.topk_cut):
        ap = _average_precision(row, rank, first, plan.topk_cut)
        sums["ap"] = ap.sum(axis=0)
        if plan.per_query:
            sums["ap_rows"] = ap
    for name, cuts in (("", plan.k_cut), ("rank_", plan.rank_cut)):  # precision@K and the rank-based PR curve
        if len(cuts):
            rank_k = np.arange(n_rows)[:, None] * n_db + cuts  # flat position of rank K in each row
            hits_at_k = np.searchsorted(ranked, rank_k) - first[:-1, None]
            sums[f"{name}precision@k"] = (hits_at_k / cuts).sum(axis=0)
            sums[f"{name}recall@k"] = (hits_at_k[has_relevant] / n_relevant[has_relevant, None]).sum(axis=0)

    if plan.needs_histograms:
        ranked_distances = np.take(distances.ravel(), order).reshape(n_rows, n_db)
        n_at, relevant_at = _distance_histograms(ranked_distances, row, ranked, data.n_bits)
        if plan.tie_aware and len(plan.topk_cut):
            tie_aware_ap = _tie_aware_average_precision(n_at, relevant_at, plan.topk_cut)
            sums["tie_aware_ap"] = tie_aware_ap.sum(axis=0)
            if plan.per_query:
                sums["tie_aware_ap_rows"] = tie_aware_ap
        for name, cuts in (("", plan.k_cut), ("rank_", plan.rank_cut)) if plan.tie_aware else ():
            if len(cuts):  # expected precision@K and recall@K over random orders within ties
                hits_at_k = _expected_hits(n_at, relevant_at, cuts)
                sums[f"tie_aware_{name}precision@k"] = (hits_at_k / cuts).sum(axis=0)
                sums[f"tie_aware_{name}recall@k"] = (hits_at_k[has_relevant]
                                                     / n_relevant[has_relevant, None]).sum(axis=0)
        if plan.pr:
            retrieved = np.cumsum(n_at, axis=1)  # items within radius r, r = 0..q
            relevant_retrieved = np.cumsum(relevant_at, axis=1)
            some = retrieved > 0
            sums["pr_precision"] = np.where(some, relevant_retrieved / np.maximum(retrieved, 1), 0.0).sum(axis=0)
            sums["pr_precision_count"] = some.sum(axis=0)
            sums["pr_recall"] = (relevant_retrieved[has_relevant] / n_relevant[has_relevant, None]).sum(axis=0)
    return sums


def _average_precision(row: np.ndarray, rank: np.ndarray, first: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """(chunk, n_topks) AP@K from the 0-based ranks of the relevant items, row by row.

    The j-th relevant item of a row, at rank p, has precision j / (p + 1); AP@K
    is the mean of these precisions over the relevant items with p < K.
    """
    n_rows = len(first) - 1
    precision = (np.arange(1, row.size + 1) - first[row]) / (rank + 1.0)
    ap = np.zeros((n_rows, len(cuts)))
    for i, cut in enumerate(cuts):  # a few K, not a loop over queries
        top = rank < cut
        hits = np.bincount(row[top], minlength=n_rows)
        precision_sum = np.bincount(row[top], weights=precision[top], minlength=n_rows)
        np.divide(precision_sum, hits, out=ap[:, i], where=hits > 0)
    return ap


# --------------------------------------------------------------------------- #
# Averages over queries
# --------------------------------------------------------------------------- #
def _finalize(total: dict[str, np.ndarray], data: _Data, plan: _Plan) -> dict[str, Any]:
    def mean(numerator: np.ndarray, count: np.ndarray | int) -> np.ndarray:
        count = np.asarray(count, dtype=np.float64)
        return np.divide(numerator, count, out=np.full(np.shape(numerator), np.nan), where=count > 0)

    result: dict[str, Any] = {}
    for i, topk in enumerate(plan.topks):
        result[_map_key(topk)] = float(total["ap"][i] / data.n_queries)
    result["k"] = plan.ks.copy()
    if len(plan.ks):
        result["precision@k"] = total["precision@k"] / data.n_queries
        result["recall@k"] = mean(total["recall@k"], total["n_with_relevant"])
    else:
        result["precision@k"], result["recall@k"] = np.zeros(0), np.zeros(0)
    if plan.pr:
        result["pr_radius"] = np.arange(data.n_bits + 1)
        result["pr_precision"] = mean(total["pr_precision"], total["pr_precision_count"])
        result["pr_recall"] = mean(total["pr_recall"], total["n_with_relevant"])
    if plan.tie_aware:
        for i, topk in enumerate(plan.topks):
            result["tie_aware_" + _map_key(topk)] = float(total["tie_aware_ap"][i] / data.n_queries)
    if len(plan.rank_cut):
        result["rank_k"] = plan.rank_cut.copy()
        result["rank_precision"] = total["rank_precision@k"] / data.n_queries
        result["rank_recall"] = mean(total["rank_recall@k"], total["n_with_relevant"])
    if plan.tie_aware:
        for name, cuts in (("", plan.k_cut), ("rank_", plan.rank_cut)):
            if len(cuts):
                key = "rank_" if name else ""
                result[f"tie_aware_{key}precision" + ("" if name else "@k")] = (
                    total[f"tie_aware_{name}precision@k"] / data.n_queries)
                result[f"tie_aware_{key}recall" + ("" if name else "@k")] = mean(
                    total[f"tie_aware_{name}recall@k"], total["n_with_relevant"])
    if plan.per_query:
        for prefix in ("", "tie_aware_") if plan.tie_aware else ("",):
            for i, topk in enumerate(plan.topks):
                result[prefix + _map_key(topk).replace("mAP", "AP")] = total[prefix + "ap_rows"][:, i].copy()
    return result
