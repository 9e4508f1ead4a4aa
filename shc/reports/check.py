"""Checking a preset's report folder as a reader receives it: what the pages display and the files around them.

``python -m shc.reports.check reports/quick`` lists every problem (exit status 1 when there is one). The
checks, each a *kind* of :class:`Problem`:

- ``repr``: a Python repr on a page (a dict ``{'a': 1}``, ``True``/``False``/``None`` as words, ``np.float64(``,
  ``PosixPath(``, a pandas ``dtype:`` footer);
- ``nan``: a ``NaN``/``nan``/``<NA>``/``None`` cell in a displayed table;
- ``bare-index``: a displayed table whose row labels are an unnamed 0, 1, ..., n-1 (a DataFrame's default index);
- ``truncated``: a table cell cut to "..." by pandas' display width;
- ``absolute-path``: an absolute path of the building machine in any published file (pages, CSVs, JSON);
- ``dead-link``: a link or image of a page, or a file named by a ``run.json``, that is missing from the published
  folder (files that ``.gitignore`` keeps out, :func:`is_published`, count as missing);
- ``alt-text``: an image without a meaningful alt text (none, empty, or nbconvert's placeholder);
- ``signed-zero``: a difference printed as ``-0.000`` or ``+0.000``, too few digits to show its sign;
- ``empty-section``: a section heading of a notebook page whose section shows no output (a table announced, nothing
  displayed), or a heading of any page followed by nothing;
- ``truncated-page``: a page that does not end as every page's template ends (``</html>``): cut short by an
  interrupted copy, a full disk or a hand edit;
- ``false-sentence``: a page's findings (the marked lists :func:`shc.findings.show` writes) differ from what the
  registered finding gives when it is run again on the published tables its ``findings.json`` names: a sentence
  edited by hand, or a table changed after the page was built (issue 38: no sentence is typed);
- ``unverifiable``: a marked list without its record in ``findings.json``, or a record whose tables are not
  published or whose finding cannot run on them;
- ``table-mismatch``: a displayed table that no published file beside its page holds (its ``tables/`` or
  ``summary.json``), cell by cell (:mod:`shc.reports.check_tables`): a cell typed or edited by hand, a file changed
  after the page was built, or a table shown without saving it;
- ``typed-budget``: typed prose (a Markdown cell) that states a budget or a count of runs ("80 epochs", "(epoch
  160)", "same epochs"): budgets differ between methods and are stated by computed lines;
- ``typed-comparison``: typed prose (a Markdown cell) that ranks methods ("SHC beats CSQ", "CRH is above every
  baseline"; :func:`typed_comparisons`): a ranking depends on the runs and is stated by computed findings;
- ``foreign-prose``: a phrase that describes another dataset's classes (``shc.data.foreign_prose``) on a page about
  a dataset (its ``run.json``'s ``dataset``);
- ``duplicate-data``: a figure's data file (``figures/*.csv``) with the bytes of another published data file of its
  page: the figure's numbers stored a second time beside the table that holds them (pass ``save_figure(...,
  data_file=...)``); two tables may coincide (on a small database mAP@1000 is mAP@ALL);
- ``empty``: a folder without a published page (nothing built, or only files a reader never receives);
- ``too-large``: the folder's published files together exceed :data:`PUBLISHED_BUDGET_BYTES` (4 MB a preset: the
  repository carries every preset's reports; :data:`LEGACY_BUDGET_BYTES` for a folder built before the assets were
  shared); the message names the five largest files.

Only *published* files are read (:func:`is_published` mirrors the repository's ``.gitignore``): the executed
notebooks, the with-code HTML, SVGs and kernel logs are regenerated locally and never committed.
"""

from __future__ import annotations

import gzip
import html
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from html.parser import HTMLParser
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from shc.reports.bundle import BUNDLE_FILE, bundle_problems
from shc.reports.check_tables import table_problems
from shc.reports.check_summary import index_summary_problems, summary_problems
from shc.reports.problem import Problem
from shc.reports.published import is_published, published_files

__all__ = ["LEGACY_BUDGET_BYTES", "PAGE_END", "PLACEHOLDER_ALT", "PUBLISHED_BUDGET_BYTES", "Problem", "check_page",
           "check_report_folder", "findings_problems", "is_published", "main", "prose_problems",
           "published_files"]

#: What a preset's committed reports may weigh in all (4 MB, decimal, issue 38; the MathJax bundle and the pages'
#: stylesheet are stored once for every preset, under ``reports/_assets``, and not counted): ``too-large`` past it.
PUBLISHED_BUDGET_BYTES = 4_000_000
#: The budget of a folder built before the assets were shared (it carries its own ``_assets``: MathJax, 2.3 MB):
#: such a folder is checked against this until it is regenerated.
LEGACY_BUDGET_BYTES = 20_000_000

#: How every page ends (nbconvert's template and the index's alike): a page that does not was cut short.
PAGE_END = "</html>"

#: The alt text nbconvert gives every output image.
PLACEHOLDER_ALT = "No description has been provided for this image"
_MEANINGLESS_ALT = {"", "image", "figure", "png", "svg", "plot", "img", PLACEHOLDER_ALT.lower()}

# ------------------------------------------------------------------------------------------------------------
# Absolute paths
# ------------------------------------------------------------------------------------------------------------
_ROOTS = ("home", "tmp", "work", "Users", "root", "var", "mnt", "opt", "private", "srv", "usr", "data", "scratch",
          "media", "run", "nfs", "gpfs", "lustre", "workspace", "builds")


def _path_pattern() -> re.Pattern:
    roots = set(_ROOTS)
    try:  # the top-level folders of this machine too (a path of the building machine starts with one)
        roots |= {name for name in os.listdir("/") if re.fullmatch(r"[\w.-]+", name)
                  and name not in {"bin", "sbin", "lib", "lib64", "etc", "dev", "proc", "sys", "boot"}}
    except OSError:
        pass
    alternatives = "|".join(sorted(map(re.escape, roots)))
    return re.compile(rf"(?<![\w.:/~%-])/(?:{alternatives})(?:/[\w.@+-]+)+|\b[A-Za-z]:\\\\?[\w.-]+\\")


_ABSOLUTE = _path_pattern()
_DATA_URI = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]+")


def _absolute_paths(text: str) -> list[str]:
    return sorted(set(_ABSOLUTE.findall(_DATA_URI.sub("", text))))


# ------------------------------------------------------------------------------------------------------------
# Pages
# ------------------------------------------------------------------------------------------------------------
_REPR_PATTERNS = (
    (re.compile(r"\{\s*'[^'\n]{0,80}'\s*:"), "a dict repr"),
    (re.compile(r"\{\s*\"[^\"\n]{0,80}\"\s*:"), "a dict repr"),
    (re.compile(r"\b(?:True|False)\b"), "True/False as a word"),
    (re.compile(r"(?:[:=(,\[]\s*|^\s*)None\b", re.MULTILINE), "None as a value"),
    (re.compile(r"\b(?:np|numpy)\.(?:float|int|bool|str)\w*\(|\barray\(\["), "a numpy repr"),
    (re.compile(r"\b(?:Posix|Windows)?Path\('"), "a path repr"),
    (re.compile(r"\bdtype: \w+"), "a pandas Series repr"),
    (re.compile(r"<\w+[\w.]* object at 0x[0-9a-f]+>"), "an object repr"),
    (re.compile(r"\bName: \w+, dtype"), "a pandas Series repr"),
)
_SIGNED_ZERO = re.compile(r"(?<![\w.])[+\-\u2212]0\.0+(?![\d])(?!e)")
_NAN_CELLS = {"nan", "NaN", "<NA>", "None", "NaT", "null"}
_HIDDEN = {"script", "style", "template", "head", "title"}


class _PageParser(HTMLParser):
    """Collects what a reader sees: text, headings and outputs in order, tables, images and links."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.events: list[tuple] = []  # ("heading", level, text) | ("output",) | ("content",)
        self.text: list[str] = []
        self.tables: list[dict] = []
        self.images: list[dict] = []
        self.links: list[str] = []
        self.notebook_page = False
        self._hidden = 0
        self._heading: list | None = None
        self._table_stack: list[dict] = []
        self._cell: list | None = None
        self._in_thead = False
        self._row: list | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        if tag in _HIDDEN:
            self._hidden += 1
            if tag == "script" and attributes.get("src"):
                self.links.append(attributes["src"])
            return
        if tag == "link" and attributes.get("href"):
            self.links.append(attributes["href"])
        if "jp-OutputArea-output" in classes:
            self.notebook_page = True
            self.events.append(("output",))
        if "jp-Cell" in classes:
            self.notebook_page = True
        if re.fullmatch(r"h[1-6]", tag):
            self._heading = [int(tag[1]), []]
        elif tag in ("p", "li", "pre", "table", "img", "ul", "ol", "blockquote", "figure", "dl"):
            self.events.append(("content",))
        if tag == "a" and attributes.get("href") and "anchor-link" not in classes:
            self.links.append(attributes["href"])
        if tag == "img":
            self.images.append({"src": attributes.get("src") or "", "alt": attributes.get("alt")})
            if attributes.get("src"):
                self.links.append(attributes["src"])
        if tag == "table":
            self._table_stack.append({"head": [], "body": []})
        elif tag == "thead":
            self._in_thead = True
        elif tag == "tr" and self._table_stack:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [tag, []]

    def handle_endtag(self, tag):
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
            return
        if re.fullmatch(r"h[1-6]", tag) and self._heading is not None:
            level, parts = self._heading
            text = re.sub(r"\s+", " ", "".join(parts)).replace("¶", "").strip()
            self.events.append(("heading", level, text))
            self._heading = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append((self._cell[0], re.sub(r"\s+", " ", "".join(self._cell[1])).strip()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table_stack:
            self._table_stack[-1]["head" if self._in_thead else "body"].append(self._row)
            self._row = None
        elif tag == "thead":
            self._in_thead = False
        elif tag == "table" and self._table_stack:
            self.tables.append(self._table_stack.pop())

    def handle_data(self, data):
        if self._hidden:
            return
        self.text.append(data)
        if self._heading is not None:
            self._heading[1].append(data)
        if self._cell is not None:
            self._cell[1].append(data)


def _is_bare_index(table: dict) -> bool:
    """Row labels 0..n-1 (n >= 2) in header cells, under an empty corner: a DataFrame's unnamed default index."""
    body = [row for row in table["body"] if row]
    if len(body) < 2 or not all(row[0][0] == "th" for row in body):
        return False
    labels = [row[0][1] for row in body]
    if labels != [str(i) for i in range(len(body))]:
        return False
    corners = [row[0][1] for row in table["head"] if row]
    return not any(corners)


def check_page(html_text: str, page: str = "page", *, exists=None) -> list[Problem]:
    """The problems of one HTML page (``exists(relative_url) -> bool`` checks its relative links)."""
    parser = _PageParser()
    parser.feed(html_text)
    problems: list[Problem] = []
    text = "".join(parser.text)
    for pattern, what in _REPR_PATTERNS:
        for match in sorted(set(pattern.findall(text)))[:5]:
            start = text.find(match)
            context = re.sub(r"\s+", " ", text[max(0, start - 60):start + len(match) + 40]).strip()
            problems.append(Problem(page, "repr", f"{what}: ...{context}..."))
    zeros = sorted(set(_SIGNED_ZERO.findall(text)))
    if zeros:
        problems.append(Problem(page, "signed-zero", f"{', '.join(zeros)}: too few digits to show the sign"))
    for number, table in enumerate(parser.tables, start=1):
        cells = [cell for row in table["body"] for kind, cell in row if kind == "td"]
        nan = sum(cell in _NAN_CELLS for cell in cells)
        if nan:
            problems.append(Problem(page, "nan", f"table {number} shows {nan} NaN/None cell(s)"))
        if _is_bare_index(table):
            problems.append(Problem(page, "bare-index", f"table {number} is labelled 0..{len(table['body']) - 1} "
                                                        "(an unnamed DataFrame index)"))
        cut = [cell for row in table["body"] + table["head"] for _, cell in row if cell.endswith(("...", "…"))]
        if cut:
            problems.append(Problem(page, "truncated", f"table {number} cuts {len(cut)} cell(s), e.g. {cut[0]!r}"))
    for image in parser.images:
        alt = (image["alt"] or "").strip()
        if alt.lower() in _MEANINGLESS_ALT or len(alt) < 8:
            shown = image["src"][:40] + ("..." if len(image["src"]) > 40 else "")
            problems.append(Problem(page, "alt-text", f"image {shown!r} has alt text {image['alt']!r}"))
    problems += _section_problems(parser, page)
    if exists is not None:
        for url in parser.links:
            target = _relative_target(url)
            if target is not None and not exists(target):
                problems.append(Problem(page, "dead-link", f"{url} does not exist in the published folder"))
    for path in _absolute_paths(html_text):
        problems.append(Problem(page, "absolute-path", path))
    return problems


def _section_problems(parser: _PageParser, page: str) -> list[Problem]:
    """On a notebook page a section must show an output before the next heading; on any page a heading must be
    followed by something."""
    problems = []
    events = parser.events
    for i, event in enumerate(events):
        if event[0] != "heading":
            continue
        following = []
        for later in events[i + 1:]:
            if later[0] == "heading":
                break
            following.append(later[0])
        wanted = "output" if parser.notebook_page else "content"
        if wanted not in following:
            what = "shows no output before the next heading" if following else "is followed by nothing"
            problems.append(Problem(page, "empty-section", f"heading {event[2]!r} {what}"))
    return problems


def _relative_target(url: str) -> str | None:
    """The file a relative link points at (None for external, in-page and data links)."""
    parts = urlsplit(url)
    if parts.scheme or parts.netloc or url.startswith(("#", "data:", "mailto:", "javascript:")) or not parts.path:
        return None
    return unquote(parts.path)


# ------------------------------------------------------------------------------------------------------------
# The folder
# ------------------------------------------------------------------------------------------------------------
def _read_text(path: Path) -> str | None:
    try:
        if path.suffix == ".xz":
            import lzma

            try:
                return lzma.decompress(path.read_bytes()).decode("utf-8")
            except lzma.LZMAError:
                return None
        if path.suffix == ".gz":
            return gzip.decompress(path.read_bytes()).decode("utf-8")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError, EOFError, gzip.BadGzipFile):
        return None


def _page_end_problem(text: str, page: str) -> list[Problem]:
    """A ``truncated-page`` problem when ``text`` does not end with :data:`PAGE_END`."""
    if text.rstrip().lower().endswith(PAGE_END):
        return []
    tail = " ".join(text[-40:].split())
    return [Problem(page, "truncated-page", f"ends with {tail!r}, not {PAGE_END}: the page was cut short; rebuild it "
                                            "(python -m shc.reports) or copy it again")]


# ------------------------------------------------------------------------------------------------------------
# Findings: every sentence a page states about its numbers, re-derived from the files beside it
# ------------------------------------------------------------------------------------------------------------
class _FindingsParser(HTMLParser):
    """The marked findings lists of a page (``<ul class="shc-findings" data-finding=KEY>``): key -> item texts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: dict[str, list[str]] = {}
        self._key: str | None = None
        self._item: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "ul" and "shc-findings" in (found.get("class") or "").split():
            self._key = found.get("data-finding") or ""
            self.blocks.setdefault(self._key, [])
        elif tag == "li" and self._key is not None:
            self._item = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._item is not None and self._key is not None:
            self.blocks[self._key].append(" ".join("".join(self._item).split()))
            self._item = None
        elif tag == "ul":
            self._key = None

    def handle_data(self, data: str) -> None:
        if self._item is not None:
            self._item.append(data)


def findings_problems(html_text: str, page: str, folder: str | os.PathLike) -> list[Problem]:
    """Re-derive every findings list of a page (``page``, relative to the preset folder ``folder``) from the
    record and the tables beside it, and compare with what the page shows (``false-sentence``, ``unverifiable``)."""
    from shc.findings import FINDINGS_FILE, derive

    parser = _FindingsParser()
    parser.feed(html_text)
    page_dir = Path(folder) / PurePosixPath(page).parent
    if not parser.blocks and not (page_dir / FINDINGS_FILE).is_file():
        return []  # a page without findings (the index), or one built before they were recorded
    try:
        records = {record["key"]: record
                   for record in json.loads((page_dir / FINDINGS_FILE).read_text(encoding="utf-8"))["findings"]}
    except (OSError, ValueError, KeyError, TypeError) as error:
        return [Problem(page, "unverifiable", f"its findings have no readable record ({FINDINGS_FILE}: "
                                              f"{type(error).__name__}); rebuild the page with python -m shc.reports")]
    problems = []
    for key, shown in parser.blocks.items():
        record = records.get(key)
        if record is None:
            problems.append(Problem(page, "unverifiable", f"findings {key!r} have no record in {FINDINGS_FILE}"))
            continue
        tables = record.get("tables") or {}
        missing = [name for name in tables.values() if name is not None and not (page_dir / name).is_file()]
        if missing:
            problems.append(Problem(page, "unverifiable", f"findings {key!r} are computed from {', '.join(missing)}, "
                                                          "which is not published"))
            continue
        try:
            derived = [" ".join(sentence.split())
                       for sentence in derive(record["finding"], page_dir, tables, record.get("options") or {})]
        except Exception as error:  # noqa: BLE001 - a finding that cannot run on its files is this page's problem
            problems.append(Problem(page, "unverifiable", f"findings {key!r} ({record.get('finding')}) cannot be "
                                                          f"derived from their files: {type(error).__name__}: {error}"))
            continue
        if shown != derived:
            problems.append(Problem(page, "false-sentence", _first_difference(key, shown, derived)))
    for key in sorted(set(records) - set(parser.blocks)):
        problems.append(Problem(page, "false-sentence", f"findings {key!r} are recorded in {FINDINGS_FILE} but the "
                                                        "page does not show them"))
    return problems


def _first_difference(key: str, shown: list[str], derived: list[str]) -> str:
    for index, (said, true) in enumerate(zip(shown, derived)):
        if said != true:
            return f"findings {key!r}, sentence {index + 1}: the page says {said!r}; its data gives {true!r}"
    if len(shown) > len(derived):
        return f"findings {key!r}: the page states {shown[len(derived)]!r}, which its data does not give"
    return f"findings {key!r}: the page omits {derived[len(shown)]!r}, which its data gives"


# ------------------------------------------------------------------------------------------------------------
# Typed prose: what a page's Markdown cells (typed by hand, not computed) may not say
# ------------------------------------------------------------------------------------------------------------
#: A budget or a count of runs stated in typed prose: budgets differ between methods and are stated by computed
#: lines (``shc.results.budget_phrase`` from each run's own config), so a typed one is wrong wherever they differ.
_TYPED_BUDGET = re.compile(r"\b\d+\s+(?:epochs?|seeds?|runs)\b|\(epoch \d+\)|\b(?:same|equal|identical)\s+"
                           r"(?:number of\s+)?(?:epochs|budgets?|training budgets?)\b", re.IGNORECASE)


#: A comparison between methods' results stated in typed prose ("SHC beats CSQ", "CRH is above every baseline"):
#: which method ranks above which depends on the preset, the code length and the seeds, so only a computed finding
#: (the paired interval: ``shc.findings``) may state one. A sentence about the paper ("the paper reports ...") is
#: a fixed fact about the paper and is not one.
_COMPARED = (r"(?:beats?|outperform(?:s|ed)?|exceeds?|surpass(?:es)?|trails?|ties(?:\s+with)?|tied\s+with|"
             r"loses\s+to|wins?\s+(?:over|against)|(?:is|are|was|were|stays?|ranks?|lies|falls?|comes?|ends?)"
             r"\s+(?:\w+\s+)?(?:above|below|under|level\s+with)|(?:higher|lower|better|worse)\s+than)")


def _typed_comparison(method_names: Iterable[str]) -> re.Pattern:
    names = "|".join(sorted((re.escape(name) for name in method_names), key=len, reverse=True))
    subject = rf"(?<![\w-])(?:{names}|(?:every|each|all|the|its|their)\s+(?:\w+\s+)?baselines?)(?![\w-])"
    return re.compile(rf"{subject}[^.;:!?]{{0,60}}?\b{_COMPARED}\b[^.;:!?]{{0,40}}?{subject}", re.IGNORECASE)


def typed_comparisons(text: str) -> list[str]:
    """The comparisons between methods typed into ``text`` (one string a sentence), leaving out sentences about the
    paper; the method names are the registry's (:func:`shc.methods.available_methods`)."""
    from shc.methods import available_methods

    pattern = _typed_comparison(available_methods())
    found = []
    for sentence in re.split(r"(?<=[.!?])\s+", " ".join(text.split())):
        if re.search(r"\bpaper(?:'s)?\b", sentence, re.IGNORECASE):
            continue
        found.extend(match.group(0) for match in pattern.finditer(sentence))
    return found


class _MarkdownCells(HTMLParser):
    """The text of a notebook page's Markdown cells (``div.jp-MarkdownCell``), one string a cell."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self._depth = 0  # open divs inside the current Markdown cell (0: outside one)
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag == "div" and self._depth:
            self._depth += 1
        elif tag == "div" and "jp-MarkdownCell" in (dict(attrs).get("class") or "").split():
            self._depth = 1
            self.cells.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag == "div" and self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth and not self._hidden:
            self.cells[-1] += data


def prose_problems(html_text: str, page: str, dataset: str | None) -> list[Problem]:
    """Typed prose a page may not hold: a budget or run count (``typed-budget``) in a Markdown cell, and, on a page
    about ``dataset``, a phrase that describes another dataset's classes (``foreign-prose``, anywhere on the page;
    the phrases are each dataset's ``prose`` in :data:`shc.data.DATASETS`)."""
    from shc.data import foreign_prose

    cells = _MarkdownCells()
    cells.feed(html_text)
    problems = []
    for cell in cells.cells:
        for found in dict.fromkeys(match.group(0) for match in _TYPED_BUDGET.finditer(cell)):
            problems.append(Problem(page, "typed-budget", f"typed prose states {found!r}; state budgets and run "
                                                          "counts from each run's config (results.budget_phrase)"))
        for found in dict.fromkeys(typed_comparisons(cell)):
            problems.append(Problem(page, "typed-comparison", f"typed prose compares methods: {found!r}; a ranking "
                                                              "depends on the runs, so state it as a computed "
                                                              "finding (shc.findings, the paired interval)"))
    if dataset is not None:
        parser = _PageParser()
        parser.feed(html_text)
        for phrase in foreign_prose(" ".join(" ".join(parser.text).split()), dataset):
            problems.append(Problem(page, "foreign-prose", f"{phrase!r} describes another dataset's classes, on a "
                                                           f"page about {dataset}"))
    return problems


def _run_dataset(record_file: Path) -> str | None:
    try:
        dataset = json.loads(record_file.read_text(encoding="utf-8"))["parameters"].get("dataset")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return dataset if isinstance(dataset, str) else None


def _page_dataset(page: Path, folder: Path) -> str | None:
    """The dataset a notebook page is about: its ``run.json``'s ``dataset`` parameter, else the one most pages of
    its preset folder name (a page built without the parameter belongs to its preset's testbed too); None when no
    page names one."""
    own = _run_dataset(page.parent / "run.json")
    if own is not None:
        return own
    named = [dataset for dataset in map(_run_dataset, sorted(folder.glob("*/run.json"))) if dataset is not None]
    return max(dict.fromkeys(named), key=named.count) if named else None


def _provenance_problems(index: str, folder: Path) -> Iterator[Problem]:
    """The index's sentence about the code behind the pages, re-derived from every page's ``run.json`` git state
    (:func:`shc.reports.index.commit_summary`): an index that claims one clean commit while a page names another,
    or a dirty tree, or whose sentence is missing, is a problem. Whether the set *should* be clean is the builder's
    rule (``--allow-dirty``); the checker makes sure the index tells the truth about it."""
    from shc.reports.index import _markdown_inline, commit_summary

    states = []
    for record_path in sorted(path for path in folder.rglob("run.json")  # as the index reads them: not hidden ones
                              if not any(part.startswith(".") for part in path.relative_to(folder).parts)):
        try:
            record = json.loads(record_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # named by the run.json check
        states.append((record.get("provenance") or {}).get("git") or {})
    sentence, _ = commit_summary(states)
    if sentence and _markdown_inline(sentence) not in index:
        said = re.search(r"(Every page was built from[^<]*<code>[^<]*</code>\.|These \d+ pages come from[^<]*"
                         r"(?:<code>[^<]*</code>[^<]*)*)", index)
        yield Problem("index.html", "provenance", f"the pages' run.json files say: {sentence!r}; the index says: "
                      f"{html.unescape(re.sub('<[^>]+>', '`', said.group(0))) if said else 'nothing'}; rebuild the "
                      "set from one commit (python -m shc.reports --preset NAME), which writes the index anew")


def _record_path_problems(record: dict, relative: str) -> Iterator[Problem]:
    """A run record's folders (``output_dir``, ``run_dir``, the command's arguments) must name no place of the
    building machine: no absolute or ``~`` path (any root, not only the usual ones), and, where its paths are
    relative to the repository, none that climbs out of it (``../../scratch/...``)."""
    values = [value for key, value in (record.get("parameters") or {}).items() if key in ("output_dir", "run_dir")]
    values += list((record.get("provenance") or {}).get("command") or [])
    for value in values:
        if not isinstance(value, str):
            continue
        outside = record.get("paths_relative_to") == "repository" and \
            os.path.normpath(value).split(os.sep)[0] == ".."
        if value.startswith(("/", "~")) or re.match(r"[A-Za-z]:\\", value) or outside:
            yield Problem(relative, "absolute-path", f"{value} names a folder of the machine that built the page; "
                          "rebuild it (a folder outside the repository is recorded as "
                          "'<outside the repository>/NAME')")


def _iter_problems(folder: Path) -> Iterator[Problem]:
    published = {path.relative_to(folder).as_posix() for path in published_files(folder)}
    if not any(name.endswith(".html") for name in published):
        yield Problem(".", "empty", "no published page (index.html, *-report.html): build the reports with "
                                    "python -m shc.reports --preset NAME --output FOLDER")
    sizes = {relative: (folder / relative).stat().st_size for relative in published}
    budget = LEGACY_BUDGET_BYTES if (folder / "_assets").is_dir() else PUBLISHED_BUDGET_BYTES
    if sum(sizes.values()) > budget:
        largest = ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in
                            sorted(sizes.items(), key=lambda item: -item[1])[:5])
        legacy = (" (the budget of a folder built before the assets were shared; regenerate it: python -m "
                  f"shc.reports --preset {folder.name})") if budget == LEGACY_BUDGET_BYTES else ""
        yield Problem(".", "too-large", f"published files weigh {sum(sizes.values()) / 1e6:.1f} MB, over the "
                      f"{budget / 1e6:.0f} MB a preset may commit{legacy}; largest: {largest}")

    yield from _duplicate_data(folder, published)
    for relative in sorted(published):
        path = folder / relative
        if relative.startswith("_assets/"):
            continue  # vendored MathJax, checked by shc.offline
        if relative == BUNDLE_FILE:
            yield from bundle_problems(folder)
        if path.suffix in (".png", ".jpg", ".jpeg", ".gif", ".zip", ".pt", ".npy", ".npz"):
            continue
        text = _read_text(path)
        if text is None:
            continue
        if path.suffix == ".html":
            page_dir = PurePosixPath(relative).parent

            def exists(target: str, page_dir=page_dir) -> bool:
                resolved = os.path.normpath((page_dir / target).as_posix())
                if resolved.startswith("../"):  # the assets every preset shares (reports/_assets), or a sibling
                    shared = os.path.normpath(folder.parent.joinpath(resolved[3:]))
                    return (not resolved.startswith("../../") and os.path.isfile(shared)
                            and is_published(resolved[3:], shared_root=True))
                return resolved in published or (resolved == "." or any(p.startswith(resolved + "/")
                                                                        for p in published))
            if relative == "index.html":
                yield from _provenance_problems(text, folder)
                yield from index_summary_problems(text, folder, published)
            yield from _page_end_problem(text, relative)
            yield from check_page(text, relative, exists=exists)
            yield from findings_problems(text, relative, folder)
            if relative != "index.html":  # the index's table is built from the pages' records, not a notebook's
                yield from table_problems(text, relative, folder)
            yield from prose_problems(text, relative, _page_dataset(folder / relative, folder))
            continue
        for found in _absolute_paths(text):
            yield Problem(relative, "absolute-path", found)
        if path.name == "summary.json":
            yield from summary_problems(path.parent, relative)
        if path.name == "run.json":
            try:
                record = json.loads(text)
            except ValueError:
                yield Problem(relative, "dead-link", "run.json is not valid JSON")
                continue
            yield from _record_path_problems(record, relative)
            record_dir = PurePosixPath(relative).parent
            for key, name in (record.get("files") or {}).items():
                names = name if isinstance(name, list) else [name]
                for one in names:
                    target = os.path.normpath((record_dir / str(one)).as_posix())
                    if target not in published:
                        yield Problem(relative, "dead-link", f"files[{key!r}] names {one}, which is not published")


_DATA_SUFFIXES = (".csv", ".csv.xz", ".csv.gz")  # shc.plots.DATA_SUFFIXES (xz since 2026-11-29)


def _duplicate_data(folder: Path, published: set[str]) -> Iterator[Problem]:
    """``duplicate-data``: within one page's folder (``00_center_geometry/``, or a variant's such as
    ``00_center_geometry/bits-16/``), every figure-data file whose bytes equal another published data file's (tables
    are read first, so the figure's copy is the one named). Two variants of a notebook are two pages: a figure that
    does not depend on the varied parameter (page 00's GV bound at ``bits-16`` and ``bits-32``) is each page's own."""
    by_page: dict[tuple[tuple[str, ...], bytes], str] = {}
    for relative in sorted(published, key=lambda name: ("/figures/" in name, name)):  # tables first
        if not relative.endswith(_DATA_SUFFIXES):
            continue
        parts = PurePosixPath(relative).parts[:-1]
        page = next((parts[:i] for i, part in enumerate(parts) if part in ("figures", "tables")), parts)
        key = (page, (folder / relative).read_bytes())
        if key in by_page and "/figures/" in f"/{relative}":  # two tables may coincide (mAP@1000 = mAP@ALL)
            yield Problem(relative, "duplicate-data", f"the same bytes as {by_page[key]}: store a figure's numbers "
                                                      "once (save_figure(..., data_file=<the saved table>))")
        else:
            by_page.setdefault(key, relative)


def check_report_folder(folder: str | os.PathLike) -> list[Problem]:
    """Every problem of a preset's report folder (``reports/<preset>``), as a reader of the repository gets it."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is not a report folder; build one with python -m shc.reports.")
    return list(_iter_problems(folder))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m shc.reports.check FOLDER...``: print every problem; exit status 1 when there is one (2 for a
    folder that is not there)."""
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m shc.reports.check", description=main.__doc__.split(";")[0])
    parser.add_argument("folders", nargs="+", help="preset report folders, e.g. reports/quick, or Markdown documents "
                                                   "whose quoted results are re-derived (README.md; "
                                                   "shc.reports.check_markdown)")
    args = parser.parse_args(argv)
    found = 0
    for folder in args.folders:
        if str(folder).endswith(".md"):
            from shc.reports.check_markdown import markdown_problems

            problems = markdown_problems(folder)
        else:
            problems = check_report_folder(folder)
        for problem in problems:
            print(problem if str(folder).endswith(".md") else f"{folder}/{problem}")
        print(f"{folder}: {len(problems)} problem(s)", file=sys.stderr)
        found += len(problems)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
