"""Reading the pipeline's artifacts: what the report notebooks show. Read-only.

Everything here reads what :mod:`shc.pipeline` wrote and turns it into frames, tables and curves; it
imports no trainer and never computes a stage. A missing artifact raises :class:`~shc.runs.MissingRunError`
naming the run and the command that computes it (``python -m shc.reports --preset NAME`` computes every
run its notebooks read before running them):

- loaders of one run's files: :func:`load_stage1_metrics`, :func:`load_center_quality`,
  :func:`load_center_history`, :func:`load_metrics`, :func:`load_history`, :func:`load_codes`;
- one row per run or per epoch: :func:`result_rows`, :func:`history_rows`, :func:`center_rows`,
  :func:`center_history_rows`;
- tables in the paper's layouts, mean ± std over seeds with best bold and second underlined:
  :func:`retrieval_table` (Tables 4-8), :func:`center_table` (Table 3), :func:`classifier_table` (Table 2);
- curves by method (:func:`curves_by_method`, :func:`pr_curves_by_method`) and example retrievals
  (:func:`top_results`).
"""

from __future__ import annotations

import contextlib

import json
import sys
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from shc.runs import MissingRunError  # noqa: F401  (what every loader here raises)
from shc.evaluation import EVALUATION_VERSION, PRIMARY_METRIC
from shc.runs import MAP_KEYS, TIE_AWARE_MAP_KEYS, RunConfig, StaleRunError, artifact, load_data
from shc.runs import method_spec as _method
from shc.runs import other_similarity as _other_similarity


#: The mAP columns every retrieval table shows: tie-aware (primary) beside ties by database index.
REPORTED_MAP_KEYS = (*TIE_AWARE_MAP_KEYS, *MAP_KEYS)
#: Reachability of each run (:mod:`shc.reachability`) on the training and query sets: ``result_rows`` columns and
#: ``--metrics`` names (NaN for runs trained before issue 35, which stored no training codes).
REACH_KEYS = tuple(f"{split}_{key}" for split in ("train", "query")
                   for key in ("center_hit_rate", "center_bit_error", "majority_bit_error"))


def run_label(config: RunConfig) -> str:
    """The name of a run in tables and legends: the method, plus the S source when it is not the default.

    ``"shc"`` for the paper's data-dependent S, ``"shc (text S)"`` for the text-embedding ablation.
    """
    return f"{config.method} ({config.similarity} S)" if _other_similarity(config) else config.method


_artifact = artifact


def load_similarity(config: RunConfig) -> np.ndarray:
    """Stage 1's ``similarity.npy``: the (C, C) class-similarity matrix S of ``config.similarity``."""
    return np.load(_artifact(config, "stage1", "similarity.npy"))


def has_centers(config: RunConfig) -> bool:
    """Whether ``config``'s method has hash centers (a stage 2)."""
    return _method(config).centers is not None


def load_centers(config: RunConfig) -> np.ndarray:
    """Stage 2's ``centers.npy``: the (C, q) +-1 hash centers of ``config``'s method."""
    _require_centers(config)
    return np.load(_artifact(config, "stage2", "centers.npy"))


def _require_centers(config: RunConfig) -> None:
    if _method(config).centers is None:
        raise ValueError(f"method {config.method!r} has no hash centers (no stage 2); pick a center method.")


def load_stage1_metrics(config: RunConfig) -> dict[str, Any]:
    """Stage 1's ``metrics.json``: the S source and, for "logits", the classifier's validation and test
    (query-set) accuracy, the paper's Table 2."""
    return json.loads(_artifact(config, "stage1", "metrics.json").read_text())


def load_center_quality(config: RunConfig) -> dict[str, Any]:
    """Stage 2's ``quality.json``: d_min (Eq. 44), mean distance, generation ``seconds`` and, for the
    semantic methods, S_loss (Eq. 45 per entry) and Spearman against the S the centers were built from."""
    _require_centers(config)
    return json.loads(_artifact(config, "stage2", "quality.json").read_text())


def load_center_history(config: RunConfig) -> pd.DataFrame:
    """Stage 2's ``history.json`` as a DataFrame, one row per outer cycle of Algorithm 1 (cycle 0 is the
    MDS start): objective (Eq. 22), s_loss, d_min, violated pairs, proxy and slack residuals, accepted and
    rejected column updates. Empty for generators without cycles (all but "shc")."""
    import pandas as pd

    _require_centers(config)
    return pd.DataFrame(json.loads(_artifact(config, "stage2", "history.json").read_text()))


def load_metrics(config: RunConfig) -> dict[str, Any]:
    """Stage 3's ``metrics.json`` (:func:`shc.evaluation.evaluate_codes`): on the query set, mAP@100/1000/ALL
    tie-aware (``tie_aware_mAP@...``, primary) and with ties by index, P@K and R@K and the rank-based PR curve
    in both rankings, the Hamming-radius PR curve, reachability (:mod:`shc.reachability`, runs since issue 35);
    the selected epoch, the training time and ``val_tie_aware_mAP@ALL``, the validation score at the selected
    epoch (read from ``train/history.json`` for runs trained before ``metrics.json`` recorded it).

    A run measured by an older evaluation raises a :class:`~shc.runs.MissingRunError` naming the command that
    re-evaluates it from its stored codes (no retraining)."""
    path = _artifact(config, "stage3", "metrics.json")
    try:
        metrics = json.loads(path.read_text())
    except ValueError as error:
        raise ValueError(f"{path} is damaged ({error}); the pipeline moves a damaged stage aside and recomputes it: "
                         "rerun `python -m shc.pipeline --preset <preset>` (or shc.pipeline.run(config)).") from None
    if metrics.get("evaluation", 0) < EVALUATION_VERSION:
        raise StaleRunError(
            f"{_artifact(config, 'stage3', 'metrics.json')} was measured by evaluation version "
            f"{metrics.get('evaluation', 'before 3')}, older than this package's {EVALUATION_VERSION} (tie-aware "
            "metrics). Re-evaluate it from its stored codes, nothing is retrained: `python -m shc.pipeline --preset "
            "<preset> --reevaluate` (or any pipeline/reports command that reads the run), or in Python "
            "`shc.pipeline.reevaluate(config)`.")
    validation = f"val_{PRIMARY_METRIC}"
    if validation not in metrics:  # runs trained before it was recorded: the same number, from their history
        history = _artifact(config, "stage3", "metrics.json").parent / "train" / "history.json"
        with contextlib.suppress(OSError, ValueError, KeyError):
            record = json.loads(history.read_text())
            if record["select_metric"] == PRIMARY_METRIC and record["best_metric"] is not None:
                metrics[validation] = record["best_metric"]
    return metrics


def load_history(config: RunConfig) -> pd.DataFrame:
    """Stage 3's ``train/history.csv`` as a DataFrame: one row per epoch with ``epoch``, ``loss``, ``lr``,
    ``seconds``, and on evaluated epochs ``eval_seconds`` and the validation mAP@100/1000/ALL (NaN on
    the other epochs)."""
    import pandas as pd

    return pd.read_csv(_artifact(config, "stage3", "train/history.csv"))


def load_codes(config: RunConfig) -> dict[str, np.ndarray]:
    """Stage 3's ``codes.npz``: ``query_codes``, ``query_labels``, ``database_codes``, ``database_labels``
    (codes are +-1 int8, rows in split order)."""
    with np.load(_artifact(config, "stage3", "codes.npz")) as archive:
        return {key: archive[key] for key in archive.files}


IDENTITY_COLUMNS = ["dataset", "method", "similarity", "label", "bits", "seed"]


def _identity(config: RunConfig) -> dict[str, Any]:
    return {"dataset": config.dataset, "method": config.method,
            "similarity": config.similarity if _method(config).needs_similarity else None,
            "label": run_label(config), "bits": config.bits, "seed": config.seed}


def result_rows(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """One row per config with its identity and stage-3 headline numbers (a DataFrame).

    Columns: dataset, method, similarity (None for methods that use no S), label (:func:`run_label`), bits,
    seed, tie_aware_mAP@100, tie_aware_mAP@1000, tie_aware_mAP@ALL (expected over random orders within
    Hamming ties: the primary numbers), mAP@100, mAP@1000, mAP@ALL (ties by database index), the reachability
    numbers :data:`REACH_KEYS` and ``reach_targets`` (what they are measured against), selected_epoch,
    train_seconds. The runs must exist (:func:`run_grid`).
    """
    import pandas as pd

    rows = []
    for config in configs:
        metrics = load_metrics(config)
        rows.append({**_identity(config), **{key: metrics[key] for key in REPORTED_MAP_KEYS},
                     **{key: metrics.get(key, float("nan")) for key in REACH_KEYS},
                     "reach_targets": metrics.get("reach_targets"),
                     "selected_epoch": metrics["selected_epoch"], "train_seconds": metrics["train_seconds"]})
    return pd.DataFrame(rows)


def history_rows(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """The stage-3 training histories of ``configs`` stacked, with the identity columns of
    :func:`result_rows` in front (a DataFrame, one row per config and epoch)."""
    import pandas as pd

    frames = [load_history(config).assign(**_identity(config)) for config in configs]
    if not frames:
        raise ValueError("configs is empty; pass the configs whose histories to stack.")
    frame = pd.concat(frames, ignore_index=True)
    return frame[IDENTITY_COLUMNS + [column for column in frame.columns if column not in IDENTITY_COLUMNS]]


def center_rows(configs: Iterable[RunConfig], similarity: str = "logits") -> pd.DataFrame:
    """Quality of the hash centers of ``configs``, all measured against one S (a DataFrame, one row each).

    Every center set is scored by :func:`shc.centers.center_quality` against the stage-1 S of source
    ``similarity`` for its seed, as the paper's Table 3 scores every generator against the data-dependent
    S; so generators that ignore S get an S_loss too.
    Configs of methods without hash centers are skipped.

    Returns
    -------
    pandas.DataFrame
        The identity columns of :func:`result_rows`, ``gv_distance`` (Eq. 13), ``d_min`` (Eq. 44),
        ``num_at_d_min``, ``mean_distance``, ``s_loss`` (Eq. 45 per entry: the mean of
        (S - H H^T / q)^2, the scale of the paper's table), ``spearman`` (off-diagonal S vs H H^T / q) and
        ``seconds`` (stage-2 generation time).
    """
    import pandas as pd

    from shc.centers import center_quality, gv_min_distance

    rows = []
    for config in configs:
        if _method(config).centers is None:
            continue
        centers = load_centers(config)
        S = load_similarity(config.replace(similarity=similarity))
        rows.append({**_identity(config), "gv_distance": gv_min_distance(*centers.shape),
                     **center_quality(centers, S), "seconds": load_center_quality(config)["seconds"]})
    if not rows:
        raise ValueError("none of the configs uses hash centers; pass configs of random/csq/mds/shc/semantic.")
    return pd.DataFrame(rows)


def center_history_rows(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """The per-cycle records of Algorithm 1 (:func:`load_center_history`) of the configs whose generator
    has cycles ("shc"), stacked with the identity columns and the target distance ``gv_distance``
    (Eq. 13) in front."""
    import pandas as pd

    from shc.centers import gv_min_distance

    frames = []
    for config in configs:
        if _method(config).centers == "shc":
            gv_distance = gv_min_distance(load_data(config).num_classes, config.bits)
            frames.append(load_center_history(config).assign(**_identity(config), gv_distance=gv_distance))
    if not frames:
        raise ValueError("none of the configs generates its centers with Algorithm 1; include method 'shc'.")
    frame = pd.concat(frames, ignore_index=True)
    return frame[IDENTITY_COLUMNS + [column for column in frame.columns if column not in IDENTITY_COLUMNS]]


def center_lessons(configs: Iterable[RunConfig], seed: int | None = None) -> pd.DataFrame:
    """:func:`shc.centers.geometry_lesson` at each code length of ``configs`` (one seed, default the first met), on
    the preset's own S: collisions of the semantic-only centers, Algorithm 1's oscillation and SHC's movement from
    its MDS start, from the runs of methods ``semantic``, ``shc`` and ``mds`` that exist. Indexed by (C, q), the
    frame :func:`shc.findings.geometry_findings` reads."""
    import pandas as pd

    from shc.centers import geometry_lesson

    configs = [config for config in configs if _method(config).centers is not None and config.similarity
               in (None, "logits")]
    if not configs:
        raise ValueError("no config with hash centers; include the methods semantic, shc and mds.")
    seed = configs[0].seed if seed is None else seed
    rows = []
    for q in sorted({config.bits for config in configs}):
        found = {config.method: config for config in configs if config.bits == q and config.seed == seed
                 and _computed(config, "stage2", "centers.npy")}
        centers = {method: load_centers(found[method]) for method in ("semantic", "shc", "mds") if method in found}
        lesson = geometry_lesson(semantic=centers.get("semantic"),
                                 shc=centers.get("shc") if "mds" in centers else None, mds=centers.get("mds"),
                                 shc_s_loss=load_center_history(found["shc"])["s_loss"].to_numpy()
                                 if "shc" in found else None)
        if lesson:
            rows.append({"C": load_data(next(iter(found.values()))).num_classes, "q": q, **lesson})
    if not rows:
        raise ValueError(f"no centers of semantic, shc or mds at seed {seed}; run stage 2 for them first.")
    return pd.DataFrame(rows).set_index(["C", "q"])


def _computed(config: RunConfig, stage: str, name: str) -> bool:
    try:
        artifact(config, stage, name)
    except MissingRunError:
        return False
    return True


def center_sets(configs: Iterable[RunConfig], bits: int, seed: int | None = None) -> dict[str, np.ndarray]:
    """The (C, q) centers of every center method among ``configs`` at one code length and seed (default:
    the first seed met), by :func:`run_label`."""
    chosen = [config for config in configs if config.bits == bits and _method(config).centers is not None]
    if not chosen:
        raise ValueError(f"no config with hash centers has bits={bits}; pick one of the grid's code lengths.")
    seed = chosen[0].seed if seed is None else seed
    sets = {run_label(config): load_centers(config) for config in chosen if config.seed == seed}
    if not sets:
        raise ValueError(f"no config with hash centers has bits={bits} and seed={seed}; pick one of the grid's seeds.")
    return sets


def classifier_table(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """The stage-1 classifier's accuracy per dataset, mean and std over seeds (the paper's Table 2).

    Reads the "logits" stage 1 of every (dataset, seed) among ``configs``. Test accuracy is measured on the query split (the paper's test set), validation accuracy on
    the validation split. Returns a DataFrame indexed by dataset; std is NaN for a single seed.
    """
    import pandas as pd

    rows, seen = [], set()
    for config in configs:
        if (config.dataset, config.seed) in seen:
            continue
        seen.add((config.dataset, config.seed))
        logits_config = config.replace(similarity="logits")
        metrics = load_stage1_metrics(logits_config)
        rows.append({"dataset": config.dataset, "seed": config.seed, "test": metrics["test_accuracy"],
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


SOURCE_NAMES = {"logits": "data-dependent S", "text": "text S", "hierarchy": "hierarchy S", "labels": "label S"}


def similarity_sources(configs: Iterable[RunConfig],
                       sources: Sequence[str] = ("logits", "text", "hierarchy")) -> dict[str, np.ndarray]:
    """The class-similarity matrices a report compares, by display name (:data:`SOURCE_NAMES`).

    "logits" gives the data-dependent S of every seed among ``configs`` ("data-dependent S" for the first
    seed, "data-dependent S, seed k" for the others, to show how stable S is); the other sources are taken
    for the first config only (they do not depend on the seed). "hierarchy" is left out for datasets
    without one.
    """
    configs = list(configs)
    if not configs:
        raise ValueError("configs is empty; pass at least one config (one per seed for the data-dependent S).")
    unknown = [source for source in sources if source not in SOURCE_NAMES]
    if unknown:
        raise ValueError(f"unknown similarity source(s) {unknown}; choose from {list(SOURCE_NAMES)}.")
    first, matrices = configs[0], {}
    for source in sources:
        if source == "logits":
            seeds = list(dict.fromkeys(config.seed for config in configs))
            for seed in seeds:
                name = SOURCE_NAMES[source] + ("" if seed == seeds[0] else f", seed {seed}")
                matrices[name] = load_similarity(first.replace(seed=seed, similarity=source))
        elif source != "hierarchy" or load_data(first).coarse_labels is not None:
            matrices[SOURCE_NAMES[source]] = load_similarity(first.replace(similarity=source))
    return matrices


# Results tables in the paper's layout ------------------------------------------------------
_LOWER_IS_BETTER = frozenset({"s_loss", "seconds", "train_seconds", "num_at_d_min",
                              *(key for key in REACH_KEYS if key.endswith("bit_error"))})
_INTEGER_VALUES = frozenset({"d_min", "gv_distance", "num_at_d_min", "selected_epoch"})
_VALUE_DIGITS = {"d_min": 1, "gv_distance": 1, "num_at_d_min": 1, "mean_distance": 2, "seconds": 3,
                 "train_seconds": 1, "selected_epoch": 1}
_VALUE_NAMES = {**{key: f"{key.removeprefix('tie_aware_')} (tie-aware)" for key in TIE_AWARE_MAP_KEYS},
                **{key: f"{key} (ties by index)" for key in MAP_KEYS}, "s_loss": "S_loss",
                "mean_distance": "mean distance", "spearman": "Spearman", "gv_distance": "GV d", "num_at_d_min": "pairs at d_min", "train_seconds": "train seconds",
                "selected_epoch": "selected epoch",
                **{key: f"{key.split('_', 1)[1].replace('_', ' ')} ({key.split('_', 1)[0]})" for key in REACH_KEYS}}
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
        computed on the means as displayed, so equal-looking cells share a rank; NaN for empty cells.
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
    stats["shown"] = [round(float(m), p) for m, p in zip(stats["mean"], places)]
    stats["cell"] = [f"{m:.{p}f}" + (f" ± {s:.{p}f}" if n > 1 else "")
                     for m, s, n, p in zip(stats["mean"], stats["std"], stats["count"], places)]  # fmt: skip
    sign = np.where(stats["metric"].isin(_LOWER_IS_BETTER), 1.0, -1.0)
    competitors = [stats[key] for key in group_keys if key != row]
    stats["rank"] = (stats["shown"] * sign).groupby(competitors, dropna=False).rank(method="dense")

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


# Curves and example queries ----------------------------------------------------------------
_CURVE_AXES = {"precision@k": "k", "recall@k": "k", "tie_aware_precision@k": "k", "tie_aware_recall@k": "k",
               "pr_precision": "pr_radius", "pr_recall": "pr_radius", "rank_precision": "rank_k",
               "rank_recall": "rank_k", "tie_aware_rank_precision": "rank_k", "tie_aware_rank_recall": "rank_k"}


def curves_by_method(configs: Iterable[RunConfig], key: str, bits: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """A stage-3 curve of every run at one code length, stacked over seeds, for :func:`shc.plots.plot_curves`.

    Parameters
    ----------
    configs : iterable of RunConfig
        Runs that exist (:func:`run_grid`); those with another code length are ignored.
    key : {"precision@k", "recall@k", "pr_precision", "pr_recall"}
        The curve; its x values are K (retrieved items) or the Hamming radius 0..q.
    bits : int

    Returns
    -------
    x : (n,) array
    curves : dict label -> (seeds, n) array
    """
    if key not in _CURVE_AXES:
        raise ValueError(f"unknown curve {key!r}; choose one of {sorted(_CURVE_AXES)}.")
    x, curves = None, {}
    for config in configs:
        if config.bits != bits:
            continue
        metrics = load_metrics(config)
        values = np.asarray(metrics[_CURVE_AXES[key]])
        if x is not None and not np.array_equal(x, values):
            raise ValueError(f"the runs disagree on the x values of {key!r}; evaluate them with the same K list.")
        x = values
        curves.setdefault(run_label(config), []).append(np.asarray(metrics[key], dtype=np.float64))
    if x is None:
        raise ValueError(f"no config has bits={bits}; pick one of the grid's code lengths.")
    return x, {label: np.stack(runs) for label, runs in curves.items()}


def pr_curves_by_method(configs: Iterable[RunConfig], bits: int) -> dict[str, dict[str, np.ndarray]]:
    """Hamming-radius precision-recall curves at one code length, averaged over seeds at each radius
    (radii where no query of a seed retrieves anything are left out of that radius's mean), for
    :func:`shc.plots.plot_pr_curves`: label -> {"pr_precision", "pr_recall"}."""
    configs = list(configs)
    _, precision = curves_by_method(configs, "pr_precision", bits)
    _, recall = curves_by_method(configs, "pr_recall", bits)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN radius: the mean stays NaN, unplotted
        return {label: {"pr_precision": np.nanmean(precision[label], axis=0),
                        "pr_recall": np.nanmean(recall[label], axis=0)} for label in precision}


def curve_rows(configs: Iterable[RunConfig], kind: str):
    """The tidy table of one retrieval curve over every run: ``method, bits, seed, <x>, precision, recall``.

    ``kind`` is "k" (precision@K / recall@K), "radius" (precision-recall by Hamming radius) or "rank"
    (precision-recall at cut-offs of the Hamming ranking: the paper's figures); "k" and "rank" are expectations
    over random orders within Hamming ties, "k-by-index" and "rank-by-index" break ties by index. Exactly what
    the curve figures draw; save it beside them (``plots.save_figure(fig, stem, data=...)``).
    """
    from shc.plots import curve_frame

    return curve_frame(({**_identity(config), "method": run_label(config), **load_metrics(config)}
                        for config in configs), kind)


def class_ap_rows(configs: Iterable[RunConfig], bits: int, seed: int | None = None):
    """Per-class AP@ALL against the class's mean similarity to the others, one row per (method, class).

    Reads each run's stored per-query AP@ALL (``metrics.json``) and the data-dependent S of the seed
    (stage 1), for :func:`shc.plots.plot_class_ap`.
    """
    from shc.metrics import per_class_mean
    from shc.plots import class_ap_frame

    chosen = [config for config in configs if config.bits == bits]
    if not chosen:
        raise ValueError(f"no config has bits={bits}; pick one of the grid's code lengths.")
    seed = chosen[0].seed if seed is None else seed
    chosen = [config for config in chosen if config.seed == seed]
    data = load_data(chosen[0])
    labels = load_codes(chosen[0])["query_labels"]
    ap = {run_label(config): per_class_mean(np.asarray(load_metrics(config)["query_AP@ALL"]), labels,
                                            data.num_classes)[0] for config in chosen}
    S = load_similarity(chosen[0].replace(method="shc", similarity="logits"))
    return class_ap_frame(ap, S, class_names=data.class_names)


def hamming_top_k(query_codes: np.ndarray, database_codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` nearest database items of each query in Hamming distance, ties in database order (the
    ranking of :mod:`shc.metrics`), by an exact :class:`shc.retrieval.HashIndex` search.

    Parameters
    ----------
    query_codes : (n, q) array of +-1
    database_codes : (N, q) array of +-1
    k : int
        1 <= k <= N.

    Returns
    -------
    indices, distances : (n, k) int arrays
        Database indices, nearest first, and their Hamming distances (q - <b_i, b_j>) / 2 (Eq. 17).
    """
    from shc.retrieval import HashIndex

    queries, database = np.asarray(query_codes), np.asarray(database_codes)
    if queries.ndim != 2 or database.ndim != 2 or queries.shape[1] != database.shape[1]:
        raise ValueError(f"codes must be (n, q) and (N, q) with the same q, got {queries.shape} and {database.shape}.")
    if not 1 <= k <= database.shape[0]:
        raise ValueError(f"k must lie in [1, {database.shape[0]}] (the database size), got {k}.")
    distances, indices = HashIndex(queries.shape[1]).add(database).search(queries, k)  # ids = database indices
    return indices, distances


@dataclass
class ExampleQueries:
    """Example queries and their top-k retrieved database images (from :func:`top_results`)."""

    query_indices: np.ndarray  #: (n,) positions in the query split
    result_indices: np.ndarray  #: (n, k) positions in the database split, nearest first
    distances: np.ndarray  #: (n, k) Hamming distances
    correct: np.ndarray  #: (n, k) bool, the result shares a label with its query
    query_images: list[np.ndarray]
    result_images: list[list[np.ndarray]]
    query_titles: list[str]

    @property
    def precision(self) -> float:
        """Fraction of correct results over all shown queries (precision@k of these queries)."""
        return float(self.correct.mean())

    def frame(self):
        """Tidy ``query, rank, result, distance, correct`` rows: what the example figure shows."""
        import pandas as pd

        n, k = self.result_indices.shape
        return pd.DataFrame({"query": np.repeat(self.query_indices, k), "rank": np.tile(np.arange(1, k + 1), n),
                             "result": self.result_indices.reshape(-1), "distance": self.distances.reshape(-1),
                             "correct": self.correct.reshape(-1)})


def _spread_queries(labels: np.ndarray, n_queries: int) -> np.ndarray:
    """Positions of ``n_queries`` queries of distinct, evenly spaced classes (the splits are stored in a random
    order); evenly spaced positions for multi-label data or when there are fewer classes than queries."""
    spaced = np.round(np.linspace(0, len(labels) - 1, n_queries)).astype(np.int64)
    if labels.ndim != 1:
        return spaced
    classes, first = np.unique(labels, return_index=True)  # first query of each class
    if len(classes) < n_queries:
        return spaced
    return first[np.round(np.linspace(0, len(classes) - 1, n_queries)).astype(np.int64)]


def top_results(config: RunConfig, n_queries: int = 5, k: int = 10,
                query_indices: Sequence[int] | None = None) -> ExampleQueries:
    """Example retrievals of a finished run: queries, their top-k database images and which are correct.

    Parameters
    ----------
    config : RunConfig
        A run whose stage 3 exists (its stored codes are ranked, :func:`hamming_top_k`).
    n_queries : int
        Number of queries: the first query of each of ``n_queries`` evenly spaced classes (single-label data;
        multi-label data: evenly spaced positions of the query split), unless ``query_indices`` is given.
    k : int
        Results per query.
    query_indices : sequence of int, optional
        Positions in the query split to show instead.
    """
    codes = load_codes(config)
    num_queries = len(codes["query_codes"])
    if query_indices is None:
        if not 1 <= n_queries <= num_queries:
            raise ValueError(f"n_queries must lie in [1, {num_queries}] (the query split size), got {n_queries}.")
        chosen = _spread_queries(codes["query_labels"], n_queries)
    else:
        chosen = np.asarray(query_indices, dtype=np.int64)
        if chosen.ndim != 1 or chosen.size == 0 or chosen.min() < 0 or chosen.max() >= num_queries:
            raise ValueError(f"query_indices must be positions in [0, {num_queries}) of the query split.")
    indices, distances = hamming_top_k(codes["query_codes"][chosen], codes["database_codes"], k)
    query_labels, database_labels = codes["query_labels"][chosen], codes["database_labels"][indices]
    if query_labels.ndim == 1:
        correct = database_labels == query_labels[:, None]
    else:  # multi-hot: relevant when sharing at least one label
        correct = np.any((database_labels > 0) & (query_labels[:, None, :] > 0), axis=2)
    data = load_data(config)
    titles = ([data.class_names[label] for label in query_labels] if query_labels.ndim == 1
              else ["query"] * len(chosen))  # fmt: skip
    return ExampleQueries(
        chosen, indices, distances, correct,
        [data.query.raw_image(i) for i in chosen],
        [[data.database.raw_image(j) for j in row] for row in indices],
        titles,
    )


# Command line -------------------------------------------------------------------------------
def _markdown_table(rows: pd.DataFrame, metric: str, order: Sequence[str]) -> str:
    from shc.stats import summary_frame

    summary, _ = summary_frame(rows, [metric])
    bits = sorted(summary["bits"].unique())
    lines = ["| method | " + " | ".join(f"{q} bits" for q in bits) + " |", "|---|" + "---|" * len(bits)]
    for name in [m for m in order if m in set(summary["method"])]:
        cells = []
        for q in bits:
            row = summary[(summary["method"] == name) & (summary["bits"] == q)]
            if row.empty:
                cells.append("-")
                continue
            mean, std, n = row["mean"].iloc[0], row["std"].iloc[0], int(row["n"].iloc[0])
            cells.append(f"{mean:.4f} ± {std:.4f}" if n > 1 else f"{mean:.4f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _print_table(title: str, rows: pd.DataFrame, metric: str, order: Sequence[str], markdown: bool) -> None:
    """A titled table of ``metric`` (methods x code lengths): Markdown with mean ± std, else the means."""
    print(f"{title}\n")
    print(_markdown_table(rows, metric, order) if markdown else
          rows.pivot_table(index="label", columns="bits", values=metric, aggfunc="mean").to_string())
    print()


def budget_phrase(epochs: Mapping[str, Sequence[int]]) -> str:
    """The training budgets of a grid in words: the most common one first (on a tie, the first method's), then
    each other one with its methods in grid order, e.g. ``{"mds": [160], "shc": [80], "dtsh": [160]}`` gives
    ``"160 epochs, 80 for shc"``."""
    budgets = [tuple(e) for e in epochs.values()]
    if not budgets:
        raise ValueError("budget_phrase needs at least one method's epochs.")
    usual = max(dict.fromkeys(budgets), key=budgets.count)
    grouped: dict[tuple, list[str]] = {}
    for method, budget in zip(epochs, budgets):
        if budget != usual:
            grouped.setdefault(budget, []).append(method)
    return ", ".join([f"{'/'.join(map(str, usual))} epochs",
                      *(f"{'/'.join(map(str, e))} for {', '.join(methods)}" for e, methods in grouped.items())])


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.results --preset NAME --markdown``: the README's results tables and sentences, from the runs."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


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
    parser.add_argument("--metrics", nargs="+", choices=[*TIE_AWARE_MAP_KEYS, *MAP_KEYS, *REACH_KEYS],
                        default=["tie_aware_mAP@ALL", "mAP@ALL", "tie_aware_mAP@100", "mAP@100",
                                 "train_center_hit_rate"],
                        help="tables to print (default: mAP@ALL and mAP@100, tie-aware and with ties by index, and the "
                             "training center hit rate: did each network reach its own targets)")
    parser.add_argument("--reference", default=None,
                        help="the method every other is compared with (default shc, when the grid has it)")
    parser.add_argument("--markdown", action="store_true", help="Markdown tables (the README's format)")
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
    parser.add_argument("--bits", nargs="+", type=positive_int, metavar="Q", help="code lengths (default: the grid's)")
    parser.add_argument("--seeds", nargs="+", type=non_negative_int, metavar="SEED", help="seeds (default: the grid's)")
    args = parser.parse_args(argv)
    preset = get_preset(args.preset)
    run_dir = args.run_dir or f"runs/{args.preset}"
    for name, values, known in (("--bits", args.bits, preset.bits), ("--seeds", args.seeds, preset.seeds)):
        unknown = sorted(set(values or ()) - set(known))
        if unknown:
            raise ValueError(f"{name} {unknown} is not in preset {args.preset!r}'s grid ({list(known)}); choose from it.")
    grid = {"bits": args.bits, "seeds": args.seeds, "run_dir": run_dir}
    configs = preset.configs(methods=args.methods, **grid)
    order = list(dict.fromkeys(c.method for c in configs))
    if args.reference is not None and args.reference not in order:  # never drop the comparisons silently
        raise ValueError(f"--reference {args.reference!r} is not a method of this grid ({', '.join(order)}); "
                         "choose one of them, or add it to --methods.")
    reference = args.reference or "shc"
    if args.versus:  # checked before anything is read: the comparison claims the same splits, paired by seed
        from shc.runs import paired_seeds

        other_configs = get_preset(args.versus).configs(
            methods=order, **{**grid, "run_dir": args.versus_run_dir or f"runs/{args.versus}"})
        seeds = paired_seeds(other_configs, configs, f"--versus {args.versus}", f"--preset {args.preset}")
    rows = result_rows(configs)
    stamp = datetime.date.today().isoformat()
    command = " ".join(["python -m shc.results", *(sys.argv[1:] if argv is None else argv)])
    epochs = {method: sorted({c.epochs for c in configs if c.method == method}) for method in order}
    print(f"Results of preset `{args.preset}` ({preset.datasets[0]}; {len(configs)} runs: "
          f"{len(order)} methods x {len({c.bits for c in configs})} code lengths x {len({c.seed for c in configs})} "
          f"seeds; {budget_phrase(epochs)}), "
          f"read from `{run_dir}` on {stamp} by `{command}`. "
          "Cells are mean ± std over seeds of the query-set mAP of the model selected on the validation split. "
          "*Tie-aware* is the expectation over random orders within Hamming-distance ties (primary: it does not "
          "depend on how the database is stored); *ties by index* ranks a tie in database order, which is "
          "seeded random.\n")
    for metric in args.metrics:
        _print_table(f"**{_metric_title(metric)}**", rows, metric, order, args.markdown)
    _print_comparisons(rows, reference, order)
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
    if args.versus:  # every method of this grid, read from the other preset's runs (they must exist)
        _print_regimes(result_rows(other_configs), rows[rows["method"].isin(order)], args.versus, args.preset, seeds)
    return 0


def ranking_line(rows: pd.DataFrame, metric: str, bits: int) -> str:
    """The methods at ``bits`` from best to worst mean ``metric``, each joined to the next by ``>`` when the paired
    95% interval of their difference over seeds lies above 0 and by ``≈`` when it contains 0 (``?``: one seed,
    no interval), e.g. ``lth > greedyhash ≈ shc-ls > shc``. ``rows``: :func:`result_rows`."""
    from shc.stats import paired_by_seed, summary_frame

    summary, per_seed = summary_frame(rows, [metric], method="method")
    at = summary[summary["bits"] == bits].sort_values("mean", ascending=False, kind="stable")
    if at.empty:
        raise ValueError(f"no {metric} values at {bits} bits; code lengths there: {sorted(summary['bits'].unique())}.")
    names = list(at["method"])
    joints = {"higher": " > ", "not distinguishable": " ≈ "}
    parts = [names[0]]
    for upper, lower in zip(names, names[1:]):
        parts.append(joints.get(paired_by_seed(per_seed, metric, bits, upper, lower).verdict, " ? ") + lower)
    return "".join(parts)


def regime_rows(rows_a: pd.DataFrame, rows_b: pd.DataFrame, metric: str = PRIMARY_METRIC) -> pd.DataFrame:
    """Two presets' runs of the same methods, code lengths and seeds side by side (e.g. from scratch and
    pretrained): per (bits, method) the mean ± std of ``metric`` in each, the paired change ``b - a`` over the
    seeds both have (same split and seed) with its 95% t-interval, and each method's rank (1 = best mean) in
    each. Only the (method, bits) cells both presets have are compared."""
    import pandas as pd

    from shc.stats import paired_interval, signed_interval

    keys = ["method", "bits", "seed"]
    merged = rows_a[[*keys, metric]].merge(rows_b[[*keys, metric]], on=keys, suffixes=(" a", " b"))
    if merged.empty:
        raise ValueError("the two grids share no (method, code length, seed) run; compare presets with common "
                         "methods, lengths and seeds.")
    out = []
    for (bits, method), cell in merged.groupby(["bits", "method"], sort=True):
        a, b = cell[f"{metric} a"].to_numpy(), cell[f"{metric} b"].to_numpy()
        change = paired_interval(b, a)
        out.append({"bits": bits, "method": method, "mean a": a.mean(), "std a": a.std(ddof=1) if a.size > 1 else
                    float("nan"), "mean b": b.mean(), "std b": b.std(ddof=1) if b.size > 1 else float("nan"),
                    "change": change.mean, "low": change.low, "high": change.high, "seeds": a.size,
                    "change [95% CI]": signed_interval(change.mean, change.low, change.high)
                    if change.defined else f"{change.mean:+.3f} (one seed)", "verdict": change.verdict})
    frame = pd.DataFrame(out)
    for side in ("a", "b"):
        frame[f"rank {side}"] = frame.groupby("bits")[f"mean {side}"].rank(ascending=False, method="min").astype(int)
    return frame.sort_values(["bits", "rank b"], kind="stable").reset_index(drop=True)


def _print_regimes(rows_a: pd.DataFrame, rows_b: pd.DataFrame, name_a: str, name_b: str, seeds: Sequence[int]
                   ) -> None:
    """The --versus section; ``seeds``: those :func:`shc.runs.paired_seeds` checked (same dataset and splits)."""
    metric = PRIMARY_METRIC
    frame = regime_rows(rows_a, rows_b, metric)
    print(f"### {name_b} against {name_a} ({_metric_title(metric)})\n\nSame methods, code lengths and dataset, the "
          f"same splits at each of seeds {', '.join(map(str, seeds))} (checked: dataset, options and data "
          f"fingerprint); the change is {name_b} minus {name_a}, paired by seed, with its 95% t-interval. "
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


def finished_configs(configs: Iterable[RunConfig]) -> list[RunConfig]:
    """The configs whose stage 3 has finished (a run measured by an older evaluation raises its
    :class:`~shc.runs.StaleRunError`: it exists, so it is not silently left out)."""
    finished = []
    for config in configs:
        try:
            load_metrics(config)
        except StaleRunError:
            raise
        except MissingRunError:
            continue
        finished.append(config)
    return finished


def _print_paper_comparison(preset, grid: Mapping[str, Any], methods: Sequence[str] | None = None) -> None:
    """The paper's Table 4 differences beside ours: SHC and the paper's baselines among ``methods`` (default: all
    nine) whose runs have finished."""
    from shc.paper import PAPER_BASELINES, comparison_markdown, our_differences, paper_differences

    chosen = [m for m in PAPER_BASELINES if methods is None or m in methods]
    configs = finished_configs(preset.configs(methods=list(dict.fromkeys(("shc", *chosen))), **grid))
    frames = [paper_differences("mAP@100")]
    if configs:
        rows = result_rows(configs)
        present = [m for m in PAPER_BASELINES if m in set(rows["method"])]
        for metric, ranking in (("tie_aware_mAP@100", "tie-aware"), ("mAP@100", "ties by index")):
            frames.append(our_differences(rows, metric, f"ours: {preset.name} ({ranking})"))
        found = f"our baselines: {', '.join(present)} ({len(configs)} runs)"
    else:
        found = "no finished run of SHC or a baseline in this preset yet"
    print(f"### The paper side by side (Table 4, mAP@100)\n\nThe paper's rows are its Table 4 "
          f"(shc/assets/paper_results.csv, extracted from its LaTeX; one run each). Ours: {found}; mean paired "
          "difference over seeds with its 95% t-interval. \"best baseline\" is the best of the paper's nine "
          "that ran.\n")
    print(comparison_markdown(frames))
    print()


def _metric_title(metric: str) -> str:
    """``tie_aware_mAP@ALL`` -> ``mAP@ALL, tie-aware``; ``mAP@ALL`` -> ``mAP@ALL, ties by index``;
    ``train_center_hit_rate`` -> ``center hit rate on the training set`` (reachability, :mod:`shc.reachability`)."""
    if metric in REACH_KEYS:
        split, name = metric.split("_", 1)
        return (f"{name.replace('_', ' ')} on the {'training' if split == 'train' else 'query'} set (reachability: "
                "against each method's own targets; below 0.9 on the training set, the network did not reach them)")
    return metric.removeprefix("tie_aware_") + (", tie-aware" if metric.startswith("tie_aware_") else ", ties by index")


def _print_comparisons(rows: pd.DataFrame, reference: str, order: Sequence[str]) -> None:
    from shc.findings import retrieval_findings

    if reference in order:
        print(f"Paired comparisons with {reference} ({_metric_title(PRIMARY_METRIC)}; 95% t-interval over seeds of "
              "the per-seed differences, same split and initial weights):\n")
        for sentence in retrieval_findings(rows, PRIMARY_METRIC, reference=reference):
            print(f"- {sentence}")
        print()


if __name__ == "__main__":
    raise SystemExit(main())


# Tables for readers ---------------------------------------------------------------------------------------
def readable_table(frame: Any, digits: int = 4, index_name: str = "rank", drop_empty: bool = True):
    """A frame as a reader should see it: every cell text (numbers through :func:`shc.stats.format_value`,
    so no ``NaN`` and no ``True``/``False``: ``n/a``, ``yes``/``no``; dicts as ``key = value`` lists; nothing cut
    to "..."), a default 0..n-1 index replaced by a 1-based one named ``index_name``, and columns that hold no
    value at all left out (``drop_empty``). Display it; save the numeric frame (:func:`shc.plots.save_table`)."""
    import pandas as pd

    from shc.stats import format_value

    frame = frame.copy()
    if drop_empty:
        frame = frame.loc[:, [column for column in frame.columns if not frame[column].isna().all()]]
    if isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1:
        frame.index = pd.RangeIndex(1, len(frame) + 1, name=index_name)

    def cell(value: Any) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{key} = {cell(item)}" for key, item in value.items()) or "none"
        if isinstance(value, (list, tuple)):
            return ", ".join(cell(item) for item in value) or "none"
        if isinstance(value, str):
            return value
        try:
            if pd.isna(value):
                return "n/a"
        except (TypeError, ValueError):
            pass
        return format_value(value, digits)

    return _FullTable(frame.apply(lambda column: column.map(cell)) if len(frame.columns) else frame)


class _FullTable:
    """A frame of text shown in full (pandas' display would cut long cells to "...")."""

    def __init__(self, frame: Any) -> None:
        self.frame = frame

    def _repr_html_(self) -> str:
        return self.frame.to_html(escape=True, na_rep="n/a", max_rows=None, max_cols=None)

    def __repr__(self) -> str:
        return self.frame.to_string()
