"""Which hashing runs trained while other work shared the machine, so that their ``train_seconds`` count it.

A grid's measured cost is the sum of its runs' ``train_seconds`` (wall clock, issue 35), so a run whose training
overlapped a CI run, a report build or a pause (``kill -STOP``) states more time than it took. A stage-3 folder's
``metrics.json`` is written when the run ends; its training began about ``train_seconds`` before (evaluation after
training moves the start a few seconds late). Every finished run whose interval ``[end - train_seconds, end]`` meets
one of the ``--window`` intervals is listed; ``--move-to DIR`` moves those folders there, under the same relative
path, so that the grid's command trains them again (the rest stays cached). A run still training has no
``metrics.json`` yet: check again when the grid has finished.

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


def overlapping_runs(run_dir: str | Path, windows: list[tuple[datetime, datetime]]) -> pd.DataFrame:
    """One row per finished stage-3 run under ``run_dir`` whose training interval meets a window: its folder
    (relative to ``run_dir``), start, end, ``train_seconds`` and the seconds of overlap, longest overlap first."""
    for start, end in windows:
        if end <= start:
            raise SystemExit(f"--window {start.isoformat()} {end.isoformat()}: the end is not after the start.")
    rows = []
    for metrics in sorted(Path(run_dir).glob("**/stage3-*/metrics.json")):
        seconds = float(json.loads(metrics.read_text())["train_seconds"])
        ended = datetime.fromtimestamp(metrics.stat().st_mtime, tz=timezone.utc)
        began = ended.timestamp() - seconds
        overlap = sum(max(0.0, min(ended.timestamp(), end.timestamp()) - max(began, start.timestamp()))
                      for start, end in windows)
        if overlap > 0:
            rows.append({"run": metrics.parent.relative_to(run_dir).as_posix(),
                         "start": datetime.fromtimestamp(began, tz=timezone.utc).strftime("%H:%M:%S"),
                         "end": ended.strftime("%H:%M:%S"), "train_seconds": round(seconds, 1),
                         "overlap_seconds": round(overlap, 1)})
    columns = ["run", "start", "end", "train_seconds", "overlap_seconds"]
    return pd.DataFrame(rows, columns=columns).sort_values("overlap_seconds", ascending=False, ignore_index=True)


def move_runs(run_dir: str | Path, runs: list[str], target: str | Path) -> list[Path]:
    """Move each run folder (relative to ``run_dir``) to the same relative path under ``target``; refuses to
    overwrite a folder already there."""
    moved = []
    for relative in runs:
        destination = Path(target) / relative
        if destination.exists():
            raise SystemExit(f"{destination} exists already; pick another --move-to folder.")
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(Path(run_dir) / relative), str(destination))
        moved.append(destination)
    return moved


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
          + ", ".join(f"{start:%Y-%m-%d %H:%M:%S}-{end:%H:%M:%S} UTC" for start, end in windows))
    print(table.to_string(index=False) if len(table) else "none")
    if args.move_to and len(table):
        for path in move_runs(args.run_dir, table["run"].tolist(), args.move_to):
            print(f"moved to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
