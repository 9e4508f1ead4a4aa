"""Which learning rate does a method need? Validation mAP and training hit rate per method and learning rate.

For each method (16 bits, seed 0 unless told otherwise) it trains one hashing run per learning rate of
``--lrs``, each at the method's own budget in the preset at the code length (``Preset.own_fields``: its epochs,
its other fields), everything else equal (stages 1 and 2 are shared and cached), and prints per learning rate the
**validation** split's tie-aware mAP@ALL at the selected epoch (``val_tie_aware_mAP@ALL`` of ``metrics.json``)
and the training center hit rate (did the network reach its targets: :mod:`shc.reachability`), then the
learning rate with the highest validation mAP. Like the doubling rule (``standard_convergence.py``), the choice
reads the validation split only (issue 35): no hyper-parameter is chosen on the query set, and the table shows no
query number.

Why: at the presets' shared learning rate (3e-3, RMSprop) the pairwise and triplet losses DPSH, HashNet, DTSH
and IDHN do not fit their training images on ``composite_cnn_mlp`` (training hit rate 0.04-0.30; docs/standard.md),
and doubling their epochs does not change that, so a ranking against them says nothing about their methods. A
learning rate per method, chosen here, is the step the doubling rule cannot take.

Runs are cached under ``--run-dir`` (the learning rate is part of stage 3's identity, so the runs sit side by side;
``--run-dir runs/standard`` makes the preset's own learning rate the grid's cell): a rerun prints the table at once,
an interrupted one resumes.

Run: ``python benchmarks/lr_on_validation.py --preset standard --methods dpsh hashnet dtsh idhn --lrs 3e-3 1e-3
3e-4 1e-4 --run-dir runs/standard --jobs 2``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from standard_convergence import (  # noqa: E402
    RULE_METRIC, _parse_set, _rule_metrics, add_run_arguments, base_config)

from shc.pipeline import RunConfig, run_grid  # noqa: E402
from shc.presets import PRESETS  # noqa: E402

HIT_RATE = 0.9
"""The training center hit rate at which a network counts as having reached its targets (issue 35)."""


def method_budget(preset_name: str, method: str, bits: int | None = None) -> dict[str, Any]:
    """The preset's own fields of ``method`` at ``bits`` (its epochs among them; ``Preset.own_fields``), but its
    learning rate: that is tested."""
    if preset_name not in PRESETS:
        return {}
    return {key: value for key, value in PRESETS.get(preset_name).own_fields(method, bits).items() if key != "lr"}


def lr_configs(base: RunConfig, methods: list[str], lrs: list[float], bits: int, seed: int,
               preset_name: str = "standard") -> dict[tuple[str, float], RunConfig]:
    """The run of each method at each learning rate, at the method's own budget in the preset."""
    if not methods or not lrs or any(lr <= 0 for lr in lrs):
        raise ValueError(f"give at least one method and positive learning rates; got methods {methods}, lrs {lrs}")
    return {(method, lr): base.replace(method=method, bits=bits, seed=seed, **method_budget(preset_name, method, bits),
                                       lr=lr)
            for method in methods for lr in lrs}


def choose_lr(scores: dict[float, tuple[float, float]]) -> tuple[float, bool]:
    """The learning rate with the highest validation mAP (``scores``: lr -> (validation mAP, training hit rate)),
    the larger one on a tie, and whether its network reached its targets (hit rate >= :data:`HIT_RATE`)."""
    best = max(scores, key=lambda lr: (scores[lr][0], lr))
    return best, scores[best][1] >= HIT_RATE


def lr_rows(configs: dict[tuple[str, float], RunConfig], methods: list[str],
            lrs: list[float]) -> list[dict[str, Any]]:
    """One row per method: validation mAP and training hit rate at each learning rate, and the choice."""
    rows = []
    for method in methods:
        metrics = {lr: _rule_metrics(configs[method, lr]) for lr in lrs}
        scores = {lr: (m[RULE_METRIC], m.get("train_center_hit_rate", float("nan"))) for lr, m in metrics.items()}
        best, reached = choose_lr(scores)
        row: dict[str, Any] = {"method": method, "epochs": configs[method, lrs[0]].epochs}
        for lr in lrs:
            row[f"lr {lr:g}: val, hit"] = f"{scores[lr][0]:.3f}, {scores[lr][1]:.3f}"
        row.update({"best lr (val)": f"{best:g}", f"hit >= {HIT_RATE}": "yes" if reached else "no",
                    "selected epoch": f"{metrics[best]['selected_epoch']}"})
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", nargs="+", default=["dpsh", "hashnet", "dtsh", "idhn"])
    parser.add_argument("--lrs", nargs="+", type=float, default=[3e-3, 1e-3, 3e-4, 1e-4])
    add_run_arguments(parser, "lr")
    args = parser.parse_args(argv)
    from run import print_table

    started = time.perf_counter()
    base, source = base_config({**_parse_set(args.set), "run_dir": args.run_dir or f"runs/{args.preset}-lr"},
                               args.preset)
    configs = lr_configs(base, args.methods, args.lrs, args.bits, args.seed, args.preset)
    run_grid(list(configs.values()), progress=True, log=lambda line: print(line, file=sys.stderr, flush=True),
             jobs=args.jobs)
    fields = {key: value for key, value in vars(base).items() if key not in ("method", "bits", "seed", "run_dir", "lr")}
    print(f"configuration ({source}; each method at its own epochs there): {json.dumps(fields, default=str)}")
    print_table(f"learning rate on validation at {args.bits} bits, seed {args.seed} (val: validation tie-aware "
                f"mAP@ALL at the selected epoch; hit: training center hit rate); "
                f"{time.perf_counter() - started:.0f} s wall", lr_rows(configs, args.methods, args.lrs))
    return 0


if __name__ == "__main__":  # SIGTERM and Ctrl-C stop the grid's workers too; errors as one line
    from shc.cli_common import run_cli

    raise SystemExit(run_cli(main))
