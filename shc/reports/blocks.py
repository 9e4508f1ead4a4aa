"""The blocks that several report pages share: each computes its tables or figures, saves them in the page's folder
and returns what the page displays, so a notebook cell is one call and a display (thin notebooks, issue 38).

Pages 03, 04 and 06 each built the reachability table, 04 and 06 the mAP tables, the unseen-class pairings and the
precision/recall@K figures, with the same lines copied into each notebook; a fix to one copy missed the others. The
blocks take the page's ``row`` column and display ``labels`` (06 ranks methods by ``method`` under its shown names;
04 ranks ``label``, which tells similarity variants apart) and write the files the pages wrote before, under the same
names, so the report checker and the tests read them as they did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["classifier_code_table", "map_tables", "pr_figures", "precision_recall_at_k", "reach_table",
           "summary_tables", "unseen_table"]


def _ranked(runs: Any, metrics: str | Sequence[str], tables: Path, name: str, order: Sequence[str], row: str,
            labels: Mapping[str, str] | None) -> Any:
    """One :class:`shc.results.RankedTable` of ``metrics``, saved as ``tables/<name>.csv``."""
    from shc import plots, results

    table = results.retrieval_table(runs, metrics, row=row, order=list(order), labels=labels)
    plots.save_table(table.cells, Path(tables) / name)
    return table


def reach_table(runs: Any, tables: str | Path, order: Sequence[str], *, row: str = "label",
                labels: Mapping[str, str] | None = None, name: str = "reachability") -> Any:
    """Pages 03, 04, 05 and 06: the reachability measures (:data:`shc.results.REACH_KEYS`: train and query center hit
    rates and bit errors) per method and code length, mean ± std over seeds, saved as ``tables/<name>.csv``."""
    from shc import results

    return _ranked(runs, list(results.REACH_KEYS), Path(tables), name, order, row, labels)


def summary_tables(runs: Any, tables: str | Path, name: str, *, row: str = "label") -> tuple[Any, Any]:
    """The numbers behind a page's mAP tables (:data:`shc.results.REPORTED_MAP_KEYS`), saved as
    ``tables/<name>_summary.csv`` (method, bits, metric, mean, std, n) and ``tables/<name>_per_seed.csv``
    (:func:`shc.stats.summary_frame`); returns both frames."""
    from shc import plots, results, stats

    numeric, per_seed = stats.summary_frame(runs, list(results.REPORTED_MAP_KEYS), method=row)
    plots.save_table(numeric, Path(tables) / f"{name}_summary")
    plots.save_table(per_seed, Path(tables) / f"{name}_per_seed")
    return numeric, per_seed


def map_tables(runs: Any, tables: str | Path, order: Sequence[str], *, row: str = "label",
               labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Pages 04 and 06: one ranked table per reported mAP (:data:`shc.results.REPORTED_MAP_KEYS`), saved as
    ``tables/<metric>.csv`` (``@`` written ``_at_``), and the numbers behind them: ``tables/map_summary.csv``
    (method, bits, metric, mean, std, n) and ``tables/map_per_seed.csv`` (:func:`shc.stats.summary_frame`). Returns
    metric -> table, in the order of the metrics."""
    from shc import results

    tables = Path(tables)
    ranked = {metric: _ranked(runs, metric, tables, metric.replace("@", "_at_"), order, row, labels)
              for metric in results.REPORTED_MAP_KEYS}
    summary_tables(runs, tables, "map", row=row)
    return ranked


def unseen_table(runs: Any, tables: str | Path, order: Sequence[str], pairings: Sequence[str], *, row: str = "label",
                 labels: Mapping[str, str] | None = None) -> Any | None:
    """Pages 04 and 06 under the unseen-class protocol: the ``pairings`` columns that hold a value
    (:func:`shc.results.measured_pairings`), saved as ``tables/unseen_pairings.csv``; None (nothing saved) for a grid
    that holds no class out of training."""
    return _ranked(runs, list(pairings), Path(tables), "unseen_pairings", order, row, labels) if pairings else None


def classifier_code_table(configs: Sequence[Any], rules: Sequence[str], tables: str | Path,
                          pairings: Sequence[str]) -> tuple[Any, str] | None:
    """Page 04: the classifier-code baseline of the grid's center methods by ``rules``
    (:func:`shc.results.classifier_code_rows`), its primary metric and the ``pairings`` that hold a value, saved as
    ``tables/classifier_codes.csv``; with the caption that names its columns. None (nothing saved) where the preset
    computes no such baseline (``rules`` empty) or no run has one."""
    from shc import plots, results

    baseline = results.classifier_code_rows(configs, rules) if rules else None
    if baseline is None or not len(baseline):
        return None
    shown = [results.PRIMARY_METRIC, *[key for key in pairings if baseline[key].notna().any()]]
    table = results.retrieval_table(baseline, shown, order=list(dict.fromkeys(baseline["label"])))
    plots.save_table(table.cells, Path(tables) / "classifier_codes")
    caption = ("Classifier-code baseline, query set, mean ± std over seeds: "
               + ", ".join(results.value_name(key) for key in shown) + ".")
    return table, caption


def pr_figures(frames: Mapping[str, Any], bits: Sequence[int], figures: str | Path) -> list[Any]:
    """Precision-recall curves (:func:`shc.plots.plot_pr_curves`), one figure per kind of ``frames`` (``"radius"``
    or ``"rank"`` -> :func:`shc.results.curve_rows` of that kind) and code length, each saved as
    ``figures/pr_curve_<kind>_<q>bits`` with the rows it plots; returns the figures, kind by kind."""
    from shc import plots

    shown = []
    for kind, frame in frames.items():
        for q in bits:
            fig = plots.plot_pr_curves(plots.pr_arrays(frame, q), kind=kind,
                                       title=f"precision-recall by Hamming {kind}, {q} bits")
            plots.save_figure(fig, Path(figures) / f"pr_curve_{kind}_{q}bits", data=frame[frame["bits"] == q])
            shown.append(fig)
    return shown


def precision_recall_at_k(frame: Any, bits: Sequence[int], figures: str | Path,
                          digits: int | None = None) -> tuple[list[Any], dict[int, Path]]:
    """Precision@K and recall@K against K (``frame``: :func:`shc.results.curve_rows` of kind ``"k"``), one figure of
    each per code length, saved as ``figures/precision_at_k_<q>bits`` and ``figures/recall_at_k_<q>bits``. Both
    plot the same rows: they are stored once, beside the precision figure, with ``digits`` significant digits (8,
    :data:`shc.plots.TABLE_DIGITS`, where a finding reads them). Returns the figures (per code length: precision,
    then recall) and each code length's data file."""
    from shc import plots

    shown, files = [], {}
    for q in bits:
        for name in ("precision", "recall"):
            k, curves = plots.curve_arrays(frame, name, q)
            fig = plots.plot_curves(k, curves, xlabel="K (retrieved items)", ylabel=f"{name}@K",
                                    title=f"{name}@K, {q} bits")
            stem = Path(figures) / f"{name}_at_k_{q}bits"
            if q in files:
                plots.save_figure(fig, stem, data_file=files[q])
            else:
                files[q] = plots.save_figure(fig, stem, data=frame[frame["bits"] == q], digits=digits)[-1]
            shown.append(fig)
    return shown, files
