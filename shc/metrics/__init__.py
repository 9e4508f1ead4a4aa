"""Hamming-ranking retrieval metrics: mAP@K, precision/recall@K, radius- and rank-based PR curves.

The protocol is the one of DeepHash-pytorch's ``CalcTopMap``, which HashNet's, CSQ's
and OrthoHash's code use and the paper's Sec. 4.2 ("Evaluation Measures") cites for its
measures: every query ranks the whole retrieval database by Hamming distance and an
item is *relevant* when it shares at least one label with the query.

Conventions (the same in every function of this package):

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

Modules (``from shc.metrics import ...`` re-exports every public name):

- :mod:`shc.metrics.ranking`: :func:`mean_average_precision`, :func:`precision_recall_at_k`,
  :func:`average_precision_per_query`, :func:`per_class_mean`;
- :mod:`shc.metrics.curves`: :func:`pr_curve` (Hamming radius), :func:`rank_pr_curve` (along the ranking);
- :mod:`shc.metrics.onepass`: :func:`evaluate`, every metric in one chunked pass (what the functions above call);
- :mod:`shc.metrics.tie_aware`: the closed-form expectations over random orders within ties;
- :mod:`shc.metrics._inputs`: validation, the plan of what to compute, :data:`DEFAULT_KS`,
  :data:`DEFAULT_RANK_POINTS`, :func:`rank_cutoffs`;
- :mod:`shc.metrics._packing`: codes packed into 64-bit words, Hamming distances and relevance of a chunk;
- :mod:`shc.metrics._kernel`: the compiled mAP@K kernel (numba, optional; its popcount is
  :mod:`shc._popcount`) and its switch ``SHC_METRICS_BACKEND``.
"""

from __future__ import annotations

from shc.metrics._inputs import DEFAULT_KS, DEFAULT_RANK_POINTS, rank_cutoffs
from shc.metrics.curves import pr_curve, rank_pr_curve
from shc.metrics.onepass import evaluate
from shc.metrics.ranking import (average_precision_per_query, mean_average_precision, per_class_mean,
                                 precision_recall_at_k)

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
