"""Tie-aware expectations over uniformly random orders within Hamming-distance ties, in closed form.

He et al., "Hashing as Tie-Aware Learning to Rank" (CVPR 2018); McSherry & Najork (ECIR 2008).
:func:`_distance_histograms` counts a chunk's items and relevant items at each distance (the tie groups; the
Hamming-radius PR curve sums them too); :func:`_tie_aware_average_precision` is the expected AP@K and
:func:`_expected_hits` the expected relevant items in the top K (precision@K, recall@K, rank-based PR curve).
"""

from __future__ import annotations

import numpy as np


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
