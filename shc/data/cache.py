"""The dataset splits of a run, cached per process and checked against their files each time they are served.

:func:`load_data` takes anything with a run's data settings (``dataset``, ``dataset_options``, ``seed``,
``data_root``: a :class:`shc.runs.RunConfig`); :mod:`shc.runs`, :mod:`shc.stages` (identities) and
:mod:`shc.pretraining` (stage 0's source task) read their data through it, so all see one cache.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from shc._io import jsonable
from shc.data import load_dataset
from shc.data.formats import default_data_root

__all__ = ["forget_data", "load_data", "resolved_root"]

_DATASETS: dict[str, tuple[Any, str]] = {}  # key -> (splits, their source stamp when loaded)


def resolved_root(config: Any) -> str | None:
    """``config.data_root`` as an absolute path (None: the default data root)."""
    return None if config.data_root is None else str(Path(config.data_root).expanduser().resolve())


def load_data(config: Any):
    """The dataset splits of ``config``, cached per process while the files they were read from are unchanged.

    Each call compares :meth:`shc.data.DatasetSplits.source_stamp` (sizes and times of the image files, the
    folders holding them and the files near the data root) with the stamp taken at loading: a notebook that
    adds, removes or edits images and calls ``run(config)`` again gets splits (and stage folders) of the new
    files, not the ones loaded before.
    """
    key = json.dumps(jsonable({"dataset": config.dataset, "options": dict(config.dataset_options),
                               "seed": config.seed, "root": resolved_root(config)}))
    root = resolved_root(config) or default_data_root()
    cached = _DATASETS.get(key)
    if cached is not None and cached[0].source_stamp(root) == cached[1]:
        return cached[0]
    data = load_dataset(config.dataset, root=config.data_root, seed=config.seed, **dict(config.dataset_options))
    _DATASETS[key] = (data, data.source_stamp(root))
    return data


def forget_data() -> None:
    """Drop the per-process dataset cache (:func:`load_data` reloads changed files by itself)."""
    _DATASETS.clear()
