"""Issue 38: docs/results.md is written by ``python -m shc.results.page`` from the committed results files, and the
checker compares every line of each block's output with what its command prints today."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from shc.reports.check_markdown import markdown_problems
from shc.results.page import OUTPUT_END, OUTPUT_START, RESULTS_BLOCKS, ResultsBlock, main

ROOT = Path(__file__).resolve().parents[1]


def _layout(root: Path) -> Path:
    """A copy of the repository's layout: pyproject.toml marks the root, results/ beside docs/ (the other pages of
    docs/ too, which the page links)."""
    (root / "pyproject.toml").write_text("")
    shutil.copytree(ROOT / "results", root / "results")
    shutil.copytree(ROOT / "docs", root / "docs", ignore=shutil.ignore_patterns("results.md"))
    return root


def _written(clone: Path) -> Path:
    assert main(["--root", str(clone), "--out", str(clone / "docs" / "results.md")]) == 0
    return clone / "docs" / "results.md"


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    """The page the command writes in a copy of the layout, once for the module (every block's command runs)."""
    return _written(_layout(tmp_path_factory.mktemp("layout")))


@pytest.fixture()
def clone(written: Path, tmp_path: Path) -> Path:
    """A copy of that layout and its written page, for a test to change."""
    shutil.copytree(written.parents[1], tmp_path / "layout")
    return tmp_path / "layout"


def test_the_committed_page_is_what_the_command_writes_today(written):
    """Up to the date the commands read their files on, docs/results.md is the command's output."""
    committed = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    from shc.results.page import comparable

    today = written.read_text(encoding="utf-8")
    assert [comparable(line) for line in committed.splitlines()] == [comparable(line) for line in today.splitlines()]


def test_the_committed_page_passes_the_checker(written):
    """``python -m shc.reports.check docs/results.md``: every block's output as its command prints it today (run once
    here, by ``written``), and every link and typed number of the page."""
    assert [str(problem) for problem in markdown_problems(ROOT / "docs" / "results.md")] == []


@pytest.mark.parametrize("name", RESULTS_BLOCKS.names())
def test_every_block_is_one_command_and_its_marked_output(name, written):
    block = RESULTS_BLOCKS.get(name)
    text = written.read_text(encoding="utf-8")
    section = text.split(f"## {block.title}\n", 1)[1].split("\n## ", 1)[0]
    assert block.command in section and section.count(OUTPUT_START) == 1 and section.count(OUTPUT_END) == 1
    output = section.split(OUTPUT_START, 1)[1].split(OUTPUT_END, 1)[0]
    # the output is the command's: its header names the file, every method has a row in the first table
    named = " and ".join(f"`{file}`" for file in block.files)  # several files: read as one, named in order
    assert f"read from {named} on " in output and str(written.parents[1]) not in output
    first_table = output[output.index("\n| method |"):].split("\n\n", 1)[0]  # the first table, whatever precedes it
    assert all(f"| {method} |" in first_table for method in block.methods)


def test_the_contents_link_each_block_by_its_heading(written):
    from shc.results.page import anchor

    assert anchor("`standard-unseen` at 16 bits: classes never seen in training") == (
        "standard-unseen-at-16-bits-classes-never-seen-in-training")
    text = written.read_text(encoding="utf-8")
    for _, block in RESULTS_BLOCKS.items():
        assert f"- [{block.title}](#{anchor(block.title)})" in text and f"\n## {block.title}\n" in text


def test_a_fresh_page_has_no_problems_and_a_changed_date_is_not_one(clone):
    page = clone / "docs" / "results.md"
    assert markdown_problems(page) == []
    text = page.read_text(encoding="utf-8")
    page.write_text(text.replace(" on 20", " on 19", 1), encoding="utf-8")  # written on another day
    assert markdown_problems(page) == []


def test_an_edited_number_a_dropped_line_and_an_added_line_are_false_sentences(clone):
    page = clone / "docs" / "results.md"
    text = page.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| shc |"))
    edited = row.replace("0.", "0.9", 1)
    for changed, detail in ((text.replace(row, edited, 1), repr(edited)),
                            (text.replace(row + "\n", "", 1), "output line"),
                            (text.replace(OUTPUT_END, "- shc is above every method.\n" + OUTPUT_END, 1), "line(s)")):
        page.write_text(changed, encoding="utf-8")
        problems = markdown_problems(page)
        assert [p.kind for p in problems] == ["false-sentence"] and detail in problems[0].detail


def test_the_page_follows_its_results_file(clone):
    """A results file changed after the page was written: the checker finds it; rewriting the page follows it."""
    page = clone / "docs" / "results.md"
    block = RESULTS_BLOCKS.get(RESULTS_BLOCKS.names()[0])
    table = pd.read_csv(clone / block.files[0])
    table.loc[table["method"] == "shc", "tie_aware_mAP@ALL"] += 0.1
    table.to_csv(clone / block.files[0], index=False)
    assert "false-sentence" in {p.kind for p in markdown_problems(page)}
    assert markdown_problems(_written(clone)) == []


@pytest.mark.parametrize("change, message", [
    ({"file": "runs/standard/results.csv"}, "not a committed results file"),
    ({"file": ("results/x.csv", "runs/y.csv")}, "'runs/y.csv' is not a committed results file"),
    ({"bits": (24,)}, "code lengths"),
    ({"methods": ()}, "at least one method"),
    ({"methods": ("shcc",)}, "unknown method 'shcc'"),
    ({"reference": "crh"}, "reference 'crh' is not one of its methods"),
    ({"seeds": (0, -1)}, r"seeds \[0, -1\] are not distinct non-negative integers"),
    ({"seeds": (3, 3)}, r"seeds \[3, 3\] are not distinct"),
    ({"hashing_epochs": 0}, "hashing_epochs 0 is not a positive integer"),
    ({"hashing_epochs": "40"}, "hashing_epochs '40' is not a positive integer"),
    ({"hashing_epochs": ("lth=960",)}, r"must name methods of the block \(shc\) as METHOD=E"),
    ({"hashing_epochs": ("40",)}, "must name methods of the block"),
    ({"hashing_epochs": ("shc=0",)}, "neither E nor METHOD=E"),
])
def test_a_block_outside_its_grid_is_refused(change, message):
    fields = {"title": "t", "preset": "standard", "file": "results/x.csv", "bits": (16,), "methods": ("shc",),
              "about": "a"}
    with pytest.raises(ValueError, match=message):
        ResultsBlock(**{**fields, **change})


def test_a_block_reads_one_method_at_another_budget_through_the_command():
    fields = {"title": "t", "preset": "standard", "file": "results/x.csv", "bits": (16,), "about": "a"}
    block = ResultsBlock(**fields, methods=("shc", "lth"), hashing_epochs=("lth=640",))
    assert block.argv[block.argv.index("--hashing-epochs") + 1:][:2] == ["lth=640", "--markdown"]
    every = ResultsBlock(**fields, methods=("shc",), hashing_epochs=40).argv
    assert every[every.index("--hashing-epochs") + 1] == "40"


def test_a_command_runs_again_when_a_file_it_compares_against_changes(tmp_path):
    """printed_lines runs a command once per process for the same bytes of every file it reads: the --versus-csv files
    count as much as the --from-csv ones, and a command on run folders is never reused."""
    from shc.results.page import printed_lines

    (tmp_path / "layout").mkdir()
    root = _layout(tmp_path / "layout")
    argv = ["--preset", "standard", "--from-csv", "results/standard-report-16bit.csv", "--versus-csv",
            "results/standard-h200-16bit.csv", "results/standard-h200-16bit-lth.csv", "--bits", "16", "--methods",
            "shc", "csq", "--metrics", "tie_aware_mAP@ALL"]
    before = printed_lines(argv, root)
    assert printed_lines(argv, root) == before and printed_lines(argv, ROOT) == before  # the same bytes anywhere
    versus = root / "results" / "standard-h200-16bit.csv"
    table = pd.read_csv(versus)
    table.loc[table["method"] == "shc", "tie_aware_mAP@ALL"] += 0.1
    table.to_csv(versus, index=False)
    after = printed_lines(argv, root)
    assert after != before and printed_lines(argv, ROOT) == before
    runs = tmp_path / "runs"
    with pytest.raises(RuntimeError, match="exited with"):  # no run folder: the command runs, and fails, every time
        printed_lines(["--preset", "standard", "--run-dir", str(runs), "--bits", "16"], root)
