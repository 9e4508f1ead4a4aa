"""Where the time of a fashion-composite hashing run goes, and which speed options pay off on this CPU.

Times, in one process and *interleaved* (variant A, B, C, A, B, C, ...) so that load from other processes
hits every variant alike, the parts of one stage-3 run of ``shc.pipeline.run``:

- ``data``: the training transform of every batch of one epoch (``HashingSplit.__getitems__`` plus the
  DataLoader's collate), i.e. augmentation and normalisation;
- ``step``: forward + float32 CenterLoss + backward + RMSprop step (``shc.train.loop._train_step``, what
  ``fit`` runs per batch) for fp32 / bf16 autocast, channels-last on / off, batch 64 / 256, and
  ``torch.compile`` (optional, ``--compile``);
- ``encode``: one evaluation's forward passes (validation + database splits, batch 512), fp32 / bf16;
- with ``--vs-standard``, the step and encode of the proposed standard testbed (``STANDARD`` in
  ``benchmarks/standard_convergence.py``) in the same rounds, so its cost reads as a ratio to today's.

It prints seconds per epoch-equivalent and ratios against the pipeline's default variant (bf16 on a CPU
with AVX512-BF16/AMX, channels-last, batch 64), which are what to read on a shared machine.

Run: ``python benchmarks/profile_standard.py [--backbone small_cnn] [--train-per-class 50] [--repeats 3]
[--compile] [--vs-standard]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.utils.data import DataLoader

from shc.data import load_dataset
from shc.losses import CenterLoss
from shc.models import build_hashing_network
from shc.train import predict
from shc.train.loop import _train_step

CPU = torch.device("cpu")
BITS = 16


def _data_epoch(train, batch_size: int) -> Callable[[], float]:
    """One epoch of training batches through the DataLoader (transform + collate), no model."""

    def run() -> float:
        order = torch.randperm(len(train)).split(batch_size)
        loader = DataLoader(train, batch_sampler=[chunk.tolist() for chunk in order], num_workers=0)
        started = time.perf_counter()
        for _ in loader:
            pass
        return time.perf_counter() - started

    return run


def _step_epoch(backbone: str, train, num_classes: int, batch_size: int, precision: str, channels_last: bool,
                compiled: bool, steps: int) -> Callable[[], float]:
    """``steps`` training steps on pre-transformed batches; returns seconds scaled to one epoch."""
    torch.manual_seed(0)
    model = build_hashing_network(backbone, BITS).train()
    if channels_last:
        model = model.to(memory_format=torch.channels_last)
    network = torch.compile(model) if compiled else model
    signs = torch.randint(0, 2, (num_classes, BITS), generator=torch.Generator().manual_seed(0))
    criterion = CenterLoss(signs * 2 - 1)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-5)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    images, labels = train.tensors()
    batches = [(images[i:i + batch_size], labels[i:i + batch_size], torch.arange(i, i + batch_size))
               for i in range(0, steps * batch_size, batch_size)]
    for inputs, targets, indices in batches[:2]:  # warm-up (and compilation)
        _train_step(network, criterion, optimizer, scaler, inputs, targets, indices, 1.0, CPU, precision,
                    channels_last, None)

    def run() -> float:
        started = time.perf_counter()
        for inputs, targets, indices in batches:
            _train_step(network, criterion, optimizer, scaler, inputs, targets, indices, 1.0, CPU, precision,
                        channels_last, None)
        return (time.perf_counter() - started) * len(train) / (steps * batch_size)

    return run


def _encode(backbone: str, splits, precision: str) -> Callable[[], float]:
    """One evaluation's forward passes: validation and database splits."""
    torch.manual_seed(0)
    model = build_hashing_network(backbone, BITS).to(memory_format=torch.channels_last).eval()

    def run() -> float:
        started = time.perf_counter()
        for split in (splits.val, splits.database):
            predict(model, split, batch_size=512, precision=precision)
        return time.perf_counter() - started

    return run


def profile(backbone: str, dataset_options: dict, repeats: int, compiled: bool, steps: int,
            standard: dict | None = None) -> list[dict]:
    started = time.perf_counter()
    splits = load_dataset("fashion-composite", **dataset_options)
    load_seconds = time.perf_counter() - started
    train = splits.train
    variants: dict[str, Callable[[], float]] = {
        "data, batch 64": _data_epoch(train, 64),
        "data, batch 256": _data_epoch(train, 256),
    }
    for precision in ("bf16", "fp32"):
        for channels_last in (True, False):
            name = f"step {precision}, {'channels-last' if channels_last else 'contiguous'}, batch 64"
            variants[name] = _step_epoch(backbone, train, splits.num_classes, 64, precision, channels_last,
                                         False, steps)
    for precision in ("bf16", "fp32"):
        variants[f"step {precision}, channels-last, batch 256"] = _step_epoch(
            backbone, train, splits.num_classes, 256, precision, True, False, max(2, steps // 4))
    if compiled:
        for precision in ("bf16", "fp32"):
            variants[f"step {precision}, channels-last, batch 64, compiled"] = _step_epoch(
                backbone, train, splits.num_classes, 64, precision, True, True, steps)
    for precision in ("bf16", "fp32"):
        variants[f"encode val+database, {precision}"] = _encode(backbone, splits, precision)
    if standard is not None:  # the proposed standard testbed, timed in the same rounds
        options = dict(standard["dataset_options"])
        other = load_dataset("fashion-composite", **options)
        label = f"standard testbed ({standard['backbone']}, {options})"
        variants[f"step bf16, channels-last, batch 64, {label}"] = _step_epoch(
            standard["backbone"], other.train, other.num_classes, 64, "bf16", True, False, steps)
        variants[f"encode val+database, bf16, {label}"] = _encode(standard["backbone"], other, "bf16")
    seconds: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(repeats):
        for name, variant in variants.items():
            seconds[name].append(variant())
    reference = statistics.median(seconds["step bf16, channels-last, batch 64"])
    rows = [{"part": "load + compose splits", "seconds (median)": f"{load_seconds:.2f}", "vs default step": ""}]
    for name, values in seconds.items():
        median = statistics.median(values)
        rows.append({"part": name + (" (per epoch)" if not name.startswith("encode") else " (per evaluation)"),
                     "seconds (median)": f"{median:.2f}", "best": f"{min(values):.2f}",
                     "vs default step": f"{median / reference:.2f}"})
    return rows


def main(argv: list[str] | None = None) -> int:
    import sys
    from pathlib import Path

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", default="small_cnn")
    parser.add_argument("--train-per-class", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps", type=int, default=16, help="timed training steps per repetition (batch 64)")
    parser.add_argument("--compile", action="store_true", help="also time torch.compile'd steps")
    parser.add_argument("--vs-standard", action="store_true",
                        help="also time the proposed standard testbed (benchmarks/standard_convergence.py STANDARD)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    standard = None
    if args.vs_standard:
        from standard_convergence import STANDARD as standard
    rows = profile(args.backbone, {"train_per_class": args.train_per_class}, args.repeats, args.compile, args.steps,
                   standard)
    print_table(f"fashion-composite, {args.backbone}, {args.train_per_class} training images per class, "
                f"{torch.get_num_threads()} threads", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
