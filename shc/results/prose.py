"""The sentences ``python -m shc.results`` prints around its tables, computed from the runs.

:func:`budget_phrase` (the training budgets of a grid in words), the metric titles, and the sections of computed
prose: the paired comparisons with a reference method (:func:`shc.findings.retrieval_findings`), the paper's
Table 4 differences beside ours (``--paper``) and two grids side by side with their rankings, their run-by-run
differences and the verdicts that moved between them (``--versus``, ``--versus-csv``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from shc.evaluation import PRIMARY_METRIC
from shc.findings import device_phrase  # computed prose shared with the pages (shc.findings: the lower layer)
from shc.findings.grid import budget_phrase, budgets_from_rows, grid_phrase
from shc.reachability import REACHED
from shc.results.reading import REACH_KEYS, finished_configs, result_rows
from shc.results.statistics import ranking_line, regime_rows


def budgets_by_bits(configs: Sequence[Any], methods: Sequence[str],
                    labels: Mapping[str, str] | None = None) -> dict[str, dict[int, int]]:
    """Each method's budget per code length, from its runs' own configs, for :func:`budget_phrase` (keyed by
    ``labels[method]`` when given, e.g. a page's shown names; :func:`shc.findings.grid.budgets_from_rows` on the
    runs). A method whose runs at one code length have several budgets is refused: the phrase could not say which."""
    rows = pd.DataFrame([{"label": (labels or {}).get(config.method, config.method), "bits": config.bits,
                          "epochs": config.epochs, "order": list(methods).index(config.method)}
                         for config in configs if config.method in methods], columns=["label", "bits", "epochs", "order"])
    return budgets_from_rows(rows.sort_values("order", kind="stable"))


def _metric_title(metric: str) -> str:
    """``tie_aware_mAP@ALL`` -> ``mAP@ALL, tie-aware``; ``mAP@ALL`` -> ``mAP@ALL, ties by index``;
    ``train_center_hit_rate`` -> ``center hit rate on the training set`` (reachability, :mod:`shc.reachability`)."""
    if metric.startswith(("seen@", "unseen@")):  # an unseen-class pairing: seen@seen_tie_aware_mAP@ALL
        pairing, name = metric.split("_", 1)
        queries, database = pairing.split("@")
        return (f"{_metric_title(name)}, {pairing}: queries of {queries} classes against the database images of "
                f"{'all' if database == 'all' else database} classes")
    if metric in REACH_KEYS:
        split, name = metric.split("_", 1)
        return (f"{name.replace('_', ' ')} on the {'training' if split == 'train' else 'query'} set (reachability: "
                f"against each method's own targets; below {REACHED} on the training set, the network did not reach them)")
    return metric.removeprefix("tie_aware_") + (", tie-aware" if metric.startswith("tie_aware_") else ", ties by index")


def _print_comparisons(rows: pd.DataFrame, reference: str, order: Sequence[str], metric: str = PRIMARY_METRIC) -> None:
    from shc.findings import retrieval_findings

    if reference in order:
        print(f"Paired comparisons with {reference} ({_metric_title(metric)}; 95% t-interval over seeds of "
              "the per-seed differences, same split and initial weights):\n")
        for sentence in retrieval_findings(rows, metric, reference=reference):
            print(f"- {sentence}")
        print()


def _print_paper_comparison(preset, grid: Mapping[str, Any], methods: Sequence[str] | None = None) -> None:
    """The paper's Table 4 differences beside ours: SHC and the paper's baselines among ``methods`` (default: all
    nine) whose runs have finished."""
    from shc.paper import PAPER_BASELINES, comparison_markdown, paper_differences, side_by_side

    chosen = [m for m in PAPER_BASELINES if methods is None or m in methods]
    configs = finished_configs(preset.configs(methods=list(dict.fromkeys(("shc", *chosen))), **grid))
    frames = [paper_differences("mAP@100")]
    if configs:
        rows = result_rows(configs)
        present = [m for m in PAPER_BASELINES if m in set(rows["method"])]
        frames = side_by_side(rows, preset.name)
        found = f"our baselines: {', '.join(present)} ({len(configs)} runs)"
    else:
        found = "no finished run of SHC or a baseline in this preset yet"
    print(f"### The paper side by side (Table 4, mAP@100)\n\nThe paper's rows are its Table 4 "
          f"(shc/assets/paper_results.csv, extracted from its LaTeX; one run each). Ours: {found}; mean paired "
          "difference over seeds with its 95% t-interval. \"best baseline\" is the best of the paper's nine "
          "that ran.\n")
    print(comparison_markdown(frames))
    print()


def _print_regimes(rows_a: pd.DataFrame, rows_b: pd.DataFrame, name_a: str, name_b: str, seeds: Sequence[int],
                   metric: str = PRIMARY_METRIC, reference: str | None = None, checked: str | None = None,
                   origins: str | None = None) -> None:
    """The --versus section for ``metric``: both grids side by side with the paired change and both rankings, then
    (with ``reference``) the run-by-run differences and which verdicts of ``reference`` moved between them.
    ``seeds``: the seeds paired; ``checked``: how they were found to share splits (default: what
    :func:`shc.stages.paired_seeds` checks, dataset, options and data fingerprint); ``origins``: where each side was
    read, in words (``"rerun: `results/a.csv`; committed: `results/b.csv`"``)."""
    from shc.results.statistics import run_differences, verdict_changes
    from shc.stats import metric_name

    frame = regime_rows(rows_a, rows_b, metric)
    checked = checked or "checked: dataset, options and data fingerprint"
    print(f"### {name_b} against {name_a} ({_metric_title(metric)})\n\nSame methods, code lengths and dataset, the "
          f"same splits at each of seeds {', '.join(map(str, seeds))} ({checked}); the change is {name_b} minus "
          f"{name_a}, paired by seed, with its 95% t-interval{f' (read from {origins})' if origins else ''}. "
          "Rankings run from the best mean down: `>` where the paired interval of two neighbours lies above 0, `≈` where it holds 0.\n")
    print(f"| bits | method | {name_a} | {name_b} | change | rank {name_a} | rank {name_b} |")
    print("|---|---|---|---|---|---|---|")
    for row in frame.to_dict("records"):
        a, b = (f"{row[f'mean {side}']:.4f}" + (f" ± {row[f'std {side}']:.4f}" if row["seeds"] > 1 else "")
                for side in ("a", "b"))
        print(f"| {row['bits']} | {row['method']} | {a} | {b} | {row['change [95% CI]']} | {row['rank a']} | "
              f"{row['rank b']} |")
    print()
    for bits in sorted(frame["bits"].unique()):
        common = set(frame.loc[frame["bits"] == bits, "method"])
        for name, rows in ((name_a, rows_a), (name_b, rows_b)):
            print(f"- {bits} bits, {name}: {ranking_line(rows[rows['method'].isin(common)], metric, bits)}")
    print()
    if reference is None:
        return
    runs = run_differences(rows_a, rows_b, metric)
    top = runs.iloc[0]
    epochs = (f", selected at epoch {int(top['selected_epoch a'])} -> {int(top['selected_epoch b'])}"
              if "selected_epoch a" in runs and pd.notna(top["selected_epoch a"]) and pd.notna(top["selected_epoch b"])
              else "")
    named = metric_name(metric)
    print(f"- {named}, run by run ({len(runs)} runs in both: the same method, code length and seed), {name_a} -> "
          f"{name_b}: "
          f"|difference| {runs['difference'].abs().mean():.3f} on the mean, {abs(top['difference']):.3f} at most "
          f"({top['method']} {top['bits']} bits seed {top['seed']}: {top[f'{metric} a']:.3f} -> "
          f"{top[f'{metric} b']:.3f}{epochs}).")
    changes = verdict_changes(rows_a, rows_b, metric, reference)
    if changes.empty:  # the reference alone, or no length where both grids hold it beside another method
        print()
        return
    moved, reversed_ = changes[changes["moved"]], int(changes["reversed"].sum())
    where = "; ".join(f"at {bits} bits " + ", ".join(f"{row['method']} ({row['verdict a']} -> {row['verdict b']})"
                                                     for row in cell.to_dict("records"))
                      for bits, cell in moved.groupby("bits", sort=True))
    print(f"- {named}, the verdicts of {reference} against each other method (paired 95% intervals over seeds), "
          f"{name_a} -> "
          f"{name_b}: " + (f"{len(moved)} of {len(changes)} moved, {reversed_ or 'none'} to the other side: {where}."
                           if len(moved) else f"none of the {len(changes)} moved."))
    print()


def _print_headline(rows: pd.DataFrame, reference: str, markdown: bool) -> None:
    """``--headline``: :func:`~shc.results.statistics.headline_rows` under its title, as Markdown or plain text."""
    from shc.results.statistics import headline_rows, verdict_sentence

    table = headline_rows(rows, reference=reference)
    print(f"**Headline: {_metric_title(PRIMARY_METRIC)}** (mean ± std over seeds, their number in brackets; hit: the "
          "training center hit rate, mean over seeds (did the network reach its targets); beside "
          f"each method its paired difference from {reference}, with the 95% t-interval over seeds, and the verdict; "
          "the best baseline is the highest mean among the other methods of the grid)\n")
    if markdown:
        columns = [str(column) for column in table.columns]
        print("| " + " | ".join(columns) + " |")
        print("|" + "---|" * len(columns))
        for _, row in table.iterrows():
            print("| " + " | ".join(str(row[column]) for column in table.columns) + " |")
    else:
        print(table.to_string(index=False))
    print()
    for bits in table["bits"]:
        print(f"- {verdict_sentence(rows, bits, reference=reference)}")
    print()

