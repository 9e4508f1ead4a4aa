"""Figures of the hash centers and the class similarity: the Gilbert-Varshamov bound, distance
histograms, center embeddings, S against HH^T/q, similarity heatmaps and comparisons, Algorithm 1 cycles."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from shc.plots.curves import _mean_and_spread
from shc.plots.style import (
    _DIVERGING_CMAP,
    _categorical_colors,
    _legend_outside,
    _new_figure,
    _pixel_faithful,
    _savefig_dpi,
    _sequential_colors,
    method_color,
)
from shc.validation import hamming_distance_matrix, sign_codes


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
        relative.plot(classes, distance[row] / q, marker="o", color=color, label=f"q = {q}")  # drawn in both panels:
        # the alt text says so (an unlabelled copy read as the left panel's alone, issue 38's audit)
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


def center_embedding_frame(centers, coarse_labels, coarse_names: Sequence[str] | None = None,
                           class_names: Sequence[str] | None = None):
    """What :func:`plot_center_embedding` draws: ``method, class, name, coarse, coarse_name, x, y, explained``
    (the two principal coordinates of each center and the share of variance each axis keeps)."""
    import pandas as pd

    rows = []
    for method, codes in _centers_mapping(centers).items():
        coordinates, explained = _principal_coordinates(codes)
        for index, (x, y) in enumerate(coordinates):
            coarse = int(np.asarray(coarse_labels)[index])
            rows.append({"method": method, "class": index,
                         "name": class_names[index] if class_names is not None else str(index),
                         "coarse": coarse, "coarse_name": coarse_names[coarse] if coarse_names is not None else "",
                         "x": float(x), "y": float(y), "explained_x": float(explained[0]),
                         "explained_y": float(explained[1])})
    return pd.DataFrame(rows)


def _principal_coordinates(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    centred = codes - codes.mean(axis=0)
    left, singular, _ = np.linalg.svd(centred, full_matrices=False)
    singular = np.pad(singular, (0, max(0, 2 - singular.size)))
    left = np.pad(left, ((0, 0), (0, max(0, 2 - left.shape[1]))))
    total = float(np.sum(singular**2)) or 1.0
    return left[:, :2] * singular[:2], singular[:2] ** 2 / total


def plot_similarity_vs_gram(similarity, centers, order=None, *, triangle: bool = True) -> Figure:
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
    triangle : bool
        Draw each matrix's upper triangle and diagonal only (default): every matrix here is symmetric, so the lower
        triangle repeats the upper one, as the figure's data (:func:`shc.plots.matrix_frame`) leaves it out too.
        ``False`` draws the full squares.
    """
    mapping = _centers_mapping(centers)
    num_classes, q = next(iter(mapping.values())).shape
    matrix = _as_similarity(similarity, num_classes)
    permutation = similarity_order(matrix) if order is None else _as_order(order, num_classes)
    panels = {"target similarity $S$": matrix}
    panels |= {f"{method or 'centers'}: $HH^\\top/q$": (codes @ codes.T) / q for method, codes in mapping.items()}
    return _heatmap_row(panels, permutation, "similarity / cosine (unitless)", triangle)


#: The widest figure :func:`_show_every_cell` makes (inches): past it, a matrix has more classes than its panels
#: have pixels, and its heatmap is drawn antialiased (each pixel a local average) instead of cell by cell.
_MAX_HEATMAP_WIDTH = 24.0


def _show_every_cell(fig: Figure, images: Sequence, num_classes: int) -> None:
    """Give every class of the heatmaps ``images`` at least one pixel of the saved PNG (:func:`save_figure`'s dpi):
    enlarge ``fig`` (up to :data:`_MAX_HEATMAP_WIDTH` inches wide) until each panel spans ``num_classes`` pixels,
    then draw the cells with nearest-neighbour interpolation (:func:`_pixel_faithful`), so no row or column is
    averaged with its neighbours or dropped: at 275 pixels a 333-class panel, sampled, lost about a sixth of its
    classes' rows and columns, and antialiased it blurs neighbours together. The panels have no frame, which would
    cover the first and last class. Where the cap leaves too few pixels the images stay antialiased."""
    dpi = _savefig_dpi(fig)
    for image in images:
        image.axes.spines[:].set_visible(False)  # a frame line would cover the first and last class's pixels
    for _ in range(4):
        fig.draw_without_rendering()  # lays out the constrained figure, so the panels' sizes are final
        pixels = min(min(image.axes.get_window_extent().width, image.axes.get_window_extent().height)
                     for image in images) * dpi / fig.dpi
        width, height = fig.get_size_inches()
        if pixels >= num_classes or width >= _MAX_HEATMAP_WIDTH:
            break
        grow = min(1.03 * num_classes / pixels, _MAX_HEATMAP_WIDTH / width)
        fig.set_size_inches(width * grow, height * grow)
    _pixel_faithful(fig, images)


def _heatmap_row(panels: Mapping[str, np.ndarray], permutation: np.ndarray, colorbar_label: str,
                 triangle: bool) -> Figure:
    """One heatmap per panel, side by side, rows and columns in the same class order, values in [-1, 1]; the figure
    is large enough for one pixel per class (:func:`_show_every_cell`).

    ``triangle`` leaves the cells below the diagonal empty (the background shows): the panels are symmetric
    matrices, and the repeated half costs bytes without telling anything. The Gram matrix of random-looking centers
    is noise to a PNG compressor, so on `standard-fine`'s 333 classes the triangle about halves these figures' bytes
    (``benchmarks/png_weight.py --heatmaps``; issue 38)."""
    num_classes = permutation.size
    below = np.tril(np.ones((num_classes, num_classes), dtype=bool), k=-1)
    fig = _new_figure(2.7 * len(panels) + 1.2, 3.3)
    axes_list = np.atleast_1d(fig.subplots(1, len(panels), squeeze=False)[0])
    images = []
    for axes, (title, values) in zip(axes_list, panels.items()):
        shown = values[np.ix_(permutation, permutation)]
        shown = np.ma.masked_array(shown, mask=below) if triangle else shown
        images.append(axes.imshow(shown, cmap=_DIVERGING_CMAP, vmin=-1, vmax=1))
        axes.set_title(title, fontsize=10)
        # two lines: "upper triangle" beside the class count ran into the next panel's label at C = 100
        axes.set_xlabel(f"{num_classes} classes (same order)" + ("\nupper triangle" if triangle else ""))
        axes.set_xticks([])
        axes.set_yticks([])
        axes.grid(False)
    axes_list[0].set_ylabel(f"{num_classes} classes (same order)")
    fig.colorbar(images[-1], ax=list(axes_list), shrink=0.85, label=colorbar_label)
    _show_every_cell(fig, images, num_classes)
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
    _show_every_cell(fig, [image], num_classes)
    return fig


def _similarity_mapping(matrices) -> dict[str, np.ndarray]:
    if not isinstance(matrices, Mapping) or not matrices:
        raise ValueError("matrices must be a non-empty mapping name -> (C, C) similarity matrix.")
    checked = {str(name): _as_similarity(S) for name, S in matrices.items()}
    sizes = {S.shape[0] for S in checked.values()}
    if len(sizes) != 1:
        raise ValueError(f"all matrices must describe the same classes, got sizes {sorted(sizes)}.")
    return checked


def plot_similarity_comparison(matrices: Mapping[str, np.ndarray], order=None, *, triangle: bool = True) -> Figure:
    """Several class-similarity matrices side by side, rows and columns in one class order.

    Parameters
    ----------
    matrices : mapping name -> (C, C) array in [-1, 1]
        E.g. the data-dependent S (Eq. 2-12), the text-embedding S (Eq. 1) and the hierarchy's S.
    order : (C,) permutation, optional
        Class order, by default the hierarchical clustering of the first matrix
        (:func:`similarity_order`), so the others are read in its block structure.
    triangle : bool
        Upper triangle and diagonal only (default; the matrices are symmetric), else the full squares.
    """
    mapping = _similarity_mapping(matrices)
    first = next(iter(mapping.values()))
    permutation = similarity_order(first) if order is None else _as_order(order, first.shape[0])
    return _heatmap_row(mapping, permutation, "similarity (unitless, -1 to 1)", triangle)


_GROUP_BINS = np.linspace(-1.0, 1.0, 41)  # the histogram bins of plot_similarity_by_group and its frame


def _group_pairs(matrices, coarse_labels):
    """The similarity mapping and the pairs i < j of different classes, with whether each shares a coarse class."""
    mapping = _similarity_mapping(matrices)
    num_classes = next(iter(mapping.values())).shape[0]
    coarse = np.asarray(coarse_labels)
    if coarse.shape != (num_classes,):
        raise ValueError(f"coarse_labels must have shape ({num_classes},), one per class; got {coarse.shape}.")
    rows, columns = np.triu_indices(num_classes, k=1)
    return mapping, rows, columns, coarse[rows] == coarse[columns]


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

    mapping, rows, columns, same = _group_pairs(matrices, coarse_labels)
    bins = _GROUP_BINS

    fig = _new_figure(3.2 * len(mapping) + 1.6, 3.0)
    axes_list = np.atleast_1d(fig.subplots(1, len(mapping), squeeze=False)[0])
    for axes, (name, matrix) in zip(axes_list, mapping.items()):
        values = matrix[rows, columns]
        for mask, label, color in ((same, "same coarse class", "#D55E00"), (~same, "other pairs", "#0072B2")):
            if mask.any():
                axes.hist(values[mask], bins=bins, density=True, alpha=0.55, color=color, label=label)
        auc = hierarchy_agreement(matrix, np.asarray(coarse_labels))["roc_auc"]
        # two lines: "data-dependent S, seed 1: ROC-AUC 0.927" was wider than its panel and ran into the next title
        axes.set_title(f"{name}\nROC-AUC {auc:.3f}", loc="left", fontsize=10)
        axes.set_xlabel("similarity of two classes (unitless)")
    axes_list[0].set_ylabel("density of class pairs")
    _legend_outside(fig, axes_list[0])
    return fig


def similarity_by_group_frame(matrices: Mapping[str, np.ndarray], coarse_labels):
    """Tidy ``source, pairs, bin_low, bin_high, count, density`` rows: the histograms that
    :func:`plot_similarity_by_group` draws (pairs of different classes in the same coarse class against the rest,
    40 bins over [-1, 1]), not the C x C matrices behind them."""
    import pandas as pd

    mapping, rows, columns, same = _group_pairs(matrices, coarse_labels)
    frames = []
    for name, matrix in mapping.items():
        values = matrix[rows, columns]
        for mask, label in ((same, "same coarse class"), (~same, "other pairs")):
            if not mask.any():
                continue
            counts, _ = np.histogram(values[mask], bins=_GROUP_BINS)
            density, _ = np.histogram(values[mask], bins=_GROUP_BINS, density=True)
            frames.append(pd.DataFrame({"source": name, "pairs": label, "bin_low": _GROUP_BINS[:-1],
                                        "bin_high": _GROUP_BINS[1:], "count": counts, "density": density}))
    return pd.concat(frames, ignore_index=True)


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
    # a count of pairs: whole-number ticks from 0 (all cycles at 0 drew ticks from -0.04 to 0.04, a reader audit), the
    # axis a little below 0 so that a line at 0 is not hidden by the frame
    violations = grid.flat[[name for name, _ in _CENTER_HISTORY_PANELS].index("violation")]
    top = max(1.0, violations.get_ylim()[1])
    violations.set_ylim(-0.04 * top, top)
    violations.yaxis.set_major_locator(MaxNLocator(integer=True))
    _legend_outside(fig, grid[0, 2])
    return fig



def plot_search_history(history_frame, group: str = "bits") -> Figure:
    """shc-ls's search record by record: S_loss at each record (per start: the start, its descent, its annealing
    blocks, its final descent; last: the pair descent), one line per ``group`` value (default the code length),
    the mean over seeds with a +-1 std band (cut at 0: S_loss is not negative).

    Parameters
    ----------
    history_frame : pandas.DataFrame
        One row per record (columns ``cycle``, ``seed``, ``s_loss`` and ``group``):
        ``shc.results.center_history_rows(configs, "shc-ls")``.
    group : str
        Column telling the lines apart.
    """
    import pandas as pd

    from shc.plots.curves import plot_curves

    if not isinstance(history_frame, pd.DataFrame) or history_frame.empty:
        raise ValueError("history_frame must be a non-empty DataFrame (shc.results.center_history_rows).")
    missing = [c for c in ("cycle", "seed", "s_loss", group) if c not in history_frame]
    if missing:
        raise ValueError(f"history_frame lacks the columns {missing}; it has {list(history_frame.columns)}.")
    records = np.sort(history_frame["cycle"].unique())
    curves = {}
    for value, frame in history_frame.groupby(group, sort=True):
        per_seed = frame.pivot_table(index="seed", columns="cycle", values="s_loss").reindex(columns=records)
        curves[f"{value} bits" if group == "bits" else str(value)] = per_seed.to_numpy()
    return plot_curves(records, curves, xlabel="record (start, descent, annealing blocks, final descent; per start; "
                       "last: pair descent)", ylabel="S_loss (mean squared error, unitless)",
                       title="shc-ls center optimisation", legend_title="code length" if group == "bits" else group)

def distance_frame(centers_by_method: Mapping[str, np.ndarray]):
    """Tidy ``method, distance, pairs`` rows: how many center pairs (i < j) of each set lie at each Hamming
    distance 0..q, the bars :func:`plot_distance_histograms` draws (zero counts included, so ``d_min`` is the
    smallest distance with ``pairs > 0``). Counts, not the C(C-1)/2 pairs themselves: at C = 333 those are 55,278
    rows a method (issue 38: figure data light enough to commit)."""
    import pandas as pd

    frames = []
    for method, centers in _centers_mapping(centers_by_method).items():
        distances = hamming_distance_matrix(centers)
        i, j = np.triu_indices(len(centers), k=1)
        bits = centers.shape[1]
        frames.append(pd.DataFrame({"method": method, "distance": np.arange(bits + 1),
                                    "pairs": np.bincount(distances[i, j], minlength=bits + 1)}))
    return pd.concat(frames, ignore_index=True)


def gram_frames(similarity, centers_by_method: Mapping[str, np.ndarray], names=None, *,
                include_similarity: bool = True, order=None):
    """What :func:`plot_similarity_vs_gram` draws, in a form light enough to commit: S as
    :func:`shc.plots.matrix_frame` writes it (``source`` "S"), then each method's centers, a line a class
    (``source`` the method, ``row`` the class, ``code`` its q bits as ``+``/``-``), from which
    :func:`gram_from_frame` rebuilds the method's H H^T / q exactly. A class's code is q characters instead of C
    numbers: with `standard-fine`'s S (C = 333) and five 32-bit center sets the file is about 120 KB gzipped, against
    about 295 KB with the Gram matrices written out (S alone: about 99 KB; issue 38).

    ``include_similarity=False`` leaves S out (the centers only), for a page that saved S already: pass that file
    as :func:`shc.plots.save_figure`'s ``data_file`` beside this table, so S is stored once (issue 38).

    ``order`` is the figure's class order (what :func:`plot_similarity_vs_gram` was given, or its default
    :func:`similarity_order` of S): each line then says where its class is drawn (``shown_at``), so the figure can
    be redrawn from its file (page 02's file kept the classes' own order and no trace of the clustered one, a reader
    audit of `standard`, issue 38)."""
    import pandas as pd

    from shc.plots.style import matrix_frame

    table = matrix_frame({"S": _as_similarity(similarity)}, names, order=order)
    labels = list(table["row"])
    if "code" in labels:
        raise ValueError("a class named 'code' would head the column of the centers' codes; rename it.")
    frames = [table] if include_similarity else []
    for method, centers in _centers_mapping(centers_by_method).items():
        if method == "S":
            raise ValueError("'S' names the similarity matrix of this table; give the centers another name.")
        characters = np.ascontiguousarray(np.where(centers > 0, ord("+"), ord("-")).astype(np.uint8))
        codes = characters.view(f"S{centers.shape[1]}").ravel().astype(str)  # one string a row, no Python loop
        front = {"source": method, "row": labels}
        if "shown_at" in table:
            front["shown_at"] = table["shown_at"].to_numpy()
        frames.append(pd.DataFrame({**front, "code": codes}))
    gram = pd.concat(frames, ignore_index=True)
    gram.attrs["digits"] = table.attrs["digits"]
    return gram


def centers_from_frame(frame, method: str) -> tuple[np.ndarray, list[str]]:
    """``method``'s (C, q) ±1 centers in a :func:`gram_frames` table (its ``code`` strings of ``+`` and ``-``), and
    their class names."""
    rows = frame[frame["source"] == method]
    if rows.empty or "code" not in rows or rows["code"].isna().any():
        held = sorted(set(frame.loc[frame["code"].notna(), "source"])) if "code" in frame else []
        raise ValueError(f"no centers {method!r} in this table; it holds the centers of {held}.")
    codes = rows["code"].astype(str)
    characters = np.frombuffer("".join(codes).encode("ascii"), dtype=np.uint8).reshape(len(codes), -1)
    return np.where(characters == ord("+"), 1, -1), [str(name) for name in rows["row"]]


def gram_from_frame(frame, method: str) -> tuple[np.ndarray, list[str]]:
    """The (C, C) matrix H H^T / q of ``method``'s centers in a :func:`gram_frames` table, and its class names."""
    centers, names = centers_from_frame(frame, method)
    return centers @ centers.T / centers.shape[1], names


def gv_bound_frame(num_classes_list: Sequence[int], bits_list: Sequence[int]):
    """Tidy ``classes, bits, gv_distance`` rows (what :func:`plot_gv_bound` draws)."""
    import pandas as pd

    from shc.centers import gv_min_distance

    return pd.DataFrame([{"classes": int(c), "bits": int(q), "gv_distance": gv_min_distance(int(c), int(q))}
                         for q in np.unique(bits_list) for c in np.unique(num_classes_list)])


def gv_bound_grid(frame: Any):
    """:func:`gv_bound_frame`'s rows as the grid a page shows: a row per C, a column ``q = ...`` per code length."""
    return (frame.pivot(index="classes", columns="bits", values="gv_distance")
            .rename(columns=lambda q: f"q = {q}").rename_axis(index="C", columns=None))
