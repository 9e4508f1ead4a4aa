"""Worker for tests/test_ddp.py: one rank of a 2-process gloo run, launched by torchrun.

    python -m torch.distributed.run --standalone --nproc_per_node=2 tests/ddp_worker.py OUT_DIR [options]

Each rank trains the shared tiny problem with shc.train.fit (which joins the process group from torchrun's
environment) with a scripted validation metric, and saves the weights fit selected and the best epoch it
reports to OUT_DIR/rank{RANK}.pt. The model has no BatchNorm, so the DDP run
must match a single-process run over the same global batches up to float summation order.
``--leave-probe`` trains nothing: it times how the ranks leave the process group (:func:`leave_probe`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from shc.train import TrainConfig, fit
from shc.train.distributed import _process_group

# batch 7 over 2 ranks gives uneven 4/3 shares, and 30 = 4 x 7 + 2 ends with a partial batch (split 1/1):
# both exercise the per-rank loss weighting.
CONFIG = TrainConfig(epochs=3, batch_size=7, lr=1e-2, device="cpu", precision="fp32", num_workers=0)
NUM_SAMPLES = 30
VALIDATION_MAP = (0.2, 0.5, 0.3)  # scripted evaluate: epoch 2 is the best


class IndexedTensors(torch.utils.data.Dataset):
    def __init__(self, inputs: torch.Tensor, labels: torch.Tensor) -> None:
        self.inputs, self.labels = inputs, labels

    def __len__(self) -> int:
        return len(self.inputs)

    def __getitem__(self, index: int):
        return self.inputs[index], self.labels[index], index


class CrossEntropy(nn.Module):
    def forward(self, outputs, labels, indices):
        return F.cross_entropy(outputs, labels)


class FailingCrossEntropy(CrossEntropy):
    """Raises at the given 1-based step, like a run killed mid-epoch."""

    def __init__(self, at_step: int) -> None:
        super().__init__()
        self.at_step, self.calls = at_step, 0

    def forward(self, outputs, labels, indices):
        self.calls += 1
        if self.calls == self.at_step:
            raise RuntimeError("simulated interruption")
        return super().forward(outputs, labels, indices)


class FailingBank(nn.Module):
    """DPSH's loss, whose memory bank holds each rank's own samples' latest codes, raising at a 1-based step (0:
    never): the criterion state a resume must give back to every rank."""

    def __init__(self, labels: torch.Tensor, at_step: int) -> None:
        from shc.losses.pairwise import DPSHLoss

        super().__init__()
        self.inner = DPSHLoss(labels.numpy(), 3, 3)
        self.at_step, self.calls = at_step, 0

    def forward(self, outputs, labels, indices):
        self.calls += 1
        if self.calls == self.at_step:
            raise RuntimeError("simulated interruption")
        return self.inner(outputs, labels, indices)


def problem(dropout: float = 0.0) -> tuple[nn.Module, IndexedTensors]:
    """The same model (seeded init, no BatchNorm) and data on every rank."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(NUM_SAMPLES) % 3
    inputs = 3.0 * torch.randn(3, 4, generator=generator)[labels] + torch.randn(NUM_SAMPLES, 4, generator=generator)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Dropout(dropout), nn.Linear(16, 3))
    return model, IndexedTensors(inputs, labels)


def scripted_evaluate(first_epoch: int = 1):
    """A fake validation returning VALIDATION_MAP[epoch - 1] (fit calls it on rank 0 only, once per epoch).

    ``first_epoch``: the epoch a resumed run starts at.
    """
    epochs = iter(range(first_epoch, CONFIG.epochs + 1))

    def evaluate(model: nn.Module) -> dict[str, float]:
        return {"mAP@ALL": VALIDATION_MAP[next(epochs) - 1]}

    return evaluate


def leave_probe(out_dir: Path, fail: bool = False) -> None:
    """Rank 1 reaches the end of the group's block a second later than rank 0; each rank writes when it
    got there and when the block was left (the group destroyed). With ``fail`` rank 0 instead raises a
    second after rank 1 got there, and each rank writes what it raised."""
    rank = int(os.environ["RANK"])
    try:
        with _process_group("cpu"):
            time.sleep(1.0 * (rank == 0 if fail else rank))
            arrived = time.time()
            if fail and rank == 0:
                raise RuntimeError("rank 0 fails after rank 1 has finished")
    except RuntimeError as error:
        (out_dir / f"leave{rank}.json").write_text(json.dumps({"raised": str(error), "at": time.time()}))
        raise
    left = time.time()
    (out_dir / f"leave{rank}.json").write_text(json.dumps({"arrived": arrived, "left": left}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="One rank of the DDP test run (launch with torchrun).")
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--fail-at-step", type=int, default=0, help="raise at this 1-based step (0: never)")
    parser.add_argument("--first-epoch", type=int, default=1, help="the epoch a resumed run starts at")
    parser.add_argument("--bank", action="store_true", help="DPSH's loss with its per-rank memory bank")
    parser.add_argument("--leave-probe", choices=("ok", "fail"),
                        help="no training: time when each rank reaches and leaves the end of _process_group "
                             "(fail: rank 0 raises there)")
    args = parser.parse_args(argv)
    if args.leave_probe:
        leave_probe(args.out_dir, fail=args.leave_probe == "fail")
        return
    model, dataset = problem(args.dropout)
    if args.bank:
        criterion = FailingBank(dataset.labels, args.fail_at_step)
    else:
        criterion = FailingCrossEntropy(args.fail_at_step) if args.fail_at_step else CrossEntropy()
    history = fit(model, criterion, dataset, CONFIG, args.out_dir / "run", evaluate=scripted_evaluate(args.first_epoch),
                  progress=False)
    rank_file = args.out_dir / f"rank{os.environ['RANK']}.pt"
    torch.save({"model": model.state_dict(), "best_epoch": history.best_epoch,
                "criterion": criterion.state_dict()}, rank_file)


if __name__ == "__main__":
    main()
