"""Probes of SCRH's variants (issue 37): does keeping more of the semantic start pay?

For each variant (a JSON object of SCRH method options, e.g. ``{"semantic_weight": 4}`` or ``{"reassign_from": 10}``;
``{}`` is SCRH itself) and seed, it runs ``shc.pipeline`` for ``scrh`` on the preset at 16 bits (cached: a finished
run is read, not retrained; the runs sit beside the grid's under ``--run-dir``) and prints, beside CRH and shc-ls of
the same seed when their runs exist:

- the validation tie-aware mAP@ALL at the selected epoch (what the budget and any choice between variants read) and
  the query one (reported, never used to choose);
- the training center hit rate (did the network reach its targets);
- the SHC fit of the targets to S, ``mean_{c != c'} (S_cc' - <h_c, h_c'> / q)^2`` (lower is more semantic): of the
  start, after the first reassignment (with its epoch and how many of the classes' sub-codes it moved) and at the end.

One seed is a probe, not a comparison: a variant is worth a 3-seed grid only where its validation score or its fit
moves by more than CRH's seed spread. Run: ``python benchmarks/scrh_variants.py --variants '{}' '{"semantic_weight":
4}' '{"reassign_from": 10}' --seeds 0 --run-dir runs/standard [--jobs 2]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from target_fit import fit  # noqa: E402  (the same fit as benchmarks/target_fit.py)

from shc.pipeline import run_grid  # noqa: E402
from shc.presets import get_preset  # noqa: E402
from shc.stages import Hashing, Similarity  # noqa: E402


def _row(name: str, config) -> str:
    stage = Hashing(config)
    if stage.cached() is None:
        return f"{name:<28} {config.seed:>4}  (not run)"
    metrics = json.loads((stage.directory / "metrics.json").read_text())
    S = Similarity(config.replace(method="shc", similarity="logits")).load()
    targets = stage.codes().get("target_codes")
    log_path = stage.directory / "reassignments.json"
    log = json.loads(log_path.read_text()) if log_path.exists() else {}
    first = (log.get("log") or [{}])[0]
    start = log.get("start_semantic_fit")
    first_text = (f"{first['semantic_fit']:.4f} (epoch {first['epoch']}, {first['reassigned']} moved)"
                  if "semantic_fit" in first else "-")
    return (f"{name:<28} {config.seed:>4} {metrics['val_tie_aware_mAP@ALL']:>8.4f} {metrics['tie_aware_mAP@ALL']:>8.4f} "
            f"{metrics['train_center_hit_rate']:>6.3f} {'-' if start is None else f'{start:.4f}':>7} {first_text:>28} "
            f"{'-' if targets is None else f'{fit(S, targets):.4f}':>7}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", default=["{}"], help="JSON objects of SCRH method options")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--preset", default="standard")
    parser.add_argument("--bits", type=int, default=16)
    parser.add_argument("--run-dir", default=None, help="default runs/<preset>")
    parser.add_argument("--jobs", default="1")
    args = parser.parse_args(argv)
    preset = get_preset(args.preset)
    run_dir = args.run_dir or f"runs/{args.preset}"
    variants = [json.loads(text) for text in args.variants]
    for variant in variants:
        if not isinstance(variant, dict):
            raise SystemExit(f"a variant is a JSON object of SCRH method options, e.g. '{{\"reassign_from\": 10}}'; "
                             f"got {variant!r}.")
    configs = [config.replace(method_options={**dict(config.method_options), **variant})
               for variant in variants
               for config in preset.configs(methods=["scrh"], bits=[args.bits], seeds=args.seeds, run_dir=run_dir)]
    run_grid(configs, progress=False, jobs=int(args.jobs) if args.jobs.isdigit() else args.jobs)
    print(f"SCRH variants on preset {args.preset!r}, {args.bits} bits (val/query: tie-aware mAP@ALL; hit: training "
          "center hit rate; fit: mean over c != c' of (S - H H^T / q)^2 of the start, after the first reassignment, "
          "at the end)")
    print(f"{'run':<28} {'seed':>4} {'val':>8} {'query':>8} {'hit':>6} {'start':>7} {'first reassignment':>28} "
          f"{'end':>7}")
    for seed in args.seeds:
        for method in ("crh", "shc-ls"):
            reference = preset.configs(methods=[method], bits=[args.bits], seeds=[seed], run_dir=run_dir)
            if reference:
                print(_row(method, reference[0]))
        for variant, config in zip([v for v in variants for _ in args.seeds], configs):
            if config.seed == seed:
                print(_row(f"scrh {json.dumps(variant)}" if variant else "scrh", config))
    return 0


if __name__ == "__main__":  # SIGTERM and Ctrl-C stop the grid's workers too; errors as one line
    from shc.cli_common import run_cli

    raise SystemExit(run_cli(main))
