"""Can the network reach its targets? Reachability of a preset's runs on two backbones (issue 35).

For each backbone and method (16 bits, seed 0 unless told otherwise) it runs (or reads, cached under
``--run-dir``) the preset's run with that backbone and prints, from ``metrics.json``: the training and query
center hit rates and bit errors against the method's own targets (:mod:`shc.reachability`), the validation
tie-aware mAP@ALL at the selected epoch (what model selection and the doubling rule read) and, on a composite
dataset, how many bits per class of the method's targets the best **additive** code found gets wrong
(:func:`shc.reachability.additive_fit`: the ceiling of ``composite_cnn``, whose hash layer is linear in separately
pooled item positions), and the query tie-aware mAP@ALL beside them (reported only: nothing here is chosen on
the query set).

Run: ``python benchmarks/reachability.py --preset standard --backbones composite_cnn composite_cnn_mlp
--methods random csq mds shc shc-ls greedyhash [--bits 16] [--seed 0] [--run-dir runs/reachability] [--jobs auto]``;
``--centers-only`` trains no hashing network and prints the additive check of the center methods alone (the S of
SHC and shc-ls from the first backbone's stage-1 classifier). ``--by-distance`` trains nothing either: it reads the
preset's finished runs (its own backbone, ``--seeds``) and prints *which* classes each network missed, grouped by
how far each class's target lies from the nearest other target (:func:`shc.reachability.class_hit_rates`,
:func:`shc.reachability.nearest_target_distance`): are the misses where the targets crowd?
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from shc.pipeline import run_grid, stage_directories
from shc.presets import get_preset
from shc.reachability import additive_fit, center_hit_rate, class_hit_rates, nearest_target_distance
from shc.results import load_metrics
from shc.runs import RunConfig, load_data


def _class_items(config: RunConfig) -> np.ndarray | None:
    """(C, k) items of each class of a composite dataset (from its class names), None for other datasets."""
    data = load_data(config)
    if " + " not in data.class_names[0]:
        return None
    names = data.coarse_names
    return np.array([[names.index(part) for part in name.split(" + ")] for name in data.class_names])


def _targets(config: RunConfig) -> np.ndarray | None:
    folder = stage_directories(config)["stage3"]
    with np.load(folder / "codes.npz") as codes:
        return codes["target_codes"] if "target_codes" in codes.files else None


def reachability_rows(configs: list[RunConfig]) -> list[dict[str, Any]]:
    rows = []
    for config in configs:
        metrics = load_metrics(config)
        if "train_center_hit_rate" not in metrics:
            raise SystemExit(f"{stage_directories(config)['stage3']} records no reachability (trained before issue 35); "
                             "delete that folder and rerun this command.")
        items, targets = _class_items(config), _targets(config)
        additive = ("-" if items is None or targets is None else
                    f"{np.mean(np.sum(additive_fit(targets, items) != targets, axis=1)):.2f}")
        rows.append({
            "backbone": config.backbone, "method": config.method, "targets": metrics["reach_targets"],
            "train hit": f"{metrics['train_center_hit_rate']:.3f}",
            "train bit err": f"{metrics['train_center_bit_error']:.3f}",
            "train majority err": f"{metrics['train_majority_bit_error']:.3f}",
            "query hit": f"{metrics['query_center_hit_rate']:.3f}",
            "query bit err": f"{metrics['query_center_bit_error']:.3f}",
            "val ta mAP@ALL": f"{metrics['val_tie_aware_mAP@ALL']:.3f}",
            "query ta mAP@ALL": f"{metrics['tie_aware_mAP@ALL']:.3f}",
            "additive fit: bits wrong": additive,
            "selected": f"{metrics['selected_epoch']}/{config.epochs}",
        })
    return rows


def additive_rows(configs: list[RunConfig]) -> list[dict[str, Any]]:
    """Per center method (stage 2 only, computed or read from the cache): how many of its bits an additive network
    can produce for every class at once: no hashing network is trained."""
    from shc.pipeline import run_centers
    from shc.runs import method_spec

    rows = []
    for config in configs:
        if method_spec(config).centers is None:
            continue
        items = _class_items(config)
        if items is None:
            raise SystemExit(f"{config.dataset} is not a composite dataset: every bit of its classes is 'additive' in "
                             "one item, so the check says nothing there.")
        centers = run_centers(config)
        fitted = additive_fit(centers, items)
        rows.append({"method": config.method, "classes": len(centers), "positions": items.shape[1],
                     "exactly additive bits": f"{int(np.all(fitted == centers, axis=0).sum())}/{config.bits}",
                     "bits wrong per class (additive fit)": f"{np.mean(np.sum(fitted != centers, axis=1)):.2f}",
                     "center hit rate of the additive codes": f"{center_hit_rate(fitted, np.arange(len(centers)), centers):.3f}"})
    return rows


def distance_rows(configs: list[RunConfig]) -> list[dict[str, Any]]:
    """Per finished run and per nearest-target distance: its classes' training center hit rates (the run's
    ``codes.npz``: training codes and the targets it trained towards); a last row per run covers every class."""
    rows = []
    for config in configs:
        path = stage_directories(config)["stage3"] / "codes.npz"
        if not path.exists():
            raise SystemExit(f"{path} does not exist: train the run first (python -m shc.pipeline --preset ... "
                             f"--methods {config.method} --bits {config.bits} --seeds {config.seed} --run-dir ...).")
        with np.load(path) as codes:
            if "target_codes" not in codes.files:
                raise SystemExit(f"{path} holds no targets (a run from before issue 35); delete its folder and rerun.")
            targets, train, labels = codes["target_codes"], codes["train_codes"], codes["train_labels"]
        rates, nearest = class_hit_rates(train, labels, targets), nearest_target_distance(targets)
        ones = np.sum(targets > 0, axis=1)
        groups = [(f"{d}", nearest == d) for d in np.unique(nearest)] + [("all", np.ones_like(nearest, bool))]
        for name, chosen in groups:
            lowest = np.flatnonzero(chosen)[np.argmin(rates[chosen])]
            rows.append({"method": config.method, "seed": config.seed, "nearest target at": name,
                         "classes": int(chosen.sum()), "mean class hit": f"{np.mean(rates[chosen]):.3f}",
                         "lowest class hit (+1 bits of its target)":
                             f"{rates[lowest]:.3f} ({ones[lowest]}/{config.bits})"})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--backbones", nargs="+", default=["composite_cnn", "composite_cnn_mlp"])
    parser.add_argument("--methods", nargs="+", default=["random", "csq", "mds", "shc", "shc-ls", "greedyhash"])
    parser.add_argument("--bits", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, nargs="+", help="--by-distance only: the seeds to read (default --seed)")
    parser.add_argument("--run-dir", default="runs/reachability")
    parser.add_argument("--jobs", default="auto")
    parser.add_argument("--centers-only", action="store_true",
                        help="train nothing: only the additive-bits check of each center method's centers")
    parser.add_argument("--by-distance", action="store_true",
                        help="train nothing: each finished run's class hit rates by the distance to the nearest target")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    preset = get_preset(args.preset)
    if args.by_distance:
        configs = preset.configs(methods=args.methods, bits=[args.bits], seeds=args.seeds or [args.seed],
                                 run_dir=args.run_dir)
        print_table(f"training center hit rate per class at {args.bits} bits (preset {args.preset!r}, its own backbone), "
                    "by the Hamming distance from each class's target to the nearest other target; mean class hit: "
                    "the mean over those classes", distance_rows(configs))
        return 0
    configs = [config for backbone in args.backbones
               for config in preset.configs(methods=args.methods, bits=[args.bits], seeds=[args.seed],
                                            run_dir=args.run_dir, backbone=backbone)]
    started = time.perf_counter()
    if args.centers_only:
        print_table(f"additive codes for the centers at {args.bits} bits, seed {args.seed} (preset {args.preset!r}; S of "
                    f"shc and shc-ls from the {args.backbones[0]} classifier): the "
                    "codes sign(g_1(item 1) + ... + g_k(item k) + b) fitted bit by bit (hinge LP, shc.reachability."
                    "additive_fit): what a composite_cnn could give at best, with perfect item recognition, as far as the fit finds",
                    additive_rows(configs[: len(args.methods)]))
        return 0
    run_grid(configs, progress=True, log=lambda line: print(line, file=sys.stderr, flush=True), jobs=args.jobs)
    fields = {key: value for key, value in vars(configs[0]).items()
              if key not in ("method", "bits", "seed", "run_dir", "backbone", "epochs")}
    print(f"configuration (preset {args.preset!r}, each method's own epochs): {json.dumps(fields, default=str)}")
    print_table(f"reachability at {args.bits} bits, seed {args.seed} (hit: center hit rate; bit err: center bit error; "
                "additive fit: bits per class that the best additive code found gets wrong); "
                f"{time.perf_counter() - started:.0f} s wall", reachability_rows(configs))
    return 0


if __name__ == "__main__":  # SIGTERM and Ctrl-C stop the grid's workers too; errors as one line
    from shc.cli_common import run_cli

    raise SystemExit(run_cli(main))
