"""Tests of the papermill report runner (shc.reports).

One end-to-end run (module fixture, ~30-40 s on 2 cores) executes notebook 00 twice through
``python -m shc.reports`` semantics: ``--bits 12 16`` gives a failing parameter set first (CSQ's
Hadamard centers need q a power of two) and a working one after it. The run happens in a hostile
environment on purpose: a bogus "python3" kernelspec on JUPYTER_PATH, no PYTHONPATH and
MPLBACKEND=Agg; the runner must still use this interpreter, import this shc and embed PNG figures.
The other tests are fast unit tests of planning, summaries, the index and notebook hygiene.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import os
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import nbformat
import numpy as np
import pytest
from jupyter_client.kernelspec import KernelSpecManager

from shc import reports

FIGURES = ("gv_bound", "similarity", "distance_histograms", "center_embedding", "similarity_vs_gram", "shc_history")
TABLES = ("gv_bound", "hadamard_capacity", "center_quality", "shc_history")


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    bogus_kernels = root / "jupyter" / "kernels" / "python3"
    bogus_kernels.mkdir(parents=True)
    (bogus_kernels / "kernel.json").write_text(json.dumps(
        {"argv": ["/nonexistent/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
         "display_name": "broken", "language": "python"}
    ))  # fmt: skip
    console = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(console):
        patch.setenv("JUPYTER_PATH", str(root / "jupyter"))
        patch.setenv("MPLBACKEND", "Agg")
        patch.delenv("PYTHONPATH", raising=False)
        resolved_by_jupyter = KernelSpecManager().get_kernel_spec("python3").argv[0]
        status = reports.main([
            "--preset", "tiny", "--only", "00", "--bits", "12", "16",
            "--output", str(root / "reports"), "--runs", str(root / "runs"),
        ])  # fmt: skip
    preset_dir = root / "reports" / "tiny"
    return {
        "status": status,
        "resolved_by_jupyter": resolved_by_jupyter,
        "console": console.getvalue(),
        "root": root,
        "preset_dir": preset_dir,
        "failed": preset_dir / "00_center_geometry" / "bits-12",
        "ok": preset_dir / "00_center_geometry" / "bits-16",
    }


def test_failing_parameter_set_gives_nonzero_exit_but_the_next_one_runs(batch):
    assert batch["status"] != 0
    assert json.loads((batch["failed"] / "run.json").read_text())["status"] == "failed"
    assert json.loads((batch["ok"] / "run.json").read_text())["status"] == "ok"


def test_console_reports_progress_and_the_failure(batch):
    lines = batch["console"].splitlines()
    failed = r"^\[1/2\] 00_center_geometry/bits-12: FAILED after \d+\.\d s: ValueError in cell In \[\d+\]"
    assert any(re.search(failed, line) for line in lines), lines
    assert any(re.search(r"^\[2/2\] 00_center_geometry/bits-16: ok in \d+\.\d s", line) for line in lines), lines
    assert any(line.startswith("1/2 reports ok") for line in lines)
    assert any(line.startswith("FAILED 00_center_geometry/bits-12: ValueError") for line in lines)


def test_report_figures_and_tables_are_written(batch):
    for stem in FIGURES:
        for suffix in (".png", ".svg"):
            path = batch["ok"] / "figures" / f"{stem}{suffix}"
            assert path.is_file() and path.stat().st_size > 1000, path
    for stem in TABLES:
        assert (batch["ok"] / "tables" / f"{stem}.csv").stat().st_size > 0


def test_report_tables_hold_correct_numbers(batch):
    quality = np.genfromtxt(batch["ok"] / "tables" / "center_quality.csv", delimiter=",", names=True, dtype=None,
                            encoding="utf-8")  # fmt: skip
    # Tiny parameters: C = 20 classes, q = 16 bits. GV (Eq. 12): 2^16 / 20 = 3276.8; the cumulative sums of
    # C(16, i) are 1, 17, 137, 697, 2517, 6885, so the sum first reaches it with 6 terms: d = 6.
    assert set(quality["GV_distance_d"]) == {6}
    rows = {str(row["method"]): row for row in quality}
    assert set(rows) == {"random", "csq", "mds", "shc"}
    assert rows["mds"]["d_min"] >= 6 and rows["shc"]["d_min"] >= 6
    assert rows["csq"]["d_min"] == 8  # C = 20 <= 2q: Hadamard rows and negations, pairwise distance >= q/2
    summary = json.loads((batch["ok"] / reports.SUMMARY_FILE).read_text())
    assert summary["GV d"] == 6 and summary["C"] == 20 and summary["q"] == 16
    # unrounded, and named by its seed (page 00 draws one set a method; page 02's means are over seeds)
    assert math.isclose(summary["S_loss shc (seed 0)"], float(rows["shc"]["s_loss"]), rel_tol=1e-7)  # table: 8 digits
    assert summary["d_min csq (seed 0)"] == 8


def test_html_versions_show_each_saved_figure_from_its_file_and_the_reading_version_hides_code(batch):
    full = (batch["ok"] / "00_center_geometry.html").read_text(encoding="utf-8")
    reading = (batch["ok"] / "00_center_geometry-report.html").read_text(encoding="utf-8")
    executed = nbformat.read(batch["ok"] / "00_center_geometry.ipynb", as_version=4)
    shown = [base64.b64decode(output["data"]["image/png"]) for cell in executed.cells if cell.cell_type == "code"
             for output in cell.get("outputs", []) if "image/png" in output.get("data", {})]
    # MPLBACKEND=Agg in the runner did not stop inline figures; each saved one is displayed as its file, byte for byte
    files = {(batch["ok"] / "figures" / f"{name}.png").read_bytes(): name for name in FIGURES}
    assert set(files) <= set(shown)
    for page in (full, reading):
        sources = re.findall(r'<img\b[^>]*\bsrc="([^"]+)"', page)
        saved = sorted(f"figures/{path.name}" for path in (batch["ok"] / "figures").glob("*.png"))
        assert set(f"figures/{name}.png" for name in FIGURES) <= set(saved)
        assert sorted(s for s in sources if s.startswith("figures/")) == saved
        assert not any(base64.b64decode(s.split(",", 1)[1]) in files for s in sources if s.startswith("data:"))
        assert re.search(r'<link rel="stylesheet" href="(?:\.\./)+_assets/css/page-[0-9a-f]{16}\.css">', page)
        assert "<style" not in page.split("</head>")[0]  # nbconvert's 264 kB of CSS live once, in that file
    assert "generate_centers" in full and "generate_centers" not in reading  # only code cells call it
    assert 'class="highlight hl-ipython3"' in full and 'class="highlight hl-ipython3"' not in reading
    assert "Parameters: preset: tiny; seeds: 0; dataset: digits-composite; num_classes: 20; bits: 16" in reading  # no reprs
    assert 'href="../../index.html"' in reading and 'href="run.json"' in reading  # bits-16/ is one level deeper


def test_kernel_ignores_installed_kernelspecs(batch):
    # Jupyter itself resolved "python3" to the bogus kernelspec, which cannot start; the report ran
    # anyway, in a kernel of this interpreter that imported this checkout's shc without PYTHONPATH.
    assert batch["resolved_by_jupyter"] == "/nonexistent/python"
    executed = nbformat.read(batch["ok"] / "00_center_geometry.ipynb", as_version=4)
    version = executed.metadata["language_info"]["version"]
    assert version.startswith(f"{sys.version_info.major}.{sys.version_info.minor}")
    assert (batch["ok"] / reports.KERNEL_LOG_FILE).is_file()


def test_failure_record_names_cell_type_and_message_and_keeps_the_partial_notebook(batch):
    record = json.loads((batch["failed"] / "run.json").read_text())
    error = record["error"]
    assert error["type"] == "ValueError"
    assert "power of two" in error["message"]
    assert isinstance(error["execution_count"], int) and isinstance(error["cell_index"], int)
    partial = nbformat.read(batch["failed"] / record["local_files"]["notebook"], as_version=4)
    failing_cell = partial.cells[error["cell_index"] + 2]  # papermill inserts 2 error-marker cells before it
    assert failing_cell.execution_count == error["execution_count"]
    assert any(output.output_type == "error" for output in failing_cell.outputs)
    earlier_images = [o for cell in partial.cells[: error["cell_index"]] if cell.cell_type == "code"
                      for o in cell.outputs if "image/png" in o.get("data", {})]  # fmt: skip
    assert earlier_images  # the cells before the failure ran and kept their figures
    assert (batch["failed"] / record["files"]["report"]).is_file()  # the partial run is rendered too
    assert not (batch["failed"] / reports.SUMMARY_FILE).exists()


def test_index_lists_both_runs_with_status_summary_and_working_links(batch):
    index = batch["preset_dir"] / "index.html"
    page = index.read_text(encoding="utf-8")
    assert "2 reports, 1 failed" in page
    assert page.count('<span class="failed">failed</span>') == 1 and page.count('<span class="ok">ok</span>') == 1
    assert "ValueError in cell In [" in page and "power of two" in page
    assert "GV d 6" in page  # the published summary of the working run
    links = re.findall(r'href="([^"]+)"', page)
    assert "00_center_geometry/bits-12/00_center_geometry.ipynb" in links  # link to the partial notebook
    for link in links:
        assert (index.parent / link).is_file(), link


def test_writes_are_atomic_no_temporary_files_left(batch):
    leftovers = [p for p in batch["root"].rglob("*")
                 if (p.name.startswith(".") and not p.name.endswith(".lock")) or ".tmp" in p.name]  # locks stay
    assert leftovers == []


def test_skip_existing_reruns_a_report_whose_runs_now_hold_other_numbers(batch, tmp_path):
    """--skip-existing used to call a report up to date after the runs it shows were recomputed with other
    numbers: run.json now records a digest of what the notebook read (the batch's report records it), and a
    report is up to date only while the runs' files still give that digest."""
    from shc.presets import notebook_configs
    from shc.stages import stage_directories

    record = reports.execute.read_record(batch["ok"] / "run.json")
    job_00 = reports.ReportJob("00_center_geometry", "tiny", record["parameters"], "bits-16")
    assert record["inputs"] == reports.execute.inputs_digest(job_00, batch["root"] / "runs")

    parameters = reports.notebook_table()["02_hash_centers"]["tiny"][0]
    job = reports.ReportJob("02_hash_centers", "tiny", parameters, "")
    run_root, output_dir = tmp_path / "runs", tmp_path / "report"
    configs = notebook_configs(parameters, str(run_root / "tiny"), job.notebook)["centers"]
    assert configs
    for k, config in enumerate(configs):  # the center sets the notebook reads, as computed before
        centers = stage_directories(config)["stage2"] / "centers.npy"
        centers.parent.mkdir(parents=True)
        np.save(centers, np.full((4, 16), k, np.int8))
    files, notebook = reports.execute._report_files(job), reports.default_notebooks_dir() / "02_hash_centers.ipynb"
    output_dir.mkdir()
    future = datetime.fromtimestamp(time.time() + 3600, timezone.utc).isoformat()  # started after every source
    (output_dir / "run.json").write_text(json.dumps({"status": "ok", "parameters": parameters, "finished": future,
                                                     "seconds": 10, "inputs": reports.execute.inputs_digest(job, run_root)}))
    (output_dir / files["report"]).write_text("<html></html>")

    def up_to_date() -> bool:
        return reports.execute._is_up_to_date(output_dir, files, notebook, parameters,
                                              reports.execute.inputs_digest(job, run_root))

    assert up_to_date()
    recomputed = stage_directories(configs[-1])["stage2"] / "centers.npy"
    np.save(recomputed, -np.load(recomputed))  # recomputed with other numbers: same identity, same folder
    assert not up_to_date()


def test_the_digest_of_a_page_of_s_holds_its_classifier_and_its_text_and_hierarchy_s(tmp_path):
    """Page 01 shows the classifier's accuracy (stage 1's metrics.json) and compares the text and hierarchy S with
    the data-dependent one; the digest held only similarity.npy, so a page built over another classifier's record or
    another text S was called up to date."""
    from shc.presets import notebook_configs
    from shc.stages import stage_directories

    parameters = reports.notebook_table()["01_similarity"]["tiny"][0]
    job = reports.ReportJob("01_similarity", "tiny", parameters, "")
    run_root = tmp_path / "runs"
    configs = notebook_configs(parameters, str(run_root / "tiny"), job.notebook)["similarity"]
    assert configs
    for config in configs:
        stage1 = stage_directories(config)["stage1"]
        stage1.mkdir(parents=True)
        np.save(stage1 / "similarity.npy", np.eye(3))
        (stage1 / "metrics.json").write_text(json.dumps({"test_accuracy": 0.5}))

    def digest() -> str:
        return reports.execute.inputs_digest(job, run_root)

    first = digest()
    assert first is not None
    metrics = stage_directories(configs[0])["stage1"] / "metrics.json"
    metrics.write_text(json.dumps({"test_accuracy": 0.9}))  # another classifier's record, same S
    second = digest()
    assert second != first
    text = stage_directories(configs[0].replace(similarity="text"))["stage1"] / "similarity.npy"
    assert text.parent != stage_directories(configs[0])["stage1"]
    text.parent.mkdir(parents=True)
    np.save(text, np.eye(3))  # the text S the page computes: its appearance changes the digest ...
    third = digest()
    assert third not in (first, second)
    np.save(text, -np.eye(3))  # ... and so does another text S
    assert digest() != third


def test_skip_existing_skips_an_up_to_date_report(batch):
    tiny = reports.notebook_table()["00_center_geometry"]["tiny"][0]
    job = reports.ReportJob("00_center_geometry", "tiny", {**tiny, "bits": 16}, "bits-16")
    record = json.loads((batch["ok"] / "run.json").read_text())  # started after any source, even if edited meanwhile
    record["finished"] = datetime.fromtimestamp(time.time() + 3600, timezone.utc).isoformat()
    (batch["ok"] / "run.json").write_text(json.dumps(record))
    result = reports.execute_report(job, output_root=batch["root"] / "reports", run_root=batch["root"] / "runs",
                                    skip_existing=True)  # fmt: skip
    assert result.status == "skipped" and result.ok
    assert result.summary["GV d"] == 6
    changed = reports.ReportJob(job.notebook, job.preset, {**job.parameters, "seed": 1}, job.variant)
    assert not reports.execute._is_up_to_date(result.output_dir, reports.execute._report_files(changed),
                                      reports.default_notebooks_dir() / "00_center_geometry.ipynb",
                                      {**changed.parameters, "output_dir": str(result.output_dir),
                                       "run_dir": str((batch["root"] / "runs" / "tiny").resolve())})  # fmt: skip


def _figure_notebook(folder: Path, stem: str) -> Path:
    """A notebook ``stem`` that only writes ``figures/gv_bound.png`` ("new") into its ``output_dir``: what a test of
    the runner's folders needs of a page, in seconds instead of the real page's minute."""
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_code_cell('output_dir = "."', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("from pathlib import Path\nfigures = Path(output_dir) / 'figures'\n"
                                  "figures.mkdir(parents=True, exist_ok=True)\n"
                                  "(figures / 'gv_bound.png').write_bytes(b'new')"),
    ]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / f"{stem}.ipynb")
    return folder


def test_a_variant_build_removes_the_page_an_earlier_layout_left_in_its_notebook_folder(tmp_path):
    """Issue 38: a set built once with one page 00 (``00_center_geometry/run.json``, its HTML, figures) and again with
    ``--bits`` variants must not keep the old page among the new ones; another variant's page stays."""
    tiny = reports.notebook_table()["00_center_geometry"]["tiny"][0]
    notebooks = _figure_notebook(tmp_path / "notebooks", "00_center_geometry")
    notebook_dir = tmp_path / "tiny" / "00_center_geometry"
    (notebook_dir / "figures").mkdir(parents=True)
    (notebook_dir / "figures" / "gv_bound.png").write_bytes(b"old")
    (notebook_dir / "00_center_geometry-report.html").write_text("<html>an older layout</html>")
    (notebook_dir / "run.json").write_text(json.dumps({"status": "ok"}))
    (notebook_dir / "bits-12").mkdir()
    (notebook_dir / "bits-12" / "run.json").write_text(json.dumps({"status": "ok"}))
    job = reports.ReportJob("00_center_geometry", "tiny", {**tiny, "bits": 16}, "bits-16")
    result = reports.execute_report(job, notebooks_dir=notebooks, output_root=tmp_path, run_root=tmp_path / "runs")
    assert result.ok, result.error
    assert sorted(e.name for e in notebook_dir.iterdir() if not e.name.startswith(".")) == ["bits-12", "bits-16"]
    assert (notebook_dir / "bits-16" / "figures" / "gv_bound.png").read_bytes() == b"new"


def _failing_notebook(folder: Path, stem: str) -> Path:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell('output_dir = "."', metadata={"tags": ["parameters"]}),
                      nbformat.v4.new_code_cell("raise ValueError('boom')")]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, folder / f"{stem}.ipynb")
    return folder


def test_a_failed_variant_build_keeps_the_last_good_page_and_an_old_failure_is_not_kept_beside_a_new_one(tmp_path):
    """A failed first build of a variant removed the good page of the earlier layout (an audit, 2026-12-02); a second
    failure that wrote no notebook left the first failure's files linked as its own."""
    tiny = reports.notebook_table()["00_center_geometry"]["tiny"][0]
    notebooks = _failing_notebook(tmp_path / "notebooks", "00_center_geometry")
    notebook_dir = tmp_path / "tiny" / "00_center_geometry"
    notebook_dir.mkdir(parents=True)
    (notebook_dir / "00_center_geometry-report.html").write_text("<html>the good page</html>")
    (notebook_dir / "run.json").write_text(json.dumps({"status": "ok"}))
    job = reports.ReportJob("00_center_geometry", "tiny", {**tiny, "bits": 16}, "bits-16")
    result = reports.execute_report(job, notebooks_dir=notebooks, output_root=tmp_path, run_root=tmp_path / "runs")
    assert result.status == "failed"
    assert (notebook_dir / "00_center_geometry-report.html").read_text() == "<html>the good page</html>"
    page = notebook_dir / "page"  # a good page with a failure kept beside it, then a failure writing nothing
    page.mkdir()
    (page / "run.json").write_text(json.dumps({"status": "ok"}))
    (page / "00_x.failed.html").write_text("failure 1")
    from shc.reports.execute import _keep_failure

    (page / "figures").mkdir()
    (page / "figures" / "f.png").write_bytes(b"the good page's figure")
    (page / ".failed").mkdir()
    (page / ".failed" / "00_x.html").write_text("failure 2")
    building = tmp_path / "building"
    (building / "figures").mkdir(parents=True)
    (building / "figures" / "f.png").write_bytes(b"the failed build's figure")
    (building / "00_x.html").write_text('<img src="figures/f.png">')
    (building / "run.json").write_text(json.dumps({"status": "failed"}))
    kept = _keep_failure(building, page, {"notebook": "00_x.ipynb", "html": "00_x.html"}, {"status": "failed"})
    assert not (page / "00_x.failed.html").exists()  # the earlier layout's failure is not this one's
    assert kept == page / ".failed" / "00_x.html" and kept.read_text() == '<img src="figures/f.png">'
    # the failed page's figure link reaches the failed build's figure; the good page's stays the good page's
    assert (kept.parent / "figures" / "f.png").read_bytes() == b"the failed build's figure"
    assert (page / "figures" / "f.png").read_bytes() == b"the good page's figure"
    assert not (kept.parent / "run.json").exists() and json.loads((page / "run.json").read_text())["status"] == "ok"


def test_skip_existing_reads_the_build_time_from_the_record_and_rebuilds_after_a_kept_failure(tmp_path):
    """A page rewritten after its build (refresh, corrections) looked newer than the code by its file time, and a
    failure kept beside it still let it count as up to date (an audit, 2026-12-02)."""
    from shc.reports.execute import FAILURE_FILE, _is_up_to_date

    notebook = tmp_path / "00_x.ipynb"
    notebook.write_text("{}")
    output = tmp_path / "00_x"
    output.mkdir()
    files = {"report": "00_x-report.html"}
    (output / files["report"]).write_text("<html></html>")  # its file time: now, after every source

    def record(finished: float) -> None:
        (output / "run.json").write_text(json.dumps({"status": "ok", "parameters": {"output_dir": "."},
                                                     "finished": datetime.fromtimestamp(finished, timezone.utc)
                                                     .isoformat(), "seconds": 5}))

    record(time.time() - 10 ** 7)  # built long before the package's files last changed, rewritten just now
    assert not _is_up_to_date(output, files, notebook, {"output_dir": str(output)})
    record(time.time() + 3600)
    assert _is_up_to_date(output, files, notebook, {"output_dir": str(output)})
    (output / FAILURE_FILE).write_text("{}")
    assert not _is_up_to_date(output, files, notebook, {"output_dir": str(output)})


def test_an_interrupted_swap_puts_the_old_report_back(tmp_path, monkeypatch):
    from shc.reports import execute

    output, building = tmp_path / "04_x", tmp_path / ".04_x.building-1"
    output.mkdir()
    (output / "page.html").write_text("old")
    building.mkdir()
    real = os.replace
    calls = []

    def replace(source, target):
        calls.append(source)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(source, target)

    monkeypatch.setattr(execute.os, "replace", replace)
    with pytest.raises(KeyboardInterrupt):
        execute._swap(building, output)
    monkeypatch.setattr(execute.os, "replace", real)
    assert (output / "page.html").read_text() == "old"


def test_the_index_lists_no_hidden_folder_and_keeps_the_pages_notes(tmp_path):
    from shc.reports.index import write_index

    folder = tmp_path / "tiny"
    for name in ("04_x", ".04_x.old-42", ".05_y.building-7"):
        (folder / name).mkdir(parents=True)
        (folder / name / "run.json").write_text(json.dumps({"notebook": name, "status": "ok", "title": name}))
    (folder / "04_x" / "04_x-report.html").write_text(
        '<html><p class="muted" data-corrected="2026-12-02 by shc at abc1234">Corrected.</p></html>')
    text = write_index(folder).read_text()
    assert "1 reports, 0 failed" in text and ".04_x.old" not in text and ".05_y" not in text
    assert "Sentences of 1 page(s) (04_x)" in text  # every batch rewrote the index without it


# --------------------------------------------------------------------------------------
# Fast unit tests
# --------------------------------------------------------------------------------------

DECLARED = {"bits": {"default": "32"}, "methods": {"default": '["shc", "csq"]'}, "seed": {"default": "0"}}


def test_scalar_override_multiplies_sets_and_list_override_replaces():
    sets = [{"bits": 32, "seed": 0}]
    result = reports.apply_overrides(sets, {"bits": [16, 64], "methods": ["mds"], "seeds": [3]}, DECLARED)
    assert result == [{"bits": 16, "seed": 3, "methods": ["mds"]}, {"bits": 64, "seed": 3, "methods": ["mds"]}]
    assert sets == [{"bits": 32, "seed": 0}]  # the preset table is not modified


def test_overrides_not_declared_are_ignored_and_duplicates_merged():
    sets = [{"bits": 16}, {"bits": 32}]
    assert reports.apply_overrides(sets, {"epochs": [3], "dataset": ["cifar100"]}, DECLARED) == sets
    assert reports.apply_overrides(sets, {"bits": [64]}, DECLARED) == [{"bits": 64}]
    with pytest.raises(ValueError, match="unknown override 'lr'"):
        reports.apply_overrides(sets, {"lr": [0.1]}, DECLARED)


def test_variant_names_use_the_differing_parameters():
    assert reports.variant_names([{"bits": 16}]) == [""]
    names = reports.variant_names([{"bits": 16, "seed": 0, "methods": ["a", "b"]},
                                   {"bits": 32, "seed": 0, "methods": ["c"]}])  # fmt: skip
    assert names == ["bits-16_methods-a-b", "bits-32_methods-c"]
    with pytest.raises(ValueError, match="identical parameter sets"):
        reports.variant_names([{"bits": 16}, {"bits": 16}])


def test_plan_jobs_selects_notebooks_and_rejects_bad_requests(tmp_path):
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    for stem in ("01_a", "02_b"):
        _write_notebook(notebooks / f"{stem}.ipynb", "x = 1\noutput_dir = ''\nrun_dir = ''")
    table = {"01_a": {"tiny": [{"x": 1}], "quick": [{"x": 2}]}, "02_b": {"quick": [{"x": 1}, {"x": 3}]}}
    jobs = reports.plan_jobs("quick", notebooks_dir=notebooks, table=table)
    assert [(job.name, job.parameters) for job in jobs] == [
        ("01_a", {"x": 2}), ("02_b/x-1", {"x": 1}), ("02_b/x-3", {"x": 3})]  # fmt: skip
    assert jobs[1].output_dir(tmp_path / "r") == tmp_path / "r" / "quick" / "02_b" / "x-1"
    assert [job.name for job in reports.plan_jobs("tiny", notebooks_dir=notebooks, table=table)] == ["01_a"]
    assert [job.name for job in reports.plan_jobs("quick", only=["02"], notebooks_dir=notebooks, table=table)] == [
        "02_b/x-1", "02_b/x-3"]  # fmt: skip
    with_epochs = reports.plan_jobs("quick", overrides={"epochs": [2]}, notebooks_dir=notebooks, table=table)
    assert with_epochs[0].ignored_overrides == ("epochs",)
    with pytest.raises(ValueError, match="unknown preset 'fast'"):
        reports.plan_jobs("fast", notebooks_dir=notebooks, table=table)
    with pytest.raises(ValueError, match="'0' is ambiguous"):
        reports.plan_jobs("quick", only=["0"], notebooks_dir=notebooks, table=table)
    with pytest.raises(ValueError, match="'9' matches none"):
        reports.plan_jobs("quick", only=["9"], notebooks_dir=notebooks, table=table)
    with pytest.raises(FileNotFoundError, match="03_c.ipynb"):
        reports.plan_jobs("quick", notebooks_dir=notebooks, table={**table, "03_c": {"quick": [{}]}})


def test_publish_summary_round_trips_and_validates(tmp_path):
    path = reports.publish_summary(tmp_path, {"mAP@ALL shc": np.float32(0.8125), "d_min": np.int64(4), "note": "ok",
                                              "broken": float("nan")})  # fmt: skip
    assert path == tmp_path / reports.SUMMARY_FILE
    summary = reports.read_summary(tmp_path)
    assert summary == {"mAP@ALL shc": 0.8125, "d_min": 4, "note": "ok", "broken": "nan"}
    assert list(summary) == ["mAP@ALL shc", "d_min", "note", "broken"]
    assert reports.format_summary({"mAP": 0.812345, "d": 4}) == "mAP 0.8123 · d 4"
    assert reports.read_summary(tmp_path / "nowhere") is None
    with pytest.raises(ValueError, match="non-empty mapping"):
        reports.publish_summary(tmp_path, {})
    with pytest.raises(TypeError, match=r"summary\['curve'\]"):
        reports.publish_summary(tmp_path, {"curve": [0.1, 0.2]})


def test_index_escapes_error_messages(tmp_path):
    folder = tmp_path / "nb"
    folder.mkdir()
    record = {"notebook": "nb", "title": "A <b>title</b>", "status": "failed", "seconds": 1.0, "parameters": {"x": 1},
              "error": {"type": "ValueError", "message": "<script>alert(1)</script>", "execution_count": 3,
                        "cell_index": 4, "cell_source": "f(x)"}, "files": {}}  # fmt: skip
    (folder / reports.RECORD_FILE).write_text(json.dumps(record))
    page = reports.write_index(tmp_path).read_text()
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "A &lt;b&gt;title&lt;/b&gt;" in page and "ValueError in cell In [3]: &lt;script&gt;" in page


def test_index_links_only_the_files_that_are_there(tmp_path):
    # a published copy (reports/quick in the repository) keeps the reading HTML but not the notebook
    folder = tmp_path / "nb"
    folder.mkdir()
    (folder / "nb-report.html").write_text("<html></html>")
    record = {"notebook": "nb", "title": r"similarity $\mathbf{S}$ at $q$ bits", "status": "ok", "seconds": 1.0,
              "parameters": {}, "files": {"report": "nb-report.html", "html": "nb.html", "notebook": "nb.ipynb"}}
    (folder / reports.RECORD_FILE).write_text(json.dumps(record))
    page = reports.write_index(tmp_path).read_text()
    assert ">similarity S at q bits</a>" in page  # TeX markup stripped from the title
    assert 'href="nb/nb-report.html"' in page
    assert "nb.ipynb" not in page and 'href="nb/nb.html"' not in page


def test_index_names_each_data_file_by_its_path_so_a_table_and_a_figure_of_one_name_differ(tmp_path):
    folder = tmp_path / "nb"
    for sub in ("tables", "figures"):
        (folder / sub).mkdir(parents=True)
        (folder / sub / "gv_bound.csv").write_text(f"q,{sub}\n16,1\n")
    record = {"notebook": "nb", "title": "nb", "status": "ok", "seconds": 1.0, "parameters": {},
              "files": {"tables": ["tables/gv_bound.csv"], "figure_data": ["figures/gv_bound.csv"]}}
    (folder / reports.RECORD_FILE).write_text(json.dumps(record))
    page = reports.write_index(tmp_path).read_text()
    assert '<a href="nb/tables/gv_bound.csv">tables/gv_bound.csv</a>' in page
    assert '<a href="nb/figures/gv_bound.csv">figures/gv_bound.csv</a>' in page


def test_kernel_spec_is_this_interpreter_with_this_package_on_the_path():
    spec = reports.current_interpreter_kernel_spec()
    assert spec.argv[0] == sys.executable
    assert spec.env["PYTHONPATH"].split(os.pathsep)[0] == str(Path(reports.__file__).resolve().parents[2])
    assert "inline" in spec.env["MPLBACKEND"]


def _write_notebook(path: Path, parameters: str, tagged: bool = True, outputs: bool = False) -> None:
    cell = nbformat.v4.new_code_cell(parameters, metadata={"tags": ["parameters"]} if tagged else {})
    body = nbformat.v4.new_code_cell("print(x)")
    if outputs:
        body.execution_count = 7
        body.outputs = [nbformat.v4.new_output("stream", name="stdout", text="1\n")]
        cell.execution_count = 6
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title"), cell, body])
    if outputs:
        notebook.metadata["papermill"] = {"parameters": {"x": 1}}
    nbformat.write(notebook, str(path))


def test_strip_notebook_clears_outputs_counts_and_run_metadata(tmp_path):
    path = tmp_path / "dirty.ipynb"
    _write_notebook(path, "x = 1\noutput_dir = ''\nrun_dir = ''", outputs=True)
    assert reports.check_notebook(path) == [
        "cells [2] have outputs (run python -m shc.reports --strip-notebooks)",
        "cells [1, 2] have execution counts (run python -m shc.reports --strip-notebooks)",
    ]
    assert reports.strip_notebook(path) is True
    clean = nbformat.read(str(path), as_version=4)
    assert all(cell.get("outputs", []) == [] and cell.get("execution_count") is None for cell in clean.cells)
    assert "papermill" not in clean.metadata and clean.cells[1].metadata["tags"] == ["parameters"]
    assert reports.check_notebook(path) == []
    assert reports.strip_notebook(path) is False  # already clean: file untouched


def test_check_notebook_finds_untagged_unparseable_and_incomplete_parameters(tmp_path):
    untagged = tmp_path / "untagged.ipynb"
    _write_notebook(untagged, "x = 1", tagged=False)
    assert reports.check_notebook(untagged) == ["the first code cell must be tagged 'parameters'"]
    unparseable = tmp_path / "unparseable.ipynb"
    _write_notebook(unparseable, "x = 1  # C = number of classes\noutput_dir = ''")
    assert reports.check_notebook(unparseable) == [
        "papermill cannot parse the parameters ['x'] (keep '=' out of their comments)",
        "the parameters cell must declare ['run_dir']",
    ]


def test_main_strip_and_check_notebooks(tmp_path, capsys):
    _write_notebook(tmp_path / "a.ipynb", "x = 1\noutput_dir = ''\nrun_dir = ''", outputs=True)
    assert reports.main(["--check-notebooks", "--notebooks", str(tmp_path)]) == 1
    assert reports.main(["--strip-notebooks", "--notebooks", str(tmp_path)]) == 0
    assert reports.main(["--check-notebooks", "--notebooks", str(tmp_path)]) == 0
    assert "a.ipynb: stripped" in capsys.readouterr().out


def test_reading_page_leaves_out_stderr_and_is_titled_and_offline(tmp_path):
    from shc.offline import external_references

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("# 07 · Centers of $\\mathbf{S}$\n\n$$x^2$$"),
                      nbformat.v4.new_code_cell("print(1)")]
    notebook.cells[1].outputs = [nbformat.v4.new_output("stream", name="stderr", text="a warning\n"),
                                 nbformat.v4.new_output("stream", name="stdout", text="the result\n")]
    path = tmp_path / "n.ipynb"
    nbformat.write(notebook, path)
    full = reports.render_html(path, tmp_path / "full.html", include_input=True).read_text()
    reading = reports.render_html(path, tmp_path / "reading.html", include_input=False).read_text()
    stderr = 'data-mime-type="application/vnd.jupyter.stderr"'
    assert stderr in full and stderr not in reading and "the result" in reading
    assert "<title>07 · Centers of S</title>" in reading
    assert external_references(reading) == [] and (tmp_path / "_assets" / "mathjax").is_dir()


# --------------------------------------------------------------------------------------
# The report checker (shc.reports.check): a clean page passes, each seeded defect fails
# --------------------------------------------------------------------------------------
_PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _page(body: str) -> str:
    return f"<!DOCTYPE html><html><head><title>t</title><style>a {{ color: red }}</style></head><body>{body}</body></html>"


def _cell(markdown: str = "", output: str = "") -> str:
    kind = "jp-MarkdownCell" if markdown else "jp-CodeCell"
    inner = markdown or f'<div class="jp-OutputArea"><div class="jp-OutputArea-output">{output}</div></div>'
    return f'<div class="jp-Cell {kind}">{inner}</div>'


_CLEAN_TABLE = ("<table><thead><tr><th></th><th>mAP</th></tr><tr><th>method</th><th></th></tr></thead>"
                "<tbody><tr><th>shc</th><td>0.512</td></tr><tr><th>csq</th><td>0.498</td></tr></tbody></table>")
_CLEAN_BODY = (_cell("<h1>Title</h1><p>Intro.</p>") + _cell(output="<pre>42 runs on fashion-composite</pre>")
               + _cell("<h2>1. Results</h2><p>The table.</p>") + _cell(output=_CLEAN_TABLE)
               + _cell("<h2>2. A figure</h2>") + _cell(output=f'<img src="{_PNG}" alt="Precision-recall curves, 16 bits">')
               + _cell(output='<p>Data: <a href="figures/pr.csv">pr.csv</a>, <a href="#1.-Results">above</a>, '
                              '<a href="https://example.org/paper">the paper</a>.</p>'))

SEEDED_DEFECTS = {  # kind -> a page body that has exactly that defect
    "repr": _CLEAN_BODY + _cell("<h2>3. d</h2>") + _cell(output="<pre>Gilbert-Varshamov d: {'16 bits': 4}</pre>"),
    "repr-bool": _CLEAN_BODY + _cell("<h2>3. d</h2>") + _cell(output="<pre>d_min >= d at every record: True</pre>"),
    "nan": _CLEAN_BODY.replace("<td>0.498</td>", "<td>NaN</td>"),
    "bare-index": _CLEAN_BODY.replace("<th>shc</th>", "<th>0</th>").replace("<th>csq</th>", "<th>1</th>")
                             .replace("<th>method</th>", "<th></th>"),
    "truncated": _CLEAN_BODY.replace("<td>0.512</td>", "<td>Li, Wang &amp; Kang, Feature Learning based Deep S...</td>"),
    "absolute-path": _CLEAN_BODY + _cell("<h2>3. Where</h2>") + _cell(output="<pre>written to /home/alice/shc/runs</pre>"),
    "dead-link": _CLEAN_BODY.replace("figures/pr.csv", "figures/missing.csv"),
    "dead-link-unpublished": _CLEAN_BODY.replace("figures/pr.csv", "02_hash_centers.ipynb"),
    "dead-link-missing-shared-asset": _CLEAN_BODY + '<script src="../../_assets/mathjax/tex-svg-full.js"></script>',
    "dead-link-missing-outside-the-reports": _CLEAN_BODY.replace("figures/pr.csv", "../../../README.md"),
    "alt-text": _CLEAN_BODY.replace("Precision-recall curves, 16 bits", "No description has been provided for this image"),
    "alt-text-missing": _CLEAN_BODY.replace(' alt="Precision-recall curves, 16 bits"', ""),
    "empty-section": _CLEAN_BODY.replace(_cell(output=_CLEAN_TABLE), ""),
    "empty-section-end": _CLEAN_BODY + _cell("<h2>Summary</h2>"),
    "signed-zero": _CLEAN_BODY + _cell("<h2>3. Diff</h2>") + _cell(output="<p>shc − mds: -0.000 [-0.000, -0.000]</p>"),
}


def _seeded_folder(root: Path, body: str) -> Path:
    folder = root / "tiny"
    (folder / "00_x" / "figures").mkdir(parents=True)
    (folder / "00_x" / "figures" / "pr.csv").write_text("k,precision\n1,0.5\n")
    (folder / "00_x" / "tables").mkdir()
    (folder / "00_x" / "tables" / "map.csv").write_text("method,mAP\nshc,0.512\ncsq,0.498\n")  # the table shown
    (folder / "00_x" / "02_hash_centers.ipynb").write_text("{}")  # on disk, but .gitignore keeps it out
    (root / "_assets" / "css").mkdir(parents=True, exist_ok=True)  # the stylesheet every preset shares
    (root / "_assets" / "css" / "page-0.css").write_text("a { color: red }\n")
    shared = '<link rel="stylesheet" href="../../_assets/css/page-0.css">'
    (folder / "00_x" / "00_x-report.html").write_text(_page(body).replace("<title>", shared + "<title>"))
    return folder


def test_checker_passes_a_clean_page(tmp_path):
    from shc.reports.check import check_report_folder

    assert check_report_folder(_seeded_folder(tmp_path, _CLEAN_BODY)) == []


@pytest.mark.parametrize("name", sorted(SEEDED_DEFECTS))
def test_checker_fails_a_page_seeded_with_each_defect_class(tmp_path, name):
    from shc.reports.check import check_report_folder

    problems = check_report_folder(_seeded_folder(tmp_path, SEEDED_DEFECTS[name]))
    kind = name.split("-bool")[0].split("-unpublished")[0].split("-missing")[0].removesuffix("-end")
    # a defect written into the table's cells also makes it differ from the file the page saved
    also = {"table-mismatch"} if name in ("nan", "bare-index", "truncated") else set()
    assert {problem.kind for problem in problems} == {kind, *also}, problems


def test_checker_names_a_figures_data_stored_twice_in_one_page_and_nothing_else(tmp_path):
    """Issue 38 (figure data without duplicates): a figure's CSV with the bytes of a table of the same page is named
    (the figure's copy, the table is kept); the same bytes on two pages, in two tables (mAP@1000 is mAP@ALL on a
    small database) or different bytes are not problems."""
    from shc.reports.check import check_report_folder

    folder = _seeded_folder(tmp_path, _CLEAN_BODY)
    (folder / "00_x" / "tables" / "pr.csv").write_text("k,precision\n1,0.5\n")  # the figure's bytes
    (folder / "00_x" / "tables" / "other.csv").write_text("k,precision\n1,0.25\n")
    (folder / "00_x" / "tables" / "same.csv").write_text("k,precision\n1,0.25\n")  # two tables may coincide
    (folder / "01_y" / "tables").mkdir(parents=True)  # another page may hold the same table
    (folder / "01_y" / "tables" / "pr.csv").write_text("k,precision\n1,0.5\n")
    problems = check_report_folder(folder)
    assert [(problem.file, problem.kind) for problem in problems] == [("00_x/figures/pr.csv", "duplicate-data")]
    assert "00_x/tables/pr.csv" in problems[0].detail and "data_file" in problems[0].detail
    (folder / "00_x" / "tables" / "pr.csv").write_text("k,precision\n1,0.75\n")  # other numbers: clean
    assert check_report_folder(folder) == []


def test_checker_takes_each_variant_of_a_notebook_as_its_own_page(tmp_path):
    """A ``--bits 16 32`` build writes page 00 once per length (``00_x/bits-16/``, ``00_x/bits-32/``): a figure that
    does not depend on q (the GV bound, S) has the same bytes on both, which is not a duplicate within a page; within
    one variant a figure's copy of its table still is."""
    from shc.reports.check import check_report_folder

    folder = _seeded_folder(tmp_path, _CLEAN_BODY)
    for variant in ("bits-16", "bits-32"):
        (folder / "00_x" / variant / "figures").mkdir(parents=True)
        (folder / "00_x" / variant / "figures" / "gv.csv").write_text("q,d\n16,3\n")
        (folder / "00_x" / variant / "tables").mkdir()
        (folder / "00_x" / variant / "tables" / "gv.csv").write_text(f"q,d,{variant}\n16,3,1\n")
    assert check_report_folder(folder) == []
    (folder / "00_x" / "bits-32" / "tables" / "gv.csv").write_text("q,d\n16,3\n")  # the figure's bytes
    assert [(p.file, p.kind) for p in check_report_folder(folder)] == [("00_x/bits-32/figures/gv.csv",
                                                                        "duplicate-data")]


def test_checker_reads_every_published_file_and_the_run_records(tmp_path):
    from shc.reports.check import check_report_folder

    folder = _seeded_folder(tmp_path, _CLEAN_BODY)
    (folder / "00_x" / "tables" / "runs.csv").write_text("run_dir\n/work/main/runs/standard/x\n")
    (folder / "00_x" / "run.json").write_text(json.dumps({"files": {"report": "00_x-report.html",
                                                                    "notebook": "00_x.ipynb", "log": "kernel.log"}}))
    (folder / "00_x" / "figures" / "pr.svg").write_text("<svg>/home/bob/secret</svg>")  # not published: not read
    problems = check_report_folder(folder)
    assert sorted((p.file, p.kind) for p in problems) == [
        ("00_x/run.json", "dead-link"), ("00_x/run.json", "dead-link"), ("00_x/tables/runs.csv", "absolute-path")]


def test_checker_fails_a_folder_over_the_published_budget_counting_only_published_files(tmp_path, monkeypatch):
    from shc.reports import check

    folder = _seeded_folder(tmp_path, _CLEAN_BODY)
    size = sum(path.stat().st_size for path in check.published_files(folder))
    monkeypatch.setattr(check, "PUBLISHED_BUDGET_BYTES", size + 100)
    (folder / "00_x" / "big.ipynb").write_bytes(b"x" * 1000)  # unpublished: does not count
    assert check.check_report_folder(folder) == []
    (folder / "00_x" / "figures" / "big.png").write_bytes(b"x" * 1000)
    problems = check.check_report_folder(folder)
    assert [problem.kind for problem in problems] == ["too-large"]
    assert "00_x/figures/big.png 0.00 MB" in problems[0].detail


def test_a_folder_built_before_the_assets_were_shared_keeps_the_old_budget_until_regenerated(tmp_path):
    from shc.reports import check

    folder = _seeded_folder(tmp_path, _CLEAN_BODY)
    (folder / "00_x" / "figures" / "big.png").write_bytes(b"x" * (check.PUBLISHED_BUDGET_BYTES + 1))
    problems = check.check_report_folder(folder)
    assert [problem.kind for problem in problems] == ["too-large"] and "4 MB" in problems[0].detail
    (folder / "_assets" / "mathjax").mkdir(parents=True)  # the old layout: its own copy of MathJax
    assert check.check_report_folder(folder) == []
    (folder / "00_x" / "figures" / "big.png").write_bytes(b"x" * (check.LEGACY_BUDGET_BYTES + 1))
    problems = check.check_report_folder(folder)
    assert [problem.kind for problem in problems] == ["too-large"] and "regenerate it" in problems[0].detail


def test_published_files_agree_with_the_repository_gitignore(tmp_path):
    import shutil
    import subprocess

    from shc.reports.check import is_published

    repository = Path(reports.__file__).resolve().parents[2]
    if shutil.which("git") is None or not (repository / ".git").exists():
        pytest.skip("needs the git checkout")
    names = ["index.html", "00_a/00_a-report.html", "00_a/00_a.html", "00_a/00_a.ipynb", "00_a/kernel.log",
             "00_a/run.json", "00_a/summary.json", "00_a/figures/x.png", "00_a/figures/x.svg", "00_a/figures/x.csv",
             "00_a/figures/x.csv.gz", "00_a/figures/x.csv.xz",
             "00_a/tables/t.csv", "bundle.zip", "00_a/bits-16/00_a-report.html",
             "00_a/bits-16/00_a.html", "00_a/.lock", "00_a/00_a.failed.html", "00_a/00_a.failed.ipynb",
             "00_a/.failed/00_a.html", "00_a/.failed/00_a-report.html", "00_a/.failed/figures/x.png"]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *[f"reports/quick/{n}" for n in names]],
                             cwd=repository, capture_output=True, text=True).stdout.split()
    for name in names:
        assert is_published(name) == (f"reports/quick/{name}" not in ignored), name


# ------------------------------------------------------------------------------------------------------------
# The committed reports, as a reader of the repository gets them (issue 21)
# ------------------------------------------------------------------------------------------------------------
_REPORTS = Path(__file__).resolve().parents[1] / "reports"


def _committed_folders() -> list[Path]:
    return sorted(p for p in _REPORTS.iterdir() if (p / "index.html").is_file()) if _REPORTS.is_dir() else []


@pytest.mark.parametrize("folder", _committed_folders(), ids=lambda p: p.name)
def test_every_committed_report_folder_passes_the_checker(folder):
    from shc.reports.check import check_report_folder

    assert [str(problem) for problem in check_report_folder(folder)] == []  # every set, no kind let through


@pytest.mark.browser
@pytest.mark.parametrize("folder", _committed_folders(), ids=lambda p: p.name)
def test_every_committed_reading_page_shows_no_problem_in_headless_chromium(folder):
    from shc.reports.browser import check_folder_in_browser, find_chromium

    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the browser check needs it")
    assert [str(problem) for problem in check_folder_in_browser([folder])] == []


def test_a_record_names_the_run_folder_as_given_not_through_its_links(tmp_path):
    """Issue 38: a ``runs`` folder that is a link to another place (say the home folder of the machine that built the
    reports) is recorded by the name the user gave, relative, never by where the link points."""
    from shc.reports.execute import _relative_parameters

    (tmp_path / "elsewhere" / "real").mkdir(parents=True)
    (tmp_path / "runs").symlink_to(tmp_path / "elsewhere" / "real", target_is_directory=True)
    output_dir = tmp_path / "reports" / "standard" / "04_retrieval"
    output_dir.mkdir(parents=True)
    recorded = _relative_parameters({"run_dir": str(tmp_path / "runs" / "standard"), "output_dir": str(output_dir),
                                     "bits": [16]}, output_dir)
    assert recorded == {"run_dir": "../../../runs/standard", "output_dir": ".", "bits": [16]}


def test_a_record_of_a_committed_page_names_a_run_folder_outside_the_repository_by_its_name_only(tmp_path):
    """An audit: reports in the repository built from ``--runs /scratch/alice/runs`` recorded
    ``../../../../../scratch/alice/runs/quick``, relative to the page though the record said "relative to the
    repository", and the checker let it through; so it did ``/exports/...`` (a root it did not know) and ``~/runs``."""
    import json

    from shc.reports.check import check_report_folder
    from shc.reports.execute import OUTSIDE_REPOSITORY, _relative_command, _relative_parameters

    repo = Path(__file__).resolve().parents[1]
    out = repo / "reports" / "standard" / "04_retrieval"  # only path arithmetic: nothing is written there
    recorded = _relative_parameters({"run_dir": "/scratch/alice/runs/standard", "output_dir": str(out)}, out)
    assert recorded == {"run_dir": f"{OUTSIDE_REPOSITORY}/standard", "output_dir": "reports/standard/04_retrieval"}
    assert _relative_parameters({"run_dir": str(repo / "runs" / "standard")}, out) == {"run_dir": "runs/standard"}
    assert _relative_command(["python", "-m", "shc.reports", "--runs", "/scratch/alice/runs"], out)[-1] == \
        f"{OUTSIDE_REPOSITORY}/runs"
    folder = _seeded_folder(tmp_path, _CLEAN_BODY)
    for leaked in ("../../../../../scratch/alice/runs/quick", "/exports/alice/runs/quick", "~/runs/quick",
                   f"{OUTSIDE_REPOSITORY}/quick"):
        (folder / "00_x" / "run.json").write_text(json.dumps({"parameters": {"run_dir": leaked},
                                                               "paths_relative_to": "repository"}))
        problems = [(p.kind, p.detail.split(" ")[0]) for p in check_report_folder(folder)]
        assert problems == ([] if leaked.startswith(OUTSIDE_REPOSITORY) else [("absolute-path", leaked)]), leaked


def test_with_figure_files_links_only_byte_identical_saved_figures(tmp_path):
    from shc.reports.export import with_figure_files

    (tmp_path / "figures").mkdir()
    saved, other = b"\x89PNG saved figure", b"\x89PNG an image nobody saved"
    (tmp_path / "figures" / "curve.png").write_bytes(saved)
    (tmp_path / "figures" / "curve.csv").write_bytes(saved)  # only PNGs are candidates
    body = "".join(f'<img alt="a{i}" src="data:image/png;base64,{base64.b64encode(data).decode()}" width=5>'
                   for i, data in enumerate((saved, other, saved)))
    linked = with_figure_files(body, tmp_path)
    assert re.findall(r'src="([^"]{0,40})', linked) == [
        "figures/curve.png", "data:image/png;base64," + base64.b64encode(other).decode()[:18], "figures/curve.png"]
    assert 'alt="a1"' in linked and "width=5" in linked
    # a linked figure opens at full size: the anchor wraps exactly the image, and an embedded image gets none
    assert re.findall(r'<a href="([^"]*)"[^>]*><img alt="(a\d)"[^>]*></a>', linked) == [
        ("figures/curve.png", "a0"), ("figures/curve.png", "a2")]
    assert linked.count("<a ") == 2
    assert with_figure_files(body, tmp_path / "elsewhere") == body  # no figures folder: nothing to link


@pytest.mark.browser
def test_a_table_wider_than_the_page_scrolls_instead_of_losing_its_last_columns(tmp_path):
    from shc.reports.browser import find_chromium, rendered_dom
    from shc.reports.export import render_html

    if find_chromium() is None:
        pytest.skip("chromium is not installed: apt-get install chromium")
    columns = [f"a_long_column_name_{i}" for i in range(16)]
    table = "<table><thead><tr>" + "".join(f"<th>{c}</th>" for c in columns) + "</tr></thead><tbody><tr>" + "".join(
        f"<td>{i}.123456</td>" for i in range(16)) + "</tr></tbody></table>"
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Wide"), nbformat.v4.new_code_cell(
        "table", outputs=[nbformat.v4.new_output("execute_result", {"text/html": table}, execution_count=1)])])
    nbformat.write(notebook, tmp_path / "wide.ipynb")
    page = render_html(tmp_path / "wide.ipynb", tmp_path / "tiny" / "00_x" / "wide-report.html", include_input=False,
                       assets_root=tmp_path)
    measure = ('<script>addEventListener("load", () => { const t = document.querySelector(".jp-OutputArea-output table");'
               ' document.body.dataset.measured = [t.scrollWidth, t.clientWidth, getComputedStyle(t).overflowX,'
               ' t.getBoundingClientRect().right <= innerWidth].join(" "); });</script>')
    page.write_text(page.read_text(encoding="utf-8").replace("</body>", measure + "</body>"), encoding="utf-8")
    scroll, client, overflow, inside = re.search(r'data-measured="([^"]+)"', rendered_dom(page)).group(1).split()
    # wider than the page, the table scrolls sideways inside it: every column can be reached
    assert int(scroll) > int(client) and overflow == "auto" and inside == "true"


def _benchmark(name: str):
    import importlib.util

    script = Path(reports.__file__).resolve().parents[2] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, script


def test_data_weight_reads_gzip_and_xz_tables_and_compares_the_two(tmp_path, capsys):
    """benchmarks/data_weight.py: a set built before the switch (gzip) and one since (xz) give the same row for the
    same table; the sizes are those of gzip -9 and xz of the CSV text, computed here by hand."""
    import gzip
    import lzma

    import pandas as pd

    weight, _ = _benchmark("data_weight")
    rng = np.random.default_rng(0)
    text = pd.DataFrame({"method": ["csq", "shc"] * 800, "value": rng.random(1600).round(4)}).to_csv(index=False)
    for name, data in (("old", gzip.compress(text.encode(), mtime=0)), ("new", lzma.compress(text.encode()))):
        figures = tmp_path / "reports" / name / "01_x" / "figures"
        figures.mkdir(parents=True)
        (figures / f"curve.csv{'.gz' if name == 'old' else '.xz'}").write_bytes(data)
        (figures / "small.csv").write_text("a\n1\n")  # plain tables are not counted
        (tmp_path / "reports" / name / "index.html").write_text("<html></html>")
    old, new = (weight.data_weight(tmp_path / "reports" / name) for name in ("old", "new"))
    assert {k: v for k, v in old.items() if k not in ("preset", "gzip s", "xz s")} == \
           {k: v for k, v in new.items() if k not in ("preset", "gzip s", "xz s")}
    assert old["files"] == 1 and old["CSV MB"] == len(text) / 1e6
    assert old["gzip -9 MB"] == len(gzip.compress(text.encode(), compresslevel=9, mtime=0)) / 1e6
    assert old["xz MB"] == len(lzma.compress(text.encode(), preset=6)) / 1e6 < old["gzip -9 MB"]
    assert weight.main(["--reports", str(tmp_path / "reports"), "--presets", "old", "new"]) == 0
    assert "total      2" in capsys.readouterr().out
    with pytest.raises(SystemExit, match=r"no built report folder for \['q'\]"):
        weight.main(["--reports", str(tmp_path / "reports"), "--presets", "q"])


def test_regeneration_bound_packs_only_a_sets_committed_files_and_stores_a_copy_once(tmp_path):
    """benchmarks/regeneration_bound.py: 300 kB of random bytes cannot be compressed, so the set packed alone holds
    at least that much; a second identical copy is one git object; an untracked file is not the set's."""
    import subprocess

    bound, script = _benchmark("regeneration_bound")
    folder = tmp_path / "reports" / "p"
    folder.mkdir(parents=True)
    noise = np.random.default_rng(0).bytes(300_000)
    (folder / "a.png").write_bytes(noise)
    (folder / "copy.png").write_bytes(noise)
    page = "<p>same words</p>\n" * 5000  # 90 kB that compress to almost nothing
    (folder / "page.html").write_text(page, encoding="utf-8")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "set"], check=True)
    (folder / "leftover.png").write_bytes(np.random.default_rng(1).bytes(500_000))  # untracked: not counted
    row = bound.packed_alone(tmp_path, "p")
    assert row["files"] == 3 and row["published MB"] == pytest.approx((600_000 + len(page)) / 1e6)
    assert 300_000 / 2**20 <= row["packed alone MiB"] < 320_000 / 2**20  # one copy of the noise, a few kB of rest
    with pytest.raises(SystemExit, match="no committed files under reports/q/"):
        bound.packed_alone(tmp_path, "q")


def test_regeneration_bound_of_several_sets_stores_what_they_share_once(tmp_path, monkeypatch, capsys):
    """Two sets holding the same 300 kB of noise (as three presets hold the same GV-bound figure): each alone packs
    it, so the sum counts it twice; packed together, as one regeneration of both would be, it is one object."""
    import subprocess

    bound, _ = _benchmark("regeneration_bound")
    noise = np.random.default_rng(0).bytes(300_000)
    for name, own in (("p", 1), ("r", 2)):
        (tmp_path / "reports" / name).mkdir(parents=True)
        (tmp_path / "reports" / name / "shared.png").write_bytes(noise)
        (tmp_path / "reports" / name / "own.png").write_bytes(np.random.default_rng(own).bytes(100_000))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "sets"], check=True)
    monkeypatch.chdir(tmp_path)
    assert bound.main(["--presets", "p", "r"]) == 0
    printed = capsys.readouterr().out
    together = float(printed.split("packed together: ")[1].split(" MiB")[0])
    total = float(printed.split("once a set: ")[1].split(" MiB")[0])
    assert 500_000 / 2**20 <= together < 0.52 and 800_000 / 2**20 <= total < 0.82  # 0.48-0.5 MiB against 0.76-0.8
    assert "within the target of 8 MB" in printed


def test_regeneration_bound_weighs_a_built_folders_published_pages_beside_the_committed_ones(tmp_path):
    """--folder/--pages: only the named pages count, on both sides; of a built folder only what a commit would hold
    (the report page and its figures, not the executed notebook, the SVG or the kernel log)."""
    import subprocess

    bound, _ = _benchmark("regeneration_bound")
    committed = tmp_path / "repo" / "reports" / "p"
    built = tmp_path / "out" / "p"
    for folder, seed in ((committed, 0), (built, 1)):
        rng = np.random.default_rng(seed)
        for page, size in (("00_a", 200_000), ("01_b", 100_000), ("03_c", 400_000)):
            (folder / page / "figures").mkdir(parents=True)
            (folder / page / "figures" / "f.png").write_bytes(rng.bytes(size))
            (folder / page / f"{page}-report.html").write_text("<p>page</p>\n", encoding="utf-8")
        (folder / "index.html").write_text("<p>index</p>\n", encoding="utf-8")
    for leftover in ("00_a.ipynb", "figures/f.svg", "kernel.log", "00_a.html"):  # not published: not weighed
        (built / "00_a" / leftover).write_bytes(np.random.default_rng(2).bytes(300_000))
    git = ["git", "-C", str(tmp_path / "repo"), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "set"], check=True)
    old = bound.packed_alone(tmp_path / "repo", "p", ["00", "01"])
    new = bound.packed_folder(built, ["00", "01"])
    for row in (old, new):  # two PNGs and two pages; 300 kB of incompressible noise, not 700 kB
        assert row["files"] == 4 and row["published MB"] == pytest.approx((300_000 + 2 * len("<p>page</p>\n")) / 1e6)
        assert 300_000 / 2**20 <= row["packed alone MiB"] < 320_000 / 2**20
    assert bound.packed_folder(built)["files"] == 7  # every page and the index
    with pytest.raises(SystemExit, match="of the pages 05"):
        bound.packed_folder(built, ["05"])


def test_regeneration_bound_built_replaces_only_the_pages_a_build_holds(tmp_path, monkeypatch, capsys):
    """--built OUTPUT: a page built there replaces the committed page of that name, the other pages and the folder's
    own files stay as committed (the build wrote no index); a preset not built counts as committed."""
    import subprocess

    bound, _ = _benchmark("regeneration_bound")
    repo, out = tmp_path / "repo", tmp_path / "out"
    for number, preset in enumerate(("p", "r")):
        for page, size in (("00_a", 200_000), ("03_c", 100_000)):
            (repo / "reports" / preset / page / "figures").mkdir(parents=True)
            (repo / "reports" / preset / page / "figures" / "f.png").write_bytes(
                np.random.default_rng(size + number).bytes(size))
        (repo / "reports" / preset / "index.html").write_text("<p>index</p>\n", encoding="utf-8")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "sets"], check=True)
    (out / "p" / "00_a" / "figures").mkdir(parents=True)
    (out / "p" / "00_a" / "figures" / "f.png").write_bytes(np.random.default_rng(9).bytes(50_000))  # lighter
    (out / "p" / "00_a" / "00_a.ipynb").write_bytes(np.random.default_rng(8).bytes(400_000))  # not published
    files = bound.today_files(repo, "p", out)
    assert sorted(name for _, name in files) == ["reports/p/00_a/figures/f.png", "reports/p/03_c/figures/f.png",
                                                 "reports/p/index.html"]
    assert dict((name, path) for path, name in files)["reports/p/00_a/figures/f.png"].parent.parent.parent == out / "p"
    assert bound.today_files(repo, "r", out) == bound.committed_files(repo, "r")
    monkeypatch.chdir(repo)
    assert bound.main(["--presets", "p", "r", "--built", str(out)]) == 0
    printed = capsys.readouterr().out
    together = float(printed.split("packed together: ")[1].split(" MiB")[0])
    assert 450_000 / 2**20 <= together < 480_000 / 2**20  # p's 50 + 100 kB of noise and r's 200 + 100 kB, not 600
    assert printed.count("  1\n") == 1 and printed.count("  0\n") == 1  # pages built: p 1, r 0
    with pytest.raises(SystemExit, match="no such folder"):
        bound.main(["--built", str(tmp_path / "nowhere")])


def test_regeneration_bound_reencodes_committed_pages_as_todays_code_writes_them(tmp_path):
    """--reencode: a committed PNG comes back with the same pixels and no more bytes (oxipng, lossless); a training
    history's timings keep 4 significant digits, its other columns and its xz format unchanged; any other file is the
    committed one itself; --reencode without --built is refused."""
    import io
    import lzma

    from PIL import Image

    bound, _ = _benchmark("regeneration_bound")
    pixels = np.kron(np.random.default_rng(0).integers(0, 255, (40, 60, 3), dtype=np.uint8), np.ones((4, 4, 1),
                                                                                                  dtype=np.uint8))
    raw = io.BytesIO()
    Image.fromarray(pixels).save(raw, format="PNG", compress_level=1)  # a loosely compressed committed figure
    committed = tmp_path / "committed"
    (committed / "figures").mkdir(parents=True)
    (committed / "tables").mkdir()
    (committed / "figures" / "f.png").write_bytes(raw.getvalue())
    history = "epoch,loss,seconds,eval_seconds\n1,0.123456789,12.345678,0.00123456\n2,0.0987654321,9.87654321,\n"
    (committed / "tables" / "training_history.csv.xz").write_bytes(lzma.compress(history.encode()))
    (committed / "tables" / "runs.csv").write_text("seconds\n12.345678\n")
    scratch = tmp_path / "scratch"

    png = bound.reencoded(committed / "figures" / "f.png", "reports/p/03_c/figures/f.png", scratch)
    assert png == scratch / "reports/p/03_c/figures/f.png" and png.stat().st_size < len(raw.getvalue())
    np.testing.assert_array_equal(np.asarray(Image.open(png).convert("RGB")), pixels)

    table = bound.reencoded(committed / "tables" / "training_history.csv.xz",
                            "reports/p/03_c/tables/training_history.csv.xz", scratch)
    assert table.name == "training_history.csv.xz"
    assert lzma.decompress(table.read_bytes()).decode().splitlines() == [
        "epoch,loss,seconds,eval_seconds", "1,0.12345679,12.35,0.001235", "2,0.098765432,9.877,"]
    other = committed / "tables" / "runs.csv"
    assert bound.reencoded(other, "reports/p/03_c/tables/runs.csv", scratch) == other  # not a history: as committed
    with pytest.raises(SystemExit, match="pass --built"):
        bound.main(["--reencode"])


def test_pack_growth_measures_what_each_commit_adds_to_a_clone(tmp_path):
    """benchmarks/pack_growth.py: 300 kB of noise committed adds about 300 kB; a second copy of it under another name
    adds nothing (one blob); an unknown revision is refused by git."""
    import subprocess

    growth, _ = _benchmark("pack_growth")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    noise = np.random.default_rng(0).bytes(300_000)
    for name, content in (("page.html", b"<p>page</p>\n"), ("a.png", noise), ("b.png", noise)):
        (tmp_path / name).write_bytes(content)
        subprocess.run([*git, "add", name], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"add {name}"], check=True)
    table = growth.growth(tmp_path, ["HEAD~2", "HEAD~1", "HEAD"])
    assert table["subject"].tolist() == ["add page.html", "add a.png", "add b.png"]
    added = table["added MiB"].tolist()
    assert np.isnan(added[0]) and 300_000 / 2**20 - 0.01 <= added[1] < 320_000 / 2**20 and abs(added[2]) < 0.01
    with pytest.raises(subprocess.CalledProcessError):
        growth.packed_size(tmp_path, "no-such-branch")


def test_png_weight_re_encodes_losslessly_and_reports_the_share(tmp_path):
    import io

    from PIL import Image

    weight, _ = _benchmark("png_weight")
    figures = tmp_path / "p" / "00_page" / "figures"
    figures.mkdir(parents=True)
    image = np.kron(np.random.default_rng(0).integers(0, 4, (20, 30)), np.ones((6, 6), dtype=int)).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(image * 60).save(buffer, format="PNG")  # Pillow without optimize: room to recompress
    (figures / "f.png").write_bytes(buffer.getvalue())
    rows = weight.png_weight(tmp_path / "p", [1, 2])
    assert [row["encoding"] for row in rows] == ["as committed", "oxipng level 1", "oxipng level 2"]
    assert rows[0]["MB"] == len(buffer.getvalue()) / 1e6 and rows[0]["share"] == 1.0
    assert all(0 < row["share"] <= 1 for row in rows[1:])
    with pytest.raises(SystemExit, match="no figures under"):
        weight.png_weight(tmp_path / "empty", [2])


def test_png_weight_weighs_libdeflate_levels_and_the_heatmaps_triangle(tmp_path):
    """--libdeflate: the same pixels in other bytes; --heatmaps: page 02's S-beside-Gram figure redrawn from its
    committed data (S and the centers' codes), the upper triangle of noise-like Gram matrices well under the squares."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    from shc import plots

    weight, _ = _benchmark("png_weight")
    figures = tmp_path / "p" / "02_hash_centers" / "figures"
    figures.mkdir(parents=True)
    rng = np.random.default_rng(0)
    centers = {name: np.where(rng.random((150, 64)) < 0.5, -1, 1) for name in ("random", "csq")}
    similarity = np.eye(150)
    names = [f"{i:03d}" for i in range(150)]  # names that read back as numbers, as quick's do
    fig = plots.plot_similarity_vs_gram(similarity, centers, triangle=False)
    plots.save_figure(fig, figures / "similarity_vs_gram", data=plots.gram_frames(similarity, centers, names))
    plt.close(fig)
    (compression,) = weight.libdeflate_weight(tmp_path / "p", [12])
    assert compression["encoding"].endswith("libdeflate 12") and 0 < compression["share"] <= 1.02
    png = (figures / "similarity_vs_gram.png").read_bytes()
    again = weight.oxipng.optimize_from_memory(png, level=2, deflate=weight.oxipng.Deflaters.libdeflater(12))
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(again)).convert("RGB")),
                          np.asarray(Image.open(io.BytesIO(png)).convert("RGB")))
    full, triangle = weight.heatmap_weight(tmp_path / "p")
    assert full["encoding"].endswith("full squares") and triangle["encoding"].endswith("upper triangle")
    assert triangle["MB"] < 0.8 * full["MB"] and triangle["share"] == pytest.approx(triangle["MB"] / full["MB"])
    with pytest.raises(SystemExit, match="similarity_vs_gram"):
        weight.heatmap_weight(tmp_path / "empty")


def test_png_weight_quantises_to_fewer_colours_and_measures_what_moved(tmp_path):
    """--colours: a figure of 4 grey levels survives a 4-colour palette exactly and loses pixels at 2 colours (the
    two levels that merge move by their distance to the merged colour)."""
    import io

    from PIL import Image

    weight, _ = _benchmark("png_weight")
    figures = tmp_path / "p" / "00_page" / "figures"
    figures.mkdir(parents=True)
    levels = np.kron(np.random.default_rng(1).integers(0, 4, (20, 30)), np.ones((6, 6), dtype=int))
    buffer = io.BytesIO()
    Image.fromarray((levels * 60).astype(np.uint8)).convert("RGB").save(buffer, format="PNG")
    (figures / "f.png").write_bytes(buffer.getvalue())
    exact, halved = weight.palette_weight(tmp_path / "p", [4, 2])
    assert exact["encoding"] == "4 colours (lossy)" and exact["max channel change"] == 0
    assert exact["pixels changed"] == 0.0
    assert halved["max channel change"] > 0 and 0 < halved["pixels changed"] < 1
    assert halved["MB"] * 1e6 == pytest.approx(len(weight.quantised(buffer.getvalue(), 2)[0]))
    with pytest.raises(SystemExit, match="2 to 256 colours"):
        weight.palette_weight(tmp_path / "p", [300])


def test_report_weight_counts_the_second_copies_the_cuts_leave_out(tmp_path):
    """benchmarks/report_weight.py: the bundle's bytes, the S rows of 01's sources data (the heatmap holds S) and the
    size of 00's S file (the Gram data repeated it), from a preset folder's committed files."""
    import gzip
    import subprocess
    import sys

    import pandas as pd

    weight, script = _benchmark("report_weight")
    folder = tmp_path / "reports" / "p"
    (folder / "01_similarity" / "figures").mkdir(parents=True)
    (folder / "00_center_geometry" / "figures").mkdir(parents=True)
    (folder / "index.html").write_text("<html></html>", encoding="utf-8")
    (folder / "bundle.zip").write_bytes(b"z" * 1234)
    (folder / "00_center_geometry" / "figures" / "similarity.csv.gz").write_bytes(b"s" * 567)
    gram = folder / "00_center_geometry" / "figures" / "similarity_vs_gram.csv.gz"  # a set before the cut: S repeated
    gram.write_bytes(gzip.compress(b"source,row,code\nS,c0,\ncsq,c0,+-\n", mtime=0))
    rng = np.random.default_rng(0)
    rows = pd.DataFrame({"source": ["data-dependent S"] * 50 + ["text S"] * 50, "row": [f"c{i}" for i in range(100)],
                         "a": rng.random(100).round(3), "b": rng.random(100).round(3)})
    sources = folder / "01_similarity" / "figures" / "similarity_sources.csv.gz"
    sources.write_bytes(gzip.compress(rows.to_csv(index=False).encode(), mtime=0))
    cuts = weight.preset_cuts(folder)
    rest = len(gzip.compress(rows[rows["source"] == "text S"].to_csv(index=False).encode(), mtime=0))
    assert cuts["bundle.zip"] == 1234 and cuts["S in 00 Gram data"] == 567
    assert cuts["S in 01 sources"] == sources.stat().st_size - rest > 0
    assert cuts["cut (MiB)"] == round((1234 + 567 + cuts["S in 01 sources"]) / 2**20, 3)
    (folder / "bundle.zip").unlink()  # a folder built since: nothing left to cut there
    from shc import plots

    gram.unlink()
    plots.save_table(pd.DataFrame({"source": ["csq"] * 2000, "row": "c0", "code": "+-"}),
                     gram.with_name("similarity_vs_gram"))  # xz since 2026-11-29, the centers only
    kept = rows[rows["source"] == "text S"]
    sources.unlink()
    plots.save_table(kept.loc[kept.index.repeat(20)], sources.with_name("similarity_sources"))
    assert [weight.preset_cuts(folder)[key] for key in ("bundle.zip", "S in 01 sources", "S in 00 Gram data")] == \
           [0, 0, 0]
    done = subprocess.run([sys.executable, str(script), "--reports", str(tmp_path / "reports"), "--presets", "p", "q"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "no built report folder for ['q']" in done.stderr


def test_clock_overlap_lists_the_runs_whose_training_met_a_window_and_moves_them(tmp_path, capsys):
    """benchmarks/clock_overlap.py: a run trained [end - train_seconds, end]; one inside a window, one that ends in
    it, one before it; only the first two are listed, longest overlap first, and --move-to moves exactly them."""
    import json
    import os

    clock, _ = _benchmark("clock_overlap")
    window_start = 1_800_000_000.0  # 2027-01-15T08:00:00Z
    runs = {"a/seed0/stage3-csq-16bit-1": (window_start + 300, 100.0),  # inside: 100 s
            "a/seed0/stage3-lth-16bit-2": (window_start + 60, 500.0),  # began before, ended in it: 60 s
            "a/seed1/stage3-mds-16bit-3": (window_start - 10, 200.0)}  # ended before it
    for relative, (end, seconds) in runs.items():
        folder = tmp_path / "runs" / relative
        folder.mkdir(parents=True)
        (folder / "metrics.json").write_text(json.dumps({"train_seconds": seconds}))
        (folder / "codes.npz").write_bytes(b"")
        os.utime(folder / "codes.npz", (end, end))
    # metrics.json rewritten long after the run (a re-evaluation): the end is codes.npz's time, written once
    os.utime(tmp_path / "runs" / "a/seed1/stage3-mds-16bit-3" / "metrics.json", (window_start + 100,) * 2)
    (tmp_path / "runs" / "a" / "seed0" / "stage2-shc-16bit-4").mkdir()  # not a hashing run
    start = "2027-01-15T08:00:00Z"
    assert clock.main([str(tmp_path / "runs"), "--window", start, "2027-01-15T08:10:00",
                       "--move-to", str(tmp_path / "aside")]) == 0
    printed = capsys.readouterr().out
    assert "stage3-mds" not in printed
    table = clock.overlapping_runs(tmp_path / "aside", [(clock.parse_time(start),
                                                          clock.parse_time("2027-01-15T08:10:00Z"))])
    assert table["run"].tolist() == ["a/seed0/stage3-csq-16bit-1", "a/seed0/stage3-lth-16bit-2"]
    assert table["overlap_seconds"].tolist() == [100.0, 60.0]
    assert sorted(p.name for p in (tmp_path / "runs").glob("*/*/stage3-*")) == ["stage3-mds-16bit-3"]
    # overlapping windows are merged: no second counts twice
    twice = clock.overlapping_runs(tmp_path / "aside", [
        (clock.parse_time(start), clock.parse_time("2027-01-15T08:10:00Z")),
        (clock.parse_time("2027-01-15T08:04:00Z"), clock.parse_time("2027-01-15T08:06:00Z"))])
    assert twice["overlap_seconds"].tolist() == [100.0, 60.0]
    # a move that would overwrite a folder moves nothing
    (tmp_path / "again" / "a/seed0/stage3-lth-16bit-2").mkdir(parents=True)
    with pytest.raises(SystemExit, match="nothing moved"):
        clock.move_runs(tmp_path / "aside", ["a/seed0/stage3-csq-16bit-1", "a/seed0/stage3-lth-16bit-2"],
                        tmp_path / "again")
    assert (tmp_path / "aside" / "a/seed0/stage3-csq-16bit-1").is_dir()
    # a resumed run trained its first epochs in an earlier process: from its config.json (before the window) to its
    # end (after it), its 50 s clock does not place it, the span does
    resumed = tmp_path / "runs" / "a/seed2/stage3-csq-16bit-5"
    resumed.mkdir(parents=True)
    (resumed / "metrics.json").write_text(json.dumps({"train_seconds": 50.0, "resumed_after_epoch": 7}))
    (resumed / "config.json").write_text("{}")
    os.utime(resumed / "config.json", (window_start - 1000,) * 2)
    (resumed / "codes.npz").write_bytes(b"")
    os.utime(resumed / "codes.npz", (window_start + 3600,) * 2)
    listed = clock.overlapping_runs(tmp_path / "runs", [(clock.parse_time(start),
                                                         clock.parse_time("2027-01-15T08:10:00Z"))])
    assert listed["run"].tolist() == ["a/seed2/stage3-csq-16bit-5"] and listed["resumed_after_epoch"].tolist() == [7]
    assert listed["overlap_seconds"].tolist() == [600.0]
    with pytest.raises(SystemExit, match="not after the start"):
        clock.overlapping_runs(tmp_path / "runs", [(clock.parse_time(start), clock.parse_time(start))])
    with pytest.raises(SystemExit, match="not an ISO 8601 time"):
        clock.parse_time("yesterday")


def test_results_epoch_seconds_gives_each_file_length_and_method_its_seconds_per_epoch(tmp_path):
    """benchmarks/results_epoch_seconds.py: train_seconds / epochs, min-max per (file, bits, method), untrained rows
    (the classifier-code baseline: no clock) left out, and the recorded precisions, '-' where a file has none."""
    import pandas as pd

    script, _ = _benchmark("results_epoch_seconds")
    old = tmp_path / "old.csv"
    pd.DataFrame({"method": ["csq", "csq", "crh", "csq"], "bits": [32, 32, 32, 32], "epochs": [120, 120, 60, None],
                  "train_seconds": [1200.0, 2400.0, 300.0, None]}).to_csv(old, index=False)
    new = tmp_path / "new.csv"
    pd.DataFrame({"method": ["csq", "csq"], "bits": [16, 16], "epochs": [100, 100], "train_seconds": [250.0, 300.0],
                  "precision": ["bf16", "fp32"]}).to_csv(new, index=False)
    table = script.epoch_seconds_table([old, new])
    assert table.to_dict("records") == [
        {"file": "old.csv", "bits": 32, "method": "crh", "runs": 1, "s/epoch min": 5.0, "s/epoch max": 5.0,
         "precision": "-"},
        {"file": "old.csv", "bits": 32, "method": "csq", "runs": 2, "s/epoch min": 10.0, "s/epoch max": 20.0,
         "precision": "-"},
        {"file": "new.csv", "bits": 16, "method": "csq", "runs": 2, "s/epoch min": 2.5, "s/epoch max": 3.0,
         "precision": "bf16, fp32"}]
