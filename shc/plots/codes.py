"""Figures of the learned codes: example retrievals, a 2-D embedding of codes with their centers, and
per-class AP against class similarity."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from shc.plots.alt_text import wrapped_title
from shc.plots.geometry import _as_centers, _as_similarity
from shc.plots.style import _categorical_colors, _legend_outside, _new_figure, _pixel_faithful, method_style
from shc.validation import hamming_distance_matrix

_CAPTION_WIDTH = 14  # characters a line of an example query's caption


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
        Caption per query (e.g. its class name), wrapped to about 14 characters a line so it stays above its thumbnail.
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

    titles = query_titles if query_titles is not None else ["query"] * num_queries
    captions = [textwrap.fill(title, width=_CAPTION_WIDTH, break_long_words=False) for title in titles]
    # a row as tall as its tallest thumbnail (1.1 inches wide) and its caption's lines: 1.2 inches a row left 2:1
    # composites floating in white space (2026-12-04 audit)
    aspect = max(np.shape(image)[0] / np.shape(image)[1] for row in ([*query_images], *result_images) for image in row)
    lines = max(caption.count("\n") + 1 for caption in captions)
    fig = _new_figure(1.1 * (top_k + 1) + 0.4, (1.1 * aspect + 0.14 * lines + 0.1) * num_queries + 0.4)
    grid = fig.subplots(num_queries, top_k + 1, squeeze=False)
    for row in range(num_queries):
        _show_image(grid[row, 0], query_images[row], "#0072B2")
        # a composite's name ("T-shirt/top + T-shirt/top") is wider than its thumbnail and ran up to "#1": wrapped
        wrapped_title(grid[row, 0], titles[row], _CAPTION_WIDTH, fontsize=8)  # its alt text reads the name unwrapped
        for column in range(top_k):
            outline = "#009E73" if mask[row, column] else "#D62728"
            _show_image(grid[row, column + 1], result_images[row][column], outline)
            if row == 0:
                grid[row, column + 1].set_title(f"#{column + 1}", fontsize=8)
    fig.suptitle(f"example queries and their top-{top_k} results (red outline: wrong class)", fontsize=10)
    _pixel_faithful(fig, [image for axes in grid.flat for image in axes.images])  # the images' own pixels
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
        The hash centers, drawn as large markers: of classes ``0 .. C - 1`` (under the unseen-class protocol the
        seen classes; the held-out ones have none).
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
        # under the unseen-class protocol only the first (seen) classes have centers
        if hub.shape[1] != items.shape[1] or hub.shape[0] > coarse.size:
            raise ValueError(f"centers must be (C, q) with C <= {coarse.size} classes and q = {items.shape[1]}; got "
                             f"{hub.shape}.")
        stacked = np.vstack([stacked, hub])
        kinds += ["center"] * hub.shape[0]
        index += list(range(hub.shape[0]))
        klass += list(range(hub.shape[0]))
    distances = hamming_distance_matrix(stacked).astype(np.float64)
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


def plot_code_embedding(frame, coarse_names: Sequence[str] | None = None, title: str | None = None,
                        legend_title: str = "coarse class") -> Figure:
    """Scatter of :func:`code_embedding_frame`: codes as small dots above the centers' outlined stars (smaller when
    there are many).

    Colour: the coarse class (one colour each, also in the legend, titled ``legend_title``: the dataset's
    ``DatasetSplits.coarse_title`` says what a coarse class is there); a code near its class's center and far from
    other coarse classes is what a semantic code should look like.
    """
    import pandas as pd

    if not isinstance(frame, pd.DataFrame) or not {"kind", "coarse", "x", "y"} <= set(frame.columns):
        raise ValueError("frame must come from code_embedding_frame (columns kind, index, class, coarse, x, y).")
    groups = sorted(frame["coarse"].unique())
    if coarse_names is not None and len(coarse_names) <= max(groups):
        raise ValueError(f"coarse_names has {len(coarse_names)} names but coarse class {max(groups)} occurs.")
    colors = _categorical_colors(len(groups))
    star = _center_marker_size(int((frame["kind"] == "center").sum()))
    fig = _new_figure(7.2, 5.6)
    axes = fig.subplots()
    for group, color in zip(groups, colors):
        name = coarse_names[group] if coarse_names is not None else f"coarse {group}"
        codes = frame[(frame["coarse"] == group) & (frame["kind"] == "code")]
        hubs = frame[(frame["coarse"] == group) & (frame["kind"] == "center")]
        # codes above the centers: hundreds of stars (333 classes) otherwise hide the very dots they explain
        axes.scatter(codes["x"], codes["y"], color=color, s=9, alpha=0.55, linewidth=0, label=name, zorder=3)
        axes.scatter(hubs["x"], hubs["y"], color=color, s=star, marker="*", edgecolor="black",
                     linewidth=0.8 if star >= 100 else 0.4, zorder=2)
    if (frame["kind"] == "center").any():
        axes.scatter([], [], color="white", s=160, marker="*", edgecolor="black", label="hash center")
    axes.set_xticks([])
    axes.set_yticks([])
    axes.set_xlabel("embedding axis 1 (no units: only who is near whom is meaningful)")
    axes.set_ylabel("embedding axis 2")
    axes.set_title(title or f"learned codes in 2-D ({(frame['kind'] == 'code').sum()} codes)")
    # a long title ("coarse class (the class of its first digit)") would widen the legend and squeeze the map
    title_lines = [textwrap.fill(part, width=20) for part in legend_title.replace(" (", "\n(").split("\n")]
    _legend_outside(fig, axes, title="\n".join(title_lines))
    return fig


def _center_marker_size(num_centers: int) -> float:
    """Area (points^2) of a center's star in :func:`plot_code_embedding`: 160 up to 30 centers, then shrinking as
    ``4800 / C`` (all stars together cover a fixed area) down to 30, so at 333 classes they cover about a tenth of
    the panel, not two fifths."""
    return float(np.clip(4800.0 / max(num_centers, 1), 30.0, 160.0))


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
    # at most five x ticks: three-decimal similarities ("-0.010", "-0.005") ran into each other at matplotlib's seven
    axes.xaxis.set_major_locator(MaxNLocator(nbins=5))
    axes.set_ylabel("class AP (mean over the class's queries)")
    axes.set_ylim(-0.02, 1.02)
    axes.set_title(title or "per-class AP against class similarity")
    _legend_outside(fig, axes, title="method")
    return fig
