"""Training throughput: images/second of one training step, and the DataLoader worker default.

Two tables in one:

- ``step``: forward + float32 CenterLoss + backward + RMSprop step (``shc.train.loop._train_step``, exactly
  what ``fit`` runs per batch) of a 64-bit ``HashingNetwork`` on ``small_cnn`` and ``resnet18``, batch 64,
  32x32 and 224x224 random images, channels-last, fp32 vs bf16 autocast. With ``--device cuda`` the cases
  are ``small_cnn`` at 32x32 and ``resnet18`` and the paper's ``resnet34`` at 224x224, fp32 / bf16 / fp16
  (the GPU's ``precision="auto"``), each step timed to its ``torch.cuda.synchronize()``: the ``resnet34``
  rows are the throughput *t* that ``bench_scale_out.py --images-per-second`` takes.
- ``epoch``: one ``fit`` epoch of ``small_cnn`` on the default ``digits-composite`` training split
  (5,000 8x16 images, train augmentation, the batched ``__getitems__`` path), fp32 vs bf16 and
  ``num_workers`` 0 vs 2: the measurement behind ``TrainConfig.num_workers=None`` meaning 0 on a CPU.

The cases are *interleaved* (fp32, bf16, fp32, ...) so that load from other processes hits them alike.
``images/s`` is at the median repetition, ``best images/s`` at the fastest: on a shared machine the two
intra-op threads of a step stall whenever one is descheduled, and the best repetition is the closer
estimate of an unloaded machine. For a load-insensitive fp32/bf16 ratio, run with ``OMP_NUM_THREADS=1``
(measured so on this machine's AVX512-BF16 CPU: bf16 1.9x fp32 for resnet18 at 224x224, 2.3x for small_cnn
at 224x224, 1.2x for resnet18 at 32x32).

Run: ``python benchmarks/run.py --only train`` (``--quick``: fewer steps; on a CPU the 32x32 cases only, on a GPU
small_cnn and ResNet34); on a GPU,
``python benchmarks/bench_train.py --device cuda`` (results: docs/gpu.md).
"""

from __future__ import annotations

import statistics
import tempfile
import time

import torch

from shc.data import load_dataset
from shc.losses import CenterLoss
from shc.models import build_hashing_network
from shc.train import TrainConfig, fit
from shc.train.loop import _train_step

BATCH_SIZE = 64
NUM_BITS = 64
NUM_CLASSES = 100
CPU = torch.device("cpu")


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _step_runner(backbone: str, image_size: int, precision: str, device: torch.device = CPU):
    """A closure running one training step of a fresh network on a fixed random batch (on ``device``; the
    batch starts on the host, as a DataLoader's does, and the step is timed to the device's synchronize)."""
    torch.manual_seed(0)
    model = build_hashing_network(backbone, NUM_BITS).to(device).to(memory_format=torch.channels_last).train()
    criterion = CenterLoss(torch.randint(0, 2, (NUM_CLASSES, NUM_BITS)) * 2 - 1).to(device)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-4, weight_decay=1e-5)
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    images = torch.randn(BATCH_SIZE, 3, image_size, image_size)
    labels = torch.randint(0, NUM_CLASSES, (BATCH_SIZE,))
    indices = torch.arange(BATCH_SIZE)

    def step() -> float:
        _synchronize(device)
        started = time.perf_counter()
        _train_step(model, criterion, optimizer, scaler, images, labels, indices, weight=1.0, device=device,
                    precision=precision, channels_last=True, grad_clip_norm=None)
        _synchronize(device)
        return time.perf_counter() - started

    return step


def _speeds(seconds: list[float], images: int) -> dict[str, float]:
    """Images/s at the median and at the fastest repetition (the latter estimates an unloaded machine)."""
    return {"images/s": round(images / statistics.median(seconds), 1), "best images/s": round(images / min(seconds), 1)}


def step_rows(quick: bool, device: torch.device = CPU) -> list[dict]:
    if device.type == "cuda":
        cases = [("small_cnn", 32), ("resnet18", 224), ("resnet34", 224)]
        precisions: tuple[str, ...] = ("fp32", "bf16", "fp16")
        warmup, timed = (3, 10) if quick else (10, 30)
    else:
        cases = [("small_cnn", 32), ("resnet18", 32), ("small_cnn", 224), ("resnet18", 224)]
        precisions = ("fp32", "bf16")
        warmup, timed = (2, 5) if quick else (3, 10)
    if quick:  # a CPU: the 32x32 cases; CUDA: small_cnn and the paper's ResNet34 (bench_scale_out's throughput)
        cases = [cases[0], cases[-1]] if device.type == "cuda" else [case for case in cases if case[1] == 32]
    rows = []
    for backbone, size in cases:
        runners = {precision: _step_runner(backbone, size, precision, device) for precision in precisions}
        seconds: dict[str, list[float]] = {precision: [] for precision in precisions}
        for _ in range(warmup):
            for runner in runners.values():
                runner()
        for _ in range(timed):  # interleaved: fp32, bf16, fp32, bf16, ...
            for precision, runner in runners.items():
                seconds[precision].append(runner())
        fp32_median = statistics.median(seconds["fp32"])
        for precision in precisions:
            rows.append({
                "table": "step", "model": backbone, "input": f"{size}x{size}", "precision": precision,
                **_speeds(seconds[precision], BATCH_SIZE),
                "median vs fp32": f"{fp32_median / statistics.median(seconds[precision]):.2f}x",
                "repeats": f"{timed} steps",
            })
    return rows


def epoch_rows(quick: bool, device: torch.device = CPU) -> list[dict]:
    splits = load_dataset("digits-composite")
    signs = torch.randint(0, 2, (splits.num_classes, NUM_BITS), generator=torch.Generator().manual_seed(0))
    criterion = CenterLoss(signs * 2 - 1)
    cases = [(0, "fp32"), (0, "bf16"), (2, "bf16")]  # (num_workers, precision)
    if device.type == "cuda":
        cases += [(0, "fp16"), (2, "fp16")]
    repeats = 1 if quick else 3
    seconds: dict[tuple[int, str], list[float]] = {case: [] for case in cases}
    with tempfile.TemporaryDirectory() as scratch:
        for repeat in range(repeats):
            for workers, precision in cases:  # interleaved, as above
                torch.manual_seed(0)
                model = build_hashing_network("small_cnn", NUM_BITS)
                config = TrainConfig(epochs=1, device=str(device), precision=precision, num_workers=workers,
                                     deterministic=False)
                history = fit(model, criterion, splits.train, config, f"{scratch}/{workers}{precision}{repeat}",
                              progress=False)
                seconds[workers, precision].append(history.rows[0]["seconds"])
    return [
        {
            "table": "epoch", "model": "small_cnn", "input": "8x16 digits", "precision": precision,
            "num_workers": workers, **_speeds(values, len(splits.train)), "repeats": f"{repeats} epochs",
        }
        for (workers, precision), values in seconds.items()
    ]


def run(quick: bool = False, device: str = "cpu") -> list[dict]:
    """Rows of the two tables (see the module docstring) on ``device`` ("cpu", "cuda" or "cuda:N")."""
    resolved = torch.device(device)
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"--device {device}: CUDA is not available on this machine; leave --device out for the CPU.")
    rows = step_rows(quick, resolved) + epoch_rows(quick, resolved)
    where = torch.cuda.get_device_name(resolved) if resolved.type == "cuda" else "cpu"
    return [{**row, "device": where} for row in rows]


if __name__ == "__main__":
    import argparse

    from run import print_table  # benchmarks/ is on sys.path when this file is run directly

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer steps; the 32x32 cases on a CPU, small_cnn and "
                        "resnet34 on CUDA")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    args = parser.parse_args()
    print_table("train", run(quick=args.quick, device=args.device))
