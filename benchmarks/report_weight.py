"""What the 2026-11-29 cuts take out of a preset's next report build, read from its committed files (issue 38).

Two cuts, both second copies of numbers a preset folder already holds:

- ``bundle.zip`` is written only on request (``--bundle``): its bytes leave the committed folder;
- the stage-1 S is stored once a page: page 01's ``similarity_sources`` data drops the "data-dependent S" rows (they
  are in ``similarity_heatmap``'s file, at 8 digits) and page 00's ``similarity_vs_gram`` data drops S (it is in
  ``similarity``'s file). The first saving is measured by writing the committed sources table again without those
  rows, compressed as the committed file is (gzip in sets built before 2026-11-29, xz since, as
  ``shc.plots.save_table`` writes it now); the second is the size of page 00's ``similarity`` file, the S block the
  Gram figure's data repeated. A set built after the cuts has nothing left for them to take out (zeros).

Bytes of new files are about what a regeneration adds to the packed repository (gzip and zip do not delta), so the
total is an estimate of the cut in the four presets' regeneration, not a measurement of one.

Run: ``python benchmarks/report_weight.py [--reports reports] [--presets quick standard ...]``.
"""

from __future__ import annotations

import argparse
import gzip
from pathlib import Path

import pandas as pd

from shc.plots.style import compress_table_bytes

PRESETS = ("quick", "standard", "standard-pretrained", "standard-fine")


def _compressed_bytes(table: pd.DataFrame, like: Path) -> int:
    """``table``'s CSV compressed as the file ``like`` is (gzip for ``.gz``, else xz)."""
    text = table.to_csv(index=False).encode("utf-8")
    return len(gzip.compress(text, mtime=0) if like.name.endswith(".gz") else compress_table_bytes(text))


def _published(stem: Path) -> Path:
    """The file of ``stem`` (``.../name.csv``) as a set published it: compressed as xz or gzip, or plain."""
    for suffix in (".xz", ".gz", ""):
        if stem.with_name(stem.name + suffix).is_file():
            return stem.with_name(stem.name + suffix)
    return stem


def preset_cuts(folder: Path) -> dict[str, object]:
    """Bytes of ``folder``'s committed files that the two cuts leave out of its next build."""
    bundle = folder / "bundle.zip"
    sources_file = _published(folder / "01_similarity" / "figures" / "similarity_sources.csv")
    s_file = _published(folder / "00_center_geometry" / "figures" / "similarity.csv")
    sources_saved = 0
    if sources_file.is_file():
        sources = pd.read_csv(sources_file, keep_default_na=False)
        kept = sources[sources["source"] != "data-dependent S"]
        sources_saved = (_compressed_bytes(sources, sources_file) - _compressed_bytes(kept, sources_file)
                         if len(kept) < len(sources) else 0)
    gram_file = _published(folder / "00_center_geometry" / "figures" / "similarity_vs_gram.csv")
    repeats_s = gram_file.is_file() and (pd.read_csv(gram_file, usecols=["source"])["source"] == "S").any()
    row = {"preset": folder.name, "bundle.zip": bundle.stat().st_size if bundle.is_file() else 0,
           "S in 01 sources": sources_saved,
           "S in 00 Gram data": s_file.stat().st_size if s_file.is_file() and repeats_s else 0}
    row["cut (MiB)"] = round(sum(v for k, v in row.items() if k != "preset") / 2**20, 3)
    return row


def preset_table(args: argparse.Namespace, row) -> pd.DataFrame:
    """``row(folder)`` for each preset folder of ``args`` (``--reports``, ``--presets``, as :func:`add_arguments`
    declares them), an unbuilt preset refused with the command that builds it, and a last row summing every
    numeric column (shared by the report weight benchmarks: this one and ``data_weight.py``)."""
    missing = [name for name in args.presets if not (Path(args.reports) / name / "index.html").is_file()]
    if missing:
        raise SystemExit(f"no built report folder for {missing} under {args.reports}/; build it with "
                         "python -m shc.reports --preset NAME, or pass --presets with the built ones.")
    table = pd.DataFrame([row(Path(args.reports) / name) for name in args.presets])
    total = {"preset": "total", **{column: table[column].sum() for column in table.columns[1:]}}
    return pd.concat([table, pd.DataFrame([total])], ignore_index=True)


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--reports`` (the report root) and ``--presets`` (default: the four evidence presets)."""
    parser.add_argument("--reports", default="reports", help="the report root (default: reports)")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    table = preset_table(parser.parse_args(argv), preset_cuts)
    table["cut (MiB)"] = table["cut (MiB)"].round(3)
    print("## bytes of the committed report sets the 2026-11-29 cuts leave out of their next build")
    print(table.to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
