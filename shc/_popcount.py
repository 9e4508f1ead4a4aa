"""The one compiled popcount of the package, below both :mod:`shc.metrics` and :mod:`shc.retrieval`.

A 64-bit word's set bits by the SWAR method; LLVM lowers it to the ``POPCNT`` instruction. It is compiled with
``inline="always"`` into the kernels that call it (:mod:`shc.retrieval._kernels`, :mod:`shc.centers._kernels`, the mAP
kernel of :mod:`shc.metrics`), so it costs no call. numba's on-disk cache of a caller notices changes in the caller's own
file only: a change here must come with a change of each caller's file (or ``NUMBA_CACHE_DIR`` cleared).
"""

from __future__ import annotations

import numba

u64 = numba.uint64


@numba.njit(inline="always")
def popcount(x):
    """The number of set bits of the ``uint64`` word ``x``."""
    x = x - ((x >> u64(1)) & u64(0x5555555555555555))
    x = (x & u64(0x3333333333333333)) + ((x >> u64(2)) & u64(0x3333333333333333))
    x = (x + (x >> u64(4))) & u64(0x0F0F0F0F0F0F0F0F)
    return (x * u64(0x0101010101010101)) >> u64(56)
