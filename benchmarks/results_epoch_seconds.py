"""Seconds per training epoch of the runs in results files: which kind of machine trained them, where the files
predate the record of the arithmetic (``precision``, since 2026-11-29).

For every file, code length and method: the number of runs, ``train_seconds / epochs`` (min-max; a run's clock is
the whole run's, its validations included, and grows when it shared its cores) and the ``precision`` the runs
recorded (``-`` where the file has no such column or the runs left it empty). On ``standard-fine`` a 2-core Intel
Xeon with native bf16 trains about 2.5 s an epoch, a 2-core AMD EPYC without it (fp32) about 9-11 s, two runs at a
time (docs/standard-fine.md, "The 32-bit grid's CPU and arithmetic"): the seconds say which machine, not proof of
the arithmetic, which only a run trained again bit for bit shows.

Run: ``python benchmarks/results_epoch_seconds.py results/standard-fine-32bit.csv [more files]``.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def epoch_seconds_table(paths: list[Path]):
    """One row per (file, bits, method) of trained runs: runs, min and max seconds per epoch, precisions."""
    import pandas as pd

    rows = []
    for path in paths:
        frame = pd.read_csv(path).dropna(subset=["train_seconds", "epochs"])
        if "precision" not in frame:
            frame = frame.assign(precision=None)
        frame = frame.assign(per_epoch=frame["train_seconds"] / frame["epochs"])
        for (bits, method), group in frame.groupby(["bits", "method"], sort=True):
            kinds = sorted(str(value) for value in group["precision"].dropna().unique())
            rows.append({"file": path.name, "bits": int(bits), "method": method, "runs": len(group),
                         "s/epoch min": round(group["per_epoch"].min(), 1),
                         "s/epoch max": round(group["per_epoch"].max(), 1),
                         "precision": ", ".join(kinds) or "-"})
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="results files (python -m shc.results --write-csv)")
    args = parser.parse_args()
    missing = [str(path) for path in args.files if not path.is_file()]
    if missing:
        parser.error(f"no such results file: {', '.join(missing)} (the committed ones are in results/)")
    print(epoch_seconds_table(args.files).to_string(index=False))


if __name__ == "__main__":
    main()
