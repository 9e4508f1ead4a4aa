"""Tests of shc.progress: durations, the closing summary table and the batch progress bar."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from shc import progress


def test_format_duration():
    assert progress.format_duration(12.34) == "12.3 s"
    assert progress.format_duration(372) == "6 min 12 s"
    assert progress.format_duration(3725) == "1 h 02 min"
    assert progress.format_duration(None) == "-" and progress.format_duration(float("nan")) == "-"
    with pytest.raises(ValueError, match=">= 0"):
        progress.format_duration(-1)


def test_summary_table_lists_every_notebook_and_totals():
    records = [
        {"notebook": "00_center_geometry", "status": "ok", "seconds": 65.2,
         "report": Path("reports/quick/00_center_geometry/00_center_geometry-report.html")},
        SimpleNamespace(job=SimpleNamespace(notebook="04_retrieval", variant="bits-32"), status="failed",
                        seconds=12.34, report=None),
    ]  # fmt: skip
    table = progress.summary_table(records)
    lines = table.splitlines()
    assert lines[0].split() == ["notebook", "status", "time", "report"]
    assert lines[1].split() == ["00_center_geometry", "ok", "1", "min", "5", "s",
                                "reports/quick/00_center_geometry/00_center_geometry-report.html"]  # fmt: skip
    assert lines[2].split() == ["04_retrieval/bits-32", "failed", "12.3", "s", "-"]
    assert lines[3] == "2 notebooks: 1 ok, 1 failed, 1 min 18 s in all"
    assert lines[1].index("ok") == lines[2].index("failed")  # aligned columns
    assert progress.summary_table([]) == "no notebooks ran\n"
    with pytest.raises(ValueError, match="status"):
        progress.summary_table([{"notebook": "x"}])
    stream = io.StringIO()
    progress.print_summary(records, file=stream)
    assert stream.getvalue() == table


def test_batch_progress_counts_notebooks_and_failures():
    stream = io.StringIO()
    with progress.BatchProgress(2, disable=False, file=stream) as bar:
        bar.begin("00_center_geometry")
        assert "running 00_center_geometry" in stream.getvalue()
        bar.finish({"notebook": "00_center_geometry", "status": "failed", "seconds": 3.0})
        bar.begin("04_retrieval")
        bar.finish({"notebook": "04_retrieval", "status": "ok", "seconds": 1.0})
    output = stream.getvalue()
    assert "2/2" in output and "1 failed" in output and "04_retrieval ok in 1.0 s" in output
    assert bar.failed == 1
    with pytest.raises(ValueError, match="total"):
        progress.BatchProgress(-1)
