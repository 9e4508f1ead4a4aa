"""The summary convention: a notebook publishes its headline numbers, the index shows them."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from shc._io import write_text

__all__ = ["SUMMARY_FILE", "SummaryTable", "format_summary", "publish_summary", "read_summary", "show_summary"]

SUMMARY_FILE = "summary.json"


def publish_summary(output_dir: str | os.PathLike, summary: Mapping[str, Any]) -> Path:
    """Publish a notebook's headline numbers; the index shows them in one line.

    Call it at the end of a notebook, e.g.
    ``publish_summary(output_dir, {"mAP@ALL (shc)": 0.812, "d_min (shc)": 10})``. Writes
    ``output_dir/summary.json`` atomically, keeping the insertion order.

    Parameters
    ----------
    output_dir : str or PathLike
        The notebook's ``output_dir`` parameter.
    summary : mapping str -> number or str
        Headline name -> value; numpy scalars are accepted. Keep it to a handful of entries.
    """
    if not isinstance(summary, Mapping) or not summary:
        raise ValueError("summary must be a non-empty mapping name -> number or string, e.g. {'mAP@ALL': 0.81}.")
    clean = {}
    for name, value in summary.items():
        if not isinstance(name, str):
            raise TypeError(f"summary names must be strings, got {name!r}.")
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # numpy / torch scalars
            value = value.item()
        if not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"summary[{name!r}] must be a number or string, got {type(value).__name__}.")
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN/inf; keep it visible instead of failing the report
        clean[name] = value
    path = Path(output_dir) / SUMMARY_FILE
    write_text(path, json.dumps(clean, indent=2) + "\n")
    return path


def read_summary(output_dir: str | os.PathLike) -> dict[str, Any] | None:
    """Return the summary a notebook published in ``output_dir``, or None if there is none."""
    path = Path(output_dir) / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def format_summary(summary: Mapping[str, Any] | None) -> str:
    """One line, ``name value · name value``; floats with 4 significant digits."""
    if not summary:
        return ""
    return " · ".join(f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}"
                      for name, value in summary.items())  # fmt: skip



class SummaryTable:
    """A notebook's headline numbers shown as a small table with sensible rounding (no numpy reprs)."""

    def __init__(self, summary: Mapping[str, Any], digits: int = 4) -> None:
        self.summary, self.digits = dict(summary), digits

    def _repr_html_(self) -> str:
        from shc.stats import summary_table

        return summary_table(self.summary, self.digits, fmt="html")

    def __repr__(self) -> str:
        from shc.stats import summary_table

        return summary_table(self.summary, self.digits, fmt="markdown")


def show_summary(summary: Mapping[str, Any], digits: int = 4) -> SummaryTable:
    """Display ``summary`` (what :func:`publish_summary` wrote) as a table: end a notebook with it."""
    return SummaryTable(summary, digits)
