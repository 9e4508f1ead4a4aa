"""Checkpoint files of the training loop: atomic saves, the history files, and the run identity a
checkpoint must match to be resumed."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from shc._io import save_torch, write_text

if TYPE_CHECKING:
    from shc.train.config import History, TrainConfig


#: 2 (2026-11-29): the checkpoint carries ``elapsed_seconds`` and its history ``resumed_after``/``resumed_seconds``;
#: since 2026-12-01 also ``precision``, the resolved arithmetic it trained in (format 2 readers ignore it)
CHECKPOINT_VERSION = 2


_save_torch = save_torch


def _write_history(history: History, run_dir: Path) -> None:
    columns: dict[str, None] = {}
    for row in history.rows:
        columns.update(dict.fromkeys(row))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=list(columns), restval="", lineterminator="\n")
    writer.writeheader()
    writer.writerows(history.rows)
    write_text(run_dir / "history.csv", text.getvalue())
    write_text(run_dir / "history.json", json.dumps(history.to_dict(), indent=1))


def _run_identity(config: TrainConfig, num_samples: int) -> dict[str, Any]:
    """What must match for ``last.pt`` to be resumed: every config field and the training-set size."""
    return {**dataclasses.asdict(config), "train_size": num_samples}


def _check_same_run(saved: Mapping[str, Any], current: Mapping[str, Any], path: Path) -> None:
    differences = [
        f"{key}: checkpoint has {saved.get(key)!r}, this call has {current.get(key)!r}"
        for key in sorted(set(saved) | set(current))
        if saved.get(key) != current.get(key)
    ]
    if differences:
        raise ValueError(
            f"{path} was written by a run with a different configuration ("
            + "; ".join(differences)
            + f"). Use another run_dir, or delete {path.parent} to start this run over."
        )


def _check_same_precision(saved: str | None, current: str, path: Path) -> None:
    """Refuse to resume a run in another arithmetic than the one it trained in (``saved``: the checkpoint's resolved
    precision; None for a checkpoint written before 2026-12-01, which did not record it). ``precision="auto"`` is
    bf16 on a CPU with native bf16 and fp32 on one without, so a grid moved between two such machines would finish
    its runs as hybrids that neither machine trains; the two arithmetics do not give the same numbers (docs/
    reliability.md, "Precision")."""
    if saved is None or saved == current:
        return
    raise ValueError(
        f"{path} trained in {saved}, and this call trains in {current} (precision='auto' resolves to the machine's "
        f"arithmetic): resuming would mix the two in one run. Set precision='{saved}' to finish it as it began, on a "
        f"machine that runs {saved} (python -m shc.pipeline --precision {saved}), or delete {path.parent} (or use "
        f"another run_dir) to train it again in {current}."
    )


def load_checkpoint(path: Path) -> dict[str, Any]:
    """``torch.load`` of a checkpoint written by the training loop; a damaged file is named with the fix."""
    import torch

    try:
        checkpoint = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # truncated, not a torch file, unpickling refused: all mean "damaged"
        reason = str(error).strip().splitlines()[0][:120] if str(error).strip() else ""
        raise ValueError(f"checkpoint {path} cannot be read ({type(error).__name__}: {reason}); delete it to "
                         "train that run again from its last intact state (or from scratch).") from None
    if not isinstance(checkpoint, dict):
        raise ValueError(f"checkpoint {path} does not hold a training checkpoint; delete it and rerun.")
    if checkpoint.get("version", 1) > CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint {path} is format {checkpoint['version']}, written by a newer version of shc "
                         f"(this one reads up to {CHECKPOINT_VERSION}); upgrade shc (pip install -U shc) to resume it.")
    return checkpoint
