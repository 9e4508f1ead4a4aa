"""What the 2026-11-29 cuts take out of a preset's next report build, read from its committed files (issue 38).

Two cuts, both second copies of numbers a preset folder already holds:

- ``bundle.zip`` is written only on request (``--bundle``): its bytes leave the committed folder;
- the stage-1 S is stored once a page: page 01's ``similarity_sources`` data drops the "data-dependent S" rows (they
  are in ``similarity_heatmap``'s file, at 8 digits) and page 00's ``similarity_vs_gram`` data drops S (it is in
  ``similarity``'s file). The first saving is measured by writing the committed sources table again without those
  rows (gzip, as ``shc.plots.save_table`` writes it); the second is the size of page 00's ``similarity`` file, the
  S block the Gram figure's data repeated.

Bytes of new files are about what a regeneration adds to the packed repository (gzip and zip do not delta), so the
total is an estimate of the cut in the four presets' regeneration, not a measurement of one.

Run: ``python benchmarks/report_weight.py [--reports reports] [--presets quick standard ...]``.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import pandas as pd

PRESETS = ("quick", "standard", "standard-pretrained", "standard-fine")


def _gzip_bytes(table: pd.DataFrame) -> int:
    return len(gzip.compress(table.to_csv(index=False).encode("utf-8"), mtime=0))


def preset_cuts(folder: Path) -> dict[str, object]:
    """Bytes of ``folder``'s committed files that the two cuts leave out of its next build."""
    bundle = folder / "bundle.zip"
    sources_file = folder / "01_similarity" / "figures" / "similarity_sources.csv.gz"
    s_file = folder / "00_center_geometry" / "figures" / "similarity.csv.gz"
    sources_saved = 0
    if sources_file.is_file():
        sources = pd.read_csv(sources_file, keep_default_na=False)
        sources_saved = _gzip_bytes(sources) - _gzip_bytes(sources[sources["source"] != "data-dependent S"])
    row = {"preset": folder.name, "bundle.zip": bundle.stat().st_size if bundle.is_file() else 0,
           "S in 01 sources": sources_saved, "S in 00 Gram data": s_file.stat().st_size if s_file.is_file() else 0}
    row["cut (MiB)"] = round(sum(v for k, v in row.items() if k != "preset") / 2**20, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", default="reports", help="the report root (default: reports)")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    args = parser.parse_args(argv)
    missing = [name for name in args.presets if not (Path(args.reports) / name / "index.html").is_file()]
    if missing:
        raise SystemExit(f"no built report folder for {missing} under {args.reports}/; build it with "
                         "python -m shc.reports --preset NAME, or pass --presets with the built ones.")
    table = pd.DataFrame([preset_cuts(Path(args.reports) / name) for name in args.presets])
    total = {"preset": "total", **{column: table[column].sum() for column in table.columns[1:]}}
    table = pd.concat([table, pd.DataFrame([total])], ignore_index=True)
    table["cut (MiB)"] = table["cut (MiB)"].round(3)
    print("## bytes of the committed report sets the 2026-11-29 cuts leave out of their next build")
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
