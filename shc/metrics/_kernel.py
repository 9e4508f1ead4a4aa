"""The compiled single-pass mAP@K (numba, optional) and its switch ``SHC_METRICS_BACKEND``.

:func:`_compiled_average_precision` builds the kernel of :func:`_build_kernel` on first use and keeps it in
``_KERNEL`` (None: not tried yet; False: numba is not installed). The kernel takes its popcount from
:mod:`shc._popcount`, the package's one popcount, below both metrics and retrieval.
:func:`shc.metrics.onepass.evaluate` calls it for mAP@K alone on single-label codes, unless
``SHC_METRICS_BACKEND=numpy`` (:func:`_backend`) forces the numpy path.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


_KERNEL: Any = None  # None: not tried yet; False: numba unavailable or disabled

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
    from shc._jit import cached_njit  # numba.njit(cache=True) whose cache saves may fail (full disk)
    from shc._popcount import popcount  # one compiled popcount for the package, below metrics and retrieval

    @cached_njit(parallel=True)
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
