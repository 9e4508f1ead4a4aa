"""Issue 38: no number of a page is typed. Every table a page shows is held, cell by cell, by a file the page
publishes (``tables/*.csv`` or ``summary.json``); the report checker fails on a table that none holds (a cell edited
by hand, a file changed after the build, a table shown without its file). Each rule of
:mod:`shc.reports.check_tables` is tested with a table that follows it and one changed so that it must not."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shc import centers, plots
from shc.reports import publish_summary, show_summary
from shc.reports.check import check_report_folder
from shc.reports.check_tables import displayed_tables, same_cell, table_problems
from shc.reports.corrections import publish_shown_tables
from shc.results import RankedTable, readable_table


def _page(folder: Path, body: str, name: str = "03_x") -> Path:
    page = folder / name / f"{name}-report.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(f"<!DOCTYPE html><html><head><title>x</title></head><body><h1>x</h1>{body}</body></html>",
                    encoding="utf-8")
    return page


def _problems(folder: Path, page: Path) -> list[str]:
    return [p.detail for p in table_problems(page.read_text(encoding="utf-8"),
                                             page.relative_to(folder).as_posix(), folder)]


def _ranked() -> RankedTable:
    """A results table as page 04 shows it: "mean ± std" cells, rows (method) and columns (metric, bits)."""
    columns = pd.MultiIndex.from_product([["mAP@ALL (tie-aware)"], [16, 32]], names=["metric", "bits"])
    index = pd.Index(["random", "shc"], name="method")
    cells = pd.DataFrame([["0.4293 ± 0.0070", "0.5012 ± 0.0031"], ["0.4791 ± 0.0081", "0.5530"]], index, columns)
    mean = pd.DataFrame([[0.4293, 0.5012], [0.4791, 0.553]], index, columns)
    rank = pd.DataFrame([[2.0, 2.0], [1.0, 1.0]], index, columns)
    return RankedTable(cells, mean, mean * 0, mean * 0 + 3, rank)


def test_a_ranked_table_saved_as_shown_passes_and_an_edited_cell_is_named(tmp_path):
    folder = tmp_path / "tiny"
    table = _ranked()
    plots.save_table(table.cells, folder / "03_x" / "tables" / "map")
    page = _page(folder, table.to_html())
    assert _problems(folder, page) == []
    page.write_text(page.read_text().replace("0.4791 ± 0.0081", "0.4891 ± 0.0081"))
    problems = _problems(folder, page)
    assert len(problems) == 1 and "tables/map.csv" in problems[0]
    assert "'0.4891 ± 0.0081'" in problems[0] and "'0.4791 ± 0.0081'" in problems[0]  # the page's cell, the file's
    assert "shc.plots.save_table" in problems[0]  # the fix


def test_row_labels_spanning_rows_are_read_for_every_row(tmp_path):
    """pandas' Styler writes a repeated outer row label once, with a rowspan: each row still has its label."""
    index = pd.MultiIndex.from_tuples([("mAP", "random"), ("mAP", "shc"), ("hit", "random"), ("hit", "shc")],
                                      names=["metric", "method"])
    frame = pd.DataFrame({"16": ["0.41", "0.47", "0.93", "0.96"]}, index=index)
    html = frame.style.to_html()
    assert 'rowspan="2"' in html
    (_, body), = displayed_tables(html)
    assert [[text for _, text in row] for row in body] == [["mAP", "random", "0.41"], ["mAP", "shc", "0.47"],
                                                          ["hit", "random", "0.93"], ["hit", "shc", "0.96"]]
    folder = tmp_path / "tiny"
    plots.save_table(frame, folder / "03_x" / "tables" / "t")
    page = _page(folder, html)
    assert _problems(folder, page) == []
    page.write_text(html.replace(">hit<", ">mAP<", 1))  # the second block's label changed: its rows say mAP
    assert len(_problems(folder, page)) == 1


@pytest.mark.parametrize("shown, stored, same", [
    ("0.6360", "0.636", True),           # the page pads what the file stores shorter
    ("410.334338", "410.33434", True),   # the page prints more places than the file's 8 significant digits
    ("0.4791", "0.47914", True),
    ("0.4792", "0.47914", False),        # one unit in the last place shown
    ("+0.016", "0.0161", True),          # a sign in front is the number's own
    ("-0.016", "0.0161", False),
    ("1.23e-05", "1.2345e-05", True),
    ("1.24e-05", "1.2345e-05", False),
    ("yes", "True", True), ("no", "True", False),
    ("n/a", "", True), ("n/a", "0", False),
    ("activation = identity", "{'activation': 'identity'}", True),
    ("batch_norm = yes", "{'batch_norm': True}", True),
    ("batch_norm = no", "{'batch_norm': True}", False),
    ("crh, lth", "crh, lth", True), ("crh, lth", "lth, crh", False),
])
def test_a_cell_shows_the_files_value_to_the_places_either_prints(shown, stored, same):
    assert same_cell(shown, stored) is same


def test_an_interval_cell_is_checked_against_its_value_and_both_bounds_in_the_same_row():
    row = ["shc", "0.0025808696", "-0.019", "0.025"]
    assert same_cell("+0.003 [-0.019, +0.025]", "0.0025808696", row)
    assert not same_cell("+0.003 [-0.019, +0.035]", "0.0025808696", row)  # a bound the row does not hold
    assert not same_cell("+0.004 [-0.019, +0.025]", "0.0025808696", row)


def test_a_readable_table_with_its_rank_dicts_and_bools_passes_and_a_flipped_word_fails(tmp_path):
    specs = pd.DataFrame({"method": ["csq", "greedyhash"], "head": [{"batch_norm": True}, {"activation": "identity"}],
                          "pretrained": [False, True], "epochs": [80.0, np.nan]})
    folder = tmp_path / "tiny"
    plots.save_table(specs, folder / "06_x" / "tables" / "methods")
    html = readable_table(specs)._repr_html_()
    page = _page(folder, html, "06_x")
    assert ">rank<" in html and "batch_norm = yes" in html and "n/a" in html
    assert _problems(folder, page) == []
    page.write_text(html.replace("batch_norm = yes", "batch_norm = no"))
    assert len(_problems(folder, page)) == 1


def test_a_summary_table_is_checked_against_summary_json(tmp_path):
    folder = tmp_path / "tiny"
    summary = {"runs": 36, "classifier test accuracy": 0.60766667, "best method": "crh, lth (not distinguishable)"}
    publish_summary(folder / "03_x", summary)
    html = show_summary(summary)._repr_html_()
    page = _page(folder, html)
    assert _problems(folder, page) == []
    for before, after in (("36", "72"), ("0.6077", "0.6177"), ("crh, lth", "lth, crh")):
        page.write_text(html.replace(before, after, 1))
        assert len(_problems(folder, page)) == 1, after


def test_a_table_shown_without_its_file_is_a_problem_of_the_folder(tmp_path):
    folder = tmp_path / "tiny"
    _page(folder, pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="k")).to_html())
    problems = check_report_folder(folder)
    assert [(p.file, p.kind) for p in problems] == [("03_x/03_x-report.html", "table-mismatch")]
    assert "publishes no table file" in problems[0].detail


def test_a_table_longer_than_its_file_is_named_with_both_lengths(tmp_path):
    folder = tmp_path / "tiny"
    plots.save_table(pd.DataFrame({"k": ["x"], "a": [1]}), folder / "03_x" / "tables" / "t")  # a header and one row
    page = _page(folder, pd.DataFrame({"a": [1, 2, 3]}, index=pd.Index(["x", "y", "z"], name="k")).to_html())
    (problem,) = _problems(folder, page)
    assert "nearest: tables/t.csv (it has 2 rows, the table 3)" in problem


def test_distance_table_gives_the_hamming_distances_of_the_first_centers():
    codes = np.array([[1, 1, 1, 1], [1, 1, -1, -1], [-1, -1, -1, -1], [1, -1, 1, -1]])
    table = centers.distance_table(codes, count=3)
    assert table.index.name == "center" and list(table.columns) == ["h0", "h1", "h2"]
    np.testing.assert_array_equal(table.to_numpy(), [[0, 2, 4], [2, 0, 2], [4, 2, 0]])  # counted by hand
    with pytest.raises(ValueError, match="positive integer"):
        centers.distance_table(codes, count=0)


def _old_page_00(folder: Path, shown) -> Path:
    """Page 00 as built before 2026-12-02: it showed the example distances without saving them."""
    page = _page(folder, shown.to_html(), "00_center_geometry")
    (page.parent / "run.json").write_text(json.dumps({"parameters": {"num_classes": 20, "bits": 16},
                                                      "files": {"tables": []}}))
    return page


def test_publishing_a_table_an_old_page_showed_makes_it_checkable_and_a_second_run_changes_nothing(tmp_path):
    folder = tmp_path / "tiny"
    drawn = centers.generate_centers("random", 20, 16, seed=0)
    page = _old_page_00(folder, pd.DataFrame(centers.hamming_distances(drawn[:5]),
                                             index=[f"h{i}" for i in range(5)], columns=[f"h{i}" for i in range(5)]))
    assert len(_problems(folder, page)) == 1
    assert publish_shown_tables(folder) == ["00_center_geometry/00_center_geometry-report.html"]
    record = json.loads((page.parent / "run.json").read_text())
    assert record["files"]["tables"] == ["tables/example_distances.csv"]
    assert list(record["published_after_build"]) == ["tables/example_distances.csv"]
    assert _problems(folder, page) == []
    assert publish_shown_tables(folder) == []


def test_a_published_recomputation_that_differs_from_the_old_page_stays_a_problem(tmp_path):
    folder = tmp_path / "tiny"
    drawn = centers.generate_centers("random", 20, 16, seed=1)  # not the seed the record implies (0)
    page = _old_page_00(folder, centers.distance_table(drawn))
    publish_shown_tables(folder)
    assert len(_problems(folder, page)) == 1
