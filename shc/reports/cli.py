"""Running a preset's reports: compute every run the notebooks read, execute them, write the index.

Command line: ``python -m shc.reports --preset NAME`` (see ``--help``).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from shc.executors import in_turn, interruptible_worker, run_in_worker, stop_workers
from shc.offline import drop_unused_assets
from shc.reports.execute import BUNDLE_FILE, ReportResult, describe_error, execute_report, output_lock
from shc.reports.bundle import write_bundle
from shc.reports.index import write_index
from shc.reports.notebooks import check_notebook, strip_notebook
from shc.reports.plan import OVERRIDE_PARAMETERS, ReportJob, default_notebooks_dir, plan_jobs
from shc.reports.summary import format_summary

__all__ = ["compute_runs", "main", "run_reports"]


def compute_runs(jobs: Sequence[ReportJob], run_root: str | os.PathLike = "runs", progress: bool = True,
                 log: Callable[[str], None] = print, grid_jobs: int | str = 1,
                 grid_options: Mapping[str, Any] | None = None) -> int:
    """Compute, through :mod:`shc.pipeline`, every run the notebooks of ``jobs`` read (cached runs are skipped).

    Compute first, then the notebooks only read and show (:mod:`shc.results` never trains). ``grid_jobs``
    hashing runs train at once (:func:`shc.pipeline.run_grid`'s ``jobs``); ``grid_options`` are run_grid's
    executor keywords (``executor``, ``address``, ``cpus_per_run``, ``gpus_per_run``). Returns the number of runs
    of the batch.
    """
    from shc import pipeline
    from shc.presets import notebook_configs

    runs: dict[str, Any] = {}
    centers: dict[str, Any] = {}
    stage1: dict[str, Any] = {}
    for job in jobs:
        needs = notebook_configs(job.parameters, str(Path(run_root) / job.preset), job.notebook)
        runs.update({_key(config): config for config in needs["runs"]})
        centers.update({_key(config): config for config in needs["centers"]})
        stage1.update({_key(config): config for config in needs["similarity"]})
    started = time.perf_counter()
    if stage1:
        log(f"computing stage 1 (every S source) for {len(stage1)} seed(s) ...")
        pipeline.compute_similarities(list(stage1.values()), progress=progress)
    if centers:
        log(f"computing {len(centers)} center set(s) (stages 1-2) ...")
        for config in centers.values():
            pipeline.run_centers(config, progress=progress)
    if runs:
        log(f"computing {len(runs)} run(s) the notebooks read (cached ones are skipped) ...")
        pipeline.run_grid(list(runs.values()), progress=progress, log=log, jobs=grid_jobs, **(grid_options or {}))
        from shc.presets import get_preset

        for preset in sorted({job.preset for job in jobs}):  # the classifier-code baseline 04 shows (issue 37)
            rules = get_preset(preset).classifier_codes
            mine = [config for config in runs.values() if Path(config.run_dir) == Path(run_root) / preset]
            if rules and mine:
                pipeline.run_classifier_codes(mine, rules)
    seconds = time.perf_counter() - started
    log(f"computed {len(runs)} run(s) and their stages 1-2 in {seconds:.0f} s ({seconds / 60:.1f} min; cached "
        "ones are read, not recomputed)")
    return len(runs)


def _key(config) -> str:
    import dataclasses

    return json.dumps(dataclasses.asdict(config), sort_keys=True, default=str)


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
    compute: bool = True,
    progress: bool = True,
    provenance: dict[str, Any] | None = None,
    log: Callable[[str], None] = print,
    grid_jobs: int | str = 1,
    grid_options: Mapping[str, Any] | None = None,
    bundle: bool = False,
    notebook_jobs: int | str = 1,
) -> list[ReportResult]:
    """Compute the runs of a preset's notebooks, execute every report, write the index.

    A failing notebook is logged and recorded; the others still run. See :func:`plan_jobs` and
    :func:`execute_report` for the arguments; ``compute=False`` skips the computing step (the notebooks
    then fail clearly on a missing run), ``grid_jobs`` runs train at once while computing, ``bundle`` also writes
    ``<preset>/bundle.zip`` (:func:`shc.reports.bundle.write_bundle`; without it a zip of an earlier build is removed),
    ``notebook_jobs`` notebooks execute at once (:func:`notebook_workers`; default one after the other). Returns
    one result per job, in plan order, and ends with a summary table (notebook, status, time, report path).
    """
    jobs = plan_jobs(preset, only=only, overrides=overrides, notebooks_dir=notebooks_dir, table=table)
    preset_dir = Path(output_root) / preset
    total_started = time.perf_counter()
    with output_lock(preset_dir, f"python -m shc.reports --preset {preset}"):
        if compute:
            compute_runs(jobs, run_root, progress=progress, log=log, grid_jobs=grid_jobs, grid_options=grid_options)
        execute = functools.partial(execute_report, notebooks_dir=notebooks_dir, output_root=output_root,
                                    run_root=run_root, timeout=timeout, skip_existing=skip_existing,
                                    provenance=provenance)
        finished: dict[int, ReportResult] = {}
        workers = notebook_workers(notebook_jobs, len(jobs))
        first = longest_first(jobs, output_root) if workers > 1 else None
        for number, result in _executed(jobs, execute, workers, log, first):
            finished[number] = result
            log(f"[{number}/{len(jobs)}] {result.job.name}: {_describe(result)}")
            write_index(preset_dir)  # keep the index current, so it is useful while a long batch runs
        results = [finished[number] for number in sorted(finished)]
        if bundle:  # every CSV and record of the preset in one zip, linked from the index
            write_bundle(preset_dir)
        else:  # a zip of an earlier build would describe other pages; ask for a new one with --bundle
            (preset_dir / BUNDLE_FILE).unlink(missing_ok=True)
        index = write_index(preset_dir)
        drop_unused_assets(preset_dir)
    elapsed = time.perf_counter() - total_started
    log(summary_table(results))
    failed = [result for result in results if not result.ok]
    log(f"{len(results) - len(failed)}/{len(results)} reports ok in {elapsed:.1f} s; index: {index}")
    for result in failed:
        where = result.failed_notebook or result.output_dir
        log(f"FAILED {result.job.name}: {describe_error(result.error)} (partial notebook: {where})")
    return results


def notebook_workers(notebook_jobs: int | str, count: int) -> int:
    """How many report notebooks execute at once: ``notebook_jobs`` itself, or for ``"auto"`` one per CPU core;
    never more than the ``count`` notebooks of the batch (at least 1). Each notebook runs in its own kernel process
    and only reads runs, so pages do not depend on it (unlike training, ``auto`` is not 1 on a GPU machine)."""
    if notebook_jobs == "auto":
        from shc.executors import _cpu_count

        notebook_jobs = _cpu_count()  # the cores this process may use, as the training grid counts them
    if isinstance(notebook_jobs, bool) or not isinstance(notebook_jobs, int) or notebook_jobs < 1:
        raise ValueError(f"notebook_jobs must be a positive integer or 'auto', got {notebook_jobs!r}.")
    return max(1, min(notebook_jobs, count))


def longest_first(jobs: Sequence[ReportJob], output_root: str | os.PathLike) -> list[int]:
    """The 1-based numbers of ``jobs`` in the order a pool should start them: those without a previous page first (in
    plan order), then by the seconds their previous page took (its ``run.json``), longest first, so that no long
    notebook starts last while the other workers sit idle."""
    from shc.reports.execute import RECORD_FILE, read_record

    def seconds(job: ReportJob) -> float:
        record = read_record(job.output_dir(output_root) / RECORD_FILE) or {}
        value = record.get("seconds")
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.inf

    durations = [seconds(job) for job in jobs]
    return sorted(range(1, len(jobs) + 1), key=lambda number: -durations[number - 1])  # stable: ties keep plan order


def _executed(jobs: Sequence[ReportJob], execute: Callable[[ReportJob], ReportResult], workers: int,
              log: Callable[[str], None], first: Sequence[int] | None = None) -> Iterator[tuple[int, ReportResult]]:
    """``(number, result)`` of every job, 1-based in plan order: one after the other with one worker, else in the
    order they finish from a pool of ``workers`` processes (spawned: a kernel per notebook, temporary files named by
    process), started in the order of the numbers ``first`` (default plan order). An interrupt of this process
    (Ctrl-C, or SIGTERM through :func:`shc.cli_common.run_cli`) cancels the notebooks not started and is passed on to
    each worker once, as SIGTERM (the workers ignore the terminal's SIGINT): each running notebook stops, and its
    previous page stays whole."""
    def announce(number: int, job: ReportJob) -> None:
        ignored = "".join(f" (--{option} does not apply)" for option in job.ignored_overrides)
        log(f"[{number}/{len(jobs)}] {job.name}: running ...{ignored}")

    if workers == 1:
        for number, job in enumerate(jobs, start=1):
            announce(number, job)
            yield number, execute(job)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    log(f"executing {len(jobs)} notebooks, {workers} at a time ...")
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=interruptible_worker)

    def submit(number: int) -> Any:  # announced as a worker takes it, so "running" is true when said
        announce(number, jobs[number - 1])
        return pool.submit(run_in_worker, execute, jobs[number - 1])  # ends once orphaned (watch_parent)

    try:
        for number, future in in_turn(first or range(1, len(jobs) + 1), submit, workers):
            yield number, future.result()
    except BaseException:
        stop_workers(pool)  # each running notebook stops there; its page keeps its previous version
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def summary_table(results: Sequence[ReportResult]) -> str:
    """A plain-text table: notebook, status, time, report page (:func:`shc.progress.summary_table`)."""
    from shc.progress import summary_table as table

    return table([{"notebook": r.job.notebook, "variant": r.job.variant, "status": r.status, "seconds": r.seconds,
                   "report": r.output_dir / f"{r.job.notebook}-report.html"} for r in results])


def _describe(result: ReportResult) -> str:
    if result.status == "skipped":
        return "skipped (up to date)"
    if result.status == "failed":
        return f"FAILED after {result.seconds:.1f} s: {describe_error(result.error)}"
    summary = format_summary(result.summary)
    return f"ok in {result.seconds:.1f} s" + (f"  [{summary}]" if summary else "")


def _parser() -> argparse.ArgumentParser:
    from shc.cli_common import (add_executor_arguments, jobs_argument, non_negative_int, positive_float,
                                 positive_int)
    from shc.presets import PRESETS

    parser = argparse.ArgumentParser(
        prog="python -m shc.reports",
        description="Compute a preset's runs, execute the report notebooks with papermill and render them to "
                    "HTML with an index.",
    )
    parser.add_argument("--preset", default="quick", choices=PRESETS.names(),
                        help=f"experiment grid: {', '.join(PRESETS.names())} (default quick)")
    parser.add_argument("--only", nargs="+", metavar="NOTEBOOK", help="notebook stems or prefixes, e.g. 00")
    parser.add_argument("--output", default="reports", help="report root: reports go to OUTPUT/PRESET/")
    parser.add_argument("--runs", default="runs", help="pipeline artifact root: notebooks get run_dir=RUNS/PRESET")
    parser.add_argument("--notebooks", default=None, help="notebook folder (default: the repository's notebooks/)")
    parser.add_argument("--dataset", nargs="+", help="override the dataset (several: one report each)")
    parser.add_argument("--bits", nargs="+", type=positive_int, help="override the code lengths")
    parser.add_argument("--methods", nargs="+", help="override the methods")
    parser.add_argument("--seeds", nargs="+", type=non_negative_int, help="override the seeds")
    parser.add_argument("--epochs", nargs=1, type=positive_int, help="override the number of training epochs")
    parser.add_argument("--timeout", type=positive_float, default=None,
                        help="per-cell time limit in seconds (default none)")
    parser.add_argument("--skip-existing", action="store_true",
                        help="skip reports whose last run used the same parameters, succeeded, and is newer "
                             "than the notebook and the shc package")  # fmt: skip
    parser.add_argument("--no-compute", action="store_true",
                        help="do not compute missing runs first (the notebooks then fail on a missing run)")
    parser.add_argument("--jobs", type=jobs_argument, default="auto",
                        help="hashing runs trained at once while computing, each stage on one thread (default "
                             "auto: one per CPU core, one at a time on a GPU; shc.pipeline.resolve_jobs)")
    parser.add_argument("--notebook-jobs", type=functools.partial(jobs_argument, option="--notebook-jobs"),
                        default="auto", help="report notebooks executed at once, each in its own kernel (default "
                                             "auto: one per CPU core; the pages do not depend on it)")
    add_executor_arguments(parser)
    parser.add_argument("--allow-dirty", action="store_true",
                        help="build into the repository's own report folder from a checkout with uncommitted changes "
                             "(refused otherwise: a committed report set comes from one clean commit; the index "
                             "then says the pages were built from a dirty tree)")
    parser.add_argument("--bundle", action="store_true",
                        help="also write PRESET/bundle.zip, every table and record of the preset in one file (not for "
                             "the committed sets: a second copy of the tables doubles their weight in the repository's "
                             "history; without this flag a bundle of an earlier build is removed)")
    parser.add_argument("--list", action="store_true", help="print the planned reports and runs, and exit")
    parser.add_argument("--strip-notebooks", action="store_true", help="clear outputs of the notebooks and exit")
    parser.add_argument("--check-notebooks", action="store_true", help="check the notebooks are clean and exit")
    parser.add_argument("--check", nargs="+", metavar="FOLDER",
                        help="check report folders as a reader gets them (reprs, NaN, dead links, absolute paths, "
                             "alt text, empty sections; shc.reports.check), print every problem and exit")
    parser.add_argument("--browser", action="store_true",
                        help="with --check: also open every reading page in headless Chromium, network off, and "
                             "check what it shows (typeset math, links, reprs; shc.reports.browser)")
    return parser


def _validate_overrides(overrides: Mapping[str, Sequence[Any]]) -> None:
    from shc.data import available_datasets
    from shc.methods import available_methods
    from shc.presets import _check_names

    _check_names("--methods", overrides.get("methods"), available_methods())
    _check_names("--dataset", overrides.get("dataset"), available_datasets())
    for option in ("bits", "seeds", "methods", "dataset"):
        values = list(overrides.get(option) or [])
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f"--{option} lists {', '.join(repeated)} more than once; give distinct values.")
    for q in overrides.get("bits") or ():
        if not 8 <= q <= 1024:
            raise ValueError(f"--bits: {q} is outside [8, 1024] (the paper uses 16, 32, 64).")


def _inside(folder: str | os.PathLike, root: Path | None) -> str | None:
    """``folder`` relative to the checkout ``root`` (POSIX) when it lies inside it, else None."""
    if root is None:
        return None
    try:
        return Path(folder).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return None


def clean_commit_problem(in_checkout: bool, state: Mapping[str, Any], allow_dirty: bool) -> str | None:
    """Why a batch may not build into the folder it was given (issue 38: a committed report set comes from one clean
    commit), or None. Only a folder inside the package's own checkout is checked (the pages that get committed); the
    report folder's own changes do not count (``state``: :func:`shc.provenance.git_state` with it excluded)."""
    if not in_checkout or allow_dirty or state.get("dirty") is False or not state.get("commit"):
        return None  # no commit: no git here at all, which the index says ("record no commit")
    if state.get("dirty") is None:
        return ("git could not say whether the checkout has uncommitted changes (git status failed or timed out), "
                "and these reports would be committed from it: run `git status` to see why, or pass --allow-dirty "
                "(the index then says the tree's changes were not read).")
    return ("the checkout has uncommitted changes outside the report folder, and these reports would be committed "
            f"from it (commit {str(state.get('commit'))[:12]}): commit or stash the changes first, so every page says "
            "which code built it, or pass --allow-dirty (the index then says the pages come from a dirty tree).")


def _main(argv: Sequence[str] | None = None) -> int:
    from shc.cli_common import executor_options, output_folder

    arguments = _parser().parse_args(argv)
    notebooks_dir = Path(arguments.notebooks) if arguments.notebooks else default_notebooks_dir()
    if not notebooks_dir.is_dir():
        raise FileNotFoundError(f"--notebooks {str(notebooks_dir)!r} is not a folder of notebooks.")
    notebooks = sorted(notebooks_dir.glob("*.ipynb"))
    if arguments.strip_notebooks:
        for path in notebooks:
            print(f"{path}: {'stripped' if strip_notebook(path) else 'already clean'}")
        return 0
    if arguments.check:
        from shc.reports.check import main as check_main

        if arguments.browser:
            from shc.reports.browser import main as check_main
        return check_main(arguments.check)
    if arguments.check_notebooks:
        problems = {path: check_notebook(path) for path in notebooks}
        for path, found in problems.items():
            print(f"{path}: {'; '.join(found) if found else 'ok'}")
        return 1 if any(problems.values()) else 0

    overrides = {option: getattr(arguments, option) for option in OVERRIDE_PARAMETERS if getattr(arguments, option)}
    _validate_overrides(overrides)
    if arguments.list:
        from shc.presets import notebook_configs

        jobs = plan_jobs(arguments.preset, only=arguments.only, overrides=overrides, notebooks_dir=notebooks_dir)
        runs: dict = {}
        for job in jobs:
            print(f"{job.name}: {json.dumps(job.parameters)}")
            needs = notebook_configs(job.parameters, str(Path(arguments.runs) / job.preset), job.notebook)["runs"]
            runs.update({_key(config): config for config in needs})
        print(f"{len(jobs)} reports reading {len(runs)} runs")
        return 0
    for folder, option in ((arguments.output, "--output"), (arguments.runs, "--runs")):
        output_folder(folder, option)
    from shc.provenance import checkout_root, git_state, provenance

    root = checkout_root()
    exclude = _inside(arguments.output, root)
    problem = clean_commit_problem(exclude is not None, git_state(exclude=[exclude] if exclude else ()),
                                   arguments.allow_dirty)
    if problem:
        raise ValueError(problem)

    results = run_reports(
        arguments.preset,
        only=arguments.only,
        overrides=overrides,
        output_root=arguments.output,
        run_root=arguments.runs,
        notebooks_dir=notebooks_dir,
        skip_existing=arguments.skip_existing,
        timeout=arguments.timeout,
        compute=not arguments.no_compute,
        grid_jobs=arguments.jobs,
        notebook_jobs=arguments.notebook_jobs,
        grid_options=executor_options(arguments),
        bundle=arguments.bundle,
        provenance=provenance(command=["python", "-m", "shc.reports", *(argv or sys.argv[1:])],
                              preset=arguments.preset, overrides=overrides, exclude=[exclude] if exclude else ()),
    )
    return 0 if all(result.ok for result in results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status (non-zero when a report failed)."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)
