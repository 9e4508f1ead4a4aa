"""Correct the hand-written sentences that audits found false on pages built before the notebooks were fixed (issue 38).

A report page's prose comes from its notebook's Markdown cells, so a false sentence fixed in a notebook stays on every
page built before the fix; a page whose runs are still on the machine is rebuilt (``python -m shc.reports``), one
whose runs are gone keeps its figures and tables. :func:`correct_pages` replaces, on such pages, each sentence of
:data:`CORRECTIONS` (found by its words, whatever the line breaks) with the notebook's text of today, and where that
text points to a computed finding the old build did not show, adds the finding from the page's own published table
(recorded in ``findings.json``, so the checker re-derives it). A correction may also fix a cell of a published table
(:attr:`Correction.table`): the file and the table the page shows change together, so the checker, which compares
them, still finds the one in the other. Under each corrected paragraph (list, heading or table) the page says what
changed, when and by which commit; the preset's index names the pages (:func:`shc.reports.refresh
.note_refreshed_pages_in_index`).

``python -m shc.reports.corrections reports/NAME...`` runs it on committed preset folders.
"""

from __future__ import annotations

import csv
import gzip
import html
import io
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from shc.reports.corrected_sentences import CORRECTIONS, Correction

__all__ = ["CORRECTIONS", "Correction", "SHOWN_TABLES", "correct_pages", "correction_note", "publish_shown_tables"]


_NOTE = re.compile(r'<p class="shc-corrected".*?</p>', re.DOTALL)


def correction_note(stamp: str, old: str, why: str, table: str | None = None) -> str:
    """The line a corrected paragraph (or, with ``table``, the file name of a corrected table) carries under it; the
    old words are quoted as text (their tags, e.g. ``<code>``, left out)."""
    said = html.escape(html.unescape(" ".join(re.sub(r"<[^>]+>", "", old).split())))
    what = f"a cell of the table above and of its file {html.escape(table)}" if table else "the text as built"
    return (f'<p class="shc-corrected" data-corrected="{html.escape(stamp)}"><em>Corrected on '
            f"{html.escape(stamp)}: {what} said “{said}”, which {html.escape(why)}; the rest of the page is as "
            "built.</em></p>")


_BLOCK_END = re.compile(r"</(p|li|h[1-6]|td|th)>")


def _block_end(text: str, position: int) -> tuple[int, str]:
    """Where the note of words ending at ``position`` goes (after their paragraph, list, heading or table) and the
    tag that closed their block (``p``, ``li``, ``h1``, ...)."""
    found = _BLOCK_END.search(text, position)
    if found is None:
        return position, ""
    tag = found.group(1)
    closing = {"li": r"</[ou]l>", "td": "</table>", "th": "</table>"}.get(tag)
    end = re.compile(closing).search(text, found.end()) if closing else None
    return (end or found).end(), tag


def _write_table_text(path: Path, text: str) -> None:
    """``text`` written back as the table file ``path`` was: plain, xz or gzip (without a time or name, so the same
    table gives the same bytes)."""
    from shc._io import write_bytes
    from shc.plots.style import compress_table_bytes

    data = text.encode("utf-8")
    if path.name.endswith(".xz"):
        data = compress_table_bytes(data)
    elif path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=9, mtime=0)
    write_bytes(path, data)


def _csv_text(rows: Sequence[Sequence[str]]) -> str:
    out = io.StringIO(newline="")
    csv.writer(out, lineterminator="\n").writerows(rows)  # as pandas writes a table (shc.plots.save_table)
    return out.getvalue()


def _correct_table_file(page_dir: Path, correction: Correction, stamp: str) -> str:
    """Replace the correction's cell in its published table file (whatever its compression) and record the file in
    the page's ``run.json`` (``corrected_after_build``); return the file's name in the page folder. A file already
    corrected is left as it is; one that holds neither the old cell nor the new one is not the page's table."""
    from shc._io import write_text
    from shc.plots.style import read_table_text

    name = _published(page_dir, correction.table)
    path = page_dir / name
    text = read_table_text(path)
    rows = list(csv.reader(io.StringIO(text, newline="")))
    if _csv_text(rows) != text:
        raise ValueError(f"{page_dir.name}: {name} is not written as shc.plots.save_table writes a table; its cell "
                         "cannot be replaced without rewriting other cells.")
    old, new = (html.unescape(" ".join(words.split())) for words in (correction.old, correction.new))
    fixed = [[new if " ".join(cell.split()) == old else cell for cell in row] for row in rows]
    if fixed == rows:
        if not any(cell == new for row in rows for cell in row):
            raise ValueError(f"{page_dir.name}: {name} holds neither the cell the page shows nor its correction; "
                             "the page's table is not this file's.")
        return name
    _write_table_text(path, _csv_text(fixed))
    record_file = page_dir / "run.json"
    if record_file.is_file():
        record = json.loads(record_file.read_text(encoding="utf-8"))
        record.setdefault("corrected_after_build", {})[name] = stamp
        write_text(record_file, json.dumps(record, indent=2) + "\n")  # as shc.reports.execute writes it
    return name


def _retitle(text: str, folder: Path, page: Path, correction: Correction) -> str:
    """``text`` with the corrected words of its ``<h1>`` corrected in its ``<title>`` too, and the same in the page's
    ``run.json`` title and in the index's link to the page (the index writer's text for that title)."""
    from urllib.parse import quote

    from shc._io import write_text

    from .export import plain_title
    from .published import INDEX_FILE

    def fix(words: str) -> str:
        return correction.pattern.sub(lambda _: html.unescape(correction.new), words, count=1)

    title = re.search(r"<title>(.*?)</title>", text, re.DOTALL)
    if title is not None and correction.pattern.search(html.unescape(title.group(1))):
        fixed = html.escape(fix(html.unescape(title.group(1))), quote=False)
        text = text[:title.start(1)] + fixed + text[title.end(1):]
    record_file = page.parent / "run.json"
    record = json.loads(record_file.read_text(encoding="utf-8")) if record_file.is_file() else {}
    old_title = record.get("title")
    if not isinstance(old_title, str) or fix(old_title) == old_title:
        return text
    record["title"] = fix(old_title)
    write_text(record_file, json.dumps(record, indent=2) + "\n")  # as shc.reports.execute writes it
    index = folder / INDEX_FILE
    if index.is_file():
        link = f'<a href="{html.escape(quote(page.relative_to(folder).as_posix()))}">'
        old_link, new_link = (link + html.escape(plain_title(words)) + "</a>" for words in (old_title, record["title"]))
        write_text(index, index.read_text(encoding="utf-8").replace(old_link, new_link))
    return text


def _correct(text: str, folder: Path, page: Path, correction: Correction, stamp: str) -> str | None:
    """``text`` with the correction's old words replaced (outside the head and the notes) and the note under their
    block; None where the page does not show them."""
    body = max(text.find("<body"), 0)  # the head's <title> is corrected with its heading, not on its own
    notes = [note.span() for note in _NOTE.finditer(text)]  # a note quotes the old words: not a match
    match = next((found for found in correction.pattern.finditer(text, body)
                  if not any(start <= found.start() < end for start, end in notes)), None)
    if match is None:
        return None
    table = _correct_table_file(page.parent, correction, stamp) if correction.table else None
    new = match.group(1) + correction.new + match.group(2) if table else correction.new
    close, tag = _block_end(text, match.end(1) if table else match.end())  # a cell's match ends with its </td>
    note = correction_note(stamp, correction.old, correction.why, table)
    text = text[:match.start()] + new + text[match.end():close] + note + text[close:]
    if tag == "h1":
        text = _retitle(text, folder, page, correction)
    if correction.finding is not None:
        text = _insert_finding(text, page.parent, correction, stamp)
    return text


def _published(page_dir: Path, name: str) -> str:
    """``name`` as the page published it: a table is compressed past a size (``shc.plots.compressed``), as gzip in
    sets built before 2026-11-29 and as xz since, so a page may hold ``x.csv``, ``x.csv.gz`` or ``x.csv.xz``."""
    plain = name.removesuffix(".gz").removesuffix(".xz")
    for candidate in (name, plain, plain + ".xz", plain + ".gz"):
        if (page_dir / candidate).is_file():
            return candidate
    raise FileNotFoundError(f"{page_dir.name}: none of {plain}, {plain}.xz or {plain}.gz is published beside the "
                            "page; the finding cannot be derived from it (rebuild the page with python -m "
                            "shc.reports).")


def _insert_finding(text: str, page_dir: Path, correction: Correction, stamp: str) -> str:
    """``text`` with the correction's finding after the output of its cell, and the record in ``findings.json``."""
    from shc._io import write_json
    from shc.findings import FINDINGS_FILE, _key, derive, findings_html

    start = text.find(f'id="cell-id={correction.after_cell}"')
    if start < 0:
        raise ValueError(f"{page_dir.name}: no cell {correction.after_cell} to put the {correction.finding!r} "
                         "finding under; this page's layout is not the one the correction was written for.")
    end = text.find('<div class="jp-Cell ', start + 1)
    end = len(text) if end < 0 else end
    tables = {arg: _published(page_dir, name) for arg, name in correction.tables.items()}
    key = _key(correction.finding, tables, {})
    block = findings_html(key, derive(correction.finding, page_dir, tables, {}))
    block = block.replace('">', f'" data-refreshed="{html.escape(stamp)}">', 1) + (
        f'<p class="shc-refreshed"><em>This list was added on {html.escape(stamp)} from this page\'s tables, with the '
        "correction above; the rest of the page is as built.</em></p>")
    record_file = page_dir / FINDINGS_FILE
    records = json.loads(record_file.read_text(encoding="utf-8"))["findings"] if record_file.is_file() else []
    records = [record for record in records if record["key"] != key]
    records.append({"key": key, "finding": correction.finding, "tables": tables, "options": {}})
    write_json(record_file, {"findings": records})
    return text[:end] + block + "\n" + text[end:]


def _example_distances(parameters: Mapping[str, Any]):
    """Page 00's worked example: the Hamming distances of the first five random centers the page drew."""
    from shc import centers

    drawn = centers.generate_centers("random", int(parameters.get("num_classes", 100)),
                                     int(parameters.get("bits", 32)), seed=int(parameters.get("seed", 0)))
    return centers.distance_table(drawn, count=5)


#: Tables that pages built before 2026-12-02 showed without saving them: page -> (file stem, how to compute it from
#: the page's recorded parameters, its ``run.json``'s ``parameters``, with the notebook's defaults where a parameter
#: was not given). :func:`publish_shown_tables` publishes each beside its page; the checker
#: (:mod:`shc.reports.check_tables`) then compares what the page shows with it, so a recomputation that differs from
#: the page is a ``table-mismatch``, not a silent replacement.
SHOWN_TABLES: Mapping[str, tuple[tuple[str, Callable[[Mapping[str, Any]], Any]], ...]] = {
    "00_center_geometry": (("example_distances", _example_distances),),
}


def publish_shown_tables(folder: str | os.PathLike,
                         shown: Mapping[str, Sequence[tuple[str, Callable]]] = SHOWN_TABLES) -> list[str]:
    """Publish, beside each page of the preset folder ``folder`` built before it was saved, every table of
    ``shown`` the page displays without its file, and name it in the page's ``run.json`` (``files.tables``, and under
    ``published_after_build`` with the stamp: when and by which commit); return the pages (relative paths). A page
    that has the file is left as it is, so a second run changes nothing."""
    from shc._io import write_json
    from shc.plots import save_table

    from .refresh import _stamp

    folder = Path(folder)
    changed = []
    for page_dir in sorted(path for path in folder.iterdir() if path.name in shown and path.is_dir()):
        record_file = page_dir / "run.json"
        if not record_file.is_file():
            continue  # no recorded parameters to compute from: the checker names the table
        record = json.loads(record_file.read_text(encoding="utf-8"))
        for stem, compute in shown[page_dir.name]:
            if any((page_dir / "tables").glob(f"{stem}.csv*")):
                continue
            saved = save_table(compute(record.get("parameters") or {}), page_dir / "tables" / stem)
            files = record.setdefault("files", {})
            name = saved.relative_to(page_dir).as_posix()
            files["tables"] = sorted({*files.get("tables", []), name})
            record.setdefault("published_after_build", {})[name] = _stamp(folder)
            write_json(record_file, record)
            changed.append(f"{page_dir.name}/{page_dir.name}-report.html")
    return changed


def correct_pages(folder: str | os.PathLike, stamp: str | None = None,
                  corrections: Sequence[Correction] = CORRECTIONS) -> list[str]:
    """Replace each false sentence of ``corrections`` on the pages of the preset folder ``folder`` and note it under
    its paragraph; return the changed pages (relative paths). A page without such a sentence is left as it is, so a
    second run changes nothing. ``stamp`` ("<date> by shc at <commit>") defaults to today and the code's commit."""
    from shc._io import write_text

    from .refresh import _stamp, note_refreshed_pages_in_index

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a report folder; give a preset's folder, e.g. reports/standard.")
    changed = publish_shown_tables(folder)
    for page in sorted([*folder.glob("*/*-report.html"), *folder.glob("*/*/*-report.html")]):  # variants too
        text = original = page.read_text(encoding="utf-8")
        notebook = page.relative_to(folder).parts[0]
        for correction in (c for c in corrections if c.page == notebook and c.applies(page.parent)):
            if not correction.pattern.search(text):
                continue
            stamp = stamp or _stamp(folder)
            text = _correct(text, folder, page, correction, stamp) or text
        if text != original:
            write_text(page, text)
            changed.append(page.relative_to(folder).as_posix())
    note_refreshed_pages_in_index(folder)
    return sorted(set(changed))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.reports.corrections FOLDER...``: correct the false sentences of pages built before their fix;
    print the pages."""
    from .refresh import folders_command

    return folders_command(argv, "shc.reports.corrections", main.__doc__.split(";")[0], correct_pages,
                           "false sentences corrected or shown tables published", "corrected")


if __name__ == "__main__":
    raise SystemExit(main())
