"""Regression tests for the reliability issue: each case used to give a silent wrong answer, a raw traceback,
or lost earlier output."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from shc import reports
from shc.metrics import mean_average_precision

REPO = Path(__file__).resolve().parents[1]


def test_a_misspelt_metrics_backend_is_an_error(monkeypatch):
    codes, labels = np.array([[1, -1], [-1, 1]]), np.array([0, 1])
    monkeypatch.setenv("SHC_METRICS_BACKEND", "bogus")
    with pytest.raises(ValueError, match="SHC_METRICS_BACKEND='bogus' is not a backend"):
        mean_average_precision(codes, labels, codes, labels)
    monkeypatch.setenv("SHC_METRICS_BACKEND", "numpy")
    assert mean_average_precision(codes, labels, codes, labels) == 1.0


def _nabirds_files(root: Path, class_lines: str, split_lines: str) -> None:
    from PIL import Image

    (root / "images" / "a").mkdir(parents=True)
    for i in range(4):
        Image.new("RGB", (4, 4)).save(root / "images" / "a" / f"{i}.jpg")
    (root / "images.txt").write_text("".join(f"id{i} a/{i}.jpg\n" for i in range(4)))
    (root / "image_class_labels.txt").write_text(class_lines)
    (root / "train_test_split.txt").write_text(split_lines)
    (root / "classes.txt").write_text("0 birds\n1 one\n2 two\n")
    (root / "hierarchy.txt").write_text("1 0\n2 0\n")


@pytest.mark.parametrize(
    "classes, split, message",
    [
        ("id0 1\nid1 1\nid2 2\nid3 2\nid0 2\n", "id0 1\nid1 0\nid2 1\nid3 0\n", "lists id 'id0' 2 times with different"),
        ("id0 1\nid1 1\nid2 2\nid3 2\n", "id0 1\nid1 0\nid2 2\nid3 0\n", r"must mark each image 1 \(train\) or 0"),
        ("id0 1\nid1 one\nid2 2\nid3 2\n", "id0 1\nid1 0\nid2 1\nid3 0\n", "image_class_labels.txt must hold integers"),
    ],
)
def test_inconsistent_labels_files_are_refused_naming_the_file(tmp_path, classes, split, message):
    from shc.data.formats import _nabirds

    _nabirds_files(tmp_path, classes, split)
    with pytest.raises(ValueError, match=message):
        _nabirds(tmp_path)


@pytest.mark.parametrize(
    "images, classes, message",
    [  # the cases: one image listed twice, or under one id with a second path, loaded 49 samples from 48
        ("id0 a/0.jpg\nid1 a/1.jpg\nid2 a/2.jpg\nid3 a/3.jpg\nid0 a/0.jpg\n", None, "lists image id 'id0' 2 times"),
        ("id0 a/0.jpg\nid1 a/1.jpg\nid2 a/2.jpg\nid3 a/3.jpg\nid0 a/9.jpg\n", None, "lists image id 'id0' 2 times"),
        ("id0 a/0.jpg\nid1 a/1.jpg\nid2 a/2.jpg\nid3 a/3.jpg\nid4 a/0.jpg\n", None, "lists image file .*0.jpg' 2"),
        ("id0 a/0.jpg\nid1 a/1.jpg\nid2 a/2.jpg\nid3 a/3.jpg\nid4 a/9.jpg\n", None,
         r"lists 1 image file\(s\) that do not exist: .*a/9.jpg"),
        (None, "id0 1\nid1 99999999999999999999\nid2 2\nid3 2\n", "must hold integers .*'99999999999999999999'"),
    ],
)
def test_index_files_listing_an_image_twice_or_a_missing_one_are_refused(tmp_path, images, classes, message):
    from shc.data.formats import _nabirds

    _nabirds_files(tmp_path, classes or "id0 1\nid1 1\nid2 2\nid3 2\nid4 2\n", "id0 1\nid1 0\nid2 1\nid3 0\nid4 1\n")
    if images:
        (tmp_path / "images.txt").write_text(images)
    with pytest.raises(ValueError, match=message):
        _nabirds(tmp_path)


def test_cars_annotations_naming_a_missing_or_repeated_image_are_refused(tmp_path):
    from test_data import write_cars_annotations, write_tiny_cars

    from shc.data import load_dataset

    truth = write_tiny_cars(tmp_path)
    missing = sorted(truth)[0]
    (tmp_path / missing).rename(tmp_path / "elsewhere.jpg")
    with pytest.raises(ValueError, match=rf"image file\(s\) that do not exist: .*{Path(missing).name}"):
        load_dataset("stanford-cars-b", root=tmp_path, train_size=3, query_size=3, val_size=1)
    (tmp_path / "elsewhere.jpg").rename(tmp_path / missing)
    write_cars_annotations(tmp_path / "devkit" / "cars_train_annos.mat", [1, 1], ["00001.jpg", "00001.jpg"])
    with pytest.raises(ValueError, match="cars_train_annos.mat lists image id '00001.jpg' 2 times"):
        load_dataset("stanford-cars-b", root=tmp_path, train_size=3, query_size=3, val_size=1)


@pytest.mark.parametrize("damage", ["truncated", "not gzip"])
def test_a_damaged_idx_file_is_named(tmp_path, damage):
    from test_data import write_tiny_mnist

    from shc.data import load_dataset

    write_tiny_mnist(tmp_path, np.random.default_rng(0))
    damaged = tmp_path / "train-images-idx3-ubyte.gz"
    damaged.write_bytes(damaged.read_bytes()[:200] if damage == "truncated" else b"plain bytes, not gzip")
    with pytest.raises(ValueError, match=rf"{damaged.name} cannot be read .*damaged"):
        load_dataset("mnist-composite", root=tmp_path)


def test_a_corrupt_image_is_named_at_load_time(tmp_path):
    from PIL import Image

    from shc.data import load_dataset

    for c in range(2):
        (tmp_path / f"c{c}").mkdir()
        for i in range(6):
            Image.new("RGB", (4, 4)).save(tmp_path / f"c{c}" / f"{i}.png")
    (tmp_path / "c1" / "3.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match=r"1 image file\(s\) cannot be read: .*c1/3.png"):
        load_dataset("imagefolder", root=tmp_path, train_size=3, query_size=1, val_size=1)


#: A stand-in for page 00 with what the runner's reliability tests need of a page, in seconds instead of the real
#: page's minute (tests/test_notebooks.py builds the real one): it refuses a code length that is not a power of two,
#: as CSQ's centers do, writes a figure and a summary, and from 32 bits on waits (unless $STAND_IN_SLEEP is 0), so
#: that a test can interrupt it there.
_STAND_IN = """import os
import time
from pathlib import Path

from shc.reports.summary import publish_summary

if bits & (bits - 1):
    raise ValueError(f"bits: {bits} is not a power of two")
figures = Path(output_dir) / "figures"
figures.mkdir(parents=True, exist_ok=True)
(figures / "gv_bound.png").write_bytes(f"{bits} bits".encode())
publish_summary(output_dir, {"q": bits})
if bits >= 32 and os.environ.get("STAND_IN_SLEEP") != "0":
    time.sleep(120)"""


def _stand_in_notebooks(folder: Path) -> Path:
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell('bits = 16\noutput_dir = "."', metadata={"tags": ["parameters"]}),
                      nbformat.v4.new_code_cell(_STAND_IN)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / "00_center_geometry.ipynb")
    return folder


def _tiny_report(output: Path, *extra: str) -> list[str]:
    """The tiny preset's page 00, from the stand-in notebook (beside ``output``)."""
    notebooks = _stand_in_notebooks(output.parent / "stand-in")
    return ["--preset", "tiny", "--only", "00", "--output", str(output), "--runs", str(output / "runs"),
            "--notebooks", str(notebooks), "--no-compute", *extra]


@pytest.fixture(scope="module")
def good_report(tmp_path_factory) -> Path:
    """One finished tiny page 00, built once: each test below breaks a copy of it."""
    output = tmp_path_factory.mktemp("good") / "reports"
    assert reports.main(_tiny_report(output)) == 0
    return output


def _copy_of(good_report: Path, tmp_path: Path) -> Path:
    output = tmp_path / "reports"
    shutil.copytree(good_report, output)
    return output


def test_a_failing_rerun_keeps_the_last_good_report_and_names_the_failure(good_report, tmp_path):
    output = _copy_of(good_report, tmp_path)
    folder = output / "tiny" / "00_center_geometry"
    good_html = (folder / "00_center_geometry-report.html").read_text()
    good_summary = json.loads((folder / "summary.json").read_text())
    assert reports.main(_tiny_report(output, "--bits", "12")) == 1  # not a power of two: the notebook fails
    assert (folder / "00_center_geometry-report.html").read_text() == good_html, "the good report was replaced"
    assert json.loads((folder / "summary.json").read_text()) == good_summary
    kept = folder / ".failed"  # the failed build, whole: its links reach its own files, not the good page's
    assert (kept / "00_center_geometry.ipynb").is_file() and (folder / "failure.json").is_file()
    assert not (kept / "run.json").exists() and not list(folder.glob("*.failed.*"))
    index = (output / "tiny" / "index.html").read_text()
    assert "last run" in index and ".failed/00_center_geometry.ipynb" in index
    assert not [p for p in folder.parent.iterdir() if ".building" in p.name]


def test_an_interrupted_report_leaves_the_old_one_whole(good_report, tmp_path):
    output = _copy_of(good_report, tmp_path)
    folder = output / "tiny" / "00_center_geometry"
    before = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-m", "shc.reports", *_tiny_report(output, "--bits", "32")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and not list(folder.parent.glob(".00_center_geometry.building-*/figures/*")):
        time.sleep(0.2)  # wait until the 32-bit run has written figures into its building folder
    assert list(folder.parent.glob(".00_center_geometry.building-*/figures/*")), "the run never reached its figures"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode != 0
    after = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before, "an interrupted run changed the finished report"
    assert not [p for p in folder.parent.iterdir() if ".building" in p.name], "the building folder was left"


def test_an_interrupted_pool_stops_every_running_notebook_and_keeps_their_pages(tmp_path, monkeypatch):
    """SIGTERM to a batch running two notebooks at once (a scheduler's stop, ``kill PID``): the workers do not get it
    from the system, so the batch passes it on; both stop at once and both previous pages stay whole."""
    output = tmp_path / "reports"
    monkeypatch.setenv("STAND_IN_SLEEP", "0")
    assert reports.main(_tiny_report(output, "--bits", "32", "64", "--notebook-jobs", "1")) == 0  # the pages to keep
    pages = output / "tiny" / "00_center_geometry"

    def files() -> dict:  # the pages' files; a lock file names its last holder
        return {p.relative_to(pages): p.read_bytes() for p in pages.rglob("*") if p.is_file() and p.suffix != ".lock"}

    before = files()
    assert {p.parts[0] for p in before} >= {"bits-32", "bits-64"}
    env = {**os.environ, "PYTHONPATH": str(REPO), "STAND_IN_SLEEP": "1"}
    process = subprocess.Popen([sys.executable, "-m", "shc.reports",
                                *_tiny_report(output, "--bits", "32", "64", "--notebook-jobs", "2")],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(pages.glob(".bits-*.building-*/figures/*"))) < 2:
        time.sleep(0.2)  # both notebooks are running (and waiting)
    assert len(list(pages.glob(".bits-*.building-*/figures/*"))) == 2, "the two notebooks never ran at once"
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)  # not the 120 s the notebooks would still wait
    assert process.returncode != 0
    assert files() == before, "an interrupted batch changed a finished page"
    assert not [p for p in pages.iterdir() if ".building" in p.name], "a building folder was left"


_SLOW_CALLS = """
import os
import time
from pathlib import Path


def slow(marker):  # a long run: says it started (and in which process), and whether an interrupt reached it
    Path(marker + ".started").write_text(str(os.getpid()))
    try:
        time.sleep(300)
    except KeyboardInterrupt:
        Path(marker + ".interrupted").touch()
        raise
"""

_GRID_PARENT = """
import sys
import slow_calls
from shc.cli_common import run_cli
from shc.executors import local_executor


def main(argv):
    with local_executor(jobs=2, threads=1) as executor:
        for outcome in executor.map(slow_calls.slow, argv):
            print(outcome, flush=True)
    return 0


if __name__ == "__main__":  # a spawned worker imports this file too
    sys.exit(run_cli(main))
"""


def test_sigterm_to_a_parallel_grid_stops_its_running_runs(tmp_path):
    """SIGTERM to the parent of ``--jobs 2`` alone (``kill PID``, a scheduler): the workers do not get it from the
    system, so the parent passes it on and both running calls stop at once (not after their 300 s) and unwind as
    after Ctrl-C. Before, the parent cancelled the calls not started and waited for the running ones."""
    (tmp_path / "slow_calls.py").write_text(_SLOW_CALLS)
    (tmp_path / "parent.py").write_text(_GRID_PARENT)
    markers = [str(tmp_path / name) for name in ("a", "b", "c")]  # c never starts: two workers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    process = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), *markers], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list(tmp_path.glob("*.started"))) < 2:
            time.sleep(0.2)
        assert sorted(p.stem for p in tmp_path.glob("*.started")) == ["a", "b"], "the two calls never ran at once"
        started = time.time()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:  # a failing test leaves no sleeping workers behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert time.time() - started < 60 and process.returncode == 130, err
    assert "interrupted" in err
    assert sorted(p.stem for p in tmp_path.glob("*.interrupted")) == ["a", "b"], "a running call was not stopped"
    assert not (tmp_path / "c.started").exists()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie that no one reaped has ended)."""
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in state


def test_workers_of_a_parent_killed_outright_stop_instead_of_training_on_as_orphans(tmp_path):
    """SIGKILL to the parent of ``--jobs 2`` (``kill -9``, the out-of-memory killer, or a script that does not catch
    SIGTERM): nothing can pass the signal on, and the workers used to run on as orphans, a training run holding its
    lock for an hour. Each worker watches its parent (``shc.executors.watch_parent``) and unwinds as after Ctrl-C."""
    (tmp_path / "slow_calls.py").write_text(_SLOW_CALLS)
    (tmp_path / "parent.py").write_text(_GRID_PARENT)
    markers = [str(tmp_path / name) for name in ("a", "b", "c")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    process = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), *markers], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and len(list(tmp_path.glob("*.started"))) < 2:
            time.sleep(0.2)
        assert sorted(p.stem for p in tmp_path.glob("*.started")) == ["a", "b"], "the two calls never ran at once"
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        deadline = time.time() + 60
        while time.time() < deadline and len(list(tmp_path.glob("*.interrupted"))) < 2:
            time.sleep(0.2)
        assert sorted(p.stem for p in tmp_path.glob("*.interrupted")) == ["a", "b"], "an orphaned worker ran on"
        workers = [int((tmp_path / f"{name}.started").read_text()) for name in ("a", "b")]
        while time.time() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in workers), "an unwound worker waited on for a call no one will send"
    finally:  # the workers share the parent's session: a failing test leaves none behind
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
    assert not (tmp_path / "c.started").exists()


def test_a_parent_killed_while_its_workers_start_leaves_no_orphan_run(tmp_path):
    """The race an audit found: a worker learns who its parent is only after it has imported the parent's script
    (torch and shc: seconds). Killed in that window, the parent was already gone when the worker looked, and the
    queued call ran on as an orphan. The worker now waits on its creator's sentinel, which a dead parent has closed."""
    (tmp_path / "slow_calls.py").write_text(_SLOW_CALLS)
    slow_start = _GRID_PARENT.replace('if __name__ == "__main__":', 'if __name__ == "__mp_main__":  # a worker\n'
                                      '    import time\n    time.sleep(4)\n\nif __name__ == "__main__":')
    (tmp_path / "parent.py").write_text(slow_start)
    markers = [str(tmp_path / name) for name in ("a", "b")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    process = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), *markers], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(2.5)  # the workers are importing the script (4 s), the calls queued for them
        assert not list(tmp_path.glob("*.started"))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        time.sleep(10)
        running = [path.stem for path in tmp_path.glob("*.started") if _alive(int(path.read_text()))]
        assert not running, f"calls {running} ran on as orphans"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


def test_two_batches_into_one_folder_are_refused_not_mixed(tmp_path):
    from shc._io import exclusive_lock

    output = tmp_path / "reports"
    with exclusive_lock(output / "tiny" / ".lock", "python -m shc.reports --preset tiny (pid 4242)", "busy {holder}"):
        assert reports.main(_tiny_report(output)) == 2  # a clear error, exit status 2
    assert not (output / "tiny" / "00_center_geometry").exists()


def test_a_damaged_checkpoint_is_named_with_the_fix(tmp_path):
    from shc.losses import ClassificationLoss
    from shc.models import build_classifier
    from shc.train import TrainConfig, fit

    class Images(torch_dataset()):
        pass

    run = tmp_path / "run"
    run.mkdir()
    (run / "last.pt").write_bytes(b"\x80\x02 truncated")
    config = TrainConfig(epochs=1, batch_size=4, precision="fp32", device="cpu")
    with pytest.raises(ValueError, match=r"checkpoint .*last.pt cannot be read .*delete it"):
        fit(build_classifier("small_cnn", 2, in_channels=1), ClassificationLoss(), Images(), config, run,
            progress=False)


@pytest.mark.parametrize("damage", ["missing", "cut"])
def test_a_lost_best_checkpoint_asks_for_a_new_training_not_a_deletion_that_loops(tmp_path, damage):
    """A damaged best.pt at the end of training said "delete it to train that run again from its last intact state";
    deleted, it was reported as unreadable with the same advice, for ever: last.pt (the last epoch's weights) cannot
    give back the selected epoch's (a reliability audit, 2026-12-03). The error now says so and names the fix."""
    from shc.pipeline import run, stage_directories

    config = _small_shc(tmp_path)
    run(config)
    folder = stage_directories(config)["stage3"]
    best = folder / "train" / "best.pt"
    best.unlink() if damage == "missing" else _cut(best)
    for name in ("metrics.json", "codes.npz"):  # the stage is computed again: its training resumes at its end
        (folder / name).unlink()
    words = "is missing" if damage == "missing" else "cannot be read"
    with pytest.raises(ValueError, match=rf"best.pt {words}.*selected epoch .*Delete the folder .*train"):
        run(config)
    shutil.rmtree(folder / "train")  # the fix it names
    assert run(config).metrics["selected_epoch"] >= 1


def torch_dataset():
    import torch

    class Images(torch.utils.data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return torch.randn(1, 8, 8), i % 2, i

    return Images


def test_hashindex_search_equals_the_brute_force_ranking_property():
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    from shc.retrieval import HashIndex

    @settings(max_examples=40, deadline=None)
    @given(st.data())
    def check(data):
        q = data.draw(st.integers(1, 70))
        n = data.draw(st.integers(1, 60))
        codes = data.draw(hnp.arrays(np.int8, (n, q), elements=st.sampled_from([-1, 1])))
        queries = data.draw(hnp.arrays(np.int8, (data.draw(st.integers(1, 5)), q), elements=st.sampled_from([-1, 1])))
        ids = data.draw(hnp.arrays(np.int64, n, elements=st.integers(-2**62, 2**62), unique=True))
        k = data.draw(st.integers(1, n))
        index = HashIndex(q)
        index.add(codes, ids)
        distances, found = index.search(queries, k)
        for row, query in enumerate(queries):
            d = (codes != query).sum(axis=1)
            order = np.lexsort((ids, d))[:k]  # by distance, ties by ascending id
            np.testing.assert_array_equal(found[row], ids[order])
            np.testing.assert_array_equal(distances[row], d[order])

    check()


def test_an_interrupted_jobs_grid_resumes_with_the_planned_threads_and_the_same_numbers(tmp_path):
    """The issue's case: after Ctrl-C in a ``--jobs 2`` grid, the rerun had one run left, gave it a one-worker
    pool with cores // 1 threads, and other numbers than the uninterrupted grid. Every stage computes with
    STAGE_THREADS threads now, and metrics.json records them."""
    import shutil

    from shc.pipeline import RunConfig, run_grid, stage_directories
    from shc.runs import STAGE_THREADS

    options = {"num_classes": 6, "train_per_class": 8, "val_per_class": 2, "query_per_class": 2,
               "database_per_class": 4}
    whole = [RunConfig(method=method, epochs=1, eval_every=1, bits=16, precision="fp32", dataset_options=options,
                       run_dir=str(tmp_path / "whole")) for method in ("random", "csq")]
    uninterrupted = run_grid(whole, progress=False, jobs=2)
    resumed = [config.replace(run_dir=str(tmp_path / "resumed")) for config in whole]
    shutil.copytree(tmp_path / "whole", tmp_path / "resumed")
    shutil.rmtree(stage_directories(resumed[1])["stage3"])  # interrupted before the second run finished
    rerun = run_grid(resumed, progress=False, jobs=2)
    recorded = [json.loads((stage_directories(c)["stage3"] / "metrics.json").read_text()) for c in whole + resumed]
    assert [metrics["threads"] for metrics in recorded] == [STAGE_THREADS] * 4
    for before, after in zip(uninterrupted, rerun, strict=True):  # a row per run, both times
        assert {k: v for k, v in before.items() if k != "train_seconds"} == \
               {k: v for k, v in after.items() if k != "train_seconds"}


def test_a_resumed_stage3_counts_the_epochs_an_earlier_process_trained(tmp_path):
    """A grid killed mid-run resumes it from last.pt; its train_seconds used to be only the resumed process's
    clock (a run killed in its last epoch reported almost nothing). Here the whole training is in last.pt, so the
    rerun trains no epoch: its clock must still hold the first process's, which the checkpoint keeps."""
    from shc.pipeline import RunConfig, run_grid, stage_directories

    options = {"num_classes": 6, "train_per_class": 8, "val_per_class": 2, "query_per_class": 2,
               "database_per_class": 4}
    config = RunConfig(method="csq", epochs=2, eval_every=1, bits=16, precision="fp32", dataset_options=options,
                       run_dir=str(tmp_path))
    run_grid([config], progress=False, jobs=1)
    folder = stage_directories(config)["stage3"]
    assert json.loads((folder / "metrics.json").read_text())["resumed_after_epoch"] == 0
    (folder / "metrics.json").unlink()  # killed after training, before its outputs were written
    (folder / "codes.npz").unlink()
    lines = []
    run_grid([config], progress=True, log=lines.append, jobs=1)
    metrics = json.loads((folder / "metrics.json").read_text())
    assert f"resumed after epoch 2: {metrics['train_seconds']:.1f} s in all" in lines[-1]  # not only this process's
    rows = json.loads((folder / "train" / "history.json").read_text())["rows"]
    assert [row["epoch"] for row in rows] == [1, 2] and metrics["resumed_after_epoch"] == 2
    assert metrics["train_seconds"] >= sum(row["seconds"] + row["eval_seconds"] for row in rows) > 0
    import torch

    assert metrics["train_seconds"] >= torch.load(folder / "train" / "last.pt", weights_only=True)["elapsed_seconds"]


def test_the_data_cache_of_a_process_sees_images_added_removed_or_edited(tmp_path):
    """A notebook: load (or run) an image-folder config, change the images, run again. The per-process cache
    used to return the splits of the old files, so the stage folders (and centers) of the old data came back."""
    from PIL import Image

    from shc.runs import RunConfig, load_data
    from shc.stages import stage_directories

    for c in range(2):
        (tmp_path / f"c{c}").mkdir()
        for i in range(6):
            Image.new("RGB", (4, 4), (40 * c, 20 * i, 0)).save(tmp_path / f"c{c}" / f"{i}.png")
    config = RunConfig(dataset="imagefolder", data_root=str(tmp_path), method="csq", bits=16,
                       dataset_options={"train_size": 4, "query_size": 2, "val_size": 2, "image_size": 8})

    def total(data) -> int:
        return sum(len(split) for split in data.splits.values())

    first, folders = load_data(config), stage_directories(config)
    assert load_data(config) is first  # unchanged files: served from the cache
    Image.new("RGB", (4, 4), (1, 2, 3)).save(tmp_path / "c1" / "new.png")
    added = load_data(config)
    assert added is not first and total(added) == total(first) + 1 and stage_directories(config) != folders
    (tmp_path / "c0" / "0.png").unlink()
    removed = load_data(config)
    assert removed is not added and total(removed) == total(first)
    folders = stage_directories(config)
    image = tmp_path / "c1" / "2.png"
    Image.new("RGB", (5, 4), (9, 9, 9)).save(image)  # edited in place: another size
    edited = load_data(config)
    assert edited is not removed and stage_directories(config) != folders
    assert load_data(config) is edited


def test_the_report_checker_fails_a_truncated_page_and_an_empty_folder(tmp_path, capsys):
    """The issue's false passes: ``shc.reports --check`` passed a page cut to half its size, and an empty folder."""
    from shc.reports.check import check_report_folder, main

    page = ("<!DOCTYPE html>\n<html><head><title>t</title></head><body><h1>Title</h1><p>Some text.</p>\n"
            "<p>More text.</p></body>\n</html>\n")
    folder = tmp_path / "tiny"
    (folder / "00_x").mkdir(parents=True)
    (folder / "00_x" / "00_x-report.html").write_text(page)
    assert check_report_folder(folder) == []
    (folder / "00_x" / "00_x-report.html").write_text(page[:len(page) // 2])
    assert [(p.file, p.kind) for p in check_report_folder(folder)] == [("00_x/00_x-report.html", "truncated-page")]
    empty = tmp_path / "empty"
    (empty / "00_x").mkdir(parents=True)
    (empty / "00_x" / "00_x.ipynb").write_text("{}")  # not published: the folder shows a reader nothing
    assert [p.kind for p in check_report_folder(empty)] == ["empty"]
    assert main([str(empty)]) == 1 and "empty" in capsys.readouterr().out
    assert main([str(tmp_path / "nothing")]) == 2
    assert "nothing is not a report folder" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Issue 39 item 5: a damaged artifact is moved aside and recomputed, never half-rewritten
# --------------------------------------------------------------------------------------------
def _small_shc(run_dir):
    from shc.pipeline import RunConfig

    return RunConfig(method="shc", epochs=2, classifier_epochs=1, eval_every=1, bits=16, precision="fp32",
                     run_dir=str(run_dir), dataset_options={"num_classes": 6, "train_per_class": 8,
                                                            "val_per_class": 2, "query_per_class": 2,
                                                            "database_per_class": 4})


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


@pytest.mark.parametrize("stage, name", [("stage3", "metrics.json"), ("stage3", "codes.npz"),
                                         ("stage2", "centers.npy"), ("stage1", "similarity.npy")])
def test_a_damaged_artifact_is_moved_aside_and_recomputed_from_the_last_intact_state(tmp_path, stage, name):
    """The issue's case: a cut metrics.json was rewritten without its training fields (selected epoch, training
    time), the grid then crashed, and so did every later pipeline and shc.results call until the folder was deleted
    by hand. A damaged S or centers file stopped every run that read it."""
    from shc.pipeline import run, run_grid, stage_directories

    config = _small_shc(tmp_path)
    before = run(config).metrics
    folder = stage_directories(config)[stage]
    trained = (stage_directories(config)["stage3"] / "train" / "last.pt").stat().st_mtime_ns
    first_start = (folder / "config.json").stat().st_mtime_ns
    _cut(folder / name)
    with pytest.warns(UserWarning, match=rf"{name} does not parse .*: moved {folder.name}'s files aside to .*damaged-"):
        rows = run_grid([config], progress=False)
    aside = [path for path in folder.parent.iterdir() if path.name.startswith(f"damaged-{folder.name}-")]
    assert len(aside) == 1 and len((aside[0] / name).read_bytes()) < len((folder / name).read_bytes())
    after = json.loads((stage_directories(config)["stage3"] / "metrics.json").read_text())
    timings = {"train_seconds", "resumed_after_epoch"}  # a recomputed stage 3 resumes its finished training
    assert {k: v for k, v in after.items() if k not in timings} == {k: v for k, v in before.items() if k not in timings}
    assert rows[0]["mAP@ALL"] == before["mAP@ALL"]
    assert (folder / "config.json").stat().st_mtime_ns == first_start  # the stage's first start (clock_overlap)
    if stage == "stage3":  # the training resumed from train/last.pt (its last epoch): nothing was trained again
        assert (folder / "train" / "last.pt").stat().st_mtime_ns == trained and not (aside[0] / "train").exists()
    from shc.results import load_metrics

    assert load_metrics(config)["selected_epoch"] == before["selected_epoch"]


def test_a_record_that_lost_a_measure_is_named_and_measured_again_from_its_codes(tmp_path):
    """A metrics.json that parses but lacks a measure (a hand edit, a damaged copy) crashed every later pipeline and
    shc.results call with a KeyError (a reliability audit, 2026-12-03). shc.results now names the file, what it
    lacks and the command; the pipeline measures it again from the stored codes, training nothing."""
    from shc.pipeline import run, run_grid, stage_directories
    from shc.results import load_metrics

    config = _small_shc(tmp_path)
    before = run(config).metrics
    folder = stage_directories(config)["stage3"]
    trained = (folder / "train" / "last.pt").stat().st_mtime_ns
    edited = {key: value for key, value in before.items() if key not in ("mAP@ALL", "tie_aware_mAP@100")}
    (folder / "metrics.json").write_text(json.dumps(edited))
    with pytest.raises(ValueError, match=r"metrics.json lacks mAP@ALL, tie_aware_mAP@100 .*nothing is retrained: rerun"):
        load_metrics(config)
    rows = run_grid([config], progress=False)
    assert rows[0]["mAP@ALL"] == before["mAP@ALL"] and rows[0]["tie_aware_mAP@100"] == before["tie_aware_mAP@100"]
    assert load_metrics(config)["mAP@ALL"] == before["mAP@ALL"]
    assert (folder / "train" / "last.pt").stat().st_mtime_ns == trained  # measured again, not trained again


def test_a_second_process_that_saw_the_damage_late_leaves_the_new_folder_alone(tmp_path):
    """Two processes looked at a damaged folder before either locked it: the first set it aside and began it anew,
    then the second, holding the lock next, moved the new folder aside too, with the work begun in it (and then
    failed making the folder the lock had recreated). Under the lock the damage is now looked at again."""
    from shc.pipeline import run, stage_directories
    from shc.stages import Centers

    config = _small_shc(tmp_path)
    run(config)
    folder = stage_directories(config)["stage2"]
    _cut(folder / "centers.npy")
    late = Centers(config)
    assert late.damage() is not None  # what the second process saw
    with pytest.warns(UserWarning, match="moved"):
        Centers(config).set_aside(Centers(config).damage())  # the first process
    (folder / "work.txt").write_text("begun anew")
    late.set_aside("centers.npy does not parse")  # the second, with its stale look: nothing to move now
    assert (folder / "work.txt").read_text() == "begun anew"
    assert len([path for path in folder.parent.iterdir() if path.name.startswith("damaged-")]) == 1


def test_a_damaged_folder_of_other_settings_is_refused_not_resumed_under_the_new_ones(tmp_path):
    """An audit: set_aside rebuilt the folder from config.json and train/ without settings.json, so a folder that
    StaleRunError refuses when intact was resumed from the old settings' checkpoint once one of its files was cut."""
    from shc.pipeline import run, run_grid, stage_directories
    from shc.runs import StaleRunError
    from shc.stages.base import SETTINGS_FILE

    config = _small_shc(tmp_path)
    run(config)
    folder = stage_directories(config)["stage3"]
    record = json.loads((folder / SETTINGS_FILE).read_text())
    record["method"]["defaults"] = {"gamma": 0.5}  # as if computed by a release with other defaults
    (folder / SETTINGS_FILE).write_text(json.dumps(record))
    with pytest.raises(StaleRunError, match="other method"):
        run_grid([config], progress=False)  # intact: refused
    _cut(folder / "metrics.json")
    with pytest.warns(UserWarning, match="moved"), pytest.raises(StaleRunError, match="other method"):
        run_grid([config], progress=False)  # damaged: still refused, before any training resumes
    assert json.loads((folder / SETTINGS_FILE).read_text())["method"]["defaults"] == {"gamma": 0.5}


def test_a_damaged_settings_record_is_named_as_damaged_not_as_other_settings(tmp_path):
    """A cut settings.json was reported as "computed with other method than this config gives (settings.json records
    method=None)", whose fix deletes a good run and its siblings (a reliability audit, 2026-12-03). It is named as
    damaged; deleting that file alone, the fix it gives for a folder of this config's settings, lets the run go on."""
    from shc.pipeline import run, run_grid, stage_directories
    from shc.runs import StaleRunError
    from shc.stages.base import SETTINGS_FILE

    config = _small_shc(tmp_path)
    before = run(config).metrics
    record = stage_directories(config)["stage3"] / SETTINGS_FILE
    record.write_bytes(record.read_bytes()[:20])
    with pytest.raises(StaleRunError, match=r"settings.json is damaged .*delete that file alone") as refused:
        run_grid([config], progress=False)
    assert "other method" not in str(refused.value)
    record.unlink()
    assert run_grid([config], progress=False)[0]["mAP@ALL"] == before["mAP@ALL"]


def test_setting_a_damaged_folder_aside_holds_its_lock_until_the_training_is_back(tmp_path, monkeypatch):
    """An audit: set_aside renamed the folder under the lock, then rebuilt it unlocked (the lock file had moved with
    it), so a second process could see the identity without train/last.pt, train from scratch, and crash the first.
    The folder now stays in place, and its lock is held while the damaged files move out."""
    import shc.train.checkpoint as checkpoint
    from shc.pipeline import run, stage_directories
    from shc.stages import Hashing

    config = _small_shc(tmp_path)
    run(config)
    folder = stage_directories(config)["stage3"]
    _cut(folder / "codes.npz")
    seen = []
    load = checkpoint.load_checkpoint

    def looking_meanwhile(path, *args, **kwargs):  # what a second process sees while the first checks checkpoints
        with pytest.raises(RuntimeError, match="is being computed"), Hashing(config).lock():
            pass
        seen.append(((folder / "config.json").is_file(), (folder / "train" / "last.pt").is_file()))
        return load(path, *args, **kwargs)

    monkeypatch.setattr(checkpoint, "load_checkpoint", looking_meanwhile)
    with pytest.warns(UserWarning, match="resuming train/last.pt"):
        Hashing(config).set_aside(Hashing(config).damage())
    assert seen and all(found == (True, True) for found in seen)
    assert not (folder / "codes.npz").exists() and (folder / "train" / "last.pt").is_file()
    aside = next(path for path in folder.parent.iterdir() if path.name.startswith(f"damaged-{folder.name}-"))
    assert (aside / "codes.npz").is_file() and (aside / "config.json").is_file() and not (aside / "train").exists()


def test_reevaluating_a_damaged_run_never_writes_a_metrics_file_without_its_training_fields(tmp_path):
    """shc.pipeline --reevaluate (and every reader through _finished) rebuilt a cut metrics.json from the codes
    alone, without the training fields."""
    from shc.pipeline import reevaluate, run, stage_directories
    from shc.runs import MissingRunError

    config = _small_shc(tmp_path)
    run(config)
    metrics = stage_directories(config)["stage3"] / "metrics.json"
    metrics.write_text(json.dumps({"mAP@ALL": 0.5}))  # parses, but lacks what training wrote
    with pytest.warns(UserWarning, match="lacks selected_epoch, train_seconds"), \
            pytest.raises(MissingRunError, match="has not finished"):
        reevaluate(config, force=True)
    assert not metrics.exists() and (metrics.parent / "train" / "last.pt").exists()  # kept to resume from


def test_reading_a_damaged_metrics_file_names_it_and_the_command_that_repairs_it(tmp_path):
    from shc.pipeline import run, stage_directories
    from shc.results import load_metrics

    config = _small_shc(tmp_path)
    run(config)
    path = stage_directories(config)["stage3"] / "metrics.json"
    _cut(path)
    with pytest.raises(ValueError, match=rf"{path.name} is damaged .*moves a damaged stage aside and recomputes it"):
        load_metrics(config)


@pytest.mark.parametrize(("method", "model"), [("csq", "the hashing network"), ("shc", "the classifier")])
def test_an_empty_validation_split_is_refused_before_any_epoch_trains(tmp_path, method, model):
    """val_per_class=0 is a valid split size, but every stage selects its model on validation: it used to train
    eval_every epochs and then fail in predict with "dataset is empty; nothing to predict", losing them."""
    from shc.pipeline import RunConfig, run_grid

    options = {"num_classes": 6, "train_per_class": 8, "val_per_class": 0, "query_per_class": 2,
               "database_per_class": 4}
    config = RunConfig(method=method, epochs=3, eval_every=3, bits=16, precision="fp32", dataset_options=options,
                       run_dir=str(tmp_path))  # shc: stage 1's classifier is the first to select on validation
    with pytest.raises(Exception, match=f"the validation split is empty, and {model} is selected on it"):
        run_grid([config], progress=False)
    assert not list(tmp_path.rglob("last.pt")), "an epoch trained before the refusal"
