"""Has the ``standard`` configuration converged? mAP at E epochs against 2E epochs, per center method.

For each method (16 bits, seed 0 unless told otherwise) it runs ``shc.pipeline.run`` twice, with
``epochs=E`` and ``epochs=2E`` (everything else equal: the stage-1 classifier and the centers are shared
and cached), and prints mAP@100 / mAP@1000 / mAP@ALL at both budgets, ``|mAP@ALL(2E) - mAP@ALL(E)|``,
whether that is at most the tolerance (0.02, issue 9), the selected (best validation) epoch and the
seconds of each hashing run (training plus the validation evaluations, as recorded in ``metrics.json``).
Runs are cached under ``--run-dir`` (``epochs<E>/`` and ``epochs<2E>/``, sharing stages 1 and 2): a
rerun prints the table at once, an interrupted one resumes.

The configuration is ``shc.pipeline.preset("standard")`` when the pipeline has that preset, else
:data:`STANDARD` below (the one docs/standard.md proposes); ``--set FIELD=JSON`` overrides any
:class:`shc.pipeline.RunConfig` field, e.g. ``--set lr=0.002 --set 'dataset_options={"train_per_class": 100}'``.

Run: ``python benchmarks/standard_convergence.py [--epochs E] [--methods random csq mds shc] [--run-dir DIR] [--jobs 2]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from shc.methods import available_methods
from shc.pipeline import RunConfig, preset, run_centers, run_grid, run_similarity, stage_directories
from shc.results import load_metrics
from shc.runs import method_spec
from shc.presets import PRESETS

STANDARD: dict[str, Any] = {
    "dataset": "fashion-composite",
    "dataset_options": {"train_per_class": 50, "val_per_class": 10, "query_per_class": 10,
                        "database_per_class": 50, "image_size": 14},
    "backbone": "composite_cnn",
    "epochs": 48,
    "lr": 3e-3,
    "classifier_epochs": 8,
    "classifier_lr": 1e-3,
    "batch_size": 64,
    "optimizer": "rmsprop",
    "eval_every": 3,
}
"""The proposed ``standard`` preset's RunConfig fields (method, bits, seed and run_dir vary)."""
TOLERANCE = 0.02
MAP_KEYS = ("mAP@100", "mAP@1000", "mAP@ALL")


def base_config(overrides: dict[str, Any]) -> tuple[RunConfig, str]:
    """The standard configuration (the pipeline's preset if it has one) with ``overrides``."""
    if "standard" in PRESETS:
        config = preset("standard", methods=["shc"], bits=[16], seeds=[0])[0].replace(**overrides)
        return config, "shc.pipeline.preset('standard')"
    return RunConfig(**{**STANDARD, **overrides}), "benchmarks/standard_convergence.py STANDARD"


def _parse_set(items: list[str]) -> dict[str, Any]:
    overrides = {}
    for item in items:
        field, separator, value = item.partition("=")
        if not separator:
            raise SystemExit(f"--set expects FIELD=JSON, got {item!r}")
        try:
            overrides[field] = json.loads(value)
        except json.JSONDecodeError:
            overrides[field] = value  # a bare string, e.g. --set backbone=small_cnn
    return overrides


def _share_stages(done: RunConfig, todo: RunConfig) -> None:
    """Copy the finished stage-1 and stage-2 folders of ``done`` to ``todo`` (same classifier, same centers).

    The two budgets live in two run directories (``epochs<E>/``, ``epochs<2E>/``); the pipeline checks
    each copied folder's config.json against its identity before using it.
    """
    source, target = stage_directories(done), stage_directories(todo)
    for stage in ("stage1", "stage2"):
        if source[stage].exists() and not target[stage].exists():
            shutil.copytree(source[stage], target[stage])


def convergence_rows(base: RunConfig, methods: list[str], epochs: int, bits: int, seed: int,
                     tolerance: float = TOLERANCE, jobs: int = 1) -> list[dict[str, Any]]:
    """One row per method: mAPs at ``epochs`` and ``2 * epochs``, the change of mAP@ALL, converged or not.

    Stages 1 and 2 are computed once (under ``epochs<E>/``) and copied for ``2E``; the ``2 x len(methods)``
    hashing runs then go through :func:`shc.pipeline.run_grid` (``jobs`` at once).
    """
    def config_of(method: str, budget: int) -> RunConfig:
        return base.replace(method=method, bits=bits, seed=seed, epochs=budget,
                            run_dir=str(Path(base.run_dir) / f"epochs{budget}"))

    for method in methods:
        short = config_of(method, epochs)
        if method_spec(short).needs_similarity:
            run_similarity(short)
        run_centers(short)
        _share_stages(short, config_of(method, 2 * epochs))
    configs = [config_of(method, budget) for method in methods for budget in (epochs, 2 * epochs)]
    run_grid(configs, progress=True, log=lambda line: print(line, file=sys.stderr, flush=True), jobs=jobs)
    rows = []
    for method in methods:
        short, long = (load_metrics(config_of(method, budget)) for budget in (epochs, 2 * epochs))
        change = abs(long["mAP@ALL"] - short["mAP@ALL"])
        row: dict[str, Any] = {"method": method}
        for budget, metrics in ((epochs, short), (2 * epochs, long)):
            row.update({f"{key} @{budget}": f"{metrics[key]:.3f}" for key in MAP_KEYS})
        row.update({
            "|ΔmAP@ALL|": f"{change:.3f}",
            "converged": "yes" if change <= tolerance else "no",
            "selected epochs": f"{short['selected_epoch']}/{epochs}, {long['selected_epoch']}/{2 * epochs}",
            "train s": f"{short['train_seconds']:.0f}, {long['train_seconds']:.0f}",
        })
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, help="E (default: the configuration's epochs)")
    parser.add_argument("--methods", nargs="+",
                        default=[m for m in ("random", "csq", "mds", "shc", "shc-ls") if m in available_methods()])
    parser.add_argument("--bits", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--run-dir", default="runs/standard-convergence")
    parser.add_argument("--jobs", type=int, default=1, help="hashing runs trained at once (shc.pipeline --jobs)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=JSON",
                        help="override a RunConfig field (repeatable)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    base, source = base_config({**_parse_set(args.set), "run_dir": args.run_dir})
    epochs = args.epochs or base.epochs
    started = time.perf_counter()
    rows = convergence_rows(base, args.methods, epochs, args.bits, args.seed, jobs=args.jobs)
    stage1 = stage_directories(base.replace(method="shc", bits=args.bits, seed=args.seed, epochs=epochs, run_dir=str(
        Path(base.run_dir) / f"epochs{epochs}")))["stage1"] / "metrics.json"
    accuracy = json.loads(stage1.read_text()).get("test_accuracy") if stage1.exists() else None
    fields = {key: value for key, value in vars(base.replace(epochs=epochs)).items()
              if key not in ("method", "bits", "seed", "run_dir")}
    print(f"configuration ({source}): {json.dumps(fields, default=str)}")
    if accuracy is not None:
        print(f"stage-1 classifier accuracy on the query split: {accuracy:.3f}")
    print_table(f"convergence at {args.bits} bits, seed {args.seed}: E={epochs} vs 2E={2 * epochs} epochs "
                f"(converged: |ΔmAP@ALL| <= {TOLERANCE}); {time.perf_counter() - started:.0f} s wall", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
