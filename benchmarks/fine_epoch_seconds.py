"""Seconds per epoch of a preset's hashing run on one thread, for budgeting its grid (issue 20).

Runs ``shc.pipeline.run`` for each method at one code length with a few epochs, in a fresh run directory,
with torch and numba on one thread (what each of the ``--jobs 2`` workers gets on the 2-core machine),
and prints per method: training seconds per epoch (``history.csv``), seconds per validation, the rest of
the hashing run's time per epoch (CRH's reassignment pass is there: ``fit``'s epoch hook), the process
CPU seconds, and stage 1's classifier accuracy (the paper's Table 2 regime is 48-74%).

``estimate`` extrapolates a grid: methods x bits x seeds runs, each of its own ``epochs`` (:func:`estimate_seconds`),
with a validation every ``eval_every`` epochs, two at a time. It ignores stages 1 and 2 (printed separately) and counts
every method and length at the measured cost (64 bits costs about what 16 bits does: the hash layer is
tiny next to the CNN).

Run: ``python benchmarks/fine_epoch_seconds.py [--preset standard-fine] [--methods csq crh] [--bits 64]
[--epochs 2]``. On a busy machine the wall seconds are inflated; the CPU seconds are the better guide.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="standard-fine")
    parser.add_argument("--methods", nargs="+", default=["shc", "crh"])
    parser.add_argument("--bits", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--run-dir", default=None, help="default: a temporary folder, deleted afterwards")
    args = parser.parse_args()

    import numba
    import torch

    torch.set_num_threads(1)
    numba.set_num_threads(1)
    from shc.pipeline import preset, run, run_centers, run_similarity, stage_directories
    from shc.runs import load_data, method_spec

    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run_dir or scratch
        grid = preset(args.preset)
        for method in args.methods:
            config = preset(args.preset, methods=[method], bits=[args.bits], seeds=[0])[0]
            config = config.replace(epochs=args.epochs, eval_every=1, run_dir=run_dir)
            started = time.perf_counter()
            load_data(config)
            data_seconds = time.perf_counter() - started
            started = time.perf_counter()
            if method_spec(config).needs_similarity:
                run_similarity(config)
            run_centers(config)
            stages12 = time.perf_counter() - started
            cpu = time.process_time()
            run(config)
            cpu = time.process_time() - cpu
            directories = stage_directories(config)
            with open(directories["stage3"] / "train" / "history.csv") as handle:
                rows = list(csv.DictReader(handle))
            train = [float(row["seconds"]) for row in rows]
            evals = [float(row["eval_seconds"]) for row in rows if row.get("eval_seconds")]
            metrics = json.loads((directories["stage3"] / "metrics.json").read_text())
            other = (metrics["train_seconds"] - sum(train) - sum(evals)) / len(rows)
            stage1 = directories["stage1"] / "metrics.json"
            accuracy = json.loads(stage1.read_text()).get("test_accuracy") if stage1.exists() else None
            print(f"{method} {args.bits} bits: train {sum(train) / len(train):.1f} s/epoch (epochs {train}), "
                  f"validation {sum(evals) / max(len(evals), 1):.1f} s, other {other:.1f} s/epoch, "
                  f"stage-3 CPU {cpu:.0f} s; data {data_seconds:.1f} s, stages 1-2 {stages12:.1f} s"
                  + (f", stage-1 test accuracy {accuracy:.3f}" if accuracy is not None else ""), flush=True)
            schedule = getattr(_criterion(config), "reassigns_after", lambda epoch: True)
            seconds, epochs = estimate_seconds(grid, sum(train) / len(train), max(other, 0.0),
                                               sum(evals) / max(len(evals), 1), schedule)
            print(f"  estimate: {len(grid)} runs, {epochs} epochs in all (each run's own budget), "
                  f"{seconds:.0f} s / 2 workers = {seconds / 2 / 60:.0f} min (every run at this method's cost per "
                  "epoch)", flush=True)


def estimate_seconds(grid, epoch_seconds: float, hook_seconds: float, eval_seconds: float,
                     schedule) -> tuple[float, int]:
    """The grid's training seconds if every run cost, per epoch, what the measured method did: each run at its own
    budget (``config.epochs``: LTH's 480 beside 120 on standard-fine), its epoch hook on the epochs ``schedule``
    says (CRH's reassignment: 20 + (E - 20) / 5), a validation every ``eval_every`` epochs and the last. Returns the
    seconds and the epochs in all. Until 2026-12-02 every run was counted at the first config's epochs."""
    seconds, epochs = 0.0, 0
    for config in grid:
        hooks = sum(map(schedule, range(1, config.epochs + 1)))
        seconds += (config.epochs * epoch_seconds + hooks * hook_seconds
                    + -(-config.epochs // config.eval_every) * eval_seconds)
        epochs += config.epochs
    return seconds, epochs


def _criterion(config):
    """The run's loss (for its epoch-hook schedule), with the stage-1 S and the centers where the method reads them
    (SCRH's reassignment is a hook too; it was left out, so every epoch was charged one)."""
    import numpy as np

    from shc.methods import build_criterion
    from shc.runs import load_data, method_spec
    from shc.stages import stage_directories

    data, spec = load_data(config), method_spec(config)
    extra = {}
    if spec.needs_similarity:
        folders = stage_directories(config)
        extra = {"centers": np.load(folders["stage2"] / "centers.npy"),
                 "similarity": np.load(folders["stage1"] / "similarity.npy")}
    return build_criterion(config.method, data.num_classes, config.bits, data.train.labels, seed=config.seed,
                           **extra, **dict(config.method_options))


if __name__ == "__main__":
    main()
