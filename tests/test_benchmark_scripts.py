"""Every benchmark script run by hand reads its command line before it computes anything, so ``--help`` prints
what it does instead of starting a run of minutes (benchmarks/group_start.py once started its two-minute search
on ``--help``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _main_block(tree: ast.Module) -> ast.If | None:
    for node in tree.body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return node
    return None


def _reads_command_line(tree: ast.Module) -> bool:
    """The file parses its arguments (argparse) or validates ``sys.argv`` itself."""
    source = ast.unparse(tree)
    return "argparse" in source or "sys.argv" in source


SCRIPTS = sorted(path for path in BENCHMARKS.glob("*.py") if _main_block(ast.parse(path.read_text())) is not None)


def test_the_benchmarks_folder_has_scripts():
    assert len(SCRIPTS) >= 10, SCRIPTS


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("*.py")), ids=lambda path: path.name)
def test_every_script_is_in_the_index_of_docs_benchmarks(path: Path):
    page = (BENCHMARKS.parent / "docs" / "benchmarks.md").read_text()
    assert f"`{path.name}`" in page, f"{path.name} is not in docs/benchmarks.md's index of benchmarks/; add its row"


@pytest.mark.parametrize("path", sorted(BENCHMARKS.glob("bench_*.py")), ids=lambda path: path.name)
def test_every_timed_benchmark_also_runs_by_its_own_file(path: Path):
    # run.py imports them; run directly, a file without a main block printed nothing (bench_reports.py did)
    assert path in SCRIPTS, f"{path.name} has no `if __name__ == \"__main__\":` block; add one that prints its table"


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: path.name)
def test_a_benchmark_script_reads_its_command_line(path: Path):
    tree = ast.parse(path.read_text())
    assert _reads_command_line(tree), (
        f"{path.name} runs on any command line, so `--help` starts the benchmark; parse the arguments with "
        "argparse (description=__doc__) before computing."
    )


def test_the_rule_catches_a_script_that_ignores_its_arguments():
    tree = ast.parse('"""doc"""\ndef main():\n    print(1)\n\nif __name__ == "__main__":\n    main()\n')
    assert _main_block(tree) is not None and not _reads_command_line(tree)


def _benchmark(name: str):
    import importlib
    import sys

    sys.path.insert(0, str(BENCHMARKS))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_grid_estimate_counts_each_run_at_its_own_budget():
    """fine_epoch_seconds counted every run of the grid at the first config's 120 epochs, so LTH's grid (480, 960 at
    64 bits) was underestimated 4-8 times (an audit, 2026-12-02)."""
    from shc.pipeline import preset

    tool = _benchmark("fine_epoch_seconds")
    lth = [config for config in preset("standard-fine") if config.method == "lth"]
    assert tool.estimate_seconds(lth, 1.0, 0.0, 0.0, lambda epoch: True) == (3 * (480 + 960 + 960), 7200)
    crh = [config for config in preset("standard-fine") if config.method == "crh"][:1]  # 120 epochs, eval every 6
    seconds, _ = tool.estimate_seconds(crh, 0.0, 1.0, 1.0, lambda epoch: epoch <= 20 or epoch % 5 == 0)
    assert seconds == (20 + 20) + 120 // crh[0].eval_every  # hooks after epochs 1-20, 25, ..., 120; validations


def test_the_paper_grid_estimate_trains_each_dataset_on_its_own_training_set():
    """bench_scale_out took 10,000 images a run for every paper dataset: CIFAR-100 trains on 9,000 once validation is
    carved out, the NABirds sets on more (an audit, 2026-12-02)."""
    tool = _benchmark("bench_scale_out")
    assert tool.training_images("cifar100") == 9_000  # 10,000 less its 10% validation
    assert tool.training_images("nabirds-a") == 23_929 - 2_393 and tool.training_images("stanford-cars-b") == 5_292


GRID_SCRIPTS = [path for path in SCRIPTS if "run_grid(" in path.read_text()]


def test_some_benchmarks_train_grids():
    assert {path.name for path in GRID_SCRIPTS} >= {"standard_convergence.py", "reachability.py"}, GRID_SCRIPTS


@pytest.mark.parametrize("path", GRID_SCRIPTS, ids=lambda path: path.name)
def test_a_benchmark_that_trains_a_grid_runs_through_run_cli(path: Path):
    """A benchmark that trains a grid with ``--jobs`` runs its main through ``shc.cli_common.run_cli``, which turns
    SIGTERM into the interruption the pool passes on to its workers (``kill PID`` of standard_convergence.py once
    left a worker training as an orphan, holding its run's lock) and prints a user error as one line."""
    block = _main_block(ast.parse(path.read_text()))
    assert "run_cli(main)" in ast.unparse(block), (
        f"{path.name}: end with `from shc.cli_common import run_cli` and `raise SystemExit(run_cli(main))` under "
        "`if __name__ == \"__main__\":`.")


RUNNER_MODULES = sorted(BENCHMARKS.glob("bench_*.py"))


@pytest.mark.parametrize("path", RUNNER_MODULES, ids=lambda path: path.name)
def test_every_module_the_runner_imports_has_run_quick(path: Path):
    """``python benchmarks/run.py`` imports every ``bench_*.py`` and calls its ``run(quick=...)``: bench_scale_out had
    no ``run``, so the runner stopped there and never reached bench_train (an audit, 2026-12-03)."""
    tree = ast.parse(path.read_text())
    runs = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "run"]
    assert runs, f"{path.name} has no module-level run(quick=...); benchmarks/run.py calls it"
    assert "quick" in [argument.arg for argument in runs[0].args.args], f"{path.name}: run() takes no `quick`"


def test_scale_out_rows_are_its_printed_tables():
    tool = _benchmark("bench_scale_out")
    rows = tool.run(quick=True)
    codes = [row for row in rows if row["table"] == "codes"]
    runs = [row for row in rows if row["table"] == "runs"]
    assert {row["bits"] for row in codes} == {16, 32, 64}
    index = next(row for row in codes if row["store"] == "HashIndex (memory)" and row["bits"] == 64)
    assert index["bytes/code"] == 16.0  # a packed 64-bit word and an int64 id
    assert [row["images/s (yours)"] for row in runs] == [500, 1000, 2000]
    # GPU-hours fall as 1 / throughput: 500 images/s takes four times as long as 2,000 (up to the rounding to hours)
    assert abs(runs[0]["grid GPU-hours"] - 4 * runs[-1]["grid GPU-hours"]) <= 4
