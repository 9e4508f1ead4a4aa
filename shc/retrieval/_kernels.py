"""Compiled (numba) kernels of :mod:`shc.retrieval`: exact Hamming top-k by counting selection, Hamming-ball
lookups, and multi-index hashing.

Codes are ``(n, w)`` uint64 arrays (``w = ceil(q / 64)`` words, padding bits zero); the Hamming distance of
two codes is the popcount of their XOR. All kernels run queries in parallel (``numba.prange``) and never hold
a query x database distance matrix.
"""

from __future__ import annotations

import numba
import numpy as np

from shc._jit import cached_njit  # numba.njit(cache=True) whose cache saves may fail (full disk)
from shc._popcount import popcount  # inlined (shc._popcount: its cache note)

u64 = numba.uint64

QUERY_BLOCK = 16
"""Queries that share one pass over a database tile (the tile is read from cache QUERY_BLOCK times)."""
TILE_ROWS = 2048
"""Database rows per tile: 2,048 x 64-bit codes = 16 KiB, inside the L1/L2 cache."""


@numba.njit(inline="always")
def _distance(a, b, n_words):
    d = 0
    for w in range(n_words):
        d += popcount(a[w] ^ b[w])
    return d


@cached_njit(parallel=True)
def distance_histograms(database, queries):
    """``(Q, 64 w + 1)`` int64: for each query, how many database codes lie at each Hamming distance.

    Queries are taken in blocks of QUERY_BLOCK that walk the database tile by tile together, so each tile
    is read from memory once per block. Four interleaved histograms per query break the store-to-load
    dependency of consecutive equal distances.
    """
    n_queries, n_words = queries.shape
    n_db = database.shape[0]
    n_values = 64 * n_words + 1
    hist = np.zeros((n_queries, n_values), np.int64)
    n_blocks = (n_queries + QUERY_BLOCK - 1) // QUERY_BLOCK
    for b in numba.prange(n_blocks):
        q0 = b * QUERY_BLOCK
        q1 = min(n_queries, q0 + QUERY_BLOCK)
        local = np.zeros((q1 - q0, 4, n_values), np.int64)
        for t0 in range(0, n_db, TILE_ROWS):
            t1 = min(n_db, t0 + TILE_ROWS)
            for i in range(q0, q1):
                h = local[i - q0]
                query = queries[i]
                j = t0
                while j + 4 <= t1:
                    h[0, _distance(query, database[j], n_words)] += 1
                    h[1, _distance(query, database[j + 1], n_words)] += 1
                    h[2, _distance(query, database[j + 2], n_words)] += 1
                    h[3, _distance(query, database[j + 3], n_words)] += 1
                    j += 4
                while j < t1:
                    h[0, _distance(query, database[j], n_words)] += 1
                    j += 1
        for i in range(q0, q1):
            for v in range(n_values):
                hist[i, v] = local[i - q0, 0, v] + local[i - q0, 1, v] + local[i - q0, 2, v] + local[i - q0, 3, v]
    return hist


@cached_njit(parallel=True)
def place(database, queries, cutoff, take_at_cutoff, starts, out_rows, out_distances):
    """Second pass of the counting selection: write each selected row at its final position.

    A query keeps every row at distance ``< cutoff[i]`` and the first ``take_at_cutoff[i]`` rows (in row
    order) at distance ``cutoff[i]``; ``starts[i, d]`` is where its rows at distance ``d`` begin in
    ``out_rows`` / ``out_distances``. Rows are visited in increasing order, so each distance's rows come
    out in row order: the result is sorted by (distance, row) without a sort.
    """
    n_queries, n_words = queries.shape
    n_db = database.shape[0]
    n_blocks = (n_queries + QUERY_BLOCK - 1) // QUERY_BLOCK
    for b in numba.prange(n_blocks):
        q0 = b * QUERY_BLOCK
        q1 = min(n_queries, q0 + QUERY_BLOCK)
        position = starts[q0:q1].copy()
        remaining = take_at_cutoff[q0:q1].copy()
        for t0 in range(0, n_db, TILE_ROWS):
            t1 = min(n_db, t0 + TILE_ROWS)
            for i in range(q0, q1):
                limit = cutoff[i]
                query = queries[i]
                for j in range(t0, t1):
                    d = _distance(query, database[j], n_words)
                    if d <= limit:
                        if d < limit or remaining[i - q0] > 0:
                            if d == limit:
                                remaining[i - q0] -= 1
                            p = position[i - q0, d]
                            out_rows[p] = j
                            out_distances[p] = d
                            position[i - q0, d] = p + 1


@numba.njit(inline="always")
def _keep_first_k(found_d, found_row, n_found, hist, k):
    """Keep the first k buffered codes in (distance, row) order, in place; returns the k-th distance D.

    The buffer is in row order, so the codes at distance D kept are the first ones met. ``hist`` counts the
    buffered codes per distance and is updated.
    """
    cut = _kth_distance(hist, k)
    room = k
    for d in range(cut):
        room -= hist[d]
    kept = 0
    for c in range(n_found):
        d = found_d[c]
        if d < cut or (d == cut and room > 0):
            if d == cut:
                room -= 1
            found_d[kept] = d
            found_row[kept] = found_row[c]
            kept += 1
    for d in range(cut + 1, hist.shape[0]):
        hist[d] = 0
    hist[cut] = 0
    for c in range(kept):
        if found_d[c] == cut:
            hist[cut] += 1
    return cut, kept


CHUNK = 64
"""Rows whose distances are first only *counted* against the current bound, in a branch-free loop of fixed
length that LLVM vectorises; a chunk with no code within the bound (nearly all, once the top k has filled)
is skipped without touching the selection buffers."""


@numba.njit(inline="always")
def _hits(query, flat, c0, n_words, bound):
    """How many of the CHUNK rows from ``c0`` lie within ``bound`` of the query (no branch per row).

    ``flat`` is the database as one contiguous 1-D array of words (row j's words at ``j * n_words``). The
    indices are unsigned on purpose: numba wraps negative signed indices around, and that per-element select
    turned the loads into gathers (``vpgatherqq``); with unsigned indices LLVM emits contiguous vector loads,
    ``vpopcntq`` and a vector compare (2-3x faster on AVX-512). ``bound < 0`` (k codes at distance 0
    already) admits nothing."""
    hits = np.int64(0)
    if bound < 0:
        return hits
    limit = u64(bound)
    base = u64(c0) * u64(n_words)
    if n_words == 1:
        word = query[0]
        for j in range(CHUNK):
            hits += np.int64(popcount(word ^ flat[base + u64(j)]) <= limit)
    elif n_words == 2:
        w0, w1 = query[0], query[1]
        for j in range(CHUNK):
            d = popcount(w0 ^ flat[base + u64(2 * j)]) + popcount(w1 ^ flat[base + u64(2 * j + 1)])
            hits += np.int64(d <= limit)
    else:
        for j in range(CHUNK):
            d = u64(0)
            for w in range(n_words):
                d += popcount(query[w] ^ flat[base + u64(j * n_words + w)])
            hits += np.int64(d <= limit)
    return hits


@cached_njit(parallel=True)
def topk_select(database, queries, k, out_rows, out_distances):
    """Exact top-k of every query, sorted by (distance, row), in one pass over the database (``k <= n_db``).

    Each query buffers, in row order, the codes that can still enter its top k: every code at first, then,
    once k are known, only codes strictly closer than the current k-th distance D (a later code at distance D
    loses the tie to the k already held, which have smaller rows). When the buffer holds more than 2k codes it
    is cut back to its first k in (distance, row) order and D drops. The database is read CHUNK rows at a
    time: a branch-free count of the rows within the bound first, and only a chunk with a hit is walked row by
    row into the buffer. A final counting sort by distance (q + 1 values, stable) orders the k results.
    Queries walk the database together in blocks of QUERY_BLOCK, tile by tile (TILE_ROWS is a multiple of
    CHUNK).
    """
    n_queries, n_words = queries.shape
    n_db = database.shape[0]
    n_values = 64 * n_words + 1
    capacity = 2 * k + CHUNK
    flat = database.reshape(n_db * n_words)  # C-contiguous (HashIndex stores it so): a view, no copy
    n_blocks = (n_queries + QUERY_BLOCK - 1) // QUERY_BLOCK
    for b in numba.prange(n_blocks):
        q0 = b * QUERY_BLOCK
        q1 = min(n_queries, q0 + QUERY_BLOCK)
        found_d = np.empty((q1 - q0, capacity), np.int64)
        found_row = np.empty((q1 - q0, capacity), np.int64)
        n_found = np.zeros(q1 - q0, np.int64)
        hist = np.zeros((q1 - q0, n_values), np.int64)
        limit = np.full(q1 - q0, n_values - 1, np.int64)  # accept codes at distance <= limit
        for t0 in range(0, n_db, TILE_ROWS):
            t1 = min(n_db, t0 + TILE_ROWS)
            for i in range(q0, q1):
                a = i - q0
                query = queries[i]
                bound = limit[a]
                n = n_found[a]
                for c0 in range(t0, t1, CHUNK):
                    c1 = min(t1, c0 + CHUNK)
                    if c1 - c0 == CHUNK and _hits(query, flat, c0, n_words, bound) == 0:
                        continue
                    for j in range(c0, c1):
                        d = np.int64(_distance(query, database[j], n_words))
                        if d <= bound:
                            found_d[a, n] = d
                            found_row[a, n] = j
                            hist[a, d] += 1
                            n += 1
                    if n > 2 * k:  # a chunk more always fits (capacity 2k + CHUNK): cut back to the first k
                        cut, n = _keep_first_k(found_d[a], found_row[a], n, hist[a], k)
                        bound = cut - 1
                limit[a] = bound
                n_found[a] = n
        for i in range(q0, q1):
            a = i - q0
            cut, n = _keep_first_k(found_d[a], found_row[a], n_found[a], hist[a], k)
            start = np.zeros(n_values + 1, np.int64)
            for c in range(n):
                start[found_d[a, c] + 1] += 1
            for v in range(n_values):
                start[v + 1] += start[v]
            for c in range(n):
                d = found_d[a, c]
                out_rows[i, start[d]] = found_row[a, c]
                out_distances[i, start[d]] = d
                start[d] += 1


# ------------------------------------------------------------------------------------------------------
# Multi-index hashing (Norouzi, Punjani & Fleet, CVPR 2012)
# ------------------------------------------------------------------------------------------------------
@numba.njit(inline="always")
def _substring(code, start, length):
    """Bits ``[start, start + length)`` of a packed code (length <= 32) as an int64."""
    w = start >> 6
    offset = start & 63
    value = code[w] >> u64(offset)
    if offset + length > 64:
        value |= code[w + 1] << u64(64 - offset)
    return np.int64(value & u64((1 << length) - 1))


@cached_njit()
def substring_values(codes, start, length):
    """``(n,)`` int64 values of bits ``[start, start + length)`` of every code (the hash-table keys)."""
    out = np.empty(codes.shape[0], np.int64)
    for i in range(codes.shape[0]):
        out[i] = _substring(codes[i], start, length)
    return out


@cached_njit()
def _kth_distance(hist, k):
    """Smallest distance d with at least k items at distance <= d (len(hist) - 1 if there is none)."""
    total = 0
    for d in range(hist.shape[0]):
        total += hist[d]
        if total >= k:
            return d
    return hist.shape[0] - 1


@numba.njit(inline="always")
def _next_within(flat, query, n_words, start, end, threshold):
    """First position p in [start, end) whose code lies within ``threshold`` of the query, and its distance
    (``(end, 0)`` if none): the tight loop of a bucket scan. ``flat`` is the table's codes as one 1-D array,
    read with unsigned indices (no wraparound select; see :func:`_hits`). Uniformly random codes make MIH
    read many short buckets scattered in memory: that latency, not this loop, bounds it (docs/retrieval.md)."""
    limit = u64(threshold)
    for p in range(start, end):
        d = u64(0)
        for w in range(n_words):
            d += popcount(query[w] ^ flat[u64(p * n_words + w)])
        if d <= limit:
            return p, np.int64(d)
    return end, np.int64(0)


@numba.njit
def _mih_query(query, k, table_codes, table_rows, offsets, sub_start, sub_length, max_length, out_rows,
               out_distances):
    """:func:`mih_search` for one query, into its rows of the outputs. A serial function of its own: compiled
    inside the parallel loop, the growth of the candidate buffer (arrays rebound to larger ones) kept stale
    values under numba's ``parallel=True``, so a query with more than 1024 candidates within the k-th distance
    (many items on one code, as hash centers make) got wrong rows (found by an audit, 2026-12-02)."""
    n_words = query.shape[0]
    m = sub_start.shape[0]
    n_values = 64 * n_words + 1
    keys = np.empty(m, np.int64)
    for j in range(m):
        keys[j] = _substring(query, sub_start[j], sub_length[j])
    hist = np.zeros(n_values, np.int64)
    capacity = max(4 * k, 1024)
    found_d = np.empty(capacity, np.int64)
    found_row = np.empty(capacity, np.int64)
    n_found = 0
    threshold = n_values - 1  # codes farther than this can no longer enter the top k
    xor = np.empty(n_words, np.uint64)
    done = False
    for r in range(max_length + 1):
        for j in range(m):
            length = sub_length[j]
            flat_j = table_codes[j].reshape(table_codes.shape[1] * n_words)
            if r <= length:
                mask = (np.int64(1) << r) - 1  # Gosper's hack: every length-bit mask with r bits set
                limit = np.int64(1) << length
                while mask < limit:
                    bucket = keys[j] ^ mask
                    p = offsets[j, bucket] - 1
                    end = offsets[j, bucket + 1]
                    while True:
                        p, d = _next_within(flat_j, query, n_words, p + 1, end, threshold)
                        if p == end:
                            break
                        for w in range(n_words):
                            xor[w] = query[w] ^ table_codes[j, p, w]
                        first = True
                        for jj in range(m):
                            if jj != j:
                                s = popcount(u64(_substring(xor, sub_start[jj], sub_length[jj])))
                                if s < r or (s == r and jj < j):
                                    first = False
                                    break
                        if not first:
                            continue
                        if n_found == capacity:  # drop what can no longer qualify, grow if still full
                            threshold = _kth_distance(hist, k)
                            kept = 0
                            for c in range(n_found):
                                if found_d[c] <= threshold:
                                    found_d[kept] = found_d[c]
                                    found_row[kept] = found_row[c]
                                    kept += 1
                            n_found = kept
                            if n_found > capacity // 2:
                                capacity *= 2
                                grown_d = np.empty(capacity, np.int64)
                                grown_row = np.empty(capacity, np.int64)
                                grown_d[:n_found] = found_d[:n_found]
                                grown_row[:n_found] = found_row[:n_found]
                                found_d, found_row = grown_d, grown_row
                            if d > threshold:
                                continue
                        found_d[n_found] = d
                        found_row[n_found] = table_rows[j, p]
                        n_found += 1
                        hist[d] += 1
                    if r == 0:
                        break
                    lowest = mask & -mask
                    ripple = mask + lowest
                    mask = (((ripple ^ mask) >> 2) // lowest) | ripple
                threshold = _kth_distance(hist, k)
                if threshold <= m * r + j:
                    done = True
            else:
                done = True  # table j is exhausted: every code has been reached through it
            if done:
                break
        if done:
            break
    keys_sorted = np.empty(n_found, np.int64)
    n_kept = 0
    for c in range(n_found):
        if found_d[c] <= threshold:
            keys_sorted[n_kept] = (found_d[c] << 40) | found_row[c]
            n_kept += 1
    keys_sorted = np.sort(keys_sorted[:n_kept])
    for c in range(k):
        out_distances[c] = keys_sorted[c] >> 40
        out_rows[c] = keys_sorted[c] & ((np.int64(1) << 40) - 1)


@cached_njit(parallel=True)
def mih_search(queries, k, table_codes, table_rows, offsets, sub_start, sub_length, out_rows, out_distances):
    """Exact top-k by multi-index hashing; rows sorted by (distance, row), ``k <= n_db``.

    The code is cut into m substrings, each indexed by a hash table (``table_rows[j]`` sorted by the value of
    substring j, ``offsets[j]`` the bucket boundaries, ``table_codes[j]`` the codes in that order so that a
    bucket is read contiguously). Search radius r grows from 0; at (r, j) the buckets of table j whose key
    differs from the query's substring j in exactly r bits are read. A code is counted only where it is
    first reached (the smallest (substring distance, table) pair), so no code is seen twice. After (r, j),
    every code with full distance <= m r + j has been reached (pigeonhole, Norouzi et al. Prop. 1 refined):
    the search stops once the k-th smallest distance found is within that bound, and all ties at that
    distance are known, so breaking them by row gives exactly the linear scan's answer.
    """
    n_queries = queries.shape[0]
    max_length = 0
    for j in range(sub_start.shape[0]):
        max_length = max(max_length, sub_length[j])
    for i in numba.prange(n_queries):
        _mih_query(queries[i], k, table_codes, table_rows, offsets, sub_start, sub_length, max_length, out_rows[i],
                   out_distances[i])
