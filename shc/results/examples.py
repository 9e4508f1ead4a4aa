"""Example retrievals of a finished run: queries and their Hamming-nearest database images (read-only).

:func:`top_results` ranks a run's stored codes (:func:`hamming_top_k`, an exact :class:`shc.retrieval.HashIndex`
search) and returns an :class:`ExampleQueries`: the images, their distances and which results are correct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shc.results.reading import load_codes
from shc.runs import RunConfig, load_data


def hamming_top_k(query_codes: np.ndarray, database_codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest database items of each query in Hamming distance, ties in database order (the
    ranking of :mod:`shc.metrics`), by an exact :class:`shc.retrieval.HashIndex` search.

    Parameters
    ----------
    query_codes : (n, q) array of +-1
    database_codes : (N, q) array of +-1
    k : int
        1 <= k <= N.

    Returns
    -------
    indices, distances : (n, k) int arrays
        Database indices, nearest first, and their Hamming distances (q - <b_i, b_j>) / 2 (Eq. 17).
    """
    from shc.retrieval import HashIndex

    queries, database = np.asarray(query_codes), np.asarray(database_codes)
    if queries.ndim != 2 or database.ndim != 2 or queries.shape[1] != database.shape[1]:
        raise ValueError(f"codes must be (n, q) and (N, q) with the same q, got {queries.shape} and {database.shape}.")
    if not 1 <= k <= database.shape[0]:
        raise ValueError(f"k must lie in [1, {database.shape[0]}] (the database size), got {k}.")
    distances, indices = HashIndex(queries.shape[1]).add(database).search(queries, k)  # ids = database indices
    return indices, distances


@dataclass
class ExampleQueries:
    """Example queries and their top-k retrieved database images (from :func:`top_results`)."""

    query_indices: np.ndarray  #: (n,) positions in the query split
    result_indices: np.ndarray  #: (n, k) positions in the database split, nearest first
    distances: np.ndarray  #: (n, k) Hamming distances
    correct: np.ndarray  #: (n, k) bool, the result shares a label with its query
    query_images: list[np.ndarray]
    result_images: list[list[np.ndarray]]
    query_titles: list[str]

    @property
    def precision(self) -> float:
        """Fraction of correct results over all shown queries (precision@k of these queries)."""
        return float(self.correct.mean())

    def frame(self):
        """Tidy ``query, query_class, rank, result, distance, correct`` rows: what the example figure shows (the
        query's class is its panel title; "query" for multi-label data)."""
        import pandas as pd

        n, k = self.result_indices.shape
        return pd.DataFrame({"query": np.repeat(self.query_indices, k),
                             "query_class": np.repeat(np.asarray(self.query_titles, dtype=object), k),
                             "rank": np.tile(np.arange(1, k + 1), n), "result": self.result_indices.reshape(-1),
                             "distance": self.distances.reshape(-1), "correct": self.correct.reshape(-1)})


def _spread_queries(labels: np.ndarray, n_queries: int) -> np.ndarray:
    """Positions of ``n_queries`` queries of distinct, evenly spaced classes (the splits are stored in a random
    order); evenly spaced positions for multi-label data or when there are fewer classes than queries."""
    spaced = np.round(np.linspace(0, len(labels) - 1, n_queries)).astype(np.int64)
    if labels.ndim != 1:
        return spaced
    classes, first = np.unique(labels, return_index=True)  # first query of each class
    if len(classes) < n_queries:
        return spaced
    return first[np.round(np.linspace(0, len(classes) - 1, n_queries)).astype(np.int64)]


def top_results(config: RunConfig, n_queries: int = 5, k: int = 10,
                query_indices: Sequence[int] | None = None) -> ExampleQueries:
    """Example retrievals of a finished run: queries, their top-k database images and which are correct.

    Parameters
    ----------
    config : RunConfig
        A run whose stage 3 exists (its stored codes are ranked, :func:`hamming_top_k`).
    n_queries : int
        Number of queries: the first query of each of ``n_queries`` evenly spaced classes (single-label data;
        multi-label data: evenly spaced positions of the query split), unless ``query_indices`` is given.
    k : int
        Results per query.
    query_indices : sequence of int, optional
        Positions in the query split to show instead.
    """
    codes = load_codes(config)
    num_queries = len(codes["query_codes"])
    if query_indices is None:
        if not 1 <= n_queries <= num_queries:
            raise ValueError(f"n_queries must lie in [1, {num_queries}] (the query split size), got {n_queries}.")
        chosen = _spread_queries(codes["query_labels"], n_queries)
    else:
        chosen = np.asarray(query_indices, dtype=np.int64)
        if chosen.ndim != 1 or chosen.size == 0 or chosen.min() < 0 or chosen.max() >= num_queries:
            raise ValueError(f"query_indices must be positions in [0, {num_queries}) of the query split.")
    indices, distances = hamming_top_k(codes["query_codes"][chosen], codes["database_codes"], k)
    query_labels, database_labels = codes["query_labels"][chosen], codes["database_labels"][indices]
    if query_labels.ndim == 1:
        correct = database_labels == query_labels[:, None]
    else:  # multi-hot: relevant when sharing at least one label
        correct = np.any((database_labels > 0) & (query_labels[:, None, :] > 0), axis=2)
    data = load_data(config)
    titles = ([data.all_class_names[label] for label in query_labels] if query_labels.ndim == 1
              else ["query"] * len(chosen))  # fmt: skip
    return ExampleQueries(
        chosen, indices, distances, correct,
        [data.query.raw_image(i) for i in chosen],
        [[data.database.raw_image(j) for j in row] for row in indices],
        titles,
    )
