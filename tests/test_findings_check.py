"""Issue 38: no sentence of a page is typed. Every finding is registered, shown by ``findings.show`` from the files
a notebook saved, recorded in ``findings.json``, and re-derived by the report checker, which fails on any page whose
sentences its data no longer gives (a hand edit, a wrong tie verdict, a table changed after the page was built)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shc import findings, plots
from shc.reports.check import check_report_folder

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _sources() -> dict[str, str]:
    return {path.stem: "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]
                                 if cell["cell_type"] == "code") for path in NOTEBOOKS}


def test_every_registered_finding_is_shown_by_a_notebook_and_every_shown_one_is_registered():
    shown = {name for source in _sources().values() for name in re.findall(r'findings\.show\(\s*"([\w-]+)"', source)}
    assert shown == set(findings.FINDINGS.names())


@pytest.mark.parametrize("stem", [path.stem for path in NOTEBOOKS])
def test_no_notebook_words_a_finding_itself(stem):
    """A notebook that called a sentence function directly would show sentences the checker cannot re-derive."""
    source = _sources()[stem]
    direct = re.findall(r"findings\.(\w+_findings?|bullet_list)\(|what_this_shows\w*\(", source)
    assert not direct, f"{stem} words findings itself: {direct}; use findings.show(name, table=<saved file>)"


@pytest.mark.parametrize("name", findings.FINDINGS.names())
def test_every_finding_names_at_least_one_table_and_a_callable(name):  # each is run on its data by its own tests
    finding = findings.FINDINGS.get(name)
    assert callable(finding.function) and finding.tables
    assert all(isinstance(count, int) and count >= 0 for count in finding.tables.values())


def _runs(gap: float) -> pd.DataFrame:
    """shc against mds over 3 seeds: shc higher by ``gap`` + (0.01, 0.00, -0.01) per seed (paired differences)."""
    mds = [0.40, 0.42, 0.44]
    shc = [m + gap + jitter for m, jitter in zip(mds, (0.01, 0.0, -0.01))]
    return pd.DataFrame({"label": ["shc"] * 3 + ["mds"] * 3, "bits": 16, "seed": [0, 1, 2] * 2,
                         "tie_aware_mAP@ALL": shc + mds})


def _page_folder(root: Path, runs: pd.DataFrame) -> tuple[Path, Path, str]:
    """A preset folder with one page whose findings are shown by findings.show from its saved table."""
    page_dir = root / "tiny" / "04_x"
    table = plots.save_table(runs, page_dir / "tables" / "runs")
    shown = findings.show("retrieval", runs=table, reference="shc").data
    page = page_dir / "04_x-report.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>x</title></head><body><h1>x</h1>{shown}</body></html>")
    return root / "tiny", page, shown


def test_a_page_whose_findings_follow_from_its_tables_passes(tmp_path):
    folder, page, shown = _page_folder(tmp_path, _runs(0.05))
    assert "shc is higher" in shown  # the paired interval of +0.05 +- 0.01 over 3 seeds excludes 0
    assert check_report_folder(folder) == []
    record = json.loads((page.parent / findings.FINDINGS_FILE).read_text())["findings"]
    assert [(r["finding"], r["tables"], r["options"]) for r in record] == [
        ("retrieval", {"runs": "tables/runs.csv"}, {"reference": "shc"})]


def test_a_wrong_tie_verdict_typed_into_the_page_is_a_false_sentence(tmp_path):
    folder, page, _ = _page_folder(tmp_path, _runs(0.05))
    page.write_text(page.read_text().replace("shc is higher", "not distinguishable here"))
    problems = check_report_folder(folder)
    assert [p.kind for p in problems] == ["false-sentence"]
    assert "not distinguishable here" in problems[0].detail and "shc is higher" in problems[0].detail


def test_a_table_changed_after_the_page_was_built_makes_its_sentences_false(tmp_path):
    """Perturb the table: the sentence must follow it (here the methods now tie), so the old page is false."""
    folder, page, _ = _page_folder(tmp_path, _runs(0.05))
    plots.save_table(_runs(0.0), page.parent / "tables" / "runs")
    problems = check_report_folder(folder)
    assert [p.kind for p in problems] == ["false-sentence"] and "not distinguishable" in problems[0].detail
    rebuilt = findings.show("retrieval", runs=page.parent / "tables" / "runs.csv", reference="shc").data
    page.write_text(f"<!DOCTYPE html><html><head><title>x</title></head><body>{rebuilt}</body></html>")
    assert check_report_folder(folder) == []  # rebuilt from the new table: true again


def test_a_sentence_added_or_removed_by_hand_is_a_false_sentence(tmp_path):
    folder, page, _ = _page_folder(tmp_path, _runs(0.05))
    text = page.read_text()
    page.write_text(text.replace("</ul>", "<li>Every method trains for 80 epochs.</li></ul>"))
    assert [p.kind for p in check_report_folder(folder)] == ["false-sentence"]
    page.write_text(re.sub(r"<li>.*?</li>", "", text, count=1))
    assert [p.kind for p in check_report_folder(folder)] == ["false-sentence"]
    page.write_text(re.sub(r'<ul class="shc-findings".*?</ul>', "", text))  # the whole list dropped
    assert [p.detail for p in check_report_folder(folder) if p.kind == "false-sentence"][0].endswith(
        "are recorded in findings.json but the page does not show them")


@pytest.mark.parametrize("defect", ["no record file", "unknown key", "table missing", "unknown finding"])
def test_findings_that_cannot_be_re_derived_are_unverifiable(tmp_path, defect):
    folder, page, _ = _page_folder(tmp_path, _runs(0.05))
    record_file = page.parent / findings.FINDINGS_FILE
    if defect == "no record file":
        record_file.unlink()
    elif defect == "unknown key":
        page.write_text(page.read_text().replace('data-finding="retrieval-', 'data-finding="typed-'))
    elif defect == "table missing":
        (page.parent / "tables" / "runs.csv").unlink()
    else:
        record = json.loads(record_file.read_text())
        record["findings"][0]["finding"] = "retrival"
        record_file.write_text(json.dumps(record))
    kinds = {p.kind for p in check_report_folder(folder)}
    assert "unverifiable" in kinds


def test_show_reads_the_saved_file_not_the_frame_in_memory_and_restarts_the_record_per_process(tmp_path):
    """The page shows what the file gives (what the checker reads); a second show in the same process adds to the
    page's record, a repeated one replaces its own entry."""
    page_dir = tmp_path / "p"
    table = plots.save_table(pd.DataFrame({"C": [32, 40], "d_min of CSQ centers": [16, 2], "GV distance d": [4, 5]})
                             .set_index("C"), page_dir / "tables" / "hadamard")
    first = findings.show("hadamard", table=table, bits=16).data
    assert "C = 32 (Hadamard rows and their negations): CSQ&#x27;s d_min is 16, above the bound d = 4." in first
    assert "C = 40 (8 random row(s) beyond 2q): CSQ&#x27;s d_min is 2, below the bound d = 5." in first
    findings.show("hadamard", table=table, bits=16)
    findings.show("hadamard", table=table, bits=20)
    record = json.loads((page_dir / findings.FINDINGS_FILE).read_text())["findings"]
    assert [r["options"] for r in record] == [{"bits": 16}, {"bits": 20}]
    with pytest.raises(ValueError, match="unknown finding 'hadamrd'"):
        findings.show("hadamrd", table=table)
    with pytest.raises(ValueError, match="needs its table file"):
        findings.show("hadamard", bits=16)
    other = plots.save_table(pd.DataFrame({"x": [1]}), tmp_path / "elsewhere" / "deep" / "tables" / "x")
    with pytest.raises(ValueError, match="outside the page folder"):
        findings.show("similarity", accuracy=table, correlations=other, agreement=None)


def test_the_similar_pairs_finding_reads_the_heatmap_data_in_triangle_or_full_form(tmp_path):
    """Two pairs share the top similarity 0.9 in a 3-class S: counted once each, whichever form the file has."""
    import numpy as np

    S = np.array([[1.0, 0.9, 0.9], [0.9, 1.0, 0.1], [0.9, 0.1, 1.0]])
    pairs = pd.DataFrame({"class_a": [0], "class_b": [1], "similarity": [0.9], "same_coarse": [True]})
    expected = findings.pair_findings(S, pairs)
    assert expected[0] == ("2 class pairs share the largest similarity, 0.9000; the table shows 1 of them, in class "
                           "order.")
    for triangle in (True, False):
        folder = tmp_path / str(triangle)
        heatmap = plots.save_table(plots.matrix_frame({"data-dependent S": S}, ["00", "01", "02"], triangle=triangle),
                                   folder / "figures" / "heatmap")
        shown = findings.derive("similar-pairs", folder, {"S": "figures/heatmap.csv",
                                                          "pairs": plots.save_table(pairs, folder / "tables" / "p")
                                                          .relative_to(folder).as_posix()}, {})
        assert shown == expected, triangle
        assert heatmap.is_file()


# ---- typed prose: budgets and another dataset's classes --------------------------------------------------------
def _notebook_page(markdown: str, output: str = "") -> str:
    return ('<!DOCTYPE html><html><head><title>x</title></head><body>'
            f'<div class="jp-Cell jp-MarkdownCell jp-Notebook-cell"><div class="jp-RenderedMarkdown"><p>{markdown}'
            '</p></div></div><div class="jp-Cell jp-CodeCell"><div class="jp-OutputArea-output">'
            f'<pre>{output}</pre></div></div></body></html>')


@pytest.mark.parametrize("typed", ["Every method trains for 80 epochs.", "the selected model (epoch 160)",
                                   "same epochs and batch size for every method", "3 seeds per method"])
def test_a_budget_typed_into_prose_is_a_typed_budget(typed):
    from shc.reports.check import prose_problems

    problems = prose_problems(_notebook_page(f"Results. {typed}"), "03_x/03_x-report.html", None)
    assert [p.kind for p in problems] == ["typed-budget"]


def test_a_budget_printed_by_code_or_a_typed_code_length_is_not_a_typed_budget():
    from shc.reports.check import prose_problems

    page = _notebook_page("Codes of 16/32/64 bits; Eq. 41-43; C > 2q.", output="80 epochs, 160 for mds (each run's "
                                                                                "own config)")
    assert prose_problems(page, "03_x/03_x-report.html", None) == []


def test_another_datasets_class_description_on_a_page_is_foreign_prose():
    """Issue 38: the 333-class fashion page spoke of "two-digit numbers grouped by their tens digit"."""
    from shc.reports.check import prose_problems

    page = _notebook_page("Classes: 100 two-digit numbers grouped by their tens digit.")
    foreign = prose_problems(page, "00_x/00_x-report.html", "fashion-composite")
    assert sorted(p.detail.split("'")[1] for p in foreign) == ["tens digit", "two-digit"]
    assert {p.kind for p in foreign} == {"foreign-prose"}
    assert prose_problems(page, "00_x/00_x-report.html", "digits-composite") == []  # its own classes
    assert prose_problems(page, "00_x/00_x-report.html", None) == []  # a page about no dataset: not checked


def test_a_page_without_its_own_dataset_parameter_belongs_to_its_preset_folders_dataset(tmp_path):
    folder = tmp_path / "standard"
    for stem, parameters in (("00_x", {"bits": 32}), ("01_y", {"dataset": "fashion-composite"})):
        (folder / stem).mkdir(parents=True)
        (folder / stem / "run.json").write_text(json.dumps({"parameters": parameters, "files": {}}))
        (folder / stem / f"{stem}-report.html").write_text(_notebook_page("Classes: two-digit numbers."))
    problems = [(p.file, p.kind) for p in check_report_folder(folder)]
    assert {("00_x/00_x-report.html", "foreign-prose"), ("01_y/01_y-report.html", "foreign-prose")} <= set(problems)


def test_every_registered_datasets_prose_is_its_own_or_shared_with_a_dataset_of_the_same_classes():
    """A phrase of two datasets must describe the same construction (digits-composite and mnist-composite are both
    two-digit numbers); no dataset's own description makes its own pages fail."""
    from shc.data import DATASETS, foreign_prose

    for name, entry in DATASETS.items():
        assert foreign_prose(" ".join(entry.prose), name) == [], name


def test_the_centers_finding_reads_page_00s_one_set_quality_table_by_hand(tmp_path):
    """Page 00 saves one center set per method (index ``method``, a ``GV distance d`` column), not run rows: GV d = 4,
    random's d_min 2 misses it, mds and shc keep it."""
    quality = pd.DataFrame({"method": ["random", "mds", "shc"], "GV distance d": 4, "d_min": [2, 4, 5],
                            "s_loss": [0.09, 0.06, 0.04]}).set_index("method")
    table = plots.save_table(quality, tmp_path / "p" / "tables" / "center_quality")
    shown = findings.derive("centers", tmp_path / "p", {"rows": "tables/center_quality.csv"}, {"bits": 16, "seed": 0})
    assert shown[0] == "d_min >= the Gilbert-Varshamov d in every run for: mds, shc; not for: random."
    assert table.is_file() and len(shown) == 2  # shc against mds from one seed: no interval, said so
    assert shown[1] == ("S_loss, shc \u2212 mds at 16 bits: -0.020 from one seed; a difference from one seed has no "
                        "interval and cannot be told apart from seed noise (this page draws one center set per method; "
                        "notebook 02 compares the methods over several seeds); shc's S_loss is 0.67x of mds's (lower "
                        "is better).")


def test_refresh_rewrites_only_findings_whose_wording_changed_and_says_so(tmp_path):
    """A page built before a wording correction (here: its sentence edited back to an older form) fails the checker;
    refresh_findings derives it again from the same published table, marks the list with the date and commit, and
    leaves a page that already says what its data gives byte for byte as it was."""
    from shc.reports.refresh import refresh_findings

    folder, page, shown = _page_folder(tmp_path, _runs(0.05))
    built = page.read_text()
    assert refresh_findings(folder, stamp="2026-11-29 by shc at abc1234") == []
    assert page.read_text() == built  # true already: untouched
    assert "shc is higher" in built
    page.write_text(built.replace("shc is higher", "shc is better", 1))
    assert [p.kind for p in check_report_folder(folder)] == ["false-sentence"]
    assert refresh_findings(folder, stamp="2026-11-29 by shc at abc1234") == ["04_x/04_x-report.html"]
    refreshed = page.read_text()
    assert check_report_folder(folder) == []
    assert 'data-refreshed="2026-11-29 by shc at abc1234"' in refreshed and "shc is higher" in refreshed
    assert "derived again from this page's tables on 2026-11-29 by shc at abc1234" in refreshed
    assert refresh_findings(folder, stamp="2030-01-01 by shc at fffffff") == []  # idempotent: the first stamp stays
    assert page.read_text() == refreshed
    with pytest.raises(FileNotFoundError, match="report folder"):
        refresh_findings(tmp_path / "nowhere")


def test_refresh_makes_the_index_name_the_pages_whose_findings_came_later(tmp_path):
    """An audit: the index said every page came from one clean commit while four pages' findings lists had been
    derived again by a later one. The index now names them under its commit sentence, once however often it runs,
    and drops the line when no page carries a refreshed list."""
    from shc.reports.refresh import note_refreshed_pages_in_index, refresh_findings

    folder, page, _ = _page_folder(tmp_path, _runs(0.05))
    index = folder / "index.html"
    index.write_text('<p class="muted">Every page was built from one clean commit, <code>abc</code>.</p>\n<table></table>')
    built = page.read_text()
    assert not note_refreshed_pages_in_index(folder) and "shc-refreshed-index" not in index.read_text()
    page.write_text(built.replace("shc is higher", "shc is better", 1))
    refresh_findings(folder, stamp="2026-11-29 by shc at abc1234")
    lines = index.read_text().splitlines()
    assert lines[0].endswith("<code>abc</code>.</p>")
    assert lines[1] == ('<p class="muted shc-refreshed-index">The findings lists or summary labels of 1 page(s) (04_x) '
                        "were derived again from their tables after the build (2026-11-29 by shc at abc1234), where "
                        "their wording changed or they were found false; each page says which under them, and the "
                        "rest of every page is as "
                        "built.</p>")
    assert not note_refreshed_pages_in_index(folder)  # idempotent
    page.write_text(built)  # a rebuilt page: nothing refreshed any more
    assert note_refreshed_pages_in_index(folder) and "shc-refreshed-index" not in index.read_text()


@pytest.mark.parametrize("suffix", [".xz", "", ".gz"])  # a small preset's page publishes its heatmap data plain, a set
def test_corrections_replace_a_false_sentence_add_its_finding_and_say_so(tmp_path, suffix):  # built before 11-29 gzip
    """A page 01 built before the fix says "roughly half of each row is negative" (line-broken as the notebook
    rendered it) while its heatmap's data has 4 of 6 off-diagonal entries negative. correct_pages swaps in today's
    text, notes it under the paragraph, adds the signs finding from the page's own table (recorded, so the checker
    re-derives it) after the heatmap's cell, and the index names the page; a second run changes nothing."""
    from shc.reports import corrected_sentences
    from shc.reports.corrections import CORRECTIONS, correct_pages

    folder = tmp_path / "standard"
    page_dir = folder / "01_similarity"
    S = np.array([[1.0, 0.5, -0.2], [0.5, 1.0, -0.4], [-0.2, -0.4, 1.0]])
    saved = plots.save_table(plots.matrix_frame({"data-dependent S": S}, ["a", "b", "c"]),
                             page_dir / "figures" / "similarity_heatmap", compress=suffix == ".xz")
    if suffix == ".gz":
        import gzip

        saved.with_name(saved.name + ".gz").write_bytes(gzip.compress(saved.read_bytes()))
        saved.unlink()
    old = ('<div class="jp-Cell jp-MarkdownCell" id="cell-id=7c474c11"><p>Rows are clustered. Every row is centred '
           '(Eq. 8-9), so roughly half of\neach row is negative: "less similar than this class\'s average".</p></div>'
           '<div class="jp-Cell jp-CodeCell" id="cell-id=0d8e9dab"><img src="figures/similarity_heatmap.png"/></div>'
           '<div class="jp-Cell jp-MarkdownCell" id="cell-id=a5042adb"><p>Next.</p></div>')
    page = page_dir / "01_similarity-report.html"
    page.write_text(old)
    index = folder / "index.html"
    index.write_text('<p class="muted">Every page was built from one clean commit, <code>abc</code>.</p>\n<table></table>')
    stamp = "2026-11-29 by shc at abc1234"
    assert correct_pages(folder, stamp=stamp) == ["01_similarity/01_similarity-report.html"]
    text = page.read_text()
    assert "roughly half of\neach row" not in text and "most of a row can be negative" in text
    assert f'data-corrected="{stamp}"' in text and "the text as built said “Every row is centred (Eq. 8-9), so" in text
    assert text.index("shc-corrected") < text.index('id="cell-id=0d8e9dab"') < text.index("shc-findings") \
        < text.index('id="cell-id=a5042adb"')  # the note under the paragraph, the finding under the heatmap
    assert "67% of the off-diagonal entries of the data-dependent S are negative" in text
    record = json.loads((page_dir / "findings.json").read_text())["findings"]
    assert [(r["finding"], r["tables"]) for r in record] == [
        ("similarity-signs", {"S": "figures/similarity_heatmap.csv" + suffix})]
    assert findings.derive("similarity-signs", page_dir, record[0]["tables"], {})[0] in html.unescape(text)
    assert "Sentences of 1 page(s) (01_similarity) that audits found false were corrected" in index.read_text()
    assert correct_pages(folder, stamp="2030-01-01 by shc at fffffff") == [] and page.read_text() == text
    cosines = folder / "00_center_geometry" / "00_center_geometry-report.html"  # old words the note quotes verbatim
    cosines.parent.mkdir()
    cosines.write_text("<p>Section 4. Distance-only centers give a flat, noisy $\\mathbf{H}\\mathbf{H}^\\top/q$ "
                       "(cosines near 0 everywhere); semantic centers follow S.</p>")
    assert correct_pages(folder, stamp=stamp) == ["00_center_geometry/00_center_geometry-report.html"]
    corrected = cosines.read_text()
    assert corrected.count("shc-corrected") == 1 and "without the blocks of" in corrected
    assert "said “Distance-only centers give a flat, noisy" in corrected
    assert correct_pages(folder, stamp=stamp) == [] and cosines.read_text() == corrected  # the quote is no match
    untouched = folder / "03_train_hashing" / "03_train_hashing-report.html"
    untouched.parent.mkdir()
    untouched.write_text("<p>the losses of different methods are on different scales</p>")
    assert correct_pages(folder, stamp=stamp) == [] and "shc-corrected" not in untouched.read_text()
    hashing = folder / "02_hash_centers" / "02_hash_centers-report.html"  # words with an entity, as pages hold them
    hashing.parent.mkdir()
    hashing.write_text("<p>two classes sharing a center. Random and CSQ centers carry no distance\nguarantee once $C "
                       "&gt; 2q$. Whether these trade-offs pay off</p>")
    assert correct_pages(folder, stamp=stamp) == ["02_hash_centers/02_hash_centers-report.html"]
    fixed = hashing.read_text()
    assert "Random centers carry no distance guarantee at any $C$, CSQ's none once $C &gt; 2q$." in fixed
    assert "said “Random and CSQ centers carry no distance guarantee once $C &gt; 2q$.”" in fixed  # not &amp;gt;
    assert {c.page for c in CORRECTIONS} <= {path.stem for path in NOTEBOOKS}  # every correction names a real page
    for correction in CORRECTIONS:  # and today's notebook no longer says the false words
        if correction.when is corrected_sentences._unseen_selected_the_old_way:
            continue  # true of today's runs, false of the runs before a code fix: the notebook keeps its words
        source = json.loads((NOTEBOOKS[0].parent / f"{correction.page}.ipynb").read_text())
        markdown = " ".join(" ".join("".join(cell["source"]).split()) for cell in source["cells"]
                            if cell["cell_type"] == "markdown")
        assert " ".join(correction.old.split()) not in markdown, (correction.page, correction.old)


def _methods_page(root: Path, suffix: str, methods: list[str]) -> tuple[Path, Path, Path]:
    """A preset folder with page 06 built before shc-ls was described as what it solves: its title promises nine
    baselines, and its methods' table (published as ``tables/methods.csv`` + ``suffix``) holds the old cell."""
    import gzip

    from shc.reports.corrections import CORRECTIONS

    old_cell = next(c.old for c in CORRECTIONS if c.table == "tables/methods.csv")
    folder = root / "sets" / "standard-x"
    page_dir = folder / "06_baselines"
    table = pd.DataFrame({"loss": ["center", "center"], "reference": ["Chen et al., TOIS 2025.", old_cell]},
                         index=pd.Index(["shc", "shc-ls (ours, not in the paper)"], name="method"))
    saved = plots.save_table(table, page_dir / "tables" / "methods", compress=suffix == ".xz")
    if suffix == ".gz":
        saved.with_name(saved.name + ".gz").write_bytes(gzip.compress(saved.read_bytes()))
        saved.unlink()
    title = "06 · SHC against the paper's nine baselines"
    (page_dir / "run.json").write_text(json.dumps({"notebook": "06_baselines", "title": title, "parameters": {
        "dataset": "fashion-modes", "methods": methods}}, indent=2) + "\n")
    page = page_dir / "06_baselines-report.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>{title}</title></head><body><h1 id=\"06-nine-baselines\">"
                    f'{title}<a class="anchor-link" href="#06-nine-baselines">¶</a></h1><p>Intro.</p>'
                    f"<h2>The methods</h2><div>{table.to_html()}</div><p>Next.</p></body></html>")
    index = folder / "index.html"
    index.write_text('<p class="muted">Every page was built from one clean commit, <code>abc</code>.</p>\n<table>'
                     '<tr><td><a href="06_baselines/06_baselines-report.html">06 · SHC against the paper&#x27;s '
                     "nine baselines</a></td></tr></table>")
    return folder, page, index


@pytest.mark.parametrize("suffix", ["", ".xz", ".gz"])
def test_a_correction_of_a_table_cell_changes_the_file_and_the_shown_table_together(tmp_path, suffix):
    """Page 06's methods' table said shc-ls searches "the same objective" (it drops Eq. 22's spreading term). The
    cell is corrected in the published file, whatever its compression, and in the table the page shows, so the
    checker (which compares the two) passes; the note goes under the table, not inside it; run.json records the
    file; the title that promised nine baselines of a page that runs four is corrected in the page's <title>, its
    heading, its run.json and the index's link; a second run changes nothing."""
    from shc.methods import get_method
    from shc.plots.style import read_table_text
    from shc.reports.corrections import CORRECTIONS, correct_pages

    cell = next(c for c in CORRECTIONS if c.table == "tables/methods.csv")
    assert cell.new == get_method("shc-ls").reference  # today's cell, from today's code
    folder, page, index = _methods_page(tmp_path, suffix, ["greedyhash", "lth", "csq", "mds", "shc", "shc-ls"])
    stamp = "2026-12-05 by shc at abc1234"
    assert correct_pages(folder, stamp=stamp) == ["06_baselines/06_baselines-report.html"]
    text = page.read_text()
    published = page.parent / f"tables/methods.csv{suffix}"
    assert cell.new in read_table_text(published) and cell.old not in read_table_text(published)
    assert f"<td>{cell.new}</td>" in text and f"<td>{cell.old}</td>" not in text
    note = text.index("a cell of the table above and of its file tables/methods.csv" + suffix)
    assert text.index("</table>") < note < text.index("<p>Next.</p>")
    assert [(p.file, p.kind) for p in check_report_folder(folder) if p.file != "index.html"] == []  # the shown
    # table is in the published file (the index, a sketch, lacks the sentences of a built one)
    record = json.loads((page.parent / "run.json").read_text())
    assert record["corrected_after_build"] == {f"tables/methods.csv{suffix}": stamp}
    assert record["title"] == "06 · SHC against the paper's baselines"
    assert "<title>06 · SHC against the paper's baselines</title>" in text
    assert text.index("the paper's baselines<a") < text.index("said “06 · SHC against") < text.index("Intro.")
    assert ">06 · SHC against the paper&#x27;s baselines</a>" in index.read_text()
    files = {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()}
    assert correct_pages(folder, stamp="2030-01-01 by shc at fffffff") == []
    assert {path: path.read_bytes() for path in folder.rglob("*") if path.is_file()} == files
    from shc.reports.corrections import _write_table_text

    page.write_text(page.read_text().replace(cell.new, cell.old))  # a page whose file holds neither cell
    corrected = read_table_text(published)
    _write_table_text(published, corrected.replace(f'"{cell.new}"', "another cell"))
    with pytest.raises(ValueError, match="holds neither the cell the page shows nor its correction"):
        correct_pages(folder, stamp=stamp)
    _write_table_text(published, corrected.replace("center,", '"center",'))  # rewriting it would change other cells
    with pytest.raises(ValueError, match="not written as shc.plots.save_table writes a table"):
        correct_pages(folder, stamp=stamp)


def test_a_title_true_of_its_set_stays_and_notes_go_under_their_list_or_paragraph(tmp_path):
    """A set that runs all nine baselines keeps its title (the correction's ``when``); a sentence pointing to page
    05 is corrected only in a set without page 05; a note under a list item goes under the list."""
    from shc.paper import PAPER_BASELINES
    from shc.reports.corrections import correct_pages

    folder, page, index = _methods_page(tmp_path, "", [*PAPER_BASELINES, "shc", "shc-ls"])
    correct_pages(folder, stamp="s")
    assert "<title>06 · SHC against the paper's nine baselines</title>" in page.read_text()
    assert "nine baselines" in json.loads((page.parent / "run.json").read_text())["title"]
    hashing = folder / "02_hash_centers" / "02_hash_centers-report.html"
    hashing.parent.mkdir()
    built = ("<ul><li><strong>shc</strong>: Algorithm 1;</li><li><strong>shc-ls</strong>: the same objective and "
             "constraint solved by exact feasible local search (descent, <code>shc.centers.search</code>).</li>"
             "</ul><p>Next. Whether these trade-offs pay off in retrieval is measured in notebooks 04 and\n05.</p>"
             "<p>Last.</p>")
    hashing.write_text(built)
    assert correct_pages(folder, stamp="s") == ["02_hash_centers/02_hash_centers-report.html"]
    text = hashing.read_text()
    assert "the semantic loss under the same constraint, without the spreading term (Eq. 22 with $\\mu = 0$)" in text
    assert text.index("</ul>") < text.index("said “the same objective") < text.index("<p>Next.")
    assert text.index("measured in notebook 04 (and by the ablations") < text.index("said “Whether") \
        < text.index("<p>Last.")
    ablations = folder / "05_ablations" / "05_ablations-report.html"  # a set that builds page 05
    ablations.parent.mkdir()
    ablations.write_text("<p>Ablations.</p>")
    hashing.write_text(built)
    correct_pages(folder, stamp="s")
    assert "measured in notebooks 04 and\n05." in hashing.read_text() and "said “Whether" not in hashing.read_text()


def test_the_corrections_of_computed_text_say_what_todays_code_computes():
    """Page 06's sentence on shc-ls is computed from shc.methods.OUTSIDE_PAPER: its correction is today's words."""
    from shc.methods import OUTSIDE_PAPER
    from shc.reports.corrections import CORRECTIONS

    correction = next(c for c in CORRECTIONS if c.old == "SHC's objective and constraint solved by exact local search")
    assert OUTSIDE_PAPER["shc-ls"][1].startswith(correction.new + " (`docs/centers.md`)")


def _settings(lr_dpsh: float = 0.001) -> pd.DataFrame:
    """Six runs: shc and mds at 80 epochs (mds 160 at 64 bits), dpsh at its own learning rate; two lengths, 1 seed."""
    rows = []
    for label, epochs in (("shc", {16: 80, 64: 80}), ("mds", {16: 160, 64: 160}), ("dpsh", {16: 80, 64: 80})):
        for bits in (16, 64):
            rows.append({"dataset": "fashion-composite", "method": label, "label": label, "bits": bits, "seed": 0,
                         "classes": 100, "epochs": epochs[bits], "backbone": "composite_cnn_mlp", "pretrained": False,
                         "pretrain": None, "weights": None, "batch_size": 64, "optimizer": "rmsprop",
                         "lr": lr_dpsh if label == "dpsh" else 0.003, "eval_every": 6})
    return pd.DataFrame(rows)


def test_the_grid_line_says_each_runs_own_budget_and_learning_rate():
    """Page 03's first line named the first run's learning rate for every run, where methods train with their own,
    and was printed outside any findings list, so an edit by hand passed the checker (issue 38)."""
    line, = findings.grid_findings(_settings(), "fashion-composite")
    assert line == ("6 runs: 3 methods x 2 code lengths x 1 seed on fashion-composite; composite_cnn_mlp, trained "
                    "from scratch, 80 epochs, 160 for mds (each run's own config), batch 64, rmsprop, lr 0.003 (0.001 "
                    "for dpsh), validation every 6 epochs.")
    assert findings.grid_findings(_settings().assign(eval_every=1), "x")[0].endswith("validation every epoch.")
    pretrained = _settings().assign(pretrain="items")
    assert "composite_cnn_mlp pretrained on the items source task (stage 0), then fine-tuned" in \
        findings.grid_findings(pretrained, "x")[0]
    shape, gv = findings.grid_findings(_settings(), "fashion-composite", what="centers")
    assert shape == "fashion-composite: C = 100 classes; 6 center sets (3 methods x 2 code lengths x 1 seed)."
    from shc.centers import gv_min_distance

    assert gv == f"Gilbert-Varshamov distance d (Eq. 13): {gv_min_distance(100, 16)} at 16 bits, " \
                 f"{gv_min_distance(100, 64)} at 64 bits."
    with pytest.raises(ValueError, match="several budgets"):
        findings.grid_findings(_settings().assign(epochs=[80, 80, 160, 160, 80, 90]).iloc[[0, 4, 5]]
                               .assign(bits=16), "x")


def test_page_01s_classifier_lines_follow_the_settings_table():
    """Page 01 printed its classes, split and classifier settings outside any findings list, so the checker could
    not derive them again (issue 38); they are now the grid finding's ``what="classifier"`` lines."""
    rows = pd.DataFrame({"label": ["seed 0", "seed 1"], "seed": [0, 1], "classes": [333, 333],
                         "protocol": ["per class train 20 / query 5"] * 2, "epochs": [8, 8],
                         "backbone": ["composite3_cnn_mlp"] * 2, "pretrained": [False, False], "pretrain": [None, None],
                         "weights": [None, None], "optimizer": ["rmsprop"] * 2, "lr": [0.001, 0.001]})
    data_line, classifier = findings.grid_findings(rows, "fashion-composite", what="classifier")
    assert data_line == "fashion-composite: 333 classes; per class train 20 / query 5"
    assert classifier == ("classifier (2 seeds): composite3_cnn_mlp, trained from scratch, 8 epochs, rmsprop, "
                          "lr 0.001.")
    changed = rows.assign(epochs=[8, 16], lr=0.003, pretrain="items").iloc[[0, 1]]
    assert findings.grid_findings(changed, "x", what="classifier")[1] == (
        "classifier (2 seeds): composite3_cnn_mlp pretrained on the items source task (stage 0), then fine-tuned, "
        "8 epochs, 16 for seed 1, rmsprop, lr 0.003.")
    assert findings.grid_findings(rows.iloc[[1]], "x", what="classifier")[1].startswith("classifier (1 seed):")
    with pytest.raises(ValueError, match="several classes values"):
        findings.grid_findings(rows.assign(classes=[333, 100]), "x", what="classifier")
    with pytest.raises(ValueError, match="what must be"):
        findings.grid_findings(rows, "x", what="classifiers")


def test_a_grid_line_edited_by_hand_or_a_settings_file_changed_fails_the_checker(tmp_path):
    page_dir = tmp_path / "tiny" / "03_x"
    table = plots.save_table(_settings(), page_dir / "tables" / "settings")
    shown = findings.show("grid", settings=table, dataset="fashion-composite").data
    page = page_dir / "03_x-report.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>x</title></head><body><h1>x</h1>{shown}</body></html>")
    assert check_report_folder(tmp_path / "tiny") == []
    page.write_text(page.read_text().replace("160 for mds", "80 for mds"))  # a budget edited by hand
    assert [p.kind for p in check_report_folder(tmp_path / "tiny")] == ["false-sentence"]
    page.write_text(f"<!DOCTYPE html><html><head><title>x</title></head><body><h1>x</h1>{shown}</body></html>")
    plots.save_table(_settings(lr_dpsh=0.003), page_dir / "tables" / "settings")  # the file changed after the build
    problems = check_report_folder(tmp_path / "tiny")
    assert [p.kind for p in problems] == ["false-sentence"] and "lr 0.003, validation" in problems[0].detail


def _summary_files(page_dir: Path, summary: dict) -> Path:
    """A page's summary, its record, the page showing the summary table, and the preset's index printing its line;
    returns the page."""
    from shc.reports.summary import format_summary
    from shc.stats import summary_table

    (page_dir / "summary.json").write_text(json.dumps(summary))
    (page_dir / "run.json").write_text(json.dumps({"status": "ok", "notebook": page_dir.name}))
    page = page_dir / f"{page_dir.name}-report.html"
    page.write_text(f"<!DOCTYPE html><html><head><title>x</title></head><body><h1>x</h1>{summary_table(summary)}"
                    "</body></html>")
    (page_dir.parent / "index.html").write_text(f"<!DOCTYPE html><html><head><title>i</title></head><body><table>"
                                                f"<tr><td>{html.escape(format_summary(summary))}</td></tr></table>"
                                                "</body></html>")
    return page


def _summary_page(root: Path, label: str) -> tuple[Path, Path]:
    """A preset folder with page 06: its runs table (shc ahead of mds on every seed), its summary and index line."""

    page_dir = root / "tiny" / "06_x"
    runs = _runs(0.05).assign(method=lambda frame: frame["label"], train_center_hit_rate=0.95)
    plots.save_table(runs, page_dir / "tables" / "runs")
    summary = {"best method (tie-aware mAP@ALL, 16 bits)": label,
               "tie-aware mAP@ALL shc (16 bits)": float(runs[runs.label == "shc"]["tie_aware_mAP@ALL"].mean())}
    return root / "tiny", _summary_files(page_dir, summary)


def test_the_summary_and_its_index_line_are_derived_again_from_the_runs_table(tmp_path):
    """summary.json (the index's line for a page) was read by nobody: a best-method label or a mean edited there, or
    in the index, passed the checker (an audit, 2026-12-02)."""
    derived = findings.best_methods_label(_runs(0.05).assign(method=lambda f: f["label"],
                                                             train_center_hit_rate=0.95), "tie_aware_mAP@ALL", 16,
                                          method="method")
    assert derived.startswith("shc")
    folder, page = _summary_page(tmp_path, derived)
    assert [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == []
    summary_file = page.parent / "summary.json"
    summary = json.loads(summary_file.read_text())
    summary_file.write_text(json.dumps({**summary, "tie-aware mAP@ALL shc (16 bits)": 0.9}))  # a mean edited
    kinds = [p.kind for p in check_report_folder(folder)]
    assert kinds.count("summary-mismatch") == 2  # the summary against its runs, the index against the summary
    summary_file.write_text(json.dumps(summary))
    index = folder / "index.html"
    index.write_text(index.read_text().replace("0.4", "0.5", 1))  # the index line edited
    assert [p.file for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == ["index.html"]


def test_refresh_derives_an_old_best_method_label_again_and_says_so(tmp_path):
    from shc.reports.refresh import refresh_summaries

    folder, page = _summary_page(tmp_path, "shc (an old wording)")
    assert [p.kind for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == ["summary-mismatch"]
    assert refresh_summaries(folder, stamp="2026-12-02 by shc at abc1234") == ["06_x"]
    assert [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == []
    text = page.read_text()
    assert 'data-refreshed="2026-12-02 by shc at abc1234"' in text and "as built it said: best method" in text
    assert "shc (an old wording)" in text.split('class="shc-refreshed"')[1]  # quoted in the note only
    record = json.loads((page.parent / "run.json").read_text())
    assert record["summary_refreshed"]["was"] == {"best method (tie-aware mAP@ALL, 16 bits)": "shc (an old wording)"}
    assert refresh_summaries(folder, stamp="later") == []  # a second run changes nothing
    # the wording changes again: the next refresh still quotes the label as built, and keeps the first stamp
    key = "best method (tie-aware mAP@ALL, 16 bits)"
    summary_file = page.parent / "summary.json"
    summary_file.write_text(json.dumps({**json.loads(summary_file.read_text()), key: "shc (a later wording)"}))
    assert refresh_summaries(folder, stamp="2026-12-05 by shc at def5678") == ["06_x"]
    text = page.read_text()
    assert 'data-refreshed="2026-12-02 by shc at abc1234 | 2026-12-05 by shc at def5678"' in text
    assert "as built it said: best method (tie-aware mAP@ALL, 16 bits): shc (an old wording)" in text
    assert "a later wording" not in text
    record = json.loads((page.parent / "run.json").read_text())["summary_refreshed"]
    assert record == {"stamps": ["2026-12-02 by shc at abc1234", "2026-12-05 by shc at def5678"],
                      "was": {key: "shc (an old wording)"}}
    assert "2026-12-02 by shc at abc1234; 2026-12-05 by shc at def5678" in (folder / "index.html").read_text()


def _page03(root: Path, summary: dict, settings: bool = True, without: str | None = None) -> tuple[Path, Path]:
    """A preset folder with page 03: six runs of ``_settings`` (mds 160 epochs, the others 80; less the method
    ``without``), their runs table (selected epochs 40, 80, 120, 160, 60, 80; 60 s each), their settings or only
    their training history, the summary and its index line."""

    page_dir = root / "tiny" / "03_x"
    grid = _settings().assign(selected_epoch=[40, 80, 120, 160, 60, 80]).query("method != @without")
    runs = grid[["method", "label", "bits", "seed", "selected_epoch"]].assign(train_seconds=60.0,
                                                                              **{"tie_aware_mAP@ALL": 0.5})
    plots.save_table(runs, page_dir / "tables" / "runs")
    if settings:
        plots.save_table(grid.drop(columns="selected_epoch"), page_dir / "tables" / "settings")
    else:  # an older page: each run's epochs 1..budget in its training history
        history = grid.loc[lambda f: f.index.repeat(f["epochs"])][["method", "bits", "seed", "epochs"]]
        history["epoch"] = history.groupby(["method", "bits"]).cumcount() + 1
        plots.save_table(history.drop(columns="epochs"), page_dir / "tables" / "training_history")
    return root / "tiny", _summary_files(page_dir, summary)


#: Page 03's summary of the six runs of ``_page03`` by hand: 6 runs of 60 s; shc and dpsh 80 epochs, mds 160; the
#: selected epochs over their budgets 40/80, 80/80, 120/160, 160/160, 60/80, 80/80.
_PAGE03 = {"runs": 6, "training time (min)": 6.0, "budgets": "80 epochs, 160 for mds",
           "selected epoch / budget (mean)": (0.5 + 1 + 0.75 + 1 + 0.75 + 1) / 6}


@pytest.mark.parametrize("settings", [True, False], ids=["settings", "training-history"])
@pytest.mark.parametrize("key, typed", [("runs", 7), ("training time (min)", 6.5), ("budgets", "80 epochs"),
                                        ("selected epoch / budget (mean)", 0.9)])
def test_page03s_summary_is_derived_from_its_runs_and_each_runs_own_budget(tmp_path, settings, key, typed):
    """Page 03's index line said "epochs 160" of a grid where 63 of 72 runs trained 80, and nothing read it (a
    third reader audit, 2026-12-05): each entry is derived from the runs table and each run's budget (its settings,
    or on older pages the last epoch of its training history)."""
    folder, _ = _page03(tmp_path, _PAGE03, settings=settings)
    assert [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == []
    folder, _ = _page03(tmp_path / "typed", {**_PAGE03, key: typed}, settings=settings)
    problems = [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"]
    assert [p.file for p in problems] == ["03_x/summary.json"] and repr(key) in problems[0].detail


def test_an_older_pages_one_epochs_is_true_only_when_every_run_trained_it_and_refresh_says_budgets(tmp_path):
    """An older page 03 stated one "epochs" and a "mean selected epoch" pooling runs of 80 and 160 epochs (a reader
    audit read 79.06 as "almost every run chose the end of an 80-epoch budget"): both are replaced by today's entries,
    the budgets and the selected epoch over each run's own budget."""
    from shc.reports.refresh import refresh_summaries

    older = {"runs": 6, "training time (min)": 6.0, "epochs": 160, "mean selected epoch": 90.0}
    folder, page = _page03(tmp_path, older, settings=False)
    problems = [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"]
    details = sorted(p.detail for p in problems)
    assert len(details) == 2 and details[0].startswith("'epochs' (160)") and "'80 epochs, 160 for mds'" in details[0]
    assert details[1].startswith("'mean selected epoch' (90.0)") and "'selected epoch / budget (mean)'" in details[1]
    assert refresh_summaries(folder, stamp="2026-12-05 by shc at abc1234") == ["03_x"]
    assert [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == []
    fresh = json.loads((page.parent / "summary.json").read_text())
    assert fresh == {"runs": 6, "training time (min)": 6.0, "budgets": "80 epochs, 160 for mds",
                     "selected epoch / budget (mean)": _PAGE03["selected epoch / budget (mean)"]}
    assert "budgets 80 epochs, 160 for mds" in (folder / "index.html").read_text()
    assert ("where it spoke of runs that trained different budgets; as built it said: epochs: 160; mean selected "
            "epoch: 90.0") in page.read_text()
    assert refresh_summaries(folder, stamp="later") == []
    one = {"runs": 4, "training time (min)": 4.0, "epochs": 80, "mean selected epoch": 65.0}  # shc and dpsh: 80
    folder, _ = _page03(tmp_path / "one", one, settings=False, without="mds")
    assert [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == []


@pytest.mark.parametrize("typed", ["SHC beats CSQ at every length.", "CRH is above every baseline here.",
                                   "shc-ls ties SHC at 32 bits.", "GreedyHash stays well below LTH.",
                                   "SHC outperforms its best baseline.", "mds is higher than random"])
def test_a_comparison_of_methods_typed_into_prose_is_a_typed_comparison(typed):
    """Issue 38: which method ranks above which depends on the runs; only a computed finding may say it."""
    from shc.reports.check import prose_problems

    problems = prose_problems(_notebook_page(f"Results. {typed}"), "04_x/04_x-report.html", None)
    assert [p.kind for p in problems] == ["typed-comparison"]


@pytest.mark.parametrize("prose", ["The paper reports SHC above CSQ on every dataset.",
                                   "CSQ takes Hadamard rows: any two differ in q/2 bits, far above the GV d.",
                                   "Larger is better, and MDS and SHC must reach the distance printed above.",
                                   "A random pair gets a higher similarity than a random other pair."])
def test_a_fact_about_the_paper_or_one_method_is_not_a_typed_comparison(prose):
    from shc.reports.check import prose_problems

    page = _notebook_page(prose, output="At 16 bits, shc is above csq and random (paired 95% intervals).")
    assert prose_problems(page, "04_x/04_x-report.html", None) == []


def test_no_notebook_types_a_comparison_of_methods():
    """The notebooks' Markdown is the same on every preset: a ranking typed there is false on some preset."""
    import json

    from shc.reports.check import typed_comparisons

    typed = {(path.name, index): typed_comparisons("".join(cell["source"]))
             for path in NOTEBOOKS
             for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"])
             if cell["cell_type"] == "markdown"}
    assert len(typed) > 50
    assert {key: found for key, found in typed.items() if found} == {}


def test_a_bundle_that_no_longer_holds_the_published_records_is_named(tmp_path):
    """Three committed sets kept a bundle.zip whose summaries and findings predated the refreshes after their builds
    (2026-12-05): the checker compares every member with the published file."""
    from shc.reports.bundle import write_bundle

    folder, _ = _page03(tmp_path, _PAGE03)
    write_bundle(folder)
    assert [p for p in check_report_folder(folder) if p.kind == "bundle-stale"] == []
    summary = folder / "03_x" / "summary.json"
    summary.write_text(summary.read_text().replace('"runs": 6', '"runs": 6 '))  # the same record, other bytes
    stale = [p for p in check_report_folder(folder) if p.kind == "bundle-stale"]
    assert [(p.file, p.detail.split(";")[0]) for p in stale] == [
        ("bundle.zip", "03_x/summary.json differs from the published file")]
    write_bundle(folder)
    (folder / "03_x" / "tables" / "settings.csv").unlink()
    stale = [p.detail.split(";")[0] for p in check_report_folder(folder) if p.kind == "bundle-stale"]
    assert stale == ["03_x/tables/settings.csv is in the bundle but not published"]


@pytest.mark.parametrize("preset, finished, corrected", [("standard-unseen", "2026-11-28T23:28:07+00:00", True),
                                                         ("standard-unseen", "2026-12-03T10:00:00+00:00", False),
                                                         ("standard", "2026-11-28T23:28:07+00:00", False)])
def test_an_unseen_pages_accuracy_sentence_is_corrected_only_where_its_runs_predate_the_fix(tmp_path, preset,
                                                                                            finished, corrected):
    """Before 2026-12-02 an unseen set's classifier accuracy counted the held-out queries as errors (a reader audit,
    2026-12-05): the sentence that calls it the test accuracy is true of today's runs and of presets without held-out
    classes, false of those pages only."""
    from shc.reports.corrections import correct_pages

    page_dir = tmp_path / preset / "01_similarity"
    page_dir.mkdir(parents=True)
    page = page_dir / "01_similarity-report.html"
    page.write_text("<!DOCTYPE html><html><head><title>x</title></head><body><h1>01</h1><p>Test accuracy is measured "
                    "on the query split (the paper's test set). The paper's Table 2 reports it.</p></body></html>")
    (page_dir / "run.json").write_text(json.dumps({"finished": finished, "parameters": {"preset": preset}}))
    changed = correct_pages(tmp_path / preset, stamp="2026-12-05 by shc at abc1234")
    assert changed == (["01_similarity/01_similarity-report.html"] if corrected else [])
    assert ("at most the seen classes' share of the queries" in page.read_text()) == corrected
    # a second run changes nothing: the first version's new words held its old ones and doubled the paragraph
    assert correct_pages(tmp_path / preset, stamp="2026-12-06 by shc at abc1235") == []
    before_notes = page.read_text().split('class="shc-corrected"')[0]  # a note quotes the old words
    assert before_notes.count("Test accuracy is measured on the query split") == 1


def test_a_correction_whose_new_words_hold_its_old_ones_is_refused():
    from shc.reports.corrections import Correction

    with pytest.raises(ValueError, match="new words contain the old ones"):
        Correction("01_similarity", old="Test accuracy is measured.", new="Test accuracy is measured. But not here.",
                   why="x")


def _stage_page(root: Path, page: str, tables: dict[str, pd.DataFrame], summary: dict) -> Path:
    """A preset folder with one page of stages 0-2: its tables, its summary and the index line printing it."""
    page_dir = root / "tiny" / page
    for stem, frame in tables.items():
        plots.save_table(frame, page_dir / "tables" / stem)
    _summary_files(page_dir, summary)
    return root / "tiny"


#: Pages 00-02 of a grid by hand: page 00's one center set per method, page 01's stage-1 tables, page 02's runs.
_STAGES = {
    "00_x": ({"center_quality": pd.DataFrame({"method": ["mds", "shc"], "GV distance d": 10, "d_min": [10, 9],
                                              "s_loss": [0.0403, 0.0269]})},
             {"C": 100, "q": 32, "GV d": 10, "d_min mds (seed 0)": 10, "S_loss mds (seed 0)": 0.0403,
              "d_min shc (seed 0)": 9, "S_loss shc (seed 0)": 0.0269}),
    "01_x": ({"classifier_accuracy": pd.DataFrame({"dataset": ["x"], "test accuracy": [0.635]}),
              "similarity_correlations": pd.DataFrame({"": ["data-dependent S", "text S"],
                                                       "data-dependent S": [1, 0.31], "text S": [0.31, 1]}),
              "hierarchy_agreement": pd.DataFrame({"": ["data-dependent S", "text S"], "roc_auc": [0.757, 0.884]})},
             {"classifier test accuracy": 0.635, "Spearman data-dependent vs text S": 0.31,
              "ROC-AUC hierarchy, data-dependent S": 0.757, "ROC-AUC hierarchy, text S": 0.884}),
    "02_x": ({"center_quality_runs": pd.DataFrame({"label": ["shc"] * 3 + ["mds"] * 3, "bits": 64,
                                                   "seed": [0, 1, 2] * 2, "d_min": [24, 24, 22, 32, 32, 32],
                                                   "s_loss": [0.025, 0.026, 0.027, 0.03, 0.03, 0.03]})},
             {"S_loss shc (64 bits)": 0.026, "S_loss mds (64 bits)": 0.03, "d_min shc (64 bits)": 70 / 3,
              "d_min mds (64 bits)": 32.0}),
}


@pytest.mark.parametrize("page", sorted(_STAGES))
def test_the_summaries_of_pages_00_to_02_are_derived_from_their_tables(tmp_path, page):
    """Only pages 03-06's index lines were derived again; pages 00-02 state a GV distance, d_min, S_loss, a classifier
    accuracy, a Spearman and ROC-AUCs that nothing read (2026-12-05). Each entry, edited, is named."""
    tables, summary = _STAGES[page]
    folder = _stage_page(tmp_path, page, tables, summary)
    assert [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"] == []
    for key in (key for key in summary if key not in ("C", "q")):
        edited = {**summary, key: summary[key] + 1}
        folder = _stage_page(tmp_path / key.replace("/", "_"), page, tables, edited)
        problems = [p for p in check_report_folder(folder) if p.kind == "summary-mismatch"]
        assert [p.file for p in problems] == [f"{page}/summary.json"] and repr(key) in problems[0].detail, key


def test_a_summary_rounded_to_three_digits_or_reported_as_na_is_read_as_such():
    """Older pages stored a summary rounded to 3 significant digits; an unseen set's classifier accuracy from a
    stage 1 that counted held-out queries is NaN (n/a) in today's tables."""
    from shc.reports.check_summary import _same

    assert _same(0.0495, 0.049460279) and _same(0.04946, 0.049460279) and _same(0.049460279, 0.049460279)
    assert not _same(0.0496, 0.049460279) and not _same(0.05, 0.049460279)  # another value, or 1 digit
    assert _same(float("nan"), float("nan")) and not _same(float("nan"), 0.5) and not _same(0.5, float("nan"))
