"""Progress and the closing summary of a batch of report notebooks.

A batch run can take an hour; it should say what it is doing. :class:`BatchProgress` is a tqdm bar
over the notebooks (which one runs, how many are done, the ETA), and :func:`summary_table` /
:func:`print_summary` end the run with one line per notebook::

    notebook             status  time      report
    00_center_geometry   ok      1 min 5 s reports/quick/00_center_geometry/00_center_geometry-report.html
    04_retrieval         failed  12.3 s    -
    2 notebooks: 1 ok, 1 failed, 1 min 17 s of notebook time (summed: they may run at once)

Records are mappings or objects (e.g. the runner's result objects) with ``notebook``, ``status``,
``seconds`` and optionally ``variant`` and ``report`` (the reading page's path); see
:func:`_record_fields`.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

__all__ = ["BatchProgress", "format_duration", "print_summary", "summary_rows", "summary_table"]


def format_duration(seconds: float | None) -> str:
    """``"12.3 s"``, ``"6 min 12 s"``, ``"1 h 02 min"``; ``"-"`` for None/NaN."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    if seconds < 0:
        raise ValueError(f"seconds must be >= 0, got {seconds!r}.")
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = int(round(seconds))
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


def _field(record: Any, name: str, default: Any = None) -> Any:
    if isinstance(record, Mapping):
        return record.get(name, default)
    return getattr(record, name, default)


def _record_fields(record: Any) -> dict[str, Any]:
    """notebook (with ``/variant`` when there is one), status, seconds and report of one record."""
    notebook = _field(record, "notebook")
    job = _field(record, "job")  # the runner's ReportResult keeps them on its job
    if notebook is None and job is not None:
        notebook = _field(job, "notebook")
    if notebook is None:
        raise ValueError(f"a record needs a 'notebook' (got {record!r}).")
    variant = _field(record, "variant", _field(job, "variant") if job is not None else None)
    status = _field(record, "status")
    if status is None:
        raise ValueError(f"record {notebook!r} needs a 'status' such as 'ok' or 'failed'.")
    report = _field(record, "report")
    return {"notebook": f"{notebook}/{variant}" if variant else str(notebook), "status": str(status),
            "seconds": _field(record, "seconds"), "report": os.fspath(report) if report else None}  # fmt: skip


def summary_rows(records: Iterable[Any]) -> list[dict[str, str]]:
    """One ``{"notebook", "status", "time", "report"}`` dict of strings per record, in order."""
    rows = []
    for record in records:
        fields = _record_fields(record)
        rows.append({"notebook": fields["notebook"], "status": fields["status"],
                     "time": format_duration(fields["seconds"]), "report": fields["report"] or "-"})  # fmt: skip
    return rows


def summary_table(records: Iterable[Any]) -> str:
    """Plain-text table of the batch (notebook, status, time, report) and a totals line."""
    records = list(records)
    rows = summary_rows(records)
    if not rows:
        return "no notebooks ran\n"
    columns = ("notebook", "status", "time", "report")
    widths = {c: max(len(c), *(len(row[c]) for row in rows)) for c in columns}

    def line(values: Mapping[str, str]) -> str:
        return "  ".join(values[c].ljust(widths[c]) for c in columns).rstrip()

    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    seconds = [_record_fields(r)["seconds"] for r in records]
    total = sum(s for s in seconds if s is not None and not (isinstance(s, float) and math.isnan(s)))
    tally = ", ".join(f"{n} {status}" for status, n in counts.items())
    noun = "notebook" if len(rows) == 1 else "notebooks"
    body = [line({c: c for c in columns}), *(line(row) for row in rows)]
    return ("\n".join(body) + f"\n{len(rows)} {noun}: {tally}, {format_duration(total)} of notebook time (summed: they "
            "may run at once)\n")


def print_summary(records: Iterable[Any], file: TextIO | None = None) -> None:
    """Print :func:`summary_table` (to stderr by default, beside the progress bars)."""
    print(summary_table(records), end="", file=file if file is not None else sys.stderr, flush=True)


class BatchProgress:
    """A tqdm bar over the notebooks of a batch: the running notebook, notebooks done, elapsed time and ETA.

    Use ``begin(name)`` before a notebook and ``finish(record)`` after it; the bar shows how many
    failed so far. ``disable=None`` shows the bar only on a terminal (tqdm's default behaviour).

    Example::

        with BatchProgress(len(jobs)) as progress:
            for job in jobs:
                progress.begin(job.name)
                results.append(run(job))
                progress.finish(results[-1])
        print_summary(results)
    """

    def __init__(self, total: int, *, desc: str = "notebooks", disable: bool | None = None,
                 file: TextIO | None = None) -> None:  # fmt: skip
        from tqdm import tqdm  # plain text bar: a widget would put CDN-loaded widget state into pages

        if isinstance(total, bool) or not isinstance(total, int) or total < 0:
            raise ValueError(f"total must be the number of notebooks (an int >= 0), got {total!r}.")
        self._bar = tqdm(total=total, desc=desc, unit="notebook", disable=disable, file=file,
                         dynamic_ncols=True, leave=True)  # fmt: skip
        self.failed = 0

    def begin(self, name: str) -> None:
        """Show that ``name`` is running."""
        self._bar.set_postfix_str(f"running {name}" + (f", {self.failed} failed" if self.failed else ""))

    def finish(self, record: Any) -> None:
        """Count a finished notebook (``record`` as in :func:`summary_rows`)."""
        fields = _record_fields(record)
        self.failed += fields["status"] not in ("ok", "skipped", "cached")
        self._bar.update(1)
        suffix = f", {self.failed} failed" if self.failed else ""
        self._bar.set_postfix_str(f"{fields['notebook']} {fields['status']} in {format_duration(fields['seconds'])}"
                                  + suffix)  # fmt: skip

    def write(self, message: str) -> None:
        """Print a line without breaking the bar."""
        self._bar.write(message)

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> BatchProgress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
