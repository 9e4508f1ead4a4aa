"""Precision-recall curves: by Hamming radius (:func:`pr_curve`) and along the ranking (:func:`rank_pr_curve`).

The cut-offs of the rank-based curve are :func:`shc.metrics._inputs.rank_cutoffs` (re-exported as
``shc.metrics.rank_cutoffs``). Each function is one call of :func:`shc.metrics.onepass.evaluate`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shc.metrics._inputs import DEFAULT_RANK_POINTS
from shc.metrics.onepass import evaluate


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
    if isinstance(num_points, (bool, np.bool_)) or not isinstance(num_points, (int, np.integer)) or num_points < 1:
        raise ValueError(f"num_points must be a positive integer (the number of cut-offs of the curve, default "
                         f"{DEFAULT_RANK_POINTS}); got {num_points!r}.")
    metrics = evaluate(
        query_codes, query_labels, db_codes, db_labels, topks=(), ks=(), pr=False, tie_aware=tie_aware,
        rank_points=num_points, chunk_size=chunk_size, num_workers=num_workers,
    )
    prefix = "tie_aware_" if tie_aware else ""
    return {"rank_k": metrics["rank_k"], "rank_precision": metrics[prefix + "rank_precision"],
            "rank_recall": metrics[prefix + "rank_recall"]}
