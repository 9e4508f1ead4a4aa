"""Executing one report: papermill into a building folder, HTML, a ``run.json`` record, then an atomic swap.

A report is built in a temporary sibling folder and moved into place only when it succeeded, so the last
good report is never lost: a failed run leaves it untouched and keeps its build beside it (``<page>/.failed/``:
the partial notebook, its rendering and the files it wrote; described in ``failure.json``); an
interrupted run leaves nothing but the old report. The output folder is locked while a report is built,
so two batches writing into one folder are refused instead of mixing their files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from shc._io import atomic_path, exclusive_lock, jsonable, log_file, write_text
from shc.findings import FINDINGS_FILE
from shc.provenance import Timer
from shc.reports.export import notebook_title, render_html
from shc.reports.plan import ReportJob, default_notebooks_dir
from shc.reports.summary import read_summary

__all__ = ["FAILURE_FILE", "KERNEL_LOG_FILE", "RECORD_FILE", "ReportResult", "current_interpreter_kernel_spec",
           "describe_error", "execute_report", "inputs_digest", "output_lock", "read_record"]

RECORD_FILE = "run.json"
#: The zip of every CSV and record of a preset's reports (:func:`shc.reports.bundle.write_bundle`).
BUNDLE_FILE = "bundle.zip"
FAILURE_FILE = "failure.json"
#: The folder, inside a page's, of a failed build kept beside the last good page (:func:`_keep_failure`).
FAILED_DIR = ".failed"
KERNEL_LOG_FILE = "kernel.log"


def current_interpreter_kernel_spec():
    """Kernel spec running ``ipykernel`` in *this* interpreter, importing *this* ``shc``.

    Installed kernelspecs (``jupyter kernelspec list``) are not consulted: a "python3" spec of
    another environment would silently run the notebooks with other packages, and a fresh venv
    may have none. The kernel's ``PYTHONPATH`` starts with the folder holding this ``shc``
    package, so an uninstalled checkout works too, and matplotlib uses the inline backend so
    figures land in the notebook (and the HTML) even when ``MPLBACKEND`` is set to e.g. Agg.
    """
    from jupyter_client.kernelspec import KernelSpec

    package_parent = str(Path(__file__).resolve().parents[2])
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
            with log_file(kernel_log) as log:  # the kernel process keeps its own handle
                kwargs.setdefault("stdout", log)
                kwargs.setdefault("stderr", log)
                return await super().start_kernel(**kwargs)

    return CurrentInterpreterKernelManager



@dataclass
class ReportResult:
    """Outcome of one :class:`ReportJob`."""

    job: ReportJob
    status: str  #: "ok", "failed" or "skipped" (up to date, see ``skip_existing``)
    seconds: float
    output_dir: Path
    error: dict[str, Any] | None = None  #: type, message, cell (index, execution count, first line)
    summary: dict[str, Any] | None = None
    failed_notebook: Path | None = None  #: the failing executed notebook, when one was written

    @property
    def ok(self) -> bool:
        return self.status != "failed"


def output_lock(folder: Path, what: str = "a report batch", name: str = ""):
    """Hold the lock ``folder/.{name}.lock`` (``folder/.lock`` without a name); a second holder is refused."""
    return exclusive_lock(Path(folder) / (f".{name}.lock" if name else ".lock"), f"{what} (pid {os.getpid()})",
                          f"{Path(folder) / name} is being written by {{holder}}; wait for it to finish or write "
                          "the reports elsewhere with --output.")


def execute_report(
    job: ReportJob,
    *,
    notebooks_dir: str | os.PathLike | None = None,
    output_root: str | os.PathLike = "reports",
    run_root: str | os.PathLike = "runs",
    timeout: float | None = None,
    skip_existing: bool = False,
    provenance: dict[str, Any] | None = None,
) -> ReportResult:
    """Execute one notebook with papermill, render its HTML and write its ``run.json`` record.

    Failures in the notebook do not raise: they are returned in :attr:`ReportResult.error`; the previous
    report (if any) stays, and the failed build is kept beside it in ``<page>/.failed/`` (when there is no
    previous report, the failed build takes its place, marked failed).
    ``KeyboardInterrupt`` propagates; the building folder is removed and the previous report stays intact.

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
        Per-cell time limit in seconds (default: none); must be positive.
    skip_existing : bool
        Return "skipped" without executing when the previous run of the same parameters succeeded, read the
        same runs with the same numbers (:func:`inputs_digest`), and its HTML is newer than the notebook and
        every file of the ``shc`` package.
    provenance : dict, optional
        Recorded in ``run.json`` (commit, versions, command; see :mod:`shc.provenance`).
    """
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"timeout must be a positive number of seconds (or None for no limit), got {timeout!r}.")
    notebooks_dir = Path(notebooks_dir) if notebooks_dir is not None else default_notebooks_dir()
    notebook_path = notebooks_dir / f"{job.notebook}.ipynb"
    if not notebook_path.is_file():
        raise FileNotFoundError(f"notebook {notebook_path} does not exist; check --notebooks.")
    # absolute, but never resolved through links: a record names the folders as the user gave them (issue 38)
    output_dir = Path(os.path.abspath(job.output_dir(output_root)))
    parameters = {**job.parameters, "output_dir": str(output_dir),
                  "run_dir": os.path.abspath(Path(run_root) / job.preset)}
    files = _report_files(job)
    inputs = inputs_digest(job, run_root)
    if skip_existing and _is_up_to_date(output_dir, files, notebook_path, parameters, inputs):
        return ReportResult(job, "skipped", 0.0, output_dir, summary=read_summary(output_dir))

    building = output_dir.with_name(f".{output_dir.name}.building-{os.getpid()}")
    with output_lock(output_dir.parent, f"the report {job.name}", output_dir.name):
        shutil.rmtree(building, ignore_errors=True)
        building.mkdir(parents=True)
        try:
            with Timer() as timer:  # wall and CPU time, the kernel process's included
                # The notebook writes into the building folder; the record names the final folder.
                run_parameters = {**parameters, "output_dir": str(building)}
                error, written = _execute_notebook(notebook_path, building / files["notebook"], run_parameters,
                                                   building, timeout)
                if written:  # render the partial notebook of a failed run too: it shows the traceback in context
                    render_error = _render_both(building, files, job, Path(os.path.abspath(output_root)), output_dir)
                    error = error or render_error
            seconds = timer.wall_s
            provenance = {**(provenance or {}), "time": timer.as_dict()}
            if provenance.get("command"):
                provenance["command"] = _relative_command(provenance["command"], output_dir)
            status = "failed" if error else "ok"
            present = {key: name for key, name in files.items() if (building / name).is_file()}
            record = _record(job, status, seconds, _relative_parameters(parameters, output_dir), present,
                             notebook_path, error, provenance)
            record["files"] = {**_published(present), **_data_files(building)}
            record["local_files"] = {key: name for key, name in present.items() if key not in record["files"]}
            record["paths_relative_to"] = ("repository" if output_dir.is_relative_to(Path(__file__).resolve().parents[2])
                                           else "this report folder")
            record["inputs"] = inputs_digest(job, run_root)  # after the build: with what the page computed
            write_text(building / RECORD_FILE, json.dumps(record, indent=2) + "\n")
            previous_ok = (read_record(output_dir / RECORD_FILE) or {}).get("status") == "ok"
            failed_notebook = None
            if status == "ok" or not previous_ok:
                if job.variant and status == "ok":  # a failed variant never costs the last good page
                    _retire_unvaried_page(output_dir.parent)
                _swap(building, output_dir)
                if status == "failed" and written:
                    failed_notebook = output_dir / files["notebook"]
            else:  # keep the last good report; put the failure beside it
                failed_notebook = _keep_failure(building, output_dir, files, record)
            if status == "ok":
                (output_dir / FAILURE_FILE).unlink(missing_ok=True)
        finally:
            shutil.rmtree(building, ignore_errors=True)
    summary = read_summary(output_dir) if status == "ok" else None
    return ReportResult(job, status, seconds, output_dir, error, summary, failed_notebook)


def _retire_unvaried_page(notebook_dir: Path) -> None:
    """Remove a page that an earlier build wrote straight into ``<preset>/<notebook>/`` (one parameter set) when the
    notebook now has variants (``<notebook>/bits-16/``, ...): left there, the old page's files would sit among the
    new variants and be listed by the index as a page of the set (issue 38). Variant folders (those holding a
    record), and the hidden building folders of variants built at the same time, stay."""
    if not (notebook_dir / RECORD_FILE).is_file():
        return
    shutil.rmtree(notebook_dir / FAILED_DIR, ignore_errors=True)  # the old page's kept failure goes with it
    for entry in notebook_dir.iterdir():
        if entry.name.startswith("."):
            continue
        if entry.is_dir() and ((entry / RECORD_FILE).is_file() or (entry / FAILURE_FILE).is_file()):
            continue  # a variant's page
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _swap(building: Path, output_dir: Path) -> None:
    """Move the finished ``building`` folder onto ``output_dir`` (the old one is removed after the move)."""
    old = output_dir.with_name(f".{output_dir.name}.old-{os.getpid()}")
    if output_dir.exists():
        os.replace(output_dir, old)
    try:
        os.replace(building, output_dir)
    except BaseException:  # interrupted between the two moves: the old report goes back, whole
        if old.exists() and not output_dir.exists():
            os.replace(old, output_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _keep_failure(building: Path, output_dir: Path, files: dict[str, str], record: dict) -> Path | None:
    """Keep a failed build beside the last good page, whole: the build folder becomes ``<page>/.failed/`` (its
    partial notebook, its rendering, and the figures and tables it wrote), so the failed page's links reach its own
    files. Kept as ``<stem>.failed.html`` beside the good page, it showed the good page's figures as its own. The
    build's ``run.json`` is left out (``failure.json`` beside the good page is its record), so no reader takes the
    folder for a page; hidden, it is not published (:func:`shc.reports.published.is_published`)."""
    stem = Path(files["notebook"]).stem
    for suffix in (".failed.ipynb", ".failed.html"):  # the layout before 2026-12-02: an earlier failure's files
        (output_dir / f"{stem}{suffix}").unlink(missing_ok=True)
    kept = output_dir / FAILED_DIR
    shutil.rmtree(kept, ignore_errors=True)  # an earlier failure's build is not this one's
    (building / RECORD_FILE).unlink(missing_ok=True)
    os.replace(building, kept)
    write_text(output_dir / FAILURE_FILE, json.dumps({**record, "files": {}}, indent=2) + "\n")
    return next((kept / files[key] for key in ("notebook", "html") if (kept / files[key]).is_file()), None)


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


def _render_both(building: Path, files: dict[str, str], job: ReportJob, output_root: Path,
                 output_dir: Path) -> dict | None:
    """Both HTML versions of the executed notebook in ``building``, linking assets as from ``output_dir``.

    MathJax and the stylesheet live once under ``<output_root>/_assets/`` for every preset (issue 38). The reading
    version opens with the run's parameters, a link to the index (and, for a preset that is not evidence, the
    smoke-scale notice) and ends with links to its tables, figure data, ``run.json`` and the preset's bundle."""
    try:
        notebook = building / files["notebook"]
        preset_dir = output_root / job.preset
        assets_root = output_root
        up = "../" * (len(output_dir.relative_to(preset_dir).parts) if output_dir.is_relative_to(preset_dir) else 1)
        for key, include_input, header, footer in (
                ("html", True, None, None),
                ("report", False, _report_header(job, up), _report_footer(building, up))):
            render_html(notebook, building / files[key], include_input=include_input, header=header, footer=footer,
                        assets_root=assets_root, page_path=output_dir / files[key])
    except Exception as failure:
        return {"type": type(failure).__name__, "message": f"HTML conversion failed: {failure}"}
    return None


def _report_header(job: ReportJob, up: str = "../") -> str:
    """The first cell of a reading page: where it belongs, what produced it, and whether its numbers are evidence."""
    shown = "; ".join(f"{key}: {_shown_value(value)}" for key, value in job.parameters.items())
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"[\u2190 all reports of the {job.preset} preset]({up}index.html) \u00b7 [run record](run.json)",
             "",
             f"*Report generated by `python -m shc.reports --preset {job.preset}` on {stamp}. Parameters: {shown}.*"]
    notice = smoke_notice(job.preset)
    if notice:
        lines += ["", f"> {notice}"]
    return "\n".join(lines)


def smoke_notice(preset: str) -> str | None:
    """The notice of a preset whose numbers are not evidence (:attr:`shc.presets.Preset.evidence`), else None."""
    from shc.presets import PRESETS

    try:
        if PRESETS.get(preset).evidence:
            return None
    except (KeyError, ValueError):
        pass
    return (f"**Smoke scale, not evidence.** The `{preset}` preset is small and short so that it runs in minutes: "
            "its numbers show that the code runs end to end, not how the methods compare. The evidence is in the "
            "reports of the standard presets.")


def _shown_value(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(_shown_value, value)) if value else "none"
    if isinstance(value, dict):
        return ", ".join(f"{k} = {_shown_value(v)}" for k, v in value.items()) if value else "none"
    if value is None:
        return "preset default"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _data_files(folder: Path) -> dict[str, list[str]]:
    """The tables and figure data a notebook wrote into ``folder`` (relative names, sorted)."""
    found = {}
    for key, sub in (("tables", "tables"), ("figure_data", "figures")):
        names = sorted(path.relative_to(folder).as_posix() for path in (folder / sub).glob("*")
                       if path.name.endswith((".csv", ".csv.xz", ".csv.gz")))
        if names:
            found[key] = names
    if (folder / "summary.json").is_file():
        found["summary"] = "summary.json"
    if (folder / FINDINGS_FILE).is_file():  # how each finding was derived: the report checker re-derives them
        found["findings"] = FINDINGS_FILE
    return found


def _published(files: dict[str, str]) -> dict[str, str]:
    from shc.reports.published import is_published

    return {key: name for key, name in files.items() if is_published(name)}


def _report_footer(building: Path, up: str) -> str:
    data = _data_files(building)

    def links(names: list[str]) -> str:
        return ", ".join(f"[{Path(name).name}]({name})" for name in names)

    lines = ["---", "", f"**Files of this report.** [Run record](run.json) (parameters, software versions, timing)"]
    if data.get("tables"):
        lines.append(f"\u00b7 tables: {links(data['tables'])}")
    if data.get("figure_data"):
        lines.append(f"\u00b7 the numbers behind each figure: {links(data['figure_data'])}")
    if data.get("findings"):
        lines.append(f"\u00b7 [how each finding was derived]({FINDINGS_FILE}) (re-derived by python -m shc.reports.check)")
    lines.append(f"\u00b7 [\u2190 index]({up}index.html)")
    return "\n".join(lines)


#: How a record names a folder outside the repository when its paths are relative to the repository.
OUTSIDE_REPOSITORY = "<outside the repository>"


def _record_path(value: str, output_dir: Path) -> str:
    """A path as a record keeps it: relative to the repository when the report folder is in it (a folder outside
    the repository then reads ``<outside the repository>/<its name>``: a clone has no such folder, and the machine's
    path is not published), else relative to the report folder. Links are not followed (``runs/`` linked to a
    folder in the home directory stays ``runs/...``)."""
    repository = Path(__file__).resolve().parents[2]
    path = Path(os.path.abspath(os.path.expanduser(value)))  # not resolve(): a link stays the name the user gave
    if not output_dir.is_relative_to(repository):
        return Path(os.path.relpath(path, output_dir)).as_posix()
    if not path.is_relative_to(repository):
        return f"{OUTSIDE_REPOSITORY}/{path.name}"
    return Path(os.path.relpath(path, repository)).as_posix()


def _relative_command(command: list, output_dir: Path) -> list:
    """The command line with absolute paths recorded as :func:`_record_path` records them."""
    return [_record_path(argument, output_dir) if isinstance(argument, str) and os.path.isabs(argument)
            else argument for argument in command]


def _relative_parameters(parameters: dict, output_dir: Path) -> dict:
    """``output_dir`` and ``run_dir`` as :func:`_record_path` records them: a record names no folder of the machine
    that built it."""
    relative = dict(parameters)
    for key in ("output_dir", "run_dir"):
        if key in relative and relative[key] is not None:
            relative[key] = _record_path(str(relative[key]), output_dir)
    return relative


#: The similarity sources of a page of S beside the data-dependent one (:func:`shc.results.similarity_sources`).
DERIVED_SIMILARITY_SOURCES = ("text", "hierarchy")


def inputs_digest(job: ReportJob, run_root: str | os.PathLike) -> str | None:
    """SHA-256 of what a report's notebook reads (:func:`shc.presets.notebook_configs`): for each run, its stage
    folder's name (ending with the identity key) and the bytes of the files the notebooks read there: stage 3's
    ``metrics.json``, ``codes.npz`` and ``train/history.csv``, stage 2's ``centers.npy``, stage 1's
    ``similarity.npy`` and ``metrics.json`` (the classifier's accuracy), and, for a page of S, the text and
    hierarchy S it compares (their absence too: the page computes them). A report is up to date only while this is
    the value its ``run.json`` records, which is taken after the build, so it holds what the build computed.

    None where it would prove nothing: a page that reads no run, or one whose runs are not all there (a digest of
    "missing" markers would look like any other); :func:`_is_up_to_date` then does not compare inputs, and the
    first digest of complete inputs differs from the None recorded, so the page is built again."""
    import hashlib

    from shc.presets import notebook_configs
    from shc.stages import stage_directories

    needs = notebook_configs(job.parameters, str(Path(run_root) / job.preset), job.notebook)
    read = {"runs": ("stage3", ("metrics.json", "codes.npz", "train/history.csv")),
            "centers": ("stage2", ("centers.npy",)), "similarity": ("stage1", ("similarity.npy", "metrics.json"))}
    files = sorted({(stage_directories(config)[read[kind][0]], name)
                    for kind, configs in needs.items() for config in configs for name in read[kind][1]})
    if not files or not all((folder / name).is_file() for folder, name in files):
        return None
    # the seed-free sources a page of S compares with the data-dependent one (text, hierarchy): computed by the
    # page itself when missing, so a missing one is a marker, not a reason to compare nothing
    derived = sorted({stage_directories(config.replace(similarity=source))["stage1"]
                      for config in needs["similarity"] for source in DERIVED_SIMILARITY_SOURCES})
    digest = hashlib.sha256()
    for folder, name in files:
        digest.update(f"{folder.name}/{name}\x1f".encode())
        digest.update(hashlib.sha256((folder / name).read_bytes()).digest())
    for folder in derived:
        matrix = folder / "similarity.npy"
        digest.update(f"{folder.name}/similarity.npy\x1f".encode())
        digest.update(hashlib.sha256(matrix.read_bytes()).digest() if matrix.is_file() else b"absent")
    return digest.hexdigest()


def _is_up_to_date(output_dir: Path, files: dict[str, str], notebook_path: Path, parameters: dict,
                   inputs: str | None = None) -> bool:
    """Whether the last report of these ``parameters`` succeeded (and no failure of a later build is kept beside
    it), read the same ``inputs`` (:func:`inputs_digest`; None: not compared) and started after the notebook and
    every file of the package last changed. The start is the record's (``finished`` less ``seconds``), not the
    page's file time: a page rewritten after its build (``shc.reports.refresh``, ``corrections``), or a source
    edited while its notebook ran, made an old build look newer than the code (an audit, 2026-12-02)."""
    from datetime import datetime

    record = read_record(output_dir / RECORD_FILE)
    html_path = output_dir / files["report"]
    if not record or record.get("status") != "ok" or record.get("parameters") != jsonable(
            json.loads(json.dumps(_relative_parameters(parameters, output_dir), default=str))):
        return False
    if (output_dir / FAILURE_FILE).is_file():  # the last run failed; the page kept is an earlier one
        return False
    if inputs is not None and record.get("inputs") != inputs:  # its runs were recomputed with other numbers
        return False
    if not html_path.is_file():
        return False
    try:
        started = datetime.fromisoformat(record["finished"]).timestamp() - float(record.get("seconds") or 0)
    except (KeyError, TypeError, ValueError):
        return False  # no readable time: built again
    package_files = Path(__file__).resolve().parents[1].rglob("*.py")
    newest_source = max(path.stat().st_mtime for path in [notebook_path, *package_files])
    return started > newest_source


def _record(job: ReportJob, status: str, seconds: float, parameters: dict, files: dict[str, str],
            notebook_path: Path, error: dict | None, provenance: dict | None) -> dict[str, Any]:
    """``run.json``: what ran, how it went, which files it wrote, and what produced it."""
    from shc import __version__

    return {
        "notebook": job.notebook,
        "preset": job.preset,
        "variant": job.variant,
        "title": notebook_title(notebook_path),
        "status": status,
        "seconds": round(seconds, 3),
        "finished": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "shc_version": __version__,
        "parameters": jsonable(json.loads(json.dumps(parameters, default=str))),
        "error": error,
        "files": files,
        "provenance": provenance or {},
    }


def read_record(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def describe_error(error: dict | None, full_message: bool = False) -> str:
    """``ValueError in cell In [7]: message`` (the last line of the message unless ``full_message``)."""
    if not error:
        return ""
    cell = f" in cell In [{error['execution_count']}]" if error.get("execution_count") is not None else ""
    message = (error.get("message") or "").strip()
    if not full_message:
        message = message.splitlines()[-1] if message else ""
    return f"{error.get('type')}{cell}: {message}"
