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
#: since 2026-12-01 also ``device`` (its type) and ``precision`` (resolved) it trained on and in (format 2 readers
#: ignore them)
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


def _check_same_arithmetic(saved: Mapping[str, Any], device: str, precision: str, path: Path) -> None:
    """Refuse to resume a run on another kind of device or in another arithmetic than the one it trained on
    (``saved``: the checkpoint's ``device`` type and resolved ``precision``; a checkpoint written before 2026-12-01
    recorded neither and is not checked). ``precision="auto"`` is bf16 on a CPU with native bf16 and fp32 on one
    without, and a CPU's kernels are not a GPU's, so a run moved between two such machines would finish as a hybrid
    that neither trains; the two do not give the same numbers (docs/reliability.md, "Precision")."""
    was_device, was = saved.get("device"), saved.get("precision")
    if was is None or (was_device in (None, device) and was == precision):
        return
    again = f"or delete {path.parent} (or use another run_dir) to train it again from its first epoch"
    if was_device not in (None, device):
        raise ValueError(
            f"{path} trained on {was_device} in {was}, and this call trains on {device}: resuming would mix two "
            f"kinds of device in one run. Finish it on {was_device} (--device {was_device} --precision {was}), {again}.")
    slow = (" (on a CPU without native bf16 it is emulated, several times slower)" if was == "bf16" and device == "cpu"
            else "")
    raise ValueError(
        f"{path} trained in {was}, and this call trains in {precision} (precision='auto' resolves to the machine's "
        f"arithmetic): resuming would mix the two in one run. Set precision='{was}' (python -m shc.pipeline "
        f"--precision {was}) to go on in the arithmetic it began in{slow}, {again}.")


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
