"""Batch runner for the report notebooks: compute first, then papermill, HTML, figures, tables and an index.

Usage (from the repository root)::

    python -m shc.reports --preset quick                 # every notebook of the "quick" preset
    python -m shc.reports --preset paper --only 00_center_geometry --bits 16 32 64
    python -m shc.reports --preset tiny --output /tmp/reports --skip-existing
    python -m shc.reports --preset quick --list          # the planned reports and the runs they read
    python -m shc.reports --strip-notebooks              # clear outputs before committing notebooks

For a preset (:mod:`shc.presets`), the runner

1. computes, through :mod:`shc.pipeline`, every run its notebooks read (cached runs are skipped), so the
   notebooks only read and show (:mod:`shc.results` never trains);
2. executes each notebook with papermill in a kernel of the *current* interpreter, passing its parameter
   set plus ``output_dir`` and ``run_dir``, into a building folder that replaces the previous report only
   when it succeeded (:mod:`shc.reports.execute`);
3. converts the executed notebook to HTML twice: ``<stem>.html`` (with code) and ``<stem>-report.html``
   (outputs only, for reading), and records the outcome in ``run.json``;
4. rebuilds ``index.html``, which links every report with its headline numbers.

Layout::

    reports/<preset>/index.html
    reports/<preset>/<notebook-stem>[/<variant>]/
        <stem>.ipynb  <stem>.html  <stem>-report.html  run.json  summary.json
        figures/*.png, *.svg, *.csv  tables/*.csv
    reports/<preset>/bundle.zip        every table CSV, run.json and summary.json (only with --bundle)

Only the reading pages, the index, the PNGs, CSVs and records are committed (a bundle is written on request)
(:func:`shc.reports.check.is_published`, mirroring ``.gitignore``); ``python -m shc.reports.check reports/<preset>``
checks a folder as a reader gets it (:mod:`shc.reports.check`).

Modules: :mod:`~shc.reports.plan` (preset table x overrides -> jobs), :mod:`~shc.reports.execute`
(one report), :mod:`~shc.reports.export` (HTML), :mod:`~shc.reports.index` (the index page),
:mod:`~shc.reports.notebooks` (clean notebooks), :mod:`~shc.reports.summary` (headline numbers),
:mod:`~shc.reports.blocks` (the tables and figures several pages share),
:mod:`~shc.reports.cli` (the batch and the command line).
"""

from __future__ import annotations

import importlib

#: Each public name and the submodule that defines it. The package imports nothing until a name is asked for
#: (PEP 562), so ``python -m shc.reports.check`` runs its module once, without runpy's warning that the package
#: had imported it already.
_EXPORTS = {
    "bundle": ("bundle_members", "write_bundle"),
    "check": ("Problem", "check_report_folder", "is_published"),
    "cli": ("compute_runs", "main", "run_reports", "summary_table"),
    "execute": ("BUNDLE_FILE", "FAILURE_FILE", "KERNEL_LOG_FILE", "RECORD_FILE", "ReportResult",
                "current_interpreter_kernel_spec", "execute_report", "smoke_notice"),
    "export": ("notebook_title", "render_html"),
    "index": ("INDEX_FILE", "write_index"),
    "notebooks": ("check_notebook", "strip_notebook"),
    "plan": ("OVERRIDE_PARAMETERS", "RUNNER_PARAMETERS", "ReportJob", "apply_overrides", "declared_parameters",
             "default_notebooks_dir", "notebook_table", "plan_jobs", "variant_names"),
    "summary": ("SUMMARY_FILE", "format_summary", "publish_summary", "read_summary", "show_summary"),
}
_SOURCES = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'shc.reports' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"shc.reports.{_SOURCES[name]}"), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_SOURCES))
