"""Tables of finished runs: the paper's layouts, Markdown for the README, and frames for readers.

- mean ± std over seeds with best bold and second underlined (:class:`RankedTable`): :func:`retrieval_table`
  (Tables 4-8), :func:`center_table` (Table 3); :func:`classifier_table` (Table 2); :func:`value_name`, how a
  value column is named in them;
- the Markdown tables ``python -m shc.results --markdown`` prints (methods x code lengths);
- :func:`readable_table`: any frame as a reader should see it (every cell text, nothing cut).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from shc.evaluation import UNSEEN_KEYS
from shc.results.reading import REACH_KEYS, center_rows, load_stage1_metrics
from shc.runs import MAP_KEYS, TIE_AWARE_MAP_KEYS, RunConfig, load_data


def classifier_table(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """The stage-1 classifier's accuracy per dataset, mean and std over seeds (the paper's Table 2).

    Reads the "logits" stage 1 of every (dataset, seed) among ``configs``. Test accuracy is measured on the query
    images of the classes the classifier was trained on (the paper's test set; a preset that holds classes out has
    others in its query split, which the classifier cannot name), validation accuracy on the validation split. A
    stage 1 recorded before 2026-12-02 of a run holding classes out counted those as errors: its test accuracy is
    NaN here (n/a), not a number bounded by the share of seen classes. Returns a DataFrame indexed by dataset; std is NaN for a single seed.
    """
    import pandas as pd

    rows, seen = [], set()
    for config in configs:
        if (config.dataset, config.seed) in seen:
            continue
        seen.add((config.dataset, config.seed))
        logits_config = config.replace(similarity="logits")
        metrics = load_stage1_metrics(logits_config)
        # a record without "test_classes" (before 2026-12-02) of a run holding classes out counted each held-out
        # query image as an error (the classifier cannot name those classes): its test number is not comparable
        seen_only = "test_classes" in metrics or not load_data(logits_config).unseen_names
        rows.append({"dataset": config.dataset, "seed": config.seed,
                     "test": metrics["test_accuracy"] if seen_only else float("nan"),
                     "validation": metrics["val_accuracy"], "train seconds": metrics["train_seconds"]})
    if not rows:
        raise ValueError("configs is empty; pass the configs whose stage-1 classifiers to tabulate.")
    grouped = pd.DataFrame(rows).groupby("dataset", sort=False)
    table = pd.DataFrame({
        "test accuracy": grouped["test"].mean(), "test accuracy std": grouped["test"].std(),
        "validation accuracy": grouped["validation"].mean(), "validation accuracy std": grouped["validation"].std(),
        "train seconds": grouped["train seconds"].mean(), "seeds": grouped["seed"].count(),
    })  # fmt: skip
    return table


_LOWER_IS_BETTER = frozenset({"s_loss", "seconds", "train_seconds", "num_at_d_min",
                              *(key for key in REACH_KEYS if key.endswith("bit_error"))})
_INTEGER_VALUES = frozenset({"d_min", "gv_distance", "num_at_d_min", "selected_epoch"})
#: Values that describe a run rather than grade it: shown without a rank (no bold best, no underlined second).
_UNRANKED = frozenset({"selected_epoch"})
_VALUE_DIGITS = {"d_min": 1, "gv_distance": 1, "num_at_d_min": 1, "mean_distance": 2, "seconds": 3,
                 "train_seconds": 1, "selected_epoch": 1}
_VALUE_NAMES = {**{key: f"{key.removeprefix('tie_aware_')} (tie-aware)" for key in TIE_AWARE_MAP_KEYS},
                **{key: f"{key} (ties by index)" for key in MAP_KEYS}, "s_loss": "S_loss",
                "mean_distance": "mean distance", "spearman": "Spearman", "gv_distance": "GV d",
                "num_at_d_min": "pairs at d_min", "train_seconds": "train seconds", "selected_epoch": "selected epoch",
                "reach_targets": "hit rate measured against",  # centers, learned class codes or majority codes
                **{key: f"{key.split('_', 1)[1].replace('_', ' ')} ({key.split('_', 1)[0]})" for key in REACH_KEYS},
                # the unseen-class pairings: "unseen@all mAP@ALL (tie-aware)"
                **{key: f"{key.split('_', 1)[0]} {key.split('_', 1)[1].removeprefix('tie_aware_')} "
                        f"({'tie-aware' if '_tie_aware_' in key else 'ties by index'})" for key in UNSEEN_KEYS}}
_KEY_NAMES = {"label": "method", "similarity": "S source"}


def value_name(key: str) -> str:
    """How a value column is named in the tables' "metric" level (``tie_aware_mAP@ALL`` -> ``mAP@ALL (tie-aware)``,
    ``mAP@ALL`` -> ``mAP@ALL (ties by index)``, ``s_loss`` -> ``S_loss``): what to look a row up by."""
    return _VALUE_NAMES.get(key, key)


@dataclass(frozen=True, repr=False)
class RankedTable:
    """A results table in the paper's layout: one "mean ± std over seeds" cell per row and column,
    ranked within each column (best bold, second underlined when displayed, as in the paper's tables).

    Attributes
    ----------
    cells : pandas.DataFrame
        The cell texts, "0.6360 ± 0.0123" (the mean alone for a single seed; empty where nothing ran);
        what :func:`shc.plots.save_table` writes.
    mean, std, count : pandas.DataFrame
        The numbers behind the cells (std NaN for a single seed).
    rank : pandas.DataFrame
        Dense rank within the column and metric (1 = best: highest, or lowest for S_loss and times),
        computed on the means as displayed (with the cell's own decimals), so equal-looking cells share a rank
        and different-looking ones do not; NaN for empty cells and for values that describe a run rather than
        grade it (the selected epoch).
    """

    cells: pd.DataFrame
    mean: pd.DataFrame
    std: pd.DataFrame
    count: pd.DataFrame
    rank: pd.DataFrame

    def style(self):
        """A pandas Styler of :attr:`cells` with rank 1 bold and rank 2 underlined."""
        ranks = self.rank.to_numpy()
        css = np.where(ranks == 1, "font-weight: bold", np.where(ranks == 2, "text-decoration: underline", ""))
        css_frame = self.cells.copy()
        css_frame[:] = css
        styler = self.cells.style.apply(lambda _: css_frame, axis=None)
        return styler.format(escape="html").format_index(escape="html", axis=0).format_index(escape="html", axis=1)

    def to_html(self) -> str:
        """The table as HTML, best bold and second underlined."""
        return self.style().to_html()

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return self.cells.to_string()


def _as_frame(rows: Any) -> pd.DataFrame:
    import pandas as pd

    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        raise ValueError("rows is empty; build them with result_rows(configs) or center_rows(configs).")
    return frame


def _value_digits(value: str, mean: float, std: float, count: int, digits: int) -> int:
    if value in _INTEGER_VALUES and float(mean).is_integer() and (count == 1 or std == 0):
        return 0
    return _VALUE_DIGITS.get(value, digits)


def _sign_places(mean: float, places: int) -> int:
    """Decimals that show ``mean``'s sign: ``places``, or, where a non-zero mean would print as ``-0.0000`` or
    ``0.0000``, enough for two significant digits (``-0.000031``; as ``shc.stats.signed_interval`` prints a
    difference), so a cell never shows a signed zero (an exact ``-0.0`` mean is printed as ``0.0`` by its caller)."""
    if mean == 0 or not math.isfinite(mean) or round(mean, places) != 0:
        return places
    return max(places, 1 - math.floor(math.log10(abs(mean))))


def _ranked_table(frame, values: Sequence[str], index: Sequence[str], columns: Sequence[str], row: str,
                  order: Sequence[Any] | None, labels: Mapping[Any, str] | None, digits: int) -> RankedTable:
    """Aggregate ``frame`` over seeds into a :class:`RankedTable`; ``values`` appear as the level named
    "metric" wherever ``index`` or ``columns`` lists it, rows compete on ``row`` within everything else."""
    import pandas as pd

    needed = [key for key in (*index, *columns) if key != "metric"] + list(values)
    missing = [key for key in dict.fromkeys(needed) if key not in frame.columns]
    if missing:
        hint = " (build rows with result_rows(configs), or pass row='method')" if row in missing else ""
        raise ValueError(f"rows lack the column(s) {missing}{hint}; they have {list(frame.columns)}.")
    keys = [key for key in (*index, *columns) if key != "metric"]
    long = frame.melt(id_vars=keys, value_vars=list(values), var_name="metric", value_name="score")
    group_keys = [*index, *columns] + ([] if "metric" in (*index, *columns) else ["metric"])
    stats = (long.groupby(group_keys, sort=False, dropna=False)["score"]
             .agg(mean="mean", std="std", count="count").reset_index())  # fmt: skip
    stats = stats[stats["count"] > 0]
    places = [_value_digits(v, m, s, n, digits)
              for v, m, s, n in zip(stats["metric"], stats["mean"], stats["std"], stats["count"])]  # fmt: skip
    stats["shown"] = [round(float(m), _sign_places(m, p)) for m, p in zip(stats["mean"], places)]  # as printed
    stats["cell"] = [f"{m + 0.0:.{_sign_places(m, p)}f}" + (f" ± {s:.{p}f}" if n > 1 else "")  # + 0.0: no -0.0
                     for m, s, n, p in zip(stats["mean"], stats["std"], stats["count"], places)]  # fmt: skip
    sign = np.where(stats["metric"].isin(_LOWER_IS_BETTER), 1.0, -1.0)
    competitors = [stats[key] for key in group_keys if key != row]
    stats["rank"] = (stats["shown"] * sign).groupby(competitors, dropna=False).rank(method="dense")
    stats.loc[stats["metric"].isin(_UNRANKED), "rank"] = np.nan

    positions = {key: {v: i for i, v in enumerate(dict.fromkeys(stats[key]))} for key in group_keys}
    positions["metric"] = {v: i for i, v in enumerate(values)}
    if "bits" in positions:
        positions["bits"] = {v: i for i, v in enumerate(sorted(positions["bits"]))}
    if order is not None:
        unknown = [v for v in positions[row] if v not in order]
        positions[row] = {v: i for i, v in enumerate([*order, *unknown])}

    def ordered(level_keys: Sequence[str]) -> list[tuple]:
        tuples = set(zip(*(stats[key] for key in level_keys)))
        return sorted(tuples, key=lambda t: tuple(positions[k][v] for k, v in zip(level_keys, t)))

    def shown(key: str, value: Any) -> Any:
        if key == row and labels is not None:
            return labels.get(value, value)
        if key == "bits":
            return f"{value} bits"
        if key == "metric":
            return _VALUE_NAMES.get(value, value)
        return value

    def axis(level_keys: Sequence[str], tuples: list[tuple]):
        display = [tuple(shown(k, v) for k, v in zip(level_keys, t)) for t in tuples]
        names = [_KEY_NAMES.get(key, key) for key in level_keys]
        if len(level_keys) == 1:
            return pd.Index([t[0] for t in display], name=names[0])
        return pd.MultiIndex.from_tuples(display, names=names)

    rows_order, columns_order = ordered(index), ordered(columns)
    row_index, column_index = axis(index, rows_order), axis(columns, columns_order)

    def table(field: str):
        pivot = stats.pivot(index=list(index), columns=list(columns), values=field)
        pivot = pivot.reindex(index=[t[0] for t in rows_order] if len(index) == 1 else rows_order,
                              columns=[t[0] for t in columns_order] if len(columns) == 1 else columns_order)
        return pd.DataFrame(pivot.to_numpy(), index=row_index, columns=column_index)

    return RankedTable(table("cell").fillna(""), table("mean").astype(float), table("std").astype(float),
                       table("count").fillna(0).astype(int), table("rank").astype(float))


def relabelled(rows: Any, names: Mapping[Any, str], by: str = "label", bits: int | None = None) -> pd.DataFrame:
    """A copy of ``rows`` (:func:`result_rows`) whose ``label`` is ``names[value of by]`` where ``names`` has it
    (the others keep their label), so a table, its statistics (:func:`shc.stats.summary_frame`) and the findings
    all read the same display names: ``relabelled(rows, {"text": "text S"}, by="similarity")``. With ``bits``
    only the runs at that code length are renamed: a name true at one length only (page 05's "d only (MDS
    centers), csq's runs", CSQ's runs at C <= 2q) stays off the others (a reader audit, 2026-12-05)."""
    frame = _as_frame(rows)
    for column in {by, "label"} | ({"bits"} if bits is not None else set()):
        if column not in frame:
            raise ValueError(f"rows have no {column!r} column; build them with result_rows(configs).")
    at = frame["bits"] == bits if bits is not None else np.ones(len(frame), dtype=bool)
    frame["label"] = [names.get(value, label) if here else label
                      for value, label, here in zip(frame[by], frame["label"], at)]
    return frame


def retrieval_table(rows: Any, metric: str | Sequence[str] = "mAP@ALL", row: str = "label",
                    order: Sequence[Any] | None = None, labels: Mapping[Any, str] | None = None,
                    digits: int = 4) -> RankedTable:
    """mAP over seeds in the paper's retrieval-table layout (Tables 4-6; Tables 7-8 with several metrics).

    Parameters
    ----------
    rows : DataFrame or iterable of mappings
        One row per run with columns dataset, bits, ``row`` and the metric(s): :func:`result_rows`.
    metric : str or sequence of str
        E.g. "mAP@100". Several metrics stack blocks vertically, as the ablation tables do.
    row : str
        The column whose values are the table's rows and compete for best / second: "label" (method,
        with the S source when not the default), "method" or "similarity".
    order : sequence, optional
        Row order (default: order of first appearance), e.g. the paper's method order.
    labels : mapping, optional
        Display names of row values, e.g. ``{"text": "BERT-style text S", "logits": "data-dependent S"}``.
    digits : int
        Decimals shown; ranks are computed on the shown values.

    Returns
    -------
    RankedTable
        Rows: ``row`` values (under a "metric" level when several metrics); columns: (dataset,
        "q bits"); cells: mean ± std over seeds.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    if not metrics:
        raise ValueError("metric is empty; pass e.g. 'mAP@ALL' or list(MAP_KEYS).")
    index = [row] if len(metrics) == 1 else ["metric", row]
    return _ranked_table(_as_frame(rows), metrics, index, ["dataset", "bits"], row, order, labels, digits)


def center_table(configs: Iterable[RunConfig], similarity: str = "logits",
                 values: Sequence[str] = ("d_min", "s_loss"), order: Sequence[Any] | None = None,
                 labels: Mapping[Any, str] | None = None, digits: int = 4) -> RankedTable:
    """Hash-center quality in the paper's Table 3 layout: rows (dataset, method), columns (bits, value).

    Parameters
    ----------
    configs : iterable of RunConfig
        Center methods are scored by :func:`center_rows` (others are skipped); mean ± std over seeds.
    similarity : str
        The S every center set is scored against (default the data-dependent "logits", as in the paper).
    values : sequence of str
        Columns of :func:`center_rows`: "d_min" (Eq. 44, higher is better), "s_loss" (Eq. 45, lower is
        better), "mean_distance", "spearman", "seconds" (lower is better), "num_at_d_min".
    order, labels, digits
        As in :func:`retrieval_table`.
    """
    frame = center_rows(configs, similarity)
    return _ranked_table(frame, list(values), ["dataset", "label"], ["bits", "metric"], "label", order, labels,
                         digits)


def _summary_cells(rows: pd.DataFrame, metric: str, order: Sequence[str]) -> tuple[list[str], list[int], dict]:
    """The methods (in ``order``), code lengths and ``(method, bits) -> "mean ± std"`` cells of a results table (the
    mean alone over one seed)."""
    from shc.stats import summary_frame

    summary, _ = summary_frame(rows, [metric])
    bits = sorted(summary["bits"].unique())
    cells: dict[tuple, str] = {}
    for name, q, mean, std, n in summary[["method", "bits", "mean", "std", "n"]].itertuples(index=False):
        cells.setdefault((name, q), f"{mean:.4f} ± {std:.4f}" if int(n) > 1 else f"{mean:.4f}")  # the first row
    return [m for m in order if m in set(summary["method"])], bits, cells


def _markdown_table(rows: pd.DataFrame, metric: str, order: Sequence[str]) -> str:
    names, bits, cells = _summary_cells(rows, metric, order)
    lines = ["| method | " + " | ".join(f"{q} bits" for q in bits) + " |", "|---|" + "---|" * len(bits)]
    for name in names:
        lines.append(f"| {name} | " + " | ".join(cells.get((name, q), "-") for q in bits) + " |")
    return "\n".join(lines)


def _plain_table(rows: pd.DataFrame, metric: str, order: Sequence[str]) -> str:
    """The cells of :func:`_markdown_table` as aligned plain text, the methods in grid order."""
    import pandas as pd

    names, bits, cells = _summary_cells(rows, metric, order)
    frame = pd.DataFrame([[cells.get((name, q), "-") for q in bits] for name in names], index=pd.Index(names),
                         columns=[f"{q} bits" for q in bits])
    frame.index.name = "method"
    return frame.to_string()


def _print_table(title: str, rows: pd.DataFrame, metric: str, order: Sequence[str], markdown: bool) -> None:
    """A titled table of ``metric`` (methods x code lengths), mean ± std over seeds: Markdown, else plain text."""
    print(f"{title}\n")
    print(_markdown_table(rows, metric, order) if markdown else _plain_table(rows, metric, order))
    print()


def readable_cell(value: Any, digits: int = 4) -> str:
    """One cell as :func:`readable_table` shows it: numbers through :func:`shc.stats.format_value` (``digits``
    significant digits), NaN and None as ``n/a``, bools ``yes``/``no``, a dict as ``key = value, ...``, a list as
    ``a, b``, an empty one as ``none``; text as it is."""
    import pandas as pd

    from shc.stats import format_value

    if isinstance(value, dict):
        return ", ".join(f"{key} = {readable_cell(item, digits)}" for key, item in value.items()) or "none"
    if isinstance(value, (list, tuple)):
        return ", ".join(readable_cell(item, digits) for item in value) or "none"
    if isinstance(value, str):
        return value
    try:
        if pd.isna(value):
            return "n/a"
    except (TypeError, ValueError):
        pass
    return format_value(value, digits)


def readable_table(frame: Any, digits: int = 4, index_name: str = "rank", drop_empty: bool = True,
                   named: bool = False):
    """A frame as a reader should see it: every cell text (numbers through :func:`shc.stats.format_value`,
    so no ``NaN`` and no ``True``/``False``: ``n/a``, ``yes``/``no``; dicts as ``key = value`` lists; nothing cut
    to "..."), a default 0..n-1 index replaced by a 1-based one named ``index_name``, and columns that hold no
    value at all left out (``drop_empty``). With ``named``, value columns carry the tables' names
    (:func:`value_name`: ``train_center_hit_rate`` -> ``center hit rate (train)``). Display it; save the numeric
    frame (:func:`shc.plots.save_table`)."""
    import pandas as pd

    frame = frame.copy()
    if drop_empty:
        frame = frame.loc[:, [column for column in frame.columns if not frame[column].isna().all()]]
    if named:
        frame.columns = [value_name(column) for column in frame.columns]
    if isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1:
        frame.index = pd.RangeIndex(1, len(frame) + 1, name=index_name)
    if not len(frame.columns):
        return _FullTable(frame)
    return _FullTable(frame.apply(lambda column: column.map(lambda value: readable_cell(value, digits))))


class _FullTable:
    """A frame of text shown in full (pandas' display would cut long cells to "...")."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    def _repr_html_(self) -> str:
        return self.frame.to_html(escape=True, na_rep="n/a", max_rows=None, max_cols=None)

    def __repr__(self) -> str:
        return self.frame.to_string()
