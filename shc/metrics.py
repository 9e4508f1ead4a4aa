"""Hamming-ranking retrieval metrics: mAP@K, precision/recall@K, radius- and rank-based PR curves.

The protocol is the one of DeepHash-pytorch, HashNet, CSQ and OrthoHash, which
the paper follows (Sec. 4.2, "Evaluation Measures"): every query ranks the
whole retrieval database by Hamming distance and an item is *relevant* when it
shares at least one label with the query.

Conventions (the same in every function of this module):

- **Codes** are ``(n_items, n_bits)`` arrays of -1/+1, numpy or torch, any dtype.
  The Hamming distance is ``(q - h_i^T h_j) / 2`` (Theorem 2, "Hamming-Euclid", Eq. 17).
- **Labels** are class indices ``(n_items,)`` or multi-hot ``(n_items, n_classes)``
  of 0/1, the same format for queries and database.
- **Ties** in Hamming distance are broken by database index (a stable sort), so
  results never depend on the sort algorithm, the threads or the CPU.
  ``tie_aware=True`` instead gives the *expected* AP, precision@K, recall@K and
  rank-based PR curve over uniformly random orders within each tie (He et al.,
  "Hashing as Tie-Aware Learning to Rank", CVPR 2018), in closed form. These do
  not depend on the database order at all; the pipeline reports them first
  (docs/evaluation.md says why).
- **AP@K** of one query is the mean, over the relevant items in its top K, of the
  precision at their rank; a query with no relevant item in its top K scores 0
  and still counts in the mean. ``topk=None`` is the whole database (mAP@ALL,
  last item included, unlike the ``gnd[0:-1]`` slicing of some copies of this
  protocol); a K larger than the database means the whole database.
- **Recall** is undefined for a query that has no relevant item in the whole
  database: such queries are left out of every recall average (and precision
  still counts them). **PR-curve precision** at radius r is undefined for a
  query that retrieves nothing within radius r: such queries are left out of
  the precision average at that radius. An average over no query is NaN.
- **Rank-based PR curve** (the paper's PR figures): precision and recall at
  every cut-off n of the ranking (ties by index), i.e. precision@n and
  recall@n, sampled at a few hundred cut-offs from 1 to the database size
  (:func:`rank_cutoffs`); exact at each sampled cut-off.
- **Per-query AP** (``per_query=True``) gives each query's AP@K, in query order,
  so callers can average by class (:func:`per_class_mean`).

Speed: queries are processed in chunks (bounded memory) on a small thread pool;
distances are XOR + popcount of bit-packed codes (an exact float32 matrix
product on numpy < 2.0), the ranking is numpy's radix sort on ``uint8``
distances, and AP@K for every K comes from one pass over the positions of the
relevant items. See ``benchmarks/bench_metrics.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from shc.validation import class_labels, sign_codes, to_numpy

__all__ = [
    "DEFAULT_KS",
    "DEFAULT_RANK_POINTS",
    "average_precision_per_query",
    "evaluate",
    "mean_average_precision",
    "per_class_mean",
    "pr_curve",
    "precision_recall_at_k",
    "rank_cutoffs",
    "rank_pr_curve",
]

DEFAULT_KS: tuple[int, ...] = (1, *range(5, 501, 5))
"""K = 1, 5, 10, ..., 500: the precision/recall@K curves of the paper (Sec. 4.2)."""

DEFAULT_RANK_POINTS = 200
"""Cut-offs sampled along the ranking for the rank-based PR curve (:func:`rank_cutoffs`)."""

_CHUNK_PAIRS = 3 * 2**20
"""(query, database item) pairs per chunk by default: its largest arrays (8 bytes a
pair) stay below glibc's 32 MiB mmap threshold, so they are reused from the heap
instead of being page-faulted in afresh for every chunk (about 2x faster)."""
_MAX_WORKERS = 4
_HAS_POPCOUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0


# --------------------------------------------------------------------------- #
# Public API
# --------------------------------------------------------------------------- #
def mean_average_precision(
    query_codes: Any,
    query_labels: Any,
    db_codes: Any,
    db_labels: Any,
    topk: int | None = None,
    *,
    tie_aware: bool = False,
    chunk_size: int | None = None,
    num_workers: int | None = None,
) -> float:
    """Mean average precision over the top ``topk`` of the Hamming ranking.

    Parameters
    ----------
    query_codes, db_codes : array or tensor, shape (n_queries, q) and (n_db, q)
        Hash codes of -1/+1 (any dtype).
    query_labels, db_labels : array or tensor
        Class indices, shape (n,), or multi-hot 0/1, shape (n, n_classes).
    topk : int or None
        K of mAP@K; None (or K >= n_db) ranks the whole database (mAP@ALL).
    tie_aware : bool
        If True, the expected AP over random orders within Hamming-distance ties
        (He et al., CVPR 2018) instead of ties broken by database index.
    chunk_size : int, optional
        Queries per chunk; default about 3 million / n_db (about 60 MB of
        working memory per worker).
    num_workers : int, optional
        Threads working on chunks (numpy's sort releases the GIL); default
        min(4, usable CPUs). Results do not depend on it.

    Returns
    -------
    float
        mAP@K in [0, 1].
    """
    key = _map_key(topk)
    metrics = evaluate(
        query_codes, query_labels, db_codes, db_labels,
        topks=(topk,), ks=(), pr=False, tie_aware=tie_aware,
        chunk_size=chunk_size, num_workers=num_workers,
    )
    return metrics["tie_aware_" + key if tie_aware else key]


def precision_recall_at_k(
    query_codes: Any,
    query_labels: Any,
    db_codes: Any,
    db_labels: Any,
    ks: Iterable[int] = DEFAULT_KS,
    *,
    tie_aware: bool = False,
    chunk_size: int | None = None,
    num_workers: int | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Precision@K and recall@K of the Hamming ranking, for every K in ``ks``.

    Precision@K is (relevant items in the top K) / K, with K clipped to the
    database size; every query counts. Recall@K divides by all relevant items
    in the database; queries without any are left out (NaN if none has one).
    ``tie_aware=True`` gives their expectations over uniformly random orders within
    Hamming-distance ties (closed form, see :func:`_expected_hits`) instead of ties
    by database index. Other arguments as in :func:`mean_average_precision`.

    Returns
    -------
    precision, recall : np.ndarray of float64, shape (len(ks),)
    """
    metrics = evaluate(
        query_codes, query_labels, db_codes, db_labels,
        topks=(), ks=ks, pr=False, tie_aware=tie_aware, chunk_size=chunk_size, num_workers=num_workers,
    )
    prefix = "tie_aware_" if tie_aware else ""
    return metrics[prefix + "precision@k"], metrics[prefix + "recall@k"]


def pr_curve(
    query_codes: Any,
    query_labels: Any,
    db_codes: Any,
    db_labels: Any,
    *,
    chunk_size: int | None = None,
    num_workers: int | None = None,
) -> dict[str, np.ndarray]:
    """Precision-recall curve of Hamming-radius retrieval, radius 0..q.

    At radius r a query retrieves every item at Hamming distance <= r.
    Precision is averaged over the queries that retrieve at least one item at
    that radius, recall over the queries with at least one relevant item in the
    database (NaN where no query qualifies). Arguments as in
    :func:`mean_average_precision`.

    Returns
    -------
    dict
        ``"pr_radius"`` (int, 0..q), ``"pr_precision"`` and ``"pr_recall"``
        (float64), each of shape (q + 1,).
    """
    metrics = evaluate(
        query_codes, query_labels, db_codes, db_labels,
        topks=(), ks=(), pr=True, chunk_size=chunk_size, num_workers=num_workers,
    )
    return {key: metrics[key] for key in ("pr_radius", "pr_precision", "pr_recall")}


def rank_cutoffs(n_db: int, num_points: int = DEFAULT_RANK_POINTS) -> np.ndarray:
    """Cut-offs 1 <= n <= n_db of the rank-based PR curve: ``num_points`` evenly spaced, rounded, unique.

    The first is 1 and the last ``n_db`` (recall 1 for every query with a relevant item); a database
    with at most ``num_points`` items gives every cut-off 1..n_db.
    """
    n_db, num_points = _check_k(n_db, "n_db"), _check_k(num_points, "num_points")
    if num_points == 1:
        return np.array([n_db], dtype=np.int64)
    return np.unique(np.rint(np.linspace(1, n_db, min(num_points, n_db))).astype(np.int64))


def rank_pr_curve(
    query_codes: Any,
    query_labels: Any,
    db_codes: Any,
    db_labels: Any,
    num_points: int = DEFAULT_RANK_POINTS,
    *,
    tie_aware: bool = False,
    chunk_size: int | None = None,
    num_workers: int | None = None,
) -> dict[str, np.ndarray]:
    """Precision-recall curve of the Hamming *ranking* (ties by database index), as in the paper's figures.

    ``tie_aware=True`` gives the expected curve over random orders within ties (closed form).

    At cut-off n every query retrieves its top n items: precision is (relevant in the top n) / n over
    all queries, recall (relevant in the top n) / (relevant in the database) over the queries with a
    relevant item. Exact at each of the cut-offs of :func:`rank_cutoffs`; computed in the same chunked
    pass as :func:`precision_recall_at_k`. Other arguments as in :func:`mean_average_precision`.

    Returns
    -------
    dict
        ``"rank_k"`` (int cut-offs), ``"rank_precision"``, ``"rank_recall"`` (float64), equal shapes.
    """
    metrics = evaluate(
        query_codes, query_labels, db_codes, db_labels, topks=(), ks=(), pr=False, tie_aware=tie_aware,
        rank_points=num_points, chunk_size=chunk_size, num_workers=num_workers,
    )
    prefix = "tie_aware_" if tie_aware else ""
    return {"rank_k": metrics["rank_k"], "rank_precision": metrics[prefix + "rank_precision"],
            "rank_recall": metrics[prefix + "rank_recall"]}


def average_precision_per_query(query_codes: Any, query_labels: Any, db_codes: Any, db_labels: Any,
                                topk: int | None = None, *, tie_aware: bool = False, **options: Any) -> np.ndarray:
    """AP@K of every query, in query order: the terms whose mean is :func:`mean_average_precision`.

    Average them by class with :func:`per_class_mean` (per-class AP). Arguments, and the keyword
    ``options`` (``chunk_size``, ``num_workers``), as in :func:`mean_average_precision`.

    Returns
    -------
    np.ndarray of float64, shape (n_queries,)
    """
    unknown = sorted(set(options) - {"chunk_size", "num_workers"})
    if unknown:
        raise TypeError(f"average_precision_per_query got unknown option(s) {unknown}; "
                        "it takes tie_aware, chunk_size and num_workers.")
    key = ("tie_aware_" if tie_aware else "") + _map_key(topk).replace("mAP", "AP")
    metrics = evaluate(query_codes, query_labels, db_codes, db_labels, topks=(topk,), ks=(), pr=False,
                       tie_aware=tie_aware, per_query=True, **options)
    return metrics[key]


def per_class_mean(values: Any, labels: Any, num_classes: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean of a per-query value (e.g. AP from :func:`average_precision_per_query`) over each class's queries.

    Parameters
    ----------
    values : (n_queries,) array
    labels : (n_queries,) class indices or (n_queries, C) multi-hot 0/1
        A multi-label query counts towards each of its classes.
    num_classes : int, optional
        C; default ``max(label) + 1`` (class indices) or the number of columns (multi-hot).

    Returns
    -------
    means, counts : (C,) float64 and int64 arrays
        The mean over the class's queries (NaN for a class without query) and how many there were.
    """
    values = np.asarray(_to_numpy(values, "values"), dtype=np.float64)
    labels = _to_numpy(labels, "labels")
    if values.ndim != 1 or labels.shape[:1] != values.shape:
        raise ValueError(f"values must be (n,) and labels (n,) or (n, C) with the same n; got {values.shape} "
                         f"and {labels.shape}.")  # fmt: skip
    if labels.ndim == 1:
        if not np.issubdtype(labels.dtype, np.integer) or (labels.size and labels.min() < 0):
            raise ValueError("1-D labels must be non-negative integer class indices.")
        size = int(labels.max(initial=-1)) + 1 if num_classes is None else _check_k(num_classes, "num_classes")
        if labels.size and labels.max() >= size:
            raise ValueError(f"label {labels.max()} is out of range for num_classes={size}.")
        counts = np.bincount(labels, minlength=size)
        sums = np.bincount(labels, weights=values, minlength=size)
    elif labels.ndim == 2:
        if num_classes is not None and num_classes != labels.shape[1]:
            raise ValueError(f"num_classes={num_classes} but the multi-hot labels have {labels.shape[1]} columns.")
        member = labels.astype(np.float64)
        counts = member.sum(axis=0).astype(np.int64)
        sums = values @ member
    else:
        raise ValueError(f"labels must be (n,) or (n, C); got shape {labels.shape}.")
    return np.divide(sums, counts, out=np.full(counts.shape, np.nan), where=counts > 0), counts


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


# --------------------------------------------------------------------------- #
# Validation
# --------------------------------------------------------------------------- #
@dataclass(frozen=True)
class _Data:
    """Validated inputs, in the layouts the chunk kernel uses."""

    query_codes: np.ndarray  # (n_queries, n_words) packed bits, see _encode_codes
    db_codes: np.ndarray  # (n_words, n_db)
    query_labels: np.ndarray  # (n_queries,) class ids or (n_queries, C) float32 0/1
    db_labels: np.ndarray
    n_bits: int

    @property
    def n_queries(self) -> int:
        return self.query_codes.shape[0]

    @property
    def n_db(self) -> int:
        return self.db_codes.shape[1]

    @property
    def single_label(self) -> bool:
        return self.query_labels.ndim == 1


_to_numpy = to_numpy


def _check_codes(codes: Any, name: str) -> np.ndarray:
    return sign_codes(codes, name)


def _check_labels(labels: Any, name: str, n_items: int, codes_name: str) -> np.ndarray:
    return class_labels(labels, name, n_items=n_items, items_name=codes_name)


def _validate(query_codes: Any, query_labels: Any, db_codes: Any, db_labels: Any) -> _Data:
    _backend()  # a misspelt SHC_METRICS_BACKEND is an error, not a silent default
    qc = _check_codes(query_codes, "query_codes")
    dc = _check_codes(db_codes, "db_codes")
    if qc.shape[1] != dc.shape[1]:
        raise ValueError(
            f"query_codes have {qc.shape[1]} bits but db_codes have {dc.shape[1]};"
            " encode queries and database with the same model."
        )
    ql = _check_labels(query_labels, "query_labels", qc.shape[0], "query_codes")
    dl = _check_labels(db_labels, "db_labels", dc.shape[0], "db_codes")
    if ql.ndim != dl.ndim:
        raise ValueError(
            f"query_labels are {'class indices' if ql.ndim == 1 else 'multi-hot'} but db_labels are"
            f" {'class indices' if dl.ndim == 1 else 'multi-hot'}; use the same label format for both."
        )
    if ql.ndim == 2:
        if ql.shape[1] != dl.shape[1]:
            raise ValueError(
                f"query_labels have {ql.shape[1]} classes but db_labels have {dl.shape[1]};"
                " multi-hot labels must share the same classes (columns)."
            )
        if np.all(ql.sum(axis=1) == 1) and np.all(dl.sum(axis=1) == 1):
            ql, dl = ql.argmax(axis=1), dl.argmax(axis=1)  # one-hot: same relevance, faster
        else:
            ql, dl = ql.astype(np.float32), dl.astype(np.float32)

    return _Data(*_encode_codes(qc, dc), ql, dl, qc.shape[1])


def _encode_codes(query: np.ndarray, db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """-1/+1 codes in the layout of ``_hamming_distances``.

    numpy >= 2.0: bits packed into 64-bit words, queries (n_queries, n_words) and
    database (n_words, n_db), for XOR + popcount. Older numpy: ``[-a / 2, q / 2]``
    and ``[b, 1]``, whose product is ``(q - a.b) / 2``, the Hamming distance (Eq. 17),
    exact in float32 (every partial sum is a multiple of 1/2 below 2**22).
    """
    n_bits = query.shape[1]
    if _HAS_POPCOUNT:
        n_words = -(-n_bits // 64)

        def pack(codes: np.ndarray) -> np.ndarray:
            padded = np.zeros((codes.shape[0], 8 * n_words), np.uint8)
            padded[:, : -(-n_bits // 8)] = np.packbits(codes > 0, axis=1)
            return padded.view(np.uint64)

        return pack(query), np.ascontiguousarray(pack(db).T)
    dtype = np.float32 if n_bits < 2**22 else np.float64
    query_aug = np.empty((query.shape[0], n_bits + 1), dtype)
    np.multiply(query, -0.5, out=query_aug[:, :n_bits], casting="unsafe")
    query_aug[:, n_bits] = n_bits / 2
    db_aug = np.ones((db.shape[0], n_bits + 1), dtype)
    db_aug[:, :n_bits] = db
    return query_aug, np.ascontiguousarray(db_aug.T)


def _map_key(topk: int | None) -> str:
    return "mAP@ALL" if topk is None else f"mAP@{topk}"


def _check_k(k: Any, name: str) -> int:
    if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"{name} must be a positive integer; got {k!r}.")
    return int(k)


@dataclass(frozen=True)
class _Plan:
    """What to compute, with every K already clipped to the database size."""

    topks: tuple[int | None, ...]  # as requested (names the keys)
    topk_cut: np.ndarray  # (n_topks,) int: K clipped to n_db
    ks: np.ndarray  # (n_ks,) int as requested
    k_cut: np.ndarray  # (n_ks,) int: K clipped to n_db
    pr: bool
    tie_aware: bool
    rank_cut: np.ndarray  # (n_points,) int: cut-offs of the rank-based PR curve, empty if not asked for
    per_query: bool

    @property
    def needs_histograms(self) -> bool:
        return self.pr or (self.tie_aware and len(self.topk_cut) + len(self.k_cut) + len(self.rank_cut) > 0)


def _plan(data: _Data, topks: Sequence[int | None], ks: Iterable[int], pr: bool, tie_aware: bool,
          rank_points: int = 0, per_query: bool = False) -> _Plan:
    if isinstance(topks, (int, np.integer)) or topks is None:
        raise ValueError(f"topks must be a sequence such as (100, 1000, None); got {topks!r}.")
    topks = tuple(None if k is None else _check_k(k, "each topk") for k in topks)
    if len(set(topks)) != len(topks):
        raise ValueError(f"topks has duplicates: {topks}; list each K once.")
    ks = np.array([_check_k(k, "each k in ks") for k in ks], dtype=np.int64)
    topk_cut = np.array([data.n_db if k is None else min(k, data.n_db) for k in topks], dtype=np.int64)
    if isinstance(rank_points, (bool, np.bool_)) or not isinstance(rank_points, (int, np.integer)) or rank_points < 0:
        raise ValueError(f"rank_points must be a non-negative integer (0: no rank-based PR curve); got {rank_points!r}.")
    rank_cut = rank_cutoffs(data.n_db, int(rank_points)) if rank_points else np.zeros(0, np.int64)
    if per_query and not topks:
        raise ValueError("per_query=True needs at least one K in topks, e.g. topks=(None,).")
    return _Plan(topks, topk_cut, ks, np.minimum(ks, data.n_db), bool(pr), bool(tie_aware), rank_cut, bool(per_query))


def _check_chunk_size(chunk_size: int | None, n_db: int) -> int:
    if chunk_size is None:
        return max(1, _CHUNK_PAIRS // n_db)
    return _check_k(chunk_size, "chunk_size")


def _check_num_workers(num_workers: int | None) -> int:
    if num_workers is None:
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return min(_MAX_WORKERS, usable or 1)
    return _check_k(num_workers, "num_workers")


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


def _hamming_distances(data: _Data, rows: slice) -> np.ndarray:
    """(chunk, n_db) Hamming distances in the smallest unsigned dtype (radix-sortable)."""
    query = data.query_codes[rows]
    shape = (query.shape[0], data.n_db)
    dtype = np.uint8 if data.n_bits < 2**8 else np.uint16 if data.n_bits < 2**16 else np.uint32
    if data.db_codes.dtype != np.uint64:  # numpy < 2.0: one exact float product
        return (query @ data.db_codes).astype(dtype)
    xor = np.empty(shape, np.uint64)
    if query.shape[1] == 1:  # q <= 64: one word, the popcount is the distance
        np.bitwise_xor(query[:, 0, None], data.db_codes[0], out=xor)
        return np.bitwise_count(xor).astype(dtype, copy=False)
    distances = np.zeros(shape, dtype)
    for word in range(query.shape[1]):  # ceil(q / 64) words
        np.bitwise_xor(query[:, word, None], data.db_codes[word], out=xor)
        distances += np.bitwise_count(xor)
    return distances


def _relevance(data: _Data, rows: slice) -> np.ndarray:
    """(chunk, n_db) bool: the query and the item share at least one label."""
    if data.single_label:
        return data.query_labels[rows, None] == data.db_labels[None, :]
    return (data.query_labels[rows] @ data.db_labels.T) > 0  # shared-label counts, exact in float32


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


def _distance_histograms(
    ranked_distances: np.ndarray, row: np.ndarray, ranked: np.ndarray, n_bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """(chunk, q + 1) counts of all items and of relevant items at each Hamming distance.

    ``ranked_distances`` are each row's distances in ranking order (non-decreasing),
    ``row`` and ``ranked`` the rows and flat ranked positions of the relevant items.
    """
    n_rows, n_db = ranked_distances.shape
    n_values = n_bits + 1
    # Items within distance r: a run of equal distances ends where the next one differs and at the row's end.
    run_row, run_end = np.divmod(np.flatnonzero(ranked_distances[:, 1:] != ranked_distances[:, :-1]), max(n_db - 1, 1))
    within = np.zeros((n_rows, n_values), np.int64)
    within[run_row, ranked_distances[run_row, run_end]] = run_end + 1
    within[np.arange(n_rows), ranked_distances[:, -1]] = n_db
    np.maximum.accumulate(within, axis=1, out=within)  # fill in the distances no item has
    n_at = np.diff(within, axis=1, prepend=0)
    relevant_keys = row * n_values + ranked_distances.ravel()[ranked]
    relevant_at = np.bincount(relevant_keys, minlength=n_rows * n_values).reshape(n_rows, n_values)
    return n_at, relevant_at


# --------------------------------------------------------------------------- #
# Tie-aware AP (He et al., CVPR 2018; McSherry & Najork, ECIR 2008)
# --------------------------------------------------------------------------- #
def _tie_aware_average_precision(n_at: np.ndarray, relevant_at: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """(chunk, n_topks) expected AP@K over uniformly random orders within each tie.

    A tie group of n items (r relevant) follows N items (R relevant). If h of
    its first m positions hold relevant items, position i of the group is
    relevant with probability h / m and then has (i - 1)(h - 1) / (m - 1)
    relevant items before it in the group on average, so the expected sum of
    precisions over those m positions is (``_expected_precision_sum``)

        (h / m) [(R + 1) A + (h - 1) / (m - 1) B],
        A = sum_i 1 / (N + i),  B = sum_i (i - 1) / (N + i) = m - (N + 1) A.

    Groups inside the top K contribute with m = n, h = r. The group cut by K
    has a hypergeometric h, which also changes AP@K's denominator (relevant
    items in the top K), so its expectation is summed over h exactly.
    """
    from scipy.special import digamma

    n_at = n_at.astype(np.float64)
    relevant_at = relevant_at.astype(np.float64)
    before = np.cumsum(n_at, axis=1) - n_at  # N of each group
    relevant_before = np.cumsum(relevant_at, axis=1) - relevant_at  # R of each group
    harmonic = digamma(np.arange(1.0, n_at.sum(axis=1).max() + 2.0)) + np.euler_gamma  # H_0, H_1, ...
    group_sums = _expected_precision_sum(before, relevant_before, n_at, relevant_at, harmonic)

    ap = np.zeros((n_at.shape[0], len(cuts)))
    for i, cut in enumerate(cuts):  # a few K, not a loop over queries
        inside = before + n_at <= cut
        precision_sum = np.where(inside, group_sums, 0.0).sum(axis=1)
        hits = np.where(inside, relevant_at, 0.0).sum(axis=1)
        np.divide(precision_sum, hits, out=ap[:, i], where=hits > 0)
        split_row, split_group = np.nonzero((before < cut) & (before + n_at > cut))  # <= 1 per row
        if split_row.size:
            ap[split_row, i] = _expected_ap_with_split_group(
                precision_sum[split_row],
                hits[split_row],
                before[split_row, split_group],
                n_at[split_row, split_group],
                relevant_at[split_row, split_group],
                cut,
                harmonic,
            )
    return ap


def _expected_hits(n_at: np.ndarray, relevant_at: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """(chunk, n_cuts) expected relevant items in the top K over uniformly random orders within each tie.

    The tie group holding rank K (N items, R relevant before it; n items, r relevant in it) puts a
    hypergeometric number of its relevant items into its first K - N positions, with mean
    (K - N) r / n; the groups before it count whole. So the expectation interpolates the cumulative
    relevant count linearly between the group boundaries. Exact; no sort, no sampling.
    """
    n_rows, n_values = n_at.shape
    within = np.cumsum(n_at, axis=1)  # items at distance <= d, non-decreasing per row, last = n_db
    relevant_within = np.cumsum(relevant_at, axis=1)
    stride = int(within[:, -1].max(initial=0)) + 1
    offsets = np.arange(n_rows)[:, None] * stride  # rows laid end to end stay sorted
    group = np.searchsorted((within + offsets).ravel(), (cuts[None, :] + offsets).ravel(), side="left")
    group = group.reshape(n_rows, len(cuts))  # flat index of the group holding rank K (within >= K first)
    size = n_at.ravel()[group]
    before = within.ravel()[group] - size
    relevant_before = relevant_within.ravel()[group] - relevant_at.ravel()[group]
    return relevant_before + (cuts[None, :] - before) * relevant_at.ravel()[group] / size


def _expected_precision_sum(
    before: np.ndarray, relevant_before: np.ndarray, m: np.ndarray, h: np.ndarray, harmonic: np.ndarray
) -> np.ndarray:
    """Expected sum of precisions over the first m positions of a tie group holding h relevant ones."""
    start = before.astype(np.int64)
    a = harmonic[start + m.astype(np.int64)] - harmonic[start]
    b = m - (before + 1) * a
    first = np.divide(h, m, out=np.zeros_like(a), where=m > 0)
    pair = np.divide(h - 1, m - 1, out=np.zeros_like(a), where=m > 1)
    return first * ((relevant_before + 1) * a + pair * b)


def _expected_ap_with_split_group(
    precision_sum: np.ndarray,
    hits: np.ndarray,
    before: np.ndarray,
    size: np.ndarray,
    n_relevant: np.ndarray,
    cut: int,
    harmonic: np.ndarray,
) -> np.ndarray:
    """E[AP@K] for queries whose tie group at rank K is cut: sum over h ~ Hypergeometric."""
    from scipy.special import gammaln

    m = cut - before  # positions of the cut group inside the top K
    low = np.maximum(0.0, m - (size - n_relevant))
    high = np.minimum(n_relevant, m)
    h = low[:, None] + np.arange(int((high - low).max()) + 1)  # (rows, support)
    valid = h <= high[:, None]
    h = np.where(valid, h, low[:, None])

    def log_binomial(n: np.ndarray, k: np.ndarray) -> np.ndarray:
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)

    log_pmf = (
        log_binomial(n_relevant[:, None], h)
        + log_binomial((size - n_relevant)[:, None], m[:, None] - h)
        - log_binomial(size, m)[:, None]
    )
    pmf = np.where(valid, np.exp(log_pmf), 0.0)
    before, hits, m = (np.broadcast_to(x[:, None], h.shape) for x in (before, hits, m))
    split_sum = _expected_precision_sum(before, hits, m, h, harmonic)
    total_hits = hits + h
    ap = np.divide(precision_sum[:, None] + split_sum, total_hits, out=np.zeros_like(pmf), where=total_hits > 0)
    return (pmf * ap).sum(axis=1)


# --------------------------------------------------------------------------- #
# Compiled single-pass mAP (numba, optional)
# --------------------------------------------------------------------------- #
_KERNEL: Any = None  # None: not tried yet; False: numba unavailable or disabled


def _kernel_applies(data: _Data, plan: _Plan) -> bool:
    return (data.single_label and data.db_codes.dtype == np.uint64 and not len(plan.ks) and not plan.pr
            and not plan.tie_aware and not len(plan.rank_cut)
            and _backend() != "numpy")


_BACKENDS = ("auto", "numpy")


def _backend() -> str:
    """``SHC_METRICS_BACKEND``: "auto" (numba kernel where it applies, the default) or "numpy"."""
    value = os.environ.get("SHC_METRICS_BACKEND", "auto")
    if value not in _BACKENDS:
        raise ValueError(f"SHC_METRICS_BACKEND={value!r} is not a backend; use one of {_BACKENDS} (or unset it).")
    return value


def _compiled_average_precision() -> Any:
    """The per-query AP@K kernel, compiled by numba on first use (None where numba is not installed).

    For each query it makes two passes over the database and needs no sort: a histogram of the Hamming
    distances gives where each distance's block starts in the ranking, and a second pass in index
    order gives each item its rank ``start[d] + (items of distance d seen so far)``: exactly the
    stable order of the numpy path (ties by database index). AP@K then follows from the sorted ranks
    of the relevant items. Queries run in parallel (``numba.prange``).
    Set ``SHC_METRICS_BACKEND=numpy`` to force the numpy path.
    """
    global _KERNEL
    if _KERNEL is None:
        try:
            import numba
        except ImportError:
            _KERNEL = False
            return None
        _KERNEL = _build_kernel(numba)
    return _KERNEL or None


def _build_kernel(numba: Any) -> Any:
    from shc._popcount import popcount  # one compiled popcount for the package, below metrics and retrieval

    @numba.njit(parallel=True, cache=True)
    def average_precision(query_codes, db_codes, query_labels, db_labels, cuts):
        n_queries, n_words = query_codes.shape
        n_db = db_codes.shape[0]
        n_values = 64 * n_words + 1
        ap = np.zeros((n_queries, cuts.shape[0]))
        for i in numba.prange(n_queries):
            distances = np.empty(n_db, np.int64)
            start = np.zeros(n_values + 1, np.int64)
            for j in range(n_db):
                d = 0
                for w in range(n_words):
                    d += popcount(query_codes[i, w] ^ db_codes[j, w])
                distances[j] = d
                start[d + 1] += 1
            for v in range(n_values):
                start[v + 1] += start[v]  # start[v]: items closer than distance v
            ranks = np.empty(n_db, np.int64)
            n_relevant = 0
            for j in range(n_db):
                d = distances[j]
                if query_labels[i] == db_labels[j]:
                    ranks[n_relevant] = start[d]
                    n_relevant += 1
                start[d] += 1
            ranks = np.sort(ranks[:n_relevant])
            for t in range(cuts.shape[0]):
                hits, total = 0, 0.0
                for h in range(n_relevant):
                    if ranks[h] < cuts[t]:
                        hits += 1
                        total += hits / (ranks[h] + 1.0)
                if hits > 0:
                    ap[i, t] = total / hits
        return ap

    return average_precision


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
