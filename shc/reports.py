"""Batch runner for the report notebooks: papermill execution, HTML, figures, tables and an index.

Usage (from the repository root)::

    python -m shc.reports --preset quick                 # every notebook, "quick" parameters
    python -m shc.reports --preset paper --only 00_center_geometry --bits 16 32 64
    python -m shc.reports --preset tiny --output /tmp/reports --skip-existing
    python -m shc.reports --strip-notebooks              # clear outputs before committing notebooks

For each notebook and each of its parameter sets in the preset, the runner

1. executes the notebook with papermill in a kernel of the *current* interpreter (whatever
   Jupyter kernelspecs are installed, see :func:`current_interpreter_kernel_spec`), passing the
   parameter set plus ``output_dir`` and ``run_dir``;
2. converts the executed notebook to HTML twice: ``<stem>.html`` (with code) and
   ``<stem>-report.html`` (outputs only, for reading); figures are embedded as PNG;
3. records the outcome in ``run.json`` and rebuilds ``index.html``, which links every report with
   its headline numbers.

Layout::

    reports/<preset>/index.html
    reports/<preset>/<notebook-stem>[/<variant>]/
        <stem>.ipynb  <stem>.html  <stem>-report.html  run.json  summary.json
        figures/*.png, *.svg        tables/*.csv

``<variant>`` appears only when a preset lists several parameter sets for one notebook; it is
built from the parameters that differ between the sets (e.g. ``bits-32``).

Conventions for notebooks (checked by :func:`check_notebook`):

* the first code cell is tagged ``parameters`` and declares ``output_dir`` and ``run_dir``
  (plus any of the override names ``dataset``, ``bits``, ``methods``, ``seeds``/``seed``,
  ``epochs`` they use);
* figures go through :func:`shc.plots.save_figure` into ``output_dir/figures`` and tables through
  :func:`shc.plots.save_table` into ``output_dir/tables``;
* headline numbers are published with :func:`publish_summary` (``summary.json``), shown in the index;
* expensive work goes through :mod:`shc.pipeline`, whose artifacts in ``run_dir`` are cached, so
  re-running a notebook is cheap when nothing changed;
* notebooks are committed without outputs (:func:`strip_notebook`).

Adding a notebook is one entry in :data:`NOTEBOOK_PARAMETERS`.
"""

from __future__ import annotations

import argparse
import copy
import functools
import html
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

from shc.pipeline import PAPER_DATASETS
from shc.plots import atomic_path

__all__ = [
    "NOTEBOOK_PARAMETERS",
    "OVERRIDE_PARAMETERS",
    "PRESETS",
    "RECORD_FILE",
    "SUMMARY_FILE",
    "ReportJob",
    "ReportResult",
    "apply_overrides",
    "check_notebook",
    "current_interpreter_kernel_spec",
    "declared_parameters",
    "default_notebooks_dir",
    "execute_report",
    "main",
    "plan_jobs",
    "publish_summary",
    "read_summary",
    "render_html",
    "run_reports",
    "strip_notebook",
    "write_index",
]

PRESETS = ("tiny", "quick", "paper")

#: The report table: notebook stem -> preset -> list of parameter sets (one report per set).
#: "tiny" is what CI runs (seconds), "quick" a laptop run (minutes), "paper" the paper's grid.
#: ``output_dir`` and ``run_dir`` are added by the runner.
#: Notebooks 01-05 share one run directory per preset, so each pipeline stage is computed once per batch;
#: their parameter sets must agree on the stage configuration (``pipeline_preset``, ``epochs``,
#: ``config_overrides``), else a stage folder computed by one notebook is refused by the next.
_TINY_PIPELINE: dict[str, Any] = {  # a 20-class digits composite, 2 epochs, 1 seed: the batch runs in about a minute
    "pipeline_preset": "quick", "dataset": "digits-composite", "seeds": [0], "epochs": 2,
    "config_overrides": {"eval_every": 1, "dataset_options": {
        "num_classes": 20, "train_per_class": 20, "val_per_class": 5, "query_per_class": 5, "database_per_class": 20,
    }},
}  # fmt: skip
_QUICK_PIPELINE: dict[str, Any] = {  # shc.pipeline.preset("quick"): 100-class digits composite, small CNN
    "pipeline_preset": "quick", "dataset": "digits-composite", "seeds": [0, 1, 2], "epochs": None,
    "config_overrides": {},
}  # fmt: skip
_PAPER_METHODS = ["dpsh", "dtsh", "hashnet", "greedyhash", "idhn", "csq", "mds", "lth", "orthohash", "shc"]  # Table 4
_CENTER_METHODS = ["random", "csq", "mds", "shc", "semantic"]
_ABLATION_METHODS = ["distance", "semantic", "shc"]  # Table 7: d only, S only, both (one loss)


def _paper(**parameters: Any) -> list[dict[str, Any]]:
    return [{"pipeline_preset": "paper", "dataset": dataset, "seeds": [0], "epochs": None, "config_overrides": {},
             **parameters} for dataset in PAPER_DATASETS]  # fmt: skip


NOTEBOOK_PARAMETERS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "00_center_geometry": {
        "tiny": [{"num_classes": 20, "bits": 16, "gv_classes": [10, 100, 1000], "gv_bits": [16, 32, 64]}],
        "quick": [{"num_classes": 100, "bits": 32}],
        "paper": [{"num_classes": 100, "bits": bits} for bits in (16, 32, 64)],
    },
    "01_similarity": {
        "tiny": [{**_TINY_PIPELINE, "top_pairs": 5}],
        "quick": [{**_QUICK_PIPELINE, "top_pairs": 15}],
        "paper": _paper(top_pairs=15),
    },
    "02_hash_centers": {
        "tiny": [{**_TINY_PIPELINE, "bits": [16], "methods": _CENTER_METHODS}],
        "quick": [{**_QUICK_PIPELINE, "bits": [16, 32, 64], "methods": _CENTER_METHODS}],
        "paper": _paper(bits=[16, 32, 64], methods=_CENTER_METHODS),
    },
    "03_train_hashing": {
        "tiny": [{**_TINY_PIPELINE, "bits": [16], "methods": ["mds", "shc"]}],
        "quick": [{**_QUICK_PIPELINE, "bits": [16, 32, 64], "methods": ["random", "csq", "mds", "shc"]}],
        "paper": _paper(bits=[16, 32, 64], methods=_PAPER_METHODS),
    },
    "04_retrieval": {
        "tiny": [{**_TINY_PIPELINE, "bits": [16], "methods": ["mds", "shc"], "example_methods": ["mds", "shc"],
                  "example_queries": 3, "example_k": 5}],
        "quick": [{**_QUICK_PIPELINE, "bits": [16, 32, 64], "methods": ["random", "csq", "mds", "shc"],
                   "example_methods": ["mds", "shc"], "example_queries": 6, "example_k": 10}],
        "paper": _paper(bits=[16, 32, 64], methods=_PAPER_METHODS, example_methods=["mds", "shc"], example_queries=6,
                        example_k=10),
    },
    "05_ablations": {
        "tiny": [{**_TINY_PIPELINE, "bits": [16], "methods": _ABLATION_METHODS}],
        "quick": [{**_QUICK_PIPELINE, "bits": [16, 32, 64], "methods": _ABLATION_METHODS}],
        "paper": _paper(bits=[16, 32, 64], methods=_ABLATION_METHODS),
    },
    "06_baselines": {
        "tiny": [{**_TINY_PIPELINE, "bits": [16], "methods": ["dpsh", "greedyhash", "orthohash", "shc"]}],
        "quick": [{**_QUICK_PIPELINE, "bits": [16, 32, 64], "methods": _PAPER_METHODS}],
        "paper": _paper(bits=[16, 32, 64], methods=_PAPER_METHODS),
    },
}  # fmt: skip

#: Command-line overrides -> the notebook parameter they set: the first name in the tuple
#: that the notebook declares. A list-valued parameter receives the whole list; a scalar one
#: gets one report per value.
OVERRIDE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset",),
    "bits": ("bits",),
    "methods": ("methods",),
    "seeds": ("seeds", "seed"),
    "epochs": ("epochs",),
}

SUMMARY_FILE = "summary.json"
RECORD_FILE = "run.json"
INDEX_FILE = "index.html"
KERNEL_LOG_FILE = "kernel.log"
RUNNER_PARAMETERS = ("output_dir", "run_dir")


# --------------------------------------------------------------------------------------
# The summary convention
# --------------------------------------------------------------------------------------


def publish_summary(output_dir: str | os.PathLike, summary: Mapping[str, Any]) -> Path:
    """Publish a notebook's headline numbers; the index shows them in one line.

    Call it at the end of a notebook, e.g.
    ``publish_summary(output_dir, {"mAP@ALL (shc)": 0.812, "d_min (shc)": 10})``. Writes
    ``output_dir/summary.json`` atomically, keeping the insertion order.

    Parameters
    ----------
    output_dir : str or PathLike
        The notebook's ``output_dir`` parameter.
    summary : mapping str -> number or str
        Headline name -> value; numpy scalars are accepted. Keep it to a handful of entries.
    """
    if not isinstance(summary, Mapping) or not summary:
        raise ValueError("summary must be a non-empty mapping name -> number or string, e.g. {'mAP@ALL': 0.81}.")
    clean = {}
    for name, value in summary.items():
        if not isinstance(name, str):
            raise TypeError(f"summary names must be strings, got {name!r}.")
        if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # numpy / torch scalars
            value = value.item()
        if not isinstance(value, (bool, int, float, str)):
            raise TypeError(f"summary[{name!r}] must be a number or string, got {type(value).__name__}.")
        if isinstance(value, float) and not math.isfinite(value):
            value = str(value)  # JSON has no NaN/inf; keep it visible instead of failing the report
        clean[name] = value
    path = Path(output_dir) / SUMMARY_FILE
    _write_text(path, json.dumps(clean, indent=2) + "\n")
    return path


def read_summary(output_dir: str | os.PathLike) -> dict[str, Any] | None:
    """Return the summary a notebook published in ``output_dir``, or None if there is none."""
    path = Path(output_dir) / SUMMARY_FILE
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def format_summary(summary: Mapping[str, Any] | None) -> str:
    """One line, ``name value · name value``; floats with 4 significant digits."""
    if not summary:
        return ""
    return " · ".join(f"{name} {value:.4g}" if isinstance(value, float) else f"{name} {value}"
                      for name, value in summary.items())  # fmt: skip


# --------------------------------------------------------------------------------------
# Planning: presets x overrides -> jobs
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ReportJob:
    """One notebook execution: a notebook, a preset and one parameter set."""

    notebook: str  #: notebook stem, e.g. "00_center_geometry"
    preset: str
    parameters: dict[str, Any] = field(hash=False)  #: without output_dir / run_dir
    variant: str = ""  #: sub-folder name when the notebook has several parameter sets
    ignored_overrides: tuple[str, ...] = ()  #: command-line overrides the notebook does not declare

    @property
    def name(self) -> str:
        return f"{self.notebook}/{self.variant}" if self.variant else self.notebook

    def output_dir(self, output_root: str | os.PathLike) -> Path:
        """``<output_root>/<preset>/<notebook>[/<variant>]``."""
        directory = Path(output_root) / self.preset / self.notebook
        return directory / self.variant if self.variant else directory


def default_notebooks_dir() -> Path:
    """``notebooks/`` of the repository containing this package, else of the working directory."""
    beside_package = Path(__file__).resolve().parent.parent / "notebooks"
    return beside_package if beside_package.is_dir() else Path.cwd() / "notebooks"


def apply_overrides(
    parameter_sets: Sequence[Mapping[str, Any]],
    overrides: Mapping[str, Sequence[Any]],
    declared: Mapping[str, Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """Apply command-line overrides to a notebook's parameter sets.

    Parameters
    ----------
    parameter_sets : sequence of dict
        The preset's parameter sets for one notebook.
    overrides : mapping option -> list of values
        E.g. ``{"bits": [16, 32]}``; options are the keys of :data:`OVERRIDE_PARAMETERS`.
    declared : mapping name -> papermill parameter info
        The notebook's declared parameters (:func:`declared_parameters`); the ``default`` text
        tells list-valued parameters (``[...]``) from scalar ones.

    Returns
    -------
    list of dict
        A list-valued parameter receives the whole list in every set; a scalar one multiplies the
        sets, one per value. Sets made identical by an override are merged (first order kept).
        Options the notebook does not declare are ignored.
    """
    result = [dict(parameters) for parameters in parameter_sets]
    for option, values in overrides.items():
        if option not in OVERRIDE_PARAMETERS:
            raise ValueError(f"unknown override {option!r}; known: {sorted(OVERRIDE_PARAMETERS)}.")
        values = list(values)
        if not values:
            continue
        name = next((n for n in OVERRIDE_PARAMETERS[option] if n in declared), None)
        if name is None:
            continue
        if str(declared[name].get("default", "")).lstrip().startswith(("[", "(")):
            result = [{**parameters, name: values} for parameters in result]
        else:
            result = [{**parameters, name: value} for parameters in result for value in values]
    unique: dict[str, dict[str, Any]] = {}
    for parameters in result:
        unique.setdefault(_canonical(parameters), parameters)
    return list(unique.values())


def variant_names(parameter_sets: Sequence[Mapping[str, Any]]) -> list[str]:
    """Folder names telling parameter sets apart (``""`` for a single set), e.g. ``bits-32``."""
    if len(parameter_sets) <= 1:
        return [""] * len(parameter_sets)
    keys = sorted({key for parameters in parameter_sets for key in parameters})
    differing = [k for k in keys if len({_canonical(p.get(k)) for p in parameter_sets}) > 1]
    names = ["_".join(f"{key}-{_slug(parameters.get(key))}" for key in differing) for parameters in parameter_sets]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates or not all(names):
        raise ValueError(f"identical parameter sets in one preset ({duplicates or names}); remove the duplicates.")
    return names


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _slug(value: Any) -> str:
    text = "-".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-") or "none"


def plan_jobs(
    preset: str,
    *,
    only: Sequence[str] | None = None,
    overrides: Mapping[str, Sequence[Any]] | None = None,
    notebooks_dir: str | os.PathLike | None = None,
    table: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]] | None = None,
) -> list[ReportJob]:
    """List the notebook executions of a preset, in table order.

    Parameters
    ----------
    preset : str
        A preset name present in the table (see :data:`PRESETS`).
    only : sequence of str, optional
        Notebook stems (or unique prefixes such as "00") to run; default: all.
    overrides : mapping, optional
        Command-line overrides, see :func:`apply_overrides`.
    notebooks_dir : path, optional
        Where the notebooks live (default :func:`default_notebooks_dir`).
    table : mapping, optional
        The report table (default :data:`NOTEBOOK_PARAMETERS`).
    """
    table = NOTEBOOK_PARAMETERS if table is None else table
    notebooks_dir = Path(notebooks_dir) if notebooks_dir is not None else default_notebooks_dir()
    known_presets = sorted({name for presets in table.values() for name in presets})
    if preset not in known_presets:
        raise ValueError(f"unknown preset {preset!r}; known presets: {known_presets}.")
    stems = _select_notebooks(list(table), only)
    jobs = []
    for stem in stems:
        if preset not in table[stem]:
            continue
        path = notebooks_dir / f"{stem}.ipynb"
        if not path.is_file():
            raise FileNotFoundError(f"notebook {path} listed in the report table does not exist; check --notebooks.")
        declared = declared_parameters(path)
        parameter_sets = apply_overrides(table[stem][preset], overrides or {}, declared)
        ignored = tuple(
            option for option, values in (overrides or {}).items()
            if values and not any(name in declared for name in OVERRIDE_PARAMETERS.get(option, ()))
        )  # fmt: skip
        for parameters, variant in zip(parameter_sets, variant_names(parameter_sets)):
            jobs.append(ReportJob(stem, preset, parameters, variant, ignored))
    return jobs


def declared_parameters(notebook_path: str | os.PathLike) -> dict[str, dict[str, str]]:
    """Parameters declared in a notebook's ``parameters`` cell, as papermill parses them.

    Returns name -> ``{"name", "inferred_type_name", "default", "help"}`` (``default`` is the source
    text of the value); empty when there is no cell tagged ``parameters``.
    """
    import nbformat
    from papermill.translators import PythonTranslator

    notebook = nbformat.read(str(notebook_path), as_version=4)
    cell = next((c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])), None)
    return {} if cell is None else {p.name: p._asdict() for p in PythonTranslator.inspect(cell)}


def _select_notebooks(stems: list[str], only: Sequence[str] | None) -> list[str]:
    if not only:
        return stems
    selected = []
    for request in only:
        request = Path(request).stem  # accept "notebooks/00_center_geometry.ipynb" too
        matches = [stem for stem in stems if stem == request] or [stem for stem in stems if stem.startswith(request)]
        if len(matches) != 1:
            problem = "matches none" if not matches else f"is ambiguous ({matches})"
            raise ValueError(f"--only {request!r} {problem} of the report notebooks: {stems}.")
        selected.extend(m for m in matches if m not in selected)
    return [stem for stem in stems if stem in selected]


# --------------------------------------------------------------------------------------
# Kernel: always the interpreter running the reports
# --------------------------------------------------------------------------------------


def current_interpreter_kernel_spec():
    """Kernel spec running ``ipykernel`` in *this* interpreter, importing *this* ``shc``.

    Installed kernelspecs (``jupyter kernelspec list``) are not consulted: a "python3" spec of
    another environment would silently run the notebooks with other packages, and a fresh venv
    may have none. The kernel's ``PYTHONPATH`` starts with the folder holding this ``shc``
    package, so an uninstalled checkout works too, and matplotlib uses the inline backend so
    figures land in the notebook (and the HTML) even when ``MPLBACKEND`` is set to e.g. Agg.
    """
    from jupyter_client.kernelspec import KernelSpec

    package_parent = str(Path(__file__).resolve().parent.parent)
    python_path = os.pathsep.join([package_parent, *filter(None, [os.environ.get("PYTHONPATH")])])
    return KernelSpec(
        argv=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        display_name=f"Python {sys.version_info.major}.{sys.version_info.minor} (shc reports)",
        language="python",
        interrupt_mode="signal",
        env={"PYTHONPATH": python_path, "MPLBACKEND": "module://matplotlib_inline.backend_inline"},
    )


def _kernel_manager_class(kernel_log: Path | None = None) -> type:
    """A kernel manager class starting :func:`current_interpreter_kernel_spec` whatever kernel is asked for.

    With ``kernel_log``, the kernel process's own stdout/stderr (start-up warnings, crashes; not the
    notebook's output, which travels over the Jupyter protocol) go to that file instead of the console.
    """
    from jupyter_client import AsyncKernelManager

    class CurrentInterpreterKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            if self._kernel_spec is None:
                self._kernel_spec = current_interpreter_kernel_spec()
            return self._kernel_spec

        async def start_kernel(self, **kwargs):
            if kernel_log is None:
                return await super().start_kernel(**kwargs)
            with open(kernel_log, "wb") as log:  # the kernel process keeps its own handle
                kwargs.setdefault("stdout", log)
                kwargs.setdefault("stderr", log)
                return await super().start_kernel(**kwargs)

    return CurrentInterpreterKernelManager


# --------------------------------------------------------------------------------------
# Executing one report
# --------------------------------------------------------------------------------------


@dataclass
class ReportResult:
    """Outcome of one :class:`ReportJob`."""

    job: ReportJob
    status: str  #: "ok", "failed" or "skipped" (up to date, see ``skip_existing``)
    seconds: float
    output_dir: Path
    error: dict[str, Any] | None = None  #: type, message, cell (index, execution count, first line)
    summary: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"


def execute_report(
    job: ReportJob,
    *,
    notebooks_dir: str | os.PathLike | None = None,
    output_root: str | os.PathLike = "reports",
    run_root: str | os.PathLike = "runs",
    timeout: float | None = None,
    skip_existing: bool = False,
) -> ReportResult:
    """Execute one notebook with papermill, render its HTML and write its ``run.json`` record.

    Failures in the notebook do not raise: they are returned in :attr:`ReportResult.error` and
    the partial executed notebook (with papermill's error banner) is kept and rendered.
    ``KeyboardInterrupt`` propagates; temporary files are removed and previous reports stay intact.

    Parameters
    ----------
    job : ReportJob
    notebooks_dir : path, optional
        Where ``<job.notebook>.ipynb`` lives (default :func:`default_notebooks_dir`).
    output_root : path
        Reports go to ``<output_root>/<preset>/<notebook>[/<variant>]``.
    run_root : path
        The notebooks get ``run_dir = <run_root>/<preset>`` for their pipeline artifacts.
    timeout : float, optional
        Per-cell time limit in seconds (default: none).
    skip_existing : bool
        Return "skipped" without executing when the previous run of the same parameters
        succeeded and its HTML is newer than the notebook and every file of the ``shc`` package.
    """
    notebooks_dir = Path(notebooks_dir) if notebooks_dir is not None else default_notebooks_dir()
    notebook_path = notebooks_dir / f"{job.notebook}.ipynb"
    output_dir = job.output_dir(output_root).resolve()
    parameters = {
        **job.parameters,
        "output_dir": str(output_dir),
        "run_dir": str((Path(run_root) / job.preset).resolve()),
    }
    files = _report_files(job)
    if skip_existing and _is_up_to_date(output_dir, files, notebook_path, parameters):
        summary = read_summary(output_dir)
        return ReportResult(job, "skipped", 0.0, output_dir, summary=summary)

    output_dir.mkdir(parents=True, exist_ok=True)
    started, started_wall = time.perf_counter(), time.time()
    error, written = _execute_notebook(notebook_path, output_dir / files["notebook"], parameters, output_dir, timeout)
    if written:  # render the partial notebook of a failed run too: it shows the traceback in context
        render_error = _render_both(output_dir, files, job)
        error = error or render_error
    seconds = time.perf_counter() - started
    if not _modified_since(output_dir / SUMMARY_FILE, started_wall):  # not published by this run
        (output_dir / SUMMARY_FILE).unlink(missing_ok=True)
    result = ReportResult(job, "failed" if error else "ok", seconds, output_dir, error, read_summary(output_dir))
    current = {key: name for key, name in files.items() if _modified_since(output_dir / name, started_wall)}
    _write_record(result, parameters, current, notebook_path)
    return result


def _modified_since(path: Path, timestamp: float) -> bool:
    return path.is_file() and path.stat().st_mtime >= timestamp - 0.5  # coarse file-system clocks


def _report_files(job: ReportJob) -> dict[str, str]:
    return {
        "notebook": f"{job.notebook}.ipynb",
        "html": f"{job.notebook}.html",
        "report": f"{job.notebook}-report.html",
        "kernel_log": KERNEL_LOG_FILE,
    }


def _execute_notebook(
    notebook_path: Path, executed_path: Path, parameters: dict, output_dir: Path, timeout: float | None
) -> tuple[dict[str, Any] | None, bool]:
    """Run papermill into a temporary file moved onto ``executed_path``.

    Returns the error (None on success) and whether an executed notebook was written (papermill
    writes the partial notebook of a failing run too). The notebook replaces ``executed_path`` only
    once papermill is done, so an interrupted batch leaves the previous executed notebook intact.
    """
    import papermill
    from papermill.exceptions import PapermillExecutionError

    error = None
    with atomic_path(executed_path, suffix=".tmp.ipynb") as temporary:  # papermill wants .ipynb names
        try:
            papermill.execute_notebook(
                str(notebook_path),
                str(temporary),
                parameters=parameters,
                kernel_name="python3",
                kernel_manager_class=_kernel_manager_class(output_dir / KERNEL_LOG_FILE),
                progress_bar=False,
                cwd=str(output_dir),
                execution_timeout=timeout,
            )
        except PapermillExecutionError as failure:  # papermill saved the partial notebook first
            first_line = next((line for line in failure.source.splitlines() if line.strip()), "")
            error = {
                "type": failure.ename,
                "message": _strip_ansi(str(failure.evalue)),
                "cell_index": failure.cell_index,
                "execution_count": failure.exec_count,
                "cell_source": first_line[:200],
            }
        except Exception as failure:  # kernel died, timeout, bad parameters: report, keep going
            error = {"type": type(failure).__name__, "message": _strip_ansi(str(failure)).strip()[:2000]}
        written = temporary.exists()
    return error, written


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def _render_both(output_dir: Path, files: dict[str, str], job: ReportJob) -> dict | None:
    try:
        notebook = output_dir / files["notebook"]
        render_html(notebook, output_dir / files["html"], include_input=True)
        render_html(notebook, output_dir / files["report"], include_input=False, header=_report_header(job))
    except Exception as failure:
        return {"type": type(failure).__name__, "message": f"HTML conversion failed: {failure}"}
    return None


def _report_header(job: ReportJob) -> str:
    shown = ", ".join(f"`{key}={value!r}`" for key, value in job.parameters.items())
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"*Report generated by `python -m shc.reports --preset {job.preset}` on {stamp}. Parameters: {shown}.*"


def render_html(
    notebook_path: str | os.PathLike,
    html_path: str | os.PathLike,
    *,
    include_input: bool = True,
    header: str | None = None,
) -> Path:
    """Convert an executed notebook to a standalone HTML file (atomically), figures embedded as PNG.

    Parameters
    ----------
    notebook_path, html_path : path
    include_input : bool
        False gives the reading version: outputs and markdown only, no code or prompts.
    header : str, optional
        Markdown shown as the first cell (e.g. the parameters of the run).
    """
    import nbformat

    notebook = nbformat.read(str(notebook_path), as_version=4)
    if header:
        notebook = copy.deepcopy(notebook)
        notebook.cells.insert(0, nbformat.v4.new_markdown_cell(header))
    body, _ = _html_exporter(include_input).from_notebook_node(notebook)
    return _write_text(Path(html_path), body)


@functools.cache
def _html_exporter(include_input: bool):
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    if not include_input:
        exporter.exclude_input = True
        exporter.exclude_input_prompt = True
        exporter.exclude_output_prompt = True
    return exporter


def _is_up_to_date(output_dir: Path, files: dict[str, str], notebook_path: Path, parameters: dict) -> bool:
    record = _read_record(output_dir / RECORD_FILE)
    html_path = output_dir / files["report"]
    if not record or record.get("status") != "ok" or record.get("parameters") != _jsonable(parameters):
        return False
    if not html_path.is_file():
        return False
    package_files = Path(__file__).resolve().parent.rglob("*.py")
    newest_source = max(path.stat().st_mtime for path in [notebook_path, *package_files])
    return html_path.stat().st_mtime > newest_source


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def _write_record(result: ReportResult, parameters: dict, files: dict[str, str], notebook_path: Path) -> Path:
    """Write ``run.json``: what ran, how it went, and which files this run wrote (the index reads it)."""
    from shc import __version__

    record = {
        "notebook": result.job.notebook,
        "preset": result.job.preset,
        "variant": result.job.variant,
        "title": _notebook_title(notebook_path),
        "status": result.status,
        "seconds": round(result.seconds, 3),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "shc_version": __version__,
        "python": sys.executable,
        "parameters": _jsonable(parameters),
        "error": result.error,
        "files": files,  # only those written by this run
    }
    return _write_text(result.output_dir / RECORD_FILE, json.dumps(record, indent=2) + "\n")


def _read_record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _notebook_title(notebook_path: Path) -> str:
    import nbformat

    try:
        notebook = nbformat.read(str(notebook_path), as_version=4)
    except (OSError, ValueError):
        return notebook_path.stem
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            heading = re.search(r"^#\s+(.+)$", cell.source, flags=re.MULTILINE)
            if heading:
                return heading.group(1).strip()
    return notebook_path.stem


def _write_text(path: Path, text: str) -> Path:
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------------------
# Index
# --------------------------------------------------------------------------------------

_INDEX_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 80rem;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .45rem .6rem; border-bottom: 1px solid #ddd; }
th { background: #f4f4f4; }
.ok { color: #1a7f37; font-weight: 600; } .failed { color: #cf222e; font-weight: 600; }
.error { color: #cf222e; font-family: ui-monospace, monospace; font-size: .85em; white-space: pre-wrap; }
.params, .muted { color: #666; font-size: .85em; }
code { font-size: .9em; }
"""


def write_index(preset_dir: str | os.PathLike) -> Path:
    """(Re)write ``<preset_dir>/index.html`` from every ``run.json`` record below it.

    Each row links the reading version, the version with code and the executed notebook, shows
    the status (failed rows name the error and the cell, and link the partial notebook), the
    headline numbers of ``summary.json``, the parameters and the execution time.
    """
    preset_dir = Path(preset_dir)
    records = []
    for record_path in sorted(preset_dir.rglob(RECORD_FILE)):
        record = _read_record(record_path)
        if record:
            records.append((record_path.parent.relative_to(preset_dir), record))
    rows = "\n".join(_index_row(preset_dir, folder, record, read_summary(preset_dir / folder))
                     for folder, record in records)
    failed = sum(record.get("status") == "failed" for _, record in records)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    status_line = f"{len(records)} reports, {failed} failed" if records else "no reports yet"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>shc reports: {html.escape(preset_dir.name)}</title>
<style>{_INDEX_STYLE}</style></head>
<body>
<h1>shc reports: preset <code>{html.escape(preset_dir.name)}</code></h1>
<p class="muted">{status_line}; index written {stamp}.</p>
<table>
<thead><tr><th>report</th><th>status</th><th>headline numbers</th><th>time</th><th>files</th></tr></thead>
<tbody>
{rows}
</tbody></table>
</body></html>
"""
    return _write_text(preset_dir / INDEX_FILE, page)


def _plain_title(title: str) -> str:
    """A notebook heading without TeX markup, for the index (``$\\mathbf{S}$`` -> ``S``)."""
    return re.sub(r"\$([^$]*)\$", lambda m: re.sub(r"\\[a-zA-Z]+\{([^}]*)\}", r"\1", m.group(1)), title)


def _index_row(preset_dir: Path, folder: Path, record: dict, summary: dict | None) -> str:
    def link(key: str, text: str) -> str:  # only files that are there (a published copy may omit some)
        name = record.get("files", {}).get(key)
        if not name or not (preset_dir / folder / name).exists():
            return ""
        return f'<a href="{html.escape(quote((folder / name).as_posix()))}">{text}</a>'

    def links(*keys_and_texts: tuple[str, str]) -> str:
        return " · ".join(filter(None, (link(key, text) for key, text in keys_and_texts)))

    title = html.escape(_plain_title(record.get("title") or record.get("notebook", str(folder))))
    name = html.escape(folder.as_posix())
    parameters = {k: v for k, v in (record.get("parameters") or {}).items() if k not in RUNNER_PARAMETERS}
    shown = html.escape(", ".join(f"{k}={json.dumps(v)}" for k, v in parameters.items()))
    heading = link("report", title) or title
    status = record.get("status", "unknown")
    status_cell = f'<span class="{html.escape(status)}">{html.escape(status)}</span>'
    error = record.get("error")
    if error:
        first_line = f"\n{error['cell_source']}" if error.get("cell_source") else ""
        detail = _describe_error(error, full_message=True) + first_line
        status_cell += f'<div class="error">{html.escape(detail)}</div>'
        partial = links(("report", "report"), ("notebook", "ipynb"), ("kernel_log", "kernel log"))
        if partial:
            status_cell += f'<div class="muted">partial run: {partial}</div>'
    files = links(("report", "report"), ("html", "with code"), ("notebook", "ipynb"))
    return (
        f"<tr><td>{heading}<div class='muted'><code>{name}</code></div><div class='params'>{shown}</div></td>"
        f"<td>{status_cell}</td><td>{html.escape(format_summary(summary))}</td>"
        f"<td>{record.get('seconds', 0):.1f} s</td><td>{files}</td></tr>"
    )


# --------------------------------------------------------------------------------------
# Running a preset
# --------------------------------------------------------------------------------------


def run_reports(
    preset: str,
    *,
    only: Sequence[str] | None = None,
    overrides: Mapping[str, Sequence[Any]] | None = None,
    output_root: str | os.PathLike = "reports",
    run_root: str | os.PathLike = "runs",
    notebooks_dir: str | os.PathLike | None = None,
    table: Mapping[str, Mapping[str, Sequence[Mapping[str, Any]]]] | None = None,
    skip_existing: bool = False,
    timeout: float | None = None,
    log: Callable[[str], None] = print,
) -> list[ReportResult]:
    """Execute every report of a preset (one after the other), then write the index.

    A failing notebook is logged and recorded; the others still run. See :func:`plan_jobs` and
    :func:`execute_report` for the arguments. Returns one result per job, in order.
    """
    jobs = plan_jobs(preset, only=only, overrides=overrides, notebooks_dir=notebooks_dir, table=table)
    preset_dir = Path(output_root) / preset
    results = []
    total_started = time.perf_counter()
    for number, job in enumerate(jobs, start=1):
        prefix = f"[{number}/{len(jobs)}] {job.name}"
        ignored = "".join(f" (--{option} does not apply)" for option in job.ignored_overrides)
        log(f"{prefix}: running ...{ignored}")
        result = execute_report(
            job,
            notebooks_dir=notebooks_dir,
            output_root=output_root,
            run_root=run_root,
            timeout=timeout,
            skip_existing=skip_existing,
        )
        results.append(result)
        log(f"{prefix}: {_describe(result)}")
        write_index(preset_dir)  # keep the index current, so it is useful while a long batch runs
    index = write_index(preset_dir)
    failed = [result for result in results if not result.ok]
    elapsed = time.perf_counter() - total_started
    log(f"{len(results) - len(failed)}/{len(results)} reports ok in {elapsed:.1f} s; index: {index}")
    for result in failed:
        log(f"FAILED {result.job.name}: {_describe_error(result.error)} (see {result.output_dir})")
    return results


def _describe(result: ReportResult) -> str:
    if result.status == "skipped":
        return "skipped (up to date)"
    if result.status == "failed":
        return f"FAILED after {result.seconds:.1f} s: {_describe_error(result.error)}"
    summary = format_summary(result.summary)
    return f"ok in {result.seconds:.1f} s" + (f"  [{summary}]" if summary else "")


def _describe_error(error: dict | None, full_message: bool = False) -> str:
    """``ValueError in cell In [7]: message`` (the last line of the message unless ``full_message``)."""
    if not error:
        return ""
    cell = f" in cell In [{error['execution_count']}]" if error.get("execution_count") is not None else ""
    message = (error.get("message") or "").strip()
    if not full_message:
        message = message.splitlines()[-1] if message else ""
    return f"{error.get('type')}{cell}: {message}"


# --------------------------------------------------------------------------------------
# Keeping committed notebooks clean
# --------------------------------------------------------------------------------------

_VOLATILE_METADATA = ("papermill", "widgets", "execution")


def strip_notebook(path: str | os.PathLike) -> bool:
    """Remove outputs, execution counts and run metadata from a notebook in place.

    Returns True when the file changed. Cell ids and tags (``parameters``) are kept.
    """
    import nbformat

    path = Path(path)
    notebook = nbformat.read(str(path), as_version=4)
    before = nbformat.writes(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in (*_VOLATILE_METADATA, "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
    for key in _VOLATILE_METADATA:
        notebook.metadata.pop(key, None)
    after = nbformat.writes(notebook)
    if after == before:
        return False
    _write_text(path, after if after.endswith("\n") else after + "\n")
    return True


def check_notebook(path: str | os.PathLike) -> list[str]:
    """Problems that keep a notebook from being a clean, runnable report (empty list: none).

    Checks: the first code cell is tagged ``parameters``; papermill understands every assignment in
    it (one ``name = value  # help`` per line, no second ``=`` on the line) and it declares
    ``output_dir`` and ``run_dir``; no code cell has outputs or an execution count.
    """
    import nbformat

    notebook = nbformat.read(str(path), as_version=4)
    problems = []
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if not code_cells or "parameters" not in code_cells[0].metadata.get("tags", []):
        problems.append("the first code cell must be tagged 'parameters'")
    else:
        declared = set(declared_parameters(path))
        assigned = re.findall(r"^(\w+)\s*(?::[^=]+)?=", code_cells[0].source, flags=re.MULTILINE)
        unparsed = [name for name in assigned if name not in declared]
        if unparsed:
            problems.append(f"papermill cannot parse the parameters {unparsed} (keep '=' out of their comments)")
        missing = [name for name in RUNNER_PARAMETERS if name not in declared]
        if missing:
            problems.append(f"the parameters cell must declare {missing}")
    fix = "run python -m shc.reports --strip-notebooks"
    with_outputs = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" and cell.outputs]
    with_counts = [i for i, cell in enumerate(notebook.cells)
                   if cell.cell_type == "code" and cell.execution_count is not None]  # fmt: skip
    if with_outputs:
        problems.append(f"cells {with_outputs} have outputs ({fix})")
    if with_counts:
        problems.append(f"cells {with_counts} have execution counts ({fix})")
    return problems


# --------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m shc.reports",
        description="Execute the report notebooks with papermill and render them to HTML with an index.",
    )
    parser.add_argument("--preset", default="quick", help=f"parameter preset: {', '.join(PRESETS)} (default quick)")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="notebook stems or prefixes, e.g. 00")
    parser.add_argument("--output", default="reports", help="report root: reports go to OUTPUT/PRESET/")
    parser.add_argument("--runs", default="runs", help="pipeline artifact root: notebooks get run_dir=RUNS/PRESET")
    parser.add_argument("--notebooks", default=None, help="notebook folder (default: the repository's notebooks/)")
    parser.add_argument("--dataset", nargs="+", help="override the dataset (several: one report each)")
    parser.add_argument("--bits", nargs="+", type=int, help="override the code lengths")
    parser.add_argument("--methods", nargs="+", help="override the methods")
    parser.add_argument("--seeds", nargs="+", type=int, help="override the seeds")
    parser.add_argument("--epochs", nargs=1, type=int, help="override the number of training epochs")
    parser.add_argument("--timeout", type=float, default=None, help="per-cell time limit in seconds (default none)")
    parser.add_argument("--skip-existing", action="store_true",
                        help="skip reports whose last run used the same parameters, succeeded, and is newer "
                             "than the notebook and the shc package")  # fmt: skip
    parser.add_argument("--list", action="store_true", help="print the planned reports and exit")
    parser.add_argument("--strip-notebooks", action="store_true", help="clear outputs of the notebooks and exit")
    parser.add_argument("--check-notebooks", action="store_true", help="check the notebooks are clean and exit")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (non-zero when a report failed)."""
    arguments = _parser().parse_args(argv)
    notebooks_dir = Path(arguments.notebooks) if arguments.notebooks else default_notebooks_dir()
    notebooks = sorted(notebooks_dir.glob("*.ipynb"))
    if arguments.strip_notebooks:
        for path in notebooks:
            print(f"{path}: {'stripped' if strip_notebook(path) else 'already clean'}")
        return 0
    if arguments.check_notebooks:
        problems = {path: check_notebook(path) for path in notebooks}
        for path, found in problems.items():
            print(f"{path}: {'; '.join(found) if found else 'ok'}")
        return 1 if any(problems.values()) else 0

    overrides = {option: getattr(arguments, option) for option in OVERRIDE_PARAMETERS if getattr(arguments, option)}
    if arguments.list:
        for job in plan_jobs(arguments.preset, only=arguments.only, overrides=overrides, notebooks_dir=notebooks_dir):
            print(f"{job.name}: {json.dumps(job.parameters)}")
        return 0
    results = run_reports(
        arguments.preset,
        only=arguments.only,
        overrides=overrides,
        output_root=arguments.output,
        run_root=arguments.runs,
        notebooks_dir=notebooks_dir,
        skip_existing=arguments.skip_existing,
        timeout=arguments.timeout,
    )
    return 0 if all(result.ok for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
