"""The one way the package compiles a cached numba kernel: :func:`cached_njit`.

numba's on-disk cache (``cache=True``) saves each compiled signature beside the source (or in a user cache folder
where the source is read-only), so the next process loads it instead of compiling again. numba lets a failed save
end the call: on a full disk, a quota or a file-size limit, ``shc search`` died with ``File too large`` naming no
file, before it reached the file the user asked for. The cache is only a speed-up, so here a save that fails with
an ``OSError`` is dropped: the kernel is compiled, it runs, and the next process compiles it again. numba writes
its cache files through a temporary name and a rename, so a dropped save leaves no partial file behind.
"""

from __future__ import annotations

from typing import Any, Callable

import numba
from numba.core.caching import FunctionCache


class _BestEffortCache(FunctionCache):
    """numba's per-function disk cache whose saves may fail without failing the call."""

    def save_overload(self, sig: Any, data: Any) -> None:
        try:
            super().save_overload(sig, data)
        except OSError:
            pass  # the compiled kernel is in memory already; only the next process's head start is lost


def cached_njit(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit(cache=True, **options)`` whose disk cache is best effort (module docstring)."""

    def decorate(function: Callable[..., Any]) -> Any:
        dispatcher = numba.njit(cache=True, **options)(function)
        dispatcher._cache = _BestEffortCache(dispatcher.py_func)  # numba's own enable_caching(), with our class
        return dispatcher

    return decorate
