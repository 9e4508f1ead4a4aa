"""Results files: one compact CSV per preset with every run's configuration and measures (issue 38), as timm keeps
its results CSVs. ``python -m shc.results --preset NAME --write-csv`` writes ``results/NAME.csv`` from the run
folders; ``--from-csv results/NAME.csv`` prints the same method tables and paired comparisons from the file alone, so
the README's numbers can be rebuilt from a clone without the run folders (``--paper`` and ``--extended`` still read
run folders, and ``--versus`` does unless ``--versus-csv`` names the other side's results files: a grid against its
rerun on another machine is two committed files).

A row is a run: the columns of :func:`~shc.results.reading.result_rows` (identity, mAP in both rankings,
reachability, the unseen-class pairings, selected epoch, seconds) plus the configuration fields that tell runs
apart (:data:`CONFIG_COLUMNS`; mappings as JSON) and the stage-3 folder's name, whose last 8 hex digits are the
run's identity key. Reading checks the file against the grid asked for: a missing cell or a cell trained with
other settings (say, other epochs) is an error that names the command that rewrites the file.

The classifier-code baseline (issue 37: stage 1's classifier gives each image its predicted class's center; nothing
trains) is in the same file where the preset computes it: a row per center method, rule and seed, labelled
``"csq (top1 classifier codes)"`` (:func:`~shc.results.reading.classifier_code_rows`), with the settings of the
method's run; :func:`read_classifier_codes` reads them back.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from shc.results.reading import IDENTITY_COLUMNS, _identity, load_metrics, result_rows
from shc.runs import RunConfig

__all__ = ["CONFIG_COLUMNS", "REQUIRED_CONFIG_COLUMNS", "read_classifier_codes", "read_results", "results_frame",
           "write_results"]

#: The configuration fields every results file records beside each run's identity (JSON for the mappings).
REQUIRED_CONFIG_COLUMNS = ("dataset_options", "backbone", "pretrained", "pretrain", "epochs", "lr", "batch_size",
                           "optimizer", "classifier_epochs", "method_options")
#: Every configuration field a results file records and reading compares: the required ones, then those files
#: written since 2026-12-02 record too (the rest of the settings a run's numbers depend on; an audit found a row
#: trained with another ``eval_every``, ``classifier_lr``, ``mask`` or ``center_options`` accepted). A file written
#: before lacks them, and its rows are compared on the required fields only.
CONFIG_COLUMNS = (*REQUIRED_CONFIG_COLUMNS, "mask", "weights", "pretrain_epochs", "pretrain_lr", "classifier_lr",
                  "eval_every", "center_options")
_JSON_COLUMNS = ("dataset_options", "method_options", "center_options")


def _settings(config: RunConfig) -> dict[str, Any]:
    return {name: (json.dumps(dict(getattr(config, name)), sort_keys=True) if name in _JSON_COLUMNS
                   else getattr(config, name)) for name in CONFIG_COLUMNS}


def results_frame(configs: Iterable[RunConfig], classifier_codes: Sequence[str] = ()) -> pd.DataFrame:
    """One row per run of ``configs`` (they must exist): :func:`result_rows`'s columns, :data:`CONFIG_COLUMNS`, the
    validation score at the selected epoch and the stage-3 folder's name; then, for each rule of ``classifier_codes``
    (``"top1"``, ``"soft"``), a row per config with centers of its classifier-code baseline (the folder's name in
    ``stage3``; a missing one raises :class:`~shc.runs.MissingRunError` naming the command that computes it)."""
    from shc.evaluation import PRIMARY_METRIC
    from shc.results.reading import classifier_code_rows
    from shc.stages import ClassifierCodes, Hashing

    configs = list(configs)
    frame = result_rows(configs)
    extra = pd.DataFrame([{**_settings(config), f"val_{PRIMARY_METRIC}": load_metrics(config).get(f"val_{PRIMARY_METRIC}"),
                           "stage3": Hashing(config).directory.name} for config in configs])
    frames = [pd.concat([frame, extra], axis=1)]
    if classifier_codes:
        baseline = classifier_code_rows(configs, classifier_codes)
        applying = [(config, rule) for config in configs for rule in classifier_codes
                    if ClassifierCodes(config, rule).applies()]  # classifier_code_rows' order
        frames.append(pd.concat([baseline, pd.DataFrame([{**_settings(config), "stage3": ClassifierCodes(
            config, rule).directory.name} for config, rule in applying])], axis=1))
    return pd.concat(frames, ignore_index=True)


def write_results(configs: Iterable[RunConfig], path: str | Path, classifier_codes: Sequence[str] = ()) -> Path:
    """Write the results file of ``configs`` (and of their classifier-code baseline by the rules
    ``classifier_codes``) to ``path`` (atomically; full float precision, so tables rebuilt from it equal those read
    from the runs)."""
    from shc._io import write_text

    buffer = io.StringIO()
    results_frame(configs, classifier_codes).to_csv(buffer, index=False)
    return write_text(path, buffer.getvalue())


def read_classifier_codes(paths: str | Path | Sequence[str | Path], configs: Sequence[RunConfig],
                          rules: Sequence[str]) -> pd.DataFrame:
    """The classifier-code rows of the results file ``paths`` (one or several, as :func:`read_results`) for ``configs`` and ``rules``, in
    :func:`~shc.results.reading.classifier_code_rows`' order and columns; a ValueError names the rows the file lacks
    (an empty frame when it holds none of them: a file written without them)."""
    from shc.stages import ClassifierCodes

    wanted = [(config, rule) for config in configs for rule in rules if ClassifierCodes(config, rule).applies()]
    labels = [f"{config.method} ({rule} classifier codes)" for config, rule in wanted]
    return read_results(paths, [config for config, _ in wanted], labels=labels, optional=True)


def read_results(paths: str | Path | Sequence[str | Path], configs: Sequence[RunConfig],
                 labels: Sequence[str] | None = None, optional: bool = False) -> pd.DataFrame:
    """The rows of the results file ``paths`` (one path, or several read as one file) for the runs of ``configs``, in
    their order, as :func:`result_rows` gives them; a ValueError names the cells the files lack, hold with other
    settings, or hold twice. ``labels`` (one per config) replace the runs' labels (the classifier-code rows');
    ``optional``: files with none of the rows give an empty frame instead of an error.

    Several files hold one grid whose cells were written at different times (say LTH rerun at its converged budget,
    on another lent GPU, beside a grid whose run folders are gone): each cell is the one row at its config's
    settings, so a file's row trained with other settings (LTH's earlier epochs) is passed over where another file
    holds the cell at the config's settings, and two rows at those settings are refused."""
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(path) for path in paths]
    if not paths:
        raise ValueError("read_results needs at least one results file; name one (results/*.csv).")
    for path in paths:
        if not path.is_file():
            raise FileNotFoundError(f"results file {path} {'is a folder' if path.is_dir() else 'does not exist'}; name "
                                    "a file under results/, or write one from the runs with `python -m shc.results "
                                    "--preset NAME --write-csv PATH`.")
    tables = [_read_table(path) for path in paths]
    table = pd.concat(tables, ignore_index=True)
    origin = [str(path) for path, part in zip(paths, tables) for _ in range(len(part))]
    held = [set(part.columns) for part in tables for _ in range(len(part))]  # a row is compared on its own file's fields
    table["similarity"] = table["similarity"].astype(object).where(table["similarity"].notna(), None)
    key = ["dataset", "method", "label", "bits", "seed"]
    index: dict[tuple, list[int]] = {}
    for position, row in table.iterrows():
        index.setdefault(tuple(row[k] for k in key), []).append(position)
    rows, problems = [], []
    labels = list(labels) if labels is not None else [None] * len(configs)
    if len(labels) != len(configs):
        raise ValueError(f"labels names {len(labels)} rows for {len(configs)} configs; give one label per config.")
    if optional and not any(label in set(table["label"]) for label in labels):
        return pd.DataFrame(columns=IDENTITY_COLUMNS)
    for config, label in zip(configs, labels):
        identity = {**_identity(config), **({"label": label} if label else {})}
        cell = f"{identity['label']} {config.bits} bits seed {config.seed}"
        positions = index.get(tuple(identity[k] for k in key), [])
        different = {position: [name for name, value in _settings(config).items()
                                if name in held[position] and not _same(table.loc[position, name], value)]
                     for position in positions}
        matching = [position for position in positions if not different[position]]
        if not positions:
            problems.append(f"{cell}: missing")
        elif not matching:
            stored = table.loc[positions[-1]]
            problems.append(f"{cell}: other " + ", ".join(
                f"{name} (asked {_settings(config)[name]}, file {stored[name]})" for name in different[positions[-1]]))
        elif len(matching) > 1:
            problems.append(f"{cell}: {len(matching)} rows at its settings "
                            f"({', '.join(dict.fromkeys(origin[position] for position in matching))})")
        else:
            rows.append(table.loc[matching[0]])
    if problems:
        named = f"results file {paths[0]}" if len(paths) == 1 else f"results files {', '.join(map(str, paths))}"
        raise ValueError(f"{named} {'does' if len(paths) == 1 else 'do'} not hold the grid asked for "
                         f"({'; '.join(problems[:5])}{'; ...' if len(problems) > 5 else ''}); name the file of this "
                         "preset, code lengths and budgets (results/*.csv), or narrow --bits, --seeds, --methods or "
                         "--hashing-epochs to what it holds; if its runs changed, rewrite it with `python -m shc.results "
                         "--preset NAME --write-csv PATH`.")
    frame = pd.DataFrame(rows).reset_index(drop=True)
    return frame[IDENTITY_COLUMNS + [column for column in frame.columns if column not in IDENTITY_COLUMNS]]


#: The columns without which a CSV is not a results file (:func:`write_results` writes them all).
_REQUIRED = ("dataset", "method", "similarity", "label", "bits", "seed", *REQUIRED_CONFIG_COLUMNS)


def _read_table(path: Path) -> pd.DataFrame:
    """A results file's rows; a ValueError naming the file when it is empty or lacks a results file's columns."""
    try:
        table = pd.read_csv(path, keep_default_na=True)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a results file ({error}); name one that `python -m shc.results --write-csv` "
                         "wrote (results/*.csv).") from None
    missing = [column for column in _REQUIRED if column not in table.columns]
    if missing:
        raise ValueError(f"{path} is not a results file: it lacks the columns {', '.join(missing[:6])}"
                         f"{', ...' if len(missing) > 6 else ''}; name one that `python -m shc.results --write-csv` "
                         "wrote (results/*.csv).")
    return table


def _same(stored: Any, value: Any) -> bool:
    if value is None or (isinstance(stored, float) and pd.isna(stored)):
        return value is None and (stored is None or (isinstance(stored, float) and pd.isna(stored)))
    if isinstance(value, bool):
        return str(stored) == str(value)
    if isinstance(value, (int, float)):
        return float(stored) == float(value)
    return str(stored) == str(value)
