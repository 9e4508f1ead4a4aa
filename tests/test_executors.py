"""Grids on an executor: the local process pool and a Dask or Ray cluster of two workers started here give the same
numbers; a failing run is named and does not stop the others; a rerun resumes."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
from pathlib import Path

import pytest

from shc.executors import EXECUTORS, RAY_GCS_PORT_WAIT_S, open_executor, start_local_ray
from shc.pipeline import GridFailures, RunConfig, run_grid, stage_directories

OPTIONS = {"num_classes": 8, "train_per_class": 8, "val_per_class": 2, "query_per_class": 2, "database_per_class": 4}


def _unchecked(config: RunConfig, **fields) -> RunConfig:
    """``config`` with ``fields`` set past RunConfig's checks: a run that fails inside a stage (a hyper-parameter its
    loss or center generator does not take, which RunConfig now refuses when it is built), to test failure handling."""
    for name, value in fields.items():
        object.__setattr__(config, name, value)
    return config


def _grid(run_dir) -> list[RunConfig]:
    """shc (stage 1 trains a classifier, stage 2 reads its S), random and csq (stage 2 only), and a run that
    fails in stage 3 (an option its loss does not take)."""
    common = dict(epochs=1, classifier_epochs=1, eval_every=1, bits=16, precision="fp32", dataset_options=OPTIONS,
                  run_dir=str(run_dir))
    return [RunConfig(method=method, **common) for method in ("shc", "random", "csq")] + \
        [_unchecked(RunConfig(method="csq", **common), method_options={"no_such_option": 1})]


def _numbers(rows):
    return [{key: value for key, value in row.items() if key != "train_seconds"} for row in rows]


def _failing_grid(configs, **options):
    lines = []
    with pytest.raises(GridFailures) as failure:
        run_grid(configs, progress=True, log=lines.append, **options)
    assert list(failure.value.failures) == ["digits-composite csq 16 bits seed 0"]
    assert "no_such_option" in str(failure.value) and "rerun the same command" in str(failure.value)
    assert any(line.startswith("FAILED digits-composite csq 16 bits seed 0") for line in lines)
    assert any(line.startswith("[3/4]") for line in lines)  # progress: runs done / total
    assert failure.value.rows[3] is None
    return failure.value.rows[:3]


@pytest.fixture(scope="module")
def local_grid(tmp_path_factory):
    """The grid on the local executor (two worker processes); stages 1 and 2 run in this process, with one
    thread, as each cluster task does."""
    import torch

    configs = _grid(tmp_path_factory.mktemp("local"))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return configs, _failing_grid(configs, jobs=2)
    finally:
        torch.set_num_threads(threads)


@contextlib.contextmanager
def _two_worker_cluster(engine: str, env: dict[str, str] | None = None):
    """A cluster of two one-CPU workers started here; yields the address to join (None: this process joined).
    ``env``: environment variables of the Dask workers (what they see differently from this process)."""
    if importlib.util.find_spec({"ray": "ray", "dask": "distributed"}[engine]) is None:
        pytest.skip(f"{engine} is not installed: pip install -e '.[cluster]' (CI installs it)")
    if engine == "dask":
        from distributed import LocalCluster

        # ":0": any free port for the dashboard (None means the default 8787, which the module's cluster holds)
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                          env=env or {}) as cluster:
            yield cluster.scheduler_address
        return
    import ray

    try:
        start_local_ray(ray, num_cpus=2)
    except Exception as error:  # noqa: BLE001 - the node itself did not start: nothing of shc ran yet
        if "timed out during startup" not in str(error):
            raise
        pytest.skip(f"Ray could not start a local node on this machine ({error}); on a loaded 2-core machine its "
                    "raylet aborts after waiting 15 s for its agent process (docs/scale-out.md)")
    try:
        yield None
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def clusters():
    """``clusters(engine)``: the address of this module's two-worker cluster of ``engine``, started on first use and
    kept to the module's end. Starting one is most of a cluster test's time (Ray's node about 30 s on a busy 2-core
    machine), and a worker that already ran another grid must give the same bytes too."""
    started: dict[str, str | None] = {}
    with contextlib.ExitStack() as stack:
        def address(engine: str) -> str | None:
            if engine not in started:
                started[engine] = stack.enter_context(_two_worker_cluster(engine))
            return started[engine]

        yield address


@pytest.mark.parametrize("engine", ["dask", "ray"])
def test_a_grid_on_a_two_worker_cluster_equals_the_local_grid_and_resumes(engine, local_grid, clusters, tmp_path):
    local_configs, local = local_grid
    configs = _grid(tmp_path / engine)
    address = clusters(engine)
    remote = _failing_grid(configs, executor=engine, address=address, cpus_per_run=1)
    assert _numbers(remote) == _numbers(local)
    for twin, config in zip(local_configs[:3], configs[:3]):  # same identities, one thread per run
        assert json.loads((stage_directories(config)["stage3"] / "metrics.json").read_text())["threads"] == 1
        assert stage_directories(twin)["stage2"].name == stage_directories(config)["stage2"].name
    lines = []  # the rerun, the failing run left out: nothing is recomputed
    again = run_grid(configs[:3], progress=True, log=lines.append, executor=engine, address=address)
    assert _numbers(again) == _numbers(local)
    assert len(lines) == 3 and all("(cached" in line for line in lines)  # read, not trained


def test_executors_are_a_registry_with_clear_errors():
    assert EXECUTORS.names() == ["local", "ray", "dask"]
    with pytest.raises(ValueError, match="unknown executor 'rya'; did you mean 'ray'"):
        open_executor("rya")
    with pytest.raises(ValueError, match="unknown executor"):
        run_grid(_grid("unused")[:2], progress=False, executor="slurm")
    if importlib.util.find_spec("ray") is not None:
        with pytest.raises(ValueError, match="num_cpus must be positive"), open_executor("ray", num_cpus=0):
            pass


def test_a_local_ray_node_waits_longer_for_its_gcs_server_unless_told_and_leaves_the_environment_as_it_was(
        monkeypatch):
    name = "RAY_gcs_server_port_wait_time_s"
    seen = []

    class FakeRay:  # records what ray.init would have read from the environment
        @staticmethod
        def init(**options):
            seen.append((os.environ.get(name), options))
            if options.get("fail"):
                raise RuntimeError("Timed out waiting for file")

    monkeypatch.delenv(name, raising=False)
    start_local_ray(FakeRay, num_cpus=2)
    assert seen[-1] == (str(RAY_GCS_PORT_WAIT_S), {"include_dashboard": False, "log_to_driver": False, "num_cpus": 2})
    assert name not in os.environ and RAY_GCS_PORT_WAIT_S > 30  # Ray's own default is 30 s
    with pytest.raises(RuntimeError, match="Timed out"):
        start_local_ray(FakeRay, fail=True)
    assert name not in os.environ  # restored on failure too
    monkeypatch.setenv(name, "7")  # the user's own setting wins and stays
    start_local_ray(FakeRay)
    assert seen[-1][0] == "7" and os.environ[name] == "7"


def test_a_local_ray_node_whose_gcs_server_never_wrote_its_port_is_started_once_more():
    """CI, 2026-11-29: ray.init timed out after 120 s waiting for the GCS server's port file, with no GCS log written;
    the node alone started at once. One more start after ray.shutdown(); a second such timeout, or another error,
    raises."""
    calls = []

    class FlakyRay:
        failures = 1

        @classmethod
        def init(cls, **options):
            calls.append("init")
            if cls.failures:
                cls.failures -= 1
                raise RuntimeError("Timed out waiting for file /tmp/ray/session_x/gcs_server_port_604f")

        @staticmethod
        def shutdown():
            calls.append("shutdown")

    start_local_ray(FlakyRay, num_cpus=2)
    assert calls == ["init", "shutdown", "init"]
    calls.clear()
    FlakyRay.failures = 2
    with pytest.raises(RuntimeError, match="gcs_server_port"):
        start_local_ray(FlakyRay)
    assert calls == ["init", "shutdown", "init"]
    calls.clear()

    class BrokenRay(FlakyRay):
        @classmethod
        def init(cls, **options):
            calls.append("init")
            raise RuntimeError("timed out during startup")

    with pytest.raises(RuntimeError, match="during startup"):
        start_local_ray(BrokenRay)
    assert calls == ["init"]


def test_the_local_pool_reports_a_failing_call_and_goes_on():
    with open_executor("local", jobs=2, threads=1) as pool:
        outcomes = sorted(pool.map(int, ["1", "x", "3"]), key=lambda outcome: outcome[0])
    assert [(position, result) for position, result, _, _ in outcomes] == [(0, 1), (1, None), (2, 3)]
    assert isinstance(outcomes[1][2], ValueError) and outcomes[0][2] is None


def test_a_worker_that_dies_fails_the_runs_it_stopped_and_the_grid_goes_on_in_a_new_pool():
    """A run killed for memory breaks a ProcessPoolExecutor: every call then fails with BrokenProcessPool and the next
    submission raises it out of the grid, so one dead worker ended the whole grid, naming no run (an audit,
    2026-12-02). Now the calls it stopped fail with WorkerDied, saying what to do, and the rest run in a new pool."""
    from shc.executors import WorkerDied

    calls = ["__import__('time').sleep(20) or 0", "__import__('os')._exit(3)", "2", "3", "4"]
    with open_executor("local", jobs=2, threads=1) as pool:
        outcomes = sorted(pool.map(eval, calls), key=lambda outcome: outcome[0])
    assert [position for position, *_ in outcomes] == [0, 1, 2, 3, 4]  # each reported once
    assert isinstance(outcomes[1][2], WorkerDied) and "fewer --jobs" in str(outcomes[1][2])
    # running beside it: stopped with the pool (a fresh clone's CI once saw it finish instead; either is an outcome)
    assert isinstance(outcomes[0][2], WorkerDied) or (outcomes[0][1], outcomes[0][2]) == (0, None)
    # a call submitted before the dead worker was noticed may be stopped with the pool too (a loaded CI saw "2" so);
    # each is its value or WorkerDied, and the grid goes on: the last call runs in the new pool
    for position, result, error, _ in outcomes[2:]:
        assert (result, error) == (position, None) or isinstance(error, WorkerDied), (position, result, error)
    assert (outcomes[4][1], outcomes[4][2]) == (4, None)


def test_a_failing_shared_stage_blocks_only_the_runs_that_read_it_on_the_local_executor(tmp_path):
    """Stages 0-2 run in the planner's process on the local executor; a failure there ended the grid, naming no run,
    and the other runs never trained (an audit, 2026-12-02). Now, as on a cluster, the runs reading the failed stage
    fail by name and the others train."""
    common = dict(epochs=1, eval_every=1, bits=16, precision="fp32", dataset_options=OPTIONS, run_dir=str(tmp_path))
    configs = [_unchecked(RunConfig(method="csq", **common), center_options={"bogus": 1}),
               RunConfig(method="greedyhash", **common),
               _unchecked(RunConfig(method="csq", seed=1, **common), center_options={"bogus": 1})]
    lines = []
    with pytest.raises(GridFailures) as failure:
        run_grid(configs, progress=True, log=lines.append, jobs=2)
    assert list(failure.value.failures) == ["digits-composite csq 16 bits seed 0", "digits-composite csq 16 bits seed 1"]
    assert all("bogus" in str(error) for error in failure.value.failures.values())
    assert failure.value.rows[1] is not None and failure.value.rows[1]["method"] == "greedyhash"  # it trained
    assert sum(line.startswith("FAILED stage") for line in lines) >= 1


def test_calls_are_submitted_in_turn_never_more_than_the_workers():
    """``in_turn`` keeps the pool's queue empty: a call is submitted only when one of ``workers`` is free, in the
    order of the keys, and each comes back with its own key (the bug it prevents: an interrupted grid started a
    queued run after stopping the running ones)."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from shc.executors import in_turn

    lock, running, most, submitted = threading.Lock(), [0], [0], []

    def call(key: str) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        threading.Event().wait(0.05)
        with lock:
            running[0] -= 1
        return key.upper()

    with ThreadPoolExecutor(4) as pool:  # more threads than the workers allowed: only in_turn can hold it to two
        def submit(key: str):
            submitted.append(key)
            return pool.submit(call, key)

        finished = list(in_turn(["c", "a", "d", "b", "e"], submit, workers=2))
    assert submitted == ["c", "a", "d", "b", "e"]
    assert most[0] == 2
    assert sorted((key, future.result()) for key, future in finished) == [(k, k.upper()) for k in "abcde"]


def test_both_grid_command_lines_take_the_executor_options(capsys):
    from shc.pipeline import main as pipeline_main
    from shc.reports.cli import main as reports_main

    assert pipeline_main(["--preset", "tiny", "--list", "--executor", "dask", "--address", "tcp://h:8786"]) == 0
    assert "2 runs" in capsys.readouterr().out
    assert pipeline_main(["--preset", "tiny", "--address", "tcp://h:8786"]) == 2
    assert "--address and --gpus-per-run are for a cluster" in capsys.readouterr().err
    assert reports_main(["--preset", "tiny", "--list", "--executor", "ray", "--gpus-per-run", "1"]) == 0
    with pytest.raises(SystemExit) as stop:
        pipeline_main(["--preset", "tiny", "--executor", "slurm"])
    assert stop.value.code == 2 and "invalid choice: 'slurm'" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Issue 39 item 1: the numbers are a function of the config, whatever runs it
# --------------------------------------------------------------------------------------------
def _tiny(run_dir, methods=None) -> list[RunConfig]:
    from shc.pipeline import preset

    return preset("tiny", methods=methods, run_dir=str(run_dir))


def _artifacts(configs) -> dict[str, object]:
    """Every artifact that holds numbers, by its path below the run directory: S, centers, each code array, and
    the metrics and center quality without their timings (seconds differ from one computation to the next)."""
    import numpy as np

    timings = {"train_seconds", "seconds"}
    found: dict[str, object] = {}
    for config in configs:
        root = Path(config.run_dir)
        folders = stage_directories(config)
        for stage, name in (("stage1", "similarity.npy"), ("stage2", "centers.npy")):
            if (folders[stage] / name).exists():
                found[str((folders[stage] / name).relative_to(root))] = (folders[stage] / name).read_bytes()
        with np.load(folders["stage3"] / "codes.npz") as codes:
            for key in codes.files:
                found[f"{folders['stage3'].relative_to(root)}/codes.npz:{key}"] = codes[key].tobytes()
        for stage, name in (("stage1", "metrics.json"), ("stage2", "quality.json"), ("stage3", "metrics.json")):
            if (folders[stage] / name).exists():
                record = json.loads((folders[stage] / name).read_text())
                found[str((folders[stage] / name).relative_to(root))] = \
                    {key: value for key, value in record.items() if key not in timings}
    return found


@pytest.fixture(scope="module")
def tiny_reference(tmp_path_factory):
    """The tiny preset under the local executor, one run at a time (``--jobs 1``: every core of this process)."""
    configs = _tiny(tmp_path_factory.mktemp("jobs1"))
    run_grid(configs, progress=False, jobs=1)
    return _artifacts(configs)


@pytest.mark.parametrize("way", ["jobs auto", "one method", "dask", "ray"])
def test_the_tiny_grid_gives_byte_identical_artifacts_whatever_runs_it(way, tiny_reference, clusters, tmp_path):
    """The issue's case: SHC's mAP@ALL was 0.4081 under Dask and Ray and 0.3655 locally (stage 1 trained with one
    thread on a worker and every core here), and a one-method grid trained its cell with other threads than the
    full grid. Every stage now computes with STAGE_THREADS threads and records them."""
    import torch

    threads = torch.get_num_threads()
    if way == "one method":  # a grid of one run trains in this process, on every core it has
        configs = _tiny(tmp_path, methods=["shc"])
        run_grid(configs, progress=False, jobs="auto")
        expected = {path: value for path, value in tiny_reference.items() if "-mds-" not in path}
    elif way == "jobs auto":
        configs = _tiny(tmp_path)
        run_grid(configs, progress=False, jobs="auto")
        expected = tiny_reference
    else:
        configs = _tiny(tmp_path)
        run_grid(configs, progress=False, executor=way, address=clusters(way))
        expected = tiny_reference
    found = _artifacts(configs)
    assert sorted(found) == sorted(expected)  # the same stage folders (identities)
    assert [path for path in expected if found[path] != expected[path]] == []
    from shc.runs import STAGE_THREADS

    assert {record["threads"] for path, record in found.items() if path.endswith(".json")} == {STAGE_THREADS}
    assert torch.get_num_threads() == threads  # a stage gives the process its thread count back
    # every hashing run records where it trained and in which precision (auto resolved): results differ by device
    from shc.devices import resolve_precision

    hashing = [record for path, record in found.items() if path.endswith("metrics.json") and "stage3-" in path]
    assert hashing and {(record["device"], record["precision"]) for record in hashing} == {
        ("cpu", resolve_precision("auto", torch.device("cpu")))}


# --------------------------------------------------------------------------------------------
# Issue 39 item 2: a worker checks what it reads before computing
# --------------------------------------------------------------------------------------------
def _mnist_root(root: Path, seed: int) -> Path:
    import numpy as np

    from test_data import write_tiny_mnist

    write_tiny_mnist(root / "MNIST" / "raw", np.random.default_rng(seed))
    return root


def _default_root_config(run_dir) -> RunConfig:
    """A config whose data is found at the default data root ($SHC_DATA_ROOT): the same path on every machine."""
    return RunConfig(dataset="mnist-composite", method="random", bits=16, epochs=1, eval_every=1, precision="fp32",
                     dataset_options={"train_per_class": 2, "val_per_class": 1, "query_per_class": 1,
                                      "database_per_class": 2}, run_dir=str(run_dir))


def test_a_cluster_worker_that_sees_other_data_at_the_same_path_refuses(tmp_path, monkeypatch):
    """The issue's case: a worker whose data root holds other files trained on them, and the caller reported those
    numbers as its own grid's. Here the Dask workers' $SHC_DATA_ROOT holds other MNIST files than this process's."""
    from shc.runs import forget_data

    mine, theirs = _mnist_root(tmp_path / "mine", 0), _mnist_root(tmp_path / "theirs", 1)
    monkeypatch.setenv("SHC_DATA_ROOT", str(mine))
    forget_data()
    config = _default_root_config(tmp_path / "runs")
    with _two_worker_cluster("dask", env={"SHC_DATA_ROOT": str(theirs)}) as address, \
            pytest.raises(GridFailures) as failure:
        run_grid([config], progress=False, log=lambda line: None, executor="dask", address=address)
    message = str(failure.value)
    assert "refuses stage2 of mnist-composite random 16 bits seed 0" in message
    assert "sees other data" in message and "data_fingerprint" in message and "same files at the same path" in message
    assert not list((tmp_path / "runs").glob("*/*/stage3-*"))  # nothing was trained on the other data


def test_a_worker_refuses_a_stage_whose_inputs_are_not_where_the_planner_left_them(tmp_path):
    """A hashing task whose centers are not in the run directory under their identity (a run_dir that is not
    shared, or a stage folder replaced meanwhile) is refused, not recomputed from whatever the worker has."""
    from shc.pipeline import WorkerMismatchError, _compute_stage, _task, run_centers

    config = RunConfig(method="csq", epochs=1, eval_every=1, bits=16, precision="fp32", dataset_options=OPTIONS,
                       run_dir=str(tmp_path))
    task = _task(config, "stage3")
    with pytest.raises(WorkerMismatchError, match=r"centers.npy, which .* finished, is not there under its identity"):
        _compute_stage(task)
    run_centers(config)
    (stage_directories(config)["stage2"] / "config.json").write_text("{}")  # another identity
    with pytest.raises(WorkerMismatchError, match="run_dir must be a folder every machine sees"):
        _compute_stage(task)
    assert not stage_directories(config)["stage3"].exists()


def test_a_crashed_cluster_worker_is_one_short_line_with_what_to_do():
    """A Ray worker that dies reports a multi-line, kilobytes-long message; the grid's error keeps one short line per
    failed run and says that the worker, not the run, failed and what to do. A run's own error gets no such hint."""
    crashed = type("WorkerCrashedError", (RuntimeError,), {"__module__": "ray.exceptions"})(
        "The worker died unexpectedly while executing this task.\n" + "  stack frame line\n" * 200)
    own = ValueError("lr must be a positive number, got 0.")
    message = str(GridFailures({"run a": crashed, "run b": own}, [None, None], 2))
    assert "\n" not in message and len(message) < 1000
    assert "run a: WorkerCrashedError: The worker died unexpectedly" in message and "..." in message
    assert "a cluster worker failed, not the run: read that worker's log" in message
    assert message.count("a cluster worker failed") == 1 and "run b: ValueError: lr must be a positive number" in message


def test_fixed_threads_holds_when_numba_is_first_imported_inside_it():
    """numba's first import in a process reset the thread count torch had just been given, so a stage whose first
    numba import came inside fixed_threads trained with every core (issue 36's check of identical numbers found
    it: the stage-1 classifier recorded threads 2). A fresh process, as a spawned grid worker is."""
    import subprocess
    import sys

    code = ("import sys, torch; torch.set_num_threads(2); assert 'numba' not in sys.modules; "
            "from shc.executors import fixed_threads\n"
            "with fixed_threads(1):\n"
            "    import numba; print(torch.get_num_threads(), numba.get_num_threads())\n"
            "print(torch.get_num_threads())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["1", "1", "2"]


def test_a_local_dask_cluster_fails_a_task_that_kills_its_worker_once_and_names_it():
    """The scheduler's default retried a task whose worker died three more times (four out-of-memory kills of one
    run); the local cluster now allows none, like the local executor and Ray (an audit, 2026-12-02)."""
    pytest.importorskip("distributed")
    with open_executor("dask", num_cpus=1) as pool:
        assert pool._client.run_on_scheduler(lambda dask_scheduler: dask_scheduler.allowed_failures) == 0
        outcomes = sorted(pool.map(eval, ["1", "__import__('os')._exit(3)", "2"]), key=lambda outcome: outcome[0])
    assert [(position, result) for position, result, _, _ in outcomes] == [(0, 1), (1, None), (2, 2)]
    assert outcomes[1][2] is not None


def test_a_grid_where_every_run_failed_does_not_say_the_others_finished():
    """GridFailures said "the other runs finished and are kept" when there were none (a reliability audit)."""
    error = ValueError("bad")
    some = GridFailures({"a": error}, [None, {"method": "csq"}], 2)
    every = GridFailures({"a": error, "b": error}, [None, None], 2)
    assert "1 of 2 runs failed (a: " in str(some) and "the other runs finished and are kept" in str(some)
    assert "2 of 2 runs failed" in str(every) and "other runs finished" not in str(every)
    assert "no run finished" in str(every) and "rerun the same command" in str(every)
