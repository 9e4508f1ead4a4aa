"""Why does SCRH's first reassignment move almost every sub-code (issue 37's open question, docs/unseen.md)?

SCRH starts at shc-ls's semantic centers, yet its first reassignment moved 197 of the 200 (head, class) sub-codes on
`standard` at 16 bits, and 184 when delayed to epoch 10. Two explanations were left open: the class's own samples
prefer another candidate (the network's codes are not yet at their targets, and CRH's codebook of M = 2C candidates
of d bits fills most of the d-bit cube, so a candidate one bit away usually exists), or the greedy pass cascades (a
class earlier in the random order takes another's candidate). This probe tells them apart.

For each SCRH variant (JSON method options) it trains the preset's SCRH run (16 bits, seed 0, in a scratch run
folder: the grid's runs are not touched) up to its first ``--passes`` reassignments, stops, and prints per pass
(:func:`shc.codebook.reassignment_pressure`, every other class held where it is):

- ``moved``: (head, class) pairs whose candidate the pass changed;
- ``prefer``: pairs whose cheapest candidate is another one (they leave in any greedy order that reaches them while
  that candidate is free); ``cascade``: moved although keeping was cheapest (another class took theirs first);
- ``1-bit``: of the ``prefer`` pairs, how many prefer a candidate one bit from their own;
- ``majority``: pairs whose majority sub-code (the sign of the class's mean code) is the one they hold;
- ``data gap`` and ``sem gap``: medians over the ``prefer`` pairs of Eq. 7's cost and of the weighted semantic term
  of keeping minus those of the preferred candidate (a positive data gap pushes out, a negative semantic gap holds in);
- ``hit``: the training center hit rate against the centers held before the pass;
- ``cube``: the fraction of the d-bit cube the head's codebook fills.

Run: ``python benchmarks/scrh_first_pass.py --variants '{}' '{"reassign_from": 10}' [--preset standard] [--passes 2]
[--run-dir /tmp/scrh-first-pass]``. About 5 s an epoch of `standard` on one core, plus stage 1 and the shc-ls
centers once.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import Any

import numpy as np

from shc.codebook import reassignment_pressure
from shc.losses.crh import CRHLoss
from shc.pipeline import run
from shc.presets import get_preset
from shc.reachability import center_hit_rate
from shc.stages import Hashing


class _Stop(Exception):
    """Raised by the traced reassignment once the passes asked for are recorded."""


def _pass_row(loss: CRHLoss, codes: np.ndarray, epoch: int, before: np.ndarray, after: np.ndarray) -> dict[str, Any]:
    binary = np.where(np.asarray(codes, dtype=np.float64) >= 0, 1.0, -1.0)
    labels = loss.labels.cpu().numpy()
    codebooks = loss.codebooks.cpu().numpy()
    similarity = getattr(loss, "similarity", None)
    pressure = reassignment_pressure(binary, labels, loss.num_classes, codebooks, before,
                                     None if similarity is None else similarity.cpu().numpy(),
                                     getattr(loss, "semantic_weight", 0.0))
    moved = after != before
    prefer = pressure["prefers_other"]
    heads = np.arange(codebooks.shape[0])[:, None]
    centers = codebooks[heads, before].transpose(1, 0, 2).reshape(loss.num_classes, -1)
    return {"epoch": epoch, "pairs": moved.size, "moved": int(moved.sum()), "prefer": int(prefer.sum()),
            "cascade": int((moved & ~prefer).sum()), "one_bit": int((prefer & (pressure["hamming"] == 1)).sum()),
            "majority": int(pressure["majority_held"].sum()),
            "data_gap": float(np.median(pressure["data_gap"][prefer])) if prefer.any() else float("nan"),
            "semantic_gap": float(np.median(pressure["semantic_gap"][prefer])) if prefer.any() else float("nan"),
            "hit": center_hit_rate(binary, labels, centers),
            "cube": codebooks.shape[1] / 2 ** codebooks.shape[2]}


def probe(config, passes: int) -> list[dict[str, Any]]:
    """Train ``config`` (an SCRH or CRH run) until ``passes`` reassignments are recorded; one row per pass."""
    rows: list[dict[str, Any]] = []
    original = CRHLoss.reassign

    def traced(self, codes, epoch):
        before = self.assignment.cpu().numpy().copy()
        entry = original(self, codes, epoch)
        if len(rows) < passes:  # SCRH's own reassign calls this one through super(): record once per pass
            rows.append(_pass_row(self, codes, epoch, before, self.assignment.cpu().numpy()))
            if len(rows) == passes:
                raise _Stop
        return entry

    if Hashing(config).intact():  # a grid's finished cell (--run-dir runs/standard): never deleted by a probe
        raise SystemExit(f"{Hashing(config).directory} holds a finished run; a probe trains from epoch 0 and would "
                         "delete it. Give --run-dir a scratch folder (the default is one).")
    shutil.rmtree(Hashing(config).directory, ignore_errors=True)  # a probe starts from epoch 0, never a resume
    CRHLoss.reassign = traced
    try:
        run(config)
    except _Stop:
        pass
    finally:
        CRHLoss.reassign = original
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=["{}"], help="JSON objects of SCRH method options")
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--bits", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--method", default="scrh", choices=("scrh", "crh"))
    parser.add_argument("--run-dir", default="/tmp/scrh-first-pass",
                        help="a scratch folder: each probe leaves an unfinished stage-3 run there")
    args = parser.parse_args(argv)
    preset = get_preset(args.preset)
    print(f"{args.method.upper()}'s first reassignments on preset {args.preset!r}, {args.bits} bits, seed {args.seed} "
          "(pairs: heads x classes)")
    print(f"{'variant':<26} {'epoch':>5} {'moved':>7} {'prefer':>6} {'cascade':>7} {'1-bit':>5} {'majority':>8} "
          f"{'data gap':>8} {'sem gap':>8} {'hit':>6} {'cube':>5}")
    for text in args.variants:
        variant = json.loads(text)
        if not isinstance(variant, dict):
            raise SystemExit(f"a variant is a JSON object of method options, e.g. '{{\"reassign_from\": 10}}'; "
                             f"got {variant!r}.")
        config, = preset.configs(methods=[args.method], bits=[args.bits], seeds=[args.seed], run_dir=args.run_dir)
        config = config.replace(method_options={**dict(config.method_options), **variant})
        for row in probe(config, args.passes):
            moved = f"{row['moved']}/{row['pairs']}"
            print(f"{json.dumps(variant):<26} {row['epoch']:>5} {moved:>7} {row['prefer']:>6} {row['cascade']:>7} "
                  f"{row['one_bit']:>5} {row['majority']:>8} {row['data_gap']:>8.3f} {row['semantic_gap']:>8.4f} "
                  f"{row['hit']:>6.3f} {row['cube']:>5.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
