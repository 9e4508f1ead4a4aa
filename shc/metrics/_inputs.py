"""Checked inputs and what to compute: validation, the K and cut-offs (:class:`_Plan`), chunk size, workers.

Also the defaults :data:`DEFAULT_KS` and :data:`DEFAULT_RANK_POINTS` and :func:`rank_cutoffs`, the cut-offs
of the rank-based PR curve (the plan needs them, so they live here, below the curves).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shc.metrics._kernel import _backend
from shc.metrics._packing import _Data, _encode_codes
from shc.validation import class_labels, sign_codes, to_numpy

DEFAULT_KS: tuple[int, ...] = (1, *range(5, 501, 5))
"""K = 1, 5, 10, ..., 500: the precision/recall@K curves of the paper (Sec. 4.2)."""

DEFAULT_RANK_POINTS = 200
"""Cut-offs sampled along the ranking for the rank-based PR curve (:func:`rank_cutoffs`)."""

_CHUNK_PAIRS = 3 * 2**20
"""(query, database item) pairs per chunk by default: its largest arrays (8 bytes a
pair) stay below glibc's 32 MiB mmap threshold, so they are reused from the heap
instead of being page-faulted in afresh for every chunk (about 2x faster)."""
_MAX_WORKERS = 4

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
    if isinstance(ks, (int, np.integer, str)) or ks is None:
        raise ValueError(f"ks must be a sequence of cut-offs such as (1, 5, 10); got {ks!r}.")
    ks = np.array([_check_k(k, "each k in ks") for k in ks], dtype=np.int64)
    topk_cut = np.array([data.n_db if k is None else min(k, data.n_db) for k in topks], dtype=np.int64)
    if isinstance(rank_points, (bool, np.bool_)) or not isinstance(rank_points, (int, np.integer)) or rank_points < 0:
        raise ValueError(f"rank_points must be a non-negative integer (0: no rank-based PR curve); got {rank_points!r}.")
    rank_cut = rank_cutoffs(data.n_db, int(rank_points)) if rank_points else np.zeros(0, np.int64)
    if per_query and not topks:
        raise ValueError("per_query=True needs at least one K in topks, e.g. topks=(None,).")
    return _Plan(topks, topk_cut, ks, np.minimum(ks, data.n_db), bool(pr), bool(tie_aware), rank_cut, bool(per_query))


def rank_cutoffs(n_db: int, num_points: int = DEFAULT_RANK_POINTS) -> np.ndarray:
    """Cut-offs 1 <= n <= n_db of the rank-based PR curve: ``num_points`` evenly spaced, rounded, unique.

    The first is 1 and the last ``n_db`` (recall 1 for every query with a relevant item); a database
    with at most ``num_points`` items gives every cut-off 1..n_db.
    """
    n_db, num_points = _check_k(n_db, "n_db"), _check_k(num_points, "num_points")
    if num_points == 1:
        return np.array([n_db], dtype=np.int64)
    return np.unique(np.rint(np.linspace(1, n_db, min(num_points, n_db))).astype(np.int64))


def _check_chunk_size(chunk_size: int | None, n_db: int) -> int:
    if chunk_size is None:
        return max(1, _CHUNK_PAIRS // n_db)
    return _check_k(chunk_size, "chunk_size")


def _check_num_workers(num_workers: int | None) -> int:
    if num_workers is None:
        usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        return min(_MAX_WORKERS, usable or 1)
    return _check_k(num_workers, "num_workers")
