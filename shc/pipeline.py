"""Computing the stages of a run, and grids of runs: cached, resumable, and safe to interrupt.

One :class:`~shc.runs.RunConfig` describes a run; :func:`run` computes its stages top to bottom
(:data:`PIPELINE`), each a :class:`shc.stages.Stage` that knows its identity, folder, lock and cache: a stage's
artifacts live in a folder keyed by its identity (:mod:`shc.stages.definitions` has the layout) and are reused
when already there, so runs that differ in any setting live side by side and identical ones are shared. Every
file is written atomically; a stage folder is locked while it is computed, so a second process computing the
same stage is refused with a message rather than interleaving writes; an interrupted run resumes (training from
its last epoch, bit-identically).

Reported retrieval numbers are those of the model selected on the *validation* split (best validation
mAP@ALL over the evaluated epochs), measured once on the query set. The authors' release instead reports
each metric's maximum over epochs on the query set, which is optimistic. Stage 3 also writes
``encoder.json`` (network and input transform), what ``shc encode`` needs to hash new images.

Reading finished runs into tables, curves and example retrievals is :mod:`shc.results`; the experiment
grids are :mod:`shc.presets`.

Command line: ``python -m shc.pipeline --preset quick`` runs a preset's grid and prints the mAP tables;
``--list`` prints the grid without running it. Under ``torchrun --nproc_per_node=N -m shc.pipeline ...``
stages 1 and 3 train with DistributedDataParallel; stage 2 and every artifact write happen on rank 0
while the other ranks wait.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shc._io import jsonable
from shc.cli_common import describe_error
from shc.evaluation import EVALUATION_VERSION, PAIRINGS, UNSEEN_KEYS
from shc.executors import _cpu_count, grid_workers  # noqa: F401 - grid_workers: this module's API
from shc.executors import positive_jobs as _positive_jobs
from shc.runs import MAP_KEYS, SIMILARITY_SOURCES, TIE_AWARE_MAP_KEYS, MissingRunError, RunConfig, StaleRunError, load_data
from shc.stages import (STAGES, Centers, ClassifierCodes, Evaluation, Hashing, Pretraining, Similarity, Stage, is_main,
                        read_identity)
from shc.stages import encode, stage_directories, stage_identities  # noqa: F401 - encode: this module's API
from shc.stages.base import distributed

__all__ = ["MAP_KEYS", "PIPELINE", "SIMILARITY_SOURCES", "GridFailures", "RunConfig", "RunResult",
           "WorkerMismatchError", "encode", "grid_threads", "grid_workers", "load_data", "longest_first", "main",
           "preset", "reevaluate", "report_configs", "run", "run_centers", "run_classifier_codes", "run_grid",
           "run_hashing", "run_pretraining", "run_similarity", "stage_directories", "summarize"]

PIPELINE: tuple[type[Stage], ...] = (Pretraining, Similarity, Centers, Hashing, Evaluation)
"""The stages of a run in the order :func:`run` computes them (those that apply to the config). To add a stage:
its :class:`~shc.stages.Stage` subclass, registered in :data:`shc.stages.STAGES`, and one entry here."""

SHARED: tuple[type[Stage], ...] = (Pretraining, Similarity, Centers)
"""The stages that several hashing runs of a grid share (one folder each), computed before the hashing runs."""


@dataclass
class RunResult:
    """What :func:`run` returns: the config, the artifacts in memory and where they are on disk."""

    config: RunConfig
    metrics: dict[str, Any]
    centers: np.ndarray | None
    similarity: np.ndarray | None
    directory: Path


def run(config: RunConfig, progress: bool = False) -> RunResult:
    """Every stage of one configuration that applies to it, top to bottom, each cached (:data:`PIPELINE`): the
    pretrained backbone (with ``pretrain``), S (if the centers need it), the centers (if any), the hashing network
    and its evaluation."""
    outputs = {stage.name: stage(config).run(progress) for stage in PIPELINE if stage(config).applies()}
    return RunResult(config, outputs["evaluation"], outputs.get("stage2"), outputs.get("stage1"),
                     Hashing(config).directory)


def run_pretraining(config: RunConfig, progress: bool = False) -> Path | None:
    """Stage 0 (:class:`shc.stages.Pretraining`): the path of the pretrained backbone's ``weights.pt``, or None."""
    return Pretraining(config).run(progress)


def run_similarity(config: RunConfig, progress: bool = False) -> np.ndarray:
    """Stage 1 (:class:`shc.stages.Similarity`): the class-similarity matrix S of ``config.similarity``."""
    return Similarity(config).run(progress)


def run_centers(config: RunConfig, progress: bool = False) -> np.ndarray | None:
    """Stage 2 (:class:`shc.stages.Centers`): the method's hash centers, None for methods without."""
    return Centers(config).run(progress)


def run_hashing(config: RunConfig, progress: bool = False) -> dict[str, Any]:
    """Stage 3 and its evaluation (:class:`shc.stages.Hashing`, :class:`shc.stages.Evaluation`): the metrics of the
    model selected on the validation split, measured once on the query set from the stored codes."""
    return Evaluation(config).run(progress)


def run_classifier_codes(configs: Iterable[RunConfig], rules: Sequence[str] = ("top1", "soft"),
                         progress: bool = False) -> list[dict[str, Any]]:
    """The classifier-code baseline (:class:`shc.stages.ClassifierCodes`) of every config with centers, for each of
    ``rules``: stage 1's classifier gives each query and database image a center, no hashing network. One row per
    config and rule (the config's fields and the measures), in order; configs without centers are skipped. Trains
    stage 1's classifier where no run has yet (it is SHC's, shared)."""
    rows = []
    for config in configs:
        for rule in rules:
            stage = ClassifierCodes(config, rule)
            if stage.applies():
                rows.append({**stage.run(progress), "method": f"{config.method} ({rule} classifier codes)",
                             "center_method": config.method})
    return rows


def reevaluate(config: RunConfig, force: bool = False) -> dict[str, Any]:
    """A finished stage 3's ``metrics.json``, measured anew from its stored codes when it is older than
    :data:`shc.evaluation.EVALUATION_VERSION` (or always, with ``force``); nothing is retrained.

    The training fields (selected epoch, training time, ...) are kept; the file is replaced atomically. A
    ``metrics.json`` or ``codes.npz`` that does not parse is never rewritten: the stage is moved aside and this
    raises :class:`~shc.runs.MissingRunError`, as for a run that has not finished.
    """
    metrics = Evaluation(config, force=force).finished()
    if metrics is None:
        from shc.presets import compute_command

        raise MissingRunError(f"stage 3 of {config.method}, {config.bits} bits, seed {config.seed} has not finished "
                              f"in {config.run_dir!r}: there are no codes to evaluate. Run it first: "
                              f"{compute_command(config)}.")
    return metrics


class GridFailures(RuntimeError):
    """Runs of a grid failed (the others finished): ``failures`` maps each failed run's name to its error and
    ``rows`` holds the finished runs' rows (None for a failed one). A rerun resumes: finished runs are read."""

    def __init__(self, failures: Mapping[str, BaseException], rows: list[dict[str, Any] | None], total: int) -> None:
        self.failures, self.rows = dict(failures), rows
        named = "; ".join(f"{name}: {_failure_line(error)}" for name, error in list(self.failures.items())[:10])
        more = f"; ... and {len(self.failures) - 10} more" if len(self.failures) > 10 else ""
        kept = ("the other runs finished and are kept" if len(self.failures) < total else
                "no run finished, and the stages computed before the failures are kept")
        super().__init__(f"{len(self.failures)} of {total} runs failed ({named}{more}); {kept}: fix the cause and "
                         "rerun the same command to compute only what is missing.")


#: Packages whose exceptions mean a cluster worker itself failed (killed, out of memory, crashed), not the run.
_CLUSTER_PACKAGES = ("ray", "distributed", "dask")


def _failure_line(error: BaseException, limit: int = 300) -> str:
    """One short line for a failed run: the error's type and the first ``limit`` characters of its one-line
    description; a cluster worker's own failure (a Ray or Dask exception, whose message is a multi-line report)
    also gets what to do about it."""
    text = describe_error(error)
    line = f"{type(error).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"
    if type(error).__module__.split(".")[0] in _CLUSTER_PACKAGES:
        line += (" (a cluster worker failed, not the run: read that worker's log, give each run more memory or CPUs "
                 "with --cpus-per-run, and rerun)")
    return line


def _run_name(config: RunConfig) -> str:
    return f"{config.dataset} {config.method} {config.bits} bits seed {config.seed}"


class WorkerMismatchError(RuntimeError):
    """A worker sees other data, another package or missing stages at the paths the grid was planned with: it
    refuses to compute (the caller would report the numbers as its own grid's)."""


def _task(config: RunConfig, stage: str) -> tuple[RunConfig, str, dict[str, Any]]:
    """What a worker computes, with what the planning process expects it to find: every stage's identity
    (the data fingerprint among them) as computed here, and where it was computed."""
    return config, stage, {"identities": jsonable(stage_identities(config)), "host": socket.gethostname()}


def _check_task(config: RunConfig, stage: str, expected: Mapping[str, Any]) -> None:
    """Before a worker computes ``stage``: its own identities must be the planner's (same data fingerprint, root
    and package), and every stage it reads must be finished under that identity (in the shared ``run_dir``)."""
    here, planned = jsonable(stage_identities(config)), expected["identities"]
    where = f"worker {socket.gethostname()} (pid {os.getpid()})"
    if here != planned:
        mine, theirs = here["stage3"], planned["stage3"]
        data = [key for key in ("data_root", "data_fingerprint") if mine[key] != theirs[key]]
        what = (f"other data: {config.dataset} at {mine['data_root'] or 'the default data root'} has "
                + ", ".join(f"{key} {mine[key]} there and {theirs[key]} on {expected['host']}" for key in data)
                + "; give every machine the same files at the same path (a --data-root they share)") if data else \
            (f"another {stage} identity than {expected['host']} (another shc version?); install the same shc "
             "on every machine")
        raise WorkerMismatchError(f"{where} refuses {stage} of {_run_name(config)}: it sees {what}, then rerun.")
    for parent in (parent(config) for parent in STAGES.get(stage).parents):
        if parent.name not in (here[stage] or {}):
            continue
        directory = parent.directory
        if read_identity(directory) != here[parent.name] or not (directory / parent.complete).exists():
            raise WorkerMismatchError(
                f"{where} refuses {stage} of {_run_name(config)}: {directory / parent.complete}, which "
                f"{expected['host']} finished, is not there under its identity (config.json); run_dir must be a "
                "folder every machine sees at the same path, then rerun.")


def _compute_stage(task: tuple[RunConfig, str, Mapping[str, Any]]) -> Any:
    """One stage of a config, in an executor's worker, once :func:`_check_task` found what the planner expects:
    a shared stage (0, 1 or 2; returns nothing) or the hashing run (stage 3; returns its metrics)."""
    config, stage, expected = task
    _check_task(config, stage, expected)
    if stage == "stage3":
        return Evaluation(config).run()
    STAGES.get(stage)(config).run()
    return None


def _shared_stages_remotely(configs: Sequence[RunConfig], executor: Any, log, progress: bool
                            ) -> dict[int, BaseException]:
    """Stages 0, 1 and 2 of ``configs`` as executor tasks, one stage after the other (a stage's tasks wait for
    the stage they read), each stage folder computed once: the configs sharing it wait for its one task.

    Returns the configs whose shared stage failed (position -> error); their hashing runs are not started.
    """
    failed: dict[int, BaseException] = {}
    for kind in SHARED:
        stage = kind.name
        folders: dict[Path, list[int]] = {}
        for position, config in enumerate(configs):
            if position not in failed and kind(config).applies() and kind(config).cached() is None:
                folders.setdefault(kind(config).directory, []).append(position)
        tasks = [_task(configs[positions[0]], stage) for positions in folders.values()]
        for task_position, _, error, seconds in executor.map(_compute_stage, tasks):
            positions = list(folders.values())[task_position]
            if error is not None:
                failed.update((position, error) for position in positions)
                log(f"FAILED {stage} of {_run_name(configs[positions[0]])} (needed by {len(positions)} run(s)): "
                    f"{type(error).__name__}: {describe_error(error)}")
            elif progress:
                log(f"{stage} of {_run_name(configs[positions[0]])} computed ({seconds:.1f} s)")
    return failed


def _shared_stages_here(configs: Sequence[RunConfig], log, progress: bool) -> dict[int, BaseException]:
    """Stages 0, 1 and 2 of ``configs`` in this process (shared between cells, each locked while computed), as
    :func:`_shared_stages_remotely` does on a cluster: a stage that fails blocks the runs that read it, logged once
    per stage folder, and the others go on (before, its error ended the grid, naming no run)."""
    failed: dict[int, BaseException] = {}
    errors: dict[Any, BaseException] = {}  # stage folder (or the config, where even its identity fails) -> error
    for position, config in enumerate(configs):
        for kind in SHARED:
            stage, key = kind(config), (kind.name, position)
            try:
                if not stage.applies():
                    continue
                key = stage.directory
                if key in errors:
                    raise errors[key]
                stage.run(progress)
            except Exception as error:  # the stage's own failure: the runs reading it are not started
                if key not in errors:
                    errors[key] = error
                    log(f"FAILED {kind.name} of {_run_name(config)}: {type(error).__name__}: "
                        f"{describe_error(error)}")
                failed[position] = error
                break
    return failed


#: The reachability numbers a grid row carries (shc.reachability), when the run has them.
_REACH_ROW_KEYS = ("reach_targets", "train_center_hit_rate", "train_center_bit_error", "query_center_hit_rate")


def run_grid(configs: Iterable[RunConfig], progress: bool = True, log=print, jobs: int | str = 1,
             executor: str = "local", address: str | None = None, cpus_per_run: float = 1,
             gpus_per_run: float = 0) -> list[dict[str, Any]]:
    """Run every config (cached stages are skipped) and return one row of headline numbers each.

    With ``progress``, one line per run (``[n/N] ... (seconds or cached; ETA)``, :func:`grid_eta`) and, serially,
    each training's epoch bar. ``jobs > 1`` (or ``"auto"``, :func:`resolve_jobs`) trains up to ``jobs`` hashing
    networks at once in worker processes, each with ``cpu_count // jobs`` threads, after stages 1 and 2 of every
    config were computed here: on a small CPU
    two single-threaded trainings finish sooner than two consecutive two-threaded ones (the small CNN does not
    keep two threads busy; :func:`grid_workers` has the measurement). Results do not depend on ``jobs``, the
    executor, the other runs of the grid or their order: every stage computes with
    :data:`~shc.runs.STAGE_THREADS` threads wherever it runs (the thread count changes CPU results through the
    summation order), and records them (``threads``); tested byte for byte in fp32. In parallel the runs start
    longest first (:func:`longest_first`); rows come back in the order of ``configs``.

    ``executor="dask"`` or ``"ray"`` (:mod:`shc.executors`) runs the grid as tasks of a cluster (``address`` joins
    a running one; None starts a local one, or for Ray uses the one this process joined): first stages 0, 1 and 2, one
    task per stage folder, each stage after the ones it reads, then one task per hashing run, each asking for
    ``cpus_per_run`` CPUs (its thread count) and ``gpus_per_run`` GPUs. ``run_dir`` must be a folder every machine
    sees at the same path (docs/scale-out.md says which file systems keep the stage locks safe). The same numbers as
    the local executor, byte for byte. This process computes every stage's identity, which reads the dataset (its
    fingerprint): the data must be at the same path here and on the workers, and each worker checks that it is
    (and that the stages it reads are there) before computing, refusing with a :class:`WorkerMismatchError`.

    With ``jobs > 1`` or on a cluster, a failing run does not stop the others: each failure is logged by name when it
    happens, and once every other run finished a :class:`GridFailures` names them all (a rerun computes only
    what is missing). Serially (``jobs=1``, local) the first failure is raised at once.
    """
    from shc.executors import open_executor

    configs = list(configs)
    jobs = resolve_jobs(jobs)
    rows: list[dict[str, Any] | None] = [None] * len(configs)
    failures: dict[str, BaseException] = {}
    trained: list[tuple[int, float]] = []  # (epochs, seconds) of each run computed here, for the ETA
    failed_at: set[int] = set()

    def finished(index: int, metrics: Mapping[str, Any], seconds: float) -> None:
        config = configs[index]
        rows[index] = {"dataset": config.dataset, "method": config.method, "similarity": config.similarity,
                       "bits": config.bits, "seed": config.seed,
                       **{key: metrics[key] for key in (*TIE_AWARE_MAP_KEYS, *MAP_KEYS)},
                       **{key: metrics[key] for key in _REACH_ROW_KEYS if key in metrics},
                       **{key: metrics[key] for key in UNSEEN_KEYS if key in metrics},
                       "train_seconds": metrics["train_seconds"],
                       "device": metrics.get("device"), "precision": metrics.get("precision")}
        epochs = config.epochs - int(metrics.get("resumed_after_epoch", 0))  # a resumed run trained only the rest
        if seconds > 0 and epochs > 0:
            trained.append((epochs, seconds))
        if progress and is_main():
            done = sum(row is not None for row in rows)
            left = [configs[i].epochs for i, row in enumerate(rows) if row is None and i not in failed_at]
            eta = grid_eta(trained, left, jobs)
            log(f"[{done}/{len(configs)}] {_run_name(config)}: "
                + ", ".join(f"{key} {metrics[key]:.4f}" for key in (*TIE_AWARE_MAP_KEYS, "mAP@ALL"))
                + (f", train center hit rate {metrics['train_center_hit_rate']:.3f}"
                   if "train_center_hit_rate" in metrics else "")
                + f" ({'cached' if seconds == 0 else f'{seconds:.1f} s'}"
                + (f", resumed after epoch {config.epochs - epochs}: {metrics['train_seconds']:.1f} s in all"
                   if seconds > 0 and epochs < config.epochs else "")
                + ("" if eta is None else f"; ETA {eta / 60:.1f} min") + ")"
                + (f"; {len(failures)} failed" if failures else ""))

    def failed(index: int, error: BaseException) -> None:
        failed_at.add(index)
        name = _run_name(configs[index])
        failures[name if name not in failures else f"{name} (run {index + 1} of the grid)"] = error
        log(f"FAILED {_run_name(configs[index])} ({sum(row is not None for row in rows)}/{len(configs)} done, "
            f"{len(failures)} failed): {type(error).__name__}: {describe_error(error)}")

    local = executor == "local"
    if local and (jobs == 1 or len(configs) < 2 or distributed()[1] > 1):
        for index, config in enumerate(configs):
            # a finished run is read, not trained: 0 s, as in a parallel grid; run() still walks every stage, so a
            # damaged S or centers file is found and computed again
            cached = Evaluation(config).finished() is not None
            started = time.perf_counter()
            metrics = run(config, progress=progress).metrics
            finished(index, metrics, 0.0 if cached else time.perf_counter() - started)
        return rows  # type: ignore[return-value]
    options = dict(jobs=jobs, threads=grid_threads(jobs)) if local else \
        dict(address=address, num_cpus=cpus_per_run, num_gpus=gpus_per_run)
    # Each stage computes with STAGE_THREADS threads whatever the worker was given: a rerun after an interrupt, a
    # cluster task and a one-method grid train a cell exactly as the full local grid does.
    with open_executor(executor, **options) as pool:
        blocked: dict[int, BaseException] = {}
        if pool.remote:
            blocked = _shared_stages_remotely(configs, pool, log, progress and is_main())
        else:
            blocked = _shared_stages_here(configs, log, progress)
        for index, error in blocked.items():
            failed(index, error)
        pending = []
        for index in longest_first(configs):
            metrics = None if index in blocked else Evaluation(configs[index]).finished()
            if metrics is not None:
                finished(index, metrics, 0.0)
            elif index not in blocked:
                pending.append(index)
        for position, metrics, error, seconds in pool.map(_compute_stage,
                                                          [_task(configs[index], "stage3") for index in pending]):
            if error is not None:
                failed(pending[position], error)
            else:
                finished(pending[position], metrics, seconds)
    if failures:
        raise GridFailures(failures, rows, len(configs))
    return rows  # type: ignore[return-value]


def grid_eta(trained: Sequence[tuple[int, float]], left: Sequence[int], jobs: int) -> float | None:
    """Seconds until a grid's remaining runs are done: their epochs at the seconds per epoch of the runs trained so
    far (``trained``: epochs and seconds of each; cached runs, which took no time, are left out), shared by
    ``jobs`` workers (fewer when fewer runs are left). None before any run trained, 0.0 when none is left.

    A grid starts its longest runs first (:func:`longest_first`), so counting runs (elapsed time / runs done) put
    the first ETA of `standard`'s 32-bit grid on the 2-core CPU at 630 minutes, for a grid that took 72 in all
    (its LTH runs have 4 and 8 times the others' epochs); counting epochs, the same first line says 104. Runs still
    training count as not started, so the estimate errs long while they are a large share of what is left."""
    if not left:
        return 0.0
    epochs = sum(count for count, _ in trained)
    if not epochs:
        return None
    per_epoch = sum(seconds for _, seconds in trained) / epochs
    return sum(left) * per_epoch / max(1, min(int(jobs), len(left)))


def longest_first(configs: Sequence[RunConfig]) -> list[int]:
    """The order in which a parallel grid starts its hashing runs: the most epochs first, ties in the grid's order.

    Workers take runs in the order they were submitted, so a long budget listed late starts when the others are
    nearly done and the grid waits for it alone. Starting the longest first (the classic longest-processing-time
    rule) keeps every worker busy until the end. docs/gpu.md, section 6: the `standard` grid on an H100 (12 runs
    sharing the GPU, seeds in order) started LTH's third seed (320 epochs) 17th of 24, and it alone was unfinished when
    the device time ran out. Epochs are the cost estimate: the runs of a grid share its data and network."""
    return sorted(range(len(configs)), key=lambda index: -configs[index].epochs)


def resolve_jobs(jobs: int | str) -> int:
    """How many hashing runs a grid trains at once: ``jobs`` itself, or, for ``"auto"`` (the command lines'
    default), one run per CPU core where no CUDA device is visible (each run single-threaded: on a small CPU
    that finishes a grid sooner, see :func:`grid_workers`) and one run at a time where one is (the run has the
    GPU to itself; several GPUs train one run with ``torchrun``, docs/gpu.md)."""
    if isinstance(jobs, str) and jobs == "auto":
        import torch

        return 1 if torch.cuda.is_available() else _cpu_count()
    return _positive_jobs(jobs)


def grid_threads(jobs: int | str) -> int:
    """Threads each worker process of a ``--jobs JOBS`` grid is given: ``cores // jobs`` (at least 1). Its stages
    compute with :data:`~shc.runs.STAGE_THREADS` all the same; this is what the process does outside them."""
    return max(1, _cpu_count() // resolve_jobs(jobs))


def compute_similarities(configs: Iterable[RunConfig], sources: Sequence[str] = ("logits", "text", "hierarchy"),
                         progress: bool = False) -> None:
    """Stage 1 of every config for each S source that applies (hierarchy only where the data has one)."""
    for config in configs:
        for source in sources:
            if source == "hierarchy" and load_data(config).coarse_labels is None:
                continue
            run_similarity(config.replace(similarity=source), progress)


def summarize(rows: Sequence[Mapping[str, Any]], metric: str = "mAP@ALL"):
    """Mean and standard deviation over seeds: a (dataset, method) x bits table of "mean ± std" strings."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    grouped = frame.groupby(["dataset", "method", "bits"])[metric].agg(["mean", "std", "count"]).reset_index()
    grouped["cell"] = [f"{m:.4f} ± {s:.4f}" if n > 1 else f"{m:.4f}"
                       for m, s, n in zip(grouped["mean"], grouped["std"].fillna(0.0), grouped["count"])]
    table = grouped.pivot(index=["dataset", "method"], columns="bits", values="cell")
    table.columns = [f"{q} bits" for q in table.columns]
    return table


# --------------------------------------------------------------------------------------------
# Presets (the table is shc.presets; these keep the historical entry points)
# --------------------------------------------------------------------------------------------
def preset(name: str, methods: Sequence[str] | None = None, bits: Sequence[int] | None = None,
           seeds: Sequence[int] | None = None, datasets: Sequence[str] | None = None,
           **overrides: Any) -> list[RunConfig]:
    """The grid of preset ``name`` (see :mod:`shc.presets`) as a list of configs."""
    from shc.presets import get_preset

    return get_preset(name).configs(methods=methods, bits=bits, seeds=seeds, datasets=datasets, **overrides)


def report_configs(preset_name: str, dataset: str, methods: Sequence[str], bits: Sequence[int],
                   seeds: Sequence[int], run_dir: str, epochs: int | None = None,
                   **overrides: Any) -> list[RunConfig]:
    """The grid of one report notebook: the preset restricted to one dataset (see :func:`shc.presets.report_configs`)."""
    from shc.presets import report_configs as configs

    return configs(preset_name, dataset, methods, bits, seeds, run_dir, epochs=epochs, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    import argparse

    from shc import presets
    from shc.cli_common import jobs_argument

    parser = argparse.ArgumentParser(prog="python -m shc.pipeline",
                                     description="Run the SHC pipeline on a preset grid and print the mAP tables.")
    presets.add_grid_arguments(parser)
    parser.add_argument("--run-dir", default=None,
                        help="artifact root (default: runs/<preset> of the working directory; python -m shc.reports "
                             "reads runs/<preset> of the checkout)")
    parser.add_argument("--list", action="store_true", help="print the grid the preset expands to and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--reevaluate", action="store_true",
                        help="measure every finished run of the grid anew from its stored codes (nothing is trained) "
                             "and print how long it took; unfinished runs are listed, not computed")
    parser.add_argument("--classifier-codes", nargs="+", choices=("top1", "soft", "none"), default=None,
                        help="rules of the classifier-code baseline computed after the grid for every center method "
                             "(default: the preset's; none: skip it)")
    parser.add_argument("--jobs", type=jobs_argument, default="auto",
                        help="hashing runs trained at once (default auto: one per CPU core, one at a time on a "
                             "GPU); every stage computes with one thread whatever JOBS is, so the numbers do not "
                             "depend on it (docs/scale-out.md)")
    from shc.cli_common import add_executor_arguments, executor_options

    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    cluster = executor_options(args)
    configs = presets.configs_from_arguments(args, run_dir=args.run_dir or str(Path("runs") / args.preset))
    if args.list:
        for config in configs:
            print(presets.describe_config(config))
        print(f"{len(configs)} runs")
        return 0
    if args.reevaluate:
        return _reevaluate_grid(configs)
    from shc.cli_common import output_folder
    from shc.train.distributed import _process_group

    output_folder(configs[0].run_dir, "--run-dir")
    # under torchrun: the one process group of the job (fit joins it), left as fit leaves its own
    with _process_group(configs[0].device):
        started = time.perf_counter()
        rows = run_grid(configs, progress=not args.quiet, jobs=args.jobs, **cluster)
        if is_main():
            for metric in (*TIE_AWARE_MAP_KEYS, *MAP_KEYS):
                print(f"\n{metric} (mean ± std over seeds)\n{summarize(rows, metric).to_string()}")
            pairings = [f"{pairing}_tie_aware_mAP@ALL" for pairing in PAIRINGS]
            for metric in pairings if rows and pairings[0] in rows[0] else ():  # the unseen-class protocol
                print(f"\n{metric} (mean ± std over seeds)\n{summarize(rows, metric).to_string()}")
            rules = presets.get_preset(args.preset).classifier_codes if args.classifier_codes is None else \
                [rule for rule in args.classifier_codes if rule != "none"]
            baseline = run_classifier_codes(configs, rules) if rules else []
            for metric in ["tie_aware_mAP@ALL", *pairings] if baseline else ():
                if metric in baseline[0]:
                    print(f"\nclassifier-code baseline, {metric} (mean ± std over seeds; stage 1's classifier gives "
                          f"each image a center)\n{summarize(baseline, metric).to_string()}")
            import pandas as pd

            from shc.findings import device_phrase

            where = device_phrase(pd.DataFrame(rows), markdown=False)  # a grid resumed on another machine says so
            print(f"\n{where}" if where else "", end="")
            print(f"\n{len(configs)} run{'' if len(configs) == 1 else 's'} in {time.perf_counter() - started:.0f} s")
    return 0


def _reevaluate_grid(configs: Sequence[RunConfig]) -> int:
    """``--reevaluate``: every finished run of ``configs`` measured anew from its codes; the time it took. Exit status
    1 when none of them has finished (a run folder that does not exist, or holds none of these runs)."""
    absent = sorted({str(config.run_dir) for config in configs if not Path(config.run_dir).is_dir()})
    if absent:
        raise FileNotFoundError(f"--reevaluate: {', '.join(absent)} does not exist, so there is no run to re-evaluate; "
                                "give the --run-dir the grid was computed in.")
    started, done, missing, refused = time.perf_counter(), 0, [], []
    for config in configs:
        try:
            reevaluate(config, force=True)
            done += 1
        except StaleRunError as error:  # finished, but under other settings: say why, do not call it unfinished
            refused.append((config, error))
        except MissingRunError:
            missing.append(config)
    print(f"re-evaluated {done} run(s) from their stored codes in {time.perf_counter() - started:.1f} s "
          f"(evaluation version {EVALUATION_VERSION})")
    if missing:
        print(f"{len(missing)} run(s) have not finished (nothing to evaluate): "
              + "; ".join(f"{c.method} {c.bits} bits seed {c.seed}" for c in missing[:10])
              + ("; ..." if len(missing) > 10 else ""))
    for config, error in refused:
        print(f"refused {config.method} {config.bits} bits seed {config.seed}: {error}")
    return 0 if done and not refused else 1


if __name__ == "__main__":
    raise SystemExit(main())
