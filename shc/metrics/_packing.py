"""Codes packed for the Hamming distance, and the distances and relevance of a chunk of queries.

:class:`_Data` holds validated inputs in the layout :func:`_encode_codes` gives them: on numpy >= 2.0 bits
packed into 64-bit words for XOR + popcount (``np.bitwise_count``), on older numpy an augmented float32
matrix product that is exactly the Hamming distance ``(q - h_i^T h_j) / 2`` (Theorem 2, Eq. 17).
:func:`_hamming_distances` and :func:`_relevance` give a chunk's (chunk, n_db) distances and relevance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_HAS_POPCOUNT = hasattr(np, "bitwise_count")  # numpy >= 2.0


@dataclass(frozen=True)
class _Data:
    """Validated inputs, in the layouts the chunk kernel uses."""

    query_codes: np.ndarray  # (n_queries, n_words) packed bits, see _encode_codes
    db_codes: np.ndarray  # (n_words, n_db)
    query_labels: np.ndarray  # (n_queries,) class ids or (n_queries, C) float32 0/1
    db_labels: np.ndarray
    n_bits: int

    @property
    def n_queries(self) -> int:
        return self.query_codes.shape[0]

    @property
    def n_db(self) -> int:
        return self.db_codes.shape[1]

    @property
    def single_label(self) -> bool:
        return self.query_labels.ndim == 1


def _encode_codes(query: np.ndarray, db: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """-1/+1 codes in the layout of ``_hamming_distances``.

    numpy >= 2.0: bits packed into 64-bit words, queries (n_queries, n_words) and
    database (n_words, n_db), for XOR + popcount. Older numpy: ``[-a / 2, q / 2]``
    and ``[b, 1]``, whose product is ``(q - a.b) / 2``, the Hamming distance (Eq. 17),
    exact in float32 (every partial sum is a multiple of 1/2 below 2**22).
    """
    n_bits = query.shape[1]
    if _HAS_POPCOUNT:
        n_words = -(-n_bits // 64)

        def pack(codes: np.ndarray) -> np.ndarray:
            padded = np.zeros((codes.shape[0], 8 * n_words), np.uint8)
            padded[:, : -(-n_bits // 8)] = np.packbits(codes > 0, axis=1)
            return padded.view(np.uint64)

        return pack(query), np.ascontiguousarray(pack(db).T)
    dtype = np.float32 if n_bits < 2**22 else np.float64
    query_aug = np.empty((query.shape[0], n_bits + 1), dtype)
    np.multiply(query, -0.5, out=query_aug[:, :n_bits], casting="unsafe")
    query_aug[:, n_bits] = n_bits / 2
    db_aug = np.ones((db.shape[0], n_bits + 1), dtype)
    db_aug[:, :n_bits] = db
    return query_aug, np.ascontiguousarray(db_aug.T)


def _hamming_distances(data: _Data, rows: slice) -> np.ndarray:
    """(chunk, n_db) Hamming distances in the smallest unsigned dtype (radix-sortable)."""
    query = data.query_codes[rows]
    shape = (query.shape[0], data.n_db)
    dtype = np.uint8 if data.n_bits < 2**8 else np.uint16 if data.n_bits < 2**16 else np.uint32
    if data.db_codes.dtype != np.uint64:  # numpy < 2.0: one exact float product
        return (query @ data.db_codes).astype(dtype)
    xor = np.empty(shape, np.uint64)
    if query.shape[1] == 1:  # q <= 64: one word, the popcount is the distance
        np.bitwise_xor(query[:, 0, None], data.db_codes[0], out=xor)
        return np.bitwise_count(xor).astype(dtype, copy=False)
    distances = np.zeros(shape, dtype)
    for word in range(query.shape[1]):  # ceil(q / 64) words
        np.bitwise_xor(query[:, word, None], data.db_codes[word], out=xor)
        distances += np.bitwise_count(xor)
    return distances


def _relevance(data: _Data, rows: slice) -> np.ndarray:
    """(chunk, n_db) bool: the query and the item share at least one label."""
    if data.single_label:
        return data.query_labels[rows, None] == data.db_labels[None, :]
    return (data.query_labels[rows] @ data.db_labels.T) > 0  # shared-label counts, exact in float32
