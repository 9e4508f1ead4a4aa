"""Issue 38: the checker re-derives what a Markdown document quotes of ``python -m shc.results`` (README.md and the
docs), and fails on a quoted row or sentence its command no longer prints."""

from __future__ import annotations

import contextlib
import io
import shutil
from pathlib import Path

import pytest

from shc.reports.check_markdown import _quoted, heading_anchors, link_problems, markdown_problems, quoted_outputs

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ("python -m shc.results --preset standard --from-csv results/standard-h200-16bit.csv --bits 16 --headline "
           "--markdown --methods random csq mds shc shc-ls crh greedyhash")


def _printed(command: str = COMMAND) -> list[str]:
    from shc.results import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(command.split()[3:]) == 0
    return out.getvalue().splitlines()


def _document(tmp_path: Path, body: str, command: str = COMMAND) -> Path:
    """A document in a copy of the repository's layout (pyproject.toml marks the root; results/ beside it)."""
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copytree(ROOT / "results", tmp_path / "results")
    path = tmp_path / "README.md"
    path.write_text(f"# Results\n\n```bash\n{command}\n```\n\n{body}\n\n## Next\n")
    return path


def _quoted_body(printed: list[str]) -> str:
    table = [line for line in printed if line.startswith("|")]
    verdicts = [line for line in printed if line.startswith("- At ")]
    return "\n".join(table) + "\n\nBelow the table it prints (verbatim):\n\n" + "\n".join(verdicts)


# docs/results.md: tests/test_results_page.py checks it, after writing the page once (its commands then run once)
@pytest.mark.parametrize("document", ["README.md", "docs/gpu.md", "docs/unseen.md", "docs/old-backbones.md",
                                      "docs/standard.md"])
def test_the_committed_documents_quote_what_their_commands_print(document):
    blocks = quoted_outputs((ROOT / document).read_text(encoding="utf-8"))
    checked = [block for block in blocks
               if block["record"] is None and (any(_quoted(block["section"])[:2]) or block["quote"])]
    if document == "docs/old-backbones.md":  # the confounded grids' run folders are gone: every block is a record
        assert blocks and all(block["record"] for block in blocks)
    else:  # the document quotes some command's output that the checker compares (else this proves nothing)
        assert checked
    assert [str(problem) for problem in markdown_problems(ROOT / document)] == []


def test_a_document_quoting_its_commands_output_passes(tmp_path):
    printed = _printed()
    assert any(line.startswith("| 16 |") for line in printed) and any(line.startswith("- At ") for line in printed)
    assert markdown_problems(_document(tmp_path, _quoted_body(printed))) == []


def test_a_typed_table_cell_is_a_false_sentence(tmp_path):
    body = _quoted_body(_printed())
    row = next(line for line in body.splitlines() if line.startswith("| 16 |"))
    cell = row.split(" | ")[1]  # shc's mean ± std
    problems = markdown_problems(_document(tmp_path, body.replace(cell, cell.replace("0.", "0.9", 1))))
    assert [p.kind for p in problems] == ["false-sentence"] and "is not printed" in problems[0].detail


def test_a_wrong_tie_verdict_in_a_quoted_sentence_is_a_false_sentence(tmp_path):
    body = _quoted_body(_printed())
    verdict = next(line for line in body.splitlines() if line.startswith("- At "))
    assert " ties " in verdict
    problems = markdown_problems(_document(tmp_path, body.replace(verdict, verdict.replace(" ties ", " is above "))))
    assert [p.kind for p in problems] == ["false-sentence"] and "do not print" in problems[0].detail


def test_a_swapped_table_header_is_a_false_sentence(tmp_path):
    """An audit: swapping two column names of a quoted table put every number under another method and passed."""
    body = _quoted_body(_printed())
    header = next(line for line in body.splitlines() if line.startswith("| bits |"))
    assert " shc-ls | crh " in header
    problems = markdown_problems(_document(tmp_path, body.replace(header, header.replace(" shc-ls | crh ",
                                                                                         " crh | shc-ls "))))
    assert [p.kind for p in problems] == ["false-sentence"] and "table header" in problems[0].detail


def test_a_dropped_row_is_a_false_sentence(tmp_path):
    command = COMMAND.replace("--headline ", "--metrics tie_aware_mAP@ALL ")
    printed = _printed(command)
    rows = [line for line in printed if line.startswith("| ") and not line.startswith(("| method", "|---"))]
    assert len(rows) == 7  # one row a method
    body = "\n".join(line for line in printed if line.startswith("|") and line != rows[3])
    problems = markdown_problems(_document(tmp_path, body, command=command))
    assert [p.kind for p in problems] == ["false-sentence"] and "print 7" in problems[0].detail


def test_verbatim_items_of_two_commands_quoted_in_swapped_order_are_a_false_sentence(tmp_path):
    """An audit: a block of two presets' commands ("from scratch and then pretrained") passed with their items swapped,
    each item being printed by one of the commands."""
    second = COMMAND.replace("standard-h200-16bit.csv --bits 16", "standard-h100-32bit.csv --bits 32")
    items = [next(line for line in _printed(command) if line.startswith("- At ")) for command in (COMMAND, second)]
    assert items[0] != items[1]
    in_order, swapped = ("It prints (verbatim):\n\n" + "\n".join(pair) for pair in (items, items[::-1]))
    assert markdown_problems(_document(tmp_path, in_order, command=f"{COMMAND}\n{second}")) == []
    (tmp_path / "swapped").mkdir()
    problems = markdown_problems(_document(tmp_path / "swapped", swapped, command=f"{COMMAND}\n{second}"))
    assert [p.kind for p in problems] == ["false-sentence"] and "commands' order" in problems[0].detail


def test_a_verbatim_quote_in_a_text_fence_is_checked_and_a_line_cut_short_is_a_false_sentence(tmp_path):
    """An audit: docs/unseen.md quoted a line "(verbatim)" in a text fence, cut before its ", but the paired intervals
    cannot tell ..." clause; the checker read only list items, so the fence was never compared."""
    printed = [line for line in _printed() if line.startswith("- At ")]
    fence = "prints, among its lines (verbatim):\n\n```text\n{}\n```\n\nProse after it."
    assert markdown_problems(_document(tmp_path, fence.format(printed[0]))) == []
    (tmp_path / "cut").mkdir()
    problems = markdown_problems(_document(tmp_path / "cut", fence.format(printed[0].rsplit(" (", 1)[0] + ".")))
    assert [p.kind for p in problems] == ["false-sentence"] and "do not print" in problems[0].detail
    # a fence further on, after other paragraphs, quotes something else (a benchmark's table): not compared
    (tmp_path / "later").mkdir()
    later = "A paragraph about the tables.\n\nAnother command's output (verbatim):\n\n```text\nnot printed\n```"
    assert markdown_problems(_document(tmp_path / "later", later)) == []


def test_quoting_commands_that_read_run_folders_is_unverifiable(tmp_path):
    body = _quoted_body(_printed())
    path = _document(tmp_path, body, command=COMMAND.replace(" --from-csv results/standard-h200-16bit.csv", ""))
    problems = markdown_problems(path)
    assert [p.kind for p in problems] == ["unverifiable"] and "read run folders" in problems[0].detail


def test_a_record_comment_skips_a_block_of_run_folders_but_not_one_it_can_check(tmp_path):
    """A historical record (its runs are gone) says so before its fence; the checker skips it then, but refuses the
    comment on a block it can check and a comment without a reason."""
    body = _quoted_body(_printed()).replace("0.", "9.")  # every number false: skipped only as a record
    folders = COMMAND.replace(" --from-csv results/standard-h200-16bit.csv", "")
    path = _document(tmp_path, body, command=folders)
    path.write_text(path.read_text().replace("```bash", "<!-- record: the runs of a retired backbone -->\n\n```bash"))
    assert markdown_problems(path) == []
    path.write_text(path.read_text().replace("record: the runs of a retired backbone", "record:"))
    assert [(p.kind, "no reason" in p.detail) for p in markdown_problems(path)] == [("record-misused", True)]
    (tmp_path / "csv").mkdir()
    (tmp_path / "plain").mkdir()
    checked = _document(tmp_path / "csv", body)
    checked.write_text(checked.read_text().replace("```bash", "<!-- record: it is old -->\n```bash"))
    assert [(p.kind, "drop the record" in p.detail) for p in markdown_problems(checked)] == [("record-misused", True)]
    unmarked = _document(tmp_path / "plain", body, command=folders)
    assert [p.kind for p in markdown_problems(unmarked)] == ["unverifiable"]


def test_a_results_file_that_is_gone_is_unverifiable(tmp_path):
    path = _document(tmp_path, _quoted_body(_printed()))
    (tmp_path / "results" / "standard-h200-16bit.csv").unlink()
    problems = markdown_problems(path)
    assert [p.kind for p in problems] == ["unverifiable"] and "fail" in problems[0].detail


def test_commands_whose_output_is_not_quoted_are_not_checked(tmp_path):
    assert markdown_problems(_document(tmp_path, "Run it to see the table.",
                                       command="python -m shc.results --preset standard --markdown")) == []


def test_the_checker_command_line_takes_markdown_documents(capsys):
    from shc.reports.check import main

    assert main([str(ROOT / "README.md")]) == 0
    assert "README.md: 0 problem(s)" in capsys.readouterr().err


def test_a_measured_number_typed_into_the_results_section_is_a_typed_number():
    from shc.reports.check_markdown import typed_numbers

    text = ("# x\n\n## Set-up\n\nPins `torch==2.13.0`; 0.125 is a step here.\n\n## Results\n\n"
            "| bits | shc |\n|---|---|\n| 16 | 0.551 ± 0.012 |\n\n> quoted 0.332 ± 0.016\n\n"
            "It prints (verbatim):\n\n- At 16 bits, shc ties greedyhash (0.535).\n\n```bash\nx --lr 0.003\n```\n\n"
            "The hit rate is 0.87 to 1.00, above issue 35's 0.9 (`0.95` in code).\n\n## Notebooks\n\n0.75 here.\n")
    assert typed_numbers(text) == [(23, "0.87"), (23, "1.00")]  # not the table, quote, verbatim item, code, 0.9


def test_the_results_sections_typed_numbers_fail_the_readme(tmp_path):
    path = _document(tmp_path, _quoted_body(_printed()))
    typed = path.read_text().replace("# Results", "## Results").replace("## Next", "LTH moves by 0.028.\n\n## Next")
    path.write_text(typed)
    line = typed.splitlines().index("LTH moves by 0.028.") + 1
    assert [(p.kind, p.detail.split(" into")[0]) for p in markdown_problems(path)] == [
        ("typed-number", f"line {line} types 0.028")]


def test_a_budget_or_seed_count_changed_by_hand_in_the_readme_fails():
    """Only decimals were caught: "80 epochs" -> "60 epochs" or "3 seeds" -> "5 seeds" in the README's results
    prose passed (an audit, 2026-12-02). A count must be one the section's results files hold."""
    from shc.reports.check_markdown import typed_counts

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert typed_counts(readme, ROOT) == []
    budget = next(line for line in readme.splitlines() if "doubling rule: 80 epochs" in line)
    for old, new, typed in ((budget, budget.replace("80 epochs", "60 epochs"), "60 epochs"),
                            ("3 seeds, models selected", "5 seeds, models selected", "5 seeds")):
        assert old in readme
        assert [value for _, value in typed_counts(readme.replace(old, new, 1), ROOT)] == [typed]


@pytest.mark.parametrize("document", ["README.md", *sorted(path.relative_to(ROOT).as_posix()
                                                           for path in (ROOT / "docs").glob("*.md"))])
def test_every_committed_document_links_files_and_headings_that_are_there(document):
    assert [str(problem) for problem in link_problems(ROOT / document)] == []


def test_heading_anchors_follow_githubs_rule():
    text = ("# Top\n\n## The non-compositional testbed: `standard-modes` (issue 35)\n\n"
            "## 5. The standard grid, on an H200 (2026-11-26)\n\n### A [linked](x.md) *title*\n\n"
            "## Again\n\n## Again\n\n```text\n## convergence at 16 bits, seed 0\n```\n")
    assert heading_anchors(text) == {"top", "the-non-compositional-testbed-standard-modes-issue-35",
                                     "5-the-standard-grid-on-an-h200-2026-11-26", "a-linked-title", "again",
                                     "again-1"}


def test_a_missing_file_or_heading_is_a_dead_link(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "other.md").write_text("# Other\n\n## A section\n")
    document = tmp_path / "README.md"
    document.write_text("# Front\n\n## Here\n\n"
                        "Fine: [a](docs/other.md), [b](docs/other.md#a-section), [c](#here), [web](https://x.org/a#b).\n"
                        "Code is not read: `[d](gone.md)`.\n\n```text\n[e](gone.md)\n```\n\n"
                        "Dead: [f](docs/gone.md), [g](docs/other.md#no-such-section), [h](#nowhere), ![i](pic.png).\n")
    problems = link_problems(document)
    assert [problem.kind for problem in problems] == ["dead-link"] * 4
    assert [str(problem).split(" links ")[1].split(",")[0] for problem in problems] == [
        "docs/gone.md", "docs/other.md#no-such-section", "#nowhere", "pic.png"]
    assert all(problem.kind == "dead-link" for problem in markdown_problems(document))
    assert len(markdown_problems(document)) == 4
