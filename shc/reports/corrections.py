"""Correct the hand-written sentences that audits found false on pages built before the notebooks were fixed (issue 38).

A report page's prose comes from its notebook's Markdown cells, so a false sentence fixed in a notebook stays on every
page built before the fix; a page whose runs are still on the machine is rebuilt (``python -m shc.reports``), one
whose runs are gone keeps its figures and tables. :func:`correct_pages` replaces, on such pages, each sentence of
:data:`CORRECTIONS` (found by its words, whatever the line breaks) with the notebook's text of today, and where that
text points to a computed finding the old build did not show, adds the finding from the page's own published table
(recorded in ``findings.json``, so the checker re-derives it). Under each corrected paragraph the page says what
changed, when and by which commit; the preset's index names the pages (:func:`shc.reports.refresh
.note_refreshed_pages_in_index`).

``python -m shc.reports.corrections reports/NAME...`` runs it on committed preset folders.
"""

from __future__ import annotations

import html
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CORRECTIONS", "Correction", "SHOWN_TABLES", "correct_pages", "correction_note", "publish_shown_tables"]


@dataclass(frozen=True)
class Correction:
    """A sentence of an earlier notebook that an audit found false, and what replaces it on the pages built before.

    ``old`` and ``new`` are the text as a page shows it (the rendered Markdown: TeX stays as written, code spans are
    ``<code>``); ``old`` is matched word by word, whatever the line breaks. ``why`` ends the note under the paragraph
    ("... which <why>"). Where ``new`` points to a computed finding, ``finding`` names it with its ``tables`` (paths
    in the page folder) and ``after_cell``, the notebook cell id whose output it follows."""

    page: str
    old: str
    new: str
    why: str
    finding: str | None = None
    tables: Mapping[str, str] = field(default_factory=dict)
    after_cell: str | None = None

    def __post_init__(self) -> None:
        if (self.finding is None) != (self.after_cell is None) or (self.finding is not None and not self.tables):
            raise ValueError(f"correction of {self.page}: a finding needs its tables and the cell it follows, and "
                             "those need a finding.")

    @property
    def pattern(self) -> re.Pattern:
        return re.compile(r"\s+".join(re.escape(word) for word in self.old.split()))


#: The false sentences of earlier notebooks (the audits of 2026-11-29, docs/reports.md), in the words the pages show.
CORRECTIONS: tuple[Correction, ...] = (
    Correction(
        "01_similarity",
        old="Every row is centred (Eq. 8-9), so roughly half of each row is negative: \"less similar than this "
            "class's average\".",
        new="Every row is centred on its mean (Eq. 8-9) before the matrix is symmetrised, so a negative entry reads "
            "\"less similar than these classes' average\"; a class's few confusable classes pull its mean up, so most "
            "of a row can be negative (the line under the heatmap gives the share).",
        why="the share of negative entries in the heatmap's own data contradicts",
        finding="similarity-signs", tables={"S": "figures/similarity_heatmap.csv.gz"}, after_cell="0d8e9dab"),
    Correction(
        "00_center_geometry",
        old="Distance-only centers give a flat, noisy $\\mathbf{H}\\mathbf{H}^\\top/q$ (cosines near 0 everywhere);",
        new="Distance-only centers give an $\\mathbf{H}\\mathbf{H}^\\top/q$ without the blocks of $\\mathbf{S}$ (its "
            "cosines do not follow the classes; CSQ's negated Hadamard rows sit at $-1$ from their own row);",
        why="the page's own Gram matrices contradict (CSQ's negated rows sit at -1)"),
    Correction(
        "02_hash_centers",
        old="the semantic-only ablation reaches a comparable $S_{loss}$ but gives up",
        new="the semantic-only ablation is free to fit $\\mathbf{S}$ more closely (compare its $S_{loss}$ with SHC's "
            "in the table) but gives up",
        why="the page's table contradicts (its S_loss is well below SHC's)"),
    Correction(
        "02_hash_centers",
        old="\\tfrac{1}{q}\\mathbf{H}^\\top\\mathbf{H}\\|_F^2",
        new="\\tfrac{1}{q}\\mathbf{H}\\mathbf{H}^\\top\\|_F^2",
        why="wrote the paper's H^T H (its centers are columns) for this page's centers, which are rows"),
    Correction(
        "03_train_hashing",
        old="the losses of different methods are on scales up to 100x apart (CRH's cross-entropy against CSQ's BCE), "
            "so the panel compares their shapes",
        new="the losses of different methods are on different scales (each method's loss has its own terms and "
            "weights), so the panel compares their shapes",
        why="states a ratio the page does not show"),
    Correction(
        "06_baselines",
        old="Center-Reassigned Hashing (AAAI 2026, by the SHC authors' group)",
        new="Center-Reassigned Hashing (AAAI 2026; Yin et al.)",
        why="claims an authorship link that no file of the project supports"),
    Correction(  # an older wording of the same claim (the sets built before methods' tags were shared)
        "06_baselines",
        old="Center Reassignment Hashing (AAAI 2026, by the SHC authors' group)",
        new="Center-Reassigned Hashing (Yin et al.)",
        why="claims an authorship link that no file of the project supports"),
    # a reader audit of the notebooks' prose (2026-12-02): section numbers of another numbering, and sentences that
    # say what the page's code does not do
    Correction(
        "04_retrieval",
        old="a result counts as relevant when it shares the query's class (Sec. 5.2).",
        new="a result counts as relevant when it shares the query's class (Sec. 4.2).",
        why="cites a section the paper does not have (Evaluation Measures is Sec. 4.2)"),
    Correction(
        "05_ablations",
        old="The paper's Sec. 5.6 asks what each part of SHC contributes:",
        new="The paper's Sec. 4.6 asks what each part of SHC contributes:",
        why="cites a section the paper does not have (Ablation Studies is Sec. 4.6)"),
    Correction(
        "06_baselines",
        old="(Sec. 5.1.3, Tables 4-6).",
        new="(Sec. 4.3; its results in Sec. 4.5.3, Tables 4-6).",
        why="cites a section the paper does not have (Baseline Approaches is Sec. 4.3)"),
    Correction(
        "06_baselines",
        old="(the own class's center, or for methods without centers the class's majority code, is the nearest; ties "
            "count fractionally)",
        new="(the own class's target is the nearest: each method's centers, the class codes it learned (CRH), or, "
            "for methods with neither, the class's majority code; ties count fractionally)",
        why="said CRH is measured against majority codes; it is measured against the class codes it learned"),
    Correction(
        "00_center_geometry",
        old="(CSQ's fallback): independent fair coin flips per bit;",
        new="(CSQ's random-center variant): independent fair coin flips per bit;",
        why="named CSQ's fallback, which draws balanced rows (q/2 bits of each sign), not coin flips"),
    Correction(
        "00_center_geometry",
        old="comparisons between methods use the paired differences by seed with a 95% t-interval.",
        new="this page draws one center set per method, so its differences between methods have no interval (page "
            "02 has them, over seeds).",
        why="promises intervals this page cannot draw (one center set per method)"),
    Correction(
        "01_similarity",
        old="This notebook trains that classifier (the paper's Table 2 reports its accuracy),",
        new="This notebook reads that classifier (trained by <code>python -m shc.reports</code> or "
            "<code>shc.pipeline</code>; the paper's Table 2 reports its accuracy),",
        why="said the page trains the classifier; it reads the runs computed before it"),
    Correction(
        "01_similarity",
        old="comparisons between methods use the paired differences by seed with a 95% t-interval.",
        new="this page compares sources of $\\mathbf{S}$, not methods, so no interval between methods is drawn here.",
        why="promises intervals between methods on a page that compares none"),
    # a reader audit of standard's pages 00 and 02 (2026-12-03): sentences the notebooks have since corrected
    Correction(
        "02_hash_centers",
        old="Random and CSQ centers carry no distance guarantee once $C &gt; 2q$.",
        new="Random centers carry no distance guarantee at any $C$, CSQ's none once $C &gt; 2q$.",
        why="the page's own 64-bit row contradicts (random centers fall below the GV d at C <= 2q)"),
    Correction(
        "02_hash_centers",
        old="Distance-only centers give a flat, noisy picture; semantic centers reproduce the blocks of "
            "$\\mathbf{S}$.",
        new="How closely each method's cosines follow $\\mathbf{S}$ is the Spearman column of the center-quality "
            "table (Section 1): near 0 for centers that ignore it.",
        why="the figure's own data contradicts (CSQ's negated Hadamard rows sit at -1)"),
    Correction(
        "00_center_geometry",
        old="which Hadamard centers reach only for $C \\le 2q$ (dashed).",
        new="which Hadamard centers reach only for $C \\le 2q$ (dashed, left panel).",
        why="placed the dashed Hadamard segments in the right panel, which has none"),
    Correction(
        "00_center_geometry",
        old="What happens to $d_{\\min}$ and $S_{loss}$ if you add classes, shorten the code, or switch from MDS to SHC "
            "centers? Which centers sit near a class, and are they its semantic neighbours? Pick $C$, $q$ and a center "
            "method:",
        new="What happens to $d_{\\min}$ and $S_{loss}$ if you shorten the code, switch from MDS to SHC centers, or (on "
            "the demonstration page, whose grid holds several $C$) add classes? Which centers sit near a class, and "
            "are they its semantic neighbours? Pick the settings the grid holds and a center method:",
        why="offered a choice of C that the page's explorer grid, of this testbed's one C, does not hold"),
    Correction(
        "00_center_geometry",
        old="Distance-only generators scatter the coarse classes; semantic centers pull the classes of one coarse "
            "class together, as $\\mathbf{S}$ asks.",
        new="Distance-only generators place the classes without regard to their coarse class; semantic centers can "
            "pull the classes of one coarse class together only as far as $\\mathbf{S}$ rates them alike (Section 4).",
        why="overstates what the embedding shows (an audit of standard's page measured SHC's within- to "
            "between-coarse-class distance ratio at 0.90, MDS's at 0.92)"),
)


_NOTE = re.compile(r'<p class="shc-corrected".*?</p>', re.DOTALL)


def correction_note(stamp: str, old: str, why: str) -> str:
    """The line a corrected paragraph carries under it."""
    return (f'<p class="shc-corrected" data-corrected="{html.escape(stamp)}"><em>Corrected on '
            f"{html.escape(stamp)}: the text as built said “{html.escape(html.unescape(' '.join(old.split())))}”, which "
            f"{html.escape(why)}; the rest of the page is as built.</em></p>")


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
        for correction in (c for c in corrections if c.page == notebook):
            notes = [note.span() for note in _NOTE.finditer(text)]  # a note quotes the old words: not a match
            match = next((found for found in correction.pattern.finditer(text)
                          if not any(start <= found.start() < end for start, end in notes)), None)
            if match is None:
                continue
            stamp = stamp or _stamp(folder)
            close = text.find("</p>", match.end())
            close = match.end() if close < 0 else close + len("</p>")
            note = correction_note(stamp, correction.old, correction.why)
            text = text[:match.start()] + correction.new + text[match.end():close] + note + text[close:]
            if correction.finding is not None:
                text = _insert_finding(text, page.parent, correction, stamp)
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
