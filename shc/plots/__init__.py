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
:func:`method_style` extends that to similarity-source variants and unknown names deterministically."""

from __future__ import annotations

from shc.plots.codes import (  # noqa: F401
    class_ap_frame,
    code_embedding_frame,
    plot_class_ap,
    plot_code_embedding,
    plot_example_queries,
)
from shc.plots.curves import (  # noqa: F401
    CURVE_KINDS,
    arrays_frame,
    convergence_frame,
    curve_arrays,
    curve_frame,
    plot_convergence,
    plot_convergence_overlay,
    plot_curves,
    interval_frame,
    plot_metric_by_bits,
    plot_pr_curves,
    plot_training_history,
    pr_arrays,
)
from shc.plots.geometry import (  # noqa: F401
    distance_frame,
    gram_frames,
    centers_from_frame,
    gram_from_frame,
    gv_bound_frame,
    gv_bound_grid,
    center_embedding_frame,
    plot_center_embedding,
    plot_center_history,
    plot_search_history,
    plot_distance_histograms,
    plot_gv_bound,
    plot_similarity_by_group,
    similarity_by_group_frame,
    plot_similarity_comparison,
    plot_similarity_heatmap,
    plot_similarity_vs_gram,
    similarity_order,
)
from shc.plots.style import (  # noqa: F401
    COMPRESSED_SUFFIX,
    DATA_SUFFIXES,
    FIGURE_DIGITS,
    MATRIX_DIGITS,
    TABLE_DIGITS,
    matrix_frame,
    matrix_from_frame,
    METHOD_COLORS,
    METHOD_STYLES,
    SIMILARITY_LINESTYLES,
    STYLE_RC,
    atomic_path,
    compact_png,
    figure_alt_text,
    install_alt_text_formatter,
    method_color,
    plain_text,
    method_style,
    read_table_text,
    save_figure,
    save_table,
    use_style,
)

__all__ = ['COMPRESSED_SUFFIX', 'DATA_SUFFIXES', 'FIGURE_DIGITS', 'MATRIX_DIGITS', 'TABLE_DIGITS', 'distance_frame', 'gram_frames', 'centers_from_frame', 'gram_from_frame', 'gv_bound_frame', 'gv_bound_grid', 'matrix_frame', 'matrix_from_frame', 'CURVE_KINDS', 'METHOD_COLORS', 'METHOD_STYLES', 'SIMILARITY_LINESTYLES', 'STYLE_RC', 'arrays_frame', 'atomic_path', 'class_ap_frame', 'code_embedding_frame', 'convergence_frame', 'curve_arrays', 'curve_frame', 'method_color', 'method_style', 'plot_center_embedding', 'plot_center_history', 'plot_class_ap', 'plot_code_embedding', 'plot_convergence', 'plot_convergence_overlay', 'plot_curves', 'plot_distance_histograms', 'plot_example_queries', 'plot_gv_bound', 'plot_pr_curves', 'plot_search_history', 'plot_similarity_by_group', 'similarity_by_group_frame', 'plot_similarity_comparison', 'plot_similarity_heatmap', 'plot_similarity_vs_gram', 'plot_training_history', 'pr_arrays', 'read_table_text', 'save_figure', 'save_table', 'similarity_order', 'use_style', 'figure_alt_text', 'install_alt_text_formatter', 'plain_text', 'compact_png', 'interval_frame', 'plot_metric_by_bits', 'center_embedding_frame']
