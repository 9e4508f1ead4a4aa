"""benchmarks/gpu_grid.sh's ``cells`` verb, dry-run on this CPU (``DEVICE=cpu``): a lent GPU's 15 minutes are too few
to find a broken script there (docs/gpu.md, section 7)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("bash") is None, reason="benchmarks/gpu_grid.sh needs bash")
def test_the_cells_verb_runs_every_entry_and_returns_its_run_folders_without_checkpoints(tmp_path):
    for name in ("shc", "tests", "benchmarks"):  # the device's copy of the tree, as far as the script reads it
        (tmp_path / name).symlink_to(REPO / name)
    out = tmp_path / "out"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "DEVICE": "cpu", "DEADLINE": "300", "OUT": str(out), "CELLS": "tiny:16:0:csq;tiny:16:0:mds"}
    result = subprocess.run(["bash", "benchmarks/gpu_grid.sh", "cells"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert {path.name for path in out.iterdir()} == {"env.txt", "gpu_tests.log", "cells-1-tiny-16.log",
                                                     "cells-2-tiny-16.log", "gpu-runs.tgz"}
    with tarfile.open(out / "gpu-runs.tgz") as archive:
        names = archive.getnames()
    runs = {Path(name).parts[3].rsplit("-", 1)[0] for name in names
            if len(Path(name).parts) > 3 and Path(name).parts[3].startswith("stage3-")}
    assert runs == {"stage3-csq-16bit", "stage3-mds-16bit"}  # both entries, one preset folder
    assert {Path(name).parts[0] for name in names} == {"tiny"}
    assert sum(name.endswith("/metrics.json") for name in names) == 2
    assert not [name for name in names if name.endswith((".pt", ".lock"))]  # checkpoints and locks stay behind
    assert "skipped" in (out / "gpu_tests.log").read_text()  # the gpu tests ran, and skip without a GPU
    # an empty CELLS is refused with the fix, before anything runs
    refused = subprocess.run(["bash", "benchmarks/gpu_grid.sh", "cells"], cwd=tmp_path,
                             env={**env, "CELLS": "", "OUT": str(tmp_path / "none")}, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode != 0 and "CELLS is empty: give preset:bits:seeds:methods entries" in refused.stderr
    assert not (tmp_path / "none").exists()
