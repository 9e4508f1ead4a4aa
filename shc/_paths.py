"""Where the repository around this package is, for what lives beside ``shc/`` in a checkout: the
notebooks that the report runner executes (:func:`shc.reports.plan.default_notebooks_dir`) and the runs
they read (:func:`shc.presets.default_run_dir`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["repository_root"]


def repository_root() -> Path:
    """The checkout holding this package (the folder with ``notebooks/`` beside ``shc/``), else the working
    directory (an installed package has no notebooks beside it)."""
    beside_package = Path(__file__).resolve().parents[1]
    return beside_package if (beside_package / "notebooks").is_dir() else Path.cwd()
