"""How many bytes the lossless PNG recompression of ``shc.plots.compact_png`` saves on the committed figures (issue 38).

Every committed figure is already a palette PNG written by Pillow (``optimize=True``). This re-encodes each one with
oxipng at several levels (the same pixels, palette and dpi: lossless) and prints, per preset, the bytes and the
seconds it took, so the level ``compact_png`` uses (``shc.plots.style.OXIPNG_LEVEL``) can be checked against the
others. A figure already written by oxipng gains little from a second pass: run it on a build from before the
change to see the saving a build gets.

Run: ``python benchmarks/png_weight.py [--reports reports] [--presets quick ...] [--levels 1 2 4]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import oxipng
import pandas as pd

PRESETS = ("quick", "standard", "standard-pretrained", "standard-fine")


def png_weight(folder: Path, levels: list[int]) -> list[dict[str, object]]:
    """Bytes of ``folder``'s figure PNGs as they are and after oxipng at each of ``levels``, with the seconds."""
    files = sorted(folder.glob("*/figures/*.png"))
    if not files:
        raise SystemExit(f"no figures under {folder}/*/figures/; build the preset first (python -m shc.reports).")
    pictures = [path.read_bytes() for path in files]
    rows = [{"preset": folder.name, "figures": len(files), "encoding": "as committed",
             "MB": sum(map(len, pictures)) / 1e6, "share": 1.0, "seconds": 0.0}]
    for level in levels:
        start = time.perf_counter()
        size = sum(len(oxipng.optimize_from_memory(data, level=level)) for data in pictures)
        rows.append({"preset": folder.name, "figures": len(files), "encoding": f"oxipng level {level}",
                     "MB": size / 1e6, "share": size / rows[0]["MB"] / 1e6, "seconds": time.perf_counter() - start})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", default="reports", help="the report root (default: reports)")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--levels", nargs="+", type=int, default=[1, 2, 4])
    args = parser.parse_args(argv)
    table = pd.DataFrame([row for name in args.presets for row in png_weight(Path(args.reports) / name, args.levels)])
    print("## the committed figures' PNG bytes, re-encoded losslessly by oxipng")
    print(table.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
