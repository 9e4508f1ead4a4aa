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
    assert lines[3] == "2 notebooks: 1 ok, 1 failed, 1 min 18 s of notebook time (summed: they may run at once)"
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


def test_notebook_workers_is_the_number_asked_one_per_core_for_auto_and_never_more_than_the_notebooks():
    import os

    from shc.reports.cli import notebook_workers

    assert notebook_workers(3, 7) == 3 and notebook_workers(3, 2) == 2 and notebook_workers(1, 7) == 1
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()  # not the host's
    assert notebook_workers("auto", 100) == usable and notebook_workers("auto", 1) == 1
    for bad in (0, -1, True, 2.0, "two"):
        with pytest.raises(ValueError, match="notebook_jobs must be a positive integer or 'auto'"):
            notebook_workers(bad, 7)


@pytest.mark.parametrize("workers", [1, 2])
def test_executed_yields_every_job_once_under_its_number_with_the_result_of_its_own_job(workers):
    from operator import attrgetter
    from types import SimpleNamespace

    from shc.reports.cli import _executed

    jobs = [SimpleNamespace(name=f"job{i}", ignored_overrides=("epochs",) if i == 2 else (), value=i * i)
            for i in range(5)]
    log: list[str] = []
    done = list(_executed(jobs, attrgetter("value"), workers, log.append))  # a picklable "execute": job -> value
    assert sorted(done) == [(number, (number - 1) ** 2) for number in range(1, 6)]
    assert [line for line in log if "running" in line] == [
        f"[{n}/5] job{n - 1}: running ...{' (--epochs does not apply)' if n == 3 else ''}" for n in range(1, 6)]
    assert ("executing 5 notebooks, 2 at a time ..." in log) == (workers == 2)


def test_a_pool_starts_the_pages_without_a_record_then_the_longest_by_their_last_build(tmp_path):
    import json

    from shc.reports.cli import _executed, longest_first
    from shc.reports.plan import plan_jobs

    jobs = plan_jobs("tiny")
    assert len(jobs) == 7
    recorded = {1: 5.0, 2: 40.0, 4: 12.5, 5: 40.0, 7: 1.0}  # notebook number -> seconds; 3 and 6 never built
    for number, seconds in recorded.items():
        folder = jobs[number - 1].output_dir(tmp_path)
        folder.mkdir(parents=True)
        (folder / "run.json").write_text(json.dumps({"status": "ok", "seconds": seconds}))
    order = longest_first(jobs, tmp_path)
    assert order == [3, 6, 2, 5, 4, 1, 7]
    log: list[str] = []
    from operator import attrgetter

    done = list(_executed(jobs, attrgetter("notebook"), 2, log.append, order))
    assert sorted(done) == [(n, job.notebook) for n, job in enumerate(jobs, start=1)]
    announced = [int(line[1:line.index("/")]) for line in log if line.endswith("running ...")]
    assert announced == order
