"""How many bytes the lossless PNG recompression of ``shc.plots.compact_png`` saves on the committed figures (issue 38).

Every committed figure is already a palette PNG written by Pillow (``optimize=True``). This re-encodes each one with
oxipng at several levels (the same pixels, palette and dpi: lossless) and prints, per preset, the bytes and the
seconds it took, so the level ``compact_png`` uses (``shc.plots.style.OXIPNG_LEVEL``) can be checked against the
others. A figure already written by oxipng gains little from a second pass: run it on a build from before the
change to see the saving a build gets.

``--colours 128 64`` adds a lossy question: each figure quantised to a palette of that many colours (Pillow's
maximum coverage, as ``compact_png`` does past 256), then oxipng at level 2; its row also gives the largest change of
any pixel's channel (of 255) and the share of a figure's pixels that moved (the mean over the figures), so the
bytes saved can be weighed against the picture.

``--libdeflate 12`` adds oxipng at ``OXIPNG_LEVEL`` with libdeflate at that compression level instead of oxipng's
default (11); ``compact_png`` uses ``OXIPNG_DEFLATE``.

``--heatmaps`` weighs a change of drawing instead: page 02's ``similarity_vs_gram`` (S beside each method's
H H^T / q) redrawn from its committed data (S and the centers' codes) twice, with the full squares and with the upper
triangle only (``triangle=True``, the default since 2026-12-03), each through ``compact_png``.

Run: ``python benchmarks/png_weight.py [--reports reports] [--presets quick ...] [--levels 1 2 4] [--colours 128]
[--libdeflate 12] [--heatmaps]``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import io

import numpy as np
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


def libdeflate_weight(folder: Path, compressions: list[int]) -> list[dict[str, object]]:
    """Bytes of ``folder``'s figure PNGs after oxipng at ``OXIPNG_LEVEL`` with libdeflate at each of
    ``compressions`` (lossless), with the seconds."""
    from shc.plots.style import OXIPNG_LEVEL

    pictures = [path.read_bytes() for path in sorted(folder.glob("*/figures/*.png"))]
    committed = sum(map(len, pictures))
    rows = []
    for compression in compressions:
        start = time.perf_counter()
        size = sum(len(oxipng.optimize_from_memory(data, level=OXIPNG_LEVEL,
                                                   deflate=oxipng.Deflaters.libdeflater(compression)))
                   for data in pictures)
        rows.append({"preset": folder.name, "figures": len(pictures),
                     "encoding": f"oxipng level {OXIPNG_LEVEL}, libdeflate {compression}", "MB": size / 1e6,
                     "share": size / committed, "seconds": time.perf_counter() - start})
    return rows


def heatmap_weight(folder: Path) -> list[dict[str, object]]:
    """Page 02's ``similarity_vs_gram`` of ``folder`` redrawn from its committed data, full squares and upper
    triangle, each written as the reports write it (``compact_png``)."""
    import matplotlib.pyplot as plt

    from shc import plots
    from shc.plots.style import compact_png, _savefig_dpi

    found = sorted((folder / "02_hash_centers" / "figures").glob("similarity_vs_gram.csv*"))
    if not found:
        raise SystemExit(f"no 02_hash_centers/figures/similarity_vs_gram.csv* under {folder}; build the preset first.")
    frame = pd.read_csv(found[0])
    similarity, _ = plots.matrix_from_frame(frame, "S")
    centers = {method: plots.centers_from_frame(frame, method)[0]
               for method in dict.fromkeys(frame.loc[frame["code"].notna(), "source"])}
    plots.use_style()
    rows = []
    for triangle in (False, True):
        start = time.perf_counter()
        fig = plots.plot_similarity_vs_gram(similarity, centers, triangle=triangle)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=_savefig_dpi(fig))
        plt.close(fig)
        size = len(compact_png(buffer.getvalue()))
        rows.append({"preset": folder.name, "figures": 1,
                     "encoding": f"02 similarity_vs_gram, {'upper triangle' if triangle else 'full squares'}",
                     "MB": size / 1e6, "share": size / rows[0]["MB"] / 1e6 if rows else 1.0,
                     "seconds": time.perf_counter() - start})
    return rows


def quantised(data: bytes, colours: int) -> tuple[bytes, int, float]:
    """``data`` (a PNG) as a palette of at most ``colours`` colours, oxipng level 2; with the largest channel change
    (0-255) and the share of pixels whose colour changed."""
    from PIL import Image

    rgb = Image.open(io.BytesIO(data)).convert("RGB")
    palette = rgb.quantize(colours, method=Image.Quantize.MAXCOVERAGE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    before = np.asarray(rgb, dtype=np.int16)
    after = np.asarray(palette.convert("RGB"), dtype=np.int16)
    change = np.abs(before - after)
    return (oxipng.optimize_from_memory(out.getvalue(), level=2), int(change.max()),
            float((change.max(axis=2) > 0).mean()))


def palette_weight(folder: Path, colours: list[int]) -> list[dict[str, object]]:
    """Bytes of ``folder``'s figure PNGs quantised to each of ``colours`` palette sizes (lossy), with the largest
    channel change and the share of changed pixels over all its figures."""
    files = sorted(folder.glob("*/figures/*.png"))
    if not files:
        raise SystemExit(f"no figures under {folder}/*/figures/; build the preset first (python -m shc.reports).")
    pictures = [path.read_bytes() for path in files]
    committed = sum(map(len, pictures))
    rows = []
    for count in colours:
        if not 2 <= count <= 256:
            raise SystemExit(f"--colours {count}: a PNG palette holds 2 to 256 colours; pass e.g. --colours 128 64.")
        start = time.perf_counter()
        results = [quantised(data, count) for data in pictures]
        size = sum(len(result[0]) for result in results)
        rows.append({"preset": folder.name, "figures": len(files), "encoding": f"{count} colours (lossy)",
                     "MB": size / 1e6, "share": size / committed, "seconds": time.perf_counter() - start,
                     "max channel change": max(result[1] for result in results),
                     "pixels changed": float(np.mean([result[2] for result in results]))})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", default="reports", help="the report root (default: reports)")
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--levels", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--colours", nargs="+", type=int, default=[],
                        help="also quantise to these palette sizes (lossy), e.g. 128 64")
    parser.add_argument("--libdeflate", nargs="+", type=int, default=[],
                        help="also oxipng at OXIPNG_LEVEL with libdeflate at these compression levels, e.g. 11 12")
    parser.add_argument("--heatmaps", action="store_true",
                        help="also redraw page 02's similarity_vs_gram, full squares against the upper triangle")
    args = parser.parse_args(argv)
    table = pd.DataFrame([row for name in args.presets
                          for row in [*png_weight(Path(args.reports) / name, args.levels),
                                      *libdeflate_weight(Path(args.reports) / name, args.libdeflate),
                                      *palette_weight(Path(args.reports) / name, args.colours),
                                      *(heatmap_weight(Path(args.reports) / name) if args.heatmaps else [])]])
    lossy = " and quantised to fewer colours" if args.colours else ""
    print(f"## the committed figures' PNG bytes, re-encoded losslessly by oxipng{lossy}")
    print(table.to_string(index=False, float_format=lambda value: f"{value:.3f}"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
