"""Where a small preset's epoch goes on a GPU: the two probes behind docs/gpu.md's "standard preset" section.

``variants``: one-epoch fits of the standard preset's network (``composite_cnn``, batch 64) on 640 of its
training composites, twice each (the first pays cuDNN's and the workers' start), for deterministic on/off,
precision auto (fp16 on CUDA) / fp32, DataLoader workers automatic / 0 and channels-last on/off.
``concurrency N``: N processes at once, each three epochs on the whole training split (5,000 composites), to
see whether runs sharing one GPU slow each other (``--jobs N`` of the pipeline on a GPU).

Run on a GPU machine, Fashion-MNIST's idx files under ``$SHC_DATA_ROOT`` (or Debian's folder):
``python benchmarks/gpu_probe.py variants`` and ``python benchmarks/gpu_probe.py concurrency 3``.
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
import time

DEVICE = "cuda"


def _setup(bits: int = 32):
    import torch

    from shc.data.cache import load_data
    from shc.losses import CenterLoss
    from shc.models import build_hashing_network
    from shc.presets import get_preset

    config = get_preset("standard").base(dataset="fashion-composite", method="csq", bits=bits)
    data = load_data(config)
    torch.manual_seed(0)
    model = build_hashing_network(config.backbone, bits, in_channels=data.train[0][0].shape[0])
    criterion = CenterLoss(torch.randint(0, 2, (data.num_classes, bits)) * 2 - 1)
    return config, data, model, criterion


def variants(device: str = DEVICE) -> None:
    from torch.utils.data import Subset

    from shc.train import TrainConfig, fit

    config, data, _, _ = _setup()
    print(f"input {tuple(data.train[0][0].shape)}, backbone {config.backbone}, batch {config.batch_size}", flush=True)
    subset = Subset(data.train, range(640))  # 10 steps
    cases = [(True, "auto", None, True), (False, "auto", None, True), (True, "fp32", None, True),
             (True, "auto", 0, True), (True, "auto", None, False), (False, "fp32", 0, False),
             (True, "fp32", 0, False)]
    for deterministic, precision, workers, channels_last in cases:
        _, _, model, criterion = _setup()
        seconds = []
        for _ in range(2):
            settings = TrainConfig(epochs=1, batch_size=config.batch_size, device=device, precision=precision,
                                   num_workers=workers, deterministic=deterministic, channels_last=channels_last)
            history = fit(model, criterion, subset, settings, tempfile.mkdtemp(), progress=False)
            seconds.append(round(history.rows[0]["seconds"], 2))
        print(f"deterministic={deterministic} precision={precision} workers={workers} channels_last={channels_last}: "
              f"{seconds} s for 10 steps", flush=True)


def _three_epochs(device: str, threads: int, queue) -> None:
    import torch

    from shc.train import TrainConfig, fit

    torch.set_num_threads(threads)
    config, data, model, criterion = _setup()
    history = fit(model, criterion, data.train, TrainConfig(epochs=3, batch_size=config.batch_size, device=device),
                  tempfile.mkdtemp(), progress=False)
    queue.put([round(row["seconds"], 2) for row in history.rows])


def concurrency(processes: int, device: str = DEVICE) -> None:
    import os

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    threads = max(1, (os.cpu_count() or 1) // processes)
    started = time.perf_counter()
    workers = [context.Process(target=_three_epochs, args=(device, threads, queue)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    results = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    print(f"{processes} process(es) on {device}: epoch seconds per process {results}; "
          f"wall {time.perf_counter() - started:.1f} s", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("variants", "concurrency"):
        raise SystemExit("usage: python benchmarks/gpu_probe.py variants | concurrency N")
    if sys.argv[1] == "variants":
        variants()
    else:
        concurrency(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
