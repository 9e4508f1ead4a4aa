"""Re-deriving a page's headline numbers (``summary.json``) and the index line that shows them.

A page's summary (:func:`shc.reports.publish_summary`) is what the index of its report set prints in one line: the
retrieval pages' mean tie-aware mAP@ALL of each method at the longest code length and, on page 06, the best method
with its verdict (:func:`shc.findings.best_methods_label`). The checker compared displayed tables with their files
but read neither the summary nor the index line (an audit, 2026-12-02), so a number or a label edited in either
passed. :func:`summary_problems` computes each entry it knows again from the page's published runs table
(``tables/runs.csv``, :func:`shc.results.result_rows`), and :func:`index_summary_problems` requires the index to
print each page's summary as :func:`shc.reports.summary.format_summary` gives it. A problem is ``summary-mismatch``.

Page 03's entries (a third reader audit, 2026-12-05, found an index line saying "epochs 160" of a grid where 63 of
72 runs trained 80) are derived too: ``runs``, ``training time (min)``, ``budgets`` (each run's own budget, from the
page's ``settings`` table, else the last epoch of its training history), ``selected epoch / budget (mean)``, and the
older sets' ``epochs`` (one budget for every run: true only when every run had it) and ``mean selected epoch``
(named when it pools runs of different budgets, :class:`Replaced`). So are pages 00-02's: the Gilbert-Varshamov
distance, d_min and S_loss, the classifier's test accuracy, Spearman and ROC-AUC, from their published tables.
"""

from __future__ import annotations

import html
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from shc.reports.problem import Problem

__all__ = ["Replaced", "derived_summary", "index_summary_problems", "summary_problems"]

_MEAN = re.compile(r"^tie-aware mAP@ALL (?P<name>.+) \((?P<bits>\d+) bits\)$")
_BEST = re.compile(r"^best method \(tie-aware mAP@ALL, (?P<bits>\d+) bits\)$")
#: The largest difference between a summary's mean and the mean of the runs table's rounded values that is not a
#: mismatch: the table keeps 6 decimals (a rounding of at most 5e-7 a value); the index prints 4.
TOLERANCE = 1e-5


def _published_table(page_dir: Path, stem: str) -> Any:
    """``page_dir/tables/<stem>.csv`` as published (plain, xz or gzip), or None."""
    import pandas as pd

    for suffix in (".csv", ".csv.xz", ".csv.gz"):
        path = page_dir / "tables" / f"{stem}{suffix}"
        if path.is_file():
            return pd.read_csv(path)
    return None


def run_budgets(page_dir: Path) -> Any:
    """Each run's hashing budget, one row per run (``method``, ``bits``, ``seed``, ``epochs``) in grid order: from the
    page's ``settings`` table (each run's config), else, on pages built before it was published, the last epoch of
    each run's training history (every run trains its whole budget: model selection keeps the best epoch, it does
    not stop early). None when the page publishes neither."""
    settings = _published_table(page_dir, "settings")
    if settings is not None and "epochs" in settings:
        return settings[["method", "bits", "seed", "epochs"]]
    history = _published_table(page_dir, "training_history")
    if history is None or "epoch" not in history:
        return None
    last = history.groupby(["method", "bits", "seed"], sort=False)["epoch"].max()
    return last.rename("epochs").reset_index()


@dataclass(frozen=True)
class Replaced:
    """An older set's summary entry that today's page states under another key: ``epochs`` (one budget) where the
    runs trained several, ``mean selected epoch`` where it pools runs of different budgets. ``key`` and ``value``
    are today's entry, which :func:`shc.reports.refresh.refresh_summaries` writes in its place."""

    key: str
    value: Any


def _page03_entries(summary: dict[str, Any], runs: Any, page_dir: Path) -> dict[str, Any]:
    """Page 03's entries of ``summary`` as its runs table and budgets give them (see the module's docstring)."""
    from shc.findings.grid import budget_phrase, budgets_from_rows

    derived: dict[str, Any] = {}
    if "runs" in summary:
        derived["runs"] = len(runs)
    if "training time (min)" in summary and "train_seconds" in runs:
        derived["training time (min)"] = float(runs["train_seconds"].sum() / 60)
    budgets = run_budgets(page_dir) if {"budgets", "epochs", "selected epoch / budget (mean)",
                                        "mean selected epoch"} & set(summary) else None
    share = None
    if budgets is not None and "selected_epoch" in runs:
        budget = {(m, int(b), int(s)): int(e) for m, b, s, e in budgets.itertuples(index=False)}
        keys = [(m, int(b), int(s)) for m, b, s in zip(runs["method"], runs["bits"], runs["seed"])]
        if all(key in budget for key in keys):  # else not judged: a run without a budget is the runs table's defect
            share = float((runs["selected_epoch"] / [budget[key] for key in keys]).mean())
    one_budget = budgets is None or budgets["epochs"].nunique() == 1
    if "mean selected epoch" in summary and "selected_epoch" in runs:  # over runs of one budget only
        mean = float(runs["selected_epoch"].mean())
        derived["mean selected epoch"] = (mean if one_budget or share is None
                                          else Replaced("selected epoch / budget (mean)", share))
    if budgets is None:
        return derived
    phrase = budget_phrase(budgets_from_rows(budgets, method="method"))
    if "budgets" in summary:
        derived["budgets"] = phrase
    if "epochs" in summary:  # one number for the grid: the truth only when every run trained it
        derived["epochs"] = int(budgets["epochs"].iloc[0]) if one_budget else Replaced("budgets", phrase)
    if "selected epoch / budget (mean)" in summary and share is not None:
        derived["selected epoch / budget (mean)"] = share
    return derived


_CENTER = re.compile(r"^(?P<what>d_min|S_loss) (?P<name>[^ ]+)(?: \((?:seed (?P<seed>\d+)|(?P<bits>\d+) bits)\))?$")


def _stage_entries(summary: dict[str, Any], page_dir: Path) -> dict[str, Any]:
    """Pages 00-02's entries of ``summary`` as their tables give them: page 00's ``GV d`` and each method's ``d_min``
    and ``S_loss`` of its one center set (``tables/center_quality.csv``, "(seed s)" or, in older sets, no suffix),
    page 01's classifier test accuracy, Spearman and ROC-AUC (``classifier_accuracy``, ``similarity_correlations``,
    ``hierarchy_agreement``), page 02's means over seeds at a code length (``center_quality_runs``, "(q bits)").
    A method label with a space ("shc (text S)") is not read."""
    derived: dict[str, Any] = {}
    quality = _published_table(page_dir, "center_quality")
    runs = _published_table(page_dir, "center_quality_runs")
    for key in summary:
        center = _CENTER.match(key)
        if key == "GV d" and quality is not None and "GV distance d" in quality:
            derived[key] = int(quality["GV distance d"].iloc[0])
        elif center and center["bits"] is None and quality is not None and "method" in quality:  # page 00's one set
            column = {"d_min": "d_min", "S_loss": "s_loss"}[center["what"]]
            rows = quality[quality["method"] == center["name"]]
            derived[key] = float(rows[column].iloc[0]) if len(rows) else None
        elif center and center["bits"] is not None and runs is not None:
            column = {"d_min": "d_min", "S_loss": "s_loss"}[center["what"]]
            rows = runs[(runs["label"] == center["name"]) & (runs["bits"] == int(center["bits"]))]
            derived[key] = float(rows[column].mean()) if len(rows) else None
    accuracy = _published_table(page_dir, "classifier_accuracy")
    if "classifier test accuracy" in summary and accuracy is not None:
        derived["classifier test accuracy"] = float(accuracy["test accuracy"].iloc[0])
    correlations = _published_table(page_dir, "similarity_correlations")
    if "Spearman data-dependent vs text S" in summary and correlations is not None:
        derived["Spearman data-dependent vs text S"] = float(
            correlations.set_index(correlations.columns[0]).loc["data-dependent S", "text S"])
    agreement = _published_table(page_dir, "hierarchy_agreement")
    for source in ("data-dependent S", "text S"):
        key = f"ROC-AUC hierarchy, {source}"
        if key in summary and agreement is not None:
            derived[key] = float(agreement.set_index(agreement.columns[0]).loc[source, "roc_auc"])
    return derived


def derived_summary(page_dir: Path) -> dict[str, Any]:
    """The entries of ``page_dir/summary.json`` that its runs table gives again, by key, as today's code derives
    them: a mean (float; None where no run matches) or the best-method label (str). Empty for a page without a runs
    table or a summary; entries of other kinds are left out."""
    from shc.evaluation import PRIMARY_METRIC
    from shc.findings import best_methods_label
    from shc.methods import available_methods, method_label

    try:
        summary = json.loads((page_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(summary, dict):
        return {}
    derived: dict[str, Any] = _stage_entries(summary, page_dir)
    runs = _published_table(page_dir, "runs")
    if runs is None or PRIMARY_METRIC not in runs:
        return derived
    derived |= _page03_entries(summary, runs, page_dir)
    known = set(available_methods())
    tagged = runs.assign(method=[method_label(name) if name in known else name for name in runs["method"]])
    for key in summary:
        mean, best = _MEAN.match(key), _BEST.match(key)
        if mean:
            bits, name = int(mean["bits"]), mean["name"]
            rows = tagged[(tagged["bits"] == bits)
                          & ((tagged["method"] == name) | (runs["method"] == name) | (runs["label"] == name))]
            derived[key] = float(rows[PRIMARY_METRIC].mean()) if len(rows) else None
        elif best:
            derived[key] = best_methods_label(tagged, PRIMARY_METRIC, int(best["bits"]), method="method")
    return derived


def summary_problems(page_dir: Path, relative: str) -> Iterator[Problem]:
    """The entries of ``page_dir/summary.json`` that its runs table does not give (``relative`` names the summary
    in the problems). Entries of other kinds, and a page without a runs table, are not judged."""
    try:
        summary = json.loads((page_dir / "summary.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for key, derived in derived_summary(page_dir).items():
        value = summary[key]
        if isinstance(derived, Replaced):
            yield Problem(relative, "summary-mismatch", f"{key!r} ({value!r}) speaks of runs that trained different "
                          f"budgets; today's page states {derived.key!r}: {derived.value!r}; derive it again with "
                          "python -m shc.reports.refresh")
        elif isinstance(derived, str):
            if value != derived:
                yield Problem(relative, "summary-mismatch", f"{key!r} is {value!r}, but its published tables give "
                              f"{derived!r}; rebuild the page, or derive the label again with python -m "
                              "shc.reports.refresh")
        elif derived is None or not isinstance(value, (int, float)) or not _same(float(value), derived):
            said = "no run" if derived is None else f"{derived:.6f}"
            yield Problem(relative, "summary-mismatch", f"{key!r} is {value!r}, but its published tables give "
                          f"{said}; rebuild the page")


def _same(value: float, derived: float) -> bool:
    """Equal within :data:`TOLERANCE`, or ``derived`` rounded to the significant digits ``value`` shows, at least 3
    (older pages stored a summary rounded so); NaN (a number the page reports as n/a) only to NaN."""
    if math.isnan(value) or math.isnan(derived):
        return math.isnan(value) and math.isnan(derived)
    digits = len(f"{value:e}".split("e")[0].replace("-", "").replace(".", "").rstrip("0"))
    return abs(value - derived) <= TOLERANCE or (digits >= 3 and float(f"{derived:.{digits}g}") == value)


def index_summary_problems(index_text: str, folder: Path, published: set[str]) -> Iterator[Problem]:
    """Each published page's summary as the index prints it (:func:`shc.reports.summary.format_summary`): a line
    edited in the index, or a summary changed after the index was written, is a ``summary-mismatch``."""
    from shc.reports.summary import format_summary

    for relative in sorted(name for name in published if PurePosixPath(name).name == "summary.json"):
        try:
            summary = json.loads((folder / relative).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        line = html.escape(format_summary(summary))
        if line and line not in index_text:
            yield Problem("index.html", "summary-mismatch", f"the index does not print {relative} as it is: "
                          f"{format_summary(summary)!r}; rebuild the index (python -m shc.reports writes it)")
