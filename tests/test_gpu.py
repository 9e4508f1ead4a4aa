"""The GPU path, on a CUDA machine: ``python -m pytest -m gpu`` (skipped with the reason elsewhere).

Stages 1-3 of the tiny preset on CUDA with bf16 autocast and channels-last, checking where every model and
tensor lives, and one NCCL DDP step in a single process. Results of runs on lent GPUs are in docs/gpu.md.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (none on this machine)")]


def _tiny(tmp_path, **changes):
    from shc.presets import get_preset

    return get_preset("tiny").base(run_dir=str(tmp_path), device="cuda", precision="bf16", **changes)


def test_stages_1_to_3_run_on_cuda_with_bf16_and_channels_last(tmp_path, monkeypatch):
    import shc.train
    from shc import pipeline

    devices = []
    real_predict = shc.train.predict

    def spy(model, dataset, *args, **kwargs):
        parameter = next(model.parameters())
        devices.append(parameter.device.type)
        return real_predict(model, dataset, *args, **kwargs)

    monkeypatch.setattr(shc.train, "predict", spy)
    result = pipeline.run(_tiny(tmp_path, method="shc", bits=16))
    assert devices and set(devices) == {"cuda"}, devices
    assert result.metrics["mAP@ALL"] > 0.1
    assert result.centers.shape == (20, 16) and result.similarity.shape == (20, 20)


def test_training_step_keeps_weights_inputs_and_outputs_on_cuda_in_channels_last():
    from shc.devices import _autocast, _move_inputs
    from shc.models import build_hashing_network

    device = torch.device("cuda")
    model = build_hashing_network("small_cnn", 16, in_channels=1).to(device).to(memory_format=torch.channels_last)
    images = _move_inputs(torch.randn(8, 1, 28, 56), device, channels_last=True)
    assert images.is_contiguous(memory_format=torch.channels_last)
    with _autocast(device, "bf16"):
        outputs = model(images)
    assert outputs.device.type == "cuda" and outputs.dtype in (torch.bfloat16, torch.float32)
    outputs.float().sum().backward()
    assert all(p.grad is not None and p.grad.device.type == "cuda" for p in model.parameters() if p.requires_grad)


def test_one_process_nccl_ddp_step(tmp_path):
    import torch.distributed as dist

    from shc.losses import ClassificationLoss
    from shc.models import build_classifier
    from shc.train import TrainConfig, fit

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29517")
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        class Images(torch.utils.data.Dataset):
            def __len__(self):
                return 16

            def __getitem__(self, i):
                return torch.randn(1, 28, 28), i % 4, i

        model = build_classifier("small_cnn", 4, in_channels=1)
        history = fit(model, ClassificationLoss(), Images(), TrainConfig(epochs=1, batch_size=8, device="cuda"),
                      tmp_path / "ddp", progress=False)
        assert np.isfinite(history.rows[-1]["loss"])
        assert next(model.parameters()).device.type == "cuda"
    finally:
        dist.destroy_process_group()
