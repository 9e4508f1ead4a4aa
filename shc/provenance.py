"""Provenance of a report or a run: which code, which environment, which command."""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["git_state", "provenance"]


def git_state(folder: str | os.PathLike | None = None) -> dict[str, Any]:
    """``{"commit": sha or None, "dirty": bool or None}`` of the checkout holding ``folder`` (never raises)."""
    folder = Path(folder) if folder is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder,
                                capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": commit or None, "dirty": bool(status.strip())}


def provenance(command: Sequence[str] | None = None, preset: str | None = None,
               overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What produced a result: git commit (and whether the tree was dirty), versions, command, machine."""
    import numpy
    import torch

    from shc import __version__

    return {
        **git_state(),
        "versions": {"shc": __version__, "torch": torch.__version__, "numpy": numpy.__version__,
                     "python": platform.python_version()},
        "command": list(command) if command is not None else None,
        "preset": preset,
        "overrides": dict(overrides or {}),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "device": "cuda" if torch.cuda.is_available() else "cpu",
    }
