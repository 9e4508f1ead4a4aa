"""Tests of shc.metrics against brute-force references written here, hand-computed values and invariants."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from shc import metrics
from shc.metrics import _packing
from shc.metrics import (DEFAULT_KS, evaluate, mean_average_precision, pr_curve, precision_recall_at_k,
                         rank_pr_curve)

# --------------------------------------------------------------------------- #
# Brute-force references: Python loops over queries and ranks, nothing shared with shc.metrics
# --------------------------------------------------------------------------- #


def shares_label(query_label, db_label) -> bool:
    if np.ndim(query_label) == 0:
        return bool(query_label == db_label)
    return bool(np.any(np.logical_and(query_label, db_label)))


def ranking(query_code, db_codes):
    """Database indices by Hamming distance, ties by index, and the distances."""
    distances = np.array([np.sum(query_code != code) for code in db_codes])
    return np.argsort(distances, kind="stable"), distances


def relevance_in_order(query_code, query_label, db_codes, db_labels):
    order, _ = ranking(query_code, db_codes)
    return [shares_label(query_label, db_labels[j]) for j in order]


def average_precision(relevance, topk):
    """DeepHash-pytorch AP@K of one ranked relevance list (no gnd[0:-1] truncation)."""
    hits, precisions = 0, []
    for rank, is_relevant in enumerate(relevance[:topk], start=1):
        if is_relevant:
            hits += 1
            precisions.append(hits / rank)
    return sum(precisions) / len(precisions) if precisions else 0.0


def brute_map(qc, ql, dc, dl, topk):
    n = len(dc) if topk is None else topk
    return np.mean([average_precision(relevance_in_order(qc[i], ql[i], dc, dl), n) for i in range(len(qc))])


def brute_precision_recall(qc, ql, dc, dl, ks):
    precisions, recalls = [], []
    for i in range(len(qc)):
        relevance = relevance_in_order(qc[i], ql[i], dc, dl)
        total = sum(relevance)
        precisions.append([sum(relevance[:k]) / min(k, len(dc)) for k in ks])
        if total:
            recalls.append([sum(relevance[:k]) / total for k in ks])
    return np.mean(precisions, axis=0), np.mean(recalls, axis=0)


def brute_pr_curve(qc, ql, dc, dl):
    n_bits = qc.shape[1]
    precision_lists = [[] for _ in range(n_bits + 1)]
    recall_lists = [[] for _ in range(n_bits + 1)]
    for i in range(len(qc)):
        _, distances = ranking(qc[i], dc)
        relevant = np.array([shares_label(ql[i], dl[j]) for j in range(len(dc))])
        for radius in range(n_bits + 1):
            retrieved = distances <= radius
            if retrieved.sum():
                precision_lists[radius].append((relevant & retrieved).sum() / retrieved.sum())
            if relevant.sum():
                recall_lists[radius].append((relevant & retrieved).sum() / relevant.sum())
    return (
        np.array([np.mean(p) if p else np.nan for p in precision_lists]),
        np.array([np.mean(r) if r else np.nan for r in recall_lists]),
    )


def brute_tie_aware_map(qc, ql, dc, dl, topk):
    """Average AP@K over every order within the Hamming-distance ties (exhaustive)."""
    n = len(dc) if topk is None else topk
    aps = []
    for i in range(len(qc)):
        _, distances = ranking(qc[i], dc)
        groups = [np.flatnonzero(distances == d) for d in np.unique(distances)]
        orders = itertools.product(*(itertools.permutations(group) for group in groups))
        ap_per_order = [
            average_precision([shares_label(ql[i], dl[j]) for group in order for j in group], n) for order in orders
        ]
        aps.append(np.mean(ap_per_order))
    return np.mean(aps)


# --------------------------------------------------------------------------- #
# Data
# --------------------------------------------------------------------------- #


def random_codes(rng, n, n_bits):
    return rng.choice([-1, 1], size=(n, n_bits))


def clustered_data(rng, n_queries, n_db, n_bits, n_classes, multi_label, flip=0.2):
    """Codes near class centres (realistic ranks, many ties at few bits) and matching labels."""
    centres = random_codes(rng, n_classes, n_bits)

    def split(n):
        if multi_label:
            # About 1.5 labels per item; some items get none (relevant to nothing).
            labels = (rng.random((n, n_classes)) < 1.5 / n_classes).astype(np.int64)
            main = np.where(labels.any(1), labels.argmax(1), rng.integers(0, n_classes, n))
        else:
            labels = main = rng.integers(0, n_classes, n)
        codes = centres[main] * np.where(rng.random((n, n_bits)) < flip, -1, 1)
        return codes, labels

    return (*split(n_queries), *split(n_db))


SETTINGS = [
    pytest.param(False, 8, id="single-label-8bit"),
    pytest.param(True, 8, id="multi-label-8bit"),
    pytest.param(False, 32, id="single-label-32bit"),
]


# --------------------------------------------------------------------------- #
# Against brute force
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("multi_label, n_bits", SETTINGS)
def test_map_matches_brute_force(multi_label, n_bits):
    rng = np.random.default_rng(n_bits + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 23, 150, n_bits, 6, multi_label)
    topks = (1, 7, 50, 149, 150, 1000, None)
    result = evaluate(qc, ql, dc, dl, topks=topks, ks=(), pr=False, chunk_size=5, num_workers=2)
    for topk in topks:
        key = "mAP@ALL" if topk is None else f"mAP@{topk}"
        assert result[key] == pytest.approx(brute_map(qc, ql, dc, dl, topk), abs=1e-12), key


@pytest.mark.parametrize("multi_label, n_bits", SETTINGS)
def test_precision_recall_at_k_match_brute_force(multi_label, n_bits):
    rng = np.random.default_rng(10 + n_bits + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 17, 120, n_bits, 5, multi_label)
    ks = (1, 5, 10, 119, 120, 121, 500)
    precision, recall = precision_recall_at_k(qc, ql, dc, dl, ks, chunk_size=4)
    expected_precision, expected_recall = brute_precision_recall(qc, ql, dc, dl, ks)
    np.testing.assert_allclose(precision, expected_precision, rtol=0, atol=1e-12)
    np.testing.assert_allclose(recall, expected_recall, rtol=0, atol=1e-12)


@pytest.mark.parametrize("multi_label, n_bits", SETTINGS)
def test_pr_curve_matches_brute_force(multi_label, n_bits):
    rng = np.random.default_rng(20 + n_bits + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 17, 90, n_bits, 5, multi_label, flip=0.3)
    curve = pr_curve(qc, ql, dc, dl, chunk_size=6)
    expected_precision, expected_recall = brute_pr_curve(qc, ql, dc, dl)
    np.testing.assert_array_equal(curve["pr_radius"], np.arange(n_bits + 1))
    np.testing.assert_allclose(curve["pr_precision"], expected_precision, rtol=0, atol=1e-12)
    np.testing.assert_allclose(curve["pr_recall"], expected_recall, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_bits", [1, 63, 100, 300])
def test_all_code_lengths_match_brute_force(n_bits):
    # Several 64-bit words and, at 300 bits, uint16 distances.
    rng = np.random.default_rng(n_bits)
    qc, ql, dc, dl = clustered_data(rng, 9, 40, n_bits, 3, multi_label=False, flip=0.4)
    result = evaluate(qc, ql, dc, dl, topks=(5, None), ks=(3, 40), pr=True, chunk_size=4)
    assert result["mAP@5"] == pytest.approx(brute_map(qc, ql, dc, dl, 5), abs=1e-12)
    assert result["mAP@ALL"] == pytest.approx(brute_map(qc, ql, dc, dl, None), abs=1e-12)
    np.testing.assert_allclose(result["precision@k"], brute_precision_recall(qc, ql, dc, dl, (3, 40))[0], atol=1e-12)
    np.testing.assert_allclose(result["pr_precision"], brute_pr_curve(qc, ql, dc, dl)[0], atol=1e-12)


def test_matrix_product_distances_without_popcount(monkeypatch):
    # numpy < 2.0 has no np.bitwise_count: distances then come from an exact float product.
    rng = np.random.default_rng(60)
    qc, ql, dc, dl = clustered_data(rng, 11, 70, 70, 4, multi_label=True, flip=0.3)
    expected = evaluate(qc, ql, dc, dl, topks=(10, None), tie_aware=True)
    monkeypatch.setattr(_packing, "_HAS_POPCOUNT", False)
    assert_same_results(evaluate(qc, ql, dc, dl, topks=(10, None), tie_aware=True), expected)
    assert expected["mAP@10"] == pytest.approx(brute_map(qc, ql, dc, dl, 10), abs=1e-12)


@pytest.mark.parametrize("multi_label", [False, True])
def test_tie_aware_map_equals_mean_over_all_tie_orders(multi_label):
    rng = np.random.default_rng(30 + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 6, 7, 3, 3, multi_label, flip=0.3)
    for topk in (1, 2, 3, 4, 5, 6, None):
        got = mean_average_precision(qc, ql, dc, dl, topk, tie_aware=True, chunk_size=4)
        assert got == pytest.approx(brute_tie_aware_map(qc, ql, dc, dl, topk), abs=1e-12), topk


def brute_tie_aware_hits(qc, ql, dc, dl, cuts):
    """Per query and cut-off K, the relevant items in the top K averaged over every order within the ties."""
    hits = np.zeros((len(qc), len(cuts)))
    for i in range(len(qc)):
        _, distances = ranking(qc[i], dc)
        groups = [np.flatnonzero(distances == d) for d in np.unique(distances)]
        orders = list(itertools.product(*(itertools.permutations(group) for group in groups)))
        for order in orders:
            relevant = np.array([shares_label(ql[i], dl[j]) for group in order for j in group], dtype=float)
            hits[i] += np.cumsum(relevant)[np.minimum(cuts, len(dc)) - 1] / len(orders)
    return hits


@pytest.mark.parametrize("multi_label", [False, True])
def test_expected_precision_recall_equal_mean_over_all_tie_orders(multi_label):
    rng = np.random.default_rng(50 + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 6, 7, 3, 3, multi_label, flip=0.3)
    ks = np.array([1, 2, 3, 5, 7, 9])  # 9 > n_db: clipped to the database size
    got = evaluate(qc, ql, dc, dl, topks=(), ks=ks, pr=False, tie_aware=True, rank_points=7, chunk_size=4)
    hits = brute_tie_aware_hits(qc, ql, dc, dl, ks)
    n_relevant = np.array([sum(shares_label(ql[i], dl[j]) for j in range(len(dc))) for i in range(len(qc))])
    has = n_relevant > 0
    np.testing.assert_allclose(got["tie_aware_precision@k"], (hits / np.minimum(ks, len(dc))).mean(0), atol=1e-12)
    np.testing.assert_allclose(got["tie_aware_recall@k"], (hits[has] / n_relevant[has, None]).mean(0), atol=1e-12)
    cuts = np.arange(1, 8)  # rank_points >= n_db: every cut-off
    np.testing.assert_array_equal(got["rank_k"], cuts)
    rank_hits = brute_tie_aware_hits(qc, ql, dc, dl, cuts)
    np.testing.assert_allclose(got["tie_aware_rank_precision"], (rank_hits / cuts).mean(0), atol=1e-12)
    np.testing.assert_allclose(got["tie_aware_rank_recall"], (rank_hits[has] / n_relevant[has, None]).mean(0),
                               atol=1e-12)
    # the functional API returns the same numbers
    precision, recall = precision_recall_at_k(qc, ql, dc, dl, ks, tie_aware=True)
    np.testing.assert_allclose(precision, got["tie_aware_precision@k"], atol=1e-15)
    curve = rank_pr_curve(qc, ql, dc, dl, 7, tie_aware=True)
    np.testing.assert_allclose(curve["rank_precision"], got["tie_aware_rank_precision"], atol=1e-15)


def test_expected_precision_differs_from_id_order_on_a_class_sorted_database():
    # One query of class 0; the database holds a single tie (identical codes) sorted by class: id order puts the
    # five class-1 items first, so P@1..5 = 0 by id, 0.5 in expectation (half the tie is relevant).
    query, db = np.ones((1, 8)), np.ones((10, 8))
    labels = np.repeat([1, 0], 5)
    got = evaluate(query, [0], db, labels, topks=(None,), ks=(1, 5, 10), pr=False, tie_aware=True)
    np.testing.assert_array_equal(got["precision@k"], [0.0, 0.0, 0.5])
    np.testing.assert_allclose(got["tie_aware_precision@k"], [0.5, 0.5, 0.5])
    np.testing.assert_allclose(got["tie_aware_recall@k"], [0.1, 0.5, 1.0])


def test_tie_aware_map_matches_random_tie_orders_on_large_ties():
    # Big tie groups (4 bits, 60 items) make the group cut at K hold many relevant items.
    rng = np.random.default_rng(40)
    qc, ql, dc, dl = clustered_data(rng, 5, 60, 4, 3, multi_label=False, flip=0.25)
    topks, n_orders = (10, 25, None), 2000
    expected = evaluate(qc, ql, dc, dl, topks=topks, ks=(), pr=False, tie_aware=True)
    samples = []
    for _ in range(n_orders):  # a random database permutation randomises the order within ties only
        permutation = rng.permutation(len(dc))
        samples.append(evaluate(qc, ql, dc[permutation], dl[permutation], topks=topks, ks=(), pr=False))
    for topk in topks:
        key = "mAP@ALL" if topk is None else f"mAP@{topk}"
        values = [sample[key] for sample in samples]
        spread = np.std(values) / math.sqrt(n_orders)
        assert abs(expected["tie_aware_" + key] - np.mean(values)) < 5 * spread + 1e-12, (key, spread)
        assert spread > 1e-4  # the ties do matter here


def test_tie_aware_map_equals_stable_map_without_ties():
    # Database item j differs from the query in exactly j bits: every distance is distinct.
    n_bits = 10
    query = np.ones((1, n_bits))
    db = np.array([[-1] * j + [1] * (n_bits - j) for j in range(n_bits + 1)])
    db_labels = np.array([0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0])
    for topk in (1, 4, None):
        stable = mean_average_precision(query, [0], db, db_labels, topk)
        assert mean_average_precision(query, [0], db, db_labels, topk, tie_aware=True) == pytest.approx(stable)


# --------------------------------------------------------------------------- #
# Hand-computed values
# --------------------------------------------------------------------------- #

# One 4-bit query and five database items; the distance is the number of -1 bits.
HAND_QUERY = np.array([[1, 1, 1, 1]])
HAND_DB = np.array(
    [
        [1, 1, 1, 1],  # item 0: distance 0, relevant
        [-1, 1, 1, 1],  # item 1: distance 1, irrelevant
        [1, -1, 1, 1],  # item 2: distance 1, relevant   (tied with item 1)
        [-1, -1, 1, 1],  # item 3: distance 2, irrelevant
        [-1, -1, -1, 1],  # item 4: distance 3, relevant
    ]
)
HAND_QUERY_LABELS = np.array([0])
HAND_DB_LABELS = np.array([0, 1, 0, 2, 0])
# Ranking with ties by index: 0, 1, 2, 3, 4 -> relevant at ranks 1, 3, 5.
HAND_AP_ALL = (1 / 1 + 2 / 3 + 3 / 5) / 3  # = 0.7556
# Item 2 before item 1 (the other order of the tie): relevant at ranks 1, 2, 5.
HAND_AP_ALL_OTHER_TIE_ORDER = (1 / 1 + 2 / 2 + 3 / 5) / 3  # = 0.8667


def test_hand_computed_average_precision():
    args = (HAND_QUERY, HAND_QUERY_LABELS, HAND_DB, HAND_DB_LABELS)
    assert mean_average_precision(*args) == pytest.approx(HAND_AP_ALL)
    assert mean_average_precision(*args, topk=1) == pytest.approx(1.0)
    assert mean_average_precision(*args, topk=3) == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert mean_average_precision(*args, topk=99) == pytest.approx(HAND_AP_ALL)


def test_ties_are_broken_by_database_index():
    swapped = [0, 2, 1, 3, 4]  # item 2 (relevant) now comes before item 1 in the database
    got = mean_average_precision(HAND_QUERY, HAND_QUERY_LABELS, HAND_DB[swapped], HAND_DB_LABELS[swapped])
    assert got == pytest.approx(HAND_AP_ALL_OTHER_TIE_ORDER)
    assert not np.isclose(HAND_AP_ALL, HAND_AP_ALL_OTHER_TIE_ORDER)


def test_tie_aware_hand_computed():
    # Both orders of the tie {1, 2} are equally likely.
    got = mean_average_precision(HAND_QUERY, HAND_QUERY_LABELS, HAND_DB, HAND_DB_LABELS, tie_aware=True)
    assert got == pytest.approx((HAND_AP_ALL + HAND_AP_ALL_OTHER_TIE_ORDER) / 2)


def test_hand_computed_precision_recall_and_pr_curve():
    result = evaluate(HAND_QUERY, HAND_QUERY_LABELS, HAND_DB, HAND_DB_LABELS, topks=(), ks=(1, 3, 5, 10))
    # Relevant in the top 1, 3, 5, 10 (clipped to 5): 1, 2, 3, 3 of 3 relevant items.
    np.testing.assert_allclose(result["precision@k"], [1 / 1, 2 / 3, 3 / 5, 3 / 5])
    np.testing.assert_allclose(result["recall@k"], [1 / 3, 2 / 3, 3 / 3, 3 / 3])
    # Within radius 0, 1, 2, 3, 4: items {0}, {0,1,2}, {0..3}, {0..4}, {0..4}.
    np.testing.assert_array_equal(result["pr_radius"], [0, 1, 2, 3, 4])
    np.testing.assert_allclose(result["pr_precision"], [1 / 1, 2 / 3, 2 / 4, 3 / 5, 3 / 5])
    np.testing.assert_allclose(result["pr_recall"], [1 / 3, 2 / 3, 2 / 3, 3 / 3, 3 / 3])


def test_query_without_relevant_item_scores_zero_and_counts():
    queries = np.repeat(HAND_QUERY, 2, axis=0)
    labels = np.array([0, 7])  # class 7 is nowhere in the database
    result = evaluate(queries, labels, HAND_DB, HAND_DB_LABELS, topks=(1, None), ks=(1, 5))
    assert result["mAP@1"] == pytest.approx((1.0 + 0.0) / 2)
    assert result["mAP@ALL"] == pytest.approx((HAND_AP_ALL + 0.0) / 2)
    np.testing.assert_allclose(result["precision@k"], [(1 + 0) / 2, (3 / 5 + 0) / 2])
    # Recall is undefined for query 1: only query 0 is averaged.
    np.testing.assert_allclose(result["recall@k"], [1 / 3, 1.0])
    np.testing.assert_allclose(result["pr_recall"], [1 / 3, 2 / 3, 2 / 3, 1.0, 1.0])


def test_no_query_with_relevant_items_gives_nan_recall():
    precision, recall = precision_recall_at_k(HAND_QUERY, [9], HAND_DB, HAND_DB_LABELS, ks=(1, 2))
    np.testing.assert_array_equal(precision, [0.0, 0.0])
    assert np.isnan(recall).all()


def test_last_database_item_counts_for_map_at_all():
    n_db = 9
    db = np.ones((n_db, 6))
    db[-1] = -1  # the last item is the farthest and the only relevant one: rank n_db
    labels = np.zeros(n_db, dtype=int)
    labels[-1] = 1
    assert mean_average_precision(np.ones((1, 6)), [1], db, labels) == pytest.approx(1 / n_db)
    assert mean_average_precision(np.ones((1, 6)), [1], db, labels, topk=n_db - 1) == 0.0


def test_database_of_one_item():
    queries = np.array([[1, 1, 1], [-1, 1, 1]])
    result = evaluate(queries, [0, 1], np.array([[1, -1, 1]]), [0], topks=(1, None), ks=(1, 5), tie_aware=True)
    assert result["mAP@1"] == result["mAP@ALL"] == result["tie_aware_mAP@ALL"] == pytest.approx(0.5)
    np.testing.assert_allclose(result["precision@k"], [0.5, 0.5])
    np.testing.assert_allclose(result["recall@k"], [1.0, 1.0])  # query 1 has nothing relevant: left out
    # Query 0 is at distance 1 from the item (relevant); query 1 at distance 2 (irrelevant).
    np.testing.assert_allclose(result["pr_precision"], [np.nan, 1.0, 0.5, 0.5])
    np.testing.assert_allclose(result["pr_recall"], [0.0, 1.0, 1.0, 1.0])


def test_pr_precision_skips_queries_that_retrieve_nothing():
    db = np.array([[1, 1, 1, 1], [1, 1, 1, -1]])  # item 0 relevant (class 0), item 1 not
    queries = np.array([[-1, -1, -1, 1], [1, 1, 1, 1]])  # distances: query 0 -> (3, 4), query 1 -> (0, 1)
    curve = pr_curve(queries, [0, 0], db, [0, 1])
    # radius 0:    query 1 retrieves item 0 (precision 1), query 0 nothing (skipped)   -> 1
    # radius 1, 2: query 1 retrieves both items (1/2), query 0 nothing (skipped)       -> 1/2
    # radius 3:    query 0 retrieves item 0 (1), query 1 both items (1/2)              -> 3/4
    # radius 4:    both queries retrieve both items                                    -> 1/2
    np.testing.assert_allclose(curve["pr_precision"], [1, 1 / 2, 1 / 2, 3 / 4, 1 / 2])
    nobody = pr_curve(queries[:1], [0], db, [0, 1])
    assert np.isnan(nobody["pr_precision"][:3]).all()
    np.testing.assert_allclose(nobody["pr_precision"][3:], [1, 1 / 2])


# --------------------------------------------------------------------------- #
# Invariants: input types, chunking, threads, label formats, keys
# --------------------------------------------------------------------------- #


def small_problem(seed=50, multi_label=False):
    return clustered_data(np.random.default_rng(seed), 31, 80, 12, 4, multi_label)


def assert_same_results(a, b):
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_numpy_and_torch_inputs_give_identical_results():
    qc, ql, dc, dl = small_problem()
    expected = evaluate(qc, ql, dc, dl, tie_aware=True)
    tensors = [torch.tensor(qc, dtype=torch.float32, requires_grad=True), torch.tensor(ql),
               torch.tensor(dc, dtype=torch.bfloat16), torch.tensor(dl)]
    assert_same_results(evaluate(*tensors, tie_aware=True), expected)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float16, np.float32, np.float64])
def test_code_dtypes_give_identical_results(dtype):
    qc, ql, dc, dl = small_problem()
    expected = evaluate(qc, ql, dc, dl)
    assert_same_results(evaluate(qc.astype(dtype), ql, dc.astype(dtype), dl), expected)


def test_results_do_not_depend_on_chunks_or_threads():
    qc, ql, dc, dl = small_problem(multi_label=True)
    expected = evaluate(qc, ql, dc, dl, tie_aware=True, chunk_size=1000, num_workers=1)
    for chunk_size, num_workers in [(1, 1), (7, 2), (10, 3), (None, None)]:
        got = evaluate(qc, ql, dc, dl, tie_aware=True, chunk_size=chunk_size, num_workers=num_workers)
        assert got.keys() == expected.keys()
        for key in got:
            np.testing.assert_allclose(got[key], expected[key], rtol=1e-13, atol=1e-15, err_msg=key)


def test_one_hot_labels_equal_class_indices():
    qc, ql, dc, dl = small_problem()
    one_hot = np.eye(4, dtype=np.float32)
    assert_same_results(evaluate(qc, one_hot[ql], dc, one_hot[dl]), evaluate(qc, ql, dc, dl))


def test_evaluate_keys_and_shapes():
    qc, ql, dc, dl = small_problem()
    result = evaluate(qc, ql, dc, dl, tie_aware=True)
    assert set(result) == {
        "mAP@100", "mAP@1000", "mAP@ALL", "k", "precision@k", "recall@k",
        "pr_radius", "pr_precision", "pr_recall",
        "tie_aware_mAP@100", "tie_aware_mAP@1000", "tie_aware_mAP@ALL", "tie_aware_precision@k",
        "tie_aware_recall@k",
    }  # fmt: skip
    np.testing.assert_array_equal(result["k"], DEFAULT_KS)
    assert DEFAULT_KS[:4] == (1, 5, 10, 15) and DEFAULT_KS[-1] == 500 and len(DEFAULT_KS) == 101
    assert result["precision@k"].shape == result["recall@k"].shape == (101,)
    assert result["pr_precision"].shape == (13,)
    assert all(isinstance(result[key], float) for key in result if "mAP" in key)
    # The database has 80 items: K = 100 and K = 1000 both mean the whole database.
    assert result["mAP@100"] == result["mAP@1000"] == result["mAP@ALL"]
    assert set(evaluate(qc, ql, dc, dl, pr=False)) == {"mAP@100", "mAP@1000", "mAP@ALL", "k", "precision@k", "recall@k"}


# --------------------------------------------------------------------------- #
# Bad inputs
# --------------------------------------------------------------------------- #

CODES = np.array([[1, -1, 1], [-1, -1, 1]])
LABELS = np.array([0, 1])


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((np.array([[1, 0, 1]]), [0], CODES, LABELS), {}, r"only -1 and \+1; found 0.*2 \* b - 1"),
        ((np.array([[0.3, -1, 1]]), [0], CODES, LABELS), {}, "only -1 and"),
        ((np.array([1, -1, 1]), [0], CODES, LABELS), {}, r"2-D \(n_items, n_bits\).*codes\[None, :\]"),
        ((np.ones((1, 4)), [0], CODES, LABELS), {}, "4 bits but db_codes have 3"),
        ((CODES, [0], CODES, LABELS), {}, "query_labels has 1 rows but query_codes has 2"),
        ((CODES, LABELS, CODES, [0, 1, 2]), {}, "db_labels has 3 rows but db_codes has 2"),
        ((CODES, np.eye(2), CODES, LABELS), {}, "query_labels are multi-hot but db_labels are class indices"),
        ((CODES, np.eye(2), CODES, np.eye(2, 3)), {}, "2 classes but db_labels have 3"),
        ((CODES, [0.0, 1.0], CODES, LABELS), {}, r"integer class indices.*astype\(int\)"),
        ((CODES, np.eye(2) * 2, CODES, np.eye(2)), {}, "multi-hot with values 0/1"),
        ((CODES[:0], [], CODES, LABELS), {}, "query_codes is empty"),
        ((CODES, LABELS, CODES, LABELS), {"topks": (0,)}, "each topk must be a positive integer; got 0"),
        ((CODES, LABELS, CODES, LABELS), {"topks": (5, 5)}, "duplicates"),
        ((CODES, LABELS, CODES, LABELS), {"topks": 100}, r"sequence such as \(100, 1000, None\)"),
        ((CODES, LABELS, CODES, LABELS), {"ks": (1, -5)}, "each k in ks must be a positive integer; got -5"),
        ((CODES, LABELS, CODES, LABELS), {"chunk_size": 0}, "chunk_size must be a positive integer"),
        ((CODES, LABELS, CODES, LABELS), {"num_workers": 1.5}, "num_workers must be a positive integer"),
    ],
)
def test_bad_inputs_raise_clear_errors(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        evaluate(*args, **kwargs)


def test_non_numeric_input_raises():
    with pytest.raises(TypeError, match="numeric array"):
        mean_average_precision([["a", "b"]], [0], CODES[:, :2], LABELS)


# --------------------------------------------------------------------------- #
# The benchmark script (quick variant): runs, and agrees with its CalcTopMap copy
# --------------------------------------------------------------------------- #


def test_benchmark_quick_run_matches_calc_top_map():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_metrics.py"
    spec = importlib.util.spec_from_file_location("bench_metrics", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.run(quick=True)
    checks = [row for row in rows if "ours" in row]
    assert [row["topk"] for row in checks] == [100, 1000, None]
    for row in checks:  # DeepHash-pytorch's loop with a stable argsort breaks ties as we do
        assert row["abs_diff_stable"] < 1e-12, row
    assert "speed-up" in bench.format_table(rows)


# ---------------------------------------------------------------------------------------------
# The compiled single-pass mAP (numba) equals the numpy path, ties and several words included
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_bits", [16, 64, 100])
def test_compiled_map_equals_numpy_path(monkeypatch, num_bits):
    from shc import metrics

    pytest.importorskip("numba")
    rng = np.random.default_rng(num_bits)
    db_labels, query_labels = rng.integers(0, 7, 400), rng.integers(0, 8, 50)  # class 7: no relevant item
    db = rng.choice([-1, 1], (400, num_bits))
    query = rng.choice([-1, 1], (50, num_bits))
    query[:5] = db[:5]  # exact matches; 16 bits also ties heavily
    topks = (1, 10, 100, None, 1000)
    from shc.metrics import onepass

    kernel_calls = []
    build = onepass._compiled_average_precision

    def counted():  # the compiled kernel, counting the evaluations it serves
        kernel = build()
        return None if kernel is None else lambda *arguments: kernel_calls.append(1) or kernel(*arguments)

    monkeypatch.setattr(onepass, "_compiled_average_precision", counted)
    compiled = metrics.evaluate(query, query_labels, db, db_labels, topks=topks, ks=(), pr=False)
    assert kernel_calls == [1], "the compiled kernel did not compute this evaluation: nothing would be compared"
    monkeypatch.setenv("SHC_METRICS_BACKEND", "numpy")
    reference = metrics.evaluate(query, query_labels, db, db_labels, topks=topks, ks=(), pr=False)
    assert kernel_calls == [1]  # the numpy path
    for key in reference:
        if key.startswith("mAP@"):
            assert compiled[key] == pytest.approx(reference[key], abs=1e-12), key


# --------------------------------------------------------------------------- #
# Rank-based PR curve, per-query AP, per-class means
# --------------------------------------------------------------------------- #


def test_rank_cutoffs_span_the_ranking():
    cuts = metrics.rank_cutoffs(1000, 200)
    assert cuts[0] == 1 and cuts[-1] == 1000 and len(cuts) == 200
    assert np.all(np.diff(cuts) > 0)
    np.testing.assert_array_equal(metrics.rank_cutoffs(50, 200), np.arange(1, 51))
    np.testing.assert_array_equal(metrics.rank_cutoffs(7, 1), [7])
    with pytest.raises(ValueError, match="num_points"):
        metrics.rank_cutoffs(10, 0)


@pytest.mark.parametrize("multi_label, n_bits", SETTINGS)
def test_rank_pr_curve_matches_brute_force(multi_label, n_bits):
    rng = np.random.default_rng(100 + n_bits + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 19, 140, n_bits, 5, multi_label)
    curve = metrics.rank_pr_curve(qc, ql, dc, dl, num_points=40, chunk_size=6, num_workers=2)
    cuts = curve["rank_k"]
    assert cuts[0] == 1 and cuts[-1] == 140 and len(cuts) == 40
    precision, recall = brute_precision_recall(qc, ql, dc, dl, cuts)
    np.testing.assert_allclose(curve["rank_precision"], precision, rtol=1e-12)
    np.testing.assert_allclose(curve["rank_recall"], recall, rtol=1e-12)
    assert curve["rank_recall"][-1] == pytest.approx(1.0)  # the whole database retrieves every relevant item


def test_rank_pr_curve_hand_computed():
    # Query 0 at distances 0, 1, 2 from items 0, 1, 2; items 0 and 2 relevant: ranking rel, not, rel.
    qc = np.array([[1, 1]])
    dc = np.array([[1, 1], [1, -1], [-1, -1]])
    curve = metrics.rank_pr_curve(qc, np.array([0]), dc, np.array([0, 1, 0]), num_points=3)
    np.testing.assert_array_equal(curve["rank_k"], [1, 2, 3])
    np.testing.assert_allclose(curve["rank_precision"], [1.0, 0.5, 2 / 3])
    np.testing.assert_allclose(curve["rank_recall"], [0.5, 0.5, 1.0])


@pytest.mark.parametrize("call, message", [
    (lambda a: rank_pr_curve(*a, num_points=0), "num_points must be a positive integer"),  # was a bare KeyError
    (lambda a: rank_pr_curve(*a, num_points=-5), "num_points must be a positive integer"),  # named rank_points
    (lambda a: precision_recall_at_k(*a, ks=5), r"ks must be a sequence of cut-offs such as \(1, 5, 10\); got 5"),
])
def test_curve_arguments_are_refused_by_their_own_names(call, message):
    """A newcomer's probe: num_points=0 crashed with KeyError 'rank_k', num_points=-5 named another function's
    argument and offered 0 as valid, and ks=5 raised "'int' object is not iterable"."""
    codes = np.array([[1, -1, 1, 1], [-1, -1, 1, 1], [1, 1, -1, 1]])
    with pytest.raises(ValueError, match=message):
        call((codes[:1], np.array([0]), codes, np.array([0, 1, 0])))


def test_rank_pr_curve_joins_evaluate_without_changing_other_keys():
    qc, ql, dc, dl = small_problem()
    plain = evaluate(qc, ql, dc, dl)
    both = evaluate(qc, ql, dc, dl, rank_points=25)
    assert set(both) - set(plain) == {"rank_k", "rank_precision", "rank_recall"}
    assert_same_results({key: both[key] for key in plain}, plain)
    with pytest.raises(ValueError, match="rank_points"):
        evaluate(qc, ql, dc, dl, rank_points=-1)


@pytest.mark.parametrize("backend", ["auto", "numpy"])
@pytest.mark.parametrize("multi_label, n_bits", SETTINGS)
def test_average_precision_per_query_matches_brute_force(monkeypatch, backend, multi_label, n_bits):
    monkeypatch.setenv("SHC_METRICS_BACKEND", backend)  # "auto": the compiled kernel where it applies
    rng = np.random.default_rng(200 + n_bits + multi_label)
    qc, ql, dc, dl = clustered_data(rng, 21, 120, n_bits, 5, multi_label)
    for topk in (None, 10):
        n = len(dc) if topk is None else topk
        expected = [average_precision(relevance_in_order(qc[i], ql[i], dc, dl), n) for i in range(len(qc))]
        got = metrics.average_precision_per_query(qc, ql, dc, dl, topk, chunk_size=5, num_workers=2)
        assert got.shape == (21,)
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15)
        assert got.mean() == pytest.approx(mean_average_precision(qc, ql, dc, dl, topk))


def test_tie_aware_average_precision_per_query_averages_to_tie_aware_map():
    qc, ql, dc, dl = small_problem()
    result = evaluate(qc, ql, dc, dl, topks=(None, 20), tie_aware=True, per_query=True)
    for key in ("ALL", "20"):
        assert result[f"tie_aware_AP@{key}"].mean() == pytest.approx(result[f"tie_aware_mAP@{key}"], rel=1e-12)
        assert result[f"AP@{key}"].mean() == pytest.approx(result[f"mAP@{key}"], rel=1e-12)
    single = [brute_tie_aware_map(qc[i : i + 1], ql[i : i + 1], dc[:12], dl[:12], None) for i in range(3)]
    np.testing.assert_allclose(
        metrics.average_precision_per_query(qc[:3], ql[:3], dc[:12], dl[:12], tie_aware=True), single, rtol=1e-12
    )


def test_per_class_mean_by_hand():
    means, counts = metrics.per_class_mean([0.2, 0.4, 1.0, 0.5], np.array([0, 0, 2, 3]), num_classes=5)
    np.testing.assert_allclose(means, [0.3, np.nan, 1.0, 0.5, np.nan])
    np.testing.assert_array_equal(counts, [2, 0, 1, 1, 0])
    multi = np.array([[1, 1, 0], [0, 1, 0], [0, 0, 0]])  # query 0 counts for classes 0 and 1
    means, counts = metrics.per_class_mean([0.6, 0.2, 0.9], multi)
    np.testing.assert_allclose(means, [0.6, 0.4, np.nan])
    np.testing.assert_array_equal(counts, [1, 2, 0])
    with pytest.raises(ValueError, match="out of range"):
        metrics.per_class_mean([0.1], np.array([3]), num_classes=2)
    with pytest.raises(ValueError, match="same n"):
        metrics.per_class_mean([0.1, 0.2], np.array([0]))
