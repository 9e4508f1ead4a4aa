"""Property-based tests (hypothesis) of the pure functions: random shapes, ties, NaN/inf, empty inputs,
C > 2^q, a single class. Each call either returns the value a brute-force reference gives, or raises a clear
ValueError/TypeError; nothing else (no silent wrong value, no other exception)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from shc.centers import center_quality, generate_centers, gv_min_distance
from shc.metrics import mean_average_precision, precision_recall_at_k
from shc.similarity import similarity_from_logits, validate_similarity
from shc.validation import hamming_distance_matrix

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _codes(draw, n, q):
    return draw(hnp.arrays(np.int8, (n, q), elements=st.sampled_from([-1, 1])))


def _brute_map(qc, ql, dc, dl, topk=None):
    """Ranking by (distance, database index); AP = mean precision at each relevant hit in the top k."""
    aps = []
    for code, label in zip(qc, ql):
        distances = np.sum(dc != code, axis=1)
        order = sorted(range(len(dc)), key=lambda j: (distances[j], j))[: topk or len(dc)]
        hits, precisions = 0, []
        for rank, j in enumerate(order, 1):
            if dl[j] == label:
                hits += 1
                precisions.append(hits / rank)
        aps.append(np.mean(precisions) if precisions else 0.0)
    return float(np.mean(aps))


@SETTINGS
@given(st.data())
def test_map_equals_the_brute_force_ranking_with_ties(data):
    q = data.draw(st.integers(1, 12))  # few bits: ties everywhere
    n_q, n_db = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 30))
    classes = data.draw(st.integers(1, 4))
    qc, dc = _codes(data.draw, n_q, q), _codes(data.draw, n_db, q)
    ql = data.draw(hnp.arrays(np.int64, n_q, elements=st.integers(0, classes - 1)))
    dl = data.draw(hnp.arrays(np.int64, n_db, elements=st.integers(0, classes - 1)))
    topk = data.draw(st.one_of(st.none(), st.integers(1, n_db)))
    assert mean_average_precision(qc, ql, dc, dl, topk=topk) == pytest.approx(_brute_map(qc, ql, dc, dl, topk))
    precision, _ = precision_recall_at_k(qc, ql, dc, dl, ks=[n_db])
    assert np.all((precision >= 0) & (precision <= 1))


@SETTINGS
@given(st.data())
def test_metrics_refuse_bad_values_clearly(data):
    q = data.draw(st.integers(1, 8))
    codes = _codes(data.draw, 3, q).astype(np.float64)
    bad = data.draw(st.sampled_from([0.0, 0.5, np.nan, np.inf, -np.inf, 2.0]))
    codes[data.draw(st.integers(0, 2)), data.draw(st.integers(0, q - 1))] = bad
    labels = np.array([0, 1, 0])
    with pytest.raises(ValueError, match="must contain only -1 and \\+1"):
        mean_average_precision(codes, labels, codes, labels)
    with pytest.raises(ValueError, match="is empty"):
        mean_average_precision(np.zeros((0, q)), np.zeros(0, int), np.ones((2, q)), labels[:2])


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 5000), st.integers(2, 40))
def test_gv_distance_is_the_smallest_d_meeting_the_bound(num_classes, num_bits):
    if num_classes > 2**num_bits:
        with pytest.raises(ValueError, match="cannot have distinct centers"):
            gv_min_distance(num_classes, num_bits)
        return
    d = gv_min_distance(num_classes, num_bits)
    total = lambda d: sum(math.comb(num_bits, i) for i in range(d))  # noqa: E731
    assert num_classes * total(d) >= 2**num_bits
    assert d == 1 or num_classes * total(d - 1) < 2**num_bits


@SETTINGS
@given(st.integers(2, 40), st.sampled_from([8, 16, 32]), st.integers(0, 3))
def test_distance_centers_keep_the_gv_distance_and_hamming_matches_brute_force(num_classes, num_bits, seed):
    d = gv_min_distance(num_classes, num_bits)
    try:
        centers = generate_centers("mds", num_classes, num_bits, seed=seed)
    except RuntimeError as error:  # GV guarantees d - 1 only; the error must say so and d - 1 must work
        assert f"min_distance={d - 1}" in str(error)
        centers = generate_centers("mds", num_classes, num_bits, seed=seed, min_distance=d - 1)
        assert center_quality(centers)["d_min"] >= d - 1
        return
    distances = hamming_distance_matrix(centers)
    brute = (centers[:, None, :] != centers[None, :, :]).sum(axis=2)
    np.testing.assert_array_equal(distances, brute)
    off = brute[~np.eye(num_classes, dtype=bool)]
    assert center_quality(centers)["d_min"] == off.min() >= gv_min_distance(num_classes, num_bits)


@SETTINGS
@given(st.data())
def test_similarity_from_logits_is_a_valid_similarity_or_a_clear_error(data):
    classes = data.draw(st.integers(1, 6))
    n = data.draw(st.integers(0, 20))
    logits = data.draw(hnp.arrays(np.float64, (n, classes),
                                  elements=st.floats(-30, 30, allow_nan=False) | st.sampled_from([np.nan, np.inf])))
    labels = data.draw(hnp.arrays(np.int64, n, elements=st.integers(0, classes - 1)))
    # which defect the inputs have, decided here, in the function's order of checks: each must be refused by name,
    # and inputs without one must give a valid S (an error there fails the test)
    if n == 0:
        problem = r"shape \(N, C\) with N >= 1"
    elif classes < 2:
        problem = "at least 2 classes"
    elif not np.all(np.isfinite(logits)):
        problem = "NaN or infinite"
    elif set(labels.tolist()) != set(range(classes)):
        problem = "have no samples"
    else:
        problem = None
    if problem is not None:
        with pytest.raises(ValueError, match=problem):
            similarity_from_logits(logits, labels, classes)
        return
    S = similarity_from_logits(logits, labels, classes)
    validate_similarity(S, classes)
    assert np.allclose(S, S.T) and np.all(np.diag(S) == 1) and np.all(np.abs(S) <= 1 + 1e-12)


@SETTINGS
@given(st.data())
def test_similarity_from_logits_of_valid_input_is_a_valid_similarity(data):
    # the test above draws valid input rarely (finite logits whose labels cover every class): here every example
    # is valid, each class has a sample (the first C labels) and the rest are drawn
    classes = data.draw(st.integers(2, 6))
    extra = data.draw(st.integers(0, 20))
    logits = data.draw(hnp.arrays(np.float64, (classes + extra, classes), elements=st.floats(-30, 30)))
    drawn = data.draw(hnp.arrays(np.int64, extra, elements=st.integers(0, classes - 1)))
    labels = np.concatenate([np.arange(classes), drawn])
    S = similarity_from_logits(logits, labels, classes)
    validate_similarity(S, classes)
    assert np.allclose(S, S.T) and np.all(np.diag(S) == 1) and np.all(np.abs(S) <= 1 + 1e-12)
