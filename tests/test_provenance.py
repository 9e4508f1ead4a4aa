"""Tests of shc.provenance: git state in a throw-away repository, versions, and the timer."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from shc import provenance

requires_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q")
    _git(path, "config", "user.email", "test@example.org")
    _git(path, "config", "user.name", "test")
    (path / "a.txt").write_text("one\n")
    (path / ".gitignore").write_text("ignored/\n")
    _git(path, "add", "a.txt", ".gitignore")
    _git(path, "commit", "-q", "-m", "first")
    return path


@requires_git
def test_git_state_matches_rev_parse_and_tracks_dirty(repo):
    state = provenance.git_state(repo)
    assert state["commit"] == _git(repo, "rev-parse", "HEAD") and len(state["commit"]) == 40
    assert state["dirty"] is False
    (repo / "ignored").mkdir()
    (repo / "ignored" / "x.txt").write_text("ignored files do not make the tree dirty")
    assert provenance.git_state(repo)["dirty"] is False
    (repo / "a.txt").write_text("two\n")
    assert provenance.git_state(repo / "a.txt")["dirty"] is True  # a file path inside the checkout works too
    _git(repo, "commit", "-q", "-am", "second")
    after = provenance.git_state(repo)
    assert after["dirty"] is False and after["commit"] == _git(repo, "rev-parse", "HEAD") != state["commit"]
    (repo / "new.txt").write_text("untracked")
    assert provenance.git_state(repo)["dirty"] is True


def test_git_state_outside_a_checkout_is_none(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # do not find a repository above tmp_path
    assert provenance.git_state(tmp_path) == {"commit": None, "dirty": None, "branch": None}
    assert provenance.git_state(tmp_path / "missing") == {"commit": None, "dirty": None, "branch": None}
    monkeypatch.setenv("PATH", str(tmp_path))  # no git at all
    assert provenance.git_state(tmp_path)["commit"] is None


@requires_git
def test_provenance_record_is_complete_and_serialisable(repo):
    import torch

    import shc

    record = provenance.provenance(["python", "-m", "shc.reports", "--preset", "quick"], preset="quick",
                                   overrides={"bits": [16, 32]}, path=repo)  # fmt: skip
    assert record["git"]["commit"] == _git(repo, "rev-parse", "HEAD")
    assert record["versions"] == {"shc": shc.__version__, "torch": torch.__version__, "numpy": np.__version__,
                                  "python": platform.python_version()}  # fmt: skip
    assert record["command"] == ["python", "-m", "shc.reports", "--preset", "quick"]
    assert record["preset"] == "quick" and record["overrides"] == {"bits": [16, 32]}
    assert record["cpu_count"] >= 1 and record["torch_threads"] == torch.get_num_threads()
    assert record["device"] in ("cpu", "cuda")
    values = json.dumps(record, sort_keys=True)
    assert "host" not in values and f'"{platform.node()}"' not in values  # no host name, as a key or a value
    assert provenance.provenance()["command"][0] == "python"


def test_timer_measures_wall_cpu_and_children():
    with provenance.Timer() as timer:
        subprocess.run([sys.executable, "-c", "s = 0\nfor i in range(3_000_000): s += i"], check=True)
        deadline = time.process_time() + 0.05
        while time.process_time() < deadline:  # some CPU time in this process too
            pass
    times = timer.as_dict()
    assert set(times) == {"wall_s", "cpu_s", "children_cpu_s", "total_cpu_s"}
    assert times["children_cpu_s"] > 0.05  # the child's loop is counted
    assert times["cpu_s"] >= 0.04
    assert times["wall_s"] >= times["children_cpu_s"] * 0.5
    assert times["total_cpu_s"] == pytest.approx(times["cpu_s"] + times["children_cpu_s"], abs=2e-3)
    with pytest.raises(RuntimeError, match="not finished"):
        provenance.Timer().as_dict()


@requires_git
def test_git_state_leaves_out_the_excluded_report_folder(repo):
    """A batch's own pages are not the code that built them: changes under the excluded folder do not make the
    checkout dirty, changes elsewhere still do (issue 38)."""
    (repo / "reports").mkdir()
    (repo / "reports" / "page.html").write_text("<html>1</html>")
    _git(repo, "add", "reports/page.html")
    _git(repo, "commit", "-q", "-m", "a page")
    (repo / "reports" / "page.html").write_text("<html>2</html>")  # a regenerated page
    (repo / "reports" / "new.html").write_text("<html>new</html>")
    assert provenance.git_state(repo)["dirty"] is True
    assert provenance.git_state(repo, exclude=["reports"])["dirty"] is False
    assert provenance.git_state(repo / "reports", exclude=["reports"])["dirty"] is False  # from inside it too
    (repo / "a.txt").write_text("changed code\n")
    assert provenance.git_state(repo, exclude=["reports"])["dirty"] is True
    assert provenance.checkout_root(repo / "reports") == Path(_git(repo, "rev-parse", "--show-toplevel"))


def test_a_committed_report_set_needs_a_clean_checkout_or_the_flag():
    from shc.reports.cli import clean_commit_problem

    dirty, clean = {"commit": "ab" * 20, "dirty": True}, {"commit": "ab" * 20, "dirty": False}
    problem = clean_commit_problem(True, dirty, allow_dirty=False)
    assert "uncommitted changes" in problem and "--allow-dirty" in problem and "abababababab" in problem
    assert clean_commit_problem(True, dirty, allow_dirty=True) is None
    assert clean_commit_problem(True, clean, allow_dirty=False) is None
    assert clean_commit_problem(False, dirty, allow_dirty=False) is None  # a folder outside the checkout: not committed
    assert clean_commit_problem(True, {"commit": None, "dirty": None}, allow_dirty=False) is None  # no git: unknown
    unread = {"commit": "ab" * 20, "dirty": None}  # git status failed or timed out: the changes are not known
    assert "could not say whether" in clean_commit_problem(True, unread, allow_dirty=False)
    assert clean_commit_problem(True, unread, allow_dirty=True) is None


def test_the_index_says_which_commit_built_its_pages():
    from shc.reports.index import commit_summary

    one = {"commit": "1" * 40, "dirty": False}
    assert commit_summary([]) == ("", True)
    assert commit_summary([one, one]) == ("Every page was built from one clean commit, `111111111111`.", True)
    text, clean = commit_summary([one, {"commit": "2" * 40, "dirty": True}, {"commit": None, "dirty": None}])
    assert not clean
    assert text.startswith("These 3 pages come from 2 commits (`111111111111`, `222222222222`)")
    assert "1 of them from a tree with uncommitted changes;" in text and "1 record no commit" in text
    text, clean = commit_summary([one, {"commit": "1" * 40, "dirty": None}])  # one commit, one tree not read
    assert not clean and "1 of them from a tree whose changes were not read" in text


def test_the_checker_fails_an_index_whose_commit_sentence_the_run_records_contradict(tmp_path):
    """An audit: a page's run.json naming another commit, or a dirty tree, or an index sentence edited by hand, all
    passed the checker while the index said "Every page was built from one clean commit"."""
    import json

    from shc.reports.check import check_report_folder
    from shc.reports.index import write_index

    folder = tmp_path / "tiny"
    for page in ("00_x", "01_y"):
        (folder / page).mkdir(parents=True)
        (folder / page / "run.json").write_text(json.dumps({"notebook": page, "status": "ok", "provenance": {
            "git": {"commit": "1" * 40, "dirty": False}}}))
    write_index(folder)

    def provenance() -> list[str]:
        return [problem.detail for problem in check_report_folder(folder) if problem.kind == "provenance"]

    assert provenance() == []
    index = (folder / "index.html").read_text()
    (folder / "index.html").write_text(index.replace("<code>111111111111</code>", "<code>222222222222</code>"))
    assert "Every page was built from one clean commit, `111111111111`." in provenance()[0]  # edited by hand
    (folder / "index.html").write_text(index)
    for change in ({"commit": "2" * 40, "dirty": False}, {"commit": "1" * 40, "dirty": True}):
        record = json.loads((folder / "01_y" / "run.json").read_text())
        (folder / "01_y" / "run.json").write_text(json.dumps({**record, "provenance": {"git": change}}))
        (problem,) = provenance()
        assert "These 2 pages come from" in problem and "the index says: Every page was built" in problem


def test_cpu_model_reads_the_model_name_line(tmp_path):
    """Benchmarks and report records name the CPU model: machines of one kind differ by maker and generation."""
    from shc.provenance import cpu_model, provenance

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD  EPYC 9B14 96-Core Processor\n"
                    "processor\t: 1\nmodel name\t: AMD EPYC 9B14 96-Core Processor\n")
    assert cpu_model(info) == "AMD EPYC 9B14 96-Core Processor"
    info.write_text("processor\t: 0\nBogoMIPS\t: 50.00\n")  # no model line (some ARM kernels): platform's answer
    import platform

    assert cpu_model(info) == (platform.processor() or None)
    assert cpu_model(tmp_path / "missing") == (platform.processor() or None)
    assert provenance()["cpu_model"] == cpu_model()
