"""Reading pages as a reader's browser shows them: headless Chromium, the network off.

:mod:`shc.reports.check` reads the HTML files; this module reads what a browser *shows* once the page's
scripts ran (MathJax typesets the equations offline from the vendored bundle, ``shc.offline``). For each
reading page it dumps the rendered DOM and finds

- every problem :func:`shc.reports.check.check_page` finds in the rendered page (reprs, ``NaN`` cells, bare
  indexes, dead links, placeholder alt texts, empty sections, absolute paths), and
- ``raw-tex``: TeX a reader would see as source (``$...\\command...$``, ``\\(...\\)``, ``$$...$$`` left in the
  text), i.e. math MathJax did not typeset, e.g. because its bundle is missing or blocked.

``python -m shc.reports --check FOLDER --browser`` runs it over every reading page and index of a preset folder.
Chromium is found as ``chromium``, ``chromium-browser`` or ``google-chrome`` on the PATH (Debian:
``apt-get install chromium``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from shc.reports.check import Problem, _PageParser, check_page, check_report_folder

__all__ = ["BROWSER_NAMES", "browser_problems", "check_folder_in_browser", "find_chromium", "main",
           "reading_pages", "rendered_dom"]

#: Executables tried, in order, by :func:`find_chromium`.
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")

# TeX left as text: an inline $...$ holding a command, display $$...$$, or \( \) / \[ \] delimiters.
_RAW_TEX = re.compile(r"\$\$.+?\$\$|\$[^$\n]*\\[A-Za-z]+[^$\n]*\$|\\\(.+?\\\)|\\\[.+?\\\]", re.DOTALL)


def find_chromium() -> str | None:
    """The path of a Chromium-family browser on the PATH, or None."""
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def rendered_dom(page: str | os.PathLike, chromium: str | None = None, *, budget_ms: int = 10_000,
                 timeout: float = 120.0) -> str:
    """The DOM of ``page`` after its scripts ran in headless Chromium with every network request refused.

    ``budget_ms`` is Chromium's virtual-time budget (scripts and timers run until the page is idle or the budget
    is spent); the profile is a throw-away folder.
    """
    page = Path(page).resolve()
    if not page.is_file():
        raise FileNotFoundError(f"{page} is not a file; build the reports with python -m shc.reports first.")
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("No Chromium found on the PATH (tried " + ", ".join(BROWSER_NAMES) + "); install "
                                "one (Debian: apt-get install chromium) to check pages in a browser.")
    with tempfile.TemporaryDirectory(prefix="shc-chromium-") as profile:
        command = [
            chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND",  # no network
            f"--user-data-dir={profile}", f"--virtual-time-budget={budget_ms}", "--dump-dom", page.as_uri(),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"Chromium could not render {page} (exit status {done.returncode}): "
                           f"{done.stderr.strip()[-500:]}")
    return done.stdout


def browser_problems(page: str | os.PathLike, dom: str | None = None, *, name: str | None = None,
                     chromium: str | None = None) -> list[Problem]:
    """The problems a reader sees on ``page`` in a browser (``dom``: its rendered DOM, rendered here if None).

    Links are resolved against the page's folder on disk; a link into the page's own folder tree that is not
    a file there is dead.
    """
    page = Path(page)
    name = name or page.name
    dom = rendered_dom(page, chromium) if dom is None else dom
    folder = page.resolve().parent

    def exists(target: str) -> bool:
        return (folder / target).exists()

    # the rendered DOM names the page's own file:// location (MathJax's loader); only the source's paths count
    problems = [problem for problem in check_page(dom, name, exists=exists) if problem.kind != "absolute-path"]
    parser = _PageParser()
    parser.feed(dom)
    text = "".join(parser.text)
    for match in list(dict.fromkeys(_RAW_TEX.findall(text)))[:5]:
        shown = re.sub(r"\s+", " ", match)[:80]
        problems.append(Problem(name, "raw-tex", f"TeX shown as text, not typeset: {shown}"))
    return problems


def reading_pages(folder: str | os.PathLike) -> list[Path]:
    """The pages a reader opens in a preset's report folder: ``index.html`` and every ``*-report.html``."""
    folder = Path(folder)
    return sorted([*folder.glob("index.html"), *(page for page in folder.rglob("*-report.html")  # not a kept failure's
                                                 if not any(part.startswith(".") for part in page.relative_to(folder).parts))])


def check_folder_in_browser(folders: Sequence[str | os.PathLike], chromium: str | None = None) -> list[Problem]:
    """:func:`browser_problems` of every reading page of each folder (names relative to the folder)."""
    problems = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise FileNotFoundError(f"{folder} is not a report folder; build one with python -m shc.reports.")
        for page in reading_pages(folder):
            problems += browser_problems(page, name=page.relative_to(folder).as_posix(), chromium=chromium)
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.reports.browser FOLDER...``: every problem of :func:`shc.reports.check.check_report_folder`
    and of :func:`check_folder_in_browser`, printed; exit status 1 when there is one."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shc.reports.browser", description=main.__doc__)
    parser.add_argument("folders", nargs="+", help="preset report folders, e.g. reports/quick")
    args = parser.parse_args(argv)
    found = 0
    for folder in args.folders:
        problems = check_report_folder(folder) + check_folder_in_browser([folder])
        for problem in problems:
            print(f"{folder}/{problem}")
        print(f"{folder}: {len(problems)} problem(s), {len(reading_pages(folder))} page(s) opened in Chromium",
              file=sys.stderr)
        found += len(problems)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
