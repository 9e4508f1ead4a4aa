"""Checking a Markdown document's quoted results against the commands it names (issue 38: no number is typed).

A results section of the README (or of a page of ``docs/``) shows the output of ``python -m shc.results`` commands: a
fenced ``bash`` block names them, and what follows quotes what they print. :func:`markdown_problems` runs every such
command again and compares, for each block:

- the Markdown tables after the block (up to the next fence, heading, or bold paragraph opener that the commands
  do not print): their body rows must be the body rows the commands print, all and in order (``false-sentence``);
- every list item or quotation introduced by a line that ends with ``(verbatim):``: each must be a line the commands
  print (``false-sentence``), wrapped lines joined;
- the lines of a ``text`` fence that follows the block after one paragraph saying they are verbatim: each must be a
  line the commands print (``false-sentence``); a block's items come in its commands' order;
- the lines between the markers ``shc.results.page.OUTPUT_START`` and ``OUTPUT_END`` after the block (docs/results.md,
  which ``python -m shc.results.page`` writes): they must be exactly the lines the commands print, in order, but for
  the date the output says it read its file on (``false-sentence`` names the first line that differs);
- a block whose output is quoted but whose commands read run folders (no ``--from-csv``) cannot be re-derived from a
  clone (``unverifiable``): quote the commands on a committed results file (``results/*.csv``). A historical record
  whose runs are gone says so in a ``<!-- record: why -->`` comment on the line before its fence: the checker then
  skips it, and refuses the comment (``record-misused``) on a block it can check (every command on ``--from-csv``)
  or without a reason.

Every relative link ``[text](target)`` outside code must reach a file of the clone, and its ``#anchor`` (in a Markdown
target, or the document itself) a heading of that file, by GitHub's rule for heading anchors (:func:`heading_anchors`):
``dead-link`` otherwise.

In the document's ``## Results`` section (the README's), prose may not type a measured number: a decimal with two
or more places outside a quoted table, quotation, list of verbatim output, code span or block is ``typed-number``
(state it through a quoted command's output, or point to the page that prints it).

``python -m shc.reports.check README.md`` runs it (the checker takes Markdown files beside report folders).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from shc.reports.problem import Problem

__all__ = ["heading_anchors", "link_problems", "markdown_problems", "quoted_outputs", "typed_numbers"]

_FENCE = re.compile(r"^```(\w*)\s*$")
_HEADING = re.compile(r"^#{1,6}\s")


def _repository_root(path: Path) -> Path:
    for folder in (path.resolve().parent, *path.resolve().parents):
        if (folder / "pyproject.toml").is_file() or (folder / ".git").exists():
            return folder
    return path.resolve().parent


def _commands(block: list[str]) -> list[list[str]]:
    joined = re.sub(r"\\\n\s*", " ", "\n".join(block))
    return [shlex.split(line.split("#", 1)[0])[3:] for line in joined.splitlines()
            if line.startswith("python -m shc.results")]


def quoted_outputs(text: str) -> list[dict]:
    """Each ``bash`` block that names ``python -m shc.results`` commands, with the lines that follow it up to the next
    fence or heading: ``{"line": first line number, "commands": [argv...], "section": [lines]}``."""
    lines = text.splitlines()
    found, index = [], 0
    while index < len(lines):
        fence = _FENCE.match(lines[index])
        if not fence:
            index += 1
            continue
        start = index + 1
        end = next((i for i in range(start, len(lines)) if _FENCE.match(lines[i])), len(lines))
        commands = _commands(lines[start:end]) if fence.group(1) == "bash" else []
        index = end + 1
        if not commands:
            continue
        section_end = next((i for i in range(index, len(lines)) if _FENCE.match(lines[i]) or _HEADING.match(lines[i])),
                           len(lines))
        found.append({"line": start, "commands": commands, "section": lines[index:section_end],
                      "output": _marked_output(lines, index), "record": _record(lines, start - 1),
                      "quote": _fenced_quote(lines, index, section_end)})
    return found


def _fenced_quote(lines: list[str], start: int, fence: int) -> list[str] | None:
    """The lines of the ``text`` fence at ``fence`` when the commands' block (ending before ``start``) is followed by
    one paragraph that says they are verbatim and then the fence: a block's output quoted in a fence rather than as a
    list (None otherwise; a fence further on, after other prose, quotes something else)."""
    match = _FENCE.match(lines[fence]) if fence < len(lines) else None
    between = [i for i in range(start, fence) if lines[i].strip()]
    if not match or match.group(1) != "text" or not between or between[-1] - between[0] != len(between) - 1 \
            or "verbatim" not in " ".join(lines[i] for i in between):
        return None
    end = next((i for i in range(fence + 1, len(lines)) if _FENCE.match(lines[i])), len(lines))
    return [line for line in lines[fence + 1:end] if line.strip()]


_RECORD = re.compile(r"^<!--\s*record:(.*?)-->$")


def _record(lines: list[str], fence: int) -> str | None:
    """The reason of a ``<!-- record: why -->`` comment on the last non-blank line before the fence at ``fence``
    (None: no such comment; "" a comment without a reason)."""
    before = next((i for i in range(fence - 1, -1, -1) if lines[i].strip()), None)
    match = _RECORD.match(lines[before].strip()) if before is not None else None
    return match.group(1).strip() if match else None


def _marked_output(lines: list[str], start: int) -> list[str] | None:
    """The lines between :data:`~shc.results.page.OUTPUT_START` and ``OUTPUT_END`` when the start marker is the
    first non-blank line from ``start`` on (None: no marked output; an unclosed region runs to the end)."""
    from shc.results.page import OUTPUT_END, OUTPUT_START

    first = next((i for i in range(start, len(lines)) if lines[i].strip()), None)
    if first is None or lines[first].strip() != OUTPUT_START:
        return None
    end = next((i for i in range(first + 1, len(lines)) if lines[i].strip() == OUTPUT_END), len(lines))
    return lines[first + 1:end]


def _output_difference(quoted: list[str], printed: list[str]) -> str | None:
    """Where a marked output differs from what the commands print (None: it is what they print)."""
    from shc.results.page import comparable

    def trimmed(lines: list[str]) -> list[str]:
        lines = [comparable(line) for line in lines]
        while lines and not lines[0]:
            lines.pop(0)
        while lines and not lines[-1]:
            lines.pop()
        return lines

    quoted, printed = trimmed(quoted), trimmed(printed)
    for number, (shown, said) in enumerate(zip(quoted, printed), 1):
        if shown != said:
            return f"output line {number} is {shown!r}, the commands print {said!r}"
    if len(quoted) != len(printed):
        return f"the output shows {len(quoted)} line(s), the commands print {len(printed)}"
    return None


def _quoted(section: list[str], printed: set[str] | None = None) -> tuple[list[str], list[str], list[str]]:
    """The table rows, the verbatim items and the table headers of a block's section, which ends at a bold paragraph
    opener (``**``) that the commands do not print (``printed``: the stripped printed lines; None: the whole
    section)."""
    end = next((i for i, line in enumerate(section)
                if printed is not None and line.startswith("**") and line.strip() not in printed), len(section))
    headers, rows = _table_parts(section[:end])
    return rows, _verbatim_items(section[:end]), headers


def _table_body(lines: list[str]) -> list[str]:
    """The body rows of the Markdown tables in ``lines`` (a row after a ``|---|`` separator), stripped."""
    return _table_parts(lines)[1]


def _table_parts(lines: list[str]) -> tuple[list[str], list[str]]:
    """``(headers, body rows)`` of the Markdown tables in ``lines``, stripped: a header is the row above a ``|---|``
    separator (a header swapped by hand would put every number under another method)."""
    headers, rows, in_body, previous = [], [], False, ""
    for line in (line.strip() for line in lines):
        if not line.startswith("|"):
            in_body = False
        elif re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
            in_body = True
            if previous.startswith("|"):
                headers.append(previous)
        elif in_body:
            rows.append(line)
        previous = line
    return headers, rows


def _verbatim_items(section: list[str]) -> list[str]:
    """List items and quotations that follow a line ending with ``(verbatim):``, wrapped lines joined."""
    items: list[str] = []
    for index, line in enumerate(section):
        if not line.rstrip().endswith("(verbatim):"):
            continue
        current: list[str] | None = None
        for following in section[index + 1:]:
            stripped = following.strip()
            if not stripped and not items and current is None:
                continue  # the blank line after the introduction
            if stripped.startswith("- ") or (stripped.startswith("> ") and current is None):
                if current:
                    items.append(" ".join(current))
                current = [stripped[2:]]
            elif stripped.startswith(">"):  # a quotation goes on, or a blank quoted line ends an item
                body = stripped[1:].strip()
                if body and current is not None:
                    current.append(body)
                elif not body and current:
                    items.append(" ".join(current))
                    current = []
            elif stripped and current is not None and following.startswith("  "):  # a wrapped list item
                current.append(stripped)
            else:
                break
        if current:
            items.append(" ".join(current))
    return [" ".join(item.split()) for item in items]


def _run(argv: list[str], root: Path) -> list[str]:
    from shc.results.page import printed_lines

    return printed_lines(argv, root)


_MEASURED = re.compile(r"(?<![\w.])\d+\.\d{2,}(?!\w|\.\d)")


def typed_numbers(text: str, heading: str = "Results") -> list[tuple[int, str]]:
    """(line number, number) of each measured number typed into the prose of section ``## {heading}``: a decimal with
    two or more places, outside code blocks and spans, tables, quotations and lists of verbatim output."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"## {heading}"), None)
    if start is None:
        return []
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^#{1,2}\s", lines[i])), len(lines))
    found, in_code, verbatim = [], False, False
    for number, line in enumerate(lines[start + 1:end], start + 2):
        stripped = line.strip()
        if _FENCE.match(stripped):
            in_code = not in_code
            continue
        if stripped.endswith("(verbatim):"):
            verbatim = True
        elif verbatim and stripped and not stripped.startswith(("- ", ">")) and not line.startswith("  "):
            verbatim = False
        if in_code or stripped.startswith(("|", ">")) or (verbatim and stripped.startswith("- ")):
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        found += [(number, match.group(0)) for match in _MEASURED.finditer(prose)]
    return found


_COUNTED = re.compile(r"(?<![\w.,])(\d+) (epochs|seeds)\b")


def _results_prose(text: str, heading: str = "Results") -> tuple[list[tuple[int, str]], list[str]]:
    """The prose lines of section ``## {heading}`` (as :func:`typed_numbers` reads them: no code, tables, quotations
    or verbatim lists), and the lines of its fenced code blocks."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.strip() == f"## {heading}"), None)
    if start is None:
        return [], []
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"^#{1,2}\s", lines[i])), len(lines))
    prose, code, in_code, verbatim = [], [], False, False
    for number, line in enumerate(lines[start + 1:end], start + 2):
        stripped = line.strip()
        if _FENCE.match(stripped):
            in_code = not in_code
            continue
        if in_code:
            code.append(line)
            continue
        if stripped.endswith("(verbatim):"):
            verbatim = True
        elif verbatim and stripped and not stripped.startswith(("- ", ">")) and not line.startswith("  "):
            verbatim = False
        if not (stripped.startswith(("|", ">")) or (verbatim and stripped.startswith("- "))):
            prose.append((number, re.sub(r"`[^`]*`", "", line)))
    return prose, code


def typed_counts(text: str, root: Path, heading: str = "Results") -> list[tuple[int, str]]:
    """(line number, phrase) of each whole count typed into the prose of section ``## {heading}`` that its results
    files do not hold: "N epochs" where no run of the files the section's commands read (``--from-csv``) trained N
    epochs, "N seeds" where no method and code length of them has N seeds. A budget or a seed count changed by hand
    ("80 epochs" -> "60 epochs") passed, as only decimals were caught (an audit, 2026-12-02)."""
    import pandas as pd

    prose, code = _results_prose(text, heading)
    files = sorted({name for argv in _commands(code) if "--from-csv" in argv
                    for name in argv[argv.index("--from-csv") + 1:] if name.endswith(".csv")} if code else set())
    epochs, seeds = set(), set()
    for name in files:
        try:
            frame = pd.read_csv(root / name)
        except (OSError, ValueError):
            continue  # a missing or damaged file: the command's own check names it
        if "epochs" in frame:
            epochs.update(int(value) for value in frame["epochs"].dropna())
        if {"method", "bits", "seed"} <= set(frame.columns):
            seeds.update(int(count) for count in frame.groupby(["method", "bits"])["seed"].nunique())
    if not files:
        return []
    allowed = {"epochs": epochs, "seeds": seeds}
    return [(number, match.group(0)) for number, line in prose for match in _COUNTED.finditer(line)
            if int(match.group(1)) not in allowed[match.group(2)]]


_LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)\)")


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside fenced code blocks, with the parentheses inside code spans dropped (so
    a span such as `` `[x](y)` `` is not read as a link)."""
    found, in_code = [], False
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            found.append((number, re.sub(r"`[^`]*`", lambda span: span.group(0).replace("(", "").replace(")", ""),
                                         line)))
    return found


def heading_anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown document (outside fenced code): the heading's text without
    its Markdown (code-span backticks, link targets, emphasis), lower-cased, every character but letters, digits,
    ``_``, ``-`` and spaces dropped, spaces turned into ``-``; a repeated anchor gets ``-1``, ``-2``, ... ."""
    anchors, seen = set(), {}
    for _, line in _prose_lines(text):
        if not _HEADING.match(line):
            continue
        title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", line.lstrip("#").strip())
        slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        anchors.add(slug if count == 0 else f"{slug}-{count}")
        seen[slug] = count + 1
    return anchors


def link_problems(path: str | os.PathLike, name: str | None = None) -> list[Problem]:
    """``dead-link`` for each relative link of a Markdown document whose file is not there, or whose ``#anchor`` is no
    heading of its Markdown target (module docstring). Web links (``http:``, ``https:``, ``mailto:``) are not
    followed: this runs offline."""
    path = Path(path)
    name = name or str(path)
    text = path.read_text(encoding="utf-8")
    anchors: dict[Path, set[str]] = {}
    problems = []
    for number, line in _prose_lines(text):
        for match in _LINK.finditer(line):
            target = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, anchor = target.partition("#")
            resolved = (path.parent / file_part).resolve() if file_part else path.resolve()
            if not resolved.exists():
                problems.append(Problem(name, "dead-link", f"line {number} links {target}, and {file_part} is not "
                                                           "there: fix the path (relative to this document)"))
                continue
            if anchor and resolved.suffix == ".md":
                if resolved not in anchors:
                    anchors[resolved] = heading_anchors(resolved.read_text(encoding="utf-8"))
                if anchor not in anchors[resolved]:
                    problems.append(Problem(name, "dead-link", f"line {number} links {target}, and "
                                                               f"{resolved.name} has no heading with the anchor "
                                                               f"#{anchor}: link one of its headings"))
    return problems


def markdown_problems(path: str | os.PathLike) -> list[Problem]:
    """Every quoted output of a Markdown document that its commands no longer print (module docstring)."""
    name = str(path)  # as the caller named it (README.md, docs/results.md)
    path = Path(path)
    root = _repository_root(path)
    problems = []
    for block in quoted_outputs(path.read_text(encoding="utf-8")):
        if not any(_quoted(block["section"])[:2]) and block["output"] is None and block["quote"] is None:
            continue  # commands named, nothing of their output quoted
        where = f"the commands of line {block['line']}"
        if block["record"] is not None:
            if all("--from-csv" in argv for argv in block["commands"]):
                problems.append(Problem(name, "record-misused", f"{where} read committed results files, so their "
                                                                "output can be checked: drop the record comment"))
                continue
            if not block["record"]:
                problems.append(Problem(name, "record-misused", f"{where}: the record comment gives no reason; say "
                                                                "why the runs cannot be re-derived"))
            continue  # a historical record: its runs are gone, and the document says so
        if not all("--from-csv" in argv for argv in block["commands"]):
            problems.append(Problem(name, "unverifiable", f"{where} read run folders (no --from-csv), so what the "
                                                          "document quotes of them cannot be re-derived from a clone"))
            continue
        try:
            outputs = [_run(argv, root) for argv in block["commands"]]
        except Exception as error:  # noqa: BLE001 - a command that fails here is this document's problem
            problems.append(Problem(name, "unverifiable", f"{where} fail: {type(error).__name__}: {error}"))
            continue
        printed = [line for output in outputs for line in output]
        if block["output"] is not None:
            difference = _output_difference(block["output"], printed)
            if difference:
                problems.append(Problem(name, "false-sentence", f"{where}: {difference}"))
            continue
        table, verbatim, shown_headers = _quoted(block["section"], {line.strip() for line in printed})
        rows = _table_body(printed)
        printed_headers = set(_table_parts(printed)[0])
        for header in shown_headers if table else []:  # several commands' tables may share one shown header
            if header not in printed_headers:
                problems.append(Problem(name, "false-sentence", f"{where}: the table header {header!r} is not what "
                                                                "the commands print"))
        if table and table != rows:
            wrong = next((shown for shown in table if shown not in rows), None)
            detail = (f"the table row {wrong!r} is not printed" if wrong else
                      f"the tables show {len(table)} row(s), the commands print {len(rows)} (order or number differ)")
            problems.append(Problem(name, "false-sentence", f"{where}: {detail}"))
        by_command = [{" ".join(line.removeprefix("- ").split()) for line in output} for output in outputs]
        said = set().union(*by_command)
        quoted = [" ".join(line.removeprefix("- ").split()) for line in block["quote"] or ()]
        last = 0  # the command whose output the item before was quoted from: commands are quoted in their order
        for item in verbatim + quoted:
            if item not in said:
                problems.append(Problem(name, "false-sentence", f"{where} do not print {item!r}"))
            elif not any(item in lines for lines in by_command[last:]):
                problems.append(Problem(name, "false-sentence", f"{where}: {item!r} is printed by a command before "
                                                                "the one of the item quoted above it: quote each "
                                                                "command's lines in the commands' order (two "
                                                                "commands' items swapped?)"))
            else:
                last = next(index for index in range(last, len(by_command)) if item in by_command[index])
    problems += link_problems(path, name)
    for number, value in typed_numbers(path.read_text(encoding="utf-8")):
        problems.append(Problem(name, "typed-number", f"line {number} types {value} into the results section: quote "
                                                      "the command that prints it, or link the page that does"))
    for number, value in typed_counts(path.read_text(encoding="utf-8"), root):
        problems.append(Problem(name, "typed-number", f"line {number} says {value!r}, which no run of the results "
                                                      "files its section's commands read has: correct it from the files"))
    return problems
