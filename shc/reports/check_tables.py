"""Every table a page displays, against the files the page publishes (issue 38: no number is typed).

A notebook saves each table it shows (:func:`shc.plots.save_table`, under the page's ``tables/``) or publishes it as
its headline numbers (:func:`shc.reports.publish_summary`, ``summary.json``). :func:`table_problems` reads every
``<table>`` of a page (row and column spans expanded) and looks for a published file that holds it: the table's
body rows are the file's last rows (a file's first rows are its column headers, one per level), and each displayed
column is one column of the file, cell by cell. A cell agrees with the file's when:

- the texts are equal (a :class:`shc.results.RankedTable`'s "mean ± std" cells are saved as shown);
- both are numbers that agree to the places either prints: ``0.6360`` shows ``0.636``, ``410.334338`` shows the
  file's 8 significant digits ``410.33434``; a sign shown in front (``+0.016``) is the number's own;
- the file's value is shown as :func:`shc.results.readable_cell` shows it: ``yes``/``no`` for ``True``/``False``,
  ``n/a`` (or ``-`` in a Markdown table) for an empty cell, ``key = value`` for a dict;
- the shown cell is an interval ``A [L, H]`` whose ``A`` is the file's cell and whose ``L`` and ``H`` are cells of
  the same row of the file (the paired differences of page 06's side-by-side table).

A column of row labels that reads 1, 2, ..., n is :func:`shc.results.readable_table`'s rank, not data, and is
skipped. A table that no published file holds is a ``table-mismatch`` problem: a cell typed or edited by hand, a
file changed after the page was built, or a table shown without saving it. The message names the nearest file and
its first cell that differs. What this does not compare: column headers (a displayed column is matched by its
values, so two columns' names swapped pass) and the rows of a file a page does not show (a page may show the last
rows of a longer file).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import os
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath

from shc.reports.problem import Problem
from shc.reports.published import is_published

__all__ = ["displayed_tables", "same_cell", "table_problems"]

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_INTERVAL = re.compile(r"(?P<value>\S+) \[(?P<low>\S+), (?P<high>\S+)\]")
_EMPTY_SHOWN = {"", "n/a", "-", "\u2014"}  # readable_cell, comparison_markdown
_EMPTY_STORED = {"", "nan", "NaN", "None", "<NA>"}


class _TableParser(HTMLParser):
    """The tables of a page: per table, its rows as (section, [(tag, rowspan, colspan, text)])."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[list[tuple[str, list[list]]]] = []
        self._open: list[dict] = []  # nested tables: the innermost is filled

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._open.append({"rows": [], "section": "body", "cell": None})
            return
        if not self._open:
            return
        table = self._open[-1]
        if tag in ("thead", "tbody", "tfoot"):
            table["section"] = "head" if tag == "thead" else "body"
        elif tag == "tr":
            table["rows"].append((table["section"], []))
        elif tag in ("td", "th") and table["rows"]:
            found = dict(attrs)
            table["cell"] = [tag, _span(found.get("rowspan")), _span(found.get("colspan")), []]
            table["rows"][-1][1].append(table["cell"])

    def handle_endtag(self, tag: str) -> None:
        if not self._open:
            return
        if tag in ("td", "th"):
            self._open[-1]["cell"] = None
        elif tag == "table":
            self.tables.append(self._open.pop()["rows"])

    def handle_data(self, data: str) -> None:
        if self._open and self._open[-1]["cell"] is not None:
            self._open[-1]["cell"][3].append(data)


def _span(value: str | None) -> int:
    try:
        return max(1, int(value or 1))
    except ValueError:
        return 1


def _expanded(rows: list[tuple[str, list[list]]]) -> tuple[list[list[str]], list[list[tuple[str, str]]]]:
    """Header rows (texts) and body rows ((tag, text) per column), row and column spans repeated where they
    reach."""
    head: list[list[str]] = []
    body: list[list[tuple[str, str]]] = []
    carried: dict[int, tuple[str, str, int]] = {}  # column -> (tag, text, rows still covered)
    for section, cells in rows:
        row: list[tuple[str, str]] = []
        queue = list(cells)
        column = 0
        while queue or column in carried:
            if column in carried:
                tag, text, left = carried.pop(column)
                row.append((tag, text))
                if left > 1:
                    carried[column] = (tag, text, left - 1)
                column += 1
                continue
            tag, rowspan, colspan, parts = queue.pop(0)
            text = " ".join("".join(parts).split())
            for _ in range(colspan):
                row.append((tag, text))
                if rowspan > 1:
                    carried[column] = (tag, text, rowspan - 1)
                column += 1
        if section == "head":
            head.append([text for _, text in row])
        else:
            body.append(row)
    return head, body


def displayed_tables(html_text: str) -> list[tuple[list[list[str]], list[list[tuple[str, str]]]]]:
    """Every table of a page as (header rows, body rows), spans expanded; a body cell is (``td``/``th``, text)."""
    parser = _TableParser()
    parser.feed(html_text)
    return [_expanded(rows) for rows in parser.tables]


def _half_unit(text: str) -> float:
    """Half a unit in the last place a number is printed with (``0.636``: 0.0005; ``1.23e-05``: 0.005e-05)."""
    mantissa, _, exponent = text.lower().partition("e")
    places = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - places)


def _same_number(shown: str, stored: str) -> bool:
    if not (_NUMBER.fullmatch(shown) and _NUMBER.fullmatch(stored)):
        return False
    return abs(float(shown) - float(stored)) <= _half_unit(shown) + _half_unit(stored) + 1e-12 * abs(float(stored))


def same_cell(shown: str, stored: str, row: Sequence[str] = ()) -> bool:
    """Whether a displayed cell ``shown`` shows the file's cell ``stored`` (``row``: the file's row, for the
    bounds of an interval); the rules are the module's."""
    shown = " ".join(shown.replace("\u2212", "-").split())
    stored = stored.strip()
    if shown == stored or _same_number(shown, stored):
        return True
    if shown in _EMPTY_SHOWN and stored in _EMPTY_STORED:
        return True
    if stored in ("True", "False"):
        return shown == ("yes" if stored == "True" else "no")
    if stored[:1] in ("{", "[", "("):
        from shc.results.tables import readable_cell

        try:
            value = ast.literal_eval(stored)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return False
        return shown == readable_cell(value)
    interval = _INTERVAL.fullmatch(shown)
    if interval and (interval["value"] == stored or _same_number(interval["value"], stored)):
        return all(any(_same_number(interval[bound], cell.strip()) for cell in row) for bound in ("low", "high"))
    return False


def _rows_of(path: Path) -> list[list[str]] | None:
    from shc.plots.style import read_table_text

    try:
        return list(csv.reader(io.StringIO(read_table_text(path))))
    except Exception:  # noqa: BLE001 - an unreadable file (OSError, lzma, csv, decoding) holds no table
        return None


def _summary_rows(path: Path) -> list[list[str]] | None:
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(summary, dict):
        return None
    return [[str(name), str(value)] for name, value in summary.items()]  # a bool as True/False: shown yes/no


def _sources(page_dir: Path, folder: Path) -> dict[str, list[list[str]]]:
    """The published files a page's tables may come from: its ``tables/`` and its ``summary.json``."""
    from shc.plots.style import DATA_SUFFIXES
    from shc.reports.summary import SUMMARY_FILE

    sources: dict[str, list[list[str]]] = {}
    tables = page_dir / "tables"
    candidates = sorted(tables.iterdir()) if tables.is_dir() else []
    for path in candidates:
        if path.is_file() and path.name.endswith(DATA_SUFFIXES) and is_published(path.relative_to(folder)):
            rows = _rows_of(path)
            if rows is not None:
                sources[f"tables/{path.name}"] = rows
    summary = page_dir / SUMMARY_FILE
    if summary.is_file():
        rows = _summary_rows(summary)
        if rows is not None:
            sources[SUMMARY_FILE] = rows
    return sources


def _is_rank(column: list[tuple[str, str]]) -> bool:
    return all(tag == "th" and text == str(index + 1) for index, (tag, text) in enumerate(column))


def _compare(body: list[list[tuple[str, str]]], rows: list[list[str]]) -> tuple[int, str | None]:
    """(columns of ``body`` the file ``rows`` holds, the first difference) with the body aligned to the file's last
    rows; (-1, why) where the file has fewer rows than the table."""
    if len(rows) < len(body):
        return -1, f"it has {len(rows)} rows, the table {len(body)}"
    tail = rows[len(rows) - len(body):]
    width = max((len(row) for row in tail), default=0)
    tail = [row + [""] * (width - len(row)) for row in tail]
    columns = max(len(row) for row in body)
    held, first = 0, None
    for j in range(columns):
        column = [row[j] if j < len(row) else ("td", "") for row in body]
        if _is_rank(column):
            held += 1
            continue
        candidates = [k for k in range(width)
                      if all(same_cell(text, tail[i][k], tail[i]) for i, (_, text) in enumerate(column))]
        if candidates:
            held += 1
        elif first is None:
            first = _first_miss(column, tail, width)
    return held, first


def _first_miss(column: list[tuple[str, str]], tail: list[list[str]], width: int) -> str:
    """The file's column nearest to a displayed one (most cells agreeing) and its first cell that differs."""
    best_k = max(range(width), key=lambda k: sum(same_cell(text, tail[i][k], tail[i])
                                                 for i, (_, text) in enumerate(column))) if width else None
    if best_k is None:
        return "the file is empty"
    for i, (_, text) in enumerate(column):
        if not same_cell(text, tail[i][best_k], tail[i]):
            return f"row {i + 1}: the page shows {text!r}, the file's nearest column holds {tail[i][best_k]!r}"
    return "no difference"  # not reached: the column did not match


def table_problems(html_text: str, page: str, folder: str | os.PathLike) -> list[Problem]:
    """``table-mismatch`` for each table of ``page`` (relative to the preset folder ``folder``) that no published
    file beside it holds; see the module's rules."""
    folder = Path(folder)
    page_dir = folder / PurePosixPath(page).parent
    tables = [table for table in displayed_tables(html_text) if table[1]]
    if not tables:
        return []
    sources = _sources(page_dir, folder)
    problems = []
    for number, (_, body) in enumerate(tables, start=1):
        columns = max(len(row) for row in body)
        results = {name: _compare(body, rows) for name, rows in sources.items()}
        if any(held == columns for held, _ in results.values()):
            continue
        first_row = " | ".join(text for _, text in body[0])[:80]
        if not results:
            detail = "the page publishes no table file (tables/*.csv) nor summary.json to hold it"
        else:
            name, (held, why) = max(results.items(), key=lambda item: item[1][0])
            detail = (f"nearest: {name} ({why})" if held < 0 else
                      f"nearest: {name}, holding {held} of its {columns} columns; {why}")
        problems.append(Problem(page, "table-mismatch", f"table {number} (first row: {first_row!r}) is in no "
                                f"published file: {detail}. Save what a page shows (shc.plots.save_table) and "
                                "rebuild it with python -m shc.reports"))
    return problems
