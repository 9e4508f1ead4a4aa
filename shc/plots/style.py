"""One look for every figure: the style sheet, one style per method (colour, marker, line), and saving
figures (PNG + SVG + the CSV of what they plot) and tables atomically."""

from __future__ import annotations

import hashlib
import io
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from shc._io import atomic_path, write_bytes
from shc.plots.alt_text import figure_alt_text, plain_text  # noqa: F401 (plain_text: shc.plots' name)

#: One style per method, the same in every figure: colour, marker and line style, so curves can be
#: told apart in colour, in greyscale print and by colour-blind readers. Colours come from the
#: colour-blind-safe Okabe-Ito palette (center generators; SHC gets vermillion) and Paul Tol's
#: "muted" palette; center generators draw solid lines (the MDS-centers ablation "distance" dash-dot,
#: "random" dotted), the deep-hashing baselines dashed lines. Every marker is different.
METHOD_STYLES: dict[str, dict[str, str]] = {
    "shc": {"color": "#D55E00", "marker": "o", "linestyle": "-"},  # vermillion
    "shc-ls": {"color": "#8C2D04", "marker": "1", "linestyle": "-"},  # tri, unlike csq's diamond  # dark vermillion: SHC objective, local search
    "semantic": {"color": "#CC79A7", "marker": "s", "linestyle": "-"},  # reddish purple (ablation: S only)
    "mds": {"color": "#0072B2", "marker": "^", "linestyle": "-"},  # blue
    "distance": {"color": "#003F6B", "marker": "v", "linestyle": "-."},  # dark blue: MDS centers, SHC's loss
    "csq": {"color": "#009E73", "marker": "D", "linestyle": "-"},  # bluish green
    "random": {"color": "#7F7F7F", "marker": "x", "linestyle": ":"},  # grey
    "dpsh": {"color": "#E69F00", "marker": "P", "linestyle": "--"},  # orange
    "dtsh": {"color": "#56B4E9", "marker": "X", "linestyle": "--"},  # sky blue
    "hashnet": {"color": "#882255", "marker": "<", "linestyle": "--"},  # wine (Tol)
    "greedyhash": {"color": "#AA4499", "marker": ">", "linestyle": "--"},  # purple (Tol)
    "idhn": {"color": "#44AA99", "marker": "h", "linestyle": "--"},  # teal (Tol)
    "lth": {"color": "#999933", "marker": "*", "linestyle": "--"},  # olive (Tol)
    "orthohash": {"color": "#332288", "marker": "p", "linestyle": "--"},  # indigo (Tol)
    "crh": {"color": "#EE3377", "marker": "8", "linestyle": "-."},  # magenta (Tol vibrant): centers learnt in training
    "scrh": {"color": "#CC3311", "marker": "+", "linestyle": "-."},  # red (Tol vibrant): CRH from semantic centers
    "scrh-start": {"color": "#EE7733", "marker": "4", "linestyle": ":"},  # orange (Tol vibrant): its start alone
    "scrh-late": {"color": "#BB5566", "marker": "3", "linestyle": "-."},  # rose (Tol): its first reassignment late
}


#: Colour of each method (the ``color`` of :data:`METHOD_STYLES`).
METHOD_COLORS: dict[str, str] = {name: style["color"] for name, style in METHOD_STYLES.items()}


#: Line style of a run with another class-similarity source (``shc.results.run_label``: "shc (text S)"):
#: the method's colour and marker, this line style.
SIMILARITY_LINESTYLES: dict[str, object] = {
    "logits": "-",
    "text": ":",
    "labels": (0, (5, 1, 1, 1)),  # dash-dot, dense
    "hierarchy": (0, (1, 1)),  # densely dotted
}


# Styles handed to unknown method names, chosen by a stable hash of the name (Tol "muted" and Okabe-Ito
# colours not used above; markers and line styles cycle independently).
_FALLBACK_COLORS = ("#117733", "#DDCC77", "#CC6677", "#88CCEE", "#000000", "#6699CC", "#997700", "#EE99AA")


_FALLBACK_MARKERS = ("d", "H", "8", "1", "2", "3", "4", "+")


_FALLBACK_LINESTYLES = ("-", "--", "-.", ":", (0, (3, 1, 1, 1, 1, 1)))


_VARIANT = re.compile(r"^(?P<method>.+?)\s*\((?P<source>[^()]+?)\s+s\)$")  # lower-cased "shc (text S)"


#: Matplotlib settings applied on top of seaborn's "whitegrid" theme by :func:`use_style`.
STYLE_RC: dict[str, object] = {
    "figure.dpi": 110,
    "savefig.dpi": 120,  # issue 38: 24% fewer PNG bytes than 150 (03's convergence: 132 -> 101 kB); pages show 110
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.framealpha": 0.85,
    "grid.linestyle": ":",
    "svg.fonttype": "none",  # text stays text in SVG: smaller, searchable, editable
    "svg.hashsalt": "shc",  # stable element ids, so re-saved SVGs diff cleanly
    "image.interpolation": "nearest",
}


_DIVERGING_CMAP = "RdBu_r"  # similarities in [-1, 1]: blue = dissimilar, red = similar


def use_style(context: str = "notebook") -> None:
    """Apply the report style (seaborn "whitegrid" theme plus :data:`STYLE_RC`) globally.

    Parameters
    ----------
    context : str
        Seaborn plotting context ("paper", "notebook", "talk", "poster") that scales fonts and lines.
    """
    import seaborn as sns

    sns.set_theme(context=context, style="whitegrid", palette="colorblind", rc=STYLE_RC)
    install_alt_text_formatter()


#: Colours of a palette PNG (8 bits an index): :func:`compact_png`'s budget.
PALETTE_COLORS = 256
#: A colour covering at least this share of a figure's pixels keeps its value within :data:`PINNED_TOLERANCE` in
#: :func:`compact_png` (a band's tint, a gridline's grey, a method's line): on page 03's convergence figure of
#: ``standard-pretrained`` maximum coverage alone had turned LTH's pale olive band peach (SHC's hue) and grey gridlines
#: pink and green, 8-15 levels off (2026-12-04).
PINNED_SHARE = 1e-3
#: Levels (of 255, any channel) a colour of :data:`PINNED_SHARE` may move before it gets an entry of its own: 4 keeps
#: hues (a grey stays grey to the eye) at 5% more bytes on that convergence figure and none on a 333-class heatmap,
#: whose continuous colour map is already within 6; exact (0) cost 7% there and 43% on the heatmap.
PINNED_TOLERANCE = 4


#: oxipng's optimisation level in :func:`compact_png`: on quick's 43 committed figures level 2 keeps 94% of Pillow's
#: bytes in 7 s, levels 4-6 91% in 26-56 s, zopfli 89% in 370 s (2026-11-29, the 2-core machine;
#: benchmarks/png_weight.py prints the table).
OXIPNG_LEVEL = 2
#: libdeflate's compression level for oxipng's deflate in :func:`compact_png` (oxipng's default is 11): 12 keeps
#: 96-97% of level 11's bytes on the committed figures of the four presets at about 0.2 s more a figure (2026-12-03,
#: benchmarks/png_weight.py), where oxipng level 4 takes 2.5 times as long for 97% and zopfli 8 times for 96%.
OXIPNG_DEFLATE = 12


def compact_png(data: bytes) -> bytes:
    """``data`` (PNG bytes) as a palette PNG of at most :data:`PALETTE_COLORS` colours, when that is smaller.

    Matplotlib writes 32-bit RGBA; a chart has few distinct colours plus anti-aliasing ramps, so a palette
    image is about a quarter of the size: what keeps a preset's committed reports (figure files and the
    pages' embedded images) under 20 MB. An opaque image with at most 256 distinct colours is converted
    exactly (the palette is its colour set); one with more is quantised by maximum coverage, every colour covering
    :data:`PINNED_SHARE` of the figure kept within :data:`PINNED_TOLERANCE` (white, a band's tint, a gridline's grey;
    :func:`_quantised`). An image with transparent pixels, or one the palette would not make smaller, is returned
    unchanged. The resolution (dpi) is kept. The palette PNG is then recompressed losslessly by oxipng
    (:data:`OXIPNG_LEVEL`, :data:`OXIPNG_DEFLATE`).
    """
    import oxipng
    from PIL import Image

    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"compact_png expects PNG bytes, got {type(data).__name__}; pass fig.savefig(..., format='png') output.")
    if not bytes(data[:8]) == b"\x89PNG\r\n\x1a\n":
        raise ValueError("compact_png expects PNG bytes (they start with the PNG signature); got another format.")
    image = Image.open(io.BytesIO(data))
    if image.mode == "P":
        return bytes(data)
    rgba = np.asarray(image.convert("RGBA"))
    if (rgba[..., 3] != 255).any():
        return bytes(data)  # transparency: a palette with alpha is not worth the risk to the picture
    rgb = np.ascontiguousarray(rgba[..., :3])
    colours, index = np.unique(rgb.reshape(-1, 3), axis=0, return_inverse=True)
    if len(colours) <= PALETTE_COLORS:  # exact: the palette is the image's own colour set
        palette = Image.fromarray(index.reshape(rgb.shape[:2]).astype(np.uint8))  # mode "L" ...
        palette.putpalette(colours.astype(np.uint8).ravel().tolist())  # ... becomes "P" with this palette
    else:
        palette = _quantised(rgb)
    out = io.BytesIO()
    options = {"dpi": image.info["dpi"]} if "dpi" in image.info else {}
    palette.save(out, format="PNG", optimize=True, **options)
    # oxipng (lossless: the same pixels, palette and dpi) tries each row's filter and a better deflate: 6-9% fewer
    # bytes on the report figures than Pillow's optimize at level 2 (about 0.2 s a figure), 3-4% more with libdeflate
    # 12 (about 0.4 s; benchmarks/png_weight.py)
    smaller = oxipng.optimize_from_memory(out.getvalue(), level=OXIPNG_LEVEL,
                                          deflate=oxipng.Deflaters.libdeflater(OXIPNG_DEFLATE))
    return smaller if len(smaller) < len(data) else bytes(data)


def _quantised(rgb: np.ndarray):
    """``rgb`` (H, W, 3 uint8, more than :data:`PALETTE_COLORS` colours) as a palette image: Pillow's maximum-coverage
    clusters, each entry set to its most frequent member (a cluster's mean is a colour the figure never drew), then
    every colour covering :data:`PINNED_SHARE` of the pixels or more that its entry moves by more than
    :data:`PINNED_TOLERANCE` given an exact entry of its own (the least used entries make room; their pixels move to
    the nearest remaining entry)."""
    from PIL import Image

    flat = rgb.reshape(-1, 3).astype(np.int64)
    key = (flat[:, 0] << 16) | (flat[:, 1] << 8) | flat[:, 2]
    colours, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    clusters = Image.fromarray(rgb).quantize(PALETTE_COLORS, method=Image.Quantize.MAXCOVERAGE)
    index = np.asarray(clusters).ravel().astype(np.int64)
    palette = np.zeros((PALETTE_COLORS, 3), np.int64)
    given = np.asarray(clusters.getpalette(), dtype=np.int64).reshape(-1, 3)[:PALETTE_COLORS]
    palette[: len(given)] = given

    def rgb_of(packed):
        return np.stack([(packed >> 16) & 255, (packed >> 8) & 255, packed & 255], axis=-1)

    pairs, pair_counts = np.unique(index * (1 << 24) + key, return_counts=True)
    entry, member = pairs >> 24, pairs & 0xFFFFFF
    order = np.lexsort((pair_counts, entry))  # by entry, most frequent member last
    last = order[np.r_[entry[order][1:] != entry[order][:-1], True]]
    palette[entry[last]] = rgb_of(member[last])
    pinned = np.zeros(PALETTE_COLORS, bool)
    by_colour = np.argsort(inverse, kind="stable")  # the pixels of colour c: by_colour[starts[c]:starts[c + 1]]
    starts = np.r_[0, np.cumsum(counts)]
    use = np.bincount(index, minlength=PALETTE_COLORS)
    major = np.flatnonzero(counts >= PINNED_SHARE * key.size)
    for colour in major[np.argsort(-counts[major], kind="stable")]:
        pixels = by_colour[starts[colour]:starts[colour + 1]]
        exact = rgb_of(colours[colour])
        if (np.abs(palette[index[pixels]] - exact).max() <= PINNED_TOLERANCE
                and (index[pixels] == index[pixels[0]]).all()):
            pinned[index[pixels[0]]] = True
            continue
        free = np.flatnonzero(~pinned)
        if free.size == 0:  # more such colours than entries (blocks of 300 flat colours): the rest stay clustered
            break
        slot = free[np.argmin(use[free])]
        palette[slot], pinned[slot] = exact, True
        evicted = np.flatnonzero(index == slot)
        evicted = evicted[inverse[evicted] != colour]
        np.subtract.at(use, index[pixels], 1)
        index[pixels] = slot
        use[slot] = pixels.size
        if evicted.size:  # nearest of the other entries (squared RGB distance)
            others = np.flatnonzero(np.arange(PALETTE_COLORS) != slot)
            moved, candidates = flat[evicted], palette[others]
            distance = (candidates**2).sum(1)[None, :] - 2 * moved @ candidates.T
            index[evicted] = others[distance.argmin(1)]
            np.add.at(use, index[evicted], 1)
    image = Image.fromarray(index.reshape(rgb.shape[:2]).astype(np.uint8))
    image.putpalette(palette.astype(np.uint8).ravel().tolist())
    return image


def install_alt_text_formatter() -> bool:
    """In IPython, make every displayed matplotlib figure carry :func:`figure_alt_text` as the alt text of its
    PNG (output metadata ``image/png.alt``, which :func:`shc.reports.render_html` puts on the page's image),
    and make the PNG a palette image (:func:`compact_png`: a quarter of the bytes on the report pages).
    Returns False outside IPython or without a PNG formatter (nothing to do)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    if shell is None:
        return False
    formatter = shell.display_formatter.formatters["image/png"]
    try:
        previous = formatter.lookup_by_type(Figure)
    except KeyError:
        return False
    if getattr(previous, "_shc_alt_text", False):
        return True

    def png_with_alt_text(fig):
        saved = _saved_png(fig)
        if saved is not None:  # show the saved file itself: the report page then links it (stored once)
            data, (width, _height) = saved
            scale = fig.dpi / float(getattr(fig, "_shc_png_dpi", fig.dpi))
            return data, {"alt": figure_alt_text(fig), "width": max(1, round(width * scale))}
        data = previous(fig)
        if data is None:
            return None
        metadata = {}
        if isinstance(data, tuple):
            data, metadata = data
        if isinstance(data, (bytes, bytearray)):
            data = compact_png(data)
        elif isinstance(data, str):  # matplotlib-inline's formatter hands base64 text (print_figure(base64=True))
            import base64

            data = base64.b64encode(compact_png(base64.b64decode(data))).decode("ascii")
        return data, {**(metadata or {}), "alt": figure_alt_text(fig)}

    png_with_alt_text._shc_alt_text = True
    formatter.for_type(Figure, png_with_alt_text)
    return True


def _saved_png(fig: Figure) -> tuple[bytes, tuple[int, int]] | None:
    """The PNG :func:`save_figure` wrote for ``fig`` and its pixel size, while the figure has not changed since
    (matplotlib marks a figure ``stale`` when an artist changes after its last draw); else None."""
    data = getattr(fig, "_shc_png", None)
    if data is None or fig.stale:
        return None
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")  # the IHDR chunk
    return data, (width, height)


def method_style(name: str) -> dict[str, object]:
    """Return the plot style of a method, the same in every figure: ``{"color", "marker", "linestyle"}``.

    Registered methods (case-insensitive) get their entry of :data:`METHOD_STYLES`; a run label with
    another similarity source, ``"<method> (<source> S)"`` (:func:`shc.results.run_label`), gets the
    method's colour and marker with the source's line style (:data:`SIMILARITY_LINESTYLES`); any other
    name gets a colour, marker and line style picked by a stable hash of the name (identical across
    processes and runs). Pass the dict straight to ``axes.plot(..., **method_style(name))``.
    """
    if not isinstance(name, str):
        raise TypeError(f"method name must be a str, got {type(name).__name__}; pass e.g. 'shc'.")
    key = name.strip().lower()
    if key in METHOD_STYLES:
        return dict(METHOD_STYLES[key])
    variant = _VARIANT.match(key)
    if variant and variant["method"] in METHOD_STYLES:
        base = dict(METHOD_STYLES[variant["method"]])
        source = variant["source"]
        base["linestyle"] = SIMILARITY_LINESTYLES.get(source, _pick(_FALLBACK_LINESTYLES, source))
        return base
    return {"color": _pick(_FALLBACK_COLORS, key), "marker": _pick(_FALLBACK_MARKERS, "marker:" + key),
            "linestyle": _pick(_FALLBACK_LINESTYLES, "line:" + key)}  # fmt: skip


def _pick(options: Sequence, key: str):
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return options[int.from_bytes(digest[:4], "big") % len(options)]


def method_color(name: str) -> str:
    """Return the hex colour of a method, the same in every figure (the colour of :func:`method_style`)."""
    return method_style(name)["color"]


#: Significant digits of a figure's data (:func:`save_figure`): a plot shows at most 3-4, and the rounded numbers
#: compress better (issue 38: the committed reports' weight). Tables keep :data:`TABLE_DIGITS`.
FIGURE_DIGITS = 4
#: Significant digits of a heatmap's data (:func:`matrix_frame`, which marks its table so): a colour scale shows about
#: 256 levels over [-1, 1], steps of 0.008, so 3 digits (steps of 0.001 or finer) keep more than it shows; at C = 333
#: they make a matrix about a quarter lighter than 4 (issue 38: each preset's reports within 4 MB).
MATRIX_DIGITS = 3
#: Significant digits of a saved table's floats (:func:`save_table`): relative error below 1e-8.
TABLE_DIGITS = 8


def save_figure(fig: Figure, path_stem: str | os.PathLike, data=None, *,
                data_file: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
                digits: int | None = None) -> list[Path]:
    """Save ``fig`` as ``<path_stem>.png`` (a palette PNG, :func:`compact_png`) and ``<path_stem>.svg``
    (atomically), and its data as ``.csv``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to save.
    path_stem : str or PathLike
        Destination without extension, e.g. ``output_dir / "figures" / "gv_bound"``; a
        ``.png``/``.svg``/``.csv`` suffix is ignored. Parent folders are created.
    data : pandas.DataFrame, optional
        A tidy long-format table of exactly what the figure plots (e.g. :func:`curve_frame`), written
        next to the pictures as ``<path_stem>.csv`` so a script can load the numbers; tables of more than
        :data:`COMPRESS_ROWS` rows or :data:`COMPRESS_CELLS` cells (C x C matrices) xz-compressed as
        ``<path_stem>.csv.xz`` (:data:`COMPRESSED_SUFFIX`; ``pandas.read_csv`` reads both as they are).
    data_file : path or sequence of paths, optional
        Tables already saved (:func:`save_table`, or another figure's data) that hold what the figure plots, e.g. a
        page's ``tables/training_history.csv.xz``: they are not written again (a figure's data is stored once, issue
        38); the alt text names them, relative to the page (the folder above ``figures/``). With ``data`` too, the
        figure's numbers are ``data`` and these files together, e.g. the centers of ``similarity_vs_gram`` beside the
        page's S (:func:`shc.plots.gram_frames` with ``include_similarity=False``).
    digits : int, optional
        Significant digits of the floats of ``data`` (default: the table's own ``attrs["digits"]``, which
        :func:`matrix_frame` sets to :data:`MATRIX_DIGITS`, else :data:`FIGURE_DIGITS`, 4: more than a figure can
        show, and about a quarter less to store than :func:`save_table`'s 8). Pass 8 where a computed finding reads
        the file and must tell values apart at that precision (04's precision@K finding reads its curves' data; 01's
        tie count reads a table of the tied pairs, :func:`shc.similarity.most_similar_ties`, not the heatmap's S).

    The PNG is also kept on the figure: shown in IPython while unchanged, it displays as exactly that file
    (:func:`install_alt_text_formatter`), so a report page links the file instead of carrying a second copy.

    Returns
    -------
    list of Path
        The PNG and SVG paths, then the CSV path when ``data`` is given.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"save_figure expects a matplotlib Figure, got {type(fig).__name__}.")
    stem = _strip_suffix(Path(path_stem), (".png", ".svg", ".csv"))
    if digits is not None:
        _positive_digits(digits)
    if data is not None:
        _require_frame(data, "save_figure's data")
        if data.empty:
            raise ValueError("save_figure's data is empty; pass the rows the figure plots (or data=None).")
    saved = [] if data_file is None else [data_file] if isinstance(data_file, (str, os.PathLike)) else list(data_file)
    for path in saved:
        if not Path(path).is_file():
            raise FileNotFoundError(f"data_file {path} does not exist; save the table first (save_table).")
    fig._shc_alt = None
    description = figure_alt_text(fig)
    names = [f"figures/{stem.name}{COMPRESSED_SUFFIX if compressed(data) else '.csv'}"] if data is not None else []
    names += [Path(os.path.relpath(Path(path).absolute(), stem.parent.parent.absolute())).as_posix() for path in saved]
    data_name = f" The plotted numbers are in {' and '.join(names)}." if names else ""
    fig._shc_alt = description.rstrip(".") + "." + data_name
    paths = []
    svg = stem.with_name(f"{stem.name}.svg")
    with atomic_path(svg) as temporary:
        fig.savefig(temporary, format="svg", metadata={"Date": None})
    png = io.BytesIO()
    fig.savefig(png, format="png", metadata={"Software": None})
    fig._shc_png, fig._shc_png_dpi = compact_png(png.getvalue()), _savefig_dpi(fig)
    fig.stale = False  # from here any change to the figure marks it stale again: it is then drawn anew when shown
    paths.insert(0, write_bytes(stem.with_name(f"{stem.name}.png"), fig._shc_png))
    paths.append(svg)
    if data is not None:
        if digits is None:
            digits = int(data.attrs.get("digits", FIGURE_DIGITS))
        paths.append(save_table(data, stem, compress=compressed(data), digits=digits))
    return paths


def _pixel_faithful(fig: Figure, images: Sequence) -> None:
    """Draw each of ``images`` (``axes.imshow`` results of ``fig``) pixel by pixel (nearest neighbour) where its panel
    has at least one saved pixel (:func:`save_figure`'s dpi) per image pixel both ways, else antialiased. Nearest
    neighbour (the style's default) shows an upsampled image's own pixels, with no blended colours to quantise; on a
    downsampled image it would keep one pixel in several and drop the rest (a 333-class heatmap in a 275-pixel panel
    lost about a sixth of its rows and columns), so there each pixel is an average instead. Whatever the rcParams say,
    the choice is made here."""
    fig.draw_without_rendering()  # lays out the figure (constrained layout, equal aspect), so the panels are final
    scale = _savefig_dpi(fig) / fig.dpi
    for image in images:
        box = image.axes.get_window_extent()
        rows, columns = image.get_array().shape[:2]
        enough = box.width * scale >= columns and box.height * scale >= rows
        image.set_interpolation("nearest" if enough else "antialiased")


def _savefig_dpi(fig: Figure) -> float:
    from matplotlib import rcParams

    dpi = rcParams["savefig.dpi"]
    return float(fig.dpi if dpi == "figure" else dpi)


#: Figure data and tables with more rows than this are written compressed (:data:`COMPRESSED_SUFFIX`): it keeps a
#: preset's committed reports within their budget, shc.reports.check (the standard preset's training histories are
#: 4,320 rows).
COMPRESS_ROWS = 1_000
#: ... or with more cells than this: a C x C matrix in :func:`matrix_frame`'s form has only C rows (333 at
#: standard-fine, 0.81 MB as plain text, about 0.2 MB compressed).
COMPRESS_CELLS = 10_000
#: The suffix of a compressed table: xz (LZMA, preset 6, CRC64; :func:`compress_table_bytes`). On the figure data of
#: the four committed evidence report sets it takes about a quarter less than gzip -9 (3.11 -> 2.35 MB, issue 38:
#: these files are stored anew at every regeneration whose numbers moved, since compressed files do not delta);
#: ``pandas.read_csv`` reads it as it is, and so do ``xz -d``, 7-Zip and most archive tools. Report sets built
#: before 2026-11-29 hold ``.csv.gz``, which every reader of the package still accepts (:data:`DATA_SUFFIXES`).
COMPRESSED_SUFFIX = ".csv.xz"
#: The names a table file may end with: plain, this compression, the gzip of older report sets.
DATA_SUFFIXES = (".csv", COMPRESSED_SUFFIX, ".csv.gz")


def compressed(table) -> bool:
    """Whether :func:`save_table` writes ``table`` compressed by default: more than :data:`COMPRESS_ROWS` rows or
    :data:`COMPRESS_CELLS` cells."""
    return len(table) > COMPRESS_ROWS or table.size > COMPRESS_CELLS


def compress_table_bytes(data: bytes) -> bytes:
    """``data`` as an xz stream (:data:`COMPRESSED_SUFFIX`). The xz format stores no time or file name, so the same
    table gives the same bytes on every run and a regenerated report adds no new blob for it. Preset 6 (liblzma's
    default: an 8 MiB dictionary, about 94 MiB to compress) compresses these files as small as preset 9 with its
    extreme flag (within 0.3%), with a seventh of the memory."""
    import lzma  # here, not at import: a Python built without _lzma can still draw, and says so when it writes one

    return lzma.compress(data, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC64, preset=6)


def read_table_text(path: str | os.PathLike) -> str:
    """The CSV text of a table file, whichever of :data:`DATA_SUFFIXES` it has (xz, gzip or plain)."""
    import gzip

    path = Path(path)
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        import lzma

        data = lzma.decompress(data)
    elif path.name.endswith(".gz"):
        data = gzip.decompress(data)
    return data.decode("utf-8")


def _require_frame(table, name: str) -> None:
    import pandas as pd

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(table).__name__}; wrap it with pd.DataFrame(...).")


def save_table(table, path_stem: str | os.PathLike, compress: bool | None = None, digits: int = TABLE_DIGITS) -> Path:
    """Save a pandas DataFrame as ``<path_stem>.csv`` (``<path_stem>.csv.xz`` with ``compress``; atomically); return
    the path.

    ``compress=None`` (default) compresses tables of more than :data:`COMPRESS_ROWS` rows or :data:`COMPRESS_CELLS`
    cells (:func:`compressed`), with :func:`compress_table_bytes`.

    The index is written only when it carries information: a named index, or labels that are not integers (an
    unnamed integer index only numbers the rows, e.g. those a filter kept). Floats keep ``digits`` significant
    digits (default :data:`TABLE_DIGITS`, 8: relative error below 1e-8), which halves the size of the committed
    report tables.
    """
    import pandas as pd

    _require_frame(table, "save_table's table")
    stem = _strip_suffix(Path(path_stem), (".csv",))
    if compress is None:
        compress = compressed(table)
    path = stem.with_name(f"{stem.name}{COMPRESSED_SUFFIX}" if compress else f"{stem.name}.csv")
    text = table.to_csv(index=_informative_index(table.index), float_format=f"%.{_positive_digits(digits)}g")
    data = text.encode("utf-8")
    # compressed here, not by pandas (whose gzip stored the temporary file's name, with its process id): the same
    # table gives the same bytes on every run, so a regenerated report adds no new blob for it
    return write_bytes(path, compress_table_bytes(data) if compress else data)


def _positive_digits(digits: int) -> int:
    if isinstance(digits, bool) or not isinstance(digits, int) or not 1 <= digits <= 17:
        raise ValueError(f"digits must be an integer from 1 to 17 (significant digits of the saved floats), got "
                         f"{digits!r}.")
    return digits


def _informative_index(index) -> bool:
    """Whether a table's index carries information: a named index (set from a column, even where pandas stores its
    values as a range, e.g. C = 32, 40) or labels that are not integers. An unnamed integer index only numbers the
    rows (0..n-1, or the row numbers a filter kept), so it is not written."""
    import pandas as pd

    return any(name is not None for name in index.names) or not pd.api.types.is_integer_dtype(index.dtype)


def _strip_suffix(path: Path, suffixes: tuple[str, ...]) -> Path:
    return path.with_suffix("") if path.suffix.lower() in suffixes else path


def _legend_outside(fig: Figure, axes, title: str | None = None) -> None:
    handles, labels = axes.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", title=title)


#: Distance between two markers of a line, as a fraction of its axes' diagonal (matplotlib's float ``markevery``).
MARKER_STEP = 0.08


def _marker_spacing(x, y, line: int = 0, lines: int = 1) -> dict[str, object]:
    """Marker size and spacing: markers every :data:`MARKER_STEP` of the axes' diagonal along the drawn line, not every
    n-th point, so they do not pile up where a curve's points crowd (a PR curve near recall 1); line ``line`` of
    ``lines`` starts its markers ``line / lines`` of a step later, so methods whose curves meet (random and CSQ share
    CSQ's loss) show each other's markers side by side instead of one on top of the other. ``x``, ``y``: the line's
    data (matplotlib cannot space markers along fewer than two finite points: then every point is marked)."""
    finite = np.isfinite(np.asarray(x, dtype=np.float64)) & np.isfinite(np.asarray(y, dtype=np.float64))
    if finite.sum() < 2:
        return {"markersize": 4, "markevery": 1}
    return {"markersize": 4, "markevery": (MARKER_STEP * (line % max(lines, 1)) / max(lines, 1), MARKER_STEP)}


def _new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _figure_per_method(by_method: object, name: str, expected: str, width: float, height: float):
    """A one-axes figure for a ``method -> data`` mapping, refusing an empty one (naming ``name`` and what
    each entry should be)."""
    if not by_method:
        raise ValueError(f"{name} is empty; pass at least one method -> {expected}.")
    fig = _new_figure(width, height)
    return fig, fig.subplots()


def _sequential_colors(count: int) -> list:
    from matplotlib import colormaps

    return list(colormaps["viridis"](np.linspace(0.1, 0.85, count)))


def _categorical_colors(count: int) -> list:
    from matplotlib import colormaps

    palette = colormaps["tab10" if count <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(count)]


#: The columns of a :func:`matrix_frame` table before its class columns.
MATRIX_FRONT_COLUMNS = ("source", "row", "row_coarse", "shown_at")


def matrix_frame(matrices, names=None, coarse_labels=None, triangle: bool | None = None, order=None):
    """One or several (C, C) matrices as a heatmap draws them: ``source, row[, row_coarse][, shown_at], <class 1> ...
    <class C>``.

    A matrix is C lines, one a class (``row``), with one column a class in the same order, so each class name is
    written once a line and once in the header rather than twice a cell: at C = 333 the long ``source, row, column,
    value`` form of a report's five similarity sources was 1.57 MB gzipped, this form 0.55 MB. ``matrices`` is a
    (C, C) array or a mapping name -> array (stacked, ``source`` naming each); ``names`` labels the classes (default
    0..C-1; they must be distinct, as they head the columns); ``coarse_labels`` adds each class's coarse class
    (``row_coarse``; the columns are the same classes). ``triangle`` keeps only the entries with row <= column and
    leaves the cells below the diagonal empty (a symmetric matrix's lower triangle mirrors its upper one, so nothing
    is lost); the default does so for every symmetric matrix and keeps all entries of one that is not. ``order`` is
    the figure's class order (e.g. :func:`shc.plots.similarity_order`, the clustered heatmap's), a permutation of
    0..C-1: it adds each class's position in the figure (``shown_at``), so the file says where a drawn cell comes
    from while its rows and columns keep the classes' own order.
    """
    import pandas as pd

    if not isinstance(matrices, Mapping):
        matrices = {"matrix": matrices}
    frames = []
    for source, matrix in matrices.items():
        matrix = np.asarray(matrix, dtype=float)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"matrix {source!r} must be square (C, C), got shape {matrix.shape}.")
        count = matrix.shape[0]
        labels = [str(name) for name in names] if names is not None else [str(i) for i in range(count)]
        if len(labels) != count:
            raise ValueError(f"{len(labels)} names for a {count} x {count} matrix.")
        if len(set(labels)) != count or set(MATRIX_FRONT_COLUMNS) & set(labels):
            raise ValueError(f"the class names head the columns, so they must be distinct and none of "
                             f"{', '.join(MATRIX_FRONT_COLUMNS)}; pass names that are.")
        symmetric = bool(np.array_equal(matrix, matrix.T))
        if triangle and not symmetric:
            raise ValueError(f"matrix {source!r} is not symmetric: its upper triangle would lose entries; "
                             "pass triangle=False.")
        if (symmetric if triangle is None else bool(triangle)):
            matrix = np.where(np.triu(np.ones((count, count), dtype=bool)), matrix, np.nan)
        frame = pd.DataFrame(matrix, columns=labels)
        front = {"source": source, "row": labels}
        if coarse_labels is not None:
            front["row_coarse"] = np.asarray(coarse_labels)
        if order is not None:
            permutation = np.asarray(order)
            if permutation.shape != (count,) or not np.array_equal(np.sort(permutation), np.arange(count)):
                raise ValueError(f"order must be a permutation of 0..{count - 1} (the figure's class order, e.g. "
                                 f"shc.plots.similarity_order(S)); got {np.asarray(order).shape} values.")
            front["shown_at"] = np.argsort(permutation)  # class i is drawn at row/column shown_at[i]
        frames.append(pd.concat([pd.DataFrame(front), frame], axis=1))
    table = pd.concat(frames, ignore_index=True)
    table.attrs["digits"] = MATRIX_DIGITS  # what save_figure keeps of a heatmap's data by default
    return table


def matrix_from_frame(frame, source: str) -> tuple[np.ndarray, list[str]]:
    """The (C, C) matrix ``source`` of a :func:`matrix_frame` table, its triangle mirrored, and its class names.

    Also reads the long ``source, row, column, value`` rows that report sets built before 2026-11-27 committed.
    """
    rows = frame[frame["source"] == source]
    if rows.empty:
        raise ValueError(f"no matrix {source!r} in this table; it holds {sorted(set(frame['source']))}.")
    if {"column", "value"} <= set(rows.columns):  # the long form
        names = [str(name) for name in dict.fromkeys([*rows["row"], *rows["column"]])]
        wide = rows.assign(row=rows["row"].astype(str), column=rows["column"].astype(str)).pivot(
            index="row", columns="column", values="value").reindex(index=names, columns=names)
        full = wide.to_numpy(dtype=float)
    else:
        names = [str(name) for name in rows["row"]]
        if not set(names) <= set(rows.columns):  # a CSV read back turns names like "07" into 7 in ``row`` only
            names = [str(name) for name in rows.columns if name not in _MATRIX_FRONT]
            if len(names) != len(rows):
                raise ValueError(f"matrix {source!r} has {len(rows)} rows but {len(names)} class columns; read the "
                                 "file with pd.read_csv(path, dtype={'row': str}).")
        full = rows[names].to_numpy(dtype=float)
    return np.where(np.isnan(full), full.T, full), names


#: The columns of a :func:`matrix_frame` table (and of :func:`shc.plots.gram_frames`'s) that are not classes.
_MATRIX_FRONT = ("source", "row", "row_coarse", "shown_at", "code")
