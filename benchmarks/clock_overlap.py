"""Which hashing runs trained while other work shared the machine, so that their ``train_seconds`` count it.

A grid's measured cost is the sum of its runs' ``train_seconds`` (wall clock, issue 35), so a run whose training
overlapped a CI run, a report build or a pause (``kill -STOP``) states more time than it took. A stage-3 folder's
``codes.npz`` is written once, when the run ends (its ``metrics.json`` may be rewritten later, by an evaluation of a
newer version); its training began about ``train_seconds`` before (evaluation after training moves the start a few
seconds late). Every finished run whose interval ``[end - train_seconds, end]`` meets one of the ``--window``
intervals (merged where they overlap, so no second is counted twice) is listed; ``--move-to DIR`` moves those
folders there, under the same relative path, so that the grid's command trains them again (the rest stays cached).
A run resumed from its checkpoint by a later process (``resumed_after_epoch`` > 0 in its ``metrics.json``) trained
its first epochs at an unknown earlier time, so its interval is taken from its ``config.json`` (written when it was
first started) to its end, gap included: it is listed whenever any part of that span met a window.
A run still training has no ``metrics.json`` yet: check again when the grid has finished.

Run: ``python benchmarks/clock_overlap.py RUN_DIR --window START END [--window START END ...] [--move-to DIR]``,
times as ISO 8601 (``2026-11-29T16:26:00Z``; no zone means UTC).
"""

from __future__ import annotations

import argparse
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd


def parse_time(text: str) -> datetime:
    """``text`` (ISO 8601) as an aware UTC time; a time without a zone is UTC."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SystemExit(f"--window {text!r} is not an ISO 8601 time; write e.g. 2026-11-29T16:26:00Z.") from None
    return moment.replace(tzinfo=timezone.utc) if moment.tzinfo is None else moment.astimezone(timezone.utc)


def merged(windows: list[tuple[datetime, datetime]]) -> list[tuple[float, float]]:
    """The windows as sorted, disjoint ``(start, end)`` POSIX times (overlapping or touching ones joined)."""
    spans: list[list[float]] = []
    for start, end in sorted(windows):
        if end <= start:
            raise SystemExit(f"--window {start.isoformat()} {end.isoformat()}: the end is not after the start.")
        if spans and start.timestamp() <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], end.timestamp())
        else:
            spans.append([start.timestamp(), end.timestamp()])
    return [(start, end) for start, end in spans]


def overlapping_runs(run_dir: str | Path, windows: list[tuple[datetime, datetime]]) -> pd.DataFrame:
    """One row per finished stage-3 run under ``run_dir`` whose training interval meets a window: its folder
    (relative to ``run_dir``), start, end (UTC), ``train_seconds``, ``resumed_after_epoch`` and the seconds of overlap,
    longest first. The end is ``codes.npz``'s time (``metrics.json``'s for a folder without one); a resumed run starts
    at its ``config.json``'s time."""
    spans = merged(windows)
    rows = []
    for metrics in sorted(Path(run_dir).glob("**/stage3-*/metrics.json")):
        record = json.loads(metrics.read_text())
        seconds, resumed = float(record["train_seconds"]), int(record.get("resumed_after_epoch", 0))
        codes = metrics.with_name("codes.npz")
        ended = (codes if codes.exists() else metrics).stat().st_mtime
        began = ended - seconds
        if resumed and metrics.with_name("config.json").exists():  # first epochs in an earlier process
            began = min(began, metrics.with_name("config.json").stat().st_mtime)
        overlap = sum(max(0.0, min(ended, end) - max(began, start)) for start, end in spans)
        if overlap > 0:
            rows.append({"run": metrics.parent.relative_to(run_dir).as_posix(),
                         "start": _utc(began), "end": _utc(ended), "train_seconds": round(seconds, 1),
                         "resumed_after_epoch": resumed, "overlap_seconds": round(overlap, 1)})
    columns = ["run", "start", "end", "train_seconds", "resumed_after_epoch", "overlap_seconds"]
    return pd.DataFrame(rows, columns=columns).sort_values("overlap_seconds", ascending=False, ignore_index=True)


def _utc(moment: float) -> str:
    return datetime.fromtimestamp(moment, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def move_runs(run_dir: str | Path, runs: list[str], target: str | Path) -> list[Path]:
    """Move each run folder (relative to ``run_dir``) to the same relative path under ``target``; refuses, before
    moving any, when a folder is already there."""
    destinations = [Path(target) / relative for relative in runs]
    taken = [str(path) for path in destinations if path.exists()]
    if taken:
        raise SystemExit(f"{', '.join(taken)} exist(s) already; nothing moved: pick another --move-to folder.")
    for relative, destination in zip(runs, destinations, strict=True):
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(run_dir) / relative), str(destination))
    return destinations


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", help="a preset's run folder, e.g. runs/standard-fine")
    parser.add_argument("--window", nargs=2, action="append", metavar=("START", "END"), required=True,
                        help="an interval of other work (ISO 8601); repeat for several")
    parser.add_argument("--move-to", default=None, help="move the listed runs here, to be trained again")
    args = parser.parse_args(argv)
    if not Path(args.run_dir).is_dir():
        raise SystemExit(f"{args.run_dir} is not a folder; pass a preset's run folder, e.g. runs/standard-fine.")
    windows = [(parse_time(start), parse_time(end)) for start, end in args.window]
    table = overlapping_runs(args.run_dir, windows)
    print(f"## finished runs of {args.run_dir} whose training overlapped "
          + ", ".join(f"{_utc(start)} to {_utc(end)}" for start, end in merged(windows)) + " (UTC)")
    print(table.to_string(index=False) if len(table) else "none")
    if args.move_to and len(table):
        for path in move_runs(args.run_dir, table["run"].tolist(), args.move_to):
            print(f"moved to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
