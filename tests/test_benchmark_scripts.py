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
