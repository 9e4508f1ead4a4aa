"""mAP@K, precision@K and recall@K of the Hamming ranking; per-query AP and its per-class means.

Ties by database index, or ``tie_aware=True`` for the expectations over random orders within ties
(:mod:`shc.metrics.tie_aware`). Each function is one call of :func:`shc.metrics.onepass.evaluate`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from shc.metrics._inputs import DEFAULT_KS, _check_k, _map_key, _to_numpy
from shc.metrics.onepass import evaluate


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
    Hamming-distance ties (closed form, see :func:`~shc.metrics.tie_aware._expected_hits`) instead of ties
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
