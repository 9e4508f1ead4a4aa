"""Do wrong bits get stuck where tanh saturates? The pre-activations of each trained network's wrong bits.

CSQ's loss (``shc.losses.CenterLoss``, Eq. 41-43) trains ``u = tanh(z)``. A bit whose sign is wrong learns only
while ``1 - u^2`` is not 0 and ``1 + h u`` is not clamped, so a wrong bit pushed far enough the wrong way stops
learning:
- in fp32 beyond the clamp of ``1 + h u`` at ``eps`` (|z| = atanh(1 - eps), about 7.25 at the default 1e-6), and
  beyond about 9, where fp32's tanh is exactly +-1 (CSQ's ``nn.BCELoss`` stops there too);
- under bf16 or fp16 autocast, where ``HashingNetwork`` computes the tanh in that type, much earlier (bf16's tanh is
  exactly +-1 from about 3.4, fp16's from about 4.5).

For every finished run of the preset's grid (methods and code lengths as given, every seed) this encodes the
training split (evaluation transform, eval mode, fp32) with the selected weights (``train/best.pt``) and the last
ones (``train/last.pt``) and prints, of the training images' bits, the share whose ``sign(z)`` is not the target
bit, how many of those lie beyond each of these thresholds, and the largest |z| of a wrong bit. Nothing is trained.
The thresholds are computed here, not typed: the smallest |z| whose tanh rounds to exactly 1 in each type.

Run: ``python benchmarks/saturated_bits.py --preset standard-fine --methods random csq shc --bits 16``.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from torch import nn

from shc.losses import CenterLoss
from shc.presets import get_preset
from shc.retrieval import load_encoder
from shc.runs import load_data
from shc.stages import Hashing
from shc.train.checkpoint import load_checkpoint
from shc.train.inference import predict


class PreActivation(nn.Module):
    """``z``, what a :class:`shc.models.HashingNetwork` feeds its tanh."""

    def __init__(self, network: nn.Module) -> None:
        super().__init__()
        self.network = network

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        network = self.network
        return network.code_norm(network.hash_layer(network.meta_embedding(network.features(images))))


def saturation_point(dtype: torch.dtype) -> float:
    """The smallest z >= 0 (on a 1e-4 grid up to 20) whose tanh, computed in ``dtype``, is exactly 1."""
    grid = torch.arange(0, 200001, dtype=torch.float64) * 1e-4
    saturated = torch.tanh(grid.to(dtype)) == 1
    return float(grid[saturated.nonzero()[0, 0]])


def thresholds() -> dict[str, float]:
    """|z| from which a wrong bit gets no gradient: the loss's clamp and each type's saturated tanh."""
    eps = CenterLoss(np.ones((1, 2))).eps
    return {"bf16 tanh": saturation_point(torch.bfloat16), "fp16 tanh": saturation_point(torch.float16),
            "clamp": float(np.arctanh(1 - eps)), "fp32 tanh": saturation_point(torch.float32)}


def wrong_bits(z: np.ndarray, targets: np.ndarray, limits: dict[str, float]) -> dict[str, float]:
    """Of the ``values`` bits of ``z`` (N x q) against the +-1 ``targets`` (N x q): the share with the wrong sign,
    the count of wrong bits with |z| >= each limit, and the largest |z| of a wrong bit (0 when none is wrong)."""
    wrong = np.where(z >= 0, 1, -1) != targets  # sign(0) = +1, as shc.models.hash_codes
    size = np.abs(z)[wrong]
    row = {"values": int(z.size), "wrong share": float(wrong.mean())}
    row.update({f"wrong >= {name}": int((size >= limit).sum()) for name, limit in limits.items()})
    row["max wrong |z|"] = float(size.max()) if size.size else 0.0
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="standard-fine")
    parser.add_argument("--methods", nargs="+", default=["random", "csq", "shc"])
    parser.add_argument("--bits", nargs="+", type=int, default=[16])
    parser.add_argument("--run-dir", default=None, help="default runs/<preset>")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    limits = thresholds()
    print("## wrong bits of the training images and their pre-activations z (fp32, eval mode); a wrong bit "
          "learns nothing beyond a limit")
    print("limits (|z|): " + ", ".join(f"{name} {limit:.4f}" for name, limit in limits.items()))
    configs = get_preset(args.preset).configs(methods=args.methods, bits=args.bits,
                                              run_dir=args.run_dir or f"runs/{args.preset}")
    rows, missing = [], []
    for config in configs:
        stage = Hashing(config)
        codes = stage.codes() if stage.cached() is not None else None
        if codes is None or codes.get("target_codes") is None:
            missing.append(f"{config.method} {config.bits} bits seed {config.seed}")
            continue
        encoder = load_encoder(stage.directory, device="cpu")
        data = load_data(config)
        split = data.train.with_transform(data.val.transform)
        targets = np.asarray(codes["target_codes"])[np.asarray(split.labels)]
        for weights in ("best", "last"):
            if weights == "last":
                encoder.model.load_state_dict(load_checkpoint(stage.directory / "train" / "last.pt")["model"])
            z = predict(PreActivation(encoder.model), split, batch_size=512, precision="fp32").numpy()
            rows.append({"method": config.method, "bits": config.bits, "seed": config.seed, "weights": weights,
                         **wrong_bits(z, targets, limits)})
    if rows:
        import pandas as pd

        print(pd.DataFrame(rows).to_string(index=False, float_format=lambda value: f"{value:.4f}"))
    if missing:
        print(f"not finished (or without targets): {'; '.join(missing)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
