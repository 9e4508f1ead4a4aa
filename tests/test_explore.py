"""The center explorer (shc.explore, issue 23): live controls against shc.centers, the offline view's data and its
rendering in headless Chromium without network, the lessons it states, and the app served by Voila."""

from __future__ import annotations

import base64
import json
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from shc import centers, explore, findings
from shc.runs import MissingRunError
from shc.similarity import hierarchical_similarity, similarity_from_labels

pytest.importorskip("ipywidgets", reason="the explore extra is not installed: pip install -e '.[explore]'")


def _tens_digit_S(C: int) -> np.ndarray:  # the label source, built independently
    return similarity_from_labels(C, [c // 10 for c in range(C)])


def _brute_force_distances(H: np.ndarray) -> np.ndarray:
    H = np.asarray(H)
    return (H[:, None, :] != H[None, :, :]).sum(axis=2)


def _check_view(view: explore.ExplorerView, method: str, S: np.ndarray, q: int, **options) -> None:
    expected = centers.generate_centers(method, S.shape[0], q, similarity=S, seed=0, **options)
    np.testing.assert_array_equal(view.centers, expected)
    D = _brute_force_distances(expected)
    upper = D[np.triu_indices(S.shape[0], k=1)]
    summary = view.summary()
    assert summary["d_min"] == upper.min() == centers.center_quality(expected, S)["d_min"]
    assert summary["colliding pairs"] == int((upper == 0).sum())
    assert view.histogram.tolist() == np.bincount(upper, minlength=q + 1).tolist()
    assert summary["S_loss"] == pytest.approx(np.mean((S - expected @ expected.T / q) ** 2), abs=1e-5)


def test_controls_drive_the_views_and_the_numbers_match_shc_centers():
    explorer = explore.Explorer(num_classes=12, bits=8, method="mds", cache=explore.CenterCache()).wait()
    _check_view(explorer.view, "mds", _tens_digit_S(12), 8)
    explorer.classes.value = 20
    explorer.bits.value = 16
    explorer.method.value = "shc"
    explorer.wait()
    assert explorer.view.num_classes == 20 and explorer.view.bits == 16 and explorer.view.method == "shc"
    _check_view(explorer.view, "shc", _tens_digit_S(20), 16)
    assert "<td>shc</td>" in explorer.summary_html.value and explorer.figure.value[:4] == b"\x89PNG"

    # a class picked by name: its nearest centers, their Hamming distances and their similarity in S
    explorer.class_name.value = "13"
    D = _brute_force_distances(explorer.view.centers)
    others = [j for j in np.argsort(D[13], kind="stable") if j != 13][:5]
    table = explorer.nearest
    assert table["class"].tolist() == [f"{j:02d}" for j in others]
    assert table["Hamming distance"].tolist() == D[13, others].tolist()
    assert table["S"].tolist() == pytest.approx(_tens_digit_S(20)[13, others].tolist())
    assert "Nearest centers to class 13" in explorer.nearest_html.value

    # the required distance d: the Gilbert-Varshamov d by default, any d when unticked
    assert explorer.view.required_distance == centers.gv_min_distance(20, 16)
    explorer.method.value = "mds"
    explorer.use_gv.value = False
    explorer.distance.value = 3
    explorer.wait()
    assert not explorer.distance.disabled and explorer.view.required_distance == 3
    _check_view(explorer.view, "mds", _tens_digit_S(20), 16, min_distance=3)

    # another similarity source
    explorer.source.value = "hierarchical"
    explorer.wait()
    np.testing.assert_array_equal(explorer.view.S, hierarchical_similarity(20, num_groups=2, seed=0))


def test_uncached_settings_compute_in_the_background_with_a_progress_bar(monkeypatch):
    """The computation is held until the test has looked (an audit: "bar visible or already done" passed with the
    background thread removed)."""
    import threading

    explorer = explore.Explorer(num_classes=16, bits=8, method="random", cache=explore.CenterCache()).wait()
    computed = explorer.cache.computed
    release, view = threading.Event(), explore.explorer_view

    def held(*args, **kwargs):
        assert release.wait(60), "the test never released the computation"
        return view(*args, **kwargs)

    monkeypatch.setattr(explore, "explorer_view", held)
    explorer.method.value = "shc-ls"  # returns while the centers are computed in the background
    assert explorer._thread is not None and explorer._thread.is_alive()
    assert explorer.progress.layout.visibility == "visible" and "computing shc-ls centers" in explorer.status.value
    assert explorer.view.method == "random"  # the old view stays until the new one is ready
    release.set()
    explorer.wait()
    assert explorer.view.method == "shc-ls" and explorer.progress.layout.visibility == "hidden"
    assert explorer.cache.computed == computed + 1
    explorer.method.value = "random"  # cached: answered at once, nothing recomputed
    assert explorer.view.method == "random" and explorer.cache.computed == computed + 1


def test_a_missing_stored_similarity_names_the_command_that_computes_it(tmp_path):
    with pytest.raises(MissingRunError, match=r"python -m shc\.pipeline --preset tiny"):
        explore.preset_similarity("tiny", run_dir=str(tmp_path))
    explorer = explore.Explorer(num_classes=10, bits=8, method="mds", preset="tiny", run_dir=str(tmp_path),
                                cache=explore.CenterCache()).wait()
    explorer.source.value = "preset"
    assert "python -m shc.pipeline --preset tiny" in explorer.status.value
    with pytest.raises(ValueError, match="known similarity sources|Known similarity sources"):
        explore.similarity_for("labels", 10)


@pytest.mark.parametrize("arguments, message", [
    ({"source": "foo"}, "unknown similarity source 'foo'. Known similarity sources: label"),
    ({"method": "foo"}, "unknown center method 'foo'. Known center methods: random"),
])
def test_an_unknown_source_or_method_is_named_with_the_known_ones(arguments, message):
    """A newcomer's probe: the widgets' TraitError ("Invalid selection: value not found") named neither."""
    with pytest.raises(ValueError, match=re.escape(message)):
        explore.Explorer(num_classes=16, bits=16, background=False, cache=explore.CenterCache(), **arguments)


def test_a_negative_code_length_is_shown_as_the_explorers_error_not_a_widget_traceback():
    explorer = explore.Explorer(num_classes=16, bits=-8, background=False, cache=explore.CenterCache())
    assert explorer.error is not None and "-8" in explorer.error  # was TraitError: setting min > max


def test_nearest_centers_rejects_an_unknown_class():
    view = explore.explorer_view("csq", _tens_digit_S(10), 8, cache=explore.CenterCache())
    with pytest.raises(ValueError, match="unknown class 'x'.*e.g. '0'"):
        explore.nearest_centers(view, "x")


@pytest.fixture(scope="module")
def small_grid():
    return explore.precompute_grid([10, 20], [8, 16], methods=["random", "mds", "shc", "semantic"],
                                   cache=explore.CenterCache())


def test_offline_json_holds_the_centers_as_packed_bits_and_s_in_percent(small_grid):
    data = explore.grid_json(small_grid)
    assert data["methods"] == ["random", "mds", "shc", "semantic"] and set(data["similarities"]) == {"10", "20"}
    for (C, q, method), view in small_grid["views"].items():
        packed = np.frombuffer(base64.b64decode(data["views"][f"{C}/{q}/{method}"]["centers"]), dtype=np.uint8)
        bits = np.unpackbits(packed.reshape(C, -1), axis=1)[:, :q]
        np.testing.assert_array_equal(np.where(bits == 1, 1, -1), view.centers)
        assert data["views"][f"{C}/{q}/{method}"]["summary"]["d_min"] == centers.center_quality(view.centers)["d_min"]
    upper = np.frombuffer(base64.b64decode(data["similarities"]["20"]["S"]), dtype=np.int8) / 100
    assert upper.size == 20 * 21 // 2  # the upper triangle with the diagonal: S is symmetric
    S = np.zeros((20, 20))
    S[np.triu_indices(20)] = upper
    np.testing.assert_allclose(np.triu(S) + np.triu(S, 1).T, _tens_digit_S(20), atol=0.005)
    page = explore.offline_view(small_grid)._repr_html_()
    assert len(page) < 100_000 and "http" not in page.replace("http://www.w3.org/2000/svg", "")


def test_geometry_lessons_count_collisions_oscillation_and_movement_independently(small_grid):
    lessons = explore.geometry_lessons(small_grid)
    for C in (10, 20):
        for q in (8, 16):
            S = _tens_digit_S(C)
            semantic = centers.generate_centers("semantic", C, q, similarity=S)
            D = _brute_force_distances(semantic)
            assert lessons.loc[(C, q), "semantic colliding pairs"] == int((D[np.triu_indices(C, 1)] == 0).sum())
            shc, mds = (centers.generate_centers(m, C, q, similarity=S) for m in ("shc", "mds"))
            assert lessons.loc[(C, q), "shc bits moved from mds"] == pytest.approx((shc != mds).sum(axis=1).mean())
            s_loss = [r["s_loss"] for r in centers.run_center_method("shc", C, q, S)[1]]
            signs = [np.sign(b - a) for a, b in zip(s_loss, s_loss[1:]) if b != a]
            assert lessons.loc[(C, q), "shc S_loss reversals"] == sum(x != y for x, y in zip(signs, signs[1:]))


def test_geometry_findings_state_the_numbers_of_the_table():
    table = pd.DataFrame({
        "C": [100, 100, 100], "q": [16, 32, 64], "semantic colliding pairs": [23, 0, 0], "semantic d_min": [0, 5, 24],
        "shc cycles": [20, 20, 20], "shc S_loss reversals": [11, 0, 0], "shc S_loss rises": [9, 0, 1],
        "shc bits moved from mds": [7.09, 3.59, 0.0], "shc share of bits moved": [0.443125, 0.1121875, 0.0],
    }).set_index(["C", "q"])
    sentences = findings.geometry_findings(table)
    assert len(sentences) == 3
    assert "23 at 16 bits colliding pair(s)" in sentences[0]
    assert "11 reversals and 9 rises in 20 cycles at 16 bits)" in sentences[1]
    # the other lengths are named too: "oscillates" alone read as true of every length on a 16/32-bit page (an audit)
    assert "; at 32 and 64 bits it changes direction at most once (no oscillation); " in sentences[1]
    assert "7.09 bits per center (44.3%) at 16 bits" in sentences[2]
    assert "at 64 bits it returns its MDS start unchanged" in sentences[2]
    calm = table.assign(**{"semantic colliding pairs": 0, "shc S_loss reversals": 1})
    assert "no collision" in findings.geometry_findings(calm)[0]
    # every_length (pages since 2026-12-02) names the lengths without a collision as well, counts in the right number
    every = findings.geometry_findings(table, every_length=True)
    assert every[0] == ("C = 100: semantic-only centers (no distance term) give some class pairs the same center, "
                        "which no image can tell apart: 23 colliding pairs at 16 bits; at 32 and 64 bits every class "
                        "keeps its own center.")
    one = table.assign(**{"semantic colliding pairs": [1, 0, 2]})
    assert ("1 colliding pair at 16 bits, 2 colliding pairs at 64 bits; at 32 bits every class keeps its own center."
            in findings.geometry_findings(one, every_length=True)[0])
    assert findings.geometry_findings(calm)[0].endswith("own center at 16, 32, 64 bits (no collision).")
    assert findings.geometry_findings(calm, every_length=True)[0].endswith("at 16, 32 and 64 bits (no collision).")
    assert "no oscillation" in findings.geometry_findings(calm)[1]


def test_report_pages_show_the_fallback_of_a_widget_view(tmp_path):
    import nbformat

    from shc.reports.export import render_html

    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "language": "python", "display_name": "Python 3"}
    notebook.cells = [nbformat.v4.new_markdown_cell("# Widgets"), nbformat.v4.new_code_cell("explorer", outputs=[
        nbformat.v4.new_output("display_data", data={
            "application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0},
            "text/html": "<p>live explorer fallback</p>"})])]
    notebook.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2,
                                                                                   "version_minor": 0}}
    notebook.cells.append(nbformat.v4.new_code_cell("box", outputs=[nbformat.v4.new_output("execute_result", data={
        "application/vnd.jupyter.widget-view+json": {"model_id": "def", "version_major": 2, "version_minor": 0},
        "text/plain": "VBox(children=(HTML(value='x'),))"}, execution_count=2)]))
    source = tmp_path / "widgets.ipynb"
    nbformat.write(notebook, str(source))
    page = render_html(source, tmp_path / "widgets.html").read_text(encoding="utf-8")
    assert "live explorer fallback" in page and "widget-view+json" not in page and "widget-state" not in page
    assert "VBox(children" not in page


@pytest.mark.browser
def test_offline_view_changes_with_its_controls_in_headless_chromium_without_network(small_grid, tmp_path):
    from shc.reports.browser import browser_problems, find_chromium, rendered_dom

    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the browser check needs it")
    probe = """<pre id="probe"></pre><script>
    function shown() { return Array.from(document.querySelectorAll('.shc-explorer-summary td')).map(function (td) {
      return td.textContent; }).join('|') + ' #' + document.querySelectorAll('.shc-explorer-nearest tr').length
      + ' ' + (document.querySelector('.shc-explorer-nearest td:nth-child(2)') || {}).textContent
      + ' S=' + (document.querySelector('.shc-explorer-nearest td:nth-child(4)') || {}).textContent
      + ' @' + document.querySelector('.shc-explorer-note').textContent
      + ' @' + document.querySelectorAll('.shc-explorer-histogram text').length; }
    function pick(cls, value) { var s = document.querySelector('select.' + cls); s.value = value;
      s.dispatchEvent(new Event('change')); }
    var lines = [shown()];
    pick('shc-classes', '20'); pick('shc-bits', '16'); pick('shc-center', 'semantic'); lines.push(shown());
    pick('shc-class', '13'); lines.push(shown());
    // the colour scale narrowed by a page's CSS (a report's max-width), as on page 00: its labels stay inside it
    var bar = document.querySelector('svg[aria-label^="colour scale"]'); bar.style.width = '30px';
    bar.style.height = 'auto'; var box = bar.getBoundingClientRect();
    lines[2] += ' @' + Array.from(bar.querySelectorAll('text')).map(function (t) { var r = t.getBoundingClientRect();
      return t.textContent + (r.top >= box.top && r.bottom <= box.bottom ? ':in' : ':cut'); }).join(',');
    document.getElementById('probe').textContent = lines.join('\\n');
    </script>"""
    page = tmp_path / "explorer.html"
    page.write_text(f"<html><head><title>explorer</title></head><body>"
                    f"{explore.offline_view(small_grid)._repr_html_()}{probe}</body></html>", encoding="utf-8")
    dom = rendered_dom(page)  # headless Chromium with every network request refused
    lines = re.search(r'<pre id="probe">(.*?)</pre>', dom, flags=re.S).group(1).strip().splitlines()
    assert len(lines) == 3 and lines[0] != lines[1]
    first, second = (small_grid["views"][key] for key in ((10, 8, "shc"), (20, 16, "semantic")))
    # the renderer recomputes d_min and collisions from the packed bits: they must equal Python's
    for line, view in ((lines[0], first), (lines[1], second)):
        cells = line.split(" #")[0].split("|")
        assert cells[:3] == [str(view.num_classes), str(view.bits), view.method]
        assert cells[5] == str(view.summary()["d_min"]) and cells[6] == str(view.summary()["colliding pairs"])
        assert cells[8] == str(view.summary()["S_loss"])
    assert " #6 " in lines[1]  # a header and the five nearest centers
    # issue 38: the d a method was asked for, never the GV d in its place; the histogram has axes and tick labels
    note_shc, note_semantic = lines[0].split(" @")[1], lines[1].split(" @")[1]
    assert f"required d = {first.required_distance}" in note_shc and first.required_distance > 0
    assert second.required_distance == 0 and "asked for no minimum distance" in note_semantic
    assert "required d" not in note_semantic
    assert int(lines[0].split(" @")[2]) >= 5  # x ticks, y ticks and the two axis titles
    assert "colour scale from -1" in dom
    nearest = explore.nearest_centers(second, "13")
    assert lines[2].split(" @")[0].endswith(f" {nearest['class'].iloc[0]} S={nearest['S'].iloc[0]:.2f}")
    assert lines[2].split(" @")[-1] == "+1:in,0:in,-1:in"  # a reader audit saw "-1" cut off below a narrowed bar
    assert browser_problems(page, dom) == []  # what a reader sees: no raw TeX, no repr, no dead link


def test_a_grid_offers_only_the_code_lengths_its_classes_fit():
    """A reader audit (issue 38): `standard-fine`'s page 00 (C = 333) offered q = 8, where 333 distinct centers cannot
    exist (2^8 = 256 codes), and opened on it: an empty view. A q that no C of the grid fits is not offered."""
    grid = explore.precompute_grid([300], [8, 16], methods=["random"], cache=explore.CenterCache())
    assert grid["bits"] == [16] and list(grid["views"]) == [(300, 16, "random")]
    with pytest.raises(ValueError, match=r"C <= 2\^q.*bits=\[16\]"):
        explore.precompute_grid([300], [8], methods=["random"], cache=explore.CenterCache())


@pytest.mark.browser
def test_the_offline_view_opens_on_a_code_length_its_first_classes_fit(tmp_path):
    """q = 8 fits the grid's 10 classes but not its first C, 300: the view opens on q = 16, not on an empty one."""
    from shc.reports.browser import find_chromium, rendered_dom

    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the browser check needs it")
    grid = explore.precompute_grid([300, 10], [8, 16], methods=["random"], cache=explore.CenterCache())
    assert grid["bits"] == [8, 16]  # q = 8 is offered: C = 10 fits it
    probe = """<pre id="probe"></pre><script>
    document.getElementById('probe').textContent = document.querySelector('select.shc-bits').value + ' @' +
      document.querySelector('.shc-explorer-note').textContent + ' #' +
      document.querySelectorAll('.shc-explorer-summary td').length;
    </script>"""
    page = tmp_path / "explorer.html"
    page.write_text(f"<html><head><title>explorer</title></head><body>"
                    f"{explore.offline_view(grid)._repr_html_()}{probe}</body></html>", encoding="utf-8")
    shown = re.search(r'<pre id="probe">(.*?)</pre>', rendered_dom(page), flags=re.S).group(1).strip()
    bits, rest = shown.split(" @", 1)
    assert bits == "16" and "not precomputed" not in rest and int(rest.rsplit(" #", 1)[1]) > 0
    # no q fits the first C at all: the view opens on the next C that has one (q = 8 is kept for C = 10)
    grid = explore.precompute_grid([300, 10], [8], methods=["random"], cache=explore.CenterCache())
    page.write_text(f"<html><head><title>explorer</title></head><body>"
                    f"{explore.offline_view(grid)._repr_html_()}{probe.replace('shc-bits', 'shc-classes')}"
                    "</body></html>", encoding="utf-8")
    shown = re.search(r'<pre id="probe">(.*?)</pre>', rendered_dom(page), flags=re.S).group(1).strip()
    classes, rest = shown.split(" @", 1)
    assert classes == "10" and "not precomputed" not in rest and int(rest.rsplit(" #", 1)[1]) > 0


@pytest.mark.browser
def test_the_histograms_counts_do_not_run_into_its_y_title(tmp_path):
    """A reader audit of `standard-fine` (C = 333): the count 10852 was drawn through "pairs of centers". With C = 500
    the tallest bar holds five-digit counts; every y tick label ends before the rotated title begins."""
    from shc.reports.browser import find_chromium, rendered_dom

    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the browser check needs it")
    grid = explore.precompute_grid([500], [16], methods=["random"], cache=explore.CenterCache())
    probe = """<pre id="probe"></pre><script>
    var texts = Array.from(document.querySelectorAll('.shc-explorer-histogram text'));
    var title = texts.find(function (t) { return t.textContent === 'pairs of centers'; }).getBoundingClientRect();
    document.getElementById('probe').textContent = texts.filter(function (t) {
      return t.getAttribute('text-anchor') === 'end'; }).map(function (t) { var r = t.getBoundingClientRect();
      return t.textContent + (r.left > title.right ? ':clear' : ':overlaps'); }).join(',');
    </script>"""
    page = tmp_path / "explorer.html"
    page.write_text(f"<html><head><title>explorer</title></head><body>"
                    f"{explore.offline_view(grid)._repr_html_()}{probe}</body></html>", encoding="utf-8")
    ticks = re.search(r'<pre id="probe">(.*?)</pre>', rendered_dom(page), flags=re.S).group(1).strip().split(",")
    assert len(ticks) == 3 and max(len(tick.split(":")[0]) for tick in ticks) == 5  # 0, the middle and the top count
    assert all(tick.endswith(":clear") for tick in ticks), ticks


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_app_notebook_is_the_parameters_and_the_explorer_cells():
    notebook = explore.app_notebook()
    tags = [cell.metadata.get("tags", []) for cell in notebook.cells]
    assert "parameters" in tags[0] and all("explorer" in t for t in tags[1:]) and len(tags) >= 2
    assert any("explore.Explorer(" in cell.source for cell in notebook.cells)


def test_the_app_command_serves_the_explorer_page(tmp_path):
    pytest.importorskip("voila", reason="the explore extra is not installed: pip install -e '.[explore]'")
    port = _free_port()
    root = Path(__file__).resolve().parents[1]
    process = subprocess.Popen([sys.executable, "-m", "shc.explore", f"--port={port}"], cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline, page = time.monotonic() + 300, None
        while time.monotonic() < deadline and page is None:
            if process.poll() is not None:
                pytest.fail(f"the app exited: {process.stdout.read().decode(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=280) as response:
                    page = response.read().decode("utf-8", errors="replace")
            except OSError:
                time.sleep(1)
        assert page is not None, "the app did not answer within 300 s"
        assert "The live explorer" in page  # the explorer's markdown cell, no code
        assert "explore.Explorer(" not in page
        assert "application/vnd.jupyter.widget-view+json" in page
    finally:
        process.terminate()  # the command stops its Voila server on SIGTERM (no server is left behind)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        assert process.returncode is not None
        if shutil.which("pgrep"):
            left = subprocess.run(["pgrep", "-f", f"voila .*--port={port}"], capture_output=True, text=True).stdout
            assert not left.strip(), f"the Voila server outlived the app command: pid {left.split()}"


# --------------------------------------------------------------------------------------------
# Page 00 belongs to its preset (issue 38): its testbed's classes and, where computed, its stage-1 S
# --------------------------------------------------------------------------------------------
def test_the_demonstration_page_shows_the_tens_digit_hierarchy():
    target = explore.page_similarity(None, num_classes=100, seed=0)
    np.testing.assert_array_equal(target.matrix, _tens_digit_S(100))
    assert target.source == "hierarchy S" and target.class_names[:3] == ["00", "01", "02"]
    assert target.coarse_labels.tolist() == [c // 10 for c in range(100)] and "100 classes in 10 coarse" in target.note
    fewer = explore.page_similarity(None, num_classes=30, seed=0)  # evenly spaced numbers, grouped by tens digit
    tens = [int(name[0]) for name in fewer.class_names]
    assert fewer.coarse_labels.tolist() == tens and len(set(tens)) == 10
    np.testing.assert_array_equal(fewer.matrix, similarity_from_labels(30, tens))


def test_a_preset_page_shows_its_stage1_s_once_computed_and_else_says_which_command_computes_it(tmp_path):
    from shc import pipeline, presets, results

    run_dir = str(tmp_path / "tiny")
    missing = explore.page_similarity("tiny", "digits-composite", seed=0, run_dir=run_dir)
    config = presets.report_configs("tiny", "digits-composite", ["shc"], [16], [0], run_dir)[0]
    data = results.load_data(config)
    assert missing.source == "hierarchy S" and "python -m shc.reports --preset tiny" in missing.note
    np.testing.assert_array_equal(missing.matrix, similarity_from_labels(data.num_classes, data.coarse_labels))
    assert explore.live_settings("tiny", "digits-composite", 0, run_dir) == {"source": "label", "preset": "quick"}
    assert str(tmp_path) not in missing.note  # a page names no machine path

    pipeline.compute_similarities([config], progress=False)
    stored = explore.page_similarity("tiny", "digits-composite", seed=0, run_dir=run_dir)
    assert stored.source == "stage-1 S" and "own stage-1 similarity" in stored.note
    np.testing.assert_array_equal(stored.matrix, results.load_similarity(config.replace(similarity="logits")))
    assert stored.class_names == [str(n) for n in data.class_names] and len(stored.coarse_names) == 10
    assert explore.live_settings("tiny", "digits-composite", 0, run_dir) == {
        "source": "preset", "preset": "tiny", "dataset": "digits-composite", "run_dir": run_dir}

    # a stored S refused as computed under other settings is not silently replaced by the hierarchy (an audit)
    from shc.runs import StaleRunError

    def stale(config):
        raise StaleRunError("computed with other method defaults")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(results, "load_similarity", stale)
        with pytest.raises(StaleRunError, match="other method defaults"):
            explore.page_similarity("tiny", "digits-composite", seed=0, run_dir=run_dir)
        with pytest.raises(StaleRunError, match="other method defaults"):
            explore.live_settings("tiny", "digits-composite", 0, run_dir)

    grid = explore.precompute_grid([20], [8], methods=["mds", "shc"], source=stored.source, cache=explore.CenterCache(),
                                   similarity=(stored.matrix, stored.class_names))
    np.testing.assert_array_equal(grid["similarities"][20][0], stored.matrix)  # the explorer opens on this S
    _check_view(grid["views"][(20, 8, "shc")], "shc", stored.matrix, 8)
    with pytest.raises(ValueError, match=r"needs classes=\[20\]"):
        explore.precompute_grid([10, 20], [8], similarity=(stored.matrix, stored.class_names))

    # page 00's grid (explore.page_grid): a testbed's page opens on its own C and S, whatever classes it is given
    cache = explore.CenterCache()
    own = explore.page_grid(stored, classes=[16, 32], bits=[8], seed=0, cache=cache)
    assert own["classes"] == [20] and own["source"] == "stage-1"
    np.testing.assert_array_equal(own["similarities"][20][0], stored.matrix)
    hierarchy = explore.page_grid(missing, classes=[16], bits=[8], seed=0, cache=cache)  # S not computed yet
    np.testing.assert_array_equal(hierarchy["similarities"][20][0], missing.matrix)
    demonstration = explore.page_grid(explore.page_similarity(None, num_classes=16), classes=[10, 16], bits=[8],
                                      seed=0, cache=cache)
    assert demonstration["classes"] == [10, 16] and demonstration["source"] == "label"
    np.testing.assert_array_equal(demonstration["similarities"][10][0], _tens_digit_S(10))


def test_a_grid_leaves_out_the_settings_where_no_c_codes_reach_the_gv_distance():
    """The GV argument guarantees d - 1 only: at C = 9, q = 6 the GV d is 3 and at most 8 codes keep it, so MDS
    searched, then failed the whole grid with a fix precompute_grid does not offer (an audit, 2026-12-02)."""
    grid = explore.precompute_grid([5, 9], [6, 12], methods=["random", "mds"], cache=explore.CenterCache())
    assert sorted({key[:2] for key in grid["views"]}) == [(5, 6), (5, 12), (9, 12)]
    assert grid["views"][(5, 6, "mds")].summary()["d_min"] >= 3  # the GV d where it is reachable


def test_a_fixed_class_source_of_another_size_than_asked_is_refused(monkeypatch):
    """A preset's stage-1 S has its own C: a grid asked for C = 16 stored the 100-class views under 16, and the
    offline page mixed the two (an audit, 2026-12-02)."""
    monkeypatch.setattr(explore, "similarity_for", lambda source, C, seed, **_: (_tens_digit_S(20),
                                                                                 [str(i) for i in range(20)]))
    with pytest.raises(ValueError, match=r"has 20 classes, not 16: give classes=\[20\]"):
        explore.precompute_grid([16], [16], methods=["random"], source="preset", cache=explore.CenterCache())


def test_the_live_explorer_offers_the_c_and_q_it_was_given_and_unticking_gv_starts_at_it():
    explorer = explore.Explorer(num_classes=40, bits=12, method="random", max_classes=30, background=False,
                                cache=explore.CenterCache())
    assert explorer.classes.value == 40 and explorer.view.num_classes == 40  # not clamped to 30
    assert 12 in explorer.bits.options and explorer.view.bits == 12  # not a TraitError
    gv = explore.gv_min_distance(40, 12)
    assert explorer.distance.value == gv > 0
    explorer.method.value = "mds"
    explorer.use_gv.value = False  # the slider starts at the GV d, so the view still asks for it (it said 0)
    assert explorer.settings()["min_distance"] == gv and explorer.view.required_distance == gv


def test_a_view_refuses_a_fractional_q_repeated_class_names_and_a_k_below_one():
    S = _tens_digit_S(10)
    with pytest.raises(TypeError, match="bits must be an integer"):
        explore.explorer_view("random", S, 16.7, cache=explore.CenterCache())  # was read as 16
    with pytest.raises(ValueError, match=r"class_names repeats \['a'\]"):
        explore.explorer_view("random", S, 16, ["a", "a", *map(str, range(8))], cache=explore.CenterCache())
    view = explore.explorer_view("random", S, 16, cache=explore.CenterCache())
    with pytest.raises(ValueError, match="k must be a positive integer"):
        explore.nearest_centers(view, "0", k=-1)  # gave C - 2 rows
