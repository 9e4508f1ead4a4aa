"""Results files: one compact CSV per preset with every run's configuration and measures (issue 38), as timm keeps
its results CSVs. ``python -m shc.results --preset NAME --write-csv`` writes ``results/NAME.csv`` from the run
folders; ``--from-csv results/NAME.csv`` prints the same method tables and paired comparisons from the file alone, so
the README's numbers can be rebuilt from a clone without the run folders (the classifier-code baseline, ``--versus``,
``--paper`` and ``--extended`` still read run folders).

A row is a run: the columns of :func:`~shc.results.reading.result_rows` (identity, mAP in both rankings,
reachability, the unseen-class pairings, selected epoch, seconds) plus the configuration fields that tell runs
apart (:data:`CONFIG_COLUMNS`; mappings as JSON) and the stage-3 folder's name, whose last 8 hex digits are the
run's identity key. Reading checks the file against the grid asked for: a missing cell or a cell trained with
other settings (say, other epochs) is an error that names the command that rewrites the file.
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

__all__ = ["CONFIG_COLUMNS", "read_results", "results_frame", "write_results"]

#: The configuration fields a results file records beside each run's identity (JSON for the mappings).
CONFIG_COLUMNS = ("dataset_options", "backbone", "pretrained", "pretrain", "epochs", "lr", "batch_size", "optimizer",
                  "classifier_epochs", "method_options")
_JSON_COLUMNS = ("dataset_options", "method_options")


def _settings(config: RunConfig) -> dict[str, Any]:
    return {name: (json.dumps(dict(getattr(config, name)), sort_keys=True) if name in _JSON_COLUMNS
                   else getattr(config, name)) for name in CONFIG_COLUMNS}


def results_frame(configs: Iterable[RunConfig]) -> pd.DataFrame:
    """One row per run of ``configs`` (they must exist): :func:`result_rows`'s columns, :data:`CONFIG_COLUMNS`, the
    validation score at the selected epoch and the stage-3 folder's name."""
    from shc.evaluation import PRIMARY_METRIC
    from shc.stages import Hashing

    configs = list(configs)
    frame = result_rows(configs)
    extra = pd.DataFrame([{**_settings(config), f"val_{PRIMARY_METRIC}": load_metrics(config).get(f"val_{PRIMARY_METRIC}"),
                           "stage3": Hashing(config).directory.name} for config in configs])
    return pd.concat([frame, extra], axis=1)


def write_results(configs: Iterable[RunConfig], path: str | Path) -> Path:
    """Write the results file of ``configs`` to ``path`` (atomically; full float precision, so tables rebuilt from it
    equal those read from the runs)."""
    from shc._io import write_text

    buffer = io.StringIO()
    results_frame(configs).to_csv(buffer, index=False)
    return write_text(path, buffer.getvalue())


def read_results(path: str | Path, configs: Sequence[RunConfig]) -> pd.DataFrame:
    """The rows of the results file ``path`` for the runs of ``configs``, in their order, as :func:`result_rows` gives
    them; a ValueError names the cells the file lacks or holds with other settings."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"results file {path} does not exist; write it from the runs with `python -m shc.results "
                                "--preset <preset> --write-csv`.")
    table = pd.read_csv(path, keep_default_na=True)
    table["similarity"] = table["similarity"].astype(object).where(table["similarity"].notna(), None)
    key = ["dataset", "method", "label", "bits", "seed"]
    index = {tuple(row[k] for k in key): position for position, row in table.iterrows()}
    rows, problems = [], []
    for config in configs:
        identity = _identity(config)
        position = index.get(tuple(identity[k] for k in key))
        if position is None:
            problems.append(f"{identity['label']} {config.bits} bits seed {config.seed}: missing")
            continue
        row = table.loc[position]
        different = [name for name, value in _settings(config).items()
                     if not _same(row[name], value)]
        if different:
            problems.append(f"{identity['label']} {config.bits} bits seed {config.seed}: other {', '.join(different)}")
        rows.append(row)
    if problems:
        raise ValueError(f"results file {path} does not hold the grid asked for ({'; '.join(problems[:5])}"
                         f"{'; ...' if len(problems) > 5 else ''}); rewrite it from the runs with `python -m shc.results "
                         "--preset <preset> --write-csv`.")
    frame = pd.DataFrame(rows).reset_index(drop=True)
    return frame[IDENTITY_COLUMNS + [column for column in frame.columns if column not in IDENTITY_COLUMNS]]


def _same(stored: Any, value: Any) -> bool:
    if value is None or (isinstance(stored, float) and pd.isna(stored)):
        return value is None and (stored is None or (isinstance(stored, float) and pd.isna(stored)))
    if isinstance(value, bool):
        return str(stored) == str(value)
    if isinstance(value, (int, float)):
        return float(stored) == float(value)
    return str(stored) == str(value)
