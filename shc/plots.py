"""Figures and tables for the reports: one style, one colour per method, atomic saving.

Every plot function is pure: it takes arrays or data frames, builds a new
:class:`matplotlib.figure.Figure` (never through ``pyplot``, so batch runs leak no
open figures) and returns it. Notebooks call :func:`use_style` once, show the
returned figure and pass it to :func:`save_figure`, which writes PNG and SVG next to
each other; tables go through :func:`save_table` (CSV). Files are written atomically
(a temporary file in the same folder, then :func:`os.replace`), so an interrupted
run never leaves a half-written figure behind.

Styles: :data:`METHOD_STYLES` fixes one colour-blind-safe colour, one marker and one line style per
center generator and per baseline, so "shc" looks the same in every figure of every report;
:func:`method_style` extends that to similarity-source variants and unknown names deterministically.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from shc.validation import sign_codes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

__all__ = [
    "CURVE_KINDS",
    "METHOD_COLORS",
    "METHOD_STYLES",
    "SIMILARITY_LINESTYLES",
    "STYLE_RC",
    "arrays_frame",
    "atomic_path",
    "class_ap_frame",
    "code_embedding_frame",
    "convergence_frame",
    "curve_arrays",
    "curve_frame",
    "method_color",
    "method_style",
    "plot_center_embedding",
    "plot_center_history",
    "plot_class_ap",
    "plot_code_embedding",
    "plot_convergence",
    "plot_convergence_overlay",
    "plot_curves",
    "plot_distance_histograms",
    "plot_example_queries",
    "plot_gv_bound",
    "plot_pr_curves",
    "plot_similarity_by_group",
    "plot_similarity_comparison",
    "plot_similarity_heatmap",
    "plot_similarity_vs_gram",
    "plot_training_history",
    "pr_arrays",
    "save_figure",
    "save_table",
    "similarity_order",
    "use_style",
]

#: One style per method, the same in every figure: colour, marker and line style, so curves can be
#: told apart in colour, in greyscale print and by colour-blind readers. Colours come from the
#: colour-blind-safe Okabe-Ito palette (center generators; SHC gets vermillion) and Paul Tol's
#: "muted" palette; center generators draw solid lines (the MDS-centers ablation "distance" dash-dot,
#: "random" dotted), the deep-hashing baselines dashed lines. Every marker is different.
METHOD_STYLES: dict[str, dict[str, str]] = {
    "shc": {"color": "#D55E00", "marker": "o", "linestyle": "-"},  # vermillion
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
    "savefig.dpi": 150,
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


# --------------------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------------------


@contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path next to ``path``; move what the block writes there onto ``path``.

    The temporary file is named ``.<name>.<random><suffix>`` in the same folder (so
    :func:`os.replace` is atomic and readers never see a half-written ``path``); it is created by
    the caller's writer, so it gets the usual permissions. If the block raises, the temporary file
    is deleted and ``path`` is left as it was; if the block writes nothing, nothing is replaced.
    Parent folders are created.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{secrets.token_hex(6)}{suffix}")
    try:
        yield temporary
        if temporary.exists():
            os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)


def save_figure(fig: Figure, path_stem: str | os.PathLike, data=None) -> list[Path]:
    """Save ``fig`` as ``<path_stem>.png`` and ``<path_stem>.svg`` (atomically), and its data as ``.csv``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to save.
    path_stem : str or PathLike
        Destination without extension, e.g. ``output_dir / "figures" / "gv_bound"``; a
        ``.png``/``.svg``/``.csv`` suffix is ignored. Parent folders are created.
    data : pandas.DataFrame, optional
        A tidy long-format table of exactly what the figure plots (e.g. :func:`curve_frame`), written
        next to the pictures as ``<path_stem>.csv`` so a script can load the numbers.

    Returns
    -------
    list of Path
        The PNG and SVG paths, then the CSV path when ``data`` is given.
    """
    if not isinstance(fig, Figure):
        raise TypeError(f"save_figure expects a matplotlib Figure, got {type(fig).__name__}.")
    stem = _strip_suffix(Path(path_stem), (".png", ".svg", ".csv"))
    if data is not None:
        _require_frame(data, "save_figure's data")
        if data.empty:
            raise ValueError("save_figure's data is empty; pass the rows the figure plots (or data=None).")
    paths = []
    for fmt, metadata in (("png", {"Software": None}), ("svg", {"Date": None})):
        path = stem.with_name(f"{stem.name}.{fmt}")
        with atomic_path(path) as temporary:
            fig.savefig(temporary, format=fmt, metadata=metadata)
        paths.append(path)
    if data is not None:
        paths.append(save_table(data, stem))
    return paths


def _require_frame(table, name: str) -> None:
    import pandas as pd

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas DataFrame, got {type(table).__name__}; wrap it with pd.DataFrame(...).")


def save_table(table, path_stem: str | os.PathLike) -> Path:
    """Save a pandas DataFrame as ``<path_stem>.csv`` (atomically) and return the path.

    The index is written only when it carries information (i.e. it is not the default
    0..n-1 :class:`pandas.RangeIndex`).
    """
    import pandas as pd

    _require_frame(table, "save_table's table")
    stem = _strip_suffix(Path(path_stem), (".csv",))
    path = stem.with_name(f"{stem.name}.csv")
    with atomic_path(path) as temporary:
        table.to_csv(temporary, index=not isinstance(table.index, pd.RangeIndex))
    return path


def _strip_suffix(path: Path, suffixes: tuple[str, ...]) -> Path:
    return path.with_suffix("") if path.suffix.lower() in suffixes else path


# --------------------------------------------------------------------------------------
# Input checks shared by the plot functions
# --------------------------------------------------------------------------------------


def _as_centers(centers, name: str = "centers") -> np.ndarray:
    return sign_codes(centers, name).astype(np.int64)


def _centers_mapping(centers) -> dict[str, np.ndarray]:
    """Accept one (C, q) array or a mapping method -> (C, q) array with a common shape."""
    if isinstance(centers, Mapping):
        if not centers:
            raise ValueError("centers mapping is empty; pass at least one method -> (C, q) array.")
        mapping = {str(method): _as_centers(array, f"centers[{method!r}]") for method, array in centers.items()}
    else:
        mapping = {"": _as_centers(centers)}
    shapes = {array.shape for array in mapping.values()}
    if len(shapes) != 1:
        raise ValueError(f"all center sets must have the same (C, q) shape, got {sorted(shapes)}.")
    return mapping


def _as_similarity(similarity, num_classes: int | None = None) -> np.ndarray:
    from shc.similarity import validate_similarity  # square, finite, in [-1, 1], symmetric

    return validate_similarity(similarity, num_classes=num_classes)


def _as_order(order, num_classes: int) -> np.ndarray:
    permutation = np.asarray(order)
    if permutation.shape != (num_classes,) or not np.array_equal(np.sort(permutation), np.arange(num_classes)):
        raise ValueError(
            f"order must be a permutation of 0..{num_classes - 1}, e.g. np.argsort(coarse_labels, kind='stable')."
        )
    return permutation


def similarity_order(similarity) -> np.ndarray:
    """Class order from an average-linkage hierarchical clustering of ``S`` (distance ``1 - S``).

    Optimal leaf ordering puts similar classes next to each other, so block structure in a
    heatmap of ``S`` (and of ``H H^T / q`` in the same order) becomes visible.
    """
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    matrix = _as_similarity(similarity)
    if matrix.shape[0] < 3:
        return np.arange(matrix.shape[0])
    distance = 1.0 - matrix
    np.fill_diagonal(distance, 0.0)
    tree = linkage(squareform(distance, checks=False), method="average", optimal_ordering=True)
    return leaves_list(tree)


def _legend_outside(fig: Figure, axes, title: str | None = None) -> None:
    handles, labels = axes.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside right upper", title=title)


def _marker_spacing(points: int, markers: int = 12) -> dict[str, object]:
    """Marker size and spacing: about ``markers`` markers per line, so dense curves stay readable."""
    return {"markersize": 4, "markevery": max(1, points // markers)}


def _new_figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


# --------------------------------------------------------------------------------------
# Center geometry (notebook 00 and the center-generation reports)
# --------------------------------------------------------------------------------------


def plot_gv_bound(num_classes_list: Sequence[int], bits_list: Sequence[int]) -> Figure:
    """The paper's Gilbert-Varshamov minimum distance ``d`` as a function of C and q.

    ``d`` is the smallest distance with ``2^q / C <= sum_{i<d} binom(q, i)`` (Theorem 1, Eq. 13;
    :func:`shc.centers.gv_min_distance`), the constraint of MDS and SHC. Left: ``d`` in bits, one
    line per code length ``q``; dashed segments mark the distance ``q/2`` that Hadamard centers
    (CSQ) reach, available only while ``C <= 2q``. Right: ``d / q``.

    Parameters
    ----------
    num_classes_list : sequence of int
        Numbers of classes ``C`` (x axis, log scale), each >= 2.
    bits_list : sequence of int
        Code lengths ``q``.
    """
    from shc.centers import gv_min_distance

    classes = np.unique(np.asarray(num_classes_list, dtype=np.int64))
    bits = np.unique(np.asarray(bits_list, dtype=np.int64))
    if classes.size == 0 or bits.size == 0 or classes.min() < 2 or bits.min() < 1:
        raise ValueError("num_classes_list needs values >= 2 and bits_list values >= 1 (both non-empty).")
    distance = np.array([[gv_min_distance(int(c), int(q)) for c in classes] for q in bits])

    fig = _new_figure(10.0, 4.0)
    absolute, relative = fig.subplots(1, 2)
    palette = _sequential_colors(bits.size)
    for row, (q, color) in enumerate(zip(bits, palette)):
        absolute.plot(classes, distance[row], marker="o", color=color, label=f"q = {q}")
        relative.plot(classes, distance[row] / q, marker="o", color=color)
        if 2 * q >= classes[0]:  # Hadamard rows and their negations: C <= 2q centers at distance >= q/2
            absolute.plot([classes[0], min(2 * q, classes[-1])], [q / 2, q / 2], linestyle="--", color=color)
    absolute.plot([], [], linestyle="--", color="0.3", label="Hadamard (C <= 2q)")
    for axes in (absolute, relative):
        axes.set_xscale("log")
        axes.set_xlabel("number of classes C (log scale)")
    absolute.set_ylabel("minimum distance d (bits)")
    relative.set_ylabel("relative minimum distance d / q")
    absolute.set_title("Gilbert-Varshamov distance d (Eq. 13)")
    relative.set_title("the same bound relative to the code length")
    _legend_outside(fig, absolute)
    return fig


def plot_distance_histograms(centers_by_method: Mapping[str, np.ndarray], num_bits: int) -> Figure:
    """Histogram of the pairwise Hamming distances between centers, one panel per method.

    Each panel marks the method's minimum distance ``d_min`` (the criterion of the paper's
    center-quality table), the Gilbert-Varshamov distance ``d`` (Theorem 1, Eq. 13) and ``q/2``.

    Parameters
    ----------
    centers_by_method : mapping str -> (C, q) array of +-1
        Center sets to compare, all of the same shape.
    num_bits : int
        Code length ``q`` (must match the centers' second dimension).
    """
    from shc.centers import gv_min_distance, hamming_distances

    mapping = _centers_mapping(centers_by_method)
    num_classes, q = next(iter(mapping.values())).shape
    if q != num_bits:
        raise ValueError(f"num_bits={num_bits} but the centers have q={q} bits; pass num_bits={q}.")
    if num_classes < 2:
        raise ValueError("at least 2 centers are needed for pairwise distances.")
    upper = np.triu_indices(num_classes, k=1)
    gv_distance = gv_min_distance(num_classes, q)
    bins = np.arange(q + 2) - 0.5

    fig = _new_figure(7.5, 1.7 * len(mapping) + 0.8)
    axes_list = np.atleast_1d(fig.subplots(len(mapping), 1, sharex=True, squeeze=False)[:, 0])
    for axes, (method, centers) in zip(axes_list, mapping.items()):
        distances = np.asarray(hamming_distances(centers))[upper]
        axes.hist(distances, bins=bins, color=method_color(method), alpha=0.85)
        axes.axvline(distances.min(), color="black", linewidth=1.5, label="d_min of these centers")
        axes.axvline(gv_distance, color="black", linestyle="--", linewidth=1, label=f"GV bound d = {gv_distance}")
        axes.axvline(q / 2, color="0.5", linestyle=":", linewidth=1, label="q / 2")
        axes.set_title(f"{method}: d_min = {distances.min()}", loc="left")
        axes.set_ylabel("center pairs")
    axes_list[-1].set_xlabel(f"Hamming distance between two centers (bits, q = {q})")
    axes_list[-1].set_xlim(-0.5, q + 0.5)
    _legend_outside(fig, axes_list[0])
    return fig


def plot_center_embedding(
    centers,
    coarse_labels,
    coarse_names: Sequence[str] | None = None,
    class_names: Sequence[str] | None = None,
) -> Figure:
    """2-D classical-MDS embedding of the centers, coloured by coarse class.

    Classical MDS of the Hamming distances equals PCA of the +-1 codes (``||h_i - h_j||^2 =
    4 D(h_i, h_j)``, Theorem 2, Eq. 17), so the embedding is the top-2 principal coordinates of the
    centred codes. Semantic centers put classes of one coarse group close together; random
    ones do not.

    Parameters
    ----------
    centers : (C, q) array of +-1, or mapping method -> (C, q) array (one panel per method)
    coarse_labels : (C,) int array
        Coarse class of each class (e.g. ``DatasetSplits.coarse_labels``).
    coarse_names : sequence of str, optional
        Names of the coarse classes for the legend.
    class_names : sequence of str, optional
        When given (and C <= 40), each point is labelled with its class name.
    """
    mapping = _centers_mapping(centers)
    num_classes = next(iter(mapping.values())).shape[0]
    coarse = np.asarray(coarse_labels)
    if coarse.shape != (num_classes,):
        raise ValueError(f"coarse_labels must have shape ({num_classes},), one per center; got {coarse.shape}.")
    groups, coarse_index = np.unique(coarse, return_inverse=True)
    if coarse_names is not None and len(coarse_names) <= groups.max(initial=0):
        raise ValueError(f"coarse_names has {len(coarse_names)} names but coarse label {groups.max()} occurs.")
    if class_names is not None and len(class_names) != num_classes:
        raise ValueError(f"class_names has {len(class_names)} names for {num_classes} centers.")
    colors = _categorical_colors(groups.size)

    fig = _new_figure(4.2 * len(mapping) + 1.6, 4.2)
    axes_list = np.atleast_1d(fig.subplots(1, len(mapping), squeeze=False)[0])
    for axes, (method, codes) in zip(axes_list, mapping.items()):
        coordinates, explained = _principal_coordinates(codes)
        for group, (label, color) in enumerate(zip(groups, colors)):
            members = coarse_index == group
            name = coarse_names[label] if coarse_names is not None else f"coarse {label}"
            axes.scatter(*coordinates[members].T, color=color, s=36, edgecolor="white", linewidth=0.5, label=name)
        if class_names is not None and num_classes <= 40:
            for (x, y), text in zip(coordinates, class_names):
                axes.annotate(text, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        axes.set_xlabel(f"principal coordinate 1 ({explained[0]:.0%} of variance)")
        axes.set_ylabel(f"principal coordinate 2 ({explained[1]:.0%} of variance)")
        axes.set_title(f"{method} centers" if method else "centers", loc="left")
        axes.set_aspect("equal", adjustable="datalim")
    _legend_outside(fig, axes_list[0], title="coarse class")
    return fig


def _principal_coordinates(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centred = codes - codes.mean(axis=0)
    left, singular, _ = np.linalg.svd(centred, full_matrices=False)
    singular = np.pad(singular, (0, max(0, 2 - singular.size)))
    left = np.pad(left, ((0, 0), (0, max(0, 2 - left.shape[1]))))
    total = float(np.sum(singular**2)) or 1.0
    return left[:, :2] * singular[:2], singular[:2] ** 2 / total


def plot_similarity_vs_gram(similarity, centers, order=None) -> Figure:
    """Heatmaps of the target similarity ``S`` next to ``H H^T / q`` of each center set, same class order.

    ``L_semantic = ||S - H H^T / q||_F^2`` (Eq. 14) is small when the two pictures agree.

    Parameters
    ----------
    similarity : (C, C) array in [-1, 1]
        Class similarity ``S``.
    centers : (C, q) array of +-1, or mapping method -> (C, q) array
        One heatmap per center set.
    order : (C,) permutation, optional
        Class order of rows and columns, e.g. ``np.argsort(coarse_labels, kind="stable")``; by
        default the order of a hierarchical clustering of ``S`` (:func:`similarity_order`).
    """
    mapping = _centers_mapping(centers)
    num_classes, q = next(iter(mapping.values())).shape
    matrix = _as_similarity(similarity, num_classes)
    permutation = similarity_order(matrix) if order is None else _as_order(order, num_classes)
    panels = {"target similarity $S$": matrix}
    panels |= {f"{method or 'centers'}: $HH^\\top/q$": (codes @ codes.T) / q for method, codes in mapping.items()}
    return _heatmap_row(panels, permutation, "similarity / cosine (unitless)")


def _heatmap_row(panels: Mapping[str, np.ndarray], permutation: np.ndarray, colorbar_label: str) -> Figure:
    """One heatmap per panel, side by side, rows and columns in the same class order, values in [-1, 1]."""
    num_classes = permutation.size
    fig = _new_figure(2.7 * len(panels) + 1.2, 3.3)
    axes_list = np.atleast_1d(fig.subplots(1, len(panels), squeeze=False)[0])
    for axes, (title, values) in zip(axes_list, panels.items()):
        image = axes.imshow(values[np.ix_(permutation, permutation)], cmap=_DIVERGING_CMAP, vmin=-1, vmax=1)
        axes.set_title(title, fontsize=10)
        axes.set_xlabel(f"{num_classes} classes (same order)")
        axes.set_xticks([])
        axes.set_yticks([])
        axes.grid(False)
    axes_list[0].set_ylabel(f"{num_classes} classes (same order)")
    fig.colorbar(image, ax=list(axes_list), shrink=0.85, label=colorbar_label)
    return fig


def plot_similarity_heatmap(similarity, class_names: Sequence[str] | None = None, cluster: bool = True) -> Figure:
    """Heatmap of a class-similarity matrix ``S`` (values in [-1, 1]).

    Parameters
    ----------
    similarity : (C, C) array
    class_names : sequence of str, optional
        Tick labels (shown when C <= 50).
    cluster : bool
        Reorder classes by a hierarchical clustering of ``S`` (:func:`similarity_order`).
    """
    matrix = _as_similarity(similarity)
    num_classes = matrix.shape[0]
    if class_names is not None and len(class_names) != num_classes:
        raise ValueError(f"class_names has {len(class_names)} names but S is {num_classes}x{num_classes}.")
    permutation = similarity_order(matrix) if cluster else np.arange(num_classes)

    size = float(np.clip(num_classes * 0.18, 4.0, 10.0))
    fig = _new_figure(size + 1.2, size)
    axes = fig.subplots()
    image = axes.imshow(matrix[np.ix_(permutation, permutation)], cmap=_DIVERGING_CMAP, vmin=-1, vmax=1)
    if class_names is not None and num_classes <= 50:
        names = [class_names[i] for i in permutation]
        axes.set_xticks(np.arange(num_classes), names, rotation=90, fontsize=7)
        axes.set_yticks(np.arange(num_classes), names, fontsize=7)
    else:
        axes.set_xticks([])
        axes.set_yticks([])
    order_name = "clustered order" if cluster else "given order"
    axes.set_xlabel(f"{num_classes} classes ({order_name})")
    axes.set_ylabel(f"{num_classes} classes ({order_name})")
    axes.set_title("class similarity S")
    axes.grid(False)
    fig.colorbar(image, ax=axes, shrink=0.85, label="similarity (unitless, -1 to 1)")
    return fig


def _similarity_mapping(matrices) -> dict[str, np.ndarray]:
    if not isinstance(matrices, Mapping) or not matrices:
        raise ValueError("matrices must be a non-empty mapping name -> (C, C) similarity matrix.")
    checked = {str(name): _as_similarity(S) for name, S in matrices.items()}
    sizes = {S.shape[0] for S in checked.values()}
    if len(sizes) != 1:
        raise ValueError(f"all matrices must describe the same classes, got sizes {sorted(sizes)}.")
    return checked


def plot_similarity_comparison(matrices: Mapping[str, np.ndarray], order=None) -> Figure:
    """Several class-similarity matrices side by side, rows and columns in one class order.

    Parameters
    ----------
    matrices : mapping name -> (C, C) array in [-1, 1]
        E.g. the data-dependent S (Eq. 2-12), the text-embedding S (Eq. 1) and the hierarchy's S.
    order : (C,) permutation, optional
        Class order, by default the hierarchical clustering of the first matrix
        (:func:`similarity_order`), so the others are read in its block structure.
    """
    mapping = _similarity_mapping(matrices)
    first = next(iter(mapping.values()))
    permutation = similarity_order(first) if order is None else _as_order(order, first.shape[0])
    return _heatmap_row(mapping, permutation, "similarity (unitless, -1 to 1)")


def plot_similarity_by_group(matrices: Mapping[str, np.ndarray], coarse_labels) -> Figure:
    """Distribution of S over pairs of different classes: same coarse class vs the rest, one panel per S.

    A similarity that recovers the hierarchy separates the two histograms; each panel's title gives the
    ROC-AUC of that separation (:func:`shc.similarity.hierarchy_agreement`).

    Parameters
    ----------
    matrices : mapping name -> (C, C) array in [-1, 1]
    coarse_labels : (C,) int array
        Coarse class of each class.
    """
    from shc.similarity import hierarchy_agreement

    mapping = _similarity_mapping(matrices)
    num_classes = next(iter(mapping.values())).shape[0]
    coarse = np.asarray(coarse_labels)
    if coarse.shape != (num_classes,):
        raise ValueError(f"coarse_labels must have shape ({num_classes},), one per class; got {coarse.shape}.")
    rows, columns = np.triu_indices(num_classes, k=1)
    same = coarse[rows] == coarse[columns]
    bins = np.linspace(-1.0, 1.0, 41)

    fig = _new_figure(3.2 * len(mapping) + 1.6, 3.0)
    axes_list = np.atleast_1d(fig.subplots(1, len(mapping), squeeze=False)[0])
    for axes, (name, matrix) in zip(axes_list, mapping.items()):
        values = matrix[rows, columns]
        for mask, label, color in ((same, "same coarse class", "#D55E00"), (~same, "other pairs", "#0072B2")):
            if mask.any():
                axes.hist(values[mask], bins=bins, density=True, alpha=0.55, color=color, label=label)
        auc = hierarchy_agreement(matrix, coarse)["roc_auc"]
        axes.set_title(f"{name}: ROC-AUC {auc:.3f}", loc="left", fontsize=10)
        axes.set_xlabel("similarity of two classes (unitless)")
    axes_list[0].set_ylabel("density of class pairs")
    _legend_outside(fig, axes_list[0])
    return fig


# --------------------------------------------------------------------------------------
# Retrieval and training curves
# --------------------------------------------------------------------------------------


def plot_curves(
    x,
    ys_by_method: Mapping[str, np.ndarray],
    xlabel: str,
    ylabel: str,
    title: str | None = None,
) -> Figure:
    """Line per method on a shared x axis (e.g. precision@K or recall@K against K).

    Parameters
    ----------
    x : (n,) array
        Shared x values.
    ys_by_method : mapping str -> (n,) or (runs, n) array
        A 2-D array holds several runs (e.g. seeds): drawn as the mean with a +-1 std band.
    xlabel, ylabel : str
        Axis labels; include units (e.g. "K (retrieved items)").
    title : str, optional
    """
    x_values = np.asarray(x, dtype=np.float64)
    if x_values.ndim != 1 or x_values.size == 0:
        raise ValueError(f"x must be a non-empty 1-D array, got shape {x_values.shape}.")
    if not ys_by_method:
        raise ValueError("ys_by_method is empty; pass at least one method -> values.")
    fig = _new_figure(7.0, 4.2)
    axes = fig.subplots()
    for method, values in ys_by_method.items():
        runs = np.atleast_2d(np.asarray(values, dtype=np.float64))
        if runs.ndim != 2 or runs.shape[1] != x_values.size:
            raise ValueError(
                f"ys_by_method[{method!r}] has shape {np.shape(values)}; expected ({x_values.size},) or "
                f"(runs, {x_values.size}) to match x."
            )
        mean = runs.mean(axis=0)
        style = method_style(method)
        axes.plot(x_values, mean, **style, **_marker_spacing(x_values.size), label=method)
        if runs.shape[0] > 1:
            spread = runs.std(axis=0)
            axes.fill_between(x_values, mean - spread, mean + spread, color=style["color"], alpha=0.2, linewidth=0)
    if np.array_equal(x_values, np.round(x_values)):
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))  # K, epochs, cycles: no 2.5 ticks
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    if title:
        axes.set_title(title)
    _legend_outside(fig, axes, title="method")
    return fig


def plot_pr_curves(
    pr_by_method: Mapping[str, Mapping[str, np.ndarray]], title: str | None = None, kind: str = "radius"
) -> Figure:
    """Precision-recall curves, one per method: Hamming radius 0..q, or cut-offs of the ranking.

    Parameters
    ----------
    pr_by_method : mapping str -> mapping
        Per method, the precision and recall arrays under the keys ``"pr_precision"`` /
        ``"pr_recall"`` (the dict of ``shc.metrics.evaluate``) or ``"precision"`` / ``"recall"``.
    title : str, optional
    kind : {"radius", "rank"}
        What the points are (only changes the default title): retrieval within Hamming radius r, or
        the top n of the Hamming ranking (``shc.metrics.rank_pr_curve``, the paper's figures).
    """
    if kind not in ("radius", "rank"):
        raise ValueError(f"kind must be 'radius' or 'rank', got {kind!r}.")
    if not pr_by_method:
        raise ValueError("pr_by_method is empty; pass at least one method -> {'precision', 'recall'}.")
    fig = _new_figure(6.0, 4.5)
    axes = fig.subplots()
    for method, curve in pr_by_method.items():
        precision = np.asarray(_pr_entry(curve, "precision", method), dtype=np.float64)
        recall = np.asarray(_pr_entry(curve, "recall", method), dtype=np.float64)
        if precision.shape != recall.shape or precision.ndim != 1:
            raise ValueError(f"{method!r}: precision {precision.shape} and recall {recall.shape} must be equal 1-D.")
        axes.plot(recall, precision, **method_style(method), **_marker_spacing(recall.size), label=method)
    axes.set_xlabel("recall (fraction of relevant items retrieved)")
    axes.set_ylabel("precision (fraction of retrieved items relevant)")
    axes.set_xlim(0, 1.02)
    axes.set_ylim(0, 1.02)
    default = "precision-recall within Hamming radius r = 0..q" if kind == "radius" else (
        "precision-recall of the Hamming ranking (top n, ties by index)")
    axes.set_title(title or default)
    _legend_outside(fig, axes, title="method")
    return fig


def _pr_entry(curve: Mapping[str, np.ndarray], key: str, method: str) -> np.ndarray:
    for candidate in (f"pr_{key}", key):
        if candidate in curve:
            return curve[candidate]
    raise KeyError(f"pr_by_method[{method!r}] has no '{key}' (or 'pr_{key}') entry; pass the dict of evaluate().")


def plot_training_history(history_frame, metrics: Sequence[str] | None = None) -> Figure:
    """Training loss and validation metrics against the epoch.

    Parameters
    ----------
    history_frame : pandas.DataFrame
        One row per epoch with columns ``epoch`` and ``loss`` (as ``History.to_frame()`` /
        ``history.csv`` of :mod:`shc.train`), metric columns such as ``mAP@ALL``, and optionally a
        ``method`` column (one line per method).
    metrics : sequence of str, optional
        Metric columns for the right panel; by default every column whose name starts with "mAP".
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame) or not {"epoch", "loss"} <= set(history_frame.columns):
        raise ValueError("history_frame must be a DataFrame with 'epoch' and 'loss' columns (History.to_frame()).")
    columns = history_frame.columns
    metric_columns = list(metrics) if metrics is not None else [c for c in columns if str(c).startswith("mAP")]
    missing = [c for c in metric_columns if c not in columns]
    if missing:
        raise ValueError(f"metric columns {missing} are not in the history (columns: {list(columns)}).")
    groups = history_frame.groupby("method", sort=False) if "method" in columns else [("", history_frame)]
    line_styles = ("-", "--", ":", "-.")

    fig = _new_figure(10.0, 4.0)
    loss_axes, metric_axes = fig.subplots(1, 2)
    for method, frame in groups:
        style = method_style(method) if method else {"color": None, "marker": "o", "linestyle": "-"}
        prefix = f"{method} " if method else ""
        loss_axes.plot(frame["epoch"], frame["loss"], **style, markersize=3, label=f"{prefix}loss")
        for metric, line in zip(metric_columns, line_styles * len(metric_columns)):  # line style: the metric
            rows = frame[frame[metric].notna()]
            metric_axes.plot(rows["epoch"], rows[metric], color=style["color"], marker=style["marker"],
                             linestyle=line, markersize=3, label=f"{prefix}{metric}")  # fmt: skip
    loss_axes.set_xlabel("epoch")
    loss_axes.set_ylabel("training loss (unitless)")
    loss_axes.set_title("training loss")
    metric_axes.set_xlabel("epoch")
    metric_axes.set_ylabel("validation metric (0 to 1)")
    metric_axes.set_title("validation retrieval quality")
    _legend_outside(fig, metric_axes if metric_columns else loss_axes)
    return fig


def _mean_and_spread(frame, x: str, y: str):
    """Per ``x`` value, the mean and standard deviation (0 for one run) of ``y`` over the rows (seeds)."""
    stats = frame.dropna(subset=[y]).groupby(x)[y].agg(["mean", "std"])
    return stats.index.to_numpy(), stats["mean"].to_numpy(), stats["std"].fillna(0.0).to_numpy()


def plot_convergence(history_frame, metrics: Sequence[str] | None = None, group: str = "label") -> Figure:
    """The paper's convergence figure: training loss and validation mAP against the epoch, per code length.

    One row of panels per code length (column ``bits``), one panel for the loss and one per metric, one
    line per ``group`` value (method); several runs of a group (seeds) are drawn as their mean with a
    +-1 std band.

    Parameters
    ----------
    history_frame : pandas.DataFrame
        Stacked training histories with columns ``bits``, ``epoch``, ``loss``, ``group`` and the metrics
        (``shc.results.history_rows``); metrics are NaN on epochs without evaluation.
    metrics : sequence of str, optional
        Metric columns, by default those starting with "mAP".
    group : str
        The column naming a line (its style is :func:`method_style` of the value).
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame):
        raise TypeError("history_frame must be a pandas DataFrame (shc.results.history_rows(configs)).")
    columns = history_frame.columns
    metric_columns = list(metrics) if metrics is not None else [c for c in columns if str(c).startswith("mAP")]
    missing = [c for c in ("bits", "epoch", "loss", group, *metric_columns) if c not in columns]
    if missing or history_frame.empty:
        raise ValueError(f"history_frame needs rows and the columns {missing or ['bits', 'epoch', 'loss']} "
                         f"(shc.results.history_rows gives them); it has {list(columns)}.")  # fmt: skip
    bits_values = sorted(history_frame["bits"].unique())
    panels = ["loss", *metric_columns]

    fig = _new_figure(3.1 * len(panels) + 1.6, 2.5 * len(bits_values) + 0.4)
    grid = fig.subplots(len(bits_values), len(panels), sharex=True, squeeze=False)
    for row, q in enumerate(bits_values):
        for name, frame in history_frame[history_frame["bits"] == q].groupby(group, sort=False):
            style = method_style(str(name))
            for column, panel in enumerate(panels):
                x, mean, spread = _mean_and_spread(frame, "epoch", panel)
                axes = grid[row, column]
                axes.plot(x, mean, **style, **_marker_spacing(x.size), label=str(name))
                axes.fill_between(x, mean - spread, mean + spread, color=style["color"], alpha=0.2, linewidth=0)
        for column, panel in enumerate(panels):
            axes = grid[row, column]
            axes.set_title(f"{q} bits: {'training loss' if panel == 'loss' else 'validation ' + panel}", fontsize=10)
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
        grid[row, 0].set_ylabel("loss (unitless)")
    for axes in grid[-1]:
        axes.set_xlabel("epoch")
    _legend_outside(fig, grid[0, 0], title="method" if group in ("label", "method") else group)
    return fig


_CENTER_HISTORY_PANELS = (
    ("objective", "objective of Eq. 22"),
    ("s_loss", "S_loss (mean squared error)"),
    ("d_min", "d_min (bits)"),
    ("violation", "pairs closer than d"),
    ("proxy_residual", "proxy residual RMS(H - M)"),
    ("slack_residual", "slack residual mean |q - 2d - HH^T - K|"),
)


def plot_center_history(history_frame, group: str = "bits") -> Figure:
    """Algorithm 1 cycle by cycle: objective, S_loss, d_min, violations and the constraint residuals.

    Parameters
    ----------
    history_frame : pandas.DataFrame
        One row per outer cycle (column ``cycle``; cycle 0 is the start) with the columns of
        ``shc.centers.optimize_semantic_centers``' history (``shc.results.center_history_rows``). Several
        runs of one ``group`` value (seeds) are averaged per cycle. A ``gv_distance`` column adds the
        target distance d (Eq. 13) to the d_min panel as a dashed line.
    group : str
        Column telling the lines apart (default the code length).
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame) or history_frame.empty:
        raise ValueError("history_frame must be a non-empty DataFrame (shc.results.center_history_rows).")
    missing = [c for c in ("cycle", group, *(name for name, _ in _CENTER_HISTORY_PANELS)) if c not in history_frame]
    if missing:
        raise ValueError(f"history_frame lacks the columns {missing}; it has {list(history_frame.columns)}.")
    groups = list(dict.fromkeys(history_frame[group]))
    colors = _sequential_colors(len(groups))

    fig = _new_figure(11.0, 5.6)
    grid = fig.subplots(2, 3, sharex=True)
    for value, color in zip(groups, colors):
        frame = history_frame[history_frame[group] == value]
        label = f"{value} bits" if group == "bits" else str(value)
        for axes, (column, title) in zip(grid.flat, _CENTER_HISTORY_PANELS):
            x, mean, _ = _mean_and_spread(frame, "cycle", column)
            axes.plot(x, mean, color=color, marker="o", markersize=3, label=label)
            axes.set_title(title, fontsize=10)
        if "gv_distance" in frame:
            grid[0, 2].axhline(frame["gv_distance"].iloc[0], color=color, linestyle="--", linewidth=1)
    grid[0, 2].plot([], [], color="0.3", linestyle="--", label="GV distance d")
    for axes in grid[1]:
        axes.set_xlabel("outer cycle of Algorithm 1")
    for axes in grid.flat:
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    _legend_outside(fig, grid[0, 2])
    return fig


def plot_example_queries(
    query_images: Sequence[np.ndarray],
    result_images: Sequence[Sequence[np.ndarray]],
    correct_mask,
    query_titles: Sequence[str] | None = None,
) -> Figure:
    """Grid of query images (first column) and their top-K retrieved images; wrong results outlined in red.

    Parameters
    ----------
    query_images : sequence of (H, W) or (H, W, 3) arrays
        One image per query (``HashingSplit.raw_image``); sizes may differ.
    result_images : sequence (per query) of sequences of images
        The top-K retrieved images of each query, K equal for all queries.
    correct_mask : (Q, K) bool array
        Whether each retrieved image is relevant (green outline) or not (red outline).
    query_titles : sequence of str, optional
        Caption per query (e.g. its class name).
    """
    mask = np.asarray(correct_mask, dtype=bool)
    num_queries = len(query_images)
    if mask.ndim != 2 or mask.shape[0] != num_queries or len(result_images) != num_queries:
        raise ValueError(
            f"correct_mask must be (Q, K) with Q = {num_queries} queries, got {mask.shape}; result_images needs "
            f"one list per query (got {len(result_images)})."
        )
    top_k = mask.shape[1]
    if any(len(row) != top_k for row in result_images):
        raise ValueError(f"every query needs exactly K = {top_k} result images, as many as correct_mask columns.")
    if query_titles is not None and len(query_titles) != num_queries:
        raise ValueError(f"query_titles has {len(query_titles)} entries for {num_queries} queries.")

    fig = _new_figure(1.1 * (top_k + 1) + 0.4, 1.2 * num_queries + 0.4)
    grid = fig.subplots(num_queries, top_k + 1, squeeze=False)
    for row in range(num_queries):
        _show_image(grid[row, 0], query_images[row], "#0072B2")
        grid[row, 0].set_title(query_titles[row] if query_titles is not None else "query", fontsize=8)
        for column in range(top_k):
            outline = "#009E73" if mask[row, column] else "#D62728"
            _show_image(grid[row, column + 1], result_images[row][column], outline)
            if row == 0:
                grid[row, column + 1].set_title(f"#{column + 1}", fontsize=8)
    fig.suptitle(f"example queries and their top-{top_k} results (red outline: wrong class)", fontsize=10)
    return fig


def _show_image(axes, image: np.ndarray, outline: str) -> None:
    pixels = np.asarray(image)
    axes.imshow(pixels, cmap="gray" if pixels.ndim == 2 else None)
    axes.set_xticks([])
    axes.set_yticks([])
    axes.grid(False)
    for spine in axes.spines.values():
        spine.set_visible(True)
        spine.set_color(outline)
        spine.set_linewidth(2.5)


# --------------------------------------------------------------------------------------
# Palettes
# --------------------------------------------------------------------------------------


def _sequential_colors(count: int) -> list:
    from matplotlib import colormaps

    return list(colormaps["viridis"](np.linspace(0.1, 0.85, count)))


def _categorical_colors(count: int) -> list:
    from matplotlib import colormaps

    palette = colormaps["tab10" if count <= 10 else "tab20"]
    return [palette(i % palette.N) for i in range(count)]


# --------------------------------------------------------------------------------------
# Tidy data of the curve figures (saved beside each figure by save_figure(..., data=frame))
# --------------------------------------------------------------------------------------

#: Curve kinds of :func:`curve_frame`: the x column in the tidy frame and the keys of the metric arrays
#: (``shc.metrics.evaluate`` / ``shc.results.load_metrics``) for x, precision and recall.
CURVE_KINDS: dict[str, tuple[str, str, str, str]] = {
    "k": ("k", "k", "precision@k", "recall@k"),  # precision@K and recall@K
    "radius": ("radius", "pr_radius", "pr_precision", "pr_recall"),  # PR within Hamming radius r
    "rank": ("rank", "rank_k", "rank_precision", "rank_recall"),  # PR at cut-offs of the ranking
}
_RUN_COLUMNS = ("method", "bits", "seed")


def curve_frame(runs, kind: str):
    """Tidy long table of one kind of retrieval curve over runs: ``method, bits, seed, <x>, precision, recall``.

    Parameters
    ----------
    runs : iterable of mappings
        One per run: ``"method"`` (the legend label, e.g. ``shc.results.run_label(config)``), ``"bits"``,
        ``"seed"`` and the metric arrays of ``shc.metrics.evaluate`` (e.g. ``{**identity, **load_metrics(c)}``).
    kind : {"k", "radius", "rank"}
        precision@K / recall@K (x column ``k``), the Hamming-radius PR curve (``radius``) or the
        rank-based PR curve (``rank``: the cut-off n of the ranking), see :data:`CURVE_KINDS`.

    Returns
    -------
    pandas.DataFrame
        One row per run and x value; precision is NaN where undefined (a radius retrieving nothing).
    """
    import pandas as pd

    if kind not in CURVE_KINDS:
        raise ValueError(f"unknown curve kind {kind!r}; choose one of {sorted(CURVE_KINDS)}.")
    x_name, x_key, precision_key, recall_key = CURVE_KINDS[kind]
    frames = []
    for number, run in enumerate(runs):
        missing = [key for key in (*_RUN_COLUMNS, x_key, precision_key, recall_key) if key not in run]
        if missing:
            raise KeyError(f"run {number} lacks {missing}; pass method, bits, seed and the arrays of evaluate() "
                           f"(kind {kind!r} needs {x_key!r}, {precision_key!r}, {recall_key!r}).")  # fmt: skip
        x = np.asarray(run[x_key])
        precision = np.asarray(run[precision_key], dtype=np.float64)
        recall = np.asarray(run[recall_key], dtype=np.float64)
        if not x.ndim == 1 or precision.shape != x.shape or recall.shape != x.shape:
            raise ValueError(f"run {number}: {x_key}, {precision_key} and {recall_key} must be 1-D of equal length; "
                             f"got {x.shape}, {precision.shape}, {recall.shape}.")  # fmt: skip
        frames.append(pd.DataFrame({"method": str(run["method"]), "bits": int(run["bits"]), "seed": int(run["seed"]),
                                    x_name: x, "precision": precision, "recall": recall}))  # fmt: skip
    if not frames:
        raise ValueError("runs is empty; pass at least one run's metrics.")
    return pd.concat(frames, ignore_index=True)


def _curve_x(frame) -> str:
    names = [name for name, *_ in CURVE_KINDS.values() if name in frame.columns]
    if len(names) != 1 or not {*_RUN_COLUMNS, "precision", "recall"} <= set(frame.columns):
        raise ValueError(f"frame must come from curve_frame (method, bits, seed, one of k/radius/rank, precision, "
                         f"recall); it has {list(frame.columns)}.")  # fmt: skip
    return names[0]


def _at_bits(frame, bits: int | None):
    values = sorted(frame["bits"].unique())
    if bits is None:
        if len(values) != 1:
            raise ValueError(f"the frame holds several code lengths {values}; pass bits=one of them.")
        return frame
    if bits not in values:
        raise ValueError(f"no rows with bits={bits}; the frame has {values}.")
    return frame[frame["bits"] == bits]


def curve_arrays(frame, y: str, bits: int | None = None) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``x, {method: (seeds, n) array}`` of a :func:`curve_frame` column, the input of :func:`plot_curves`.

    Parameters
    ----------
    frame : pandas.DataFrame from :func:`curve_frame`
    y : {"precision", "recall"}
    bits : int, optional
        The code length to draw (needed when the frame holds several).
    """
    x_name = _curve_x(frame)
    if y not in ("precision", "recall"):
        raise ValueError(f"y must be 'precision' or 'recall', got {y!r}.")
    rows = _at_bits(frame, bits)
    x = np.sort(rows[x_name].unique())
    curves = {}
    for method, group in rows.groupby("method", sort=False):
        table = group.pivot(index="seed", columns=x_name, values=y)
        if table.shape[1] != x.size or table.isna().all(axis=None):
            raise ValueError(f"the runs of {method!r} do not share the x values of the others; evaluate them alike.")
        curves[str(method)] = table.reindex(columns=x).to_numpy(dtype=np.float64)
    return x, curves


def pr_arrays(frame, bits: int | None = None) -> dict[str, dict[str, np.ndarray]]:
    """``{method: {"precision", "recall"}}`` averaged over seeds at each x (NaN left out), for :func:`plot_pr_curves`."""
    x_name = _curve_x(frame)
    rows = _at_bits(frame, bits)
    means = rows.groupby(["method", x_name], sort=False)[["precision", "recall"]].mean().reset_index()
    return {str(method): {"precision": group.sort_values(x_name)["precision"].to_numpy(),
                          "recall": group.sort_values(x_name)["recall"].to_numpy()}
            for method, group in means.groupby("method", sort=False)}  # fmt: skip


def arrays_frame(x, ys_by_method: Mapping[str, np.ndarray], x_name: str = "x", y_name: str = "y", **constants):
    """Tidy long table of the inputs of :func:`plot_curves`: ``method, [constants], run, <x_name>, <y_name>``.

    For figures drawn from arrays (e.g. a loss against the cycle); ``run`` numbers the rows of a
    (runs, n) array (seeds in the order given). ``constants`` (e.g. ``bits=32``) become columns.
    """
    import pandas as pd

    x_values = np.asarray(x)
    frames = []
    for method, values in ys_by_method.items():
        runs = np.atleast_2d(np.asarray(values, dtype=np.float64))
        if runs.ndim != 2 or runs.shape[1] != x_values.size:
            raise ValueError(f"ys_by_method[{method!r}] has shape {np.shape(values)}; expected ({x_values.size},) "
                             f"or (runs, {x_values.size}).")  # fmt: skip
        for run, row in enumerate(runs):
            frames.append(pd.DataFrame({"method": str(method), **constants, "run": run, x_name: x_values, y_name: row}))
    if not frames:
        raise ValueError("ys_by_method is empty; pass at least one method -> values.")
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------------------
# Learned codes in 2-D, per-class AP, convergence of every method on one axis
# --------------------------------------------------------------------------------------


def code_embedding_frame(
    codes,
    labels,
    coarse_labels,
    centers=None,
    *,
    max_points: int = 800,
    method: str = "tsne",
    seed: int = 0,
):
    """2-D embedding of learned hash codes (and the hash centers) from their Hamming distances.

    Items are subsampled (uniformly, ``seed``) to ``max_points``; the pairwise Hamming distances
    ``(q - b_i^T b_j) / 2`` (Eq. 17) of items and centers together are embedded by scikit-learn's
    t-SNE (``metric="precomputed"``) or metric MDS (precomputed dissimilarities), so centers land
    among the codes trained towards them.

    Parameters
    ----------
    codes : (n, q) array of +-1
        Learned codes (e.g. of the query set).
    labels : (n,) int array
        Class of each code.
    coarse_labels : (C,) int array
        Coarse class of each class (the colour).
    centers : (C, q) array of +-1, optional
        The hash centers, drawn as large markers.
    max_points : int
        At most this many codes are embedded (t-SNE and MDS cost grows with the square).
    method : {"tsne", "mds"}
    seed : int
        Subsample and embedding seed.

    Returns
    -------
    pandas.DataFrame
        Columns ``kind`` ("code" or "center"), ``index`` (row in ``codes`` or class id), ``class``,
        ``coarse``, ``x``, ``y``.
    """
    import pandas as pd

    items = _as_centers(codes, "codes")
    classes = np.asarray(labels)
    coarse = np.asarray(coarse_labels)
    if classes.shape != (items.shape[0],) or not np.issubdtype(classes.dtype, np.integer):
        raise ValueError(f"labels must be ({items.shape[0]},) integer class ids, one per code; got {classes.shape}.")
    if coarse.ndim != 1 or classes.max() >= coarse.size:
        raise ValueError(f"coarse_labels must be (C,) with an entry for every class; got {coarse.shape} for class "
                         f"ids up to {classes.max()}.")  # fmt: skip
    if method not in ("tsne", "mds"):
        raise ValueError(f"method must be 'tsne' or 'mds', got {method!r}.")
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.choice(items.shape[0], size=min(_check_positive(max_points), items.shape[0]), replace=False))
    stacked, kinds, index, klass = items[chosen], ["code"] * chosen.size, list(chosen), list(classes[chosen])
    if centers is not None:
        hub = _as_centers(centers)
        if hub.shape != (coarse.size, items.shape[1]):
            raise ValueError(f"centers must be (C, q) = ({coarse.size}, {items.shape[1]}); got {hub.shape}.")
        stacked = np.vstack([stacked, hub])
        kinds += ["center"] * hub.shape[0]
        index += list(range(hub.shape[0]))
        klass += list(range(hub.shape[0]))
    distances = ((items.shape[1] - stacked @ stacked.T) / 2).astype(np.float64)
    coordinates = _embed(distances, method, seed)
    klass = np.asarray(klass)
    return pd.DataFrame({"kind": kinds, "index": index, "class": klass, "coarse": coarse[klass],
                         "x": coordinates[:, 0], "y": coordinates[:, 1]})  # fmt: skip


def _check_positive(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"expected a positive integer, got {value!r}.")
    return int(value)


def _embed(distances: np.ndarray, method: str, seed: int) -> np.ndarray:
    import inspect

    from sklearn.manifold import MDS, TSNE
    from threadpoolctl import threadpool_limits

    if method == "tsne":
        perplexity = float(min(30.0, max(2.0, (distances.shape[0] - 1) / 3)))
        model = TSNE(n_components=2, metric="precomputed", init="random", perplexity=perplexity, random_state=seed)
    else:
        parameters = inspect.signature(MDS).parameters
        options = {"metric": "precomputed"} if "metric_mds" in parameters else {"dissimilarity": "precomputed"}
        if "init" in parameters:
            options["init"] = "random"
        model = MDS(n_components=2, n_init=1, random_state=seed, **options)
    # One thread: for <= ~1000 points OpenMP threads gain little and, on a busy machine, cost 10-100x.
    with threadpool_limits(limits=1):
        return model.fit_transform(distances)


def plot_code_embedding(frame, coarse_names: Sequence[str] | None = None, title: str | None = None) -> Figure:
    """Scatter of :func:`code_embedding_frame`: codes as small dots, centers as large outlined stars.

    Colour: the coarse class (one colour each, also in the legend); a code near its class's center
    and far from other coarse classes is what a semantic code should look like.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or not {"kind", "coarse", "x", "y"} <= set(frame.columns):
        raise ValueError("frame must come from code_embedding_frame (columns kind, index, class, coarse, x, y).")
    groups = sorted(frame["coarse"].unique())
    if coarse_names is not None and len(coarse_names) <= max(groups):
        raise ValueError(f"coarse_names has {len(coarse_names)} names but coarse class {max(groups)} occurs.")
    colors = _categorical_colors(len(groups))
    fig = _new_figure(7.2, 5.6)
    axes = fig.subplots()
    for group, color in zip(groups, colors):
        name = coarse_names[group] if coarse_names is not None else f"coarse {group}"
        codes = frame[(frame["coarse"] == group) & (frame["kind"] == "code")]
        hubs = frame[(frame["coarse"] == group) & (frame["kind"] == "center")]
        axes.scatter(codes["x"], codes["y"], color=color, s=9, alpha=0.55, linewidth=0, label=name)
        axes.scatter(hubs["x"], hubs["y"], color=color, s=160, marker="*", edgecolor="black", linewidth=0.8)
    if (frame["kind"] == "center").any():
        axes.scatter([], [], color="white", s=160, marker="*", edgecolor="black", label="hash center")
    axes.set_xticks([])
    axes.set_yticks([])
    axes.set_xlabel("embedding axis 1 (Hamming distances preserved as far as possible)")
    axes.set_ylabel("embedding axis 2")
    axes.set_title(title or f"learned codes in 2-D ({(frame['kind'] == 'code').sum()} codes)")
    _legend_outside(fig, axes, title="coarse class")
    return fig


def class_ap_frame(
    ap_by_method: Mapping[str, np.ndarray],
    similarity,
    counts=None,
    class_names: Sequence[str] | None = None,
):
    """Per-class AP against the class's mean similarity to the other classes, one row per (method, class).

    Parameters
    ----------
    ap_by_method : mapping method -> (C,) array
        Per-class mean AP, e.g. ``shc.metrics.per_class_mean(average_precision_per_query(...), labels)[0]``.
    similarity : (C, C) array in [-1, 1]
        The class similarity S; a class's ``mean_similarity`` is the mean of its row without the diagonal.
    counts : (C,) int array, optional
        Queries per class (``per_class_mean``'s second result), kept as ``n_queries``.
    class_names : sequence of str, optional

    Returns
    -------
    pandas.DataFrame
        Columns ``method, class, name, mean_similarity, ap`` (and ``n_queries``); classes without a
        query (NaN AP) are left out.
    """
    import pandas as pd

    if not isinstance(ap_by_method, Mapping) or not ap_by_method:
        raise ValueError("ap_by_method must be a non-empty mapping method -> (C,) per-class AP.")
    matrix = _as_similarity(similarity)
    num_classes = matrix.shape[0]
    if num_classes < 2:
        raise ValueError("at least 2 classes are needed for a similarity to the others.")
    mean_similarity = (matrix.sum(axis=1) - np.diag(matrix)) / (num_classes - 1)
    names = list(class_names) if class_names is not None else [str(c) for c in range(num_classes)]
    if len(names) != num_classes:
        raise ValueError(f"class_names has {len(names)} names for {num_classes} classes.")
    frames = []
    for method, values in ap_by_method.items():
        ap = np.asarray(values, dtype=np.float64)
        if ap.shape != (num_classes,):
            raise ValueError(f"ap_by_method[{method!r}] has shape {ap.shape}; expected ({num_classes},) like S.")
        columns = {"method": str(method), "class": np.arange(num_classes), "name": names,
                   "mean_similarity": mean_similarity, "ap": ap}  # fmt: skip
        if counts is not None:
            columns["n_queries"] = np.asarray(counts, dtype=np.int64)
        frames.append(pd.DataFrame(columns))
    frame = pd.concat(frames, ignore_index=True)
    return frame[frame["ap"].notna()].reset_index(drop=True)


def plot_class_ap(frame, title: str | None = None) -> Figure:
    """Scatter of :func:`class_ap_frame`: per-class AP (y) against mean similarity to the other classes (x).

    Classes similar to many others are the hard ones; the legend gives each method's Spearman rank
    correlation between the two.
    """
    import pandas as pd
    from scipy.stats import spearmanr

    if not isinstance(frame, pd.DataFrame) or not {"method", "mean_similarity", "ap"} <= set(frame.columns):
        raise ValueError("frame must come from class_ap_frame (columns method, class, name, mean_similarity, ap).")
    fig = _new_figure(7.0, 4.6)
    axes = fig.subplots()
    for method, group in frame.groupby("method", sort=False):
        style = method_style(str(method))
        rho = spearmanr(group["mean_similarity"], group["ap"]).statistic if len(group) > 2 else float("nan")
        axes.scatter(group["mean_similarity"], group["ap"], color=style["color"], marker=style["marker"], s=22,
                     alpha=0.8, label=f"{method} (Spearman {rho:+.2f})")  # fmt: skip
    axes.set_xlabel("class's mean similarity S to the other classes (unitless)")
    axes.set_ylabel("class AP (mean over the class's queries)")
    axes.set_ylim(-0.02, 1.02)
    axes.set_title(title or "per-class AP against class similarity")
    _legend_outside(fig, axes, title="method")
    return fig


def convergence_frame(history_frame, metric: str = "mAP@ALL", group: str = "label"):
    """Tidy ``method, bits, seed, epoch, <metric>`` rows of the epochs where ``metric`` was evaluated.

    Parameters
    ----------
    history_frame : pandas.DataFrame
        Stacked histories (``shc.results.history_rows``): columns ``bits``, ``seed``, ``epoch``, ``group``, ``metric``.
    metric : str
        A metric column, e.g. "mAP@ALL", or "loss".
    group : str
        The column naming the method (legend label).
    """
    import pandas as pd

    if not isinstance(history_frame, pd.DataFrame):
        raise TypeError("history_frame must be a pandas DataFrame (shc.results.history_rows(configs)).")
    missing = [c for c in ("bits", "seed", "epoch", group, metric) if c not in history_frame.columns]
    if missing:
        raise ValueError(f"history_frame lacks {missing}; it has {list(history_frame.columns)}.")
    rows = history_frame[history_frame[metric].notna()]
    frame = rows[[group, "bits", "seed", "epoch", metric]].rename(columns={group: "method"})
    return frame.astype({"method": str}).reset_index(drop=True)


def plot_convergence_overlay(frame, title: str | None = None) -> Figure:
    """Every method's curve of :func:`convergence_frame` on one shared axis per code length.

    Several seeds are drawn as their mean with a +-1 std band; the styles are :func:`method_style`.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or list(frame.columns[:4]) != ["method", "bits", "seed", "epoch"]:
        raise ValueError("frame must come from convergence_frame (columns method, bits, seed, epoch, <metric>).")
    if frame.empty:
        raise ValueError("frame is empty: no epoch evaluated the metric.")
    metric = frame.columns[4]
    bits_values = sorted(frame["bits"].unique())
    fig = _new_figure(4.6 * len(bits_values) + 1.8, 4.0)
    grid = np.atleast_1d(fig.subplots(1, len(bits_values), sharey=True, squeeze=False)[0])
    for axes, q in zip(grid, bits_values):
        for method, group in frame[frame["bits"] == q].groupby("method", sort=False):
            style = method_style(str(method))
            x, mean, spread = _mean_and_spread(group, "epoch", metric)
            axes.plot(x, mean, **style, **_marker_spacing(x.size), label=str(method))
            axes.fill_between(x, mean - spread, mean + spread, color=style["color"], alpha=0.15, linewidth=0)
        axes.set_title(f"{q} bits", fontsize=10)
        axes.set_xlabel("epoch")
        axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    grid[0].set_ylabel(f"validation {metric}" if metric != "loss" else "training loss (unitless)")
    if title:
        fig.suptitle(title)
    _legend_outside(fig, grid[0], title="method")
    return fig
