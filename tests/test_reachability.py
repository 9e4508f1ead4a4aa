"""Reachability (issue 35): did a network reach its own targets? Hand-built codes, brute force, the pipeline."""

from __future__ import annotations

import json

import numpy as np
import pytest

from shc.evaluation import evaluate_codes, reachability_scores
from shc.reachability import (REACHABILITY_KEYS, center_hit_rate, class_hit_rates, majority_codes,
                              nearest_target_distance, reachability)


def test_hit_rate_bit_errors_and_majority_by_hand():
    targets = np.array([[1, 1, 1, 1], [-1, -1, -1, -1], [1, 1, -1, -1]])
    codes = np.array([
        [1, 1, 1, 1],      # class 0, on its center: hit
        [-1, 1, 1, 1],     # class 0, 1 bit off, 3 from the others: hit
        [1, 1, -1, 1],     # class 0, 1 off; class 2's also 1 off: tie of 2 -> 1/2
        [1, 1, -1, -1],    # class 1, 2 off, on class 2's center: miss
        [-1, -1, -1, 1],   # class 1, 1 off: hit
    ])
    labels = np.array([0, 0, 0, 1, 1])
    assert center_hit_rate(codes, labels, targets) == pytest.approx((1 + 1 + 0.5 + 0 + 1) / 5)
    majority = majority_codes(codes, labels, 3)
    # class 0 sums (1, 3, 1, 3) -> +1; class 1 sums (0, 0, -2, 0) -> (+1, +1, -1, +1) (sign(0) = +1); class 2 unseen
    np.testing.assert_array_equal(majority, [[1, 1, 1, 1], [1, 1, -1, 1], [1, 1, 1, 1]])
    scores = reachability(codes, labels, targets, majority)
    assert set(scores) == set(REACHABILITY_KEYS)
    assert scores["center_bit_error"] == pytest.approx((0 + 1 + 1 + 2 + 1) / 20)
    assert scores["majority_bit_error"] == pytest.approx((0 + 1 + 1 + 1 + 2) / 20)


def test_hit_rate_equals_a_brute_force_loop_with_fractional_ties():
    rng = np.random.default_rng(4)
    targets = rng.choice([-1, 1], (7, 6))
    targets[3] = targets[1]  # duplicate targets: always a tie
    codes, labels = rng.choice([-1, 1], (300, 6)), rng.integers(0, 7, 300)
    expected = []
    for code, label in zip(codes, labels):
        distances = [int(np.sum(code != target)) for target in targets]
        best = min(distances)
        expected.append(1 / distances.count(best) if distances[label] == best else 0.0)
    assert center_hit_rate(codes, labels, targets) == pytest.approx(np.mean(expected))


def test_class_hit_rates_by_hand_and_their_weighted_mean_is_the_hit_rate():
    targets = np.array([[1, 1, 1, 1], [-1, -1, -1, -1], [1, 1, -1, -1]])
    codes = np.array([[1, 1, 1, 1], [-1, 1, 1, 1], [1, 1, -1, 1], [1, 1, -1, -1], [-1, -1, -1, 1]])
    labels = np.array([0, 0, 0, 1, 1])  # the hand example above: class 0 hits 1, 1, 1/2; class 1 hits 0, 1
    rates = class_hit_rates(codes, labels, targets)
    np.testing.assert_allclose(rates[:2], [2.5 / 3, 0.5])
    assert np.isnan(rates[2])  # class 2 has no image
    rng = np.random.default_rng(5)
    targets, codes, labels = rng.choice([-1, 1], (6, 8)), rng.choice([-1, 1], (400, 8)), rng.integers(0, 6, 400)
    rates, counts = class_hit_rates(codes, labels, targets), np.bincount(labels, minlength=6)
    assert np.sum(rates * counts) / counts.sum() == pytest.approx(center_hit_rate(codes, labels, targets))


def test_nearest_target_distance_by_hand_and_by_brute_force():
    targets = np.array([[1, 1, 1, 1], [-1, -1, -1, -1], [1, 1, -1, -1], [1, 1, 1, -1]])
    # distances: 0-1 4, 0-2 2, 0-3 1, 1-2 2, 1-3 3, 2-3 1
    np.testing.assert_array_equal(nearest_target_distance(targets), [1, 2, 1, 1])
    rng = np.random.default_rng(6)
    targets = rng.choice([-1, 1], (9, 12))
    brute = [min(int(np.sum(targets[i] != targets[j])) for j in range(9) if j != i) for i in range(9)]
    np.testing.assert_array_equal(nearest_target_distance(targets), brute)
    with pytest.raises(ValueError, match="at least 2"):
        nearest_target_distance(targets[:1])


def test_codes_on_their_targets_hit_and_additive_codes_cannot_reach_xor_targets():
    """The confound of issue 35 in miniature: two items, each bit of a class code a sum of per-item scores can
    only be an additive (threshold) function of the items; XOR targets are out of its reach."""
    targets = np.array([[1, 1], [-1, 1], [1, -1], [-1, -1]])  # class = (a, b) in {0,1}^2; bit 0 = +1 iff a == b
    labels = np.arange(4).repeat(5)
    on_target = reachability(targets[labels], labels, targets, majority_codes(targets[labels], labels, 4))
    assert on_target == {"center_hit_rate": 1.0, "center_bit_error": 0.0, "majority_bit_error": 0.0}
    a, b = np.array([0, 1, 1, 0])[labels], np.array([0, 0, 1, 1])[labels]
    best_additive = max(  # every threshold rule sign(w_a a + w_b b + c) on a small grid of weights
        np.mean(np.where(wa * a + wb * b + c >= 0, 1, -1) == targets[labels, 0])
        for wa in (-1, 0, 1) for wb in (-1, 0, 1) for c in (-1.5, -0.5, 0.5, 1.5))
    assert best_additive == 0.75  # no additive rule gets bit 0 of every class


def test_additive_bits_are_exactly_the_threshold_functions_of_the_items():
    from itertools import product

    from shc.reachability import additive_bits

    items = np.array(list(product(range(2), range(2))))  # classes (a, b)
    a, b = items.T
    targets = np.stack([np.where(a == b, 1, -1),           # XOR-like: not additive
                        np.where(a & b, 1, -1),            # AND: additive
                        np.where(a == 1, 1, -1),           # one item only: additive
                        np.ones(4, int)], axis=1)          # constant: additive
    np.testing.assert_array_equal(additive_bits(targets, items), [False, True, True, True])
    # brute force on 3 x 3 classes: a bit is additive iff some integer scores in -2..2 and a half-integer bias fit
    items = np.array(list(product(range(3), range(3))))
    rng = np.random.default_rng(1)
    targets = rng.choice([-1, 1], (9, 12))
    grid = np.array(list(product(range(-2, 3), repeat=3)))
    expected = []
    for bit in targets.T:
        fits = any(np.all(np.sign(g1[items[:, 0]] + g2[items[:, 1]] + bias) == bit)
                   for g1 in grid for g2 in grid for bias in (-2.5, -1.5, -0.5, 0.5, 1.5, 2.5))
        expected.append(fits)
    np.testing.assert_array_equal(additive_bits(targets, items), expected)
    with pytest.raises(ValueError, match="class_items must be"):
        additive_bits(targets, items[:3])


def test_the_additive_fit_is_additive_and_no_better_than_the_best_additive_rule():
    from itertools import product

    from shc.reachability import additive_fit

    items = np.array(list(product(range(3), range(3))))
    grid = np.array(list(product(range(-2, 3), repeat=3)))
    rules = {tuple(np.sign(g1[items[:, 0]] + g2[items[:, 1]] + bias))
             for g1 in grid for g2 in grid for bias in (-2.5, -1.5, -0.5, 0.5, 1.5, 2.5)}
    rng = np.random.default_rng(2)
    additive = np.array(sorted(rules))[rng.choice(len(rules), 5, replace=False)].T  # bits an additive net can make
    targets = np.concatenate([rng.choice([-1, 1], (9, 10)), additive], axis=1)
    fitted = additive_fit(targets, items)
    exact = 0
    for j in range(targets.shape[1]):
        assert tuple(fitted[:, j]) in rules  # every fitted bit is itself an additive rule (on 3 x 3 items) ...
        best = max(np.sum(np.array(rule) == targets[:, j]) for rule in rules)
        assert np.sum(fitted[:, j] == targets[:, j]) <= best  # ... and agrees with the targets at most as the best
        if tuple(targets[:, j]) in rules:  # an additive target is reproduced exactly (zero hinge is optimal)
            np.testing.assert_array_equal(fitted[:, j], targets[:, j])
            exact += 1
    assert exact >= 5 and exact < targets.shape[1]  # both kinds of bit were checked


def test_evaluate_codes_adds_reachability_only_with_training_codes():
    rng = np.random.default_rng(0)
    centers = rng.choice([-1, 1], (3, 8))
    train_labels, query_labels = np.arange(3).repeat(4), np.arange(3).repeat(2)
    codes = {"query_codes": centers[query_labels], "query_labels": query_labels,
             "database_codes": centers[train_labels], "database_labels": train_labels}
    assert "train_center_hit_rate" not in evaluate_codes(codes)
    train_codes = centers[train_labels].copy()
    train_codes[0] *= -1  # one training image fully off its center
    codes.update(train_codes=train_codes, train_labels=train_labels)
    majority_only = reachability_scores(codes)
    assert majority_only["reach_targets"] == "majority codes"
    assert majority_only["query_center_hit_rate"] == 1.0  # the majority of class 0 is still its center
    with_targets = evaluate_codes({**codes, "target_codes": centers, "target_kind": np.array("learned class codes")})
    assert with_targets["reach_targets"] == "learned class codes"
    assert with_targets["train_center_bit_error"] == pytest.approx(8 / (12 * 8))
    assert with_targets["query_center_hit_rate"] == 1.0
    assert reachability_scores({**codes, "train_labels": np.eye(3)[train_labels]}) == {}  # multi-hot: none


def test_bad_input_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="one class per image"):
        center_hit_rate(np.ones((2, 4)), np.eye(2), np.ones((2, 4)))
    with pytest.raises(ValueError, match="must match"):
        center_hit_rate(np.ones((2, 4)), [0, 1], np.ones((2, 3)))
    with pytest.raises(ValueError, match="labels"):
        majority_codes(np.ones((2, 4)), [0, 5], 3)


@pytest.mark.parametrize("method", ["csq", "crh", "greedyhash"])
def test_every_run_records_reachability_against_its_own_targets(tmp_path, method):
    """A finished stage 3 stores the training codes and its targets; metrics.json holds reachability recomputed
    here from codes.npz: CSQ against its centers.npy, CRH against its final class_centers.npy, GreedyHash
    against the majority codes of its training codes."""
    from shc.pipeline import RunConfig, run, stage_directories

    config = RunConfig(method=method, run_dir=str(tmp_path), epochs=1, classifier_epochs=1, eval_every=1, bits=16,
                       dataset_options={"num_classes": 20, "train_per_class": 6, "val_per_class": 2,
                                        "query_per_class": 2, "database_per_class": 4})
    metrics = run(config).metrics
    folders = stage_directories(config)
    with np.load(folders["stage3"] / "codes.npz") as archive:
        codes = {key: archive[key] for key in archive.files}
    assert len(codes["train_codes"]) == 20 * 6
    expected_targets = {"csq": lambda: np.load(folders["stage2"] / "centers.npy"),
                        "crh": lambda: np.load(folders["stage3"] / "class_centers.npy"),
                        "greedyhash": lambda: majority_codes(codes["train_codes"], codes["train_labels"], 20)}[method]()
    assert metrics["reach_targets"] == {"csq": "centers", "crh": "learned class codes",
                                        "greedyhash": "majority codes"}[method]
    majority = majority_codes(codes["train_codes"], codes["train_labels"], 20)
    for split in ("train", "query"):
        own = reachability(codes[f"{split}_codes"], codes[f"{split}_labels"], expected_targets, majority)
        for key, value in own.items():
            assert metrics[f"{split}_{key}"] == pytest.approx(value)
    assert json.loads((folders["stage3"] / "metrics.json").read_text())["train_center_hit_rate"] == pytest.approx(
        metrics["train_center_hit_rate"])
    if "target_codes" in codes:  # benchmarks/reachability.py --by-distance reads the same run: its classes and rates
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
        from reachability import distance_rows

        rows = distance_rows([config])
        assert sum(row["classes"] for row in rows[:-1]) == rows[-1]["classes"] == 20
        # every class has 6 training images, so the mean of the class rates is the run's training hit rate
        assert float(rows[-1]["mean class hit"]) == pytest.approx(metrics["train_center_hit_rate"], abs=5e-4)
        nearest = nearest_target_distance(expected_targets)
        assert [row["nearest target at"] for row in rows[:-1]] == [str(d) for d in np.unique(nearest)]


def test_center_and_majority_bit_errors_are_measured_against_their_own_codes():
    """A mutation audit swapped the two (center error against the majority code and back) and no test failed: in the
    hand example both were 5/20, elsewhere the majority code was the center. Here the center is all +1 and the
    majority code all -1: 1 of 4 bits differs from the center in the second code, 3 of 4 from the majority code."""
    scores = reachability([[1, 1, 1, 1], [1, 1, -1, -1]], [0, 0], [[1, 1, 1, 1]], [[-1, -1, -1, -1]])
    assert scores["center_bit_error"] == pytest.approx((0 + 2) / 8)
    assert scores["majority_bit_error"] == pytest.approx((4 + 2) / 8)


def test_antipodal_targets_are_q_apart():
    """Two targets at the largest distance q (2 classes, antipodal codes): the self-distance mask must not cap it at
    q - 1 (a surviving mutation filled the diagonal with q - 1)."""
    assert nearest_target_distance([[1] * 4, [-1] * 4]).tolist() == [4, 4]
    assert nearest_target_distance([[1] * 4, [-1] * 4, [1, 1, -1, -1]]).tolist() == [2, 2, 2]
