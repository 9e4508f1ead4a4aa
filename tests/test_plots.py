"""Tests of shc.plots: every plot function on tiny inputs, saving, atomic writes, colour stability."""

from __future__ import annotations

import io
import itertools
import os
import subprocess
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import is_color_like, to_hex
from matplotlib.figure import Figure

from shc import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _check_saved(fig: Figure, tmp_path: Path, stem: str) -> None:
    """The figure saves as non-empty PNG + SVG, atomically (no temporary file left)."""
    assert isinstance(fig, Figure)
    paths = plots.save_figure(fig, tmp_path / "figures" / stem)
    assert [p.name for p in paths] == [f"{stem}.png", f"{stem}.svg"]
    assert paths[0].read_bytes().startswith(PNG_MAGIC)
    assert b"<svg" in paths[1].read_bytes()[:2000]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert not [p.name for p in tmp_path.rglob(".*")]  # no temporary file left behind


def _random_centers(num_classes: int, num_bits: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).choice(np.array([-1, 1], dtype=np.int8), size=(num_classes, num_bits))


def _brute_force_distances(centers: np.ndarray) -> np.ndarray:
    """Pairwise Hamming distances counted bit by bit (independent of Eq. 15)."""
    num_classes = centers.shape[0]
    return np.array([[int(np.sum(centers[i] != centers[j])) for j in range(num_classes)] for i in range(num_classes)])


# --------------------------------------------------------------------------------------
# Colours and style
# --------------------------------------------------------------------------------------


def test_known_methods_have_fixed_distinct_colours():
    for name in ("random", "csq", "mds", "shc", "semantic", "dpsh", "dtsh", "hashnet", "greedyhash", "idhn", "lth",
                 "orthohash"):  # fmt: skip
        assert plots.method_color(name) == plots.METHOD_COLORS[name]
        assert plots.method_color(name.upper()) == plots.METHOD_COLORS[name]
    colours = [to_hex(c) for c in plots.METHOD_COLORS.values()]
    assert len(set(colours)) == len(colours)


def test_unknown_method_colour_is_valid_and_stable_across_processes():
    names = ["my-new-method", "shc (bert)", "x"]
    here = [plots.method_color(name) for name in names]
    assert all(is_color_like(colour) for colour in here)
    assert here == [plots.method_color(name) for name in names]
    code = f"from shc.plots import method_color; print([method_color(n) for n in {names!r}])"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(Path(plots.__file__).resolve().parents[2])}
    other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert other.stdout.strip() == repr(here)


def test_method_color_rejects_non_strings():
    with pytest.raises(TypeError, match="method name must be a str"):
        plots.method_color(3)


def test_use_style_sets_report_rc():
    plots.use_style()
    assert matplotlib.rcParams["svg.fonttype"] == "none"
    assert matplotlib.rcParams["savefig.bbox"] == "tight"


# --------------------------------------------------------------------------------------
# Saving
# --------------------------------------------------------------------------------------


def test_atomic_path_keeps_old_file_when_the_writer_fails(tmp_path):
    target = tmp_path / "report.html"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with plots.atomic_path(target) as temporary:
            temporary.write_text("half-written")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    with plots.atomic_path(target) as temporary:
        assert temporary.parent == tmp_path and temporary != target
        temporary.write_text("new")
        assert target.read_text() == "old"  # not visible before the block ends
    assert target.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def test_atomic_path_written_file_has_normal_permissions(tmp_path):
    with plots.atomic_path(tmp_path / "a.txt") as temporary:
        temporary.write_text("x")
    reference = tmp_path / "reference.txt"
    reference.write_text("x")
    assert (tmp_path / "a.txt").stat().st_mode == reference.stat().st_mode


def test_save_figure_accepts_a_suffix_and_creates_folders(tmp_path):
    fig = Figure()
    fig.subplots().plot([0, 1], [1, 0])
    paths = plots.save_figure(fig, tmp_path / "deep" / "folder" / "line.png")
    assert [p.name for p in paths] == ["line.png", "line.svg"]
    assert all(p.is_file() for p in paths)
    with pytest.raises(TypeError, match="matplotlib Figure"):
        plots.save_figure("not a figure", tmp_path / "x")


def test_save_table_writes_informative_index_only(tmp_path):
    plain = pd.DataFrame({"a": [1, 2], "b": [0.5, 0.25]})
    path = plots.save_table(plain, tmp_path / "tables" / "plain")
    assert path.name == "plain.csv"
    assert path.read_text().splitlines() == ["a,b", "1,0.5", "2,0.25"]
    indexed = plain.set_index(pd.Index(["shc", "mds"], name="method"))
    indexed_lines = plots.save_table(indexed, tmp_path / "indexed.csv").read_text().splitlines()
    assert indexed_lines == ["method,a,b", "shc,1,0.5", "mds,2,0.25"]
    with pytest.raises(TypeError, match="pd.DataFrame"):
        plots.save_table({"a": [1]}, tmp_path / "x")
    assert not list(tmp_path.rglob("*.tmp"))


# --------------------------------------------------------------------------------------
# Center geometry plots
# --------------------------------------------------------------------------------------


def test_plot_gv_bound_draws_hand_computed_distances(tmp_path):
    # q = 16: 2^16 / C against the cumulative sums 1, 17, 137, 697, 2517, 6885 of C(16, i):
    # C = 10 needs the sum to reach 6553.6 -> d = 6; C = 100 needs 655.36 -> d = 4.
    fig = plots.plot_gv_bound([100, 10], [16, 32])
    absolute = fig.axes[0]
    q16 = absolute.lines[0]
    np.testing.assert_array_equal(q16.get_xdata(), [10, 100])
    np.testing.assert_array_equal(q16.get_ydata(), [6, 4])
    relative = fig.axes[1].lines[0]
    np.testing.assert_allclose(relative.get_ydata(), [6 / 16, 4 / 16])
    assert fig.legends and absolute.get_legend() is None  # legend outside the data
    # the code lengths are drawn in both panels, the Hadamard segments in the left one (the alt text said the lines
    # were the left panel's alone: the right panel's copies had no label)
    assert plots.figure_alt_text(fig).endswith("Legend: Hadamard (C <= 2q) (in Gilbert-Varshamov distance d (Eq. 13)); "
                                               "in every panel: q = 16, q = 32")
    _check_saved(fig, tmp_path, "gv_bound")
    with pytest.raises(ValueError, match=">= 2"):
        plots.plot_gv_bound([1, 10], [16])


def test_plot_distance_histograms_counts_every_pair(tmp_path):
    center_sets = {"random": _random_centers(7, 8, seed=1), "shc": _random_centers(7, 8, seed=2)}
    fig = plots.plot_distance_histograms(center_sets, 8)
    assert len(fig.axes) == len(center_sets)  # a panel per method: the loop below checks each
    for axes, (method, centers) in zip(fig.axes, center_sets.items(), strict=True):
        distances = _brute_force_distances(centers)[np.triu_indices(7, k=1)]
        heights = np.array([patch.get_height() for patch in axes.patches])
        np.testing.assert_array_equal(heights, np.bincount(distances, minlength=9))
        assert axes.get_title(loc="left") == f"{method}: d_min = {distances.min()}"
        assert to_hex(axes.patches[0].get_facecolor(), keep_alpha=False) == plots.method_color(method).lower()
    _check_saved(fig, tmp_path, "distance_histograms")
    with pytest.raises(ValueError, match="num_bits=9"):
        plots.plot_distance_histograms(center_sets, 9)
    with pytest.raises(ValueError, match="only -1 and \\+1"):
        plots.plot_distance_histograms({"bad": np.zeros((3, 8))}, 8)


def test_plot_center_embedding_preserves_distances_of_three_centers(tmp_path):
    # Three centred points span at most 2 dimensions, so classical MDS is exact:
    # Euclidean distance in the plane = ||h_i - h_j|| = 2 sqrt(D_ij).
    centers = np.array([[1, 1, 1, 1, 1, 1], [1, 1, -1, -1, 1, -1], [-1, -1, -1, 1, 1, 1]])
    fig = plots.plot_center_embedding(centers, coarse_labels=[0, 1, 2], coarse_names=["a", "b", "c"])
    points = np.concatenate([collection.get_offsets() for collection in fig.axes[0].collections])
    planar = np.linalg.norm(points[:, None] - points[None], axis=-1)
    np.testing.assert_allclose(planar, 2 * np.sqrt(_brute_force_distances(centers)), atol=1e-9)
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["a", "b", "c"]
    _check_saved(fig, tmp_path, "embedding")


def test_plot_center_embedding_one_panel_per_method(tmp_path):
    center_sets = {"random": _random_centers(12, 16), "mds": _random_centers(12, 16, seed=3)}
    coarse = np.repeat([0, 1, 2], 4)
    fig = plots.plot_center_embedding(center_sets, coarse, class_names=[str(i) for i in range(12)])
    titles = [axes.get_title(loc="left") for axes in fig.axes]
    assert titles == ["random centers", "mds centers"]
    assert sum(len(collection.get_offsets()) for collection in fig.axes[0].collections) == 12
    _check_saved(fig, tmp_path, "embeddings")
    with pytest.raises(ValueError, match=r"shape \(12,\)"):
        plots.plot_center_embedding(center_sets, coarse[:5])


def _texts_apart(fig, texts, gap_inches: float = 0.3) -> list[tuple[int, int]] | None:
    """Draw ``fig`` and return None when, on every panel with a title (left to right), each of ``texts`` (a function
    of the axes: its x label, its title) ends at least ``gap_inches`` (about three spaces at 10 pt) before the next
    panel's begins, so a reader sees two texts, not one line; else their horizontal extents."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    panels = sorted((axes for axes in fig.axes if axes.get_title() or axes.get_title(loc="left")),
                    key=lambda axes: axes.get_position().x0)
    for text in texts:
        boxes = [text(axes).get_window_extent(renderer) for axes in panels]
        if not all(left.x1 + gap_inches * fig.dpi <= right.x0 for left, right in zip(boxes, boxes[1:])):
            return [(round(box.x0), round(box.x1)) for box in boxes]
    return None


def _x_tick_labels_apart(fig, axes, gap_inches: float) -> bool:
    """Draw ``fig``: at least three x tick labels are drawn inside ``axes``' limits and each ends ``gap_inches``
    before the next begins."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    low, high = axes.get_xlim()
    boxes = sorted((label.get_window_extent(canvas.get_renderer()) for tick, label in
                    zip(axes.get_xticks(), axes.get_xticklabels()) if low <= tick <= high and label.get_text()),
                   key=lambda box: box.x0)
    return len(boxes) >= 3 and all(left.x1 + gap_inches * fig.dpi <= right.x0 for left, right in zip(boxes, boxes[1:]))


@pytest.mark.parametrize("num_classes", [100, 333])
def test_similarity_vs_gram_panel_labels_do_not_run_into_each_other(num_classes):
    """Seven panels side by side (S and six methods, as page 02 draws them): drawn, each panel's x label and title end
    well before the next one's begin (the triangle's label ran into its neighbour on the 2026-12-04 build)."""
    centers = {name: _random_centers(num_classes, 16, seed=seed)
               for seed, name in enumerate(("random", "csq", "mds", "shc", "shc-ls", "semantic"))}
    for triangle in (True, False):
        fig = plots.plot_similarity_vs_gram(np.eye(num_classes), centers, triangle=triangle)
        assert len([axes for axes in fig.axes if axes.get_title()]) == 7
        assert _texts_apart(fig, (lambda axes: axes.xaxis.label, lambda axes: axes.title)) is None


def test_similarity_by_group_panel_titles_do_not_run_into_each_other():
    """Page 01's five S sources side by side, titled with their ROC-AUC: "data-dependent S, seed 1: ROC-AUC 0.927"
    ended 0.15 inches before the next panel's title on the 2026-12-04 build, so the two read as one line (a reader
    audit); each title now ends well before the next."""
    rng = np.random.default_rng(0)
    coarse = np.repeat(np.arange(10), 10)
    names = ("data-dependent S", "data-dependent S, seed 1", "data-dependent S, seed 2", "hierarchy S", "text S")
    matrices = {}
    for name in names:
        noise = rng.uniform(-1, 1, (100, 100))
        matrices[name] = np.clip((noise + noise.T) / 2 + 0.5 * (coarse[:, None] == coarse[None, :]), -1, 1)
        np.fill_diagonal(matrices[name], 1.0)
    fig = plots.plot_similarity_by_group(matrices, coarse)
    assert _texts_apart(fig, (lambda axes: axes._left_title,)) is None


def test_plot_similarity_vs_gram_shows_matrices_in_the_given_order(tmp_path):
    centers = _random_centers(5, 8, seed=4)
    similarity = np.eye(5)
    similarity[0, 1] = similarity[1, 0] = 0.5
    order = np.array([4, 2, 0, 1, 3])
    fig = plots.plot_similarity_vs_gram(similarity, {"shc": centers}, order=order)
    cosine = np.array([[np.dot(centers[i], centers[j]) / 8 for j in range(5)] for i in range(5)])
    shown_similarity, shown_cosine = (axes.images[0].get_array() for axes in fig.axes[:2])
    below = np.tril(np.ones((5, 5), dtype=bool), k=-1)  # symmetric matrices: the upper triangle and diagonal drawn
    for shown, expected in ((shown_similarity, similarity), (shown_cosine, cosine)):
        assert np.array_equal(np.ma.getmaskarray(shown), below)
        np.testing.assert_allclose(shown[~below], expected[np.ix_(order, order)][~below])
    assert fig.axes[0].images[0].get_clim() == (-1, 1) and fig.axes[0].get_xlabel().endswith("upper triangle")
    full = plots.plot_similarity_vs_gram(similarity, {"shc": centers}, order=order, triangle=False)
    assert not np.ma.getmaskarray(full.axes[1].images[0].get_array()).any()
    np.testing.assert_allclose(full.axes[1].images[0].get_array(), cosine[np.ix_(order, order)])
    _check_saved(fig, tmp_path, "similarity_vs_gram")
    with pytest.raises(ValueError, match="permutation"):
        plots.plot_similarity_vs_gram(similarity, centers, order=[0, 0, 1, 2, 3])
    with pytest.raises(ValueError, match="num_classes=5"):
        plots.plot_similarity_vs_gram(np.eye(4), centers)


def test_similarity_order_puts_each_block_together():
    blocks = np.repeat([0, 1, 2], [3, 4, 2])
    shuffled = np.random.default_rng(0).permutation(blocks)
    similarity = np.where(shuffled[:, None] == shuffled[None, :], 0.6, -0.2)
    np.fill_diagonal(similarity, 1.0)
    order = plots.similarity_order(similarity)
    assert sorted(order) == list(range(9))
    runs = [label for label, _ in itertools.groupby(shuffled[order])]
    assert len(runs) == 3  # every block is one contiguous run


def _drawn(fig, axes_index: int = 0) -> np.ndarray:
    """The RGBA pixels of the first image of ``fig.axes[axes_index]`` as the saved PNG draws them: the figure at
    :func:`save_figure`'s dpi, resampled by matplotlib into its panel (``AxesImage.make_image``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from shc.plots.style import _savefig_dpi

    fig.set_dpi(_savefig_dpi(fig))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    pixels, *_ = fig.axes[axes_index].images[0].make_image(canvas.get_renderer(), unsampled=False)
    return np.asarray(pixels).astype(int)


def _checkerboard_runs(fig, axes_index: int = 0, at: float = 0.5) -> int:
    """Colour runs along a pixel row of a heatmap panel as drawn (red and blue halves of the diverging map; ``at``:
    the row's height, from the top, as a share of the panel): a checkerboard S shows one run per class when every
    cell has its own pixels."""
    pixels = _drawn(fig, axes_index)
    row = pixels[int(at * (len(pixels) - 1))]
    sign = np.sign(row[:, 0] - row[:, 2])  # red (S = 1) against blue (S = -1)
    return int((np.diff(sign[sign != 0]) != 0).sum()) + 1


@pytest.mark.parametrize("num_classes", [40, 333])
def test_heatmaps_give_every_class_its_own_pixels(num_classes):
    # a checkerboard S alternates +1 / -1 along every row: averaged (antialiased) or dropped (downsampled) cells
    # would merge runs, so the runs counted on the saved PNG equal the classes only when each has its own pixels
    plots.use_style()  # the reports' dpi, as every notebook sets it (alone, this test ran at matplotlib's default)
    index = np.arange(num_classes)
    similarity = np.where((index[:, None] + index[None, :]) % 2 == 0, 1.0, -1.0)
    centers = np.where(np.random.default_rng(0).random((num_classes, 16)) < 0.5, -1, 1)
    for fig in (plots.plot_similarity_heatmap(similarity, cluster=False),
                plots.plot_similarity_vs_gram(similarity, {"shc": centers, "csq": centers},
                                              order=np.arange(num_classes), triangle=False)):
        assert all(image.get_interpolation() == "nearest" for ax in fig.axes for image in ax.images)
        assert _checkerboard_runs(fig) == num_classes
    # drawn as its upper triangle, the first class's row (the top) is whole, the last one (the bottom) only its
    # diagonal cell, and the middle row starts at the diagonal
    fig = plots.plot_similarity_vs_gram(similarity, {"shc": centers}, order=np.arange(num_classes))
    assert _checkerboard_runs(fig, at=1.0) == num_classes and _checkerboard_runs(fig, at=0.0) == 1
    assert abs(_checkerboard_runs(fig) - num_classes // 2) <= 1


def test_a_symmetric_heatmap_drawn_as_its_triangle_weighs_about_half_when_its_cells_are_noise():
    """The Gram matrix of random centers is noise to a PNG compressor; drawing its lower triangle again doubles that
    noise (issue 38: the reports' weight), so the triangle's PNG is well under the full square's."""
    from shc.plots.style import _savefig_dpi, compact_png

    plots.use_style()
    # 300 classes, as many as the heatmap has pixels: noise is most of the picture (the label's second line, "upper
    # triangle", is a few hundred bytes of it)
    centers = {"random": np.where(np.random.default_rng(1).random((300, 64)) < 0.5, -1, 1)}
    weights = []
    for triangle in (False, True):
        fig = plots.plot_similarity_vs_gram(np.eye(300), centers, order=np.arange(300), triangle=triangle)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=_savefig_dpi(fig))
        weights.append(len(compact_png(buffer.getvalue())))
    assert weights[1] < 0.7 * weights[0]


def test_a_heatmap_too_large_for_its_widest_figure_is_drawn_antialiased():
    from shc.plots import geometry

    num_classes = 4000  # more classes than 24 inches of panels hold pixels at the saved dpi
    fig = plots.plot_similarity_vs_gram(np.eye(num_classes), {"a": np.ones((num_classes, 8))},
                                        order=np.arange(num_classes))
    assert fig.get_size_inches()[0] <= geometry._MAX_HEATMAP_WIDTH + 1e-9
    assert {image.get_interpolation() for ax in fig.axes for image in ax.images} == {"antialiased"}


def test_plot_similarity_heatmap_labels_classes_in_clustered_order(tmp_path):
    similarity = np.array([[1.0, -0.5, 0.8], [-0.5, 1.0, -0.4], [0.8, -0.4, 1.0]])
    names = ["cat", "truck", "kitten"]
    fig = plots.plot_similarity_heatmap(similarity, names, cluster=True)
    labels = [tick.get_text() for tick in fig.axes[0].get_xticklabels()]
    assert sorted(labels) == sorted(names)
    assert abs(labels.index("cat") - labels.index("kitten")) == 1  # similar classes are neighbours
    plain = plots.plot_similarity_heatmap(similarity, names, cluster=False)
    assert [tick.get_text() for tick in plain.axes[0].get_xticklabels()] == names
    _check_saved(fig, tmp_path, "similarity")
    with pytest.raises(ValueError, match="class_names has 2"):
        plots.plot_similarity_heatmap(similarity, names[:2])
    with pytest.raises(ValueError, match="square"):
        plots.plot_similarity_heatmap(np.ones((2, 3)))


# --------------------------------------------------------------------------------------
# Curves, history, example queries
# --------------------------------------------------------------------------------------


def test_plot_curves_draws_mean_and_band_of_several_runs(tmp_path):
    k = np.array([1, 5, 10])
    runs = np.array([[0.9, 0.8, 0.7], [0.7, 0.6, 0.5]])
    fig = plots.plot_curves(k, {"shc": runs, "csq": np.array([0.5, 0.4, 0.3])}, "K (retrieved items)", "precision@K")
    axes = fig.axes[0]
    shc_line, csq_line = axes.lines
    np.testing.assert_allclose(shc_line.get_ydata(), [0.8, 0.7, 0.6])
    np.testing.assert_allclose(csq_line.get_ydata(), [0.5, 0.4, 0.3])
    assert to_hex(shc_line.get_color()) == plots.METHOD_COLORS["shc"].lower()
    assert len(axes.collections) == 1  # the +-std band of the two shc runs only
    band = axes.collections[0].get_paths()[0].vertices[:, 1]
    std = runs.std(axis=0, ddof=1)  # the tables' std (0.141 here), not ddof = 0's 0.1
    np.testing.assert_allclose([band.max(), band.min()], [0.8 + std[0], 0.6 - std[2]])
    assert axes.get_legend() is None and fig.legends
    assert axes.get_xlabel() == "K (retrieved items)"
    _check_saved(fig, tmp_path, "precision_at_k")
    with pytest.raises(ValueError, match="to match x"):
        plots.plot_curves(k, {"shc": [1.0, 2.0]}, "K", "P")


def test_plot_pr_curves_reads_evaluate_dicts(tmp_path):
    curves = {
        "shc": {"pr_precision": np.array([1.0, 0.8, 0.5]), "pr_recall": np.array([0.1, 0.5, 1.0])},
        "mds": {"precision": [0.9, 0.6, 0.4], "recall": [0.1, 0.4, 1.0]},
    }
    fig = plots.plot_pr_curves(curves)
    shc_line = fig.axes[0].lines[0]
    np.testing.assert_allclose(shc_line.get_xdata(), [0.1, 0.5, 1.0])
    np.testing.assert_allclose(shc_line.get_ydata(), [1.0, 0.8, 0.5])
    _check_saved(fig, tmp_path, "pr")
    with pytest.raises(KeyError, match="'precision'"):
        plots.plot_pr_curves({"shc": {"p": [1.0]}})


def test_plot_training_history_one_line_per_method(tmp_path):
    history = pd.DataFrame({
        "method": ["shc"] * 3 + ["csq"] * 3,
        "epoch": [1, 2, 3] * 2,
        "loss": [0.9, 0.5, 0.3, 1.0, 0.7, 0.6],
        "mAP@ALL": [0.2, np.nan, 0.6, 0.1, np.nan, 0.4],
    })  # fmt: skip
    fig = plots.plot_training_history(history)
    loss_axes, metric_axes = fig.axes[:2]
    assert [to_hex(line.get_color()) for line in loss_axes.lines] == [plots.METHOD_COLORS["shc"].lower(),
                                                                       plots.METHOD_COLORS["csq"].lower()]
    np.testing.assert_array_equal(metric_axes.lines[0].get_xdata(), [1, 3])  # epochs without evaluation skipped
    _check_saved(fig, tmp_path, "history")
    with pytest.raises(ValueError, match="not in the history"):
        plots.plot_training_history(history, metrics=["mAP@100"])
    with pytest.raises(ValueError, match="'epoch' and 'loss'"):
        plots.plot_training_history(history.drop(columns="loss"))


def test_plot_example_queries_outlines_wrong_results_in_red(tmp_path):
    rng = np.random.default_rng(0)
    queries = [rng.integers(0, 255, (8, 16), dtype=np.uint8), rng.integers(0, 255, (6, 6, 3), dtype=np.uint8)]
    results = [[rng.integers(0, 255, (8, 16), dtype=np.uint8) for _ in range(3)] for _ in range(2)]
    correct = np.array([[True, False, True], [False, False, True]])
    fig = plots.plot_example_queries(queries, results, correct, query_titles=["37", "42"])
    assert len(fig.axes) == 2 * 4
    grid = np.array(fig.axes).reshape(2, 4)
    for row, column in itertools.product(range(2), range(3)):
        spine = to_hex(grid[row, column + 1].spines["top"].get_edgecolor())
        assert (spine == "#d62728") == (not correct[row, column])
    assert grid[1, 0].get_title() == "42"
    _check_saved(fig, tmp_path, "queries")
    with pytest.raises(ValueError, match="K = 3"):
        plots.plot_example_queries(queries, [results[0], results[1][:2]], correct)


@pytest.mark.parametrize(("shape", "name"), [((28, 56), "T-shirt/top + T-shirt/top"), ((8, 16), "37"), ((8, 8), "37")])
def test_example_query_rows_leave_only_the_caption_between_them(shape, name):
    """Rows were 1.2 inches tall whatever the images: 2:1 composites (0.55 inches tall) floated in 0.7 inches of white
    (2026-12-04 audit). Drawn, the space between two rows' thumbnails holds the caption (one line or two) and its
    pads, and no more."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rng = np.random.default_rng(0)
    images = [rng.integers(0, 255, shape, dtype=np.uint8) for _ in range(6)]
    names = [name] * 3
    fig = plots.plot_example_queries(images[:3], [images[1:] for _ in names], np.ones((3, 5), bool), names)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    grid = np.array(fig.axes).reshape(3, 6)
    boxes = [grid[row, 1].get_window_extent(canvas.get_renderer()) for row in range(3)]
    caption = grid[1, 0].title.get_window_extent(canvas.get_renderer()).height / fig.dpi
    gaps = [(upper.y0 - lower.y1) / fig.dpi for upper, lower in zip(boxes, boxes[1:])]
    # the caption, the title's pad and the layout's pads (about 0.17 inches) and no more; thumbnails kept their width
    assert all(caption <= gap <= caption + 0.25 for gap in gaps), (caption, gaps)
    assert all(box.width / fig.dpi >= 0.95 for box in boxes)


def test_example_query_captions_stay_clear_of_the_rank_headers():
    """A composite's name above the query ("T-shirt/top + T-shirt/top", as on page 04 of the fashion presets) was
    wider than its thumbnail: it began left of the figure's edge (cut in a saved page without a tight box) and ran
    up to the "#1" above the first result; wrapped, it lies inside the figure and ends well before "#1"."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    rng = np.random.default_rng(0)
    pair = [rng.integers(0, 255, (28, 56), dtype=np.uint8) for _ in range(11)]
    names = ["T-shirt/top + T-shirt/top", "Ankle boot + Ankle boot"]
    fig = plots.plot_example_queries(pair[:2], [pair[1:] for _ in names], np.ones((2, 10), bool), query_titles=names)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    grid = np.array(fig.axes).reshape(2, 11)
    caption, header = (grid[0, column].title.get_window_extent(canvas.get_renderer()) for column in (0, 1))
    assert caption.x0 >= 0 and caption.x1 + 0.3 * fig.dpi <= header.x0
    assert grid[0, 0].get_title().replace("\n", " ") == names[0]  # wrapped, not cut
    # its alt text reads the name unwrapped: joined by commas it read "Ankle, boot + Ankle boot" (issue 38's audit)
    alt = plots.figure_alt_text(fig)
    assert "T-shirt/top + T-shirt/top" in alt and "Ankle boot + Ankle boot" in alt, alt


def test_example_query_thumbnails_show_their_own_pixels_and_large_images_are_averaged():
    """A 28 x 84 composite drawn into a panel of more than 84 saved pixels is upsampled: nearest neighbour, so the
    PNG holds only the image's own grey levels (a 0/255 stripe pattern stays two colours, no blended greys). A
    600 x 600 image in the same panel is downsampled: antialiased, every pixel an average."""
    import matplotlib

    stripes = np.zeros((28, 84), np.uint8)
    stripes[:, ::2] = 255
    with matplotlib.rc_context({"image.interpolation": "antialiased"}):  # the choice is the plot's, not the rcParams'
        fig = plots.plot_example_queries([stripes], [[stripes, stripes]], np.array([[True, False]]))
    assert {image.get_interpolation() for axes in fig.axes for image in axes.images} == {"nearest"}
    drawn = _drawn(fig)
    assert drawn.shape[1] >= 84 and set(np.unique(drawn[..., :3])) == {0, 255}  # no blended grey
    large = np.random.default_rng(0).integers(0, 255, (600, 600), dtype=np.uint8)
    fig = plots.plot_example_queries([large], [[large]], np.array([[True]]))
    assert {image.get_interpolation() for axes in fig.axes for image in axes.images} == {"antialiased"}


# --------------------------------------------------------------------------------------
# One style per method
# --------------------------------------------------------------------------------------


def _triple(style: dict) -> tuple:
    return to_hex(style["color"]), style["marker"], str(style["linestyle"])


def test_every_registered_method_has_its_own_style():
    from shc.methods import available_methods

    names = available_methods()
    assert set(names) <= set(plots.METHOD_STYLES), "a registered method has no entry in plots.METHOD_STYLES"
    styles = [plots.method_style(name) for name in names]
    assert len({_triple(style) for style in styles}) == len(names)
    assert len({to_hex(style["color"]) for style in styles}) == len(names)  # colour alone already tells them apart
    assert len({style["marker"] for style in styles}) == len(names)  # and so does the marker, for print
    for alike in ({"d", "D"}, {"h", "H"}, {"s", "S"}):  # diamonds (csq and shc-ls shared one), hexagons
        assert sum(style["marker"] in alike for style in styles) <= 1, alike
    assert all(plots.method_color(name) == plots.METHOD_COLORS[name] == styles[i]["color"]
               for i, name in enumerate(names))  # fmt: skip


def test_similarity_variants_keep_colour_and_marker_and_change_the_line():
    base = plots.method_style("shc")
    variants = {source: plots.method_style(f"shc ({source} S)") for source in ("text", "labels", "hierarchy")}
    for style in variants.values():
        assert (style["color"], style["marker"]) == (base["color"], base["marker"])
    assert len({str(style["linestyle"]) for style in [base, *variants.values()]}) == 4
    assert plots.method_style("SHC (Text S)") == variants["text"]  # case-insensitive like the base names


def test_method_style_is_stable_across_processes_and_calls():
    names = ["shc", "dpsh", "shc (text S)", "my-new-method", "x"]
    here = [_triple(plots.method_style(name)) for name in names]
    assert here == [_triple(plots.method_style(name)) for name in names]
    code = (f"from matplotlib.colors import to_hex; from shc.plots import method_style as s; "
            f"print([(to_hex(s(n)['color']), s(n)['marker'], str(s(n)['linestyle'])) for n in {names!r}])")
    env = {**os.environ, "PYTHONHASHSEED": "999", "PYTHONPATH": str(Path(plots.__file__).resolve().parents[2])}
    other = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert other.stdout.strip() == repr(here)
    plots.method_style("shc")["color"] = "red"  # a returned dict is a copy: the table is not changed
    assert plots.METHOD_STYLES["shc"]["color"] == "#D55E00"


def test_curve_plots_draw_each_method_in_its_style():
    x = np.arange(1, 21)
    fig = plots.plot_curves(x, {"shc": x / 20, "dpsh": np.vstack([x / 30, x / 40])}, "K", "precision@K")
    pr = plots.plot_pr_curves({"shc": {"precision": np.linspace(1, 0.2, 9), "recall": np.linspace(0, 1, 9)}})
    for axes in (fig.axes[0], pr.axes[0]):
        for line in axes.lines:
            style = plots.method_style(line.get_label())
            assert to_hex(line.get_color()) == to_hex(style["color"])
            assert line.get_marker() == style["marker"]
            assert line.get_linestyle() == {"-": "-", "--": "--", "-.": "-.", ":": ":"}[style["linestyle"]]


# --------------------------------------------------------------------------------------
# Data beside every figure
# --------------------------------------------------------------------------------------


def _runs():
    """Two methods x two seeds at 16 bits, metric arrays as evaluate() returns them."""
    runs = []
    for method, scale in (("shc", 1.0), ("csq", 0.5)):
        for seed in (0, 1):
            k = np.array([1, 5, 10])
            runs.append({
                "method": method, "bits": 16, "seed": seed,
                "k": k, "precision@k": scale * np.array([0.9, 0.8, 0.7]) - seed / 100,
                "recall@k": scale * np.array([0.1, 0.3, 0.5]),
                "pr_radius": np.arange(3), "pr_precision": np.array([np.nan, 0.6, 0.5]) * scale,
                "pr_recall": np.array([0.0, 0.4, 1.0]),
                "rank_k": np.array([1, 50, 100]), "rank_precision": np.array([1.0, 0.7, 0.2]) * scale,
                "rank_recall": np.array([0.01, 0.5, 1.0]),
                # expectations over random tie orders: other numbers, so a kind reading the wrong keys is caught
                "tie_aware_precision@k": scale * np.array([0.85, 0.75, 0.65]) - seed / 100,
                "tie_aware_recall@k": scale * np.array([0.12, 0.32, 0.52]),
                "tie_aware_rank_precision": np.array([0.95, 0.65, 0.2]) * scale,
                "tie_aware_rank_recall": np.array([0.01, 0.45, 1.0]),
            })  # fmt: skip
    return runs


@pytest.mark.parametrize("kind, x_name, first_x", [("k", "k", 1), ("radius", "radius", 0), ("rank", "rank", 1),
                                                   ("k-by-index", "k", 1), ("rank-by-index", "rank", 1)])
def test_curve_frame_is_tidy_and_holds_the_arrays(kind, x_name, first_x):
    frame = plots.curve_frame(_runs(), kind)
    assert list(frame.columns) == ["method", "bits", "seed", x_name, "precision", "recall"]
    assert len(frame) == 4 * 3 and frame[x_name].iloc[0] == first_x
    row = frame[(frame["method"] == "csq") & (frame["seed"] == 1)]
    source = _runs()[3]
    _, x_key, precision_key, recall_key = plots.CURVE_KINDS[kind]
    np.testing.assert_array_equal(row[x_name], source[x_key])
    np.testing.assert_array_equal(row["precision"], source[precision_key])
    np.testing.assert_array_equal(row["recall"], source[recall_key])


def test_curves_of_the_ranking_are_the_tie_aware_ones_unless_asked_by_index():
    runs = _runs()
    for kind, key in (("k", "tie_aware_precision@k"), ("k-by-index", "precision@k"), ("rank", "tie_aware_rank_precision"),
                      ("rank-by-index", "rank_precision")):
        np.testing.assert_array_equal(plots.curve_frame(runs, kind)["precision"].to_numpy()[:3], runs[0][key])


def test_curve_frame_rejects_bad_runs():
    with pytest.raises(ValueError, match="unknown curve kind"):
        plots.curve_frame(_runs(), "roc")
    with pytest.raises(KeyError, match="rank_k"):
        plots.curve_frame([{"method": "shc", "bits": 8, "seed": 0}], "rank")
    with pytest.raises(ValueError, match="runs is empty"):
        plots.curve_frame([], "k")


def test_curves_plotted_from_the_frame_show_its_numbers(tmp_path):
    frame = plots.curve_frame(_runs(), "k-by-index")
    x, curves = plots.curve_arrays(frame, "precision")
    np.testing.assert_array_equal(x, [1, 5, 10])
    np.testing.assert_allclose(curves["shc"], [[0.9, 0.8, 0.7], [0.89, 0.79, 0.69]])
    fig = plots.plot_curves(x, curves, "K", "precision@K")
    line = next(line for line in fig.axes[0].lines if line.get_label() == "shc")
    np.testing.assert_allclose(line.get_ydata(), [0.895, 0.795, 0.695])  # mean over the two seeds
    paths = plots.save_figure(fig, tmp_path / "precision_at_k", data=frame)
    assert [p.name for p in paths] == ["precision_at_k.png", "precision_at_k.svg", "precision_at_k.csv"]
    loaded = pd.read_csv(paths[2])
    pd.testing.assert_frame_equal(loaded, frame, check_dtype=False)
    assert not [p.name for p in tmp_path.rglob(".*")]


def test_pr_arrays_average_seeds_and_skip_undefined_precision():
    pr = plots.pr_arrays(plots.curve_frame(_runs(), "radius"))
    np.testing.assert_allclose(pr["csq"]["precision"], [np.nan, 0.3, 0.25])
    np.testing.assert_allclose(pr["shc"]["recall"], [0.0, 0.4, 1.0])
    rank = plots.pr_arrays(plots.curve_frame(_runs(), "rank"), bits=16)
    fig = plots.plot_pr_curves(rank, kind="rank")
    assert "ranking" in fig.axes[0].get_title()
    np.testing.assert_allclose(fig.axes[0].lines[0].get_ydata(), [0.95, 0.65, 0.2])  # the tie-aware curve
    with pytest.raises(ValueError, match="bits=8"):
        plots.pr_arrays(plots.curve_frame(_runs(), "rank"), bits=8)


def test_arrays_frame_lists_every_run():
    frame = plots.arrays_frame([0, 1, 2], {"shc": [[1, 2, 3], [4, 5, 6]]}, "cycle", "s_loss", bits=32)
    assert list(frame.columns) == ["method", "bits", "run", "cycle", "s_loss"]
    assert frame["s_loss"].tolist() == [1, 2, 3, 4, 5, 6] and frame["run"].tolist() == [0, 0, 0, 1, 1, 1]


def test_save_figure_rejects_bad_data(tmp_path):
    fig = plots.plot_curves([1, 2], {"shc": [0.1, 0.2]}, "K", "precision@K")
    with pytest.raises(TypeError, match="DataFrame"):
        plots.save_figure(fig, tmp_path / "f", data={"a": [1]})
    with pytest.raises(ValueError, match="empty"):
        plots.save_figure(fig, tmp_path / "f", data=pd.DataFrame())
    for digits in (0, 18, 2.5, True):
        with pytest.raises(ValueError, match="digits must be an integer from 1 to 17"):
            plots.save_figure(fig, tmp_path / "f", data=pd.DataFrame({"a": [0.5]}), digits=digits)
    assert not list(tmp_path.iterdir())  # nothing written when the data is refused


def test_a_compressed_table_is_the_same_bytes_wherever_and_whenever_it_is_written(tmp_path):
    """Issue 38 (light to keep): a regenerated report must not add new blobs for unchanged data. The xz stream holds
    no time and no file name (pandas' gzip held the temporary file's name with its process id), so one table gives
    one byte string in any folder, under any name, and reads back to the same rows, with pandas and with the
    package's own reader; a set built before 2026-11-29 holds gzip, which that reader still takes."""
    import gzip
    import lzma

    rows = plots.style.COMPRESS_ROWS + 1
    frame = pd.DataFrame({"k": np.arange(rows), "v": np.linspace(0, 1, rows)})
    first = plots.save_table(frame, tmp_path / "a" / "history")
    second = plots.save_table(frame, tmp_path / "b" / "other_name")
    assert first.name == "history.csv.xz" and first.read_bytes() == second.read_bytes()
    text = frame.to_csv(index=False, float_format="%.8g")
    assert first.read_bytes()[:6] == b"\xfd7zXZ\x00" and lzma.decompress(first.read_bytes()).decode() == text
    pd.testing.assert_frame_equal(pd.read_csv(first), frame)
    assert plots.read_table_text(first) == text
    legacy = tmp_path / "legacy.csv.gz"
    legacy.write_bytes(gzip.compress(text.encode()))
    assert plots.read_table_text(legacy) == text and plots.read_table_text(tmp_path / "a" / "history.csv.xz") == text
    # xz takes fewer bytes than the gzip -9 it replaced, on a figure's typical numbers (4 significant digits)
    curve = pd.DataFrame({"method": np.repeat(["csq", "mds", "shc"], 700), "recall": np.tile(np.linspace(0, 1, 700), 3),
                          "precision": np.round(np.random.default_rng(0).random(2100), 4)})
    raw = curve.to_csv(index=False).encode()
    assert len(plots.style.compress_table_bytes(raw)) < len(gzip.compress(raw, compresslevel=9, mtime=0))


def test_a_table_of_many_cells_but_few_rows_is_compressed_too(tmp_path):
    """A C x C matrix in matrix_frame's form has only C rows: past COMPRESS_CELLS cells it is compressed like a long
    table, and the figure's alt text names the file it is written to."""
    import matplotlib.pyplot as plt

    small = pd.DataFrame(np.ones((10, 10)), columns=[f"c{i}" for i in range(10)])
    wide = pd.DataFrame(np.ones((10, plots.style.COMPRESS_CELLS // 10 + 1)))
    assert plots.save_table(small, tmp_path / "small").name == "small.csv"
    assert len(wide) < plots.style.COMPRESS_ROWS and plots.save_table(wide, tmp_path / "wide").name == "wide.csv.xz"
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    paths = plots.save_figure(fig, tmp_path / "figures" / "heatmap", data=wide)
    plt.close(fig)
    assert paths[-1].name == "heatmap.csv.xz" and fig._shc_alt.endswith("figures/heatmap.csv.xz.")


def test_the_gram_figures_data_says_where_each_class_is_drawn_so_the_figure_can_be_redrawn_from_it(tmp_path):
    """Page 02's figure is drawn in S's clustered order while its file kept the classes' own order and no trace of
    the drawn one (issue 38's audit of `standard`). With the figure's order, every line (S's and each method's) says
    where its class is drawn: the Gram matrix rearranged by ``shown_at`` is the one drawn, ``H[order] H[order]^T/q``
    by brute force; centers alone (page 00, S saved elsewhere) carry it too."""
    centers = {"shc": _random_centers(5, 8, seed=3)}
    similarity = np.eye(5)
    similarity[1, 4] = similarity[4, 1] = 0.5
    order = np.array([2, 0, 4, 1, 3])
    for include in (True, False):
        table = plots.gram_frames(similarity, centers, [f"c{i}" for i in range(5)], include_similarity=include,
                                  order=order)
        read = pd.read_csv(plots.save_table(table, tmp_path / f"gram{include}.csv"))
        rows = read[read["source"] == "shc"]
        drawn = np.empty(5, dtype=int)
        drawn[rows["shown_at"].to_numpy()] = np.arange(5)  # which line is drawn at each position
        gram, _ = plots.gram_from_frame(read, "shc")
        codes = centers["shc"][order]
        brute = np.array([[sum(a * b for a, b in zip(codes[i], codes[j])) / 8 for j in range(5)] for i in range(5)])
        assert np.array_equal(gram[np.ix_(drawn, drawn)], brute)
        assert ("S" in set(read["source"])) is include
        if include:
            assert list(read.loc[read["source"] == "S", "shown_at"]) == [1, 3, 0, 4, 2]  # class 2 first, ...
    assert "shown_at" not in plots.gram_frames(similarity, centers)  # no order given: none claimed


def test_the_gram_figures_data_holds_s_and_the_centers_and_gives_back_each_gram_exactly(tmp_path):
    """gram_frames stores each method's centers (q characters a class), not its (C, C) Gram: read back from the
    saved file, gram_from_frame rebuilds H H^T / q exactly (against the brute-force dot products) and S keeps
    its rounded entries."""
    import matplotlib.pyplot as plt

    centers = {"shc": _random_centers(6, 8, seed=1), "csq": _random_centers(6, 8, seed=2)}
    similarity = np.eye(6)
    similarity[0, 5] = similarity[5, 0] = 0.25
    names = [f"class {i}" for i in range(6)]
    fig = plots.plot_similarity_vs_gram(similarity, centers)
    path = plots.save_figure(fig, tmp_path / "figures" / "gram",
                             data=plots.gram_frames(similarity, centers, names))[-1]
    plt.close(fig)
    read = pd.read_csv(path)
    assert list(read["source"]) == ["S"] * 6 + ["shc"] * 6 + ["csq"] * 6  # C lines a method, not C x C cells
    for method, codes in centers.items():
        gram, rows = plots.gram_from_frame(read, method)
        brute = np.array([[sum(a * b for a, b in zip(codes[i], codes[j])) / 8 for j in range(6)] for i in range(6)])
        assert rows == names and np.array_equal(gram, brute)
        back, rows = plots.centers_from_frame(read, method)  # the ±1 centers themselves, bit for bit
        assert rows == names and back.dtype.kind == "i" and np.array_equal(back, codes)
    rebuilt, rows = plots.matrix_from_frame(read, "S")
    assert rows == names and np.array_equal(rebuilt, similarity)
    with pytest.raises(ValueError, match=r"no centers 'mds' .* \['csq', 'shc'\]"):
        plots.gram_from_frame(read, "mds")
    with pytest.raises(ValueError, match="rename it"):
        plots.gram_frames(similarity, centers, [*names[:5], "code"])
    # a page that saved S already stores the centers only and names S's file: S once, every Gram still exact
    s_file = plots.save_table(plots.matrix_frame({"S": similarity}, names), tmp_path / "figures" / "s")
    fig = plots.plot_similarity_vs_gram(similarity, centers)
    path = plots.save_figure(fig, tmp_path / "figures" / "gram_only",
                             data=plots.gram_frames(similarity, centers, names, include_similarity=False),
                             data_file=s_file)[-1]
    plt.close(fig)
    assert fig._shc_alt.endswith("figures/gram_only.csv and figures/s.csv.")
    codes_only = pd.read_csv(path)
    assert list(codes_only["source"]) == ["shc"] * 6 + ["csq"] * 6 and "S" not in set(codes_only["source"])
    assert all(np.array_equal(plots.gram_from_frame(codes_only, m)[0], plots.gram_from_frame(read, m)[0])
               for m in centers)


def test_a_heatmaps_data_keeps_three_significant_digits_unless_asked_for_more(tmp_path):
    """matrix_frame marks its table for MATRIX_DIGITS (a colour scale shows steps of about 0.008); an explicit
    ``digits`` wins (for a finding that must tell values apart at that precision)."""
    S = np.array([[1.0, 0.123456], [0.123456, 1.0]])
    fig = plots.plot_similarity_heatmap(S, ["a", "b"], cluster=False)
    rounded = plots.save_figure(fig, tmp_path / "figures" / "s", data=plots.matrix_frame({"S": S}, ["a", "b"]))[-1]
    assert rounded.read_text().splitlines() == ["source,row,a,b", "S,a,1,0.123", "S,b,,1"]
    exact = plots.save_figure(fig, tmp_path / "figures" / "t", data=plots.matrix_frame({"S": S}, ["a", "b"]),
                              digits=plots.TABLE_DIGITS)[-1]
    assert exact.read_text().splitlines()[1] == "S,a,1,0.123456"


def test_figure_data_keeps_four_significant_digits_tables_eight_and_a_finding_asks_for_more():
    """Issue 38 (light to keep): a figure's data is rounded to what a plot can show (4 significant digits), a table
    keeps 8; ``digits`` chooses, e.g. for the figure data a computed finding reads."""
    import tempfile

    frame = pd.DataFrame({"k": [1, 2], "precision": [0.123456789, 98765.4321]})
    fig = plots.plot_curves([1, 2], {"shc": [0.1, 0.2]}, "K", "precision@K")
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        figure_data = plots.save_figure(fig, folder / "figures" / "p", data=frame)[-1]
        assert figure_data.read_text().splitlines() == ["k,precision", "1,0.1235", "2,9.877e+04"]
        table = plots.save_table(frame, folder / "tables" / "p")
        assert table.read_text().splitlines() == ["k,precision", "1,0.12345679", "2,98765.432"]
        exact = plots.save_figure(fig, folder / "figures" / "q", data=frame, digits=plots.TABLE_DIGITS)[-1]
        assert exact.read_bytes() == table.read_bytes()
        read = pd.read_csv(figure_data)  # what a script loads: within half a unit of the 4th digit
        np.testing.assert_allclose(read["precision"], frame["precision"], rtol=5e-4)


# --------------------------------------------------------------------------------------
# Code embedding, per-class AP, convergence overlay
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["tsne", "mds"])
def test_code_embedding_places_codes_near_their_centers(method):
    rng = np.random.default_rng(3)
    centers = _random_centers(4, 32, seed=3)
    labels = rng.integers(0, 4, 120)
    codes = centers[labels] * np.where(rng.random((120, 32)) < 0.05, -1, 1)  # 5 % of bits flipped
    coarse = np.array([0, 0, 1, 1])
    frame = plots.code_embedding_frame(codes, labels, coarse, centers, max_points=60, method=method, seed=1)
    assert list(frame.columns) == ["kind", "index", "class", "coarse", "x", "y"]
    assert (frame["kind"] == "code").sum() == 60 and (frame["kind"] == "center").sum() == 4
    chosen = frame[frame["kind"] == "code"]
    np.testing.assert_array_equal(chosen["class"], labels[chosen["index"]])
    np.testing.assert_array_equal(frame["coarse"], coarse[frame["class"]])
    hubs = frame[frame["kind"] == "center"].set_index("class")[["x", "y"]]
    nearest = [hubs.sub(point, axis=1).pow(2).sum(axis=1).idxmin() for point in chosen[["x", "y"]].to_numpy()]
    assert np.mean(np.asarray(nearest) == chosen["class"].to_numpy()) > 0.9
    fig = plots.plot_code_embedding(frame, coarse_names=["vehicles", "animals"],
                                    legend_title="coarse class (the class of its first item)")
    # the legend says what a coarse class is, in lines that keep it narrow
    assert isinstance(fig, Figure) and fig.legends[0].get_title().get_text() == (
        "coarse class\n(the class of its\nfirst item)")
    offsets = np.vstack([collection.get_offsets() for collection in fig.axes[0].collections])
    assert len(offsets) == 64  # every code and center drawn, once


@pytest.mark.parametrize("num_classes", [10, 333])
def test_code_embedding_centers_leave_the_codes_visible(num_classes):
    """standard-fine's 333 stars covered about two fifths of the panel and were drawn over the codes (a reader
    audit: "the stars hide the dots"). Now the codes lie above the stars and all stars together cover at most a
    tenth of the panel, while 10 classes keep their large stars."""
    import pandas as pd

    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"kind": ["code"] * 800 + ["center"] * num_classes,
                          "class": np.r_[rng.integers(0, num_classes, 800), np.arange(num_classes)],
                          "x": rng.random(800 + num_classes), "y": rng.random(800 + num_classes)})
    frame["index"], frame["coarse"] = frame["class"], frame["class"] % 10
    fig = plots.plot_code_embedding(frame)
    drawn = [collection for collection in fig.axes[0].collections if len(collection.get_offsets())]
    stars = [collection for collection in drawn if collection.get_sizes()[0] > 9]
    dots = [collection for collection in drawn if collection.get_sizes()[0] == 9]
    assert sum(len(collection.get_offsets()) for collection in stars) == num_classes and len(dots) == 10
    assert min(dot.get_zorder() for dot in dots) > max(star.get_zorder() for star in stars)
    box = fig.axes[0].get_position()
    panel = box.width * fig.get_figwidth() * box.height * fig.get_figheight() * 72**2  # points^2
    covered = sum(collection.get_sizes()[0] * len(collection.get_offsets()) for collection in stars)
    assert covered <= 0.1 * panel
    assert stars[0].get_sizes()[0] == (160 if num_classes == 10 else 30)


def test_code_embedding_rejects_mismatched_inputs():
    centers = _random_centers(3, 8)
    with pytest.raises(ValueError, match="one per code"):
        plots.code_embedding_frame(centers, np.array([0, 1]), np.array([0, 0, 1]))
    with pytest.raises(ValueError, match="every class"):
        plots.code_embedding_frame(centers, np.array([0, 1, 2]), np.array([0, 1]))


def test_class_ap_frame_uses_mean_similarity_to_the_others(tmp_path):
    similarity = np.array([[1.0, 0.5, -0.2], [0.5, 1.0, 0.1], [-0.2, 0.1, 1.0]])
    ap = {"shc": np.array([0.3, 0.5, 0.9]), "csq": np.array([0.2, np.nan, 0.8])}
    frame = plots.class_ap_frame(ap, similarity, counts=np.array([4, 0, 5]), class_names=["a", "b", "c"])
    shc = frame[frame["method"] == "shc"]
    np.testing.assert_allclose(shc["mean_similarity"], [0.15, 0.3, -0.05])  # (0.5 - 0.2) / 2, ...
    np.testing.assert_allclose(shc["ap"], [0.3, 0.5, 0.9])
    assert frame[frame["method"] == "csq"]["name"].tolist() == ["a", "c"]  # class without a query left out
    fig = plots.plot_class_ap(frame)
    points = fig.axes[0].collections[0].get_offsets()
    np.testing.assert_allclose(points, shc[["mean_similarity", "ap"]].to_numpy())
    assert "Spearman -0.50" in fig.axes[0].get_legend_handles_labels()[1][0]
    plots.save_figure(fig, tmp_path / "class_ap", data=frame)


def test_class_ap_tick_labels_stand_apart():
    """standard-pretrained's page 04 (2026-12-04): mean similarities from -0.013 to +0.021 got seven ticks whose
    labels read "-0.010-0.005 0.000" as one; each drawn x tick label now ends well before the next begins."""
    rng = np.random.default_rng(0)
    offsets = 2 * np.linspace(-0.013, 0.021, 100)  # mean similarities of about -0.013 ... +0.021
    similarity = (offsets[:, None] + offsets[None, :]) / 2
    np.fill_diagonal(similarity, 1.0)
    ap = {method: rng.random(100) for method in ("random", "csq", "mds", "shc", "shc-ls", "crh", "greedyhash", "lth")}
    fig = plots.plot_class_ap(plots.class_ap_frame(ap, similarity))
    assert _x_tick_labels_apart(fig, fig.axes[0], 0.15)


def test_convergence_tick_labels_stand_apart():
    """standard-pretrained's page 03 (2026-12-04): epochs 0-160 on a 3.1-inch panel got ticks "80 100 120 140 160"
    that touched; each drawn x tick label of the bottom row now ends well before the next begins."""
    rows = [{"label": method, "bits": bits, "seed": seed, "epoch": epoch, "loss": 1 / epoch,
             "tie_aware_mAP@ALL": 0.5 + epoch / 1000, "mAP@ALL": 0.5 + epoch / 1000}
            for method, budget in (("shc", 80), ("mds", 80), ("lth", 160)) for bits in (16, 32, 64)
            for seed in (0, 1) for epoch in range(1, budget + 1)]
    fig = plots.plot_convergence(pd.DataFrame(rows))
    bottom = [axes for axes in fig.axes if axes.get_xlabel()]
    assert bottom and all(_x_tick_labels_apart(fig, axes, 0.1) for axes in bottom)


def _marker_points(fig, line) -> np.ndarray:
    """Draw ``fig``; the display coordinates (pixels) where ``line``'s markers are drawn, chosen as matplotlib's
    Line2D.draw chooses them from its ``markevery``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.lines import _mark_every_path  # the subsampler Line2D.draw calls

    FigureCanvasAgg(fig).draw()
    path, affine = line._get_transformed_path().get_transformed_points_and_affine()
    return affine.transform(_mark_every_path(line.get_markevery(), path, affine, line.axes).vertices)


def test_markers_of_meeting_curves_stand_side_by_side():
    """standard-pretrained's page 03 (2026-12-04 audit): random, CSQ and SHC share CSQ's loss, their relative losses
    meet, and each drew its markers on the same epochs, so random's line hid under the others' markers. Drawn, past
    the first five epochs (where one epoch's drop spans more than a marker step, markers can only sit on its ends) no
    marker of one lies within 3 pixels of another line's; the panels are titled in the pages' words."""
    rows = [{"label": method, "bits": 16, "seed": seed, "epoch": epoch, "loss": 1 / epoch,
             "tie_aware_mAP@ALL": 0.5 + epoch / 1000}
            for method in ("random", "csq", "shc") for seed in (0, 1) for epoch in range(1, 81)]
    fig = plots.plot_convergence(pd.DataFrame(rows))
    loss_axes = fig.axes[0]
    after = loss_axes.transData.transform([[5, 0]])[0, 0]
    points = [p[p[:, 0] > after] for p in (_marker_points(fig, line) for line in loss_axes.lines)]
    assert len(points) == 3 and all(len(p) >= 5 for p in points)
    for one, other in itertools.combinations(points, 2):
        assert np.hypot(*(one[:, None, :] - other[None, :, :]).transpose(2, 0, 1)).min() > 3
    assert [axes.get_title() for axes in fig.axes[:2]] == ["16 bits: training loss / epoch 1",
                                                           "16 bits: validation tie-aware mAP@ALL"]


def test_pr_markers_do_not_pile_up_where_points_crowd():
    """A PR curve's points crowd near recall 1 (many radii retrieve almost everything): markers every n-th point piled
    up there (2026-12-04 audit); drawn, consecutive markers now lie at least half a marker step apart on screen."""
    recall = np.concatenate([np.linspace(0.0, 0.9, 20), np.linspace(0.9, 1.0, 180)])
    fig = plots.plot_pr_curves({"shc": {"precision": 1 - 0.5 * recall, "recall": recall}})
    axes = fig.axes[0]
    points = _marker_points(fig, axes.lines[0])
    (x0, y0), (x1, y1) = axes.transAxes.transform([[0, 0], [1, 1]])
    step = np.diff(points, axis=0)
    assert len(points) >= 5 and np.hypot(*step.T).min() >= 0.5 * 0.08 * np.hypot(x1 - x0, y1 - y0)


def test_convergence_overlay_draws_every_method_on_one_axis():
    history = pd.DataFrame({
        "label": ["shc"] * 6 + ["csq"] * 3, "bits": 16, "seed": [0, 0, 0, 1, 1, 1, 0, 0, 0],
        "epoch": [1, 2, 3] * 3, "loss": np.linspace(1, 0.2, 9),
        "mAP@ALL": [np.nan, 0.5, 0.6, np.nan, 0.7, 0.8, np.nan, 0.3, 0.4],
    })  # fmt: skip
    frame = plots.convergence_frame(history, "mAP@ALL")
    assert list(frame.columns) == ["method", "bits", "seed", "epoch", "mAP@ALL"] and len(frame) == 6
    fig = plots.plot_convergence_overlay(frame)
    assert len(fig.axes) == 1
    lines = {line.get_label(): line for line in fig.axes[0].lines}
    assert set(lines) == {"shc", "csq"}
    np.testing.assert_allclose(lines["shc"].get_ydata(), [0.6, 0.7])
    np.testing.assert_allclose(lines["csq"].get_xdata(), [2, 3])
    with pytest.raises(ValueError, match="lacks"):
        plots.convergence_frame(history.drop(columns="seed"))


def test_convergence_figures_draw_each_run_on_its_share_of_the_budget_only_when_budgets_differ_fourfold():
    """A reader audit (issue 38): beside LTH's 960 epochs, 120-epoch runs filled an eighth of the epoch axis. Budgets 8x
    apart: each run's x is epoch / its own budget (csq's epoch 60 of 120 and lth's 480 of 960 both at 0.5, both ending
    at 1); budgets 2x apart: the epoch, as before."""
    def history(budgets):
        rows = [{"label": name, "bits": 16, "seed": 0, "epoch": epoch, "loss": 1.0 / epoch,
                 "tie_aware_mAP@ALL": 0.1 * np.log(epoch)}
                for name, end in budgets.items() for epoch in range(1, end + 1)]
        return pd.DataFrame(rows)

    long = history({"csq": 120, "lth": 960})
    for fig in (plots.plot_convergence(long),
                plots.plot_convergence_overlay(plots.convergence_frame(long, "tie_aware_mAP@ALL"))):
        lines = {line.get_label(): line for line in fig.axes[0].lines}
        csq, lth = lines["csq"].get_xdata(), lines["lth"].get_xdata()
        assert csq[-1] == lth[-1] == 1.0 and csq[59] == 0.5 and lth[479] == 0.5
        assert fig.axes[0].get_xlabel() in ("", "epoch / budget (120 to 960 epochs)")
        assert fig.axes[-1].get_xlabel() == "epoch / budget (120 to 960 epochs)"
    fig = plots.plot_convergence(history({"csq": 80, "lth": 160}))
    assert fig.axes[-1].get_xlabel() == "epoch" and max(fig.axes[0].lines[1].get_xdata()) == 160
    # two lengths with their own budgets (standard-fine: LTH 480 at 16 bits, 960 at 32): each panel of the overlay
    # names its own length's, and the grid's shared axis names both (an audit found "120 to 960" on the 16-bit panel)
    two = pd.concat([history({"csq": 120, "lth": 480}), history({"csq": 120, "lth": 960}).assign(bits=32)],
                    ignore_index=True)
    overlay = plots.plot_convergence_overlay(plots.convergence_frame(two, "tie_aware_mAP@ALL"))
    assert [axes.get_xlabel() for axes in overlay.axes[:2]] == ["epoch / budget (120 to 480 epochs)",
                                                                "epoch / budget (120 to 960 epochs)"]
    grid = plots.plot_convergence(two)  # one shared axis: a short label under each panel, the budgets once below
    assert grid.axes[-1].get_xlabel() == "epoch / budget"
    assert grid._supxlabel.get_text() == "budgets: 16 bits, 120 to 480 epochs; 32 bits, 120 to 960 epochs"
    assert "budgets: 16 bits, 120 to 480 epochs; 32 bits, 120 to 960 epochs" in plots.figure_alt_text(grid)
    same = pd.concat([long, long.assign(bits=32)], ignore_index=True)
    assert plots.plot_convergence(same).axes[-1].get_xlabel() == "epoch / budget (120 to 960 epochs)"
    # three lengths (12 panels): the alt text names the rows once and keeps the budgets line and the legend (an audit
    # found the 64-bit row's panels, the budgets and the legend cut off at the length limit)
    three = pd.concat([two, history({"csq": 120, "lth": 960}).assign(bits=64)], ignore_index=True)
    grid = plots.plot_convergence(three)
    alt = plots.figure_alt_text(grid)
    assert len(alt) <= 600 and alt.startswith(f"{len(grid.axes)} panels: a row each for 16 bits, 32 bits and 64 bits, "
                                              "each row: training loss")
    assert "16 bits:" not in alt and "64 bits, 120 to 960 epochs" in alt  # each row named once; the budgets line
    assert "csq" in alt and "lth" in alt and not alt.endswith("...")


def test_center_embedding_frame_holds_what_the_figure_plots():
    from shc import centers

    coarse = np.repeat(np.arange(4), 5)
    sets = {m: centers.generate_centers(m, 20, 16, seed=0) for m in ("random", "mds")}
    frame = plots.center_embedding_frame(sets, coarse)
    fig = plots.plot_center_embedding(sets, coarse)
    assert len(fig.axes) == len(sets)  # a panel per method: the loop below checks each
    for axes, method in zip(fig.axes, sets, strict=True):
        drawn = np.vstack([collection.get_offsets() for collection in axes.collections])
        expected = frame[frame["method"] == method].sort_values(["coarse", "class"])[["x", "y"]].to_numpy()
        assert np.allclose(np.sort(drawn, axis=0), np.sort(expected, axis=0))
        # classical MDS: squared distances between the points are 4x the Hamming distances (q = 16: all of them
        # kept only in 16 dimensions, so the 2-D ones are at most that)
        assert len(expected) == 20


def test_broken_lines_are_drawn_above_solid_ones():
    history = pd.DataFrame({"label": ["csq"] * 3 + ["random"] * 3, "bits": 16, "seed": 0, "epoch": [1, 2, 3] * 2,
                            "loss": [1.0, 0.5, 0.2] * 2, "mAP@100": 0.5, "mAP@1000": 0.5, "mAP@ALL": 0.5})
    fig = plots.plot_convergence(history)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert lines["random"].get_zorder() > lines["csq"].get_zorder()


def test_a_long_alt_text_shortens_its_panels_and_keeps_the_lines_under_them():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 30)
    for index, ax in enumerate(axes):
        ax.set_title(f"a long distinct title of panel number {index}")
    fig.supxlabel("the line under every panel")
    alt = plots.figure_alt_text(fig)
    assert len(alt) <= 600 and alt.startswith("30 panels: a long distinct title of panel number 0")
    assert "...." in alt and alt.endswith(". the line under every panel")  # the panels cut, the line under them kept
    plt.close(fig)


def test_panels_that_differ_only_in_their_titles_say_their_shared_words_once():
    """Page 02's six distance histograms repeated "center pairs against Hamming distance between two centers (bits,
    q = 16)" six times, ran past the limit and cut the sixth panel mid-phrase (issue 38's audit of `standard`). The
    real figure: its shared axis words once, every panel's title whole, within the limit."""
    from shc import centers

    made = {m: centers.generate_centers(m, 20, 16, seed=0) for m in ("random", "csq", "mds")}
    sets = {name: made[source] for name, source in zip(("random", "csq", "mds", "shc", "shc-ls", "semantic"),
                                                       ("random", "csq", "mds", "mds", "mds", "random"))}
    fig = plots.plot_distance_histograms(sets, 16)
    alt = plots.figure_alt_text(fig)
    assert alt.count("against") == 1 and "..." not in alt and len(alt) <= 600, alt
    assert "6 panels: each with center pairs against Hamming distance between two centers (bits, q = 16), titled " \
           "random: d_min = " in alt and "| semantic: d_min = " in alt
    import matplotlib.pyplot as plt

    plt.close(fig)
    mixed, axes = plt.subplots(1, 2)  # different axis words: each panel says its own
    for ax, (title, ylabel) in zip(axes, [("a", "loss"), ("b", "mAP")]):
        ax.set_title(title), ax.set_xlabel("epoch"), ax.set_ylabel(ylabel)
    assert plots.figure_alt_text(mixed) == "2 panels: a; loss against epoch | b; mAP against epoch"
    plt.close(mixed)


def test_a_grid_of_different_panels_is_not_read_as_rows_of_one_panel():
    """Page 02's Algorithm-1 history (2 x 3 panels, each titled, one x label each) read "a row each for objective of
    Eq. 22; x axis, S_loss ...; x axis, ..., each row: outer cycle": the "x axis: " marker was taken for a row name."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3)
    for index, ax in enumerate(axes.flat):
        ax.set_title(f"quantity {index}")
        ax.set_xlabel("outer cycle")
    alt = plots.figure_alt_text(fig)
    plt.close(fig)
    assert "a row each" not in alt and alt == ("6 panels: each with x axis: outer cycle, titled quantity 0 | quantity 1 | "
                                               "quantity 2 | quantity 3 | quantity 4 | quantity 5"), alt


def test_a_shortened_alt_text_ends_at_a_whole_word():
    """standard-fine's page 02 read "... against Hamming distanc...": the cut now falls between two words, at any
    length of the text (titles of 61 to 80 words: the old cut fell inside a word for most of them)."""
    import matplotlib.pyplot as plt

    for words in range(61, 81):
        fig, ax = plt.subplots()
        title = " ".join(f"distance{index % 10}" for index in range(words))
        ax.set_title(title)
        alt = plots.figure_alt_text(fig)
        plt.close(fig)
        kept = alt.removesuffix("...")
        assert len(alt) <= 600 and alt.endswith("...") and title.startswith(kept)
        assert title[len(kept)] == " ", (words, alt[-20:])  # the text went on with a new word, not inside one


def test_alt_text_describes_the_figure_and_names_its_data(tmp_path):
    fig = plots.plot_curves(np.arange(3), {"shc": np.array([[0.1, 0.2, 0.3]])}, xlabel="K", ylabel="precision@K",
                            title="precision@K, 16 bits")
    text = plots.figure_alt_text(fig)
    assert "precision@K, 16 bits" in text and "precision@K against K" in text
    plots.save_figure(fig, tmp_path / "p", data=pd.DataFrame({"k": [0, 1, 2]}))
    assert plots.figure_alt_text(fig).endswith("The plotted numbers are in figures/p.csv.")


def test_a_figure_whose_data_is_a_saved_table_names_it_and_writes_no_copy(tmp_path):
    fig = plots.plot_curves(np.arange(3), {"shc": np.array([[0.1, 0.2, 0.3]])}, xlabel="epoch", ylabel="loss")
    table = plots.save_table(pd.DataFrame({"epoch": [0, 1, 2]}), tmp_path / "tables" / "history")
    written = plots.save_figure(fig, tmp_path / "figures" / "loss", data_file=table)
    assert [path.name for path in written] == ["loss.png", "loss.svg"]
    assert sorted(path.name for path in (tmp_path / "figures").iterdir()) == ["loss.png", "loss.svg"]
    assert plots.figure_alt_text(fig).endswith("The plotted numbers are in tables/history.csv.")
    both = plots.save_figure(fig, tmp_path / "figures" / "loss", data=pd.DataFrame({"k": [0]}), data_file=table)
    assert both[-1].name == "loss.csv"  # rows the saved table lacks, written beside it; the alt text names both
    assert plots.figure_alt_text(fig).endswith("The plotted numbers are in figures/loss.csv and tables/history.csv.")
    with pytest.raises(FileNotFoundError, match="save the table first"):
        plots.save_figure(fig, tmp_path / "figures" / "loss", data_file=tmp_path / "tables" / "missing.csv")


def test_alt_text_counts_the_panels_drawn_and_reads_tex_as_text():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3)
    for ax in axes:  # three panels with the same description: still three panels
        ax.set_xlabel("$q$")
        ax.set_ylabel(r"$d_{\min}$")
    image = axes[0].imshow(np.eye(3))
    fig.colorbar(image, ax=axes[0])  # a colour scale is not a panel
    fig.suptitle(r"$S - HH^\top / q$, mean $\pm$ sd")
    text = plots.figure_alt_text(fig)
    plt.close(fig)
    assert text == "S - HH^T / q, mean ± sd. 3 panels: d_min against q"
    assert "$" not in text and "\\" not in text
    assert plots.plain_text(r"$\mathrm{S}_{loss}$ at $\gamma = 10^{-3}$") == "S_loss at γ = 10^-3"
    assert plots.plain_text(r"costs \$5") == "costs $5"  # an escaped dollar is a dollar
    assert plots.plain_text("100 classes (same order)\nupper triangle") == "100 classes (same order), upper triangle"


def test_plot_curves_titles_its_legend_by_what_the_lines_are():
    """Page 02's shc-ls record draws one line per code length: its legend said "method" (an audit)."""
    fig = plots.plot_curves([0, 1], {"16 bits": [0.2, 0.1], "32 bits": [0.1, 0.05]}, xlabel="record", ylabel="S_loss",
                            legend_title="code length")
    assert fig.legends[0].get_title().get_text() == "code length"
    assert [text.get_text() for text in fig.legends[0].get_texts()] == ["16 bits", "32 bits"]
    default = plots.plot_curves([0, 1], {"shc": [0.2, 0.1]}, xlabel="K", ylabel="precision")
    assert default.legends[0].get_title().get_text() == "method"


def test_alt_text_names_panels_by_their_left_aligned_titles():
    """Page 00's center pictures name each panel by a left title ("mds centers"); an audit found the alt text of
    four panels describing three, nameless (two identical descriptions merged)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    for ax, method in zip(axes, ("random", "shc")):
        ax.set_xlabel("x")
        ax.set_ylabel("y")
        ax.set_title(f"{method} centers", loc="left")
    axes[1].set_title("d = 4", loc="right")
    text = plots.figure_alt_text(fig)
    plt.close(fig)
    assert text == "2 panels: each with y against x, titled random centers | shc centers d = 4"  # shared words once


def test_alt_text_names_the_lines_of_a_legend_beside_the_panels():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    for bits in (16, 32, 64):
        for ax in axes:
            ax.plot([0, 1], [0, bits], label=f"{bits} bits")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels)  # one legend for both panels: each panel holds every length
    text = plots.figure_alt_text(fig)
    plt.close(fig)
    assert text.endswith("Lines in every panel: 16 bits, 32 bits, 64 bits")
    fig, ax = plt.subplots()
    ax.plot([0, 1], label="shc")
    assert "Lines" not in plots.figure_alt_text(fig)  # no figure legend, no sentence
    fig.legend()
    assert plots.figure_alt_text(fig).endswith("Lines in the panel: shc")
    plt.close(fig)


def test_alt_text_says_which_panels_draw_an_entry_of_a_figure_legend():
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2)
    axes[0].set_title("left")
    axes[1].set_title("right")
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="shc")
    axes[1].plot([0, 1], [1, 0], label="lth")  # drawn in the right panel only
    fig.legend(*axes[1].get_legend_handles_labels())
    text = plots.figure_alt_text(fig)
    plt.close(fig)
    assert text.endswith("Legend: lth (in right); in every panel: shc")
    assert "lth" not in text.split("Legend:")[1].split("in every panel")[1]


def _png(pixels: np.ndarray, dpi: int = 150) -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(pixels).save(out, format="PNG", dpi=(dpi, dpi))
    return out.getvalue()


def _pixels(data: bytes) -> np.ndarray:
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGBA")).astype(int)


def test_compact_png_is_exact_for_an_image_of_at_most_256_colours():
    rng = np.random.default_rng(0)
    colours = rng.integers(0, 256, size=(200, 3), dtype=np.uint8)
    image = colours[rng.integers(0, 200, size=(120, 90))]  # 200 distinct colours, noisy: RGBA PNG is large
    data = _png(np.dstack([image, np.full(image.shape[:2], 255, np.uint8)]))
    small = plots.compact_png(data)
    assert small.startswith(PNG_MAGIC) and len(small) < len(data)
    np.testing.assert_array_equal(_pixels(small), _pixels(data))


def test_compact_png_quantises_a_real_figure_closely_and_keeps_white_and_dpi():
    import io

    from PIL import Image

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 3))
    for shift in range(6):  # anti-aliased curves and a filled band: thousands of colours
        x = np.linspace(0, 6, 200)
        ax.plot(x, np.sin(x + shift), lw=2)
        ax.fill_between(x, np.sin(x + shift) - 0.2, np.sin(x + shift) + 0.2, alpha=0.2)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120)
    plt.close(fig)
    data = buffer.getvalue()
    before = _pixels(data)
    assert len(np.unique(before.reshape(-1, 4), axis=0)) > 256
    small = plots.compact_png(data)
    after = _pixels(small)
    assert len(small) < 0.6 * len(data)
    assert Image.open(io.BytesIO(small)).mode == "P"
    assert round(Image.open(io.BytesIO(small)).info["dpi"][0]) == 120
    np.testing.assert_array_equal(after[0, 0], [255, 255, 255, 255])  # the background stays white
    error = np.abs(after - before)
    assert error.mean() < 2 and error.max() <= 64


def test_compact_png_keeps_every_colour_that_covers_a_thousandth_of_the_figure():
    """Page 03's convergence figure of standard-pretrained (2026-12-04): maximum coverage had put LTH's pale olive band
    into a cluster whose mean was peach (SHC's hue on the page), random's grey band lavender and the gridlines' grey
    pink and green (8-15 levels off); a reader matched bands to the wrong lines. Every method's band and line over a
    grid: each colour covering >= PINNED_SHARE of the pixels comes back within PINNED_TOLERANCE levels."""
    import io

    import matplotlib.pyplot as plt

    from shc.plots.style import PINNED_SHARE, PINNED_TOLERANCE

    with plt.style.context({"axes.grid": True, "grid.color": "#cccccc", "grid.linestyle": ":"}):
        fig, axes = plt.subplots(3, 3, figsize=(12, 7))
        x = np.linspace(0, 160, 300)
        for panel in axes.flat:
            for rank, method in enumerate(plots.METHOD_COLORS):
                y = 0.2 + 0.07 * rank + 0.05 * np.sin(x / 25 + rank)
                color = plots.method_color(method)
                panel.fill_between(x, y - 0.04 - 0.01 * rank, y + 0.05, color=color, alpha=0.18, linewidth=0)
                panel.plot(x, y, color=color, marker="o", markevery=30)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=80)
        plt.close(fig)
    before = _pixels(buffer.getvalue())[..., :3].reshape(-1, 3).astype(int)
    after = _pixels(plots.compact_png(buffer.getvalue()))[..., :3].reshape(-1, 3).astype(int)
    colours, inverse, counts = np.unique(before, axis=0, return_inverse=True, return_counts=True)
    assert len(colours) > 256  # quantised, not converted exactly
    inverse = inverse.ravel()
    major = np.flatnonzero(counts >= PINNED_SHARE * len(before))
    assert len(major) > 20  # the bands, their overlaps, the lines, the grid
    for colour in major:
        moved = np.abs(after[inverse == colour] - colours[colour]).max()
        assert moved <= PINNED_TOLERANCE <= 4, f"colour {colours[colour]} moved by {moved}"


def test_compact_png_with_more_large_colours_than_palette_entries_still_writes_a_palette():
    """300 flat blocks of 40 x 40 pixels, each colour a third of a percent of the image: more colours to pin than the
    256 entries; compact_png pins what it can and clusters the rest instead of failing (an argmin of no free entry)."""
    import io

    from PIL import Image

    colours = np.random.default_rng(0).integers(0, 256, (300, 3), dtype=np.uint8)
    blocks = np.repeat(np.repeat(colours.reshape(15, 20, 3), 40, axis=0), 40, axis=1)
    buffer = io.BytesIO()
    Image.fromarray(blocks).save(buffer, format="PNG")
    small = plots.compact_png(buffer.getvalue())
    assert Image.open(io.BytesIO(small)).mode == "P"
    after = _pixels(small)[..., :3].reshape(-1, 3).astype(int)
    exact = np.all(after == blocks.reshape(-1, 3), axis=1).reshape(600, 800)[::40, ::40]
    assert exact.sum() >= 200  # most blocks keep their colour; the 44 the palette cannot hold are merged


def test_compact_png_is_no_larger_than_pillows_own_palette_png_and_keeps_its_pixels():
    import io

    from PIL import Image

    rng = np.random.default_rng(1)
    colours = rng.integers(0, 256, size=(40, 3), dtype=np.uint8)
    blocks = np.kron(rng.integers(0, 40, size=(30, 40)), np.ones((4, 4), dtype=int))  # 120 x 160, 4-pixel blocks
    image = colours[blocks]
    data = _png(np.dstack([image, np.full(image.shape[:2], 255, np.uint8)]))
    pillow = io.BytesIO()  # what compact_png wrote before its oxipng pass: the exact palette, Pillow's optimize
    Image.fromarray(image).convert("P", palette=Image.Palette.ADAPTIVE, colors=256).save(pillow, "PNG", optimize=True)
    small = plots.compact_png(data)
    assert len(small) <= len(pillow.getvalue())
    np.testing.assert_array_equal(_pixels(small), _pixels(data))  # lossless: 40 colours, every pixel kept


def test_compact_png_leaves_transparent_or_palette_images_alone_and_rejects_other_bytes():
    transparent = np.zeros((20, 20, 4), np.uint8)
    transparent[..., 0] = np.arange(20)[:, None] * 12
    transparent[..., 3] = 128
    data = _png(transparent)
    assert plots.compact_png(data) == data
    already = plots.compact_png(_png(np.dstack([transparent[..., :3], np.full((20, 20), 255, np.uint8)])))
    assert plots.compact_png(already) == already
    with pytest.raises(ValueError, match="PNG signature"):
        plots.compact_png(b"GIF89a not a png")
    with pytest.raises(TypeError, match="PNG bytes"):
        plots.compact_png("a string")


def test_save_figure_writes_a_palette_png(tmp_path):
    import matplotlib.pyplot as plt
    from PIL import Image

    fig, ax = plt.subplots()
    ax.plot(np.arange(50), np.sqrt(np.arange(50)), marker="o")
    png = plots.save_figure(fig, tmp_path / "curve")[0]
    plt.close(fig)
    assert Image.open(png).mode == "P"


def test_displayed_figures_carry_alt_text_and_a_palette_png(monkeypatch):
    """In IPython with matplotlib-inline's PNG formatter (base64 text), a shown figure is a palette PNG with alt text."""
    import base64
    import io

    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib_inline.backend_inline import set_matplotlib_formats
    from PIL import Image

    shell = InteractiveShell.instance()
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    try:
        set_matplotlib_formats("png")
        assert plots.install_alt_text_formatter()
        fig, ax = plt.subplots()
        for shift in range(4):
            ax.plot(np.linspace(0, 5, 100), np.cos(np.linspace(0, 5, 100) + shift), label=f"s{shift}")
        ax.set_title("waves")
        data, metadata = shell.display_formatter.formatters["image/png"](fig)
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    assert "waves" in metadata["alt"]
    image = Image.open(io.BytesIO(base64.b64decode(data) if isinstance(data, str) else data))
    assert image.mode == "P"


def test_a_saved_figure_is_displayed_as_its_file_until_it_changes(monkeypatch, tmp_path):
    """save_figure's PNG is what IPython shows (so a report page can link the file instead of a second copy), at the
    size the inline backend would give it; a figure changed after saving is drawn anew."""
    import base64
    import io

    import matplotlib.pyplot as plt
    from IPython.core.interactiveshell import InteractiveShell
    from matplotlib_inline.backend_inline import set_matplotlib_formats
    from PIL import Image

    shell = InteractiveShell.instance()
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    try:
        set_matplotlib_formats("png")
        assert plots.install_alt_text_formatter()
        fig, ax = plt.subplots(figsize=(4, 3), dpi=100)
        ax.plot([0, 1, 2], [0, 1, 4])
        ax.set_title("parabola")
        with plt.rc_context({"savefig.dpi": 150}):  # the report style's file resolution
            png = plots.save_figure(fig, tmp_path / "parabola")[0]
        shown, metadata = shell.display_formatter.formatters["image/png"](fig)
        ax.set_title("changed after saving")
        redrawn, _ = shell.display_formatter.formatters["image/png"](fig)
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    shown = base64.b64decode(shown) if isinstance(shown, str) else shown
    assert shown == png.read_bytes() and "parabola" in metadata["alt"]
    width = Image.open(png).size[0]
    assert width > 500 and metadata["width"] == round(width * 100 / 150)  # a 150 dpi file shown at the figure's 100
    redrawn = base64.b64decode(redrawn) if isinstance(redrawn, str) else redrawn
    assert redrawn != shown and Image.open(io.BytesIO(redrawn)).size[0] < width  # at the display dpi, no file


def test_metric_by_bits_gives_display_labels_their_methods_colours():
    import matplotlib.pyplot as plt

    labels = {"distance": "d only (MDS centers)", "semantic": "S only (Eq. 46-49)", "shc": "d + S (SHC)"}
    frame = pd.DataFrame([{"method": label, "bits": q, "mean": 0.3 + 0.001 * q, "low": 0.29, "high": 0.31 + 0.001 * q}
                          for label in labels.values() for q in (16, 32, 64)])
    fig = plots.plot_metric_by_bits(frame, "mAP", styles={label: method for method, label in labels.items()})
    handles, names = fig.axes[0].get_legend_handles_labels()
    lines = {name: handle[0] for handle, name in zip(handles, names)}  # an errorbar container: its data line first
    plt.close(fig)
    for method, label in labels.items():
        assert to_hex(lines[label].get_color()) == to_hex(plots.method_color(method)), label
        assert lines[label].get_marker() == plots.method_style(method)["marker"]
    assert len({to_hex(line.get_color()) for line in lines.values()}) == 3


def test_metric_by_bits_draws_no_bar_for_one_seed_and_names_its_confidence():
    import matplotlib.pyplot as plt

    per_seed = pd.DataFrame([{"method": "shc", "bits": 16, "metric": "m", "value": 0.5, "seed": 0}]
                            + [{"method": "shc", "bits": 32, "metric": "m", "value": v, "seed": s}
                               for s, v in enumerate([0.6, 0.7, 0.8])])
    frame = plots.interval_frame(per_seed, "m", confidence=0.9)
    assert frame["confidence"].tolist() == [0.9, 0.9] and np.isnan(frame["low"].iloc[0])
    fig = plots.plot_metric_by_bits(frame, "mAP")
    axes = fig.axes[0]
    bars = axes.containers[0].lines[2][0].get_segments()
    title = axes.get_title()
    plt.close(fig)
    assert [segment[0, 0] for segment in bars if len(segment)] == [32]  # one seed: no bar, not a bar of length 0
    assert "90% t-interval" in title and "one-seed points have none" in title
    one_seed = plots.plot_metric_by_bits(frame[frame["bits"] == 16], "mAP")
    assert "one seed: no interval" in one_seed.axes[0].get_title() and "t-interval" not in one_seed.axes[0].get_title()
    plt.close(one_seed)
    with pytest.raises(ValueError, match="confidence"):
        plots.interval_frame(per_seed, "m", confidence=95)


def test_distance_frame_counts_the_center_pairs_at_each_distance():
    centers = np.array([[1, 1, 1, 1], [1, 1, 1, -1], [-1, -1, -1, -1]])  # pairwise distances 1, 4 and 3
    frame = plots.distance_frame({"a": centers, "b": centers[[0, 0, 2]]})  # b: distances 0, 4 and 4
    assert list(frame.columns) == ["method", "distance", "pairs"]
    assert frame[frame.method == "a"]["pairs"].tolist() == [0, 1, 0, 1, 1]
    assert frame[frame.method == "b"]["pairs"].tolist() == [1, 0, 0, 0, 2]
    assert frame[frame.method == "a"]["distance"].tolist() == [0, 1, 2, 3, 4]


def test_matrix_frame_keeps_the_upper_triangle_of_symmetric_matrices_and_everything_else():
    symmetric = np.array([[1.0, 0.2, -0.3], [0.2, 1.0, 0.5], [-0.3, 0.5, 1.0]])
    skew = symmetric + np.triu(np.ones((3, 3)), 1)  # not symmetric
    frame = plots.matrix_frame({"S": symmetric, "A": skew}, ["a", "b", "c"], coarse_labels=[0, 0, 1])
    assert list(frame.columns) == ["source", "row", "row_coarse", "a", "b", "c"]
    s_rows = frame[frame.source == "S"]
    assert s_rows["row"].tolist() == ["a", "b", "c"] and s_rows["row_coarse"].tolist() == [0, 0, 1]
    # S: its upper triangle and diagonal (C (C + 1) / 2 cells), the cells below empty; A: every cell
    assert s_rows[["a", "b", "c"]].notna().to_numpy().sum() == 6
    assert np.isnan(s_rows.loc[s_rows.row == "c", "a"].item()) and s_rows.loc[s_rows.row == "a", "c"].item() == -0.3
    np.testing.assert_array_equal(frame[frame.source == "A"][["a", "b", "c"]].to_numpy(), skew)
    # every entry is recoverable: the triangle mirrored, the whole matrix as it is, from the written file too
    for source, matrix in (("S", symmetric), ("A", skew)):
        rebuilt, names = plots.matrix_from_frame(frame, source)
        np.testing.assert_array_equal(rebuilt, matrix)
        assert names == ["a", "b", "c"]
    assert plots.matrix_frame(symmetric, triangle=False)[["0", "1", "2"]].notna().to_numpy().all()
    with pytest.raises(ValueError, match="not symmetric"):
        plots.matrix_frame(skew, triangle=True)
    with pytest.raises(ValueError, match="must be distinct"):
        plots.matrix_frame(symmetric, ["a", "a", "c"])
    with pytest.raises(ValueError, match="no matrix 'B'"):
        plots.matrix_from_frame(frame, "B")


def test_matrix_frame_records_where_the_clustered_heatmap_draws_each_class():
    import matplotlib.pyplot as plt

    S = np.array([[1.0, -0.5, 0.9, -0.4], [-0.5, 1.0, -0.6, 0.8], [0.9, -0.6, 1.0, -0.5], [-0.4, 0.8, -0.5, 1.0]])
    names = ["a", "b", "c", "d"]
    order = plots.similarity_order(S)
    frame = plots.matrix_frame({"S": S}, names, order=order)
    fig = plots.plot_similarity_heatmap(S, names, cluster=True)
    drawn = [label.get_text() for label in fig.axes[0].get_xticklabels()]
    image = fig.axes[0].images[0].get_array()
    plt.close(fig)
    shown_at = dict(zip(frame["row"], frame["shown_at"]))
    assert [name for name, _ in sorted(shown_at.items(), key=lambda item: item[1])] == drawn  # the figure's order
    assert {drawn[0], drawn[1]} in ({"a", "c"}, {"b", "d"})  # similar classes side by side
    for i, row in enumerate(names):  # a cell of the file is the figure's cell at its shown_at positions
        for j, column in enumerate(names):
            assert image[shown_at[row], shown_at[column]] == S[i, j]
    rebuilt, read_names = plots.matrix_from_frame(frame, "S")
    np.testing.assert_array_equal(rebuilt, S)
    assert read_names == names and list(frame.columns[:3]) == ["source", "row", "shown_at"]
    with pytest.raises(ValueError, match="permutation"):
        plots.matrix_frame(S, order=[0, 0, 1, 2])
    with pytest.raises(ValueError, match="shown_at"):
        plots.matrix_frame(S, ["a", "b", "shown_at", "d"])


def test_a_matrix_frame_file_gives_back_its_matrix_with_class_names_that_look_like_numbers(tmp_path):
    """Class names such as "00" head the columns of the file; read back, the matrix and the names are the same."""
    import pandas as pd

    S = np.array([[1.0, 0.25, 0.5], [0.25, 1.0, -0.125], [0.5, -0.125, 1.0]])
    path = plots.save_table(plots.matrix_frame({"S": S}, ["00", "01", "10"]), tmp_path / "heatmap")
    for read in (pd.read_csv(path, dtype={"row": str}), pd.read_csv(path)):  # plainly read, "00" is 0 in ``row``
        rebuilt, names = plots.matrix_from_frame(read, "S")
        assert names == ["00", "01", "10"]
        np.testing.assert_array_equal(rebuilt, S)
    # the long form that report sets built before the matrix form committed (its upper triangle) reads the same
    i, j = np.triu_indices(3)
    labels = np.array(["00", "01", "10"])
    long = pd.DataFrame({"source": "S", "row": labels[i], "column": labels[j], "value": S[i, j]})
    rebuilt, names = plots.matrix_from_frame(long, "S")
    assert names == ["00", "01", "10"]
    np.testing.assert_array_equal(rebuilt, S)


def test_similarity_by_group_frame_is_the_histograms_the_figure_draws():
    S = np.array([[1.0, 0.92, -0.5, 0.0], [0.92, 1.0, -0.45, 0.1], [-0.5, -0.45, 1.0, 0.82], [0.0, 0.1, 0.82, 1.0]])
    coarse = np.array([0, 0, 1, 1])
    frame = plots.similarity_by_group_frame({"S": S}, coarse)
    same, other = frame[frame.pairs == "same coarse class"], frame[frame.pairs == "other pairs"]
    # pairs (0, 1) and (2, 3) share a coarse class; the four others do not
    assert same["count"].sum() == 2 and other["count"].sum() == 4
    assert same.loc[same["count"] > 0, "bin_low"].round(2).tolist() == [0.8, 0.9]  # 0.82 and 0.92 (bins 0.05 wide)
    np.testing.assert_allclose((same.density * (same.bin_high - same.bin_low)).sum(), 1.0)
    assert len(frame) == 2 * 40 and frame.bin_low.min() == -1.0 and frame.bin_high.max() == 1.0
    with pytest.raises(ValueError, match="coarse_labels"):
        plots.similarity_by_group_frame({"S": S}, coarse[:3])
    # the figure draws the same bins: its bars' heights are the frame's densities
    fig = plots.plot_similarity_by_group({"S": S}, coarse)
    heights = [patch.get_height() for patch in fig.axes[0].patches]
    np.testing.assert_allclose(heights, np.concatenate([same.density, other.density]))


def test_every_method_s_loss_is_drawn_relative_to_its_first_epoch():
    """Issue 38: CRH's loss is about 100x CSQ's; on one absolute axis it flattens every other curve. Each run's loss
    is drawn over its first epoch's, so both start at 1 and keep their shapes."""
    history = pd.DataFrame({"label": ["csq"] * 3 + ["crh"] * 3, "bits": 16, "seed": 0, "epoch": [1, 2, 3] * 2,
                            "loss": [0.5, 0.25, 0.1, 50.0, 40.0, 10.0], "mAP@100": 0.5, "mAP@1000": 0.5,
                            "mAP@ALL": 0.5})
    fig = plots.plot_convergence(history)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["csq"].get_ydata(), [1.0, 0.5, 0.2])
    np.testing.assert_allclose(lines["crh"].get_ydata(), [1.0, 0.8, 0.2])
    assert fig.axes[0].get_title() == "16 bits: training loss / epoch 1"


def test_two_atomic_writes_of_one_file_at_once_use_their_own_temporaries(tmp_path):
    """An audit: the temporary name held only the pid, so two threads (or two hosts sharing a run folder with the same
    pid) writing one file wrote into one temporary, and one's replace could publish the other's half-written bytes."""
    target = tmp_path / "metrics.json"
    with plots.atomic_path(target) as first, plots.atomic_path(target) as second:
        assert first != second
        first.write_text("first")
        second.write_text("second")
    assert target.read_text() == "first"  # the outer block ends last and wins, whole
    assert sorted(p.name for p in tmp_path.iterdir()) == ["metrics.json"]


def test_alt_text_reads_a_shared_axis_label_from_the_panel_that_carries_it():
    """``sharey`` labels the first panel's y axis and ``sharex`` the bottom row's x axis only; the other panels plot
    against the same axes, and their description said so only for the labelled panel (a review, issue 38)."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, sharex=True, sharey="row")
    for ax, title in zip(axes.flat, ["a", "b", "c", "d"]):
        ax.set_title(title)
    axes[0, 0].set_ylabel("mAP")
    axes[1, 0].set_ylabel("loss")
    axes[1, 0].set_xlabel("epoch")
    axes[1, 1].set_xlabel("epoch")
    text = plots.figure_alt_text(fig)
    plt.close(fig)
    assert text == "4 panels: a; mAP against epoch | b; mAP against epoch | c; loss against epoch | d; loss against epoch"

    fig, axes = plt.subplots(1, 2)  # nothing shared: a panel with one label names that axis alone
    axes[0].set_xlabel("epoch")
    axes[1].set_ylabel("mAP")
    text = plots.figure_alt_text(fig)
    plt.close(fig)
    assert text == "2 panels: x axis: epoch | y axis: mAP"


def test_the_gv_grid_of_page_00_is_the_bound_by_hand():
    # Eq. 13 by hand (docs/centers.md): C = 100 needs d = 4, 10 and 24 at 16, 32 and 64 bits; C = 2, d = q/2 + 1
    grid = plots.gv_bound_grid(plots.gv_bound_frame([100, 2], [64, 16, 32]))
    assert list(grid.index) == [2, 100] and grid.index.name == "C"
    assert list(grid.columns) == ["q = 16", "q = 32", "q = 64"]
    assert grid.loc[100].tolist() == [4, 10, 24] and grid.loc[2].tolist() == [9, 17, 33]
