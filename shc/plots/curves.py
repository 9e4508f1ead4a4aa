"""Curves and the tidy tables they are drawn from: precision@K / recall@K, precision-recall (by radius
and by rank), training histories and convergence."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from shc.plots.style import _figure_per_method, _legend_outside, _marker_spacing, _new_figure, method_style
from shc.stats import confidence_level, mean_interval, metric_name


def plot_curves(
    x,
    ys_by_method: Mapping[str, np.ndarray],
    xlabel: str,
    ylabel: str,
    title: str | None = None,
    legend_title: str = "method",
) -> Figure:
    """Line per method on a shared x axis (e.g. precision@K or recall@K against K).

    Parameters
    ----------
    x : (n,) array
        Shared x values.
    ys_by_method : mapping str -> (n,) or (runs, n) array
        A 2-D array holds several runs (e.g. seeds): drawn as the mean with a band of +-1 sample standard
        deviation (ddof = 1, as every table's "mean ± std over seeds"), cut at 0 when no run is negative
        (:func:`_band`); one run draws no band.
    xlabel, ylabel : str
        Axis labels; include units (e.g. "K (retrieved items)").
    title : str, optional
    legend_title : str
        What the lines are (``"method"``; ``"code length"`` when they are one method's lengths).
    """
    x_values = np.asarray(x, dtype=np.float64)
    if x_values.ndim != 1 or x_values.size == 0:
        raise ValueError(f"x must be a non-empty 1-D array, got shape {x_values.shape}.")
    fig, axes = _figure_per_method(ys_by_method, "ys_by_method", "values", 7.0, 4.2)
    for line, (method, values) in enumerate(ys_by_method.items()):
        runs = np.atleast_2d(np.asarray(values, dtype=np.float64))
        if runs.ndim != 2 or runs.shape[1] != x_values.size:
            raise ValueError(
                f"ys_by_method[{method!r}] has shape {np.shape(values)}; expected ({x_values.size},) or "
                f"(runs, {x_values.size}) to match x."
            )
        mean = runs.mean(axis=0)
        style = method_style(method)
        spacing = _marker_spacing(x_values, mean, line, len(ys_by_method))
        axes.plot(x_values, mean, **style, **spacing, label=method, zorder=_zorder(style))
        if runs.shape[0] > 1:
            spread = runs.std(axis=0, ddof=1)  # the tables' std: the band and the table of one figure agree
            lower, upper = _band(mean, spread, runs)
            axes.fill_between(x_values, lower, upper, color=style["color"], alpha=0.2, linewidth=0)
    if np.array_equal(x_values, np.round(x_values)):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # K, epochs, cycles: no 2.5 ticks
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    _legend_outside(fig, axes, title=legend_title)
    return fig


def plot_pr_curves(
    pr_by_method: Mapping[str, Mapping[str, np.ndarray]], title: str | None = None, kind: str = "radius"
) -> Figure:
    """Precision-recall curves, one per method: Hamming radius 0..q, or cut-offs of the ranking.

    Parameters
    ----------
    pr_by_method : mapping str -> mapping
        Per method, the precision and recall arrays under the keys ``"pr_precision"`` /
        ``"pr_recall"`` (the dict of ``shc.metrics.evaluate``) or ``"precision"`` / ``"recall"``.
    title : str, optional
    kind : {"radius", "rank"}
        What the points are (only changes the default title): retrieval within Hamming radius r, or
        the top n of the Hamming ranking (``shc.metrics.rank_pr_curve``, the paper's figures).
    """
    if kind not in ("radius", "rank"):
        raise ValueError(f"kind must be 'radius' or 'rank', got {kind!r}.")
    fig, axes = _figure_per_method(pr_by_method, "pr_by_method", "{'precision', 'recall'}", 6.0, 4.5)
    for line, (method, curve) in enumerate(pr_by_method.items()):
        precision = np.asarray(_pr_entry(curve, "precision", method), dtype=np.float64)
        recall = np.asarray(_pr_entry(curve, "recall", method), dtype=np.float64)
        if precision.shape != recall.shape or precision.ndim != 1:
            raise ValueError(f"{method!r}: precision {precision.shape} and recall {recall.shape} must be equal 1-D.")
        spacing = _marker_spacing(recall, precision, line, len(pr_by_method))
        axes.plot(recall, precision, **method_style(method), **spacing, label=method)
    axes.set_xlabel("recall (fraction of relevant items retrieved)")
    axes.set_ylabel("precision (fraction of retrieved items relevant)")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    default = "precision-recall within Hamming radius r = 0..q" if kind == "radius" else (
        "precision-recall of the Hamming ranking (top n, expected over random tie orders)")
    axes.set_title(title or default)
    _legend_outside(fig, axes, title="method")
    return fig


def _pr_entry(curve: Mapping[str, np.ndarray], key: str, method: str) -> np.ndarray:
    for candidate in (f"pr_{key}", key):
        if candidate in curve:
            return curve[candidate]
    raise KeyError(f"pr_by_method[{method!r}] has no '{key}' (or 'pr_{key}') entry; pass the dict of evaluate().")


def _metric_title(column: str) -> str:
    """A panel's title for a metric column: ``tie_aware_mAP@100`` -> "validation tie-aware mAP@100", the words the
    pages' sentences use (:func:`shc.stats.metric_name`), not the column's name."""
    return "validation " + metric_name(str(column))


def _default_map_columns(columns) -> list[str]:
    tie_aware = [c for c in columns if str(c).startswith("tie_aware_mAP")]
    return tie_aware or [c for c in columns if str(c).startswith("mAP")]


def plot_training_history(history_frame, metrics: Sequence[str] | None = None) -> Figure:
    """Training loss and validation metrics against the epoch.

    Parameters
    ----------
    history_frame : pandas.DataFrame
        One row per epoch with columns ``epoch`` and ``loss`` (as ``History.to_frame()`` /
        ``history.csv`` of :mod:`shc.train`), metric columns such as ``mAP@ALL``, and optionally a
        ``method`` column (one line per method).
    metrics : sequence of str, optional
        Metric columns for the right panel; by default the tie-aware mAP columns (``tie_aware_mAP@...``, what
        model selection reads), or every column starting with "mAP" in histories that have none.
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame) or not {"epoch", "loss"} <= set(history_frame.columns):
        raise ValueError("history_frame must be a DataFrame with 'epoch' and 'loss' columns (History.to_frame()).")
    columns = history_frame.columns
    metric_columns = list(metrics) if metrics is not None else _default_map_columns(columns)
    missing = [c for c in metric_columns if c not in columns]
    if missing:
        raise ValueError(f"metric columns {missing} are not in the history (columns: {list(columns)}).")
    groups = history_frame.groupby("method", sort=False) if "method" in columns else [("", history_frame)]
    line_styles = ("-", "--", ":", "-.")

    fig = _new_figure(10.0, 4.0)
    loss_axes, metric_axes = fig.subplots(1, 2)
    for method, frame in groups:
        style = method_style(method) if method else {"color": None, "marker": "o", "linestyle": "-"}
        prefix = f"{method} " if method else ""
        loss_axes.plot(frame["epoch"], frame["loss"], **style, markersize=3, label=f"{prefix}loss")
        for metric, line in zip(metric_columns, line_styles * len(metric_columns)):  # line style: the metric
            rows = frame[frame[metric].notna()]
            metric_axes.plot(rows["epoch"], rows[metric], color=style["color"], marker=style["marker"],
                             linestyle=line, markersize=3, label=f"{prefix}{metric}")  # fmt: skip
    loss_axes.set_xlabel("epoch")
    loss_axes.set_ylabel("training loss (unitless)")
    loss_axes.set_title("training loss")
    metric_axes.set_xlabel("epoch")
    metric_axes.set_ylabel("validation metric (0 to 1)")
    metric_axes.set_title("validation retrieval quality")
    _legend_outside(fig, metric_axes if metric_columns else loss_axes)
    return fig


def _mean_and_spread(frame, x: str, y: str):
    """Per ``x`` value, the mean and standard deviation (0 for one run) of ``y`` over the rows (seeds)."""
    stats = frame.dropna(subset=[y]).groupby(x)[y].agg(["mean", "std"])
    return stats.index.to_numpy(), stats["mean"].to_numpy(), stats["std"].fillna(0.0).to_numpy()


def _band(mean: np.ndarray, spread: np.ndarray, values: np.ndarray):
    """The band drawn around a mean over runs: mean -+ spread, cut at 0 when no run's value (``values``, every value
    drawn) is negative: a loss or a precision cannot be, but three seeds with one outlier put mean - std below 0 (a
    loss ratio of -0.1 on `standard-fine`'s convergence figure, a reader audit)."""
    lower, drawn = mean - spread, np.asarray(values, dtype=float)
    drawn = drawn[~np.isnan(drawn)]  # epochs without an evaluation hold NaN; none drawn: nothing to cut at
    return (np.maximum(lower, 0.0) if drawn.size and drawn.min() >= 0 else lower), mean + spread


def _mean_and_band(frame, x: str, y: str):
    """Per ``x`` value, the mean of ``y`` over the rows (seeds) and its :func:`_band` (mean -+ std, no width for one
    run)."""
    x_values, mean, spread = _mean_and_spread(frame, x, y)
    return (x_values, mean, *_band(mean, spread, frame[y].to_numpy(dtype=float)))


def plot_convergence(history_frame, metrics: Sequence[str] | None = None, group: str = "label") -> Figure:
    """The paper's convergence figure: training loss and validation mAP against the epoch, per code length.

    The loss of each run is drawn relative to its first epoch's (losses of different methods are on different
    scales, CRH's cross-entropy far above CSQ's BCE, so shapes compare and none flattens the others).

    One row of panels per code length (column ``bits``), one panel for the loss and one per metric, one
    line per ``group`` value (method); several runs of a group (seeds) are drawn as their mean with a
    +-1 std band, cut at 0 when no run is negative (:func:`_band`).

    Parameters
    ----------
    history_frame : pandas.DataFrame
        Stacked training histories with columns ``bits``, ``epoch``, ``loss``, ``group`` and the metrics
        (``shc.results.history_rows``); metrics are NaN on epochs without evaluation.
    metrics : sequence of str, optional
        Metric columns, by default the tie-aware mAP columns (else those starting with "mAP").
    group : str
        The column naming a line (its style is :func:`method_style` of the value).
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame):
        raise TypeError("history_frame must be a pandas DataFrame (shc.results.history_rows(configs)).")
    columns = history_frame.columns
    metric_columns = list(metrics) if metrics is not None else _default_map_columns(columns)
    missing = [c for c in ("bits", "epoch", "loss", group, *metric_columns) if c not in columns]
    if missing or history_frame.empty:
        raise ValueError(f"history_frame needs rows and the columns {missing or ['bits', 'epoch', 'loss']} "
                         f"(shc.results.history_rows gives them); it has {list(columns)}.")  # fmt: skip
    bits_values = sorted(history_frame["bits"].unique())
    panels = ["loss", *metric_columns]
    # each run's loss relative to its first epoch: losses of different methods live on different scales (CRH's
    # cross-entropy is 100x CSQ's BCE), so on one absolute axis one method flattens every other (issue 38)
    runs = [column for column in (group, "bits", "seed") if column in columns]
    first = history_frame.sort_values("epoch").groupby(runs, sort=False)["loss"].transform("first")
    history_frame = history_frame.assign(loss=history_frame["loss"] / first.where(first.abs() > 0))
    history_frame, share = _epoch_x(history_frame, runs)
    integer, label, note = not share, _epoch_label(history_frame, share), None
    spans = _budgets_by_bits(history_frame) if share else {}
    if len(set(spans.values())) > 1:  # the rows share one x axis: name each length's budgets once, under it all
        label = "epoch / budget"
        note = "budgets: " + "; ".join(f"{q} bits, {span}" for q, span in spans.items())

    fig = _new_figure(3.1 * len(panels) + 1.6, 2.5 * len(bits_values) + 0.4)
    grid = fig.subplots(len(bits_values), len(panels), sharex=True, squeeze=False)
    for row, q in enumerate(bits_values):
        lines = history_frame.loc[history_frame["bits"] == q, group].nunique()
        for line, (name, frame) in enumerate(history_frame[history_frame["bits"] == q].groupby(group, sort=False)):
            style = method_style(str(name))
            for column, panel in enumerate(panels):
                x, mean, lower, upper = _mean_and_band(frame, "epoch", panel)
                axes = grid[row, column]
                spacing = _marker_spacing(x, mean, line, lines)
                axes.plot(x, mean, **style, **spacing, label=str(name), zorder=_zorder(style))
                axes.fill_between(x, lower, upper, color=style["color"], alpha=0.2, linewidth=0)
        for column, panel in enumerate(panels):
            axes = grid[row, column]
            axes.set_title(f"{q} bits: {'training loss / epoch 1' if panel == 'loss' else _metric_title(panel)}",
                           fontsize=10)
            # at most five ticks: "80 100 120 140 160" touched on a 3.1-inch panel (a reader audit, 2026-12-04)
            axes.xaxis.set_major_locator(MaxNLocator(nbins=5, integer=integer))
        grid[row, 0].set_ylabel("loss relative to epoch 1")
    for axes in grid[-1]:
        axes.set_xlabel(label)
    if note:
        fig.supxlabel(note, fontsize=9)
    _legend_outside(fig, grid[0, 0], title="method" if group in ("label", "method") else group)
    return fig


#: Curve kinds of :func:`curve_frame`: the x column in the tidy frame and the keys of the metric arrays
#: (``shc.metrics.evaluate`` / ``shc.results.load_metrics``) for x, precision and recall.
CURVE_KINDS: dict[str, tuple[str, str, str, str]] = {
    # precision@K and recall@K, expected over random orders within Hamming ties (shc.evaluation)
    "k": ("k", "k", "tie_aware_precision@k", "tie_aware_recall@k"),
    "radius": ("radius", "pr_radius", "pr_precision", "pr_recall"),  # PR within Hamming radius r (no ties)
    "rank": ("rank", "rank_k", "tie_aware_rank_precision", "tie_aware_rank_recall"),  # PR at ranking cut-offs
    # the same two with ties broken by database index (the DeepHash-pytorch protocol)
    "k-by-index": ("k", "k", "precision@k", "recall@k"),
    "rank-by-index": ("rank", "rank_k", "rank_precision", "rank_recall"),
}


_RUN_COLUMNS = ("method", "bits", "seed")


def curve_frame(runs, kind: str):
    """Tidy long table of one kind of retrieval curve over runs: ``method, bits, seed, <x>, precision, recall``.

    Parameters
    ----------
    runs : iterable of mappings
        One per run: ``"method"`` (the legend label, e.g. ``shc.results.run_label(config)``), ``"bits"``,
        ``"seed"`` and the metric arrays of ``shc.metrics.evaluate`` (e.g. ``{**identity, **load_metrics(c)}``).
    kind : {"k", "radius", "rank"}
        precision@K / recall@K (x column ``k``), the Hamming-radius PR curve (``radius``) or the
        rank-based PR curve (``rank``: the cut-off n of the ranking), see :data:`CURVE_KINDS`.

    Returns
    -------
    pandas.DataFrame
        One row per run and x value; precision is NaN where undefined (a radius retrieving nothing).
    """
    import pandas as pd

    if kind not in CURVE_KINDS:
        raise ValueError(f"unknown curve kind {kind!r}; choose one of {sorted(CURVE_KINDS)}.")
    x_name, x_key, precision_key, recall_key = CURVE_KINDS[kind]
    frames = []
    for number, run in enumerate(runs):
        missing = [key for key in (*_RUN_COLUMNS, x_key, precision_key, recall_key) if key not in run]
        if missing:
            raise KeyError(f"run {number} lacks {missing}; pass method, bits, seed and the arrays of evaluate() "
                           f"(kind {kind!r} needs {x_key!r}, {precision_key!r}, {recall_key!r}).")  # fmt: skip
        x = np.asarray(run[x_key])
        precision = np.asarray(run[precision_key], dtype=np.float64)
        recall = np.asarray(run[recall_key], dtype=np.float64)
        if not x.ndim == 1 or precision.shape != x.shape or recall.shape != x.shape:
            raise ValueError(f"run {number}: {x_key}, {precision_key} and {recall_key} must be 1-D of equal length; "
                             f"got {x.shape}, {precision.shape}, {recall.shape}.")  # fmt: skip
        frames.append(pd.DataFrame({"method": str(run["method"]), "bits": int(run["bits"]), "seed": int(run["seed"]),
                                    x_name: x, "precision": precision, "recall": recall}))  # fmt: skip
    if not frames:
        raise ValueError("runs is empty; pass at least one run's metrics.")
    return pd.concat(frames, ignore_index=True)


def _curve_x(frame) -> str:
    names = list(dict.fromkeys(name for name, *_ in CURVE_KINDS.values() if name in frame.columns))
    if len(names) != 1 or not {*_RUN_COLUMNS, "precision", "recall"} <= set(frame.columns):
        raise ValueError(f"frame must come from curve_frame (method, bits, seed, one of k/radius/rank, precision, "
                         f"recall); it has {list(frame.columns)}.")  # fmt: skip
    return names[0]


def _at_bits(frame, bits: int | None):
    values = sorted(frame["bits"].unique())
    if bits is None:
        if len(values) != 1:
            raise ValueError(f"the frame holds several code lengths {values}; pass bits=one of them.")
        return frame
    if bits not in values:
        raise ValueError(f"no rows with bits={bits}; the frame has {values}.")
    return frame[frame["bits"] == bits]


def curve_arrays(frame, y: str, bits: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``x, {method: (seeds, n) array}`` of a :func:`curve_frame` column, the input of :func:`plot_curves`.

    Parameters
    ----------
    frame : pandas.DataFrame from :func:`curve_frame`
    y : {"precision", "recall"}
    bits : int, optional
        The code length to draw (needed when the frame holds several).
    """
    x_name = _curve_x(frame)
    if y not in ("precision", "recall"):
        raise ValueError(f"y must be 'precision' or 'recall', got {y!r}.")
    rows = _at_bits(frame, bits)
    x = np.sort(rows[x_name].unique())
    curves = {}
    for method, group in rows.groupby("method", sort=False):
        table = group.pivot(index="seed", columns=x_name, values=y)
        if table.shape[1] != x.size or table.isna().all(axis=None):
            raise ValueError(f"the runs of {method!r} do not share the x values of the others; evaluate them alike.")
        curves[str(method)] = table.reindex(columns=x).to_numpy(dtype=np.float64)
    return x, curves


def pr_arrays(frame, bits: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """``{method: {"precision", "recall"}}`` averaged over seeds at each x (NaN left out), for :func:`plot_pr_curves`."""
    x_name = _curve_x(frame)
    rows = _at_bits(frame, bits)
    means = rows.groupby(["method", x_name], sort=False)[["precision", "recall"]].mean().reset_index()
    return {str(method): {"precision": group.sort_values(x_name)["precision"].to_numpy(),
                          "recall": group.sort_values(x_name)["recall"].to_numpy()}
            for method, group in means.groupby("method", sort=False)}  # fmt: skip


def arrays_frame(x, ys_by_method: Mapping[str, np.ndarray], x_name: str = "x", y_name: str = "y", **constants):
    """Tidy long table of the inputs of :func:`plot_curves`: ``method, [constants], run, <x_name>, <y_name>``.

    For figures drawn from arrays (e.g. a loss against the cycle); ``run`` numbers the rows of a
    (runs, n) array (seeds in the order given). ``constants`` (e.g. ``bits=32``) become columns.
    """
    import pandas as pd

    x_values = np.asarray(x)
    frames = []
    for method, values in ys_by_method.items():
        runs = np.atleast_2d(np.asarray(values, dtype=np.float64))
        if runs.ndim != 2 or runs.shape[1] != x_values.size:
            raise ValueError(f"ys_by_method[{method!r}] has shape {np.shape(values)}; expected ({x_values.size},) "
                             f"or (runs, {x_values.size}).")  # fmt: skip
        for run, row in enumerate(runs):
            frames.append(pd.DataFrame({"method": str(method), **constants, "run": run, x_name: x_values, y_name: row}))
    if not frames:
        raise ValueError("ys_by_method is empty; pass at least one method -> values.")
    return pd.concat(frames, ignore_index=True)


def convergence_frame(history_frame, metric: str = "mAP@ALL", group: str = "label"):
    """Tidy ``method, bits, seed, epoch, <metric>`` rows of the epochs where ``metric`` was evaluated.

    Parameters
    ----------
    history_frame : pandas.DataFrame
        Stacked histories (``shc.results.history_rows``): columns ``bits``, ``seed``, ``epoch``, ``group``, ``metric``.
    metric : str
        A metric column, e.g. "mAP@ALL", or "loss".
    group : str
        The column naming the method (legend label).
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame):
        raise TypeError("history_frame must be a pandas DataFrame (shc.results.history_rows(configs)).")
    missing = [c for c in ("bits", "seed", "epoch", group, metric) if c not in history_frame.columns]
    if missing:
        raise ValueError(f"history_frame lacks {missing}; it has {list(history_frame.columns)}.")
    rows = history_frame[history_frame[metric].notna()]
    frame = rows[[group, "bits", "seed", "epoch", metric]].rename(columns={group: "method"})
    return frame.astype({"method": str}).reset_index(drop=True)


def plot_convergence_overlay(frame, title: str | None = None) -> Figure:
    """Every method's curve of :func:`convergence_frame` on one shared axis per code length.

    Several seeds are drawn as their mean with a +-1 std band, cut at 0 when no run is negative (:func:`_band`); the
    styles are :func:`method_style`.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or list(frame.columns[:4]) != ["method", "bits", "seed", "epoch"]:
        raise ValueError("frame must come from convergence_frame (columns method, bits, seed, epoch, <metric>).")
    if frame.empty:
        raise ValueError("frame is empty: no epoch evaluated the metric.")
    metric = frame.columns[4]
    bits_values = sorted(frame["bits"].unique())
    frame, share = _epoch_x(frame, ["method", "bits", "seed"])
    integer = not share
    fig = _new_figure(4.6 * len(bits_values) + 1.8, 4.0)
    grid = np.atleast_1d(fig.subplots(1, len(bits_values), sharey=True, squeeze=False)[0])
    for axes, q in zip(grid, bits_values):
        lines = frame.loc[frame["bits"] == q, "method"].nunique()
        for line, (method, group) in enumerate(frame[frame["bits"] == q].groupby("method", sort=False)):
            style = method_style(str(method))
            x, mean, lower, upper = _mean_and_band(group, "epoch", metric)
            spacing = _marker_spacing(x, mean, line, lines)
            axes.plot(x, mean, **style, **spacing, label=str(method), zorder=_zorder(style))
            axes.fill_between(x, lower, upper, color=style["color"], alpha=0.15, linewidth=0)
        axes.set_title(f"{q} bits", fontsize=10)
        axes.set_xlabel(_epoch_label(frame[frame["bits"] == q], share))  # each panel its own length's budgets
        if integer:
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    grid[0].set_ylabel(_metric_title(metric) if metric != "loss" else "training loss (unitless)")
    if title:
        fig.suptitle(title)
    _legend_outside(fig, grid[0], title="method")
    return fig


#: Budgets this many times apart put each run on the share of its own budget: on an epoch axis, `standard-fine`'s
#: 120-epoch runs filled an eighth of the 64-bit panels beside LTH's 960, and their last epochs, where a reader looks
#: for a plateau, a sixteenth (a reader audit, issue 38).
BUDGET_SHARE_RATIO = 4


def _epoch_x(frame, runs: Sequence[str]):
    """The x of a convergence figure: the epoch, or, where the runs' budgets (each run's last epoch, which is always
    evaluated) are :data:`BUDGET_SHARE_RATIO` or more times apart, the epoch as a share of the run's own budget, so
    every run spans the panel and each one's end, where convergence shows, is as wide as any other's. Returns the
    frame with that ``epoch`` column (and each run's ``budget`` where it is a share) and whether it is a share."""
    budget = frame.groupby(list(runs), sort=False)["epoch"].transform("max")
    if frame["epoch"].min() < 1 or budget.max() < BUDGET_SHARE_RATIO * budget.min():
        return frame, False
    return frame.assign(epoch=frame["epoch"] / budget, budget=budget), True


def _epoch_label(frame, share: bool) -> str:
    """The x label of :func:`_epoch_x`'s frame (or of one code length's part of it): ``epoch``, or the span of the
    budgets the shares are of (an audit found a 16-bit panel labelled "120 to 960 epochs" where its runs trained 120
    and 480, the 960 being the 32-bit LTH's: each panel is labelled from its own runs)."""
    return f"epoch / budget ({_budget_span(frame['budget'])})" if share else "epoch"


def _budget_span(budgets) -> str:
    low, high = int(budgets.min()), int(budgets.max())
    return f"{low} epochs" if low == high else f"{low} to {high} epochs"


def _budgets_by_bits(frame) -> dict[int, str]:
    """Each code length's span of budgets (:func:`_epoch_x`'s frame with shares)."""
    return {int(q): _budget_span(part["budget"]) for q, part in frame.groupby("bits", sort=True)}


def _zorder(style: dict) -> float:
    """Dotted and dashed lines above solid ones: two methods with nearly equal curves (random and CSQ share
    CSQ's loss) stay both visible, the broken line showing the solid one through its gaps."""
    return 2.0 if style.get("linestyle") in ("-", "solid") else 2.5


def interval_frame(per_seed, metric: str, confidence: float = 0.95):
    """Per method and code length: the mean of ``metric`` over seeds and its ``confidence`` t-interval
    (``method, bits, metric, mean, low, high, n, confidence``; one seed gives NaN bounds). ``per_seed`` is the second
    frame of :func:`shc.stats.summary_frame`."""
    import pandas as pd

    confidence = confidence_level(confidence)
    rows = []
    chosen = per_seed[per_seed["metric"] == metric]
    for (method, bits), group in chosen.groupby(["method", "bits"], sort=False):
        mean, low, high = mean_interval(group["value"].to_numpy(dtype=float), confidence)
        rows.append({"method": method, "bits": int(bits), "metric": metric, "mean": mean, "low": low, "high": high,
                     "n": len(group), "confidence": confidence})
    return pd.DataFrame(rows)


def _interval_words(frame) -> str:
    """What the error bars of :func:`plot_metric_by_bits` are, read from the frame: the confidence it was computed
    at, and which points have none (one seed)."""
    seeds = frame["n"] if "n" in frame else None
    if seeds is not None and (seeds <= 1).all():
        return "one seed: no interval"
    level = frame["confidence"].iloc[0] if "confidence" in frame else 0.95
    words = f"mean over seeds, {100 * float(level):g}% t-interval"
    if seeds is not None and (seeds <= 1).any():
        words += "; one-seed points have none"
    return words


def plot_metric_by_bits(frame, ylabel: str, title: str | None = None,
                        styles: Mapping[str, str] | None = None) -> Figure:
    """One line per method of ``frame`` (:func:`interval_frame`): the mean against the code length, with its
    interval as error bars (none where one seed gives no interval). ``title`` names what is shown; the figure's
    title adds what the bars are, read from the frame (its confidence, and the points of one seed).

    ``styles`` maps a displayed name to the registered method whose style it takes (e.g. ``{"d only (MDS
    centers)": "distance"}``), so display labels keep each method's own colour and marker; names it does not
    list are styled by themselves (:func:`method_style`)."""
    fig = _new_figure(5.6, 3.8)
    axes = fig.subplots()
    for method, group in frame.groupby("method", sort=False):
        group = group.sort_values("bits")
        style = method_style((styles or {}).get(str(method), str(method)))
        errors = np.vstack([group["mean"] - group["low"], group["high"] - group["mean"]])
        errors = np.where(np.isfinite(errors), errors, np.nan)  # no interval (one seed): no bar, not a bar of 0
        axes.errorbar(group["bits"], group["mean"], yerr=errors, capsize=4, label=str(method),
                      zorder=_zorder(style), **style)
    axes.set_xscale("log", base=2)
    axes.set_xticks(sorted(frame["bits"].unique()), [str(q) for q in sorted(frame["bits"].unique())])
    axes.set_xlabel("code length q (bits)")
    axes.set_ylabel(ylabel)
    axes.set_title(f"{title or f'{ylabel} by code length'} ({_interval_words(frame)})")
    axes.legend()
    return fig
