"""Where a grid's runs execute: a process pool on this machine, or tasks of a Ray cluster.

An executor is opened as a context manager from :data:`EXECUTORS` (the registry idiom of :mod:`shc.registry`)
and maps a picklable module-level function over arguments, yielding ``(position, result, error, seconds)`` as
each call finishes: a failing call is reported, never raised, so the other calls go on.

- ``local``: ``jobs`` spawned worker processes of this machine (:func:`grid_workers`), each with
  ``cores // jobs`` threads (:func:`shc.pipeline.grid_threads`).
- ``ray``: one Ray task per call, with ``num_cpus`` / ``num_gpus`` resources (Ray schedules the tasks onto the
  machines of the cluster that have them free, and sets ``CUDA_VISIBLE_DEVICES`` for each); ``address`` joins a
  running cluster (``ray start --head`` on one machine, ``ray start --address HEAD:6379`` on the others),
  ``None`` joins the cluster this process already belongs to or starts a local one. Each task's process is
  given ``num_cpus`` threads. Why Ray: docs/scale-out.md.

Whatever a process is given, the pipeline's stages compute with :data:`shc.runs.STAGE_THREADS` threads
(:func:`fixed_threads`): the thread count changes CPU results, so it is fixed for them to be the same everywhere.

:mod:`shc.pipeline` runs its grids through these (``run_grid(..., executor="ray")``, ``--executor ray``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any

from shc.registry import Registry

__all__ = ["EXECUTORS", "Outcome", "dask_executor", "fixed_threads", "grid_workers", "in_turn",
           "interruptible_worker", "local_executor", "open_executor", "positive_jobs", "ray_executor", "run_in_worker",
           "stop_workers", "watch_parent", "WorkerDied"]

Outcome = tuple[int, Any, BaseException | None, float]
"""``(position, result, error, seconds)`` of one call: ``result`` is None where ``error`` is not."""


def positive_jobs(jobs: int) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer (1 = one run at a time) or 'auto', got {jobs!r}.")
    return jobs


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def set_threads(threads: int) -> None:
    """Train with ``threads`` threads in this process (torch, and numba's kernels).

    numba first: its first import in a process starts its threading layer, which resets the OpenMP thread count
    torch reads, so a torch count set before it was lost (a stage whose first numba import came inside
    :func:`fixed_threads` trained with every core; issue 36's check of identical numbers found it)."""
    with contextlib.suppress(Exception):
        import numba

        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    import torch

    torch.set_num_threads(threads)


def _current_threads() -> int:
    import torch

    return torch.get_num_threads()


@contextlib.contextmanager
def fixed_threads(threads: int) -> Iterator[None]:
    """Compute with exactly ``threads`` threads inside the block (torch and numba), whatever this process was
    given (a cluster task's CPUs, ``--jobs``, every core), and give the process its own count back afterwards.

    A CPU result depends on the thread count (the summation order of torch's reductions), so each pipeline stage
    computes inside one of these with its fixed count (:data:`shc.runs.STAGE_THREADS`, docs/scale-out.md)."""
    before = _current_threads()
    set_threads(threads)
    try:
        yield
    finally:
        set_threads(before)


@contextlib.contextmanager
def grid_workers(jobs: int, threads: int | None = None) -> Iterator[Any]:
    """A pool of ``jobs`` worker processes (spawned) that share this machine's cores between them.

    Each worker runs ``torch.set_num_threads(threads)`` (default cores // jobs, at least 1; the same
    for numba). Measured on the
    2-core machine (by a script never committed; ``benchmarks/profile_standard.py`` under ``OMP_NUM_THREADS=1``
    and again under ``=2`` times a step at each thread count), one training step of the standard preset's network
    takes 7.0 ms with two threads and 11.3 ms with one, so two one-thread workers move about 1.25x as many
    images a second, more once the Python overhead of each step (data, loss, optimizer) runs in parallel too.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    threads = max(1, _cpu_count() // positive_jobs(jobs)) if threads is None else threads
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                               initializer=interruptible_worker, initargs=(threads,))
    try:
        yield pool
    except BaseException:  # Ctrl-C, SIGTERM (through shc.cli_common.run_cli) or an error: the running calls stop too
        stop_workers(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def interruptible_worker(threads: int | None = None) -> None:
    """The initializer of a worker that its parent stops (:func:`stop_workers`): SIGTERM raises
    ``KeyboardInterrupt`` once (the call unwinds as after Ctrl-C: a run keeps its last epoch, a report page its
    previous version), and the terminal's Ctrl-C, which reaches every process of the group, is left to the parent,
    so that each worker is interrupted once, not again in the middle of its cleanup. With ``threads``, the worker
    computes with that many (:func:`set_threads`).

    Without it, a SIGTERM to the parent alone (``kill PID``, a batch scheduler) would cancel the calls not started
    and wait for the running ones to finish: hours, for a training run. A parent that dies without passing anything
    on (``kill -9``, the out-of-memory killer, a script whose SIGTERM is not caught) is noticed by
    :func:`watch_parent`, which interrupts the worker the same way."""
    def interrupt(signum, frame):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # once
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, interrupt)
    watch_parent()
    if threads is not None:
        set_threads(threads)


_ORPHANED = threading.Event()  #: set in a worker whose parent is gone (:func:`watch_parent`)
_IN_CALL = threading.Event()  #: set while a worker computes a call (:func:`run_in_worker`)


def watch_parent() -> threading.Thread | None:
    """In a worker process: a daemon thread that waits for the process that created it to end
    (``multiprocessing.parent_process().sentinel``: no polling, and a parent already gone when the worker starts is
    seen at once), then stops the worker. A worker computing a call is interrupted as its parent would have done
    (SIGTERM: the call unwinds as after Ctrl-C, a run keeping its last epoch), and :func:`run_in_worker` ends the
    process once the call has unwound; an idle worker ends at once, since no call can reach it any more.

    Without it, a worker whose parent was killed outright (``kill -9``, the out-of-memory killer, a script that does
    not catch SIGTERM) trained on as an orphan for an hour, holding its run's lock (a session's ``pkill`` of a
    benchmark script), and a worker that had unwound then waited for a next call for ever. Returns None in a process
    that no ``multiprocessing`` parent created."""
    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None:
        return None

    def watch() -> None:
        wait([parent.sentinel])
        _ORPHANED.set()
        if not _IN_CALL.is_set():
            _leave()
        os.kill(os.getpid(), signal.SIGTERM)  # ignored if an interruption is already unwinding the call

    thread = threading.Thread(target=watch, name="shc-parent-watch", daemon=True)
    thread.start()
    return thread


def run_in_worker(function: Callable[..., Any], *arguments: Any) -> Any:
    """``function(*arguments)`` as a pool worker's call: a worker whose parent is gone (:func:`watch_parent`) ends
    once the call has returned or unwound, instead of waiting for a call no one will send."""
    _IN_CALL.set()
    try:
        return function(*arguments)
    finally:
        _IN_CALL.clear()
        if _ORPHANED.is_set():
            _leave()


def _leave() -> None:
    """End this worker process at once (status 130, as after an interruption), its output flushed."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(130)


def stop_workers(pool: Any) -> None:
    """Pass the parent's interruption on: SIGTERM to each live worker process of ``pool`` (a
    ``ProcessPoolExecutor`` whose workers started with :func:`interruptible_worker`)."""
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        with contextlib.suppress(OSError):
            os.kill(process.pid, signal.SIGTERM)


def _timed(function: Callable[[Any], Any], argument: Any, threads: int | None = None) -> tuple[Any, float]:
    """``function(argument)`` and its seconds (in a worker; with ``threads``, set first)."""
    if threads is not None:
        set_threads(threads)
    started = time.perf_counter()
    return run_in_worker(function, argument), time.perf_counter() - started


def in_turn(keys: Iterable[Hashable], submit: Callable[[Hashable], Future], workers: int
            ) -> Iterator[tuple[Hashable, Future]]:
    """``(key, future)`` of each ``submit(key)`` as it finishes, with at most ``workers`` submitted at once, in the
    order of ``keys`` (those finishing together: in that order too).

    A call is submitted only when a worker is free, so none waits in the pool's queue, where an interruption could no
    longer cancel it (``ProcessPoolExecutor`` moves one call more than it has workers into its queue and starts it
    even after ``shutdown(cancel_futures=True)``). An interruption cancels nothing that runs: :func:`stop_workers`
    does that."""
    from concurrent.futures import FIRST_COMPLETED, wait

    waiting = list(keys)
    running: dict[Future, Hashable] = {}
    position = {key: index for index, key in enumerate(waiting)}
    while waiting or running:
        while waiting and len(running) < workers:
            key = waiting.pop(0)
            running[submit(key)] = key
        done, _ = wait(running, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=lambda finished: position[running[finished]]):
            yield running.pop(future), future


class WorkerDied(RuntimeError):
    """A local worker process died in the middle of a run (killed for memory, a crash in native code): the run it
    held, and the others running beside it, stopped with it; their finished stages and last epochs are kept."""


class _Local:
    """:func:`local_executor`'s mapper: computes in spawned worker processes of this machine."""

    remote = False  #: stages shared between runs are computed by the caller, in its own process

    def __init__(self, open_pool: Callable[[], Any], workers: int) -> None:
        self._open_pool = open_pool
        self._pool = open_pool()
        self._workers = workers

    def map(self, function: Callable[[Any], Any], arguments: Sequence[Any]) -> Iterator[Outcome]:
        """Each call's outcome as it finishes. When a worker dies (``BrokenProcessPool``: the pool stops every
        worker), each call that was running fails with :class:`WorkerDied`, and the calls not started yet go on in
        a new pool: one run killed for memory does not end the grid."""
        from concurrent.futures import BrokenExecutor

        died = ("a worker process died while this run or one beside it was computing (killed for memory? see the "
                "system log): rerun the grid to resume it, with fewer --jobs if memory ran out")
        left = list(range(len(arguments)))
        while left:
            started: list[int] = []

            def submit(position: int) -> Future:
                future = self._pool.submit(_timed, function, arguments[position])
                started.append(position)
                return future

            broken = False
            try:
                for position, future in in_turn(list(left), submit, self._workers):
                    left.remove(position)
                    try:
                        result, seconds = future.result()
                    except BrokenExecutor:
                        broken = True
                        yield position, None, WorkerDied(died), 0.0
                    except Exception as error:  # the run's own failure: reported, the others go on
                        yield position, None, error, 0.0
                    else:
                        yield position, result, None, seconds
            except BrokenExecutor:  # the pool broke while a call was being submitted
                if not started:
                    raise  # a new pool cannot even start a worker: nothing to go on with
                broken = True
            if broken:
                for position in [position for position in started if position in left]:  # stopped with the pool
                    left.remove(position)
                    yield position, None, WorkerDied(died), 0.0
                if left:
                    self._pool = self._open_pool()


@contextlib.contextmanager
def local_executor(jobs: int = 1, threads: int | None = None, **_: Any) -> Iterator[_Local]:
    """``jobs`` spawned worker processes on this machine, ``threads`` each (default cores // jobs)."""
    with contextlib.ExitStack() as pools:  # a new pool after a worker died; each is stopped and shut down at the end
        yield _Local(lambda: pools.enter_context(grid_workers(positive_jobs(jobs), threads)), positive_jobs(jobs))


def _check_resources(num_cpus: Any, num_gpus: Any) -> None:
    for name, value in (("num_cpus", num_cpus), ("num_gpus", num_gpus)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ValueError(f"{name} must be a non-negative number (resources of one run), got {value!r}.")
    if num_cpus <= 0:
        raise ValueError("num_cpus must be positive: a run needs at least one CPU (--cpus-per-run).")


class _Ray:
    """:func:`ray_executor`'s mapper: one Ray task per call."""

    remote = True  #: shared stages run as tasks too (the caller may be a login node without a GPU)

    def __init__(self, ray, num_cpus: float, num_gpus: float) -> None:
        self._ray = ray
        self._task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=0)(_timed)
        self._threads = max(1, int(num_cpus))

    def map(self, function: Callable[[Any], Any], arguments: Sequence[Any]) -> Iterator[Outcome]:
        ray = self._ray
        pending = {self._task.remote(function, argument, self._threads): position
                   for position, argument in enumerate(arguments)}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                position = pending.pop(ready[0])
                try:
                    result, seconds = ray.get(ready[0])
                except ray.exceptions.RayTaskError as error:  # the run's own exception, as raised in the task
                    cause = error.cause if isinstance(getattr(error, "cause", None), BaseException) else error
                    yield position, None, cause, 0.0
                except ray.exceptions.RayError as error:  # the worker died (out of memory, node lost, ...)
                    yield position, None, error, 0.0
                else:
                    yield position, result, None, seconds
        except BaseException:
            for reference in pending:
                ray.cancel(reference)
            raise


RAY_GCS_PORT_WAIT_S = 60
"""Seconds a local Ray node's driver waits for its GCS server to bind a port (Ray's own default is 30 s).

On a loaded 2-core machine ``ray.init`` has failed with "Timed out waiting for file .../gcs_server_port_..." after
30 s, and once after 120 s with no GCS log written at all: the server had not started, not started late. So the
wait is 60 s and :func:`start_local_ray` starts the node once more after such a timeout;
``RAY_gcs_server_port_wait_time_s`` in the environment still wins."""


def start_local_ray(ray: Any, **options: Any) -> None:
    """Start a local Ray node (``ray.init`` with ``options``, no dashboard, no worker logs in this process),
    waiting :data:`RAY_GCS_PORT_WAIT_S` for its GCS server unless the environment sets that wait itself, and once
    more after a timeout waiting for the GCS server's port (a second timeout raises); the environment is restored
    afterwards."""
    name = "RAY_gcs_server_port_wait_time_s"
    preset = os.environ.get(name)
    if preset is None:
        os.environ[name] = str(RAY_GCS_PORT_WAIT_S)
    try:
        for attempt in (1, 2):
            try:
                ray.init(include_dashboard=False, log_to_driver=False, **options)
                return
            except RuntimeError as error:  # a GCS server that never wrote its port: start the node once more
                if attempt == 2 or "gcs_server_port" not in str(error):
                    raise
                ray.shutdown()
    finally:
        if preset is None:
            os.environ.pop(name, None)


@contextlib.contextmanager
def ray_executor(address: str | None = None, num_cpus: float = 1, num_gpus: float = 0, **_: Any) -> Iterator[_Ray]:
    """Tasks on a Ray cluster: ``address`` (``HOST:6379``, ``ray://HOST:10001`` or ``auto``) joins a running
    one; None uses the cluster this process already joined, else starts a local one (shut down afterwards).
    Every task asks for ``num_cpus`` CPUs and ``num_gpus`` GPUs."""
    try:
        import ray
    except ImportError:
        raise ImportError("ray is not installed (needed for --executor ray): pip install -e '.[cluster]'") from None
    _check_resources(num_cpus, num_gpus)
    started = not ray.is_initialized()
    if started:
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            start_local_ray(ray)
    try:
        yield _Ray(ray, num_cpus, num_gpus)
    finally:
        if started:
            ray.shutdown()


class _Dask:
    """:func:`dask_executor`'s mapper: one Dask task per call."""

    remote = True

    def __init__(self, client, num_cpus: float, num_gpus: float) -> None:
        self._client = client
        self._resources = {"GPU": num_gpus} if num_gpus else None  # workers started with --resources GPU=n
        self._threads = max(1, int(num_cpus))

    def map(self, function: Callable[[Any], Any], arguments: Sequence[Any]) -> Iterator[Outcome]:
        from distributed import as_completed

        futures = {self._client.submit(_timed, function, argument, self._threads, pure=False,
                                       resources=self._resources, retries=0): position
                   for position, argument in enumerate(arguments)}
        try:
            for future in as_completed(list(futures)):
                position = futures.pop(future)  # released once read: a lost worker's finished runs are not redone
                if future.status == "error":
                    yield position, None, future.exception(), 0.0
                elif future.status != "finished":  # cancelled (by the scheduler, or a worker that kept dying)
                    yield position, None, RuntimeError(f"the Dask task was {future.status}, not finished: read the "
                                                       "workers' logs and rerun (finished runs are kept)"), 0.0
                else:
                    result, seconds = future.result()
                    yield position, result, None, seconds
                future.release()
        except BaseException:
            self._client.cancel(list(futures))
            raise


@contextlib.contextmanager
def dask_executor(address: str | None = None, num_cpus: float = 1, num_gpus: float = 0, **_: Any) -> Iterator[_Dask]:
    """Tasks on a Dask cluster: ``address`` (``tcp://HOST:8786``, from ``dask scheduler``; workers joined with
    ``dask worker tcp://HOST:8786 --nthreads 1 --resources GPU=1`` on each machine, or started by
    ``dask-jobqueue`` on Slurm/PBS) joins it; None starts a local cluster of ``cores // num_cpus`` one-thread
    worker processes (closed afterwards). Each task's process is given ``num_cpus`` threads (its stages compute with
    :data:`shc.runs.STAGE_THREADS` all the same) and, with ``num_gpus``, takes that much of a worker's ``GPU``
    resource."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ImportError("dask.distributed is not installed (needed for --executor dask): "
                          "pip install -e '.[cluster]'") from None
    _check_resources(num_cpus, num_gpus)
    cluster = None
    if address is None and num_gpus:
        raise ValueError("a local Dask cluster has no GPU resource: start one `CUDA_VISIBLE_DEVICES=i dask worker "
                         "tcp://HOST:8786 --nthreads 1 --resources GPU=1` per GPU and pass --address, or use "
                         "--executor ray (which assigns GPUs itself).")
    if address is None:
        import dask

        # a run that kills its worker (out of memory) fails once, as on the local executor and Ray: the scheduler's
        # default (3 allowed failures) trained it four times, each time killing a worker (docs/scale-out.md)
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            cluster = LocalCluster(n_workers=max(1, int(_cpu_count() // num_cpus)), threads_per_worker=1,
                                   processes=True, dashboard_address=None)
    client = Client(address or cluster)
    try:
        yield _Dask(client, num_cpus, num_gpus)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


EXECUTORS: Registry[Callable[..., contextlib.AbstractContextManager]] = Registry("executor")
EXECUTORS.register("local", local_executor)
EXECUTORS.register("ray", ray_executor)
EXECUTORS.register("dask", dask_executor)


def open_executor(name: str, **options: Any) -> contextlib.AbstractContextManager:
    """The executor ``name`` of :data:`EXECUTORS`, opened with ``options`` (``jobs``, ``threads``, ``address``,
    ``num_cpus``, ``num_gpus``: each executor takes what applies to it)."""
    return EXECUTORS.get(name)(**options)
