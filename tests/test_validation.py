"""Tests of shc.validation's code helpers: the one sign rule and the one Hamming distance, against brute force."""

from __future__ import annotations

import numpy as np
import pytest

from shc import validation
from shc.validation import hamming_distance_matrix, sign_pm1


def test_sign_pm1_maps_zero_and_negative_zero_to_plus_one():
    x = np.array([0.0, -0.0, 1.5, -2.0, 1e-300, -1e-300])
    assert sign_pm1(x).tolist() == [1, 1, 1, -1, 1, -1] and sign_pm1(x).dtype == np.int8
    assert sign_pm1(x, np.float64).dtype == np.float64
    assert sign_pm1([[0, -3], [4, 0]]).tolist() == [[1, -1], [1, 1]]


@pytest.mark.parametrize("bits", [1, 7, 16, 65])
def test_hamming_distance_matrix_counts_differing_bits_across_row_blocks(monkeypatch, bits):
    monkeypatch.setattr(validation, "DISTANCE_BLOCK", 3)  # 10 rows: blocks of 3, 3, 3 and 1
    rng = np.random.default_rng(bits)
    a = rng.choice(np.array([-1, 1], np.int8), size=(10, bits))
    b = rng.choice([-1, 1], size=(4, bits))
    brute = (a[:, None, :] != b[None, :, :]).sum(axis=2)
    assert np.array_equal(hamming_distance_matrix(a, b), brute)
    assert hamming_distance_matrix(a, b).dtype == np.int64
    pairwise = hamming_distance_matrix(a, dtype=np.int32)
    assert pairwise.dtype == np.int32 and np.array_equal(pairwise, (a[:, None, :] != a[None, :, :]).sum(axis=2))


def test_hamming_distance_matrix_refuses_codes_it_cannot_count_exactly():
    with pytest.raises(ValueError, match="same number of bits"):
        hamming_distance_matrix(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="only -1 and \\+1"):
        hamming_distance_matrix(np.array([[1, 0]]))
    with pytest.raises(ValueError, match="split them into chunks"):
        hamming_distance_matrix(np.ones((1, 2**24), np.int8))


def test_a_single_label_column_is_refused_not_read_as_one_class_multi_hot():
    """``y.reshape(-1, 1)`` of a two-class problem was read as multi-hot of one class: class 0 was no class, and
    mAP fell from the 1-D labels' value without a word (a newcomer's probe, 2026-12-03)."""
    from shc.metrics import mean_average_precision

    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 80)
    codes = np.where(labels[:, None] == 1, 1, -1) * np.ones((1, 8), int)  # each class its own code
    assert mean_average_precision(codes[:50], labels[:50], codes[50:], labels[50:]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match=r"one column is ambiguous .*query_labels\.ravel\(\)"):
        mean_average_precision(codes[:50], labels[:50, None], codes[50:], labels[50:, None])
    two_classes = np.eye(2, dtype=int)[labels]  # multi-hot with a column per class: the same ranking, the same mAP
    assert mean_average_precision(codes[:50], two_classes[:50], codes[50:], two_classes[50:]) == pytest.approx(1.0)
