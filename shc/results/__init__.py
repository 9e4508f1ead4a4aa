"""Reading the pipeline's artifacts: what the report notebooks show. Read-only.

Everything here reads what :mod:`shc.pipeline` wrote and turns it into frames, tables and curves; it
imports no trainer and never computes a stage. A missing artifact raises :class:`~shc.runs.MissingRunError`
naming the run and the command that computes it (``python -m shc.reports --preset NAME`` computes every
run its notebooks read before running them). One module per job, each importing only those above it here;
every public name is re-exported (``from shc.results import result_rows, retrieval_table``):

- :mod:`~shc.results.reading`: loaders of one run's files (:func:`load_stage1_metrics`, :func:`load_center_quality`,
  :func:`load_center_history`, :func:`load_metrics`, :func:`load_history`, :func:`load_codes`, ...) and one row
  per run or per epoch (:func:`result_rows`, :func:`history_rows`, :func:`center_rows`,
  :func:`center_history_rows`, the classifier-code baseline's :func:`classifier_code_rows`);
- :mod:`~shc.results.curves`: curves by method (:func:`curves_by_method`, :func:`pr_curves_by_method`,
  :func:`curve_rows`, :func:`class_ap_rows`);
- :mod:`~shc.results.examples`: example retrievals (:func:`top_results`, :func:`hamming_top_k`);
- :mod:`~shc.results.statistics`: paired comparisons over seeds (:func:`ranking_line`, :func:`regime_rows`);
- :mod:`~shc.results.tables`: tables in the paper's layouts, mean ± std over seeds with best bold and second
  underlined: :func:`retrieval_table` (Tables 4-8), :func:`center_table` (Table 3), :func:`classifier_table`
  (Table 2); the command line's Markdown tables; :func:`readable_table`; display names (:func:`relabelled`);
- :mod:`~shc.results.prose`: the computed sentences around the tables (:func:`budget_phrase`, :func:`device_phrase`, the paired
  comparisons, the paper side by side, two presets side by side);
- :mod:`~shc.results.files`: a preset's results file, one CSV row per run (:func:`write_results`,
  :func:`read_results`: the tables rebuilt without the run folders);
- :mod:`~shc.results.cli`: ``python -m shc.results`` (:func:`main`);
- :mod:`~shc.results.page`: ``python -m shc.results.page``, docs/results.md written from the committed results files
  (imported on its own: it is a command, not a reader).
"""

from __future__ import annotations

from shc.evaluation import EVALUATION_VERSION, PRIMARY_METRIC, UNSEEN_KEYS
from shc.results.cli import main
from shc.results.curves import class_ap_rows, curve_rows, curves_by_method, pr_curves_by_method
from shc.results.examples import ExampleQueries, hamming_top_k, top_results
from shc.results.files import read_results, results_frame, write_results
from shc.results.prose import budget_phrase, budgets_by_bits, device_phrase, grid_phrase
from shc.results.reading import (IDENTITY_COLUMNS, REACH_KEYS, REPORTED_MAP_KEYS, SOURCE_NAMES, center_history_rows,
                                 center_lessons, center_rows, center_sets, classifier_code_rows, finished_configs,
                                 has_centers, history_rows, load_center_history, load_center_quality, load_centers,
                                 load_codes, load_history, load_metrics, load_similarity, load_stage1_metrics, result_rows,
                                 measured_pairings, run_label, selected_epoch_share, settings_rows, similarity_sources)
from shc.results.statistics import headline_rows, ranking_line, regime_rows, verdict_sentence
from shc.results.tables import (RankedTable, center_table, classifier_table, readable_cell, readable_table,
                                relabelled, retrieval_table, value_name)
from shc.runs import MAP_KEYS, TIE_AWARE_MAP_KEYS, MissingRunError, RunConfig, StaleRunError, load_data
from shc.stages import artifact

__all__ = [
    "EVALUATION_VERSION",
    "IDENTITY_COLUMNS",
    "MAP_KEYS",
    "PRIMARY_METRIC",
    "REACH_KEYS",
    "REPORTED_MAP_KEYS",
    "SOURCE_NAMES",
    "TIE_AWARE_MAP_KEYS",
    "UNSEEN_KEYS",
    "ExampleQueries",
    "MissingRunError",
    "RankedTable",
    "RunConfig",
    "StaleRunError",
    "artifact",
    "budget_phrase",
    "grid_phrase",
    "budgets_by_bits",
    "device_phrase",
    "center_history_rows",
    "center_lessons",
    "center_rows",
    "center_sets",
    "classifier_code_rows",
    "read_results",
    "results_frame",
    "write_results",
    "center_table",
    "class_ap_rows",
    "classifier_table",
    "curve_rows",
    "curves_by_method",
    "finished_configs",
    "hamming_top_k",
    "has_centers",
    "headline_rows",
    "history_rows",
    "settings_rows",
    "load_center_history",
    "load_center_quality",
    "load_centers",
    "load_codes",
    "load_data",
    "load_history",
    "load_metrics",
    "load_similarity",
    "load_stage1_metrics",
    "main",
    "measured_pairings",
    "pr_curves_by_method",
    "ranking_line",
    "readable_cell",
    "readable_table",
    "regime_rows",
    "relabelled",
    "result_rows",
    "retrieval_table",
    "run_label",
    "selected_epoch_share",
    "similarity_sources",
    "top_results",
    "value_name",
    "verdict_sentence",
]
