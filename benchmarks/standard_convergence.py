"""Has a preset's configuration converged? Validation mAP at E epochs against 2E epochs, per method.

For each method (16 bits, seed 0 unless told otherwise) it runs ``shc.pipeline.run`` twice, with
``epochs=E`` and ``epochs=2E`` (everything else equal: the stage-1 classifier and the centers are shared
and cached), and prints the **validation** split's tie-aware mAP@ALL at the selected epoch at both budgets
(``val_tie_aware_mAP@ALL`` of ``metrics.json``), their difference, whether that is at most the tolerance (0.02,
issue 9), the training center hit rate at both budgets (did the network reach its targets:
:mod:`shc.reachability`), the selected (best validation) epoch and the seconds of each hashing run. The rule
reads the validation split only (issue 35): no budget is chosen on the query set, and the table shows no
query number.
Runs are cached under ``--run-dir`` (both budgets side by side, sharing stages 1 and 2; ``--run-dir
runs/standard`` makes the E runs the grid's own cells): a rerun prints the table at once, an interrupted one
resumes.

The configuration is ``shc.pipeline.preset(NAME)`` (an unknown name is refused; :data:`STANDARD` below, the
testbed docs/standard.md first proposed, stays for ``benchmarks/profile_standard.py``); ``--set FIELD=JSON`` overrides any
:class:`shc.pipeline.RunConfig` field, e.g. ``--set lr=0.002 --set 'dataset_options={"train_per_class": 100}'``.

Run: ``python benchmarks/standard_convergence.py [--preset standard] [--epochs E] [--methods random csq mds shc]
[--run-dir DIR] [--jobs 2]``. The doubling rule is applied to the primary metric, the tie-aware mAP@ALL
on the validation split (``shc.evaluation``). A method with its own fields in the
preset at the code length (``Preset.own_fields``: ``method_config``, then ``bits_config``) is run with them, except
its epochs: E and 2E are what is tested. E defaults to the preset's epochs, not a method's own budget: to test a
method at its budget (``standard-fine``'s LTH: 480, 960 at 64 bits), pass ``--epochs``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from shc.methods import available_methods
from shc.pipeline import RunConfig, preset, run_grid, stage_directories
from shc.results import load_metrics
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
RULE_METRIC = "val_tie_aware_mAP@ALL"  # shc.evaluation.PRIMARY_METRIC on the validation split, at the selected epoch


def base_config(overrides: dict[str, Any], preset_name: str = "standard") -> tuple[RunConfig, str]:
    """The configuration of preset ``preset_name`` (the pipeline's, if it has one) with ``overrides``."""
    PRESETS.get(preset_name)  # an unknown name is refused with the known ones (a typo trained the old STANDARD)
    config = preset(preset_name, methods=["shc"], bits=[16], seeds=[0])[0].replace(**overrides)
    return config, f"shc.pipeline.preset({preset_name!r})"


def method_fields(preset_name: str, method: str, bits: int | None = None) -> dict[str, Any]:
    """The preset's own fields of ``method`` at ``bits`` (``Preset.own_fields``), without the epochs: E is tested."""
    if preset_name not in PRESETS:
        return {}
    return {key: value for key, value in PRESETS.get(preset_name).own_fields(method, bits).items()
            if key != "epochs"}


def _parse_set(items: list[str]) -> dict[str, Any]:
    """``--set FIELD=JSON`` items as RunConfig overrides (:func:`shc.presets.parse_set`, the pipeline's own)."""
    from shc.presets import parse_set

    try:
        return parse_set(items)
    except ValueError as error:
        raise SystemExit(str(error)) from None


def add_run_arguments(parser: argparse.ArgumentParser, run_dir_suffix: str) -> None:
    """The options every validation check of a preset takes (this script's and ``lr_on_validation.py``'s): code
    length, seed, preset, run folder (default ``runs/<preset>-<run_dir_suffix>``), jobs and RunConfig overrides."""
    parser.add_argument("--bits", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--preset", default="standard", help="the preset whose configuration is tested")
    parser.add_argument("--run-dir", default=None, help=f"default runs/<preset>-{run_dir_suffix}")
    parser.add_argument("--jobs", type=int, default=1, help="hashing runs trained at once (shc.pipeline --jobs)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=JSON",
                        help="override a RunConfig field (repeatable)")


def convergence_rows(base: RunConfig, methods: list[str], epochs: int, bits: int, seed: int,
                     tolerance: float = TOLERANCE, jobs: int = 1, preset_name: str = "standard") -> list[dict[str, Any]]:
    """One row per method: mAPs at ``epochs`` and ``2 * epochs``, the change of mAP@ALL, converged or not.

    Both budgets live in one run directory: the epochs are part of stage 3's identity, so the two runs sit side
    by side and share stages 1 and 2 (whose identities do not hold them). Pointed at a preset's own run
    directory (``--run-dir runs/standard``), the E runs are the grid's cells. The ``2 x len(methods)`` hashing
    runs go through :func:`shc.pipeline.run_grid` (``jobs`` at once).
    """
    def config_of(method: str, budget: int) -> RunConfig:
        return base.replace(method=method, bits=bits, seed=seed, epochs=budget,
                            **method_fields(preset_name, method, bits))

    configs = [config_of(method, budget) for method in methods for budget in (epochs, 2 * epochs)]
    run_grid(configs, progress=True, log=lambda line: print(line, file=sys.stderr, flush=True), jobs=jobs)
    rows = []
    for method in methods:
        short, long = (_rule_metrics(config_of(method, budget)) for budget in (epochs, 2 * epochs))
        change = abs(long[RULE_METRIC] - short[RULE_METRIC])
        row: dict[str, Any] = {"method": method}
        for budget, metrics in ((epochs, short), (2 * epochs, long)):
            row[f"val ta mAP@ALL @{budget}"] = f"{metrics[RULE_METRIC]:.3f}"
        row.update({
            "|Δ| val": f"{change:.3f}",
            "converged": "yes" if change <= tolerance else "no",
            "train hit": f"{short.get('train_center_hit_rate', float('nan')):.3f}, "
                         f"{long.get('train_center_hit_rate', float('nan')):.3f}",
            "selected epochs": f"{short['selected_epoch']}/{epochs}, {long['selected_epoch']}/{2 * epochs}",
            "train s": f"{short['train_seconds']:.0f}, {long['train_seconds']:.0f}",
        })
        rows.append(row)
    return rows


def _rule_metrics(config: RunConfig) -> dict[str, Any]:
    """A finished run's metrics, refused when they predate the validation record that the rule reads."""
    metrics = load_metrics(config)
    if RULE_METRIC not in metrics:
        raise SystemExit(f"{stage_directories(config)['stage3']} has no {RULE_METRIC} (trained before issue 35); "
                         "delete that folder and rerun this command to retrain it.")
    return metrics


def seed_mean_rows(base: RunConfig, methods: list[str], epochs: int, bits: int, seeds: list[int],
                   tolerance: float = TOLERANCE, preset_name: str = "standard") -> list[dict[str, Any]]:
    """One row per method over ``seeds``: the mean primary mAP at E and 2E and the paired change 2E - E with its
    95% Student-t interval (:func:`shc.stats.paired_interval`); converged when ``|mean change| <= tolerance``.

    The rule for a method whose single-seed value moves by more than the tolerance in *both* directions as the
    budget doubles (seed noise, not under-training): the same doubling rule, on the mean over the seeds.
    """
    from shc.stats import paired_interval, signed_interval

    rows = []
    for method in methods:
        values = {budget: [_rule_metrics(base.replace(method=method, bits=bits, seed=seed, epochs=budget,
                                                      **method_fields(preset_name, method, bits)))[RULE_METRIC]
                           for seed in seeds]
                  for budget in (epochs, 2 * epochs)}
        change = paired_interval(values[2 * epochs], values[epochs])
        rows.append({
            "method": method, "seeds": " ".join(map(str, seeds)),
            **{f"val ta mAP@ALL @{budget} per seed": " ".join(f"{v:.3f}" for v in vals) for budget, vals in values.items()},
            **{f"mean @{budget}": f"{np.mean(vals):.3f}" for budget, vals in values.items()},
            "mean Δ (2E - E) [95% CI]": signed_interval(change.mean, change.low, change.high),
            "converged": "yes" if abs(change.mean) <= tolerance else "no",
        })
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, help="E (default: the configuration's epochs)")
    parser.add_argument("--methods", nargs="+",
                        default=[m for m in ("random", "csq", "mds", "shc", "shc-ls") if m in available_methods()])
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="several seeds: each seed's table, then the mean change over the seeds with its paired "
                             "95%% interval (the doubling rule on the seed mean)")
    add_run_arguments(parser, "convergence")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    run_dir = args.run_dir or f"runs/{args.preset}-convergence"
    base, source = base_config({**_parse_set(args.set), "run_dir": run_dir}, args.preset)
    epochs = args.epochs or base.epochs
    seeds = args.seeds or [args.seed]
    for seed in seeds:
        _print_seed(base, source, args, epochs, seed, print_table)
    if len(seeds) > 1:
        print_table(f"convergence at {args.bits} bits over seeds {', '.join(map(str, seeds))}: E={epochs} vs "
                    f"2E={2 * epochs} epochs, the doubling rule on the seed mean (converged: |mean Δ| <= "
                    f"{TOLERANCE}, validation tie-aware mAP@ALL)",
                    seed_mean_rows(base, args.methods, epochs, args.bits, seeds, preset_name=args.preset))
    return 0


def _print_seed(base: RunConfig, source: str, args: argparse.Namespace, epochs: int, seed: int, print_table) -> None:
    started = time.perf_counter()
    rows = convergence_rows(base, args.methods, epochs, args.bits, seed, jobs=args.jobs, preset_name=args.preset)
    stage1 = stage_directories(base.replace(method="shc", bits=args.bits, seed=seed))["stage1"] / "metrics.json"
    accuracy = json.loads(stage1.read_text()).get("test_accuracy") if stage1.exists() else None
    fields = {key: value for key, value in vars(base.replace(epochs=epochs)).items()
              if key not in ("method", "bits", "seed", "run_dir")}
    print(f"configuration ({source}): {json.dumps(fields, default=str)}")
    if accuracy is not None:
        record = json.loads(stage1.read_text())  # with held-out classes, measured on the rest (and all recorded beside)
        seen = record.get("test_classes") == "seen" and record.get("test_accuracy_all_queries", accuracy) != accuracy
        print(f"stage-1 classifier accuracy on the query split{chr(39) + 's seen classes' if seen else ''}: "
              f"{accuracy:.3f}")
    print_table(f"convergence at {args.bits} bits, seed {seed}: E={epochs} vs 2E={2 * epochs} epochs "
                f"(converged: |Δ| of the validation tie-aware mAP@ALL <= {TOLERANCE}; train hit: training center "
                f"hit rate); "
                f"{time.perf_counter() - started:.0f} s wall", rows)


if __name__ == "__main__":  # SIGTERM and Ctrl-C stop the grid's workers too; errors as one line
    from shc.cli_common import run_cli

    raise SystemExit(run_cli(main))
