"""Worker for tests/test_ddp.py: one rank of a 2-process gloo run, launched by torchrun.

    python -m torch.distributed.run --standalone --nproc_per_node=2 tests/ddp_worker.py OUT_DIR

Each rank trains the shared tiny problem with shc.train.fit (which joins the process group from torchrun's
environment) and saves its final weights to OUT_DIR/rank{RANK}.pt. The model has no BatchNorm, so the DDP run
must match a single-process run over the same global batches up to float summation order.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from shc.train import TrainConfig, fit

# batch 7 over 2 ranks gives uneven 4/3 shares, and 30 = 4 x 7 + 2 ends with a partial batch (split 1/1):
# both exercise the per-rank loss weighting.
CONFIG = TrainConfig(epochs=2, batch_size=7, lr=1e-2, device="cpu", precision="fp32", num_workers=0)
NUM_SAMPLES = 30


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


def problem() -> tuple[nn.Module, IndexedTensors]:
    """The same model (seeded init, no BatchNorm) and data on every rank."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.arange(NUM_SAMPLES) % 3
    inputs = 3.0 * torch.randn(3, 4, generator=generator)[labels] + torch.randn(NUM_SAMPLES, 4, generator=generator)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 3))
    return model, IndexedTensors(inputs, labels)


def main(out_dir: Path) -> None:
    model, dataset = problem()
    fit(model, CrossEntropy(), dataset, CONFIG, out_dir / "run", progress=False)
    torch.save(model.state_dict(), out_dir / f"rank{os.environ['RANK']}.pt")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
