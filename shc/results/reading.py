"""Reading one run's files, and many runs into frames: what the other modules of :mod:`shc.results` build on.

Everything here reads what :mod:`shc.pipeline` wrote; it imports no trainer and never computes a stage. A missing
artifact raises :class:`~shc.runs.MissingRunError` naming the run and the command that computes it
(``python -m shc.reports --preset NAME`` computes every run its notebooks read before running them):

- loaders of one run's files: :func:`load_stage1_metrics`, :func:`load_similarity`, :func:`load_centers`,
  :func:`load_center_quality`, :func:`load_center_history`, :func:`load_metrics`, :func:`load_history`,
  :func:`load_codes`;
- one row per run or per epoch: :func:`result_rows`, :func:`history_rows`, :func:`center_rows`,
  :func:`center_history_rows`; the center sets and S matrices a report compares (:func:`center_sets`,
  :func:`center_lessons`, :func:`similarity_sources`); the runs that have finished (:func:`finished_configs`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from shc.evaluation import EVALUATION_VERSION, PRIMARY_METRIC, UNSEEN_KEYS
from shc.runs import MAP_KEYS, TIE_AWARE_MAP_KEYS, MissingRunError, RunConfig, StaleRunError, load_data
from shc.runs import method_spec as _method
from shc.runs import other_similarity as _other_similarity
from shc.stages import artifact


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


def _artifact(config: RunConfig, stage: str, name: str):
    """:func:`shc.stages.artifact`, whose missing-run error here names the exact command that computes the run."""
    try:
        return artifact(config, stage, name)
    except StaleRunError:
        raise
    except MissingRunError as error:
        from shc.presets import compute_command  # not at import: shc.results imports no trainer

        raise MissingRunError(str(error).replace(
            "the pipeline command of its preset with its method, bits and seed (`shc.presets.compute_command(config)` "
            "names it), or in Python `shc.pipeline.run(config)`", compute_command(config))) from None


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
    """Stage 2's ``history.json`` as a DataFrame: for "shc", one row per outer cycle of Algorithm 1 (cycle 0 is the
    MDS start): objective (Eq. 22), s_loss, d_min, violated pairs, proxy and slack residuals, accepted and
    rejected column updates; for "shc-ls", one row per record of its search (``cycle``, ``s_loss``, ``d_min``).
    Empty for generators without a search (random, csq, mds, semantic)."""
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
        from shc.presets import compute_command  # not at import: shc.results imports no trainer

        raise ValueError(f"{path} is damaged ({error}); the pipeline moves a damaged stage aside and recomputes it: "
                         f"rerun {compute_command(config)}.") from None
    if metrics.get("evaluation", 0) < EVALUATION_VERSION:
        raise StaleRunError(
            f"{_artifact(config, 'stage3', 'metrics.json')} was measured by evaluation version "
            f"{metrics.get('evaluation', 'before 3')}, older than this package's {EVALUATION_VERSION} (tie-aware "
            "metrics). Re-evaluate it from its stored codes, nothing is retrained: run the pipeline command of the "
            "grid with --reevaluate, or in Python `shc.pipeline.reevaluate(config)`.")
    # a hand edit or a damaged copy: the pipeline measures it again from its codes (shc.evaluation.measured)
    missing = [key for key in (*MAP_KEYS, *TIE_AWARE_MAP_KEYS, "selected_epoch", "train_seconds") if key not in metrics]
    if missing:
        from shc.presets import compute_command

        raise ValueError(f"{path} lacks {', '.join(missing)} (a damaged or edited record); the pipeline measures it "
                         f"again from its stored codes, nothing is retrained: rerun {compute_command(config)}.")
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


def measured_pairings(runs: pd.DataFrame, metrics: Sequence[str] = ("tie_aware_mAP@ALL",)) -> list[str]:
    """The unseen-class pairing columns (:data:`~shc.evaluation.UNSEEN_KEYS`) of ``metrics`` that hold a value in
    ``runs``, in their order; empty for a grid without held-out classes."""
    from shc.evaluation import UNSEEN_KEYS

    return [key for key in UNSEEN_KEYS if key.endswith(tuple(metrics)) and key in runs and runs[key].notna().any()]


def selected_epoch_share(runs: pd.DataFrame, configs: Iterable[RunConfig]) -> pd.Series:
    """Each run's selected epoch over its own hashing budget (the epochs of its config; methods of one grid may train
    different budgets), matched by method, code length and seed: 1 where the last epoch was the best."""
    budget = {(config.method, config.bits, config.seed): config.epochs for config in configs}
    keys = list(zip(runs["method"], runs["bits"], runs["seed"]))
    missing = [key for key in keys if key not in budget]
    if missing:
        raise ValueError(f"no config for the run(s) {missing[:3]} (method, bits, seed): pass the configs the rows "
                         "were read from.")
    return runs["selected_epoch"] / [budget[key] for key in keys]


def result_rows(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """One row per config with its identity and stage-3 headline numbers (a DataFrame).

    Columns: dataset, method, similarity (None for methods that use no S), label (:func:`run_label`), bits,
    seed, tie_aware_mAP@100, tie_aware_mAP@1000, tie_aware_mAP@ALL (expected over random orders within
    Hamming ties: the primary numbers), mAP@100, mAP@1000, mAP@ALL (ties by database index), the reachability
    numbers :data:`REACH_KEYS` and ``reach_targets`` (what they are measured against), the unseen-class pairings
    :data:`~shc.evaluation.UNSEEN_KEYS` (NaN for runs without held-out classes), selected_epoch, train_seconds,
    device (where it trained: :func:`shc.devices.describe_device`; None for runs older than that record) and
    precision (the arithmetic it trained in, :func:`shc.devices.resolve_precision`: ``bf16`` autocast on a CPU with
    native bf16, else ``fp32``; None for runs older than that record). Two CPUs of one grid may differ in it, and with
    it in more than the last digits: it is recorded so that such a mix shows in the results files.
    The runs must exist (:func:`run_grid`).
    """
    import pandas as pd

    rows = []
    for config in configs:
        metrics = load_metrics(config)
        rows.append({**_identity(config), **{key: metrics[key] for key in REPORTED_MAP_KEYS},
                     **{key: metrics.get(key, float("nan")) for key in (*REACH_KEYS, *UNSEEN_KEYS)},
                     "reach_targets": metrics.get("reach_targets"),
                     "selected_epoch": metrics["selected_epoch"], "train_seconds": metrics["train_seconds"],
                     "device": metrics.get("device"),  # None: a run from before devices were recorded
                     "precision": metrics.get("precision")})
    return pd.DataFrame(rows)


def classifier_code_rows(configs: Iterable[RunConfig], rules: Sequence[str] = ("top1", "soft")) -> pd.DataFrame:
    """The classifier-code baseline (:class:`shc.stages.ClassifierCodes`) of every config with centers, for each of
    ``rules``: the columns of :func:`result_rows` (``method`` the center method, ``label`` e.g. ``"csq (top1
    classifier codes)"``; no reachability, epoch or training time: nothing trains). A missing one raises
    :class:`~shc.runs.MissingRunError` naming the command that computes it."""
    import pandas as pd

    from shc.stages import ClassifierCodes

    rows = []
    for config in configs:
        for rule in rules:
            stage = ClassifierCodes(config, rule)
            if not stage.applies():
                continue
            if not stage.intact():  # a reader looks, never moves: cached() sets a damaged folder aside
                from shc.presets import compute_command  # not at import: shc.results imports no trainer

                raise MissingRunError(f"the {rule} classifier-code baseline of ({config.method}, {config.bits} bits, "
                                      f"seed {config.seed}) is not in {config.run_dir!r} (or was measured by an older "
                                      f"evaluation, or is damaged): {compute_command(config)} "
                                      "computes it after the run (or shc.pipeline.run_classifier_codes(configs)).")
            metrics = stage.load()
            rows.append({**_identity(config), "label": f"{config.method} ({rule} classifier codes)",
                         **{key: metrics[key] for key in REPORTED_MAP_KEYS},
                         **{key: metrics.get(key, float("nan")) for key in UNSEEN_KEYS}})
    return pd.DataFrame(rows)


#: The columns of :func:`settings_rows` after the run's identity: what a page's first line says of its runs.
SETTING_COLUMNS = ("classes", "epochs", "backbone", "pretrained", "pretrain", "weights", "batch_size", "optimizer",
                   "lr", "eval_every")


def settings_rows(configs: Iterable[RunConfig], labels: Mapping[str, str] | None = None,
                  stage: str = "hashing") -> pd.DataFrame:
    """One row per config: its identity (:func:`result_rows`'s columns; ``label`` replaced by ``labels[method]``
    where given, a page's shown names) and :data:`SETTING_COLUMNS`, ``classes`` the dataset's C. The table a page
    saves for its first line (:func:`shc.findings.grid_findings`), so the checker derives that line from the file.

    ``stage="classifier"`` (page 01) describes the stage-1 classifier instead: ``epochs`` and ``lr`` are its own
    (``classifier_epochs``, ``classifier_lr``), the label is the seed (the classifier depends on no method or code
    length) and ``protocol`` is the dataset's split in words."""
    if stage not in ("hashing", "classifier"):
        raise ValueError(f"stage must be 'hashing' or 'classifier', got {stage!r}.")
    rows, data = [], {}
    for config in configs:
        identity = _identity(config)
        if labels and config.method in labels:
            identity["label"] = labels[config.method]
        dataset = (config.dataset, json.dumps(dict(config.dataset_options), sort_keys=True, default=str))
        if dataset not in data:  # C and the split are the dataset's, whatever the seed: one load per dataset
            loaded = load_data(config)
            data[dataset] = (loaded.num_classes, loaded.protocol)
        row = {**identity, "classes": data[dataset][0],
               **{name: getattr(config, name) for name in SETTING_COLUMNS if name != "classes"}}
        if stage == "classifier":
            row.update(label=f"seed {config.seed}", epochs=config.classifier_epochs, lr=config.classifier_lr,
                       protocol=data[dataset][1])
        rows.append(row)
    if not rows:
        raise ValueError("configs is empty; pass the page's runs.")
    return pd.DataFrame(rows)


#: Significant digits :func:`history_rows` keeps of an epoch's wall-clock ``seconds`` and ``eval_seconds``: the same
#: epoch timed twice differs in the second or third digit, so the eight a saved table keeps were noise, and on
#: `standard-fine`'s 14,760 epochs the most expensive column of the committed history (issue 38).
TIMING_DIGITS = 4


def history_rows(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """The stage-3 training histories of ``configs`` stacked, with the identity columns of
    :func:`result_rows` in front (a DataFrame, one row per config and epoch). The epochs' timings
    (``seconds``, ``eval_seconds``) keep :data:`TIMING_DIGITS` significant digits."""
    import pandas as pd

    frames = [load_history(config).assign(**_identity(config)) for config in configs]
    if not frames:
        raise ValueError("configs is empty; pass the configs whose histories to stack.")
    frame = pd.concat(frames, ignore_index=True)
    for column in ("seconds", "eval_seconds"):
        if column in frame:
            frame[column] = round_significant(frame[column].to_numpy(dtype=float), TIMING_DIGITS)
    return frame[IDENTITY_COLUMNS + [column for column in frame.columns if column not in IDENTITY_COLUMNS]]


def round_significant(values: np.ndarray, digits: int) -> np.ndarray:
    """``values`` rounded to ``digits`` significant digits (zeros, infinities and NaN unchanged), as ``%.{digits}g``
    prints them."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values) & (values != 0)
    exponent = np.floor(np.log10(np.abs(np.where(finite, values, 1.0))))
    scale = 10.0 ** (digits - 1 - exponent)
    return np.where(finite, np.round(values * scale) / scale, values)


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


def center_history_rows(configs: Iterable[RunConfig], method: str = "shc") -> pd.DataFrame:
    """The per-record history of a center search (:func:`load_center_history`) of the configs whose generator is
    ``method`` ("shc": Algorithm 1, one row per outer cycle; "shc-ls": the local search, one row per record),
    stacked with the identity columns and the target distance ``gv_distance`` (Eq. 13) in front."""
    import pandas as pd

    from shc.centers import gv_min_distance

    searches = {"shc": "Algorithm 1", "shc-ls": "the local search"}
    if method not in searches:
        raise ValueError(f"method must be one of {sorted(searches)} (the center searches that keep a history), "
                         f"got {method!r}.")
    frames = []
    for config in configs:
        if _method(config).centers == method:
            gv_distance = gv_min_distance(load_data(config).num_classes, config.bits)
            frames.append(load_center_history(config).assign(**_identity(config), gv_distance=gv_distance))
    if not frames:
        raise ValueError(f"none of the configs generates its centers with {searches[method]}; include method "
                         f"{method!r}.")
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
    except StaleRunError:
        raise  # computed under other settings: not the same as not computed
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
