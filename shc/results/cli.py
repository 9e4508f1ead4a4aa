"""``python -m shc.results --preset NAME --markdown``: a preset's results tables and computed comparisons, from
its stored runs (nothing is trained): the argument parser and :func:`main`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from shc.evaluation import PAIRINGS, PRIMARY_METRIC, UNSEEN_KEYS
from shc.results.prose import (_metric_title, _print_comparisons, _print_headline, _print_paper_comparison,
                               _print_regimes, budget_phrase, budgets_by_bits, device_phrase, grid_phrase)
from shc.results.reading import REACH_KEYS, result_rows
from shc.results.tables import _print_table
from shc.runs import MAP_KEYS, TIE_AWARE_MAP_KEYS


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.results --preset NAME --markdown``: the README's results tables and sentences, from the runs."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


METRICS = (*TIE_AWARE_MAP_KEYS, *MAP_KEYS, *REACH_KEYS, *UNSEEN_KEYS)
"""The tables ``--metrics`` can print."""


def metric_argument(text: str) -> str:
    """``--metrics`` read: one of :data:`METRICS`, else an error with the closest names and every known one."""
    import argparse

    from shc.registry import did_you_mean

    if text in METRICS:
        return text
    raise argparse.ArgumentTypeError(f"unknown metric {text!r};{did_you_mean(text, list(METRICS))} Known metrics: "
                                     f"{', '.join(METRICS)}.")


def hashing_budgets(items: Sequence[str]) -> tuple[int | None, dict[str, int]]:
    """``--hashing-epochs`` read: ``E`` (every method's hashing budget) and ``METHOD=E`` items (that method's), e.g.
    ``["lth=960"]`` -> ``(None, {"lth": 960})``; a ValueError names a malformed item, a second ``E`` or a method
    named twice."""
    every, budgets = None, {}
    for item in items:
        name, _, value = item.rpartition("=")
        if not value.isdigit() or int(value) < 1 or (item.count("=") and not name):
            raise ValueError(f"--hashing-epochs {item!r} is neither E nor METHOD=E with E a positive integer; "
                             "write, e.g., --hashing-epochs 960 or --hashing-epochs lth=960.")
        if not name:
            if every is not None:
                raise ValueError(f"--hashing-epochs gives every method's budget twice ({every} and {value}); give one.")
            every = int(value)
        elif name in budgets:
            raise ValueError(f"--hashing-epochs gives {name}'s budget twice; give one.")
        else:
            budgets[name] = int(value)
    return every, budgets


def _with_budgets(configs: Sequence, budgets: dict[str, int]) -> list:
    """``configs`` with the hashing epochs of each method that ``budgets`` names (``--hashing-epochs METHOD=E``)."""
    return [config.replace(epochs=budgets[config.method]) if config.method in budgets else config
            for config in configs]


def _main(argv: Sequence[str] | None) -> int:
    import argparse
    import datetime

    from shc.cli_common import non_negative_int, positive_int
    from shc.presets import PRESETS, get_preset

    parser = argparse.ArgumentParser(prog="python -m shc.results",
                                     description="Print a preset's results tables and computed comparisons from its "
                                                 "stored runs (nothing is trained).")
    parser.add_argument("--preset", default="standard", choices=PRESETS.names())
    parser.add_argument("--methods", nargs="+", help="methods (default: the preset's grid)")
    parser.add_argument("--run-dir", default=None, help="artifact root (default: runs/<preset>)")
    parser.add_argument("--metrics", nargs="+", type=metric_argument, default=None, metavar="METRIC",
                        help="tables to print (default: mAP@ALL and mAP@100, tie-aware and with ties by index, and the "
                             "training center hit rate: did each network reach its own targets; under the unseen-class "
                             "protocol also seen@seen, unseen@unseen and unseen@all, tie-aware mAP@ALL and mAP@100)")
    parser.add_argument("--reference", default=None,
                        help="the method every other is compared with (default shc, when the grid has it)")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables (the README's format)")
    parser.add_argument("--headline", action="store_true",
                        help="print only the headline table (the README's): per code length SHC, shc-ls, CRH and the "
                             "best other method, each with its paired difference from SHC and the verdict")
    parser.add_argument("--paper", action="store_true",
                        help="also the paper's Table 4 differences (SHC minus the best baseline, CSQ and MDS, mAP@100) "
                             "beside ours from this preset's runs of SHC and the baselines that exist")
    parser.add_argument("--extended", action="store_true",
                        help="also the ablations (Table 7: distance only, semantic only; Table 8: text S) and the "
                             "baselines (Table 4) that python -m shc.reports computes for notebooks 05 and 06")
    parser.add_argument("--versus", metavar="PRESET", choices=PRESETS.names(),
                        help="also this preset's runs of the same methods, lengths and seeds side by side (e.g. "
                             "standard-pretrained against standard): the paired change of each method and both "
                             "rankings")
    parser.add_argument("--versus-run-dir", default=None, help="artifact root of --versus (default: runs/<PRESET>)")
    parser.add_argument("--versus-csv", nargs="+", metavar="PATH", default=None,
                        help="read the other side of --versus from results files (--write-csv) instead of run "
                             "folders; without --versus, this preset's grid from these files: the same grid trained "
                             "again (say on another machine) against this one, run by run and verdict by verdict")
    parser.add_argument("--write-csv", nargs="?", const="", default=None, metavar="PATH",
                        help="also write the grid's results file (every run's config and measures; default "
                             "results/<preset>.csv), from which --from-csv rebuilds the tables without the runs")
    parser.add_argument("--from-csv", nargs="+", metavar="PATH", default=None,
                        help="read the runs' numbers from a results file (--write-csv) instead of the run folders: the "
                             "tables and paired comparisons only; several files read as one (each cell: the one row "
                             "at its settings)")
    parser.add_argument("--bits", nargs="+", type=positive_int, metavar="Q", help="code lengths (default: the grid's)")
    parser.add_argument("--seeds", nargs="+", type=non_negative_int, metavar="SEED",
                        help="seeds (default: the grid's); seeds beyond it read a replication's runs (new stage 1s, "
                             "splits and networks: python -m shc.pipeline --seeds)")
    parser.add_argument("--hashing-epochs", nargs="+", metavar="E|METHOD=E",
                        help="read the runs whose hashing network trained E epochs, every method (stage 1 as in the "
                             "preset), e.g. those of `benchmarks/standard_convergence.py --epochs E`; METHOD=E reads "
                             "that method's runs at E and the others' at their budgets (e.g. lth=960 beside the grid); "
                             "both apply to both sides of --versus (default: the preset's budgets)")
    args = parser.parse_args(argv)
    preset = get_preset(args.preset)
    unseen = bool(dict(preset.config.get("dataset_options", {})).get("unseen_classes"))
    if args.metrics is None:
        args.metrics = ["tie_aware_mAP@ALL", "mAP@ALL", "tie_aware_mAP@100", "mAP@100", "train_center_hit_rate",
                        *([f"{pairing}_{key}" for pairing in PAIRINGS
                           for key in ("tie_aware_mAP@ALL", "tie_aware_mAP@100")] if unseen else [])]
    run_dir = args.run_dir or f"runs/{args.preset}"
    if not args.from_csv and Path(run_dir).is_file():
        raise ValueError(f"--run-dir {run_dir} is a file; give the folder the pipeline's runs are in (its --run-dir, "
                         f"runs/{args.preset} by default).")
    if not args.from_csv and any(Path(run_dir).glob("seed*/stage*")):  # a dataset's folder, one level too deep
        raise ValueError(f"--run-dir {run_dir} is one dataset's folder (it holds seed*/stage* folders); give the folder "
                         f"above it: --run-dir {Path(run_dir).parent}.")
    if not args.from_csv and not Path(run_dir).is_dir():
        raise FileNotFoundError(
            f"{run_dir} does not exist: no run of preset {args.preset!r} was computed here. Compute the grid: "
            f"`python -m shc.pipeline --preset {args.preset}"
            f"{f' --run-dir {args.run_dir}' if args.run_dir else ''}` (hours for an evidence preset: "
            "docs/presets.md), or "
            "read the committed results files without the runs: docs/results.md lists them with the `--from-csv` "
            "commands that print the README's tables.")
    # code lengths and seeds may go beyond the grid, as the pipeline's do (a missing run names its command)
    grid = {"bits": args.bits, "seeds": args.seeds, "run_dir": run_dir}
    every, budgets = hashing_budgets(args.hashing_epochs or ())
    if every is not None:  # the hashing budget only: the stage-1 classifier stays the preset's
        grid.update(epochs=every, classifier_epochs=preset.base().classifier_epochs)
    configs = preset.configs(methods=args.methods, **grid)
    order = list(dict.fromkeys(c.method for c in configs))
    unknown = sorted(set(budgets) - set(order))
    if unknown:
        from shc.methods import METHODS

        known = [name for name in unknown if name in METHODS.names()]
        raise ValueError(f"--hashing-epochs names {', '.join(unknown)}, not a method of this grid ({', '.join(order)}); "
                         + ("name one of them, or add it to --methods." if known == unknown else
                            f"{', '.join(sorted(set(unknown) - set(known)))} is no registered method: name one of the "
                            "grid's."))
    configs = _with_budgets(configs, budgets)
    if args.reference is not None and args.reference not in order:  # never drop the comparisons silently
        raise ValueError(f"--reference {args.reference!r} is not a method of this grid ({', '.join(order)}); "
                         "choose one of them, or add it to --methods.")
    reference = args.reference or "shc"
    versus = args.versus or (args.preset if args.versus_csv else None)
    if versus:  # checked before anything is read: the comparison claims the same splits, paired by seed
        from shc.stages import paired_seeds

        other_configs = _with_budgets(get_preset(versus).configs(
            methods=order, **{**grid, "run_dir": args.versus_run_dir or f"runs/{versus}",
                               **({"classifier_epochs": get_preset(versus).base().classifier_epochs}
                                  if every is not None else {})}), budgets)
        if versus == args.preset:  # one grid's settings on both sides (a rerun): the same splits at every seed
            seeds, checked = sorted({c.seed for c in configs}), "the same preset and settings on both sides"
        else:
            seeds, checked = paired_seeds(other_configs, configs, f"--versus {versus}", f"--preset {args.preset}"), None
    if args.headline and (versus or args.paper or args.extended):
        raise ValueError("--headline prints the headline table alone; --versus, --versus-csv, --paper and --extended "
                         "print more tables: drop them, or drop --headline.")
    if args.versus_csv and sorted(map(str, args.versus_csv)) == sorted(map(str, args.from_csv or ())):
        raise ValueError("--versus-csv names the same results files as --from-csv: both sides would be one grid; name "
                         "the other grid's files.")
    if args.versus_csv and args.versus_run_dir:
        raise ValueError("--versus-run-dir names the other side's run folders and --versus-csv its results files: "
                         "give one of them.")
    if args.from_csv and ((versus and not args.versus_csv) or args.paper or args.extended
                          or args.write_csv is not None):
        raise ValueError("--from-csv prints the tables and paired comparisons of a results file; --versus (without "
                         "--versus-csv), --paper, --extended and --write-csv read run folders: drop them, or drop "
                         "--from-csv.")
    if args.from_csv:
        from shc.results.files import read_results

        rows = read_results(args.from_csv, configs)
    else:
        rows = result_rows(configs)
    if versus:  # every method of this grid, from the other side's runs or results files (checked before printing)
        from shc.results.files import read_results

        other = read_results(args.versus_csv, other_configs) if args.versus_csv else result_rows(other_configs)
    if args.write_csv is not None:
        from shc.results.files import write_results
        from shc.runs import MissingRunError, StaleRunError

        target = args.write_csv or f"results/{args.preset}.csv"
        try:  # the classifier-code baseline too, where the preset computes it and it exists
            written = write_results(configs, target, preset.classifier_codes)
            print(f"wrote {written} ({len(configs)} runs and their classifier-code baseline)\n"
                  if preset.classifier_codes else f"wrote {written} ({len(configs)} runs)\n")
        except StaleRunError:
            raise  # it exists, under other settings: not "not computed yet"
        except MissingRunError:
            written = write_results(configs, target)
            print(f"wrote {written} ({len(configs)} runs; not their classifier-code baseline, which is not computed "
                  f"yet: `python -m shc.pipeline --preset {args.preset}` computes it, then write the file again)\n")
    source = " and ".join(f"`{path}`" for path in args.from_csv) if args.from_csv else f"`{run_dir}`"
    protocol = ""
    if unseen:
        held = dict(preset.config["dataset_options"])["unseen_classes"]
        protocol = (f" Unseen-class protocol: {f'{held:.0%}' if isinstance(held, float) else held} of the classes are "
                    "held out of every training stage (shc.data.unseen); the mAP tables without a pairing rank the whole "
                    "database for every query, seen and held-out.")
    stamp = datetime.date.today().isoformat()
    command = " ".join(["python -m shc.results", *(sys.argv[1:] if argv is None else argv)])
    epochs = budgets_by_bits(configs, order)
    print(f"Results of preset `{args.preset}` ({preset.datasets[0]}; {len(configs)} runs: "
          f"{grid_phrase(order, {c.bits for c in configs}, {c.seed for c in configs})}; {budget_phrase(epochs)}), "
          f"read from {source} on {stamp} by `{command}`. "
          "Cells are mean ± std over seeds of the query-set mAP of the model selected on the validation split. "
          "*Tie-aware* is the expectation over random orders within Hamming-distance ties (primary: it does not "
          "depend on how the database is stored); *ties by index* ranks a tie in database order, which is "
          f"seeded random.{protocol}\n")
    if device_phrase(rows):
        print(device_phrase(rows) + "\n")
    if args.headline:
        _print_headline(rows, reference, args.markdown)
        return 0
    for metric in args.metrics:
        if metric in UNSEEN_KEYS and rows[metric].isna().all():  # asked for a pairing of a preset without one
            print(f"**{_metric_title(metric)}**: preset `{args.preset}` holds no class out of training (its runs have "
                  "no unseen-class pairings; the `*-unseen` presets do).\n")
            continue
        if metric not in rows or rows[metric].isna().all():  # printed "Empty DataFrame" before
            print(f"**{_metric_title(metric)}**: n/a: none of these runs stores it (they were measured before it was "
                  "recorded).\n")
            continue
        _print_table(f"**{_metric_title(metric)}**", rows, metric, order, args.markdown)
    if reference not in order and len(order) > 1:  # never drop the comparisons silently
        print(f"No paired comparisons: their reference, {reference}, is not among the methods read; pass "
              f"--reference with one of {', '.join(order)}.\n")
    _print_comparisons(rows, reference, order)
    for pairing in PAIRINGS[1:] if unseen else ():  # issue 37's verdicts on held-out classes: unseen@unseen, unseen@all
        _print_comparisons(rows, reference, order, f"{pairing}_{PRIMARY_METRIC}")
    if preset.classifier_codes:  # how much of the retrieval above is classification (issue 37)
        from shc.results.files import read_classifier_codes
        from shc.results.reading import classifier_code_rows
        from shc.runs import MissingRunError, StaleRunError

        baseline = []
        if args.from_csv:
            baseline = read_classifier_codes(args.from_csv, configs, preset.classifier_codes)
            if not len(baseline):
                print(f"The classifier-code baseline is not in {source}: write the file again (--write-csv) once "
                      f"`python -m shc.pipeline --preset {args.preset}` has computed it.\n")
        else:
            try:
                baseline = classifier_code_rows(configs, preset.classifier_codes)
            except StaleRunError:
                raise  # it exists, under other settings: not "not computed yet"
            except MissingRunError:  # the tables above stand without it; say what computes it
                print(f"The classifier-code baseline of this grid is not computed yet: `python -m shc.pipeline --preset "
                      f"{args.preset}` computes it after the grid (cached runs are read, not retrained).\n")
        if len(baseline):
            labels = list(dict.fromkeys(baseline["label"]))
            print("### The classifier-code baseline\n\nNo hashing network: stage 1's classifier (selected on the "
                  "validation split) gives each query and database image the center of its predicted class (top1) "
                  "or the sign of the probability-weighted sum of all centers (soft); Sablayrolles et al., ICASSP "
                  "2017.\n")
            for metric in [metric for metric in args.metrics if metric in baseline.columns
                           and baseline[metric].notna().any()]:
                _print_table(f"**{_metric_title(metric)}**, classifier codes", baseline, metric, labels,
                             args.markdown)
    if args.extended:
        from shc.presets import ABLATIONS, BASELINES

        for title, extra in (("Ablations (paper Tables 7 and 8)",
                              [*preset.configs(methods=list(ABLATIONS), **grid),
                               *preset.configs(methods=["shc"], similarity="text", **grid)]),
                             ("Baselines (paper Table 4)", preset.configs(methods=list(BASELINES), **grid))):
            extra_rows = result_rows(extra)
            labels = list(dict.fromkeys(extra_rows["label"]))
            print(f"### {title}\n")
            for metric in (PRIMARY_METRIC, "mAP@ALL"):
                _print_table(f"**{_metric_title(metric)}** ({len(extra)} runs)", extra_rows, metric, labels,
                             args.markdown)
            _print_comparisons(extra_rows, reference, labels)
    if args.paper:
        _print_paper_comparison(preset, grid, args.methods)
    if versus:  # the other side, read above

        names = ["+".join(Path(path).stem for path in paths) if paths else name
                 for paths, name in ((args.versus_csv, versus), (args.from_csv, args.preset))]
        if names[0] == names[1]:  # the same name on both sides: say which files
            names = [" and ".join(paths) if paths else name
                     for paths, name in ((args.versus_csv, versus), (args.from_csv, run_dir))]
        origins = [f"{name}: {' and '.join(f'`{path}`' for path in paths) if paths else f'`{folder}`'}"
                   for name, paths, folder in ((names[1], args.from_csv, run_dir),
                                               (names[0], args.versus_csv, args.versus_run_dir or f"runs/{versus}"))]
        this = rows[rows["method"].isin(order)]
        for metric in [PRIMARY_METRIC, *[f"{pairing}_{PRIMARY_METRIC}" for pairing in PAIRINGS[1:]]]:
            if metric in other and metric in this and other[metric].notna().any() and this[metric].notna().any():
                _print_regimes(other, this, *names, seeds, metric,
                               reference if reference in order else None, checked, "; ".join(origins))
    return 0
