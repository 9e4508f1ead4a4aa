"""The index page of a preset's reports: one row per report with its status and headline numbers."""

from __future__ import annotations

import html
import json
import os
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import quote

from shc._io import write_text
from shc.reports.export import plain_title
from shc.reports.execute import BUNDLE_FILE, FAILED_DIR, FAILURE_FILE, RECORD_FILE, describe_error, read_record, smoke_notice
from shc.reports.plan import RUNNER_PARAMETERS
from shc.reports.published import INDEX_FILE
from shc.reports.summary import format_summary, read_summary

__all__ = ["INDEX_FILE", "commit_summary", "write_index"]  # INDEX_FILE: from shc.reports.published

_INDEX_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 80rem;
       padding: 0 1rem; color: #222; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .45rem .6rem; border-bottom: 1px solid #ddd; }
th { background: #f4f4f4; }
.ok { color: #1a7f37; font-weight: 600; } .failed { color: #cf222e; font-weight: 600; }
.error { color: #cf222e; font-family: ui-monospace, monospace; font-size: .85em; white-space: pre-wrap; }
.params, .muted { color: #666; font-size: .85em; }
.notice { background: #fff4d6; border-left: 4px solid #d4a72c; padding: .6rem .8rem; }
.files a { display: inline-block; margin-right: .5rem; font-size: .85em; }
code { font-size: .9em; }
"""


def write_index(preset_dir: str | os.PathLike) -> Path:
    """(Re)write ``<preset_dir>/index.html`` from every ``run.json`` record below it.

    Each row links the reading version, the version with code and the executed notebook, shows
    the status (failed rows name the error and the cell, and link the partial notebook), the
    headline numbers of ``summary.json``, the parameters and the execution time.
    """
    preset_dir = Path(preset_dir)
    records = []
    for record_path in sorted(preset_dir.rglob(RECORD_FILE)):
        if any(part.startswith(".") for part in record_path.relative_to(preset_dir).parts):
            continue  # a page being built (.NAME.building-PID) or an old one being swapped out: not a page
        record = read_record(record_path)
        if record:
            records.append((record_path.parent.relative_to(preset_dir), record))
    rows = "\n".join(_index_row(preset_dir, folder, record, read_summary(preset_dir / folder))
                     for folder, record in records)
    failed = sum(record.get("status") == "failed" for _, record in records)
    notice = smoke_notice(preset_dir.name) if _is_preset(preset_dir.name) else None
    notice_html = (f'<p class="notice">{_markdown_inline(notice)}</p>' if notice else "")
    bundle = (f'<p>Every table and run record of these reports in one file: '
              f'<a href="{BUNDLE_FILE}">{BUNDLE_FILE}</a> (the numbers of each figure are linked beside it).</p>'
              if (preset_dir / BUNDLE_FILE).is_file() else "")
    commits, clean = commit_summary([(record.get("provenance") or {}).get("git") or {} for _, record in records])
    commit_html = f'<p class="{"muted" if clean else "notice"}">{_markdown_inline(commits)}</p>' if commits else ""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    status_line = f"{len(records)} reports, {failed} failed" if records else "no reports yet"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>shc reports: {html.escape(preset_dir.name)}</title>
<style>{_INDEX_STYLE}</style></head>
<body>
<h1>shc reports: preset <code>{html.escape(preset_dir.name)}</code></h1>
{notice_html}
<p class="muted">{status_line}; index written {stamp}.</p>
{commit_html}
{bundle}
<table>
<thead><tr><th>report</th><th>status</th><th>headline numbers</th><th>time</th><th>tables and figure data</th></tr></thead>
<tbody>
{rows}
</tbody></table>
</body></html>
"""
    written = write_text(preset_dir / INDEX_FILE, page)
    from shc.reports.refresh import note_refreshed_pages_in_index  # here: refresh reads the index's names

    note_refreshed_pages_in_index(preset_dir)  # the pages' re-derived and corrected notes survive every batch
    return written


def commit_summary(states: list[dict]) -> tuple[str, bool]:
    """What the index says of the code behind its pages (issue 38), from each page's ``run.json`` git state
    (:func:`shc.provenance.git_state`): ``(sentence, clean)``, clean when every page names one commit and none was
    built from a tree with uncommitted changes; ``("", True)`` without pages."""
    if not states:
        return "", True
    commits = sorted({state["commit"] for state in states if state.get("commit")})
    dirty = sum(state.get("dirty") is True for state in states)
    unknown = sum(not state.get("commit") for state in states)
    unread = sum(bool(state.get("commit")) and not isinstance(state.get("dirty"), bool) for state in states)
    if len(commits) == 1 and not dirty and not unknown and not unread:
        return f"Every page was built from one clean commit, `{commits[0][:12]}`.", True
    parts = [f"These {len(states)} pages come from {len(commits)} commit{'s' if len(commits) != 1 else ''}"
             + (f" ({', '.join(f'`{commit[:12]}`' for commit in commits)})" if commits else "")]
    if dirty:
        parts.append(f"{dirty} of them from a tree with uncommitted changes")
    if unread:  # git status failed or timed out: the tree may have had changes
        parts.append(f"{unread} of them from a tree whose changes were not read")
    if unknown:
        parts.append(f"{unknown} record no commit")
    return "; ".join(parts) + ": rebuild them from one clean commit (`python -m shc.reports --preset <preset>`).", False


def _index_row(preset_dir: Path, folder: Path, record: dict, summary: dict | None) -> str:
    def link(key: str, text: str) -> str:  # only files that are there (a published copy may omit some)
        name = record.get("files", {}).get(key) or record.get("local_files", {}).get(key)
        if not name or not (preset_dir / folder / name).exists():
            return ""
        return f'<a href="{html.escape(quote((folder / name).as_posix()))}">{text}</a>'

    def links(*keys_and_texts: tuple[str, str]) -> str:
        return " · ".join(filter(None, (link(key, text) for key, text in keys_and_texts)))

    title = html.escape(plain_title(record.get("title") or record.get("notebook", str(folder))))
    name = html.escape(folder.as_posix())
    parameters = {k: v for k, v in (record.get("parameters") or {}).items() if k not in RUNNER_PARAMETERS}
    shown = html.escape(", ".join(f"{k}={json.dumps(v)}" for k, v in parameters.items()))
    heading = link("report", title) or title
    status = record.get("status", "unknown")
    status_cell = f'<span class="{html.escape(status)}">{html.escape(status)}</span>'
    error = record.get("error")
    if error:
        first_line = f"\n{error['cell_source']}" if error.get("cell_source") else ""
        detail = describe_error(error, full_message=True) + first_line
        status_cell += f'<div class="error">{html.escape(detail)}</div>'
        partial = links(("report", "report"), ("notebook", "ipynb"), ("kernel_log", "kernel log"))
        if partial:
            status_cell += f'<div class="muted">partial run: {partial}</div>'
    failure = read_record(preset_dir / folder / FAILURE_FILE)
    if failure:  # a later run failed; the last good report above stays
        kept = [name for name in (f"{FAILED_DIR}/{record.get('notebook')}.ipynb",
                                  f"{FAILED_DIR}/{record.get('notebook')}.html")
                if (preset_dir / folder / name).is_file()]
        kept_links = " · ".join(f'<a href="{html.escape(quote((folder / name).as_posix()))}">{html.escape(name)}</a>'
                                for name in kept)
        status_cell += (f'<div class="error">last run ({html.escape(str(failure.get("finished", "")))}) failed: '
                        f'{html.escape(describe_error(failure.get("error")))}</div>'
                        f'<div class="muted">the report shown is the last good one; failed run: {kept_links}</div>')
    files = _data_links(preset_dir, folder, record)
    return (
        f"<tr><td>{heading}<div class='muted'><code>{name}</code></div><div class='params'>{shown}</div></td>"
        f"<td>{status_cell}</td><td>{html.escape(format_summary(summary))}</td>"
        f"<td>{record.get('seconds', 0):.1f} s</td><td class='files'>{files}</td></tr>"
    )


def _data_links(preset_dir: Path, folder: Path, record: dict) -> str:
    """Links to the report's run record, tables and figure data: those that are published and there, each named by
    its path in the page's folder (``tables/gv_bound.csv`` and ``figures/gv_bound.csv`` are two files)."""
    from shc.reports.published import is_published

    files = record.get("files") or {}
    names = [RECORD_FILE, *files.get("tables", []), *files.get("figure_data", [])]
    shown = []
    for name in names:
        relative = folder / name
        if is_published(relative) and (preset_dir / relative).is_file():
            shown.append(f'<a href="{html.escape(quote(relative.as_posix()))}">{html.escape(name)}</a>')
    return "".join(shown)


def _is_preset(name: str) -> bool:
    from shc.presets import PRESETS

    return name in PRESETS.names()


def _markdown_inline(text: str) -> str:
    """``**bold**`` and ```code``` of a one-line Markdown notice as HTML (the rest escaped)."""
    import re

    escaped = html.escape(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", escaped)


