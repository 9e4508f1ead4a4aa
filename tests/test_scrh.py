"""SCRH (shc.losses.SemanticCRHLoss, shc.codebook.semantic_codebook / semantic_greedy_assignment): the start is the
semantic centers, the semantic greedy pass is checked against a plain-Python loop and a hand example, weight 0 is
CRH's pass, the loss is CRH's, and an interrupted run resumes bit-identically."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shc.codebook import (
    greedy_assignment,
    reassign,
    reassignment_pressure,
    semantic_codebook,
    semantic_greedy_assignment,
)
from shc.losses import CRHLoss, SemanticCRHLoss
from shc.methods import build_criterion, get_method
from shc.train import fit
from tests.test_crh import SETTINGS, Indexed, Interrupting, blobs, crh_state, network


def random_centers(classes, bits, seed):
    return np.where(np.random.default_rng(seed).random((classes, bits)) < 0.5, -1, 1).astype(np.int8)


def test_the_start_is_the_semantic_centers_and_every_codebook_row_is_distinct():
    centers = random_centers(6, 16, 0)
    codebooks, assignment = semantic_codebook(centers, num_heads=2, size=12, rng=np.random.default_rng(0))
    assert codebooks.shape == (2, 12, 8) and assignment.shape == (2, 6)
    start = np.concatenate([codebooks[head, assignment[head]] for head in range(2)], axis=1)
    np.testing.assert_array_equal(start, centers)
    for head in range(2):
        assert len({tuple(row) for row in codebooks[head]}) == 12
        assert len(set(assignment[head].tolist())) == 6


def test_classes_sharing_a_sub_code_start_on_distinct_candidates_the_first_keeping_its_own():
    centers = np.array([[1, 1, -1, -1], [1, 1, 1, 1], [-1, 1, 1, -1]], dtype=np.int8)  # head 0: classes 0, 1 share
    codebooks, assignment = semantic_codebook(centers, num_heads=2, size=4, rng=np.random.default_rng(1))
    assert tuple(codebooks[0, assignment[0, 0]]) == (1, 1)  # class 0 keeps (1, 1); class 1 takes a nearest other
    assert assignment[0, 1] != assignment[0, 0]
    assert np.abs(codebooks[0, assignment[0, 1]] - np.array([1, 1])).sum() == 2  # one bit away
    np.testing.assert_array_equal(codebooks[1, assignment[1]], centers[:, 2:])  # head 1: all distinct, all kept
    with pytest.raises(ValueError, match="cannot hold"):
        semantic_codebook(centers, num_heads=2, size=5, rng=np.random.default_rng(1))  # 5 > 2^2 candidates


def _plain_semantic_greedy(costs, codebook, chunks, others, similarity, num_bits, weight, order):
    """The pass written with scalar loops, as docs/baselines.md's Eq. S2 reads."""
    num_classes, size = costs.shape
    chunks = [list(map(float, row)) for row in chunks]
    taken, chosen = set(), [None] * num_classes
    for c in order:
        best, best_cost = None, None
        for j in range(size):
            if j in taken:
                continue
            fit = [(similarity[c][e] - (others[c][e] + sum(a * b for a, b in zip(codebook[j], chunks[e]))) / num_bits)
                   ** 2 for e in range(num_classes) if e != c]
            cost = costs[c][j] + weight * len(codebook[j]) * sum(fit) / len(fit)
            if best_cost is None or cost < best_cost:
                best, best_cost = j, cost
        chosen[c] = best
        taken.add(best)
        chunks[c] = list(map(float, codebook[best]))
    return np.array(chosen)


@pytest.mark.parametrize("seed", range(5))
def test_the_semantic_pass_equals_a_plain_python_loop(seed):
    rng = np.random.default_rng(seed)
    classes, size, width, bits = 5, 8, 3, 9
    costs = rng.uniform(0, 12, (classes, size))
    codebook = np.array(list({tuple(r) for r in rng.choice([-1, 1], (40, width))})[:size], dtype=float)
    chunks = codebook[rng.permutation(size)[:classes]]
    others = rng.integers(-6, 7, (classes, classes)).astype(float)
    others = (others + others.T) / 2
    similarity = rng.uniform(-1, 1, (classes, classes))
    order = rng.permutation(classes)
    for weight in (0.0, 0.5, 3.0):
        np.testing.assert_array_equal(
            semantic_greedy_assignment(costs, codebook, chunks, others, similarity, bits, weight, order),
            _plain_semantic_greedy(costs, codebook, chunks, others, similarity, bits, weight, order))
    # weight 0 is CRH's greedy pass
    np.testing.assert_array_equal(semantic_greedy_assignment(costs, codebook, chunks, others, similarity, bits, 0.0,
                                                             order), greedy_assignment(costs, order))


def test_the_semantic_term_overrides_a_slightly_cheaper_candidate_by_hand():
    # one head of 2 bits (K = 2); class 1 is fixed at (1, 1); S says classes 0 and 1 are alike (S = 1)
    codebook = np.array([[1, 1], [-1, -1], [1, -1]], dtype=float)
    costs = np.array([[1.0, 0.9, 5.0], [0.0, 9.0, 9.0]])  # class 0's samples prefer (-1, -1) by 0.1
    chunks, others, order = np.array([[1, -1], [1, 1]], dtype=float), np.zeros((2, 2)), np.array([1, 0])
    similarity = np.array([[1.0, 1.0], [1.0, 1.0]])
    # class 1 first takes (1, 1) (cost 0 + semantic 1 * 2 * (1 - <(1,1),(1,-1)>/2)^2 = 2, against 9 + ... for others)
    # then class 0: candidate (1, 1) is taken; (-1, -1): 0.9 + 2 * (1 - (-2)/2)^2 = 8.9; (1, -1): 5 + 2 * 1 = 7
    assert semantic_greedy_assignment(costs, codebook, chunks, others, similarity, 2, 1.0, order).tolist() == [2, 0]
    assert semantic_greedy_assignment(costs, codebook, chunks, others, similarity, 2, 0.0, order).tolist() == [1, 0]


_CUBE = np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]], dtype=np.int8)  # every 2-bit code: one head, d = 2


@pytest.mark.parametrize("weight, class_1_leaves", [(0.0, True), (1.0, True), (3.0, False)])
def test_the_pressure_to_move_by_hand(weight, class_1_leaves):
    # class 0 holds (1, 1) and its samples sit there; class 1 holds (-1, -1) but its samples sit on (1, -1).
    # Eq. 7 (mean squared distance): class 0 keeps at 0, its best other (1, -1) costs 4; class 1 keeps at 4, (1, -1)
    # costs 0. With S_01 = -1 the semantic term (times d = 2, K = 2) of class 1 is 0 on (-1, -1) (<z, a_0> / K = -1)
    # and 1 on (1, -1): the weighted gaps are -2w, so class 1 leaves iff 4 - 2w > 0.
    codes = np.array([[1, 1], [1, 1], [1, -1], [1, -1]], dtype=float)
    labels = np.array([0, 0, 1, 1])
    current = np.array([[0, 3]])
    similarity = np.array([[1.0, -1.0], [-1.0, 1.0]])
    out = reassignment_pressure(codes, labels, 2, _CUBE[None], current, similarity, weight)
    np.testing.assert_allclose(out["data_gap"], [[-4.0, 4.0]])
    np.testing.assert_allclose(out["semantic_gap"], [[-2 * weight, -2 * weight]])
    np.testing.assert_array_equal(out["hamming"], [[1, 1]])
    np.testing.assert_array_equal(out["majority_held"], [[True, False]])
    np.testing.assert_array_equal(out["prefers_other"], [[False, class_1_leaves]])


@pytest.mark.parametrize("weight", [0.0, 0.7])
def test_a_class_prefers_another_candidate_iff_it_leaves_when_the_greedy_pass_takes_it_first(weight):
    # brute force: first in the greedy order, with every other class still on its candidate, a class takes the
    # argmin of its own cost over the whole head (continuous codes: no ties)
    rng = np.random.default_rng(3)
    classes, heads, width, size = 6, 2, 3, 8
    codebooks = np.stack([_top_up_cube(width, rng) for _ in range(heads)])
    current = np.stack([rng.permutation(size)[:classes] for _ in range(heads)])
    labels = np.repeat(np.arange(classes), 5)
    codes = rng.normal(size=(len(labels), heads * width))
    similarity = rng.uniform(-1, 1, (classes, classes))
    similarity = (similarity + similarity.T) / 2
    out = reassignment_pressure(codes, labels, classes, codebooks, current, similarity, weight)
    for head in range(heads):
        sub = codes[:, head * width:(head + 1) * width]
        means = np.stack([sub[labels == c].mean(axis=0) for c in range(classes)])
        squared = np.array([(sub[labels == c] ** 2).sum(axis=1).mean() for c in range(classes)])
        costs = squared[:, None] + width - 2 * means @ codebooks[head].T.astype(float)
        held = codebooks[np.arange(heads)[:, None], current].astype(float)
        others = np.einsum("hcd,hed->ce", held, held) - held[head] @ held[head].T
        for c in range(classes):
            order = np.r_[c, np.delete(np.arange(classes), c)]
            chosen = semantic_greedy_assignment(costs, codebooks[head], held[head], others, similarity,
                                                heads * width, weight, order)
            assert (chosen[c] != current[head, c]) == out["prefers_other"][head, c]


def _top_up_cube(width, rng):
    return np.array([[1 if (index >> bit) & 1 else -1 for bit in range(width)] for index in rng.permutation(2**width)],
                    dtype=np.int8)


def test_the_pressure_refuses_an_assignment_of_another_shape():
    with pytest.raises(ValueError, match="current must be"):
        reassignment_pressure(np.ones((2, 2)), np.array([0, 1]), 2, _CUBE[None], np.array([0, 3]))


def test_semantic_reassign_is_greedy_and_needs_the_current_assignment():
    codebooks = np.stack([np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=np.int8)] * 2)
    codes, labels = random_centers(6, 4, 2), np.arange(6) % 3
    for bad in ({"assignment": "hungarian", "current": np.zeros((2, 3), int)}, {"assignment": "greedy"}):
        with pytest.raises(ValueError, match="greedy and needs the current assignment"):
            reassign(codes, labels, 3, codebooks, bad["assignment"], np.random.default_rng(0),
                     similarity=np.eye(3), semantic_weight=1.0, current=bad.get("current"))


def test_the_loss_is_crh_s_at_the_same_centers_and_the_method_is_registered():
    labels = np.arange(24) % 6
    # 4 heads of 4 bits (M = 12 <= 2^4); the classes' sub-codes differ in every head, so the start is exact
    codes = np.array([[1 if (n >> b) & 1 else -1 for b in range(4)] for n in range(16)], dtype=np.int8)
    rng = np.random.default_rng(3)
    centers = np.concatenate([codes[rng.permutation(16)[:6]] for _ in range(4)], axis=1)
    similarity = np.eye(6)
    scrh = SemanticCRHLoss(6, 16, labels, centers=centers, similarity=similarity, seed=0)
    crh = CRHLoss(6, 16, labels, seed=0)
    crh.codebooks.copy_(scrh.codebooks)
    crh.assignment.copy_(scrh.assignment)
    outputs, targets = torch.randn(24, 16, generator=torch.Generator().manual_seed(0)), torch.as_tensor(labels)
    assert torch.equal(scrh(outputs, targets), crh(outputs, targets))
    np.testing.assert_array_equal(scrh.learned_targets(), centers)
    assert scrh.semantic_fit() == pytest.approx(
        np.mean(((similarity - centers @ centers.T / 16.0) ** 2)[~np.eye(6, dtype=bool)]))
    spec = get_method("scrh")
    assert (spec.loss, spec.centers, spec.needs_similarity, spec.head["activation"]) == ("scrh", "shc-ls", True,
                                                                                         "identity")
    start_only = build_criterion("scrh-start", 6, 16, labels, centers=centers, similarity=similarity)
    assert isinstance(start_only, SemanticCRHLoss) and start_only.semantic_weight == 0.0  # the ablation: start alone
    built = build_criterion("scrh", 6, 16, labels, centers=centers, similarity=similarity, semantic_weight=0.5)
    assert isinstance(built, SemanticCRHLoss) and built.semantic_weight == 0.5
    # without S, the fit kept is that of the starting centers' own inner products
    own = build_criterion("scrh", 6, 16, labels, centers=centers)
    np.testing.assert_allclose(own.similarity.numpy(), centers @ centers.T / 16.0)
    with pytest.raises(ValueError, match="greedy"):
        SemanticCRHLoss(6, 16, labels, centers=centers, assignment="hungarian")
    with pytest.raises(ValueError, match="num_classes=6"):
        SemanticCRHLoss(6, 16, labels, centers=centers, similarity=np.eye(5))


class InterruptedSCRH(Interrupting, SemanticCRHLoss):
    """SCRH that stops at one training step."""


def test_the_delay_is_a_method_option_of_crh_and_scrh():
    from shc.methods import build_criterion

    labels = np.arange(12) % 6
    centers = random_centers(6, 16, 4)
    assert build_criterion("crh", 6, 16, labels, reassign_from=5).reassigns_after(4) is False
    late = build_criterion("scrh", 6, 16, labels, centers=centers, reassign_from=5)
    assert (late.reassigns_after(4), late.reassigns_after(5)) == (False, True)
    assert build_criterion("scrh", 6, 16, labels, centers=centers).reassign_from == 1  # the paper's schedule
    registered = build_criterion("scrh-late", 6, 16, labels, centers=centers)  # the registered late variant
    assert (registered.reassign_from, registered.semantic_weight) == (40, 1.0)
    assert [epoch for epoch in range(1, 81) if registered.reassigns_after(epoch)] == list(range(40, 81, 5))


def test_a_delayed_scrh_keeps_its_semantic_start_until_reassign_from(tmp_path):
    """Issue 37's delayed variant: no reassignment before ``reassign_from``, so the network first fits the semantic
    centers it starts at."""
    dataset = Indexed(*blobs())
    centers = random_centers(6, 16, 4)
    similarity = np.corrcoef(np.random.default_rng(5).standard_normal((6, 10)))
    loss = SemanticCRHLoss(6, 16, dataset.labels.numpy(), centers=centers, similarity=similarity, seed=0,
                           reassign_until=2, reassign_every=2, reassign_from=3)
    start = loss.centers().clone()
    history = fit(network(), loss, dataset, SETTINGS, tmp_path / "run", progress=False)
    assert [row.get("semantic_fit") is not None for row in history.rows] == [False, False, False, True]
    assert [entry["epoch"] for entry in loss.reassignments] == [4]
    assert not torch.equal(loss.centers(), start) or loss.reassignments[0]["reassigned"] == 0


def test_an_interrupted_scrh_run_resumes_bit_identically(tmp_path):
    dataset = Indexed(*blobs())
    labels = dataset.labels.numpy()
    centers = random_centers(6, 16, 4)
    similarity = np.corrcoef(np.random.default_rng(5).standard_normal((6, 10)))
    options = dict(centers=centers, similarity=similarity, seed=0, reassign_until=2, reassign_every=2)
    model, loss = network(), SemanticCRHLoss(6, 16, labels, **options)
    reference = fit(model, loss, dataset, SETTINGS, tmp_path / "a", progress=False)
    assert [row.get("semantic_fit") is not None for row in reference.rows] == [True, True, False, True]
    with pytest.raises(KeyboardInterrupt):
        fit(network(), InterruptedSCRH(6, 16, labels, at_step=10, **options), dataset, SETTINGS, tmp_path / "b",
            progress=False)
    resumed_model, resumed_loss = network(seed=123), SemanticCRHLoss(6, 16, labels, **options)
    resumed_loss.assignment.copy_(resumed_loss.assignment.flip(1))  # all of it must come from last.pt
    resumed = fit(resumed_model, resumed_loss, dataset, SETTINGS, tmp_path / "b", progress=False)
    for name, value in model.state_dict().items():
        assert torch.equal(resumed_model.state_dict()[name], value), name
    expected, got = crh_state(loss), crh_state(resumed_loss)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]) and got[2] == expected[2]
    assert resumed.rows == [dict(row, seconds=new["seconds"])  # every epoch: a lost row fails zip
                            for row, new in zip(reference.rows, resumed.rows, strict=True)]


def test_a_tiny_scrh_run_through_the_pipeline_starts_from_stage_2_and_reads_stage_1(tmp_path):
    import json

    from shc.pipeline import RunConfig, run, stage_directories

    config = RunConfig(method="scrh", epochs=2, eval_every=1, bits=16, run_dir=str(tmp_path), classifier_epochs=1,
                       dataset_options={"num_classes": 20, "train_per_class": 10, "val_per_class": 2,
                                        "query_per_class": 3, "database_per_class": 10})
    result = run(config)
    directory = stage_directories(config)["stage3"]
    assert result.centers.shape == (20, 16) and result.similarity.shape == (20, 20)
    log = json.loads((directory / "reassignments.json").read_text())
    assert [entry["epoch"] for entry in log["log"]] == [1, 2] and all("semantic_fit" in e for e in log["log"])
    # the start: stage 2's centers, but a class whose 8-bit half another class already holds takes the nearest free
    # candidate; its fit is the off-diagonal mean over the 20 x 19 pairs
    codebooks, assignment = semantic_codebook(result.centers, 2, 40, np.random.default_rng([config.seed, 1]))
    start = np.concatenate([codebooks[head, assignment[head]] for head in range(2)], axis=1).astype(float)
    off = ~np.eye(20, dtype=bool)
    assert log["start_semantic_fit"] == pytest.approx(np.mean(((result.similarity - start @ start.T / 16) ** 2)[off]))
    codebook = np.load(directory / "codebook.npy")
    for head in range(2):  # every starting sub-code is a candidate of its head
        assert {tuple(r) for r in result.centers[:, 8 * head:8 * (head + 1)]} <= {tuple(r) for r in codebook[head]}
    assert result.metrics["reach_targets"] == "learned class codes" and 0 <= result.metrics["mAP@ALL"] <= 1


@pytest.mark.slow  # two tiny pipeline runs (about 30 s); the pressure it reports is tested above without them
def test_the_first_pass_probe_counts_the_moves_the_run_logs(tmp_path):
    # benchmarks/scrh_first_pass.py stops a run after its first reassignments; the moves it counts are the ones the
    # uninterrupted run logs, and the pressure's split of them adds up
    import json
    import sys
    from pathlib import Path

    from shc.pipeline import RunConfig, run, stage_directories

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from scrh_first_pass import probe

    config = RunConfig(method="scrh", epochs=2, eval_every=1, bits=16, run_dir=str(tmp_path / "full"),
                       classifier_epochs=1,
                       dataset_options={"num_classes": 20, "train_per_class": 10, "val_per_class": 2,
                                        "query_per_class": 3, "database_per_class": 10})
    run(config)
    log = json.loads((stage_directories(config)["stage3"] / "reassignments.json").read_text())["log"]
    rows = probe(config.replace(run_dir=str(tmp_path / "probe")), passes=2)
    assert [row["epoch"] for row in rows] == [1, 2]
    assert [row["moved"] for row in rows] == [entry["reassigned"] for entry in log]
    for row in rows:
        assert row["pairs"] == 40 and 0 <= row["cascade"] <= row["moved"] and row["one_bit"] <= row["prefer"]
        assert row["moved"] - row["cascade"] <= row["prefer"]
    assert CRHLoss.reassign.__name__ == "reassign"  # the probe puts the method back
    finished = stage_directories(config)["stage3"]
    with pytest.raises(SystemExit, match="holds a finished run"):  # it deleted a grid's finished cell
        probe(config, passes=1)
    assert (finished / "metrics.json").is_file()
