"""The compiled (numba) kernels of stage 2: packed-bit distances, the exact single-flip moves of the local
search (:mod:`shc.centers.search`, whose docstring derives them), the repair of its spectral start, and the
greedy Gilbert-Varshamov code of very large C (:func:`shc.centers.mds.greedy_code`).

They live in one file because they call one another and numba's on-disk cache (``cache=True``) notices a
change only in the file of the kernel it compiled: a kernel calling one from another file would keep running
the old callee after an edit there. Python-level code around them belongs to the module of its family.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from shc._jit import cached_njit  # numba.njit(cache=True) whose cache saves may fail (full disk)
from shc._popcount import popcount as _popcount  # the package's one popcount (its cache note)

_U64 = numba.uint64


# --------------------------------------------------------------------------------------------
# Packed bits: +-1 rows as uint64 words, distances by popcount
# --------------------------------------------------------------------------------------------


def _pack(H: np.ndarray) -> np.ndarray:
    """+-1 rows as little-endian bits in uint64 words (+1 -> 1), C-contiguous (C, ceil(q / 64))."""
    C, q = H.shape
    bits = np.zeros((C, 64 * ((q + 63) // 64)), dtype=np.uint8)
    bits[:, :q] = np.asarray(H) > 0
    return np.ascontiguousarray(np.packbits(bits, axis=1, bitorder="little").view(np.uint64))


@cached_njit()
def _packed_min(packed):
    """Minimum pairwise distance of packed codes: O(C^2 q / 64) popcounts, no C x C matrix."""
    C, words = packed.shape
    best = 1 << 30
    for i in range(C):
        for j in range(i + 1, C):
            distance = 0
            for w in range(words):
                distance += _popcount(packed[i, w] ^ packed[j, w])
            best = min(best, distance)
    return best


# --------------------------------------------------------------------------------------------
# The local search's moves (shc.centers.search): exact Delta L, flips, descent, annealing
# --------------------------------------------------------------------------------------------
@cached_njit()
def _move_delta(H, S, PT, Q, i, k):
    """Exact change of L when bit k of h_i flips (module docstring)."""
    C, q = H.shape
    a = PT[k, i] - (S[i, i] - 1.0) * H[i, k]
    dot = 0.0
    for m in range(q):
        dot += H[i, m] * Q[m, k]
    a -= dot / q
    return 8.0 / q * H[i, k] * a + 8.0 * (C - 1) / (q * q)


@cached_njit()
def _pair_contribution(H, V, i, j, sign):
    """Add (sign=+1) or remove (sign=-1) the pair (i, j) at distance d from the blocked-move counts V."""
    for m in range(H.shape[1]):
        if H[j, m] != H[i, m]:
            V[i, m] += sign
            V[j, m] += sign


@cached_njit()
def _flip(H, packed, S, PT, Q, V, i, k, d, entering):
    """Apply the flip of bit k of h_i to every part of the state: O(C q / 64) for the distances by
    popcount, O(C) for PT, O(q) for Q and O(q) per pair that leaves or enters distance d."""
    C, q = H.shape
    words = packed.shape[1]
    s = H[i, k]
    n_entering = 0
    for j in range(C):  # D_ij before the flip; it moves by +1 where bit k agrees, -1 where it differs
        if j == i:
            continue
        distance = 0
        for w in range(words):
            distance += _popcount(packed[i, w] ^ packed[j, w])
        if distance == d:
            _pair_contribution(H, V, i, j, -1)
        if distance + (1 if H[j, k] == s else -1) == d:
            entering[n_entering] = j
            n_entering += 1
    row = PT[k]
    for j in range(C):
        row[j] -= 2.0 * s * S[i, j]  # S is symmetric: row i is column i
    for m in range(q):
        if m != k:
            change = -2.0 * s * H[i, m]
            Q[m, k] += change
            Q[k, m] += change
    H[i, k] = -s
    packed[i, k // 64] ^= _U64(1) << _U64(k % 64)
    for t in range(n_entering):
        _pair_contribution(H, V, i, entering[t], 1)


@cached_njit()
def _best_single(H, S, PT, Q, V, i):
    """The best feasible single flip of center i: (delta, k), k = -1 when none improves."""
    best, best_k = -1e-9, -1
    for k in range(H.shape[1]):
        if V[i, k] == 0:
            delta = _move_delta(H, S, PT, Q, i, k)
            if delta < best:
                best, best_k = delta, k
    return best, best_k


@cached_njit()
def _descend(H, packed, S, PT, Q, V, d, L, order, pairs=False):
    """Best-improvement descent per center until a full sweep finds no improving feasible move: single
    flips, or with ``pairs`` single and double flips (:func:`_best_move`; the result is then a local
    minimum of both neighbourhoods). Returns L and the number of moves."""
    C, q = H.shape
    entering = np.empty(C, dtype=np.int64)
    single = np.empty(q)
    blocked = np.zeros((q, q), dtype=np.bool_)
    diff = np.empty(q, dtype=np.int64)
    moves = 0
    improved = True
    while improved:
        improved = False
        for t in range(C):
            i = order[t]
            for _ in range(q * q if pairs else q):
                if pairs:
                    best, k, m = _best_move(H, packed, S, PT, Q, V, i, d, single, blocked, diff)
                else:
                    best, k = _best_single(H, S, PT, Q, V, i)
                    m = -1
                if k < 0:
                    break
                _flip(H, packed, S, PT, Q, V, i, k, d, entering)
                if m >= 0:  # the pair is feasible as a whole; V is exact again after the second flip
                    _flip(H, packed, S, PT, Q, V, i, m, d, entering)
                L += best
                moves += 1
                improved = True
    return L, moves


@cached_njit()
def _uphill_scale(H, S, PT, Q, V):
    """Median positive change over the feasible moves (the temperature unit of the annealing)."""
    C, q = H.shape
    values = np.empty(C * q)
    n = 0
    for i in range(C):
        for k in range(q):
            if V[i, k] == 0:
                delta = _move_delta(H, S, PT, Q, i, k)
                if delta > 0:
                    values[n] = delta
                    n += 1
    return np.median(values[:n]) if n > 0 else 1e-3


@cached_njit()
def _anneal(H, packed, S, PT, Q, V, d, L, t_start, t_end, moves, blocks, seed):
    """Simulated annealing over feasible single flips (random proposals, Metropolis acceptance, geometric
    cooling from t_start to t_end). Returns the best H seen at the end of a block, its L, and L and
    d_min after every block."""
    np.random.seed(seed)
    C, q = H.shape
    entering = np.empty(C, dtype=np.int64)
    best_H, best_L = H.copy(), L
    trace, d_trace = np.empty(blocks), np.empty(blocks, dtype=np.int64)
    per_block = max(moves // blocks, 1)
    cooling = (t_end / t_start) ** (1.0 / (blocks * per_block))
    temperature = t_start
    for b in range(blocks):
        for _ in range(per_block):
            temperature *= cooling
            i = np.random.randint(C)
            k = np.random.randint(q)
            if V[i, k] != 0:
                continue
            delta = _move_delta(H, S, PT, Q, i, k)
            if delta <= 0.0 or np.random.random() < math.exp(-delta / temperature):
                _flip(H, packed, S, PT, Q, V, i, k, d, entering)
                L += delta
        trace[b], d_trace[b] = L, _packed_min(packed)
        if L < best_L:
            best_H[:] = H
            best_L = L
    return best_H, best_L, trace, d_trace


@cached_njit()
def _pair_delta(H, Q, single, i, k, m):
    """Exact change of L when bits k and m (k != m) of h_i flip together: the two single changes plus
    their interaction ``(16 / q^2) (h_ik h_im Q_km - 1)`` (flipping k moves A_im by
    ``2 h_ik (Q_km - h_ik h_im) / q``; module docstring of :mod:`shc.centers.search`)."""
    q = H.shape[1]
    return single[k] + single[m] + 16.0 / (q * q) * (H[i, k] * H[i, m] * Q[k, m] - 1.0)


@cached_njit()
def _best_move(H, packed, S, PT, Q, V, i, d, single, blocked, diff):
    """The best feasible single or double flip of center i: (delta, k, m), m = -1 for a single flip.

    A double flip (k, m) is feasible iff no center j at distance d or d + 1 from h_i differs from it in
    both bits (only then does D_ij fall by 2); it keeps a pair at distance d where a single flip cannot."""
    C, q = H.shape
    words = packed.shape[1]
    for k in range(q):
        single[k] = _move_delta(H, S, PT, Q, i, k)
    blocked[:, :] = False
    for j in range(C):
        if j == i:
            continue
        distance = 0
        for w in range(words):
            distance += _popcount(packed[i, w] ^ packed[j, w])
        if distance <= d + 1:
            n = 0
            for m in range(q):
                if H[j, m] != H[i, m]:
                    diff[n] = m
                    n += 1
            for a in range(n):
                for b in range(a + 1, n):
                    blocked[diff[a], diff[b]] = True
    best, best_k, best_m = -1e-9, -1, -1
    for k in range(q):
        if V[i, k] == 0 and single[k] < best:
            best, best_k = single[k], k
    for k in range(q):
        for m in range(k + 1, q):
            if not blocked[k, m]:
                delta = _pair_delta(H, Q, single, i, k, m)
                if delta < best:
                    best, best_k, best_m = delta, k, m
    return best, best_k, best_m


# --------------------------------------------------------------------------------------------
# The spectral start's repair to distance d
# --------------------------------------------------------------------------------------------
@cached_njit()
def _repair(H, D, d, seed, max_steps):
    """Raise every distance to >= d: on the center with the largest shortfall ``sum_j max(d - D_ij, 0)``,
    the flip that most lowers the total shortfall (a random flip when none does); True on success."""
    np.random.seed(seed)
    C, q = H.shape
    shortfall = np.zeros(C, dtype=np.int64)
    for i in range(C):
        for j in range(C):
            if j != i and D[i, j] < d:
                shortfall[i] += d - D[i, j]
    gain = np.zeros(q)
    for step in range(max_steps):
        i = np.argmax(shortfall)
        if shortfall[i] == 0:
            return True
        gain[:] = 0.0
        for j in range(C):
            if j != i and D[i, j] <= d:
                for m in range(q):
                    if H[j, m] == H[i, m]:  # the flip raises D_ij
                        gain[m] -= 1.0 if D[i, j] < d else 0.0
                    else:
                        gain[m] += 1.0
        k = np.argmin(gain)
        if gain[k] >= 0:
            k = np.random.randint(q)
        s = H[i, k]
        for j in range(C):
            if j != i:
                before = max(d - D[i, j], 0)
                change = 1 if H[j, k] == s else -1
                D[i, j] += change
                D[j, i] += change
                after = max(d - D[i, j], 0)
                shortfall[i] += after - before
                shortfall[j] += after - before
        H[i, k] = -s
    return False


# --------------------------------------------------------------------------------------------
# Very large C: the greedy Gilbert-Varshamov code
# --------------------------------------------------------------------------------------------
@cached_njit()
def _greedy_packed(num_codes, words, last_mask, d, seed, max_tries):
    """Random candidates, each kept iff its distance to every kept code is >= d (packed uint64 words)."""
    np.random.seed(seed)
    codes = np.zeros((num_codes, words), dtype=np.uint64)
    candidate = np.zeros(words, dtype=np.uint64)
    kept = 0
    for _ in range(max_tries):
        for w in range(words):
            low = _U64(np.random.randint(0, 1 << 32))
            high = _U64(np.random.randint(0, 1 << 32))
            candidate[w] = (high << _U64(32)) | low
        candidate[words - 1] &= last_mask
        ok = True
        for j in range(kept):
            distance = 0
            for w in range(words):
                distance += _popcount(codes[j, w] ^ candidate[w])
            if distance < d:
                ok = False
                break
        if ok:
            codes[kept] = candidate
            kept += 1
            if kept == num_codes:
                break
    return codes, kept
