"""CRH (shc.codebook, shc.losses.CRHLoss) and fit's epoch hook.

The assignment is checked against an exhaustive search written here, the costs against explicit loops
over samples, the loss against plain-Python references and one closed form, and an interrupted CRH run
against an uninterrupted one (bit-identical weights, codebook, assignment and log).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest
import torch
from torch import nn

from shc.codebook import (
    ASSIGNMENTS,
    assignment_costs,
    class_assignment_costs,
    class_mean_codes,
    greedy_assignment,
    head_width,
    hungarian_assignment,
    reassign,
    sample_codebook,
)
from shc.losses import CRHLoss
from shc.methods import build_criterion, get_method
from shc.train import TrainConfig, fit


def brute_force(costs: np.ndarray) -> tuple[tuple[int, ...], float]:
    """The minimum total cost over every injective map classes -> candidates, by exhaustive search."""
    num_classes, size = costs.shape
    best = min(itertools.permutations(range(size), num_classes),
               key=lambda chosen: sum(costs[c, j] for c, j in enumerate(chosen)))
    return best, float(sum(costs[c, j] for c, j in enumerate(best)))


def total(costs: np.ndarray, chosen: np.ndarray) -> float:
    return float(costs[np.arange(len(chosen)), chosen].sum())


def is_injective(chosen: np.ndarray, size: int) -> bool:
    return len(set(chosen.tolist())) == len(chosen) and all(0 <= j < size for j in chosen)


# ----------------------------------------------------------------------------------------------
# assignment
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("num_classes, size, seed", [(2, 2, 0), (3, 3, 1), (3, 6, 2), (4, 5, 3), (4, 8, 4),
                                                     (5, 7, 5)])
def test_hungarian_is_the_brute_force_optimum(num_classes, size, seed):
    rng = np.random.default_rng(seed)
    costs = rng.random((num_classes, size))
    expected, expected_cost = brute_force(costs)
    chosen = hungarian_assignment(costs)
    assert is_injective(chosen, size)
    assert tuple(chosen.tolist()) == expected  # continuous costs: the optimum is unique
    assert total(costs, chosen) == pytest.approx(expected_cost)


def test_hungarian_matches_the_brute_force_cost_on_tied_integer_costs_from_real_codes():
    # costs of Eq. 7 from +-1 codes take few values, so optima tie: the optimal *cost* must match
    rng = np.random.default_rng(7)
    codebook = sample_codebook(1, 6, 3, rng)[0]
    codes = np.where(rng.random((12, 3)) < 0.5, -1, 1)
    labels = np.arange(12) % 4
    costs = assignment_costs(*class_mean_codes(codes, labels, 4), codebook)
    assert total(costs, hungarian_assignment(costs)) == pytest.approx(brute_force(costs)[1])


def test_greedy_on_a_hand_checked_example():
    costs = np.array([[1.0, 2.0, 9.0, 9.0],
                      [1.0, 9.0, 9.0, 9.0],
                      [9.0, 9.0, 3.0, 4.0]])
    # order 0, 1, 2: class 0 takes candidate 0 (cost 1); class 1's free candidates all cost 9: the lowest
    # index, 1; class 2 takes 2 (cost 3). Total 13, where the optimum is 6.
    np.testing.assert_array_equal(greedy_assignment(costs, np.array([0, 1, 2])), [0, 1, 2])
    # order 1, 0, 2: class 1 takes 0, class 0 then 1 (cost 2), class 2 takes 2: the optimum 1 + 2 + 3.
    np.testing.assert_array_equal(greedy_assignment(costs, np.array([1, 0, 2])), [1, 0, 2])
    assert brute_force(costs) == ((1, 0, 2), 6.0)
    np.testing.assert_array_equal(hungarian_assignment(costs), [1, 0, 2])


@pytest.mark.parametrize("name", ASSIGNMENTS.names())
def test_every_assignment_refuses_too_few_candidates(name):
    """An audit: the Hungarian assignment left classes without a candidate uninitialised (np.empty)."""
    with pytest.raises(ValueError, match="3 classes one each; use a larger codebook"):
        ASSIGNMENTS.get(name)(np.zeros((3, 2)), np.arange(3))


def test_greedy_refuses_too_few_candidates_and_a_bad_order():
    with pytest.raises(ValueError, match="larger codebook"):
        greedy_assignment(np.zeros((3, 2)), np.arange(3))
    with pytest.raises(ValueError, match="permutation"):
        greedy_assignment(np.zeros((3, 4)), np.array([0, 0, 1]))
    with pytest.raises(ValueError, match="unknown assignment 'hungerian'; did you mean 'hungarian'"):
        ASSIGNMENTS.get("hungerian")


@pytest.mark.parametrize("multi_label", [False, True])
def test_costs_are_the_mean_squared_distance_of_the_class_codes_to_each_candidate(multi_label):
    rng = np.random.default_rng(3)
    num_classes, width = 3, 4
    codes = np.where(rng.random((10, width)) < 0.5, -1, 1)
    if multi_label:
        labels = (rng.random((10, num_classes)) < 0.5).astype(np.float32)
        labels[labels.sum(axis=1) == 0, 0] = 1
    else:
        labels = np.array([0, 1, 2, 0, 1, 0, 0, 2, 1, 0])
    codebook = sample_codebook(1, 6, width, rng)[0]
    costs = assignment_costs(*class_mean_codes(codes, labels, num_classes), codebook)
    for c in range(num_classes):  # Eq. 7 with an explicit loop: weight 1 / |y|_1 per sample of class c
        weights = [(1 / sum(row) if multi_label else 1.0) for row in (labels if multi_label else labels[:, None])]
        members = [i for i in range(10) if (labels[i, c] > 0 if multi_label else labels[i] == c)]
        for j, z in enumerate(codebook):
            expected = sum(weights[i] * sum((codes[i, k] - z[k]) ** 2 for k in range(width)) for i in members)
            expected /= sum(weights[i] for i in members)
            assert costs[c, j] == pytest.approx(expected)


def test_a_class_without_samples_gets_equal_costs():
    codes = np.ones((4, 3))
    costs = assignment_costs(*class_mean_codes(codes, np.array([0, 0, 1, 1]), 3), np.array([[1, 1, 1], [-1, 1, 1]]))
    assert costs[2, 0] == costs[2, 1]


@pytest.mark.parametrize("assignment", ["greedy", "hungarian"])
def test_reassign_gives_every_class_the_candidates_its_samples_sit_at_in_every_head(assignment):
    rng = np.random.default_rng(0)
    num_classes, heads, width = 5, 2, 4
    codebooks = sample_codebook(heads, 10, width, rng)
    target = np.stack([rng.permutation(10)[:num_classes] for _ in range(heads)])  # (H, C)
    labels = np.repeat(np.arange(num_classes), 6)
    codes = np.concatenate([codebooks[h, target[h, labels]] for h in range(heads)], axis=1).astype(float)
    flip = rng.random(codes.shape) < 0.1  # a few flipped bits keep the means closest to the true candidate
    codes = np.where(flip, -codes, codes)
    chosen, costs = reassign(codes, labels, num_classes, codebooks, assignment, np.random.default_rng(1))
    np.testing.assert_array_equal(chosen, target)
    assert costs.shape == (heads,) and np.all(costs >= 0)


def test_head_width_is_the_smallest_divisor_holding_the_codebook():
    assert head_width(16, 8) == 4  # 3 bits would do, but 3 does not divide 16
    assert head_width(64, 200) == 8 and head_width(32, 900) == 16 and head_width(16, 900) == 16
    assert head_width(12, 9) == 4
    with pytest.raises(ValueError, match="more bits or a smaller codebook_multiple"):
        head_width(8, 400)


def test_codebook_rows_are_distinct_per_head_and_seeded():
    codebooks = sample_codebook(3, 16, 4, np.random.default_rng(0))  # all 16 codes of 4 bits
    assert codebooks.shape == (3, 16, 4) and set(np.unique(codebooks)) == {-1, 1}
    for head in codebooks:
        assert len({tuple(row) for row in head}) == 16
    np.testing.assert_array_equal(codebooks, sample_codebook(3, 16, 4, np.random.default_rng(0)))
    with pytest.raises(ValueError, match="do not exist"):
        sample_codebook(1, 17, 4, np.random.default_rng(0))


# ----------------------------------------------------------------------------------------------
# the loss
# ----------------------------------------------------------------------------------------------
def crh(num_classes=3, num_bits=16, labels=None, **options) -> CRHLoss:
    labels = np.arange(6) % num_classes if labels is None else labels
    return CRHLoss(num_classes, num_bits, labels, **options)


def test_the_published_defaults():
    loss = build_criterion("crh", 450, 64, np.arange(900) % 450)
    assert loss.scale == pytest.approx(math.sqrt(2) * math.log(449))
    assert (loss.margin, loss.quantization_weight, loss.assignment_method) == (0.2, 0.1, "greedy")
    assert tuple(loss.codebooks.shape) == (4, 900, 16)  # M = 2C, d = 16 (2^16 >= 900), H = 64 / 16
    assert [epoch for epoch in range(1, 41) if loss.reassigns_after(epoch)] == [*range(1, 21), 25, 30, 35, 40]
    multi = CRHLoss(3, 16, np.eye(3)[[0, 1, 2, 0]])
    assert multi.quantization_weight == 0.0
    spec = get_method("crh")
    assert spec.centers is None and spec.head == {"activation": "identity"}
    with pytest.raises(ValueError, match="pass scale="):
        CRHLoss(2, 16, [0, 1])


def test_a_delayed_schedule_starts_reassigning_at_reassign_from():
    late = crh(reassign_from=10)
    assert [epoch for epoch in range(1, 41) if late.reassigns_after(epoch)] == [*range(10, 21), 25, 30, 35, 40]
    later = crh(reassign_from=23)  # past reassign_until: only the every-5th epochs from it on
    assert [epoch for epoch in range(1, 41) if later.reassigns_after(epoch)] == [25, 30, 35, 40]
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="reassign_from must be a positive integer"):
            crh(reassign_from=bad)


def test_loss_in_closed_form_for_an_output_on_its_center():
    loss = crh(num_classes=3, num_bits=16, margin=0.2, quantization_weight=0.1, scale=2.0)
    # three centers: h_0, h_1 orthogonal to h_0 and h_2 = -h_0, set through the codebook (4 heads of 4 bits)
    h0 = np.array([1, 1, 1, 1])
    h1 = np.array([1, -1, 1, -1])
    codebook = np.stack([h0, h1, -h0, -h1, [1, 1, -1, -1], [-1, -1, 1, 1]])
    loss.codebooks.copy_(torch.tensor(np.stack([codebook] * 4), dtype=torch.float32))
    loss.assignment.copy_(torch.tensor([[0, 1, 2]] * 4))
    center0 = torch.tensor(np.tile(h0, 4), dtype=torch.float32)
    outputs = 3.0 * center0[None]  # cos to h_0 = 1, to h_1 = 0, to h_2 = -1
    s, m = 2.0, 0.2
    expected = -math.log(math.exp(s * (1 - m)) / (math.exp(s * (1 - m)) + 1 + math.exp(-s)))
    expected += 0.1 * (math.tanh(3.0) - 1) ** 2
    assert loss(outputs, torch.tensor([0])).item() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("multi_label", [False, True])
def test_loss_equals_a_plain_python_reference(multi_label):
    rng = np.random.default_rng(1)
    labels = (np.eye(4)[[0, 1, 2, 3, 0]] + np.eye(4)[[1, 1, 3, 3, 2]]).clip(0, 1) if multi_label else np.arange(5) % 4
    loss = crh(num_classes=4, num_bits=16, labels=labels, seed=3, quantization_weight=0.1)
    outputs = torch.tensor(rng.normal(size=(5, 16)), dtype=torch.float32)
    got = loss(outputs, torch.as_tensor(labels if not multi_label else labels.astype(np.float32))).item()

    codebooks, assignment = loss.codebooks.numpy(), loss.assignment.numpy()
    centers = [[float(bit) for h in range(codebooks.shape[0]) for bit in codebooks[h, assignment[h, c]]]
               for c in range(4)]
    expected = 0.0
    for i, u in enumerate(outputs.tolist()):
        positives = [c for c in range(4) if (labels[i, c] > 0 if multi_label else labels[i] == c)]
        norm_u = math.sqrt(sum(x * x for x in u))
        logits = [loss.scale * (sum(a * b for a, b in zip(u, h)) / (norm_u * 4.0) - 0.2 * (c in positives))
                  for c, h in enumerate(centers)]
        log_z = math.log(sum(math.exp(z) for z in logits))
        expected += -sum(logits[c] - log_z for c in positives) / len(positives) / len(outputs)
    expected += 0.1 * sum((abs(math.tanh(x)) - 1) ** 2 for row in outputs.tolist() for x in row) / outputs.numel()
    assert got == pytest.approx(expected, rel=1e-5)


def test_loss_gradients_reach_the_codes_and_not_the_codebook():
    loss = crh(num_classes=3)
    outputs = torch.randn(6, 16, requires_grad=True)
    loss(outputs, torch.arange(6) % 3).backward()
    assert torch.isfinite(outputs.grad).all() and outputs.grad.abs().sum() > 0
    assert not list(loss.parameters())  # nothing for the optimiser: the codebook moves only by reassignment


def test_reassign_changes_the_centers_logs_and_refuses_codes_of_another_split():
    labels = np.repeat(np.arange(3), 4)
    loss = crh(num_classes=3, labels=labels, seed=0)
    target = torch.tensor([[5, 0, 3]] * loss.num_heads)  # move every class to another candidate
    codes = loss.codebooks[torch.arange(loss.num_heads)[:, None], target].permute(1, 0, 2).reshape(3, 16)
    before = loss.assignment.clone()
    entry = loss.reassign(codes[labels], epoch=1)
    assert torch.equal(loss.assignment, target)
    assert entry["reassigned"] == int((target != before).sum()) > 0
    assert entry["assignment_cost"] == 0.0  # every sample sits on its new center
    assert loss.reassignments == [{"epoch": 1, **entry}]
    np.testing.assert_array_equal(loss.centers().numpy(), codes.numpy())
    with pytest.raises(ValueError, match="one code per training sample"):
        loss.reassign(codes, epoch=2)


def test_same_seed_same_codebook_and_reassignment_other_seed_other_codebook():
    labels = np.arange(40) % 8
    first, second, other = crh(8, 32, labels, seed=4), crh(8, 32, labels, seed=4), crh(8, 32, labels, seed=5)
    assert torch.equal(first.codebooks, second.codebooks) and torch.equal(first.assignment, second.assignment)
    assert not torch.equal(first.codebooks, other.codebooks)
    codes = torch.randn(40, 32, generator=torch.Generator().manual_seed(0))
    assert first.reassign(codes, 3) == second.reassign(codes, 3)
    assert torch.equal(first.assignment, second.assignment)


# ----------------------------------------------------------------------------------------------
# fit's epoch hook, resume
# ----------------------------------------------------------------------------------------------
class Indexed(torch.utils.data.Dataset):
    """(x, y, index) items; Gaussian jitter from torch's global RNG (so an exact resume needs its state)."""

    def __init__(self, inputs, labels, jitter=0.3):
        self.inputs, self.labels, self.jitter = inputs, labels, jitter

    def __len__(self):
        return len(self.inputs)

    def __getitem__(self, index):
        return self.inputs[index] + self.jitter * torch.randn_like(self.inputs[index]), self.labels[index], index


def blobs(num_samples=60, num_classes=6, dim=8, seed=0):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(num_samples) % num_classes
    inputs = 2.0 * torch.randn(num_classes, dim, generator=generator)[labels]
    return inputs + torch.randn(num_samples, dim, generator=generator), labels


def network(seed=0, dim=8, bits=16):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(dim, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, bits))


SETTINGS = TrainConfig(epochs=4, batch_size=16, lr=1e-2, optimizer="adam", device="cpu", precision="fp32",
                       num_workers=0)


class Counting(nn.Module):
    """Cross-entropy-free toy criterion whose hook records its calls."""

    def __init__(self, returns=None):
        super().__init__()
        self.calls, self.returns = [], returns

    def forward(self, outputs, labels, indices):
        return outputs.pow(2).mean()

    def on_epoch_end(self, model, train_set, epoch, precision):
        self.calls.append((epoch, model.training, len(train_set), precision))
        return self.returns(epoch) if self.returns else None


class ThreeArguments(Counting):
    """A hook written to the three-argument protocol of docs/architecture.md."""

    def on_epoch_end(self, model, train_set, epoch):
        self.calls.append(epoch)


def test_a_hook_of_three_arguments_is_called_without_the_precision(tmp_path):
    criterion = ThreeArguments()
    fit(network(), criterion, Indexed(*blobs()), dataclasses.replace(SETTINGS, epochs=2), tmp_path, progress=False)
    assert criterion.calls == [1, 2]


def test_fit_calls_the_epoch_hook_after_every_epoch_and_records_its_scalars(tmp_path):
    criterion = Counting(returns=lambda epoch: {"targets_changed": 10 * epoch})
    history = fit(network(), criterion, Indexed(*blobs()), dataclasses.replace(SETTINGS, epochs=3), tmp_path,
                  progress=False)
    # the run's resolved arithmetic, for the hook's own inference (CRH encodes the training set in it)
    precision = SETTINGS.precision
    assert criterion.calls == [(1, True, 60, precision), (2, True, 60, precision), (3, True, 60, precision)]
    bf16 = Counting()
    fit(network(), bf16, Indexed(*blobs()), dataclasses.replace(SETTINGS, epochs=1, precision="bf16"), tmp_path / "c",
        progress=False)
    assert bf16.calls == [(1, True, 60, "bf16")]
    assert [row["targets_changed"] for row in history.rows] == [10.0, 20.0, 30.0]
    with pytest.raises(ValueError, match=r"criterion.on_epoch_end returned the reserved key\(s\) \['loss'\]"):
        fit(network(), Counting(returns=lambda epoch: {"loss": 1.0}), Indexed(*blobs()), SETTINGS, tmp_path / "b",
            progress=False)


class Interrupting:
    """A loss mixin that raises at one global training step (1-based), as a killed process would stop."""

    def __init__(self, *args, at_step, **kwargs):
        super().__init__(*args, **kwargs)
        self.at_step, self.calls = at_step, 0

    def forward(self, outputs, labels, indices=None):
        self.calls += 1
        if self.calls == self.at_step:
            raise KeyboardInterrupt("simulated interruption")
        return super().forward(outputs, labels, indices)


class Interrupted(Interrupting, CRHLoss):
    """CRH that stops at one training step."""


def crh_state(loss: CRHLoss) -> tuple:
    return loss.codebooks.clone(), loss.assignment.clone(), [dict(entry) for entry in loss.reassignments]


def test_an_interrupted_crh_run_resumes_bit_identically(tmp_path):
    dataset = Indexed(*blobs())
    labels = dataset.labels.numpy()
    options = dict(seed=0, reassign_until=2, reassign_every=2)  # reassign after epochs 1, 2 and 4
    model, loss = network(), CRHLoss(6, 16, labels, **options)
    reference = fit(model, loss, dataset, SETTINGS, tmp_path / "a", progress=False)
    assert [row.get("reassigned") is not None for row in reference.rows] == [True, True, False, True]
    assert sum(row.get("reassigned", 0) for row in reference.rows) > 0, "no reassignment moved a class"

    with pytest.raises(KeyboardInterrupt):  # 4 steps per epoch: step 10 is in epoch 3, after two reassignments
        fit(network(), Interrupted(6, 16, labels, at_step=10, **options), dataset, SETTINGS, tmp_path / "b",
            progress=False)
    assert torch.load(tmp_path / "b" / "last.pt", weights_only=True)["epoch"] == 2

    resumed_model, resumed_loss = network(seed=123), CRHLoss(6, 16, labels, **options)
    resumed_loss.assignment.copy_(resumed_loss.assignment.flip(1))  # all of it must come from last.pt
    resumed_loss.codebooks.mul_(-1)
    resumed = fit(resumed_model, resumed_loss, dataset, SETTINGS, tmp_path / "b", progress=False)

    for name, value in model.state_dict().items():
        assert torch.equal(resumed_model.state_dict()[name], value), name
    expected, got = crh_state(loss), crh_state(resumed_loss)
    assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]) and got[2] == expected[2]
    assert [entry["epoch"] for entry in got[2]] == [1, 2, 4]
    assert resumed.rows == [dict(row, seconds=new["seconds"])  # every epoch: a lost row fails zip
                            for row, new in zip(reference.rows, resumed.rows, strict=True)]


def test_two_identical_crh_runs_agree_and_the_hungarian_option_trains(tmp_path):
    dataset = Indexed(*blobs())
    labels = dataset.labels.numpy()
    runs = []
    for name, assignment in (("a", "greedy"), ("b", "greedy"), ("c", "hungarian")):
        model, loss = network(), CRHLoss(6, 16, labels, assignment=assignment)
        history = fit(model, loss, dataset, dataclasses.replace(SETTINGS, epochs=2), tmp_path / name, progress=False)
        runs.append((model.state_dict(), crh_state(loss), [row["loss"] for row in history.rows]))
    (weights_a, state_a, losses_a), (weights_b, state_b, losses_b), (_, state_c, losses_c) = runs
    assert losses_a == losses_b and all(torch.equal(weights_a[k], weights_b[k]) for k in weights_a)
    assert torch.equal(state_a[1], state_b[1]) and state_a[2] == state_b[2]
    assert np.isfinite(losses_c).all() and len(state_c[2]) == 2
    # after epoch 1 both networks are the same (same initial centers), so the exact assignment costs no more
    assert state_c[2][0]["assignment_cost"] <= state_a[2][0]["assignment_cost"] + 1e-9


# ----------------------------------------------------------------------------------------------
# the pipeline: a tiny CRH run keeps its codebook and log as stage artifacts
# ----------------------------------------------------------------------------------------------
def test_a_tiny_crh_run_through_the_pipeline_writes_its_codebook_and_log(tmp_path):
    import json

    from shc.pipeline import RunConfig, run, stage_directories

    config = RunConfig(method="crh", epochs=2, eval_every=1, bits=16, run_dir=str(tmp_path),
                       dataset_options={"num_classes": 20, "train_per_class": 10, "val_per_class": 2,
                                        "query_per_class": 3, "database_per_class": 10})
    result = run(config)
    directory = stage_directories(config)["stage3"]
    assert result.centers is None and not stage_directories(config)["stage2"].exists()
    codebook, centers = np.load(directory / "codebook.npy"), np.load(directory / "class_centers.npy")
    assert codebook.shape == (2, 40, 8) and centers.shape == (20, 16)  # M = 2C = 40 <= 2^8: two heads of 8 bits
    for head in range(2):  # each half of a center is a distinct candidate of its head
        halves = {tuple(row) for row in centers[:, 8 * head:8 * (head + 1)]}
        assert len(halves) == 20 and halves <= {tuple(row) for row in codebook[head]}
    log = json.loads((directory / "reassignments.json").read_text())
    assert log["assignment"] == "greedy" and [entry["epoch"] for entry in log["log"]] == [1, 2]
    assert 0 <= result.metrics["mAP@ALL"] <= 1


def _exact_greedy(codes: np.ndarray, labels: np.ndarray, num_classes: int, codebook: np.ndarray,
                  order: np.ndarray) -> np.ndarray:
    """The greedy pass on Eq. 7 in integers: within a class's row the cost is ``2 d - 2 <sum_i b_i, z> / n_c``, so
    its cheapest free candidate is the one of largest ``<sum_i b_i, z>`` (Python ints), ties to the lowest index."""
    sums = [[int(v) for v in codes[labels == c].sum(axis=0)] for c in range(num_classes)]
    book = [[int(v) for v in row] for row in codebook]
    taken, chosen = set(), np.empty(num_classes, dtype=np.int64)
    for c in order:
        free = [j for j in range(len(book)) if j not in taken]
        best = max(free, key=lambda j: (sum(s * z for s, z in zip(sums[c], book[j])), -j))
        chosen[c] = best
        taken.add(best)
    return chosen


def _tied_reassignment_case(seed: int = 0):
    """333 classes of 20 noisy +-1 codes of 16 bits (a standard-fine head's shape) and 666 candidates: many classes
    find two or more candidates at the same exact cost."""
    rng = np.random.default_rng(seed)
    num_classes, per_class, width, size = 333, 20, 16, 666
    labels = np.repeat(np.arange(num_classes), per_class)
    prototypes = rng.choice([-1, 1], size=(num_classes, width))
    codes = np.where(rng.random((num_classes * per_class, width)) < 0.15, -1, 1) * prototypes[labels]
    return codes, labels, num_classes, sample_codebook(1, size, width, rng)


def test_the_reassignment_is_the_exact_greedy_pass_ties_to_the_lowest_candidate():
    """The costs of Eq. 7 from +-1 codes tie often; the greedy pass must break a tie by the lowest candidate index,
    as greedy_assignment says, which needs costs equal in exact arithmetic to be equal bits. Computed through the
    class means they were rounded term by term and broke some ties by the rounding (CRH then depended on numpy's
    BLAS kernel: docs/baselines.md, "CRH's ties")."""
    codes, labels, num_classes, codebooks = _tied_reassignment_case()
    chosen, _ = reassign(codes, labels, num_classes, codebooks, "greedy", np.random.default_rng(3))
    order = np.random.default_rng(3).permutation(num_classes)
    assert np.array_equal(chosen[0], _exact_greedy(codes, labels, num_classes, codebooks[0], order))


def test_the_reassignment_does_not_depend_on_the_order_of_the_bits_or_the_samples():
    """Permuting the bit columns (of codes and codebook together) and the samples changes every summation order of
    the costs and no cost: the same candidates, the same total cost to the last bit."""
    codes, labels, num_classes, codebooks = _tied_reassignment_case(seed=1)
    columns = np.random.default_rng(5).permutation(codes.shape[1])
    samples = np.random.default_rng(6).permutation(len(labels))
    first = reassign(codes, labels, num_classes, codebooks, "greedy", np.random.default_rng(2))
    again = reassign(codes[samples][:, columns], labels[samples], num_classes, codebooks[:, :, columns], "greedy",
                     np.random.default_rng(2))
    assert np.array_equal(first[0], again[0])
    assert np.array_equal(first[1], again[1])


def test_class_assignment_costs_are_eq_7_from_the_class_means_and_give_empty_classes_the_candidate_norm():
    rng = np.random.default_rng(4)
    codes = np.where(rng.random((30, 6)) < 0.5, -1, 1)
    labels = rng.integers(0, 4, 30)
    labels[labels == 3] = 2  # class 3 has no sample
    codebook = sample_codebook(1, 10, 6, rng)[0]
    exact = class_assignment_costs(codes, labels, 5, codebook)
    np.testing.assert_allclose(exact, assignment_costs(*class_mean_codes(codes, labels, 5), codebook), atol=1e-12)
    assert np.array_equal(exact[3], np.full(10, 6.0)) and np.array_equal(exact[4], np.full(10, 6.0))
    for c in range(3):  # brute force: the mean squared distance of the class's codes to each candidate
        members = codes[labels == c]
        np.testing.assert_allclose(exact[c], ((members[:, None, :] - codebook[None]) ** 2).sum(-1).mean(0))


def test_crh_and_scrh_runs_carry_their_loss_version_and_other_methods_keep_their_identity():
    """CRH's reassignment changed its numbers (exact costs, version 2): runs of version 1 are trained again, not
    reused; a method whose loss is still at version 1 keeps the identity it had."""
    from shc.runs import RunConfig
    from shc.stages import stage_identities

    assert CRHLoss.version == 2
    for method in ("crh", "scrh"):
        assert stage_identities(RunConfig(method=method, bits=16))["stage3"]["loss_version"] == 2
    for method in ("shc", "csq", "lth"):
        assert "loss_version" not in stage_identities(RunConfig(method=method, bits=16))["stage3"]


_REASSIGN_UNDER_A_KERNEL = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_crh import _semantic_reassignment_case, _tied_reassignment_case
from shc.codebook import _semantic_term, reassign
out = []
for seed in range(4):
    codes, labels, num_classes, codebooks = _tied_reassignment_case(seed)
    chosen, totals = reassign(codes, labels, num_classes, codebooks, "greedy", np.random.default_rng(3))
    out.append([chosen.tolist(), [float(total).hex() for total in totals]])
codes, labels, num_classes, codebooks, similarity, current = _semantic_reassignment_case()
chosen, _ = reassign(codes, labels, num_classes, codebooks, "greedy", np.random.default_rng(3), similarity, 1.0,
                     current)
held = codebooks[np.arange(2)[:, None], current].astype(np.float64)
others = np.einsum("hcd,hed->ce", held, held) - held[0] @ held[0].T
fit = _semantic_term(0, codebooks[0] @ held[0].T, others, similarity, 16)
out.append([chosen.tolist(), [float(value).hex() for value in fit]])
print(json.dumps(out))
"""


def _semantic_reassignment_case(seed: int = 0):
    """SCRH's reassignment on 2 heads of 8 bits: 60 classes of 10 noisy codes, 120 candidates a head, a real-valued
    symmetric S with unit diagonal and a current assignment of distinct candidates."""
    rng = np.random.default_rng(seed)
    num_classes, per_class, heads, width, size = 60, 10, 2, 8, 120
    labels = np.repeat(np.arange(num_classes), per_class)
    prototypes = rng.choice([-1, 1], size=(num_classes, heads * width))
    codes = np.where(rng.random((num_classes * per_class, heads * width)) < 0.15, -1, 1) * prototypes[labels]
    similarity = np.tanh(rng.normal(size=(num_classes, num_classes)))
    similarity = (similarity + similarity.T) / 2
    np.fill_diagonal(similarity, 1.0)
    current = np.stack([rng.permutation(size)[:num_classes] for _ in range(heads)])
    return codes, labels, num_classes, sample_codebook(heads, size, width, rng), similarity, current


def _reassign_under(kernel: str | None) -> tuple[str, str]:
    """The reassignments of four tied cases in a fresh process whose OpenBLAS runs ``kernel`` (its own choice for
    None), and what OpenBLAS says it picked."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "OPENBLAS_VERBOSE": "2"}
    env.pop("OPENBLAS_CORETYPE", None)
    if kernel:
        env["OPENBLAS_CORETYPE"] = kernel
    done = subprocess.run([sys.executable, "-c", _REASSIGN_UNDER_A_KERNEL, str(Path(__file__).parent)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, done.stderr


def test_the_reassignment_is_the_same_bits_under_two_blas_kernels():
    """The claim itself, where it can be run: numpy's OpenBLAS on the SSE kernel it runs on any x86-64 CPU
    (``OPENBLAS_CORETYPE=Nehalem``) and on the kernel it picks for this CPU give the same candidates and totals,
    and SCRH's semantic reassignment the same candidates and the same bits of its real-valued semantic term (summed
    by numpy's own reduction, not BLAS: docs/baselines.md).
    Through the class means, Nehalem's kernel broke ties of two of these four cases differently from Sandybridge's,
    Haswell's and SkylakeX's (measured 2026-12-05)."""
    mine, said = _reassign_under(None)
    if "Core:" not in said or "Core: Nehalem" in said:
        pytest.skip("numpy's BLAS is not an OpenBLAS that picks its kernel at run time, or it already runs Nehalem's")
    sse, said = _reassign_under("Nehalem")
    if "Core: Nehalem" not in said:
        pytest.skip("this OpenBLAS did not run Nehalem's kernel when asked")
    assert sse == mine
