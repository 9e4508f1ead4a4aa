"""Run every benchmark and print one table each: ``python benchmarks/run.py [--quick] [--only NAME]``.

Each ``benchmarks/bench_<name>.py`` exposes ``run(quick: bool) -> list[dict]``; the rows are printed as
a plain-text table. Speed and memory targets are read from these tables, never asserted in unit tests.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def print_table(title: str, rows: list[dict]) -> None:
    columns: list[str] = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    cells = [[str(row.get(column, "")) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[k]) for line in cells)) for k, column in enumerate(columns)]
    print(f"\n## {title}")
    print("  ".join(column.ljust(width) for column, width in zip(columns, widths)))
    print("  ".join("-" * width for width in widths))
    for line in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller problem sizes")
    parser.add_argument("--only", action="append", help="run only bench_<NAME>.py (repeatable)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(HERE))
    names = sorted(path.stem.removeprefix("bench_") for path in HERE.glob("bench_*.py"))
    if args.only:
        unknown = sorted(set(args.only) - set(names))
        if unknown:
            parser.error(f"unknown benchmark(s) {unknown}; known: {', '.join(names)}")
        names = [name for name in names if name in args.only]
    for name in names:
        start = time.perf_counter()
        rows = importlib.import_module(f"bench_{name}").run(quick=args.quick)
        print_table(f"{name} ({time.perf_counter() - start:.1f} s)", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
