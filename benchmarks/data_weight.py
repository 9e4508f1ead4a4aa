"""How many bytes the compression of the report sets' figure data and tables takes, gzip against xz (issue 38).

A preset's larger tables (figure data past ``shc.plots.style.COMPRESS_ROWS`` rows or ``COMPRESS_CELLS`` cells) are
stored compressed; compressed files do not delta, so git stores each one anew whenever a number in it moves, and
their bytes are about what they add to the packed repository at such a regeneration. This reads every compressed
table of each committed preset folder (``*.csv.gz`` of sets built before 2026-11-29, ``*.csv.xz`` since), and prints
its bytes as gzip -9 (header without time or name, as ``save_table`` wrote it until then) and as xz (what
``shc.plots.style.compress_table_bytes`` writes now), with the CSV text's own size and the seconds each took.

Run: ``python benchmarks/data_weight.py [--reports reports] [--presets quick standard ...]``.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_weight import add_arguments, preset_table  # noqa: E402  (the same --reports/--presets and total row)

from shc.plots import read_table_text  # noqa: E402
from shc.plots.style import compress_table_bytes  # noqa: E402

def data_weight(folder: Path) -> dict[str, object]:
    """Bytes of ``folder``'s compressed tables: as plain CSV, as gzip -9 and as xz, with the seconds of each."""
    files = sorted(path for pattern in ("**/*.csv.gz", "**/*.csv.xz") for path in folder.glob(pattern))
    if not files:
        raise SystemExit(f"no compressed tables under {folder}/; build the preset first (python -m shc.reports).")
    texts = [read_table_text(path).encode("utf-8") for path in files]
    start = time.perf_counter()
    gzipped = sum(len(gzip.compress(text, compresslevel=9, mtime=0)) for text in texts)
    middle = time.perf_counter()
    xz = sum(len(compress_table_bytes(text)) for text in texts)
    end = time.perf_counter()
    return {"preset": folder.name, "files": len(files), "CSV MB": sum(map(len, texts)) / 1e6,
            "gzip -9 MB": gzipped / 1e6, "xz MB": xz / 1e6, "xz / gzip": xz / gzipped,
            "gzip s": middle - start, "xz s": end - middle}


def main(argv: list[str] | None = None) -> int:
    parser = add_arguments(argparse.ArgumentParser(description=__doc__.split("\n\n")[0]))
    table = preset_table(parser.parse_args(argv), data_weight)
    table.loc[table.index[-1], "xz / gzip"] = table["xz MB"].iloc[-1] / table["gzip -9 MB"].iloc[-1]
    print("## the committed report sets' compressed tables: their CSV text as gzip -9 and as xz (what save_table "
          "writes now)")
    print(table.round({"CSV MB": 3, "gzip -9 MB": 3, "xz MB": 3, "xz / gzip": 3, "gzip s": 2, "xz s": 2})
          .to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
