"""GPU-safe by construction, checked on a CPU machine: every step computes on the device that was resolved
once, never on a CPU default.

The stand-in device is ``meta`` (tensors without storage): a forward hook records where the model's weights
and inputs are and stops the run at the first forward pass, before anything needs real numbers. A step that
fed CPU inputs to a model elsewhere (the stage-1 bug a GPU run would have hit) or left the model on the CPU
fails here.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import shc.train.loop
from shc.losses import ClassificationLoss
from shc.models import build_classifier, build_hashing_network
from shc.train import TrainConfig, fit, predict


class _Stop(Exception):
    pass


def _record_first_forward(model, seen):
    def hook(module, inputs):
        seen.append({"input": inputs[0].device, "weights": {p.device for p in module.parameters()}})
        raise _Stop

    model.register_forward_pre_hook(hook)


class _Images(torch.utils.data.Dataset):
    def __init__(self, n=8):
        self.images, self.labels = torch.randn(n, 1, 16, 16), torch.arange(n) % 4

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.images[i], self.labels[i], i


def test_inference_feeds_inputs_on_the_models_own_device():
    model = build_hashing_network("small_cnn", 16, in_channels=1).to("meta")
    seen = []
    _record_first_forward(model, seen)
    with pytest.raises(_Stop):
        predict(model, _Images(), batch_size=4, precision="fp32")  # no device given: the model's own
    assert seen == [{"input": torch.device("meta"), "weights": {torch.device("meta")}}]


def test_training_moves_model_and_batches_to_the_resolved_device(monkeypatch, tmp_path):
    resolved = []

    def stand_in(device="auto", local_rank=0):
        resolved.append(device)
        return torch.device("meta")

    monkeypatch.setattr(shc.train.loop, "resolve_device", stand_in)  # where fit looks it up
    model = build_classifier("small_cnn", 4, in_channels=1)
    seen = []
    _record_first_forward(model, seen)
    config = TrainConfig(epochs=1, batch_size=4, precision="fp32", device="auto", seed=0)
    with pytest.raises(_Stop):
        fit(model, ClassificationLoss(), _Images(), config, tmp_path / "run", progress=False)
    assert resolved == ["auto"], "the device is resolved once, in one place"
    assert seen == [{"input": torch.device("meta"), "weights": {torch.device("meta")}}]


def test_the_pipeline_runs_stage_1_inference_on_the_trained_classifiers_device(monkeypatch, tmp_path):
    """Stage 1 trains the classifier, then takes its logits through shc.train.predict on the model's device."""
    from shc import pipeline
    from shc.runs import RunConfig

    calls = []
    real_predict = shc.train.predict

    def spy(model, dataset, *args, **kwargs):
        calls.append({"device_argument": kwargs.get("device"), "model": next(model.parameters()).device})
        return real_predict(model, dataset, *args, **kwargs)

    monkeypatch.setattr(shc.train, "predict", spy)
    config = RunConfig(method="shc", bits=16, epochs=1, classifier_epochs=1, run_dir=str(tmp_path), device="cpu",
                       dataset_options={"num_classes": 8, "train_per_class": 4, "val_per_class": 2,
                                        "query_per_class": 2, "database_per_class": 4})
    S = pipeline.run_similarity(config)
    assert S.shape == (8, 8) and np.allclose(np.diag(S), 1)
    assert calls and all(call["device_argument"] is None for call in calls), "inference must follow the model"


def test_a_gpu_index_the_machine_does_not_have_is_refused_naming_the_ones_it_has(monkeypatch):
    """An audit: cuda:7 on a one-GPU machine passed, and failed later as "invalid device ordinal", naming no fix."""
    import torch

    from shc.devices import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("cuda:1") == torch.device("cuda", 1)
    assert resolve_device("cuda", local_rank=3) == torch.device("cuda", 1)
    with pytest.raises(RuntimeError, match=r"cuda:7.*has 2 GPU\(s\): use one of cuda:0, cuda:1"):
        resolve_device("cuda:7")


def test_auto_precision_is_fp16_on_cuda_and_the_machine_s_own_on_a_cpu(monkeypatch):
    """docs/reliability.md, "Precision": ``auto`` is fp16 autocast on CUDA whatever the CPU, bf16 on a CPU with
    native bf16, fp32 on one without; fp16 on a CPU is refused with the fix. No GPU is needed to resolve it."""
    import shc.devices
    from shc.devices import resolve_precision

    for native in (True, False):
        monkeypatch.setattr(shc.devices, "_cpu_has_native_bf16", lambda native=native: native)
        assert resolve_precision("auto", torch.device("cuda")) == "fp16"
        assert resolve_precision("auto", torch.device("cpu")) == ("bf16" if native else "fp32")
    assert resolve_precision("bf16", torch.device("cuda")) == "bf16"  # an explicit choice is kept
    with pytest.raises(ValueError, match="precision='fp16' needs CUDA"):
        resolve_precision("fp16", torch.device("cpu"))


def test_a_criterion_with_trainable_parameters_is_refused_under_ddp():
    """DistributedDataParallel synchronises the model's gradients, not a loss's: a loss with parameters of its own
    (GreedyHash's classifier, LTH's memory) would train apart on each rank, so ``fit`` refuses it (docs/package.md)."""
    from shc.losses import build_loss
    from shc.train.distributed import _Ranks

    model = build_hashing_network("small_cnn", 8)
    criterion = build_loss("greedyhash", num_classes=4, num_bits=8)
    assert any(p.requires_grad for p in criterion.parameters())
    config = TrainConfig(epochs=1, batch_size=4)
    args = (model, criterion, config, torch.device("cpu"), "fp32")
    with pytest.raises(ValueError, match="DistributedDataParallel would not synchronise"):
        shc.train.loop._prepare(*args, _Ranks(rank=0, world_size=2))
    shc.train.loop._prepare(*args, _Ranks())  # one process: the same criterion trains
