"""Re-derive the *What this shows* sentences of published pages after their wording changed (issue 38).

A page's findings are computed from the tables it publishes (:func:`shc.findings.show` records which), and the
checker (:mod:`shc.reports.check`) re-derives them with today's code: when a finding's wording is corrected, every
page built before says what the code no longer derives, though its tables are the same. A page whose runs are still
on the machine is rebuilt (``python -m shc.reports``); one whose runs are gone keeps its tables and figures, and
:func:`refresh_findings` rewrites only its findings lists from those tables. The page then says so under each
list it changed: the date and the commit of the code that derived the new sentences (``data-refreshed`` and a
visible note), since the rest of the page was built by an earlier commit (its index names that one).

``python -m shc.reports.refresh reports/NAME...`` runs it on committed preset folders.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["folders_command", "note_refreshed_pages_in_index", "refresh_findings", "refresh_note",
           "refresh_summaries"]

_BLOCK = re.compile(r'<ul class="shc-findings" data-finding="(?P<key>[^"]*)"(?: data-refreshed="[^"]*")?>'
                    r'(?P<items>.*?)</ul>(?:<p class="shc-refreshed">.*?</p>)?', re.DOTALL)


def refresh_note(stamp: str) -> str:
    """The line a refreshed findings list carries under it."""
    return (f'<p class="shc-refreshed"><em>These sentences were derived again from this page\'s tables on {stamp}, '
            "after a correction of their wording; the rest of the page is as built.</em></p>")


def _stamp(folder: Path) -> str:
    from shc.provenance import git_state

    state = git_state(None, exclude=["reports"])  # the code's commit; the pages being refreshed do not count
    commit = (state["commit"] or "")[:7] or "an unknown commit"
    dirty = " with uncommitted changes" if state["dirty"] else ""
    return f"{datetime.now(timezone.utc):%Y-%m-%d} by shc at {commit}{dirty}"


def refresh_findings(folder: str | os.PathLike, stamp: str | None = None) -> list[str]:
    """Rewrite each findings list of the pages in the preset folder ``folder`` whose sentences differ from what its
    record (``findings.json``) and published tables derive today; return the changed pages (relative paths).

    ``stamp`` ("<date> by shc at <commit>") defaults to today and the repository's commit. A list that already says
    what its data gives is left as it is; a finding that cannot be derived raises (the checker names it).
    """
    from shc._io import write_text
    from shc.findings import FINDINGS_FILE, derive, findings_html

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a report folder; give a preset's folder, e.g. reports/quick.")
    changed = []
    for record_file in sorted([*folder.glob(f"*/{FINDINGS_FILE}"), *folder.glob(f"*/*/{FINDINGS_FILE}")]):  # variants
        page_dir = record_file.parent
        records = {record["key"]: record for record in json.loads(record_file.read_text(encoding="utf-8"))["findings"]}
        for page in sorted(page_dir.glob("*-report.html")):
            text = page.read_text(encoding="utf-8")

            def replaced(match: re.Match) -> str:
                key = html.unescape(match["key"])
                record = records.get(key)
                if record is None:
                    return match[0]
                derived = derive(record["finding"], page_dir, record.get("tables") or {}, record.get("options") or {})
                shown = [" ".join(html.unescape(re.sub(r"<[^>]+>", "", item)).split())
                         for item in re.findall(r"<li>(.*?)</li>", match["items"], re.DOTALL)]
                if shown == [" ".join(sentence.split()) for sentence in derived]:
                    return match[0]  # what the checker reads is what its data gives: as built (or refreshed before)
                nonlocal stamp
                stamp = stamp or _stamp(folder)
                fresh = findings_html(key, derived).replace(
                    '">', f'" data-refreshed="{html.escape(stamp)}">', 1)
                return fresh + refresh_note(html.escape(stamp))

            new = _BLOCK.sub(replaced, text)
            if new != text:
                write_text(page, new)
                changed.append(page.relative_to(folder).as_posix())
    note_refreshed_pages_in_index(folder)
    return changed


_SUMMARY_TABLE = re.compile(r'<table class="shc-summary"(?: data-refreshed="[^"]*")?>.*?</table>'
                            r'(?:<p class="shc-refreshed">.*?</p>)?', re.DOTALL)


def refresh_summaries(folder: str | os.PathLike, stamp: str | None = None) -> list[str]:
    """Derive each page's best-method label (its ``summary.json``) again from the runs table it publishes
    (:func:`shc.reports.check_summary.derived_summary`) where today's words differ from the page's (a method's tag,
    a caveat the label gained later), and page 03's budgets where an older set gave one ``epochs`` for methods that
    trained different budgets (the entry becomes ``budgets``); return the changed pages. The new label goes into ``summary.json``, the
    page's summary table (marked ``data-refreshed``, with a line under it quoting the old label), the index line and
    the page's ``run.json`` (``summary_refreshed``). Means are never rewritten: one that its runs do not give is a
    defect the checker names, not a wording."""
    from shc._io import write_text
    from shc.reports.check_summary import Replaced, derived_summary
    from shc.reports.summary import SUMMARY_FILE, format_summary
    from shc.stats import summary_table

    from .published import INDEX_FILE

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a report folder; give a preset's folder, e.g. reports/quick.")
    index = folder / INDEX_FILE
    index_text = index.read_text(encoding="utf-8") if index.is_file() else None
    changed = []
    for summary_file in sorted([*folder.glob(f"*/{SUMMARY_FILE}"), *folder.glob(f"*/*/{SUMMARY_FILE}")]):
        page_dir = summary_file.parent
        summary = json.loads(summary_file.read_text(encoding="utf-8"))
        old = {key: value for key, value in derived_summary(page_dir).items()
               if isinstance(value, Replaced) or (isinstance(value, str) and summary.get(key) != value)}
        if not old:
            continue
        stamp = stamp or _stamp(folder)
        # an older set's entry for a grid whose methods trained different budgets becomes today's (Replaced)
        fresh = dict(_renamed(key, old.get(key, value)) for key, value in summary.items())
        record_file = page_dir / "run.json"
        record = json.loads(record_file.read_text(encoding="utf-8")) if record_file.is_file() else {}
        earlier = record.get("summary_refreshed") or {}  # entries derived again before: quote them as built
        built = dict(earlier.get("was") or {})
        built |= {key: summary[key] for key in summary if key in old and key not in built}  # in the page's order
        stamps = [*([earlier["stamp"]] if isinstance(earlier.get("stamp"), str) else earlier.get("stamps", [])),
                  stamp]
        quoted = "; ".join(f"{key}: {value}" for key, value in built.items())
        table = summary_table(fresh).replace('class="shc-summary">', f'class="shc-summary" data-refreshed='
                                             f'"{html.escape(" | ".join(stamps))}">', 1)
        why = ("where it spoke of runs that trained different budgets" if any(isinstance(value, Replaced)
                                                                                for value in old.values())
               else "after its wording changed")
        note = (f'<p class="shc-refreshed"><em>This label was derived again from this page\'s tables on '
                f"{html.escape('; '.join(stamps))}, {why}; as built it said: {html.escape(quoted)}. The rest of the "
                "page is as built.</em></p>")
        for page in sorted(page_dir.glob("*-report.html")):
            text = page.read_text(encoding="utf-8")
            write_text(page, _SUMMARY_TABLE.sub(lambda _: table + note, text, count=1))
        write_text(summary_file, json.dumps(fresh, indent=2) + "\n")
        if record:
            record["summary_refreshed"] = {"stamps": stamps, "was": built}
            write_text(record_file, json.dumps(record, indent=2) + "\n")
        if index_text is not None:
            index_text = index_text.replace(html.escape(format_summary(summary)), html.escape(format_summary(fresh)))
        changed.append(page_dir.relative_to(folder).as_posix())
    if changed and index_text is not None:
        write_text(index, index_text)
    note_refreshed_pages_in_index(folder)
    return changed


def _renamed(key: str, value: Any) -> tuple[str, Any]:
    """``(key, value)`` as today's summary states it: a :class:`shc.reports.check_summary.Replaced` entry under its
    new key."""
    from shc.reports.check_summary import Replaced

    return (value.key, value.value) if isinstance(value, Replaced) else (key, value)


_INDEX_NOTE = re.compile(r'\n?<p class="muted shc-(?:refreshed|corrected)-index">.*?</p>', re.DOTALL)
_STAMP = re.compile(r'data-refreshed="([^"]*)"')
_CORRECTED = re.compile(r'data-corrected="([^"]*)"')


def note_refreshed_pages_in_index(folder: str | os.PathLike) -> bool:
    """Make the preset's index say which of its pages carry findings lists derived again after the build (an audit:
    the index said "built from one clean commit" while four pages' lists came from a later one), and which carry
    paragraphs corrected after it (:mod:`shc.reports.corrections`). The lines go under the index's commit sentence
    and name the pages and the stamps; an index without such pages loses them. Returns whether the index changed."""
    from shc._io import write_text

    from .published import INDEX_FILE

    folder = Path(folder)
    index = folder / INDEX_FILE
    if not index.is_file():
        return False
    found: dict[str, tuple[list[str], set[str]]] = {"refreshed": ([], set()), "corrected": ([], set())}
    for page in sorted(folder.glob("*/*-report.html")) + sorted(folder.glob("*/*/*-report.html")):
        text = page.read_text(encoding="utf-8")
        for kind, pattern in (("refreshed", _STAMP), ("corrected", _CORRECTED)):
            stamps = {one for found in pattern.findall(text) for one in found.split(" | ")}  # a label's stamps
            if stamps:
                found[kind][0].append(page.parent.relative_to(folder).as_posix())
                found[kind][1].update(stamps)
    text = index.read_text(encoding="utf-8")
    new = _INDEX_NOTE.sub("", text)
    lines = []
    for kind, (pages, stamps) in found.items():
        if not pages:
            continue
        when = html.escape("; ".join(sorted(html.unescape(stamp) for stamp in stamps)))
        if kind == "refreshed":
            lines.append(f'<p class="muted shc-refreshed-index">The findings lists or summary labels of {len(pages)} '
                         f"page(s) ({html.escape(', '.join(pages))}) were derived again from their tables after the "
                         f"build ({when}), where their wording changed or they were found false; each page says "
                         "which under them, and the rest of every page is as built.</p>")
        else:
            lines.append(f'<p class="muted shc-corrected-index">Sentences of {len(pages)} page(s) '
                         f"({html.escape(', '.join(pages))}) that audits found false were corrected after the build "
                         f"({when}); each page says so under the paragraph, and the rest of every page is as "
                         "built.</p>")
    if lines:
        line = "\n".join(lines)
        commit = re.search(r'<p class="muted">[^<]*(?:<code>[^<]*</code>[^<]*)*commit[^\n]*?</p>', new)
        if commit is None:  # an index of an older layout: the line goes before its table
            new = new.replace("<table>", line + "\n<table>", 1)
        else:
            new = new[:commit.end()] + "\n" + line + new[commit.end():]
    if new == text:
        return False
    write_text(index, new)
    return True


def folders_command(argv: Sequence[str] | None, module: str, description: str,
                    rewrite: Callable[[Path], list[str]], done: str, counted: str) -> int:
    """The command line of a tool that rewrites committed preset folders (this module, :mod:`shc.reports.corrections`):
    ``python -m <module> FOLDER...`` runs ``rewrite`` on each, prints each page it changed with ``done`` and, on
    stderr, the count of pages ``counted``."""
    import argparse

    from shc.cli_common import run_cli

    def _main(arguments: Sequence[str] | None) -> int:
        parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
        parser.add_argument("folders", nargs="+", help="preset report folders, e.g. reports/standard-fine")
        for folder in parser.parse_args(arguments).folders:
            pages = rewrite(Path(folder))
            for page in pages:
                print(f"{folder}/{page}: {done}")
            print(f"{folder}: {len(pages)} page(s) {counted}", file=sys.stderr)
        return 0

    return run_cli(_main, argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.reports.refresh FOLDER...``: rewrite the findings lists and summary labels whose wording
    changed; print the pages."""
    return folders_command(argv, "shc.reports.refresh", main.__doc__.split(";")[0],
                           lambda folder: [*refresh_findings(folder), *refresh_summaries(folder)],
                           "derived again", "refreshed")


if __name__ == "__main__":
    raise SystemExit(main())
