"""Tests of shc.train: the loop, history files, exact resume, NaN handling, model selection, predict."""

from __future__ import annotations

import csv
import dataclasses
import json

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

from shc.train import History, TrainConfig, fit, predict
from shc.train.distributed import _epoch_batches, _Ranks


class IndexedTensors(torch.utils.data.Dataset):
    """(x, y, index) items from in-memory tensors; optional Gaussian jitter drawn from torch's global RNG."""

    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor, jitter: float = 0.0) -> None:
        self.inputs, self.labels, self.jitter = inputs, labels, jitter

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int):
        x = self.inputs[index]
        if self.jitter:
            x = x + self.jitter * torch.randn_like(x)
        return x, self.labels[index], index


class CrossEntropy(nn.Module):
    def forward(self, outputs, labels, indices):
        return F.cross_entropy(outputs, labels)


class FailingCrossEntropy(CrossEntropy):
    """Cross-entropy that misbehaves at one global step (1-based): raises, or returns a non-finite loss."""

    def __init__(self, at_step: int, outcome: str) -> None:
        super().__init__()
        self.at_step, self.outcome, self.calls = at_step, outcome, 0

    def forward(self, outputs, labels, indices):
        self.calls += 1
        loss = super().forward(outputs, labels, indices)
        if self.calls == self.at_step:
            if self.outcome == "raise":
                raise KeyboardInterrupt("simulated interruption")
            return loss * float(self.outcome)  # "nan" or "inf"
        return loss


def blobs(num_samples: int = 48, num_classes: int = 3, dim: int = 4, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    labels = torch.arange(num_samples) % num_classes
    means = 3.0 * torch.randn(num_classes, dim, generator=generator)
    inputs = means[labels] + torch.randn(num_samples, dim, generator=generator)
    return inputs, labels


def mlp(seed: int = 0, dim: int = 4, num_classes: int = 3, dropout: float = 0.0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(dim, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, num_classes))


def config(**changes) -> TrainConfig:
    base = TrainConfig(epochs=3, batch_size=10, lr=1e-2, device="cpu", precision="fp32", num_workers=0)
    return dataclasses.replace(base, **changes)


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in model.state_dict().items()}


def assert_same_weights(actual: dict, expected: dict) -> None:
    assert actual.keys() == expected.keys()
    for name in expected:
        assert torch.equal(actual[name], expected[name]), name


# --------------------------------------------------------------------------- training and files


def test_loss_falls_and_history_files_are_written(tmp_path):
    model = mlp()
    history = fit(model, CrossEntropy(), IndexedTensors(*blobs()), config(epochs=6), tmp_path, progress=False)

    losses = [row["loss"] for row in history.rows]
    assert [row["epoch"] for row in history.rows] == [1, 2, 3, 4, 5, 6]
    assert losses[-1] < 0.5 * losses[0]
    assert history.selected == "final" and history.best_epoch is None
    assert not (tmp_path / "best.pt").exists()
    # cosine schedule stepped per epoch: lr_e = lr0 * (1 + cos(pi * (e - 1) / E)) / 2
    expected_lr = [1e-2 * (1 + np.cos(np.pi * e / 6)) / 2 for e in range(6)]
    np.testing.assert_allclose([row["lr"] for row in history.rows], expected_lr, rtol=1e-12, atol=1e-15)

    with open(tmp_path / "history.csv") as handle:
        table = list(csv.DictReader(handle))
    assert [int(row["epoch"]) for row in table] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose([float(row["loss"]) for row in table], losses)
    assert json.loads((tmp_path / "history.json").read_text())["rows"] == history.rows
    assert History.load(tmp_path) == history
    assert history.to_frame()["loss"].tolist() == losses
    assert not [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")]


def test_epoch_loss_is_the_sample_weighted_mean_of_batch_losses(tmp_path):
    # lr=0 keeps the weights fixed, so the epoch loss must equal the full-data loss (48 = 4 x 10 + 8).
    model = mlp()
    inputs, labels = blobs()
    expected = F.cross_entropy(model(inputs), labels).item()
    history = fit(
        model, CrossEntropy(), IndexedTensors(inputs, labels), config(epochs=1, optimizer="sgd", lr=1e-12,
                                                                      weight_decay=0.0), tmp_path, progress=False
    )
    assert history.rows[0]["loss"] == pytest.approx(expected, rel=1e-6)


def test_conv_model_trains_with_auto_precision_and_channels_last(tmp_path):
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(40) % 2
    images = torch.randn(40, 3, 8, 8, generator=generator) + 2.0 * labels.view(-1, 1, 1, 1).float()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(8, 2))
    history = fit(model, CrossEntropy(), IndexedTensors(images, labels), config(epochs=5, precision="auto"),
                  tmp_path, progress=False)
    assert history.rows[-1]["loss"] < history.rows[0]["loss"]
    assert model[0].weight.is_contiguous(memory_format=torch.channels_last)
    assert all(torch.isfinite(value).all() for value in model.state_dict().values())


# --------------------------------------------------------------------------- resume


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_resume_after_interruption_gives_bit_identical_weights(tmp_path, precision):
    # Dropout and input jitter draw from the global RNG, so an exact resume needs the saved random states.
    dataset = IndexedTensors(*blobs(), jitter=0.3)
    settings = config(precision=precision, epochs=3)
    uninterrupted = mlp(dropout=0.2)
    reference = fit(uninterrupted, CrossEntropy(), dataset, settings, tmp_path / "a", progress=False)

    interrupted = mlp(dropout=0.2)
    with pytest.raises(KeyboardInterrupt):  # 5 steps per epoch: step 8 is in epoch 2
        fit(interrupted, FailingCrossEntropy(8, "raise"), dataset, settings, tmp_path / "b", progress=False)
    assert torch.load(tmp_path / "b" / "last.pt", weights_only=True)["epoch"] == 1

    resumed_model = mlp(seed=123, dropout=0.2)  # different init: everything must come from last.pt
    resumed = fit(resumed_model, CrossEntropy(), dataset, settings, tmp_path / "b", progress=False)

    assert_same_weights(weights(resumed_model), weights(uninterrupted))
    assert [row["loss"] for row in resumed.rows] == [row["loss"] for row in reference.rows]


def test_best_weights_of_an_epoch_whose_checkpoint_was_never_written_are_dropped(tmp_path, monkeypatch):
    """The process dies after epoch 2's evaluation saved its improving weights and before last.pt recorded the
    epoch. On resume epoch 2 trains again; here its evaluation does not improve this time (as non-deterministic
    arithmetic can do), so the selected epoch is 1, and best.pt must hold epoch 1's weights, not the lost epoch 2's."""
    import shc.train.loop as loop

    dataset = IndexedTensors(*blobs())
    settings = config(epochs=3)
    scores = iter([0.5, 0.9, 0.1, 0.2, 0.3])  # first process: epochs 1, 2; second: epochs 2, 3 (then nothing)

    def evaluate(model):
        return {"accuracy": next(scores)}

    real_save = loop._save_torch

    def dies_at_epoch_two(payload, path):
        if path.name == "last.pt" and payload["epoch"] == 2:
            raise KeyboardInterrupt
        real_save(payload, path)

    monkeypatch.setattr(loop, "_save_torch", dies_at_epoch_two)
    with pytest.raises(KeyboardInterrupt):
        fit(mlp(), CrossEntropy(), dataset, dataclasses.replace(settings, select_metric="accuracy"), tmp_path,
            evaluate=evaluate, progress=False)
    assert torch.load(tmp_path / "best.pt", weights_only=True)["epoch"] == 1
    assert torch.load(tmp_path / "best.pending.pt", weights_only=True)["epoch"] == 2  # never recorded by last.pt
    monkeypatch.setattr(loop, "_save_torch", real_save)

    model = mlp()
    history = fit(model, CrossEntropy(), dataset, dataclasses.replace(settings, select_metric="accuracy"), tmp_path,
                  evaluate=evaluate, progress=False)
    assert [row["accuracy"] for row in history.rows] == [0.5, 0.1, 0.2]
    assert history.best_epoch == 1
    best = torch.load(tmp_path / "best.pt", weights_only=True)
    assert best["epoch"] == 1 and not (tmp_path / "best.pending.pt").exists()
    assert_same_weights(weights(model), best["model"])  # the selected weights are epoch 1's


def test_a_run_resumes_only_in_the_arithmetic_it_began_in(tmp_path, monkeypatch):
    # precision="auto" is bf16 on a CPU with native bf16 and fp32 on one without: a grid moved between two such
    # machines must not finish its runs as hybrids of the two
    import shc.devices

    dataset, settings = IndexedTensors(*blobs()), config(precision="auto", epochs=3)
    monkeypatch.setattr(shc.devices, "_cpu_has_native_bf16", lambda: True)
    with pytest.raises(KeyboardInterrupt):  # 5 steps per epoch: step 8 is in epoch 2
        fit(mlp(), FailingCrossEntropy(8, "raise"), dataset, settings, tmp_path, progress=False)
    assert torch.load(tmp_path / "last.pt", weights_only=True)["precision"] == "bf16"

    monkeypatch.setattr(shc.devices, "_cpu_has_native_bf16", lambda: False)  # the other machine: auto is fp32
    with pytest.raises(ValueError, match=r"trained in bf16, and this call trains in fp32.*precision='bf16'.*"
                                         r"--precision bf16.*delete"):
        fit(mlp(), CrossEntropy(), dataset, settings, tmp_path, progress=False)
    assert torch.load(tmp_path / "last.pt", weights_only=True)["epoch"] == 1  # nothing was trained or written
    # the fix the error names: the arithmetic it began in, asked for by name (bf16 autocast runs on any CPU, if
    # slowly), finishes it exactly as the first machine would have
    resumed = fit(mlp(), CrossEntropy(), dataset, config(precision="bf16", epochs=3), tmp_path, progress=False)
    assert resumed.resumed_after == 1 and [row["epoch"] for row in resumed.rows] == [1, 2, 3]
    assert resumed.precision == "bf16" and History.load(tmp_path).precision == "bf16"
    uninterrupted = mlp()
    fit(uninterrupted, CrossEntropy(), dataset, config(precision="bf16", epochs=3), tmp_path / "b", progress=False)
    finished = mlp(seed=123)
    fit(finished, CrossEntropy(), dataset, config(precision="bf16", epochs=3), tmp_path, progress=False)  # reloads
    assert_same_weights(weights(finished), weights(uninterrupted))


def test_a_checkpoint_that_did_not_record_its_arithmetic_resumes_and_says_it_is_not_known(tmp_path):
    # checkpoints written before 2026-12-01 hold no "device" or "precision": they resume as before, unchecked, and
    # the run does not claim this process's arithmetic for the epochs an earlier one trained
    dataset, settings = IndexedTensors(*blobs()), config(epochs=2)
    fresh = fit(mlp(), CrossEntropy(), dataset, settings, tmp_path / "fresh", progress=False)
    assert fresh.precision == "fp32" and History.load(tmp_path / "fresh").precision == "fp32"
    with pytest.raises(KeyboardInterrupt):
        fit(mlp(), FailingCrossEntropy(8, "raise"), dataset, settings, tmp_path, progress=False)
    checkpoint = torch.load(tmp_path / "last.pt", weights_only=True)
    assert (checkpoint["device"], checkpoint["precision"]) == ("cpu", "fp32")
    for key in ("device", "precision"):
        del checkpoint[key]
    del checkpoint["history"]["precision"]  # the history of that format had no such field either
    torch.save(checkpoint, tmp_path / "last.pt")
    resumed = fit(mlp(), CrossEntropy(), dataset, settings, tmp_path, progress=False)
    assert resumed.resumed_after == 1 and resumed.precision is None


def test_a_run_resumes_only_on_the_kind_of_device_it_began_on(tmp_path):
    dataset, settings = IndexedTensors(*blobs()), config(epochs=2)
    with pytest.raises(KeyboardInterrupt):
        fit(mlp(), FailingCrossEntropy(8, "raise"), dataset, settings, tmp_path, progress=False)
    checkpoint = torch.load(tmp_path / "last.pt", weights_only=True)
    checkpoint.update(device="cuda", precision="fp16")  # as a GPU would have written it
    torch.save(checkpoint, tmp_path / "last.pt")
    with pytest.raises(ValueError, match=r"trained on cuda in fp16, and this call trains on cpu.*--device cuda "
                                         r"--precision fp16.*delete"):
        fit(mlp(), CrossEntropy(), dataset, settings, tmp_path, progress=False)


class SlowCrossEntropy(CrossEntropy):
    """Cross-entropy that sleeps ``pause`` seconds per step: an earlier process's epochs with a known minimum."""

    def __init__(self, pause: float, fail_at_step: int | None = None) -> None:
        super().__init__()
        self.pause, self.fail_at_step, self.calls = pause, fail_at_step, 0

    def forward(self, outputs, labels, indices):
        import time

        self.calls += 1
        if self.calls == self.fail_at_step:
            raise KeyboardInterrupt("simulated interruption")
        time.sleep(self.pause)
        return super().forward(outputs, labels, indices)


def test_a_resumed_run_knows_the_seconds_an_earlier_process_spent(tmp_path):
    # 5 steps per epoch; the first process sleeps 0.1 s per step and dies in epoch 2 (step 8): by its checkpoint after
    # epoch 1 it had spent >= 0.5 s, in a clock the resumed process never sees.
    import time

    dataset, settings = IndexedTensors(*blobs()), config(epochs=3)
    began = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        fit(mlp(), SlowCrossEntropy(0.1, fail_at_step=8), dataset, settings, tmp_path / "a", progress=False)
    first_process = time.perf_counter() - began
    resumed = fit(mlp(), CrossEntropy(), dataset, settings, tmp_path / "a", progress=False)
    uninterrupted = fit(mlp(), CrossEntropy(), dataset, settings, tmp_path / "b", progress=False)
    assert resumed.resumed_after == 1 and [row["epoch"] for row in resumed.rows] == [1, 2, 3]
    assert resumed.rows[0]["seconds"] >= 0.5 and resumed.rows[1]["seconds"] < 0.5  # the fast epochs: not counted in
    assert resumed.rows[0]["seconds"] <= resumed.resumed_seconds < first_process
    assert uninterrupted.resumed_after == 0 and uninterrupted.resumed_seconds == 0.0
    assert History.load(tmp_path / "a").resumed_after == 1  # history.json says the run was resumed
    # the clock adds up over resumes: a finished run entered again resumes after epoch 3 with at least all of it
    again = fit(mlp(), CrossEntropy(), dataset, settings, tmp_path / "a", progress=False)
    assert again.resumed_after == 3 and again.resumed_seconds >= resumed.resumed_seconds + resumed.rows[1]["seconds"]


def test_a_checkpoint_without_a_clock_or_from_a_newer_version(tmp_path):
    """A last.pt of format 1 (before 2026-11-29) kept no clock: its epochs' rows are summed. One of a newer format,
    or a history with fields this version does not know, is refused with the fix (upgrade), not a TypeError."""
    dataset = IndexedTensors(*blobs())
    with pytest.raises(KeyboardInterrupt):  # dies in epoch 2: last.pt holds epoch 1
        fit(mlp(), FailingCrossEntropy(8, "raise"), dataset, config(), tmp_path, progress=False)
    checkpoint = torch.load(tmp_path / "last.pt", weights_only=True)
    assert checkpoint["version"] == 2 and checkpoint["elapsed_seconds"] >= checkpoint["history"]["rows"][0]["seconds"]
    old = {key: value for key, value in checkpoint.items() if key != "elapsed_seconds"}
    old["version"] = 1
    old["history"] = {key: value for key, value in checkpoint["history"].items() if not key.startswith("resumed_")}
    torch.save(old, tmp_path / "last.pt")
    row = checkpoint["history"]["rows"][0]
    resumed = fit(mlp(), CrossEntropy(), dataset, config(), tmp_path, progress=False)
    assert resumed.resumed_after == 1 and resumed.resumed_seconds == row["seconds"] + row.get("eval_seconds", 0.0)
    torch.save({**checkpoint, "version": 3}, tmp_path / "last.pt")
    with pytest.raises(ValueError, match=r"format 3, written by a newer version of shc .*upgrade shc"):
        fit(mlp(), CrossEntropy(), dataset, config(epochs=4), tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"fields \['speed'\] was written by a newer version of shc"):
        History.from_dict({**checkpoint["history"], "speed": 1.0})


def test_a_finished_run_is_not_trained_again(tmp_path):
    dataset = IndexedTensors(*blobs())
    model = mlp()
    first = fit(model, CrossEntropy(), dataset, config(), tmp_path, progress=False)
    again_model = mlp(seed=7)
    criterion = FailingCrossEntropy(1, "raise")  # any training step would raise
    again = fit(again_model, criterion, dataset, config(), tmp_path, progress=False)
    assert criterion.calls == 0
    assert again.rows == first.rows
    assert_same_weights(weights(again_model), weights(model))


def test_config_mismatch_is_refused_naming_the_field(tmp_path):
    dataset = IndexedTensors(*blobs())
    fit(mlp(), CrossEntropy(), dataset, config(epochs=1), tmp_path, progress=False)
    with pytest.raises(ValueError, match=r"lr: checkpoint has 0\.01, this call has 0\.001.*another run_dir"):
        fit(mlp(), CrossEntropy(), dataset, config(epochs=1, lr=1e-3), tmp_path, progress=False)
    with pytest.raises(ValueError, match="train_size: checkpoint has 48, this call has 30"):
        fit(mlp(), CrossEntropy(), IndexedTensors(*blobs(30)), config(epochs=1), tmp_path, progress=False)


# --------------------------------------------------------------------------- NaN / inf


@pytest.mark.parametrize("outcome", ["nan", "inf"])
def test_non_finite_loss_raises_and_keeps_last_good_checkpoint(tmp_path, outcome):
    snapshots = []

    def snapshot(model):
        snapshots.append(weights(model))
        return {"mAP@ALL": 0.0}

    model = mlp()
    with pytest.raises(FloatingPointError, match=r"epoch 2, step 3\b.*delete last\.pt"):  # global step 8
        fit(model, FailingCrossEntropy(8, outcome), IndexedTensors(*blobs()), config(), tmp_path,
            evaluate=snapshot, progress=False)
    checkpoint = torch.load(tmp_path / "last.pt", weights_only=True)
    assert checkpoint["epoch"] == 1 and len(snapshots) == 1
    assert_same_weights(checkpoint["model"], snapshots[0])
    assert [row["epoch"] for row in History.load(tmp_path).rows] == [1]
    # the message's fixes change a setting, and a checkpoint resumes only under its own: hence "delete last.pt first"
    with pytest.raises(ValueError, match="lr: checkpoint has 0.01, this call has 0.001"):
        fit(mlp(), CrossEntropy(), IndexedTensors(*blobs()), config(lr=1e-3), tmp_path, progress=False)


# --------------------------------------------------------------------------- model selection


def scripted_evaluate(values, key="mAP@ALL"):
    snapshots = {}

    def evaluate(model):
        assert not model.training
        epoch = len(snapshots) + 1
        snapshots[epoch] = weights(model)
        return {key: values[epoch - 1], "curve": np.zeros(3), "other": np.float32(epoch)}

    return evaluate, snapshots


@pytest.mark.parametrize(("mode", "best_epoch"), [("max", 2), ("min", 1)])
def test_model_selection_returns_the_best_epoch(tmp_path, mode, best_epoch):
    values = [0.10, 0.50, 0.30, 0.50]  # the tie at epoch 4 must not replace epoch 2
    evaluate, snapshots = scripted_evaluate(values)
    model = mlp()
    history = fit(model, CrossEntropy(), IndexedTensors(*blobs()), config(epochs=4, select_mode=mode), tmp_path,
                  evaluate=evaluate, progress=False)

    assert (history.best_epoch, history.best_metric, history.selected) == (best_epoch, values[best_epoch - 1], "best")
    assert_same_weights(weights(model), snapshots[best_epoch])
    assert torch.load(tmp_path / "best.pt", weights_only=True)["epoch"] == best_epoch
    assert [row["mAP@ALL"] for row in history.rows] == values
    assert [row["other"] for row in history.rows] == [1.0, 2.0, 3.0, 4.0]
    assert "curve" not in history.rows[0]  # non-scalar entries are not recorded


def test_eval_every_also_evaluates_the_last_epoch(tmp_path):
    evaluate, snapshots = scripted_evaluate([0.3, 0.2, 0.1])
    history = fit(mlp(), CrossEntropy(), IndexedTensors(*blobs()), config(epochs=5, eval_every=2), tmp_path,
                  evaluate=evaluate, progress=False)
    assert ["mAP@ALL" in row for row in history.rows] == [False, True, False, True, True]
    assert history.best_epoch == 2


def test_missing_select_metric_is_a_clear_error(tmp_path):
    evaluate, _ = scripted_evaluate([0.1], key="accuracy")
    with pytest.raises(KeyError, match="select_metric"):
        fit(mlp(), CrossEntropy(), IndexedTensors(*blobs()), config(epochs=1), tmp_path, evaluate=evaluate,
            progress=False)


# --------------------------------------------------------------------------- predict


def test_predict_returns_outputs_in_dataset_order():
    inputs, labels = blobs(num_samples=23)
    model = mlp(dropout=0.5).train()
    expected = model.eval()(inputs).detach()
    model.train()
    rng_before = torch.get_rng_state()

    outputs = predict(model, IndexedTensors(inputs, labels), batch_size=5, precision="fp32")

    assert outputs.dtype == torch.float32 and outputs.shape == (23, 3)
    torch.testing.assert_close(outputs, expected, rtol=1e-6, atol=1e-6)
    assert model.training  # mode restored
    assert torch.equal(torch.get_rng_state(), rng_before)


def test_predict_with_worker_processes_gives_the_same_outputs_and_rejects_bad_counts():
    inputs, labels = blobs(num_samples=23)
    model = mlp().eval()
    expected = model(inputs).detach()  # the network itself, in dataset order
    workers = predict(model, IndexedTensors(inputs, labels), batch_size=5, precision="fp32", num_workers=2)
    torch.testing.assert_close(workers, expected, rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="num_workers must be None .automatic. or an integer >= 0, got -1"):
        predict(model, IndexedTensors(inputs, labels), num_workers=-1)


@pytest.mark.parametrize("cores, local_ranks, expected", [(16, 1, 8), (4, 1, 3), (16, 4, 3), (2, 2, 1), (1, 1, 1)])
def test_worker_rule_on_a_gpu_leaves_a_core_per_process_and_is_0_on_a_cpu(monkeypatch, cores, local_ranks, expected):
    from shc.devices import resolve_num_workers

    monkeypatch.setattr("os.cpu_count", lambda: cores)
    # a torch.device object is not resolved, so the rule is checked without a GPU
    assert resolve_num_workers(None, torch.device("cuda", 0), local_ranks) == expected
    assert resolve_num_workers(None, torch.device("cpu"), local_ranks) == 0
    assert resolve_num_workers(5, torch.device("cuda", 0), local_ranks) == 5
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(local_ranks))  # what predict() sees under torchrun
    assert resolve_num_workers(None, torch.device("cuda", 0)) == expected


def test_worker_rule_keeps_batched_in_memory_splits_in_process_on_a_gpu(monkeypatch):
    from shc.data import load_dataset
    from shc.devices import resolve_num_workers

    monkeypatch.setattr("os.cpu_count", lambda: 16)
    composite = load_dataset("digits-composite").train
    assert composite.batched and composite.in_memory
    per_item = composite.with_transform(lambda image: torch.as_tensor(image))  # no batched attribute
    assert not per_item.batched
    cuda = torch.device("cuda", 0)
    assert resolve_num_workers(None, cuda, dataset=composite) == 0
    assert resolve_num_workers(None, cuda, dataset=per_item) == 8
    assert resolve_num_workers(3, cuda, dataset=composite) == 3


# --------------------------------------------------------------------------- batches and validation


def test_epoch_batches_split_each_global_batch_across_ranks():
    settings = config(batch_size=7)
    single = _epoch_batches(32, settings, epoch=1, ranks=_Ranks())
    assert sorted(i for indices, _ in single for i in indices) == list(range(32))
    assert [size for _, size in single] == [7, 7, 7, 7, 4]

    shares = [_epoch_batches(32, settings, epoch=1, ranks=_Ranks(rank, 2)) for rank in range(2)]
    for batch, (rank0, size0), (rank1, size1) in zip(single, *shares, strict=True):  # every rank, every batch
        assert rank0 + rank1 == batch[0] and size0 == size1 == batch[1]
        assert abs(len(rank0) - len(rank1)) <= 1

    assert _epoch_batches(32, settings, epoch=1, ranks=_Ranks()) == single  # seeded
    assert _epoch_batches(32, settings, epoch=2, ranks=_Ranks()) != single  # reshuffled per epoch
    assert len(_epoch_batches(32, dataclasses.replace(settings, drop_last=True), 1, _Ranks())) == 4


def test_ddp_drops_a_trailing_batch_smaller_than_the_world():
    batches = _epoch_batches(29, config(batch_size=7), epoch=1, ranks=_Ranks(0, 2))
    assert [size for _, size in batches] == [7, 7, 7, 7]


@pytest.mark.parametrize(("num_samples", "world_size", "sizes"), [
    (65, 1, [64]), (66, 1, [64, 2]),  # one sample left over: BatchNorm cannot train on it
    (129, 2, [64, 64]), (130, 2, [64, 64, 2]),  # a world of two trains a single process's batches
])
def test_a_trailing_batch_too_small_for_batch_norm_is_dropped(num_samples, world_size, sizes):
    batches = _epoch_batches(num_samples, config(batch_size=64), epoch=1, ranks=_Ranks(0, world_size))
    assert [size for _, size in batches] == sizes
    assert [size for _, size in batches] == [size for _, size in _epoch_batches(num_samples, config(batch_size=64),
                                                                                 epoch=1, ranks=_Ranks())]


def test_a_network_with_batch_norm_trains_on_a_set_one_over_a_multiple_of_the_batch(tmp_path):
    """65 samples in batches of 64 once left a batch of one, and BatchNorm1d raised in training mode."""
    inputs, labels = blobs(num_samples=65)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    history = fit(model, CrossEntropy(), IndexedTensors(inputs, labels), config(batch_size=64, epochs=2), tmp_path,
                  progress=False)
    assert [row["epoch"] for row in history.rows] == [1, 2]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"epochs": 0}, "epochs"),
        ({"batch_size": 2.5}, "batch_size"),
        ({"lr": -1.0}, "lr"),
        ({"optimizer": "lbfgs"}, "optimizer"),
        ({"scheduler": "step"}, "scheduler"),
        ({"precision": "fp8"}, "precision"),
        ({"device": "tpu"}, "device"),
        ({"select_mode": "best"}, "select_mode"),
        ({"num_workers": -1}, "num_workers"),
        ({"grad_clip_norm": 0.0}, "grad_clip_norm"),
        ({"weight_decay": float("nan")}, "weight_decay"),
    ],
)
def test_invalid_config_names_the_field(change, field):
    with pytest.raises(ValueError, match=rf"TrainConfig\.{field}"):
        config(**change)


def test_items_without_an_index_are_refused(tmp_path):
    inputs, labels = blobs()
    pairs = torch.utils.data.TensorDataset(inputs, labels)
    with pytest.raises(ValueError, match=r"\(input, label, index\)"):
        fit(mlp(), CrossEntropy(), pairs, config(epochs=1), tmp_path, progress=False)


def test_gradient_clipping_bounds_the_update(tmp_path):
    # One SGD step without momentum history: |delta w| = lr * |clipped grad| <= lr * max_norm.
    model = mlp()
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    settings = config(epochs=1, batch_size=48, optimizer="sgd", lr=1.0, weight_decay=0.0, grad_clip_norm=1e-3,
                      scheduler="none")
    fit(model, CrossEntropy(), IndexedTensors(*blobs()), settings, tmp_path, progress=False)
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    assert 0 < torch.linalg.vector_norm(after - before) <= 1e-3 * (1 + 1e-5)



def test_progress_prints_one_summary_line_per_epoch(tmp_path, capsys):
    fit(mlp(), CrossEntropy(), IndexedTensors(*blobs()), config(epochs=2), tmp_path, progress=True)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("epoch ")]
    assert [line.split(":")[0] for line in lines] == ["epoch 1/2", "epoch 2/2"]
    assert all("loss=" in line and "lr=" in line for line in lines)


def test_a_set_too_small_for_batch_norm_names_the_fix(tmp_path):
    """One sample makes no batch BatchNorm can train on, whatever the batch size: the error says to give more."""
    inputs, labels = blobs(num_samples=1)
    with pytest.raises(ValueError, match=r"BatchNorm needs at least 2 samples; give more"):
        fit(mlp(), CrossEntropy(), IndexedTensors(inputs, labels), config(batch_size=64, epochs=1), tmp_path,
            progress=False)


@pytest.mark.parametrize("optimizer, first, second", [
    # two steps on f(p) = 2 p (gradient 2) from p = 0, lr 0.1, no weight decay, by each rule's definition:
    ("sgd", -0.2, -0.2 - 0.1 * (0.9 * 2 + 2)),  # momentum 0.9: the second step's velocity is 0.9 g + g
    ("adam", -0.1, -0.2),  # m_hat / sqrt(v_hat) = g / |g| = 1 on a constant gradient: lr a step
    ("rmsprop", -0.1 * 2 / (0.01 * 4) ** 0.5,  # v = 0.01 g^2 (alpha 0.99): a step of lr g / sqrt(v) = 10 lr
     -0.1 * 2 / (0.01 * 4) ** 0.5 - 0.1 * 2 / ((0.99 * 0.01 + 0.01) * 4) ** 0.5),
])
def test_each_optimizer_name_builds_its_own_update_rule(optimizer, first, second):
    """An audit: mapping "adam" to RMSprop, or SGD's momentum to 0, passed every test of the loop."""
    import torch

    from shc.train.config import TrainConfig
    from shc.train.loop import _build_optimizer

    parameter = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
    built = _build_optimizer([parameter], TrainConfig(optimizer=optimizer, lr=0.1, weight_decay=0.0))
    for expected in (first, second):
        built.zero_grad()
        (2 * parameter).sum().backward()
        built.step()
        assert parameter.item() == pytest.approx(expected, rel=1e-6)
