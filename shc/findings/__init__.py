"""Computed prose: the sentences a report states about its numbers, generated from the tables they describe.

Every function takes the table a notebook shows and returns sentences: about trained runs in
:mod:`shc.findings.runs`, about stages 1 and 2 in :mod:`shc.findings.centers`. A notebook shows them with
``findings.show(name, table=<saved file>, ...)`` (the registry :data:`FINDINGS`, this module), which computes them
from the saved files and records how, so ``python -m shc.reports.check`` re-derives every one. No sentence that
states a number, a ranking or a comparison is typed into a notebook: change the numbers and the sentences change
with them (tested).

A notebook never formats a finding itself: ``findings.show(name, table=<saved file>, option=value)`` reads the
tables from the files it saved, runs the registered function, shows the sentences as a list marked with a key, and
records (key, name, files, options) in ``findings.json`` beside the page. ``python -m shc.reports.check`` reads that
record, runs the function again on the published files and compares its sentences with the page's (:func:`derive`):
a sentence edited by hand, or a table changed after the page was built, is a problem.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shc.findings.centers import (FAINT, ONE_SET_ADVICE, PAPER_ACCURACY, center_findings, coarse_structure_findings,
                                  geometry_findings, hadamard_findings, hierarchy_findings, pair_findings,
                                  record_distance_finding, sign_findings, similarity_findings, tie_findings,
                                  tradeoff_findings)
from shc.findings.grid import budget_phrase, grid_findings, grid_phrase
from shc.findings.runs import (ablation_findings, best_methods, best_methods_label, bullet_list,
                               convergence_findings, device_findings, device_phrase, example_findings,
                               missed_targets, precision_at_k_findings,
                               reachability_findings, retrieval_findings, same_run_findings, same_run_methods,
                               same_run_rows)
from shc.registry import Registry

__all__ = ["FAINT", "FINDINGS", "FINDINGS_FILE", "Finding", "ONE_SET_ADVICE", "PAPER_ACCURACY", "ablation_findings",
           "budget_phrase", "grid_findings", "grid_phrase",
           "best_methods", "best_methods_label", "bullet_list", "center_findings",
           "coarse_structure_findings", "convergence_findings", "derive", "device_findings", "device_phrase",
           "example_findings", "findings_html", "geometry_findings", "hadamard_findings", "hierarchy_findings",
           "missed_targets", "pair_findings",
           "precision_at_k_findings", "reachability_findings", "record_distance_finding", "retrieval_findings",
           "same_run_findings", "same_run_methods", "same_run_rows", "show", "sign_findings", "similarity_findings",
           "tie_findings", "tradeoff_findings"]


#: The file beside each page that records how its findings were derived.
FINDINGS_FILE = "findings.json"


@dataclass(frozen=True)
class Finding:
    """A registered sentence generator: ``function(**tables, **options)`` returns the sentences (or one sentence).

    ``tables`` maps the arguments read from table files to the number of leading index columns restored when a
    file is read (0: none; 1: an index such as the ``C`` of notebook 00's Hadamard table).
    """

    function: Callable[..., Any]
    tables: Mapping[str, int]

    def __post_init__(self) -> None:
        if not callable(self.function) or not self.tables:
            raise ValueError("a Finding needs a function and at least one table argument.")


FINDINGS: Registry[Finding] = Registry("finding")


def _upper_pairs(pairs: Any, S: Any | None = None, ties: Any | None = None,
                 source: str = "data-dependent S") -> list[str]:
    """:func:`tie_findings` on the table of tied pairs, or, on pages built before it (2026-11-29), :func:`pair_findings`
    on a heatmap's data file (:func:`shc.plots.matrix_frame`: the triangle or the whole matrix of ``source``)."""
    from shc.plots.style import matrix_from_frame

    if ties is not None:
        return tie_findings(pairs, ties)
    if S is None:
        raise ValueError("the similar-pairs finding needs the tied pairs (ties) or the S they come from (S).")
    matrix, _ = matrix_from_frame(S, source)
    coarse = S.loc[S["source"] == source, "row_coarse"].to_numpy() if "row_coarse" in S else None
    return pair_findings(matrix, pairs, coarse)


def _signs(S: Any, source: str = "data-dependent S") -> list[str]:
    """:func:`sign_findings` on a heatmap's data file (:func:`shc.plots.matrix_frame`)."""
    from shc.plots.style import matrix_from_frame

    return sign_findings(matrix_from_frame(S, source)[0], source)


def _centers(rows: Any, reference: str | Sequence[str] = "shc", baseline: str = "mds", bits: int | None = None,
             seed: int | None = None) -> list[str]:
    """:func:`center_findings` on notebook 02's run rows, or on notebook 00's one-set quality table (indexed by
    ``method``, with a ``GV distance d`` column) at code length ``bits`` and ``seed``."""
    if "label" not in rows:
        rows = rows.rename(columns={"method": "label", "GV distance d": "gv_distance"}).assign(bits=bits, seed=seed)
        return center_findings(rows, reference, baseline, one_seed=ONE_SET_ADVICE)
    return center_findings(rows, reference, baseline)


def _record_distance(history: Any, targets: Mapping[Any, int] | None = None) -> list[str]:
    """:func:`record_distance_finding` with the targets as JSON gives them back (code lengths as strings)."""
    return [record_distance_finding(history, None if targets is None else
                                    {int(bits): int(d) for bits, d in targets.items()})]


for _name, _function, _tables in (
        ("retrieval", retrieval_findings, {"runs": 0}),
        ("devices", device_findings, {"runs": 0}),
        ("reachability", reachability_findings, {"runs": 0}),
        ("convergence", convergence_findings, {"runs": 0, "history": 0}),
        ("similarity", similarity_findings, {"accuracy": 0, "correlations": 1, "agreement": 1}),
        ("centers", _centers, {"rows": 0}),
        ("ablation", ablation_findings, {"runs": 0}),
        ("same-run", same_run_findings, {"rows": 0}),
        ("hadamard", hadamard_findings, {"table": 1}),
        ("similar-pairs", _upper_pairs, {"S": 0, "pairs": 0, "ties": 0}),
        ("similarity-signs", _signs, {"S": 0}),
        ("hierarchy", hierarchy_findings, {"coarse": 0}),
        ("coarse-structure", coarse_structure_findings, {"S": 0, "centers": 0}),
        ("precision-at-k", precision_at_k_findings, {"frame": 0}),
        ("examples", example_findings, {"frame": 0}),
        ("record-distance", _record_distance, {"history": 0}),
        ("tradeoff", tradeoff_findings, {"tradeoff": 0}),
        ("geometry", geometry_findings, {"lessons": 0}),
        ("grid", grid_findings, {"settings": 0}),
):
    FINDINGS.register(_name, Finding(_function, _tables))


def _read_table(path: Path, index_columns: int) -> Any:
    import pandas as pd

    # class names such as "00" stay strings: only columns pandas reads as numbers are numbers
    return pd.read_csv(path, index_col=list(range(index_columns)) or None, keep_default_na=True,
                       dtype={"row": str, "column": str, "name_a": str, "name_b": str, "coarse_class": str})


def derive(name: str, folder: str | os.PathLike, tables: Mapping[str, str | None],
           options: Mapping[str, Any]) -> list[str]:
    """The sentences of finding ``name`` from the table files ``tables`` (argument -> path relative to ``folder``,
    or None for an absent optional table) and the JSON ``options``."""
    finding = FINDINGS.get(name)
    unknown = set(tables) - set(finding.tables)
    if unknown:
        raise ValueError(f"finding {name!r} reads no table {sorted(unknown)}; its tables: {sorted(finding.tables)}.")
    folder = Path(folder)
    loaded = {arg: None if tables.get(arg) is None else _read_table(folder / str(tables[arg]), count)
              for arg, count in finding.tables.items() if arg in tables}
    sentences = finding.function(**loaded, **options)
    return [sentences] if isinstance(sentences, str) else list(sentences)


def _key(name: str, tables: Mapping[str, str | None], options: Mapping[str, Any]) -> str:
    text = json.dumps({"finding": name, "tables": tables, "options": options}, sort_keys=True, default=str)
    return f"{name}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def findings_html(key: str, sentences: Sequence[str]) -> str:
    """The sentences as the marked list a page shows (what :func:`shc.reports.check.check_report_folder` reads)."""
    items = "".join(f"<li>{html.escape(sentence)}</li>" for sentence in sentences)
    return f'<ul class="shc-findings" data-finding="{html.escape(key)}">{items}</ul>'


_STARTED: set[Path] = set()  # the findings files this process has begun (a page's first show starts it afresh)


def show(name: str, /, **arguments: Any) -> Any:
    """Show a registered finding on the page and record how it was derived (in ``findings.json`` beside the page).

    Table arguments are the files a notebook saved (``plots.save_table`` returns the path) in the page's
    ``tables/`` or ``figures/`` folder; an optional table may be None. Everything else is an option (JSON). The
    sentences are computed from the files, not from the frames in memory, so the report checker re-derives exactly
    what the page shows. Returns an ``IPython.display.HTML`` (an empty list, invisible, when there is no sentence).
    """
    from IPython.display import HTML

    from shc._io import jsonable, write_json

    finding = FINDINGS.get(name)
    files = {arg: value for arg, value in arguments.items() if arg in finding.tables}
    options = jsonable({arg: value for arg, value in arguments.items() if arg not in finding.tables})
    given = [Path(value) for value in files.values() if value is not None]
    if not given:
        raise ValueError(f"finding {name!r} needs its table file(s) {sorted(finding.tables)}: pass the paths "
                         "plots.save_table returned.")
    folder = given[0].resolve().parent.parent  # <page folder>/tables/<file>
    outside = [str(path) for path in given if not path.resolve().is_relative_to(folder)]
    if outside:
        raise ValueError(f"finding {name!r} reads {', '.join(outside)}, outside the page folder {folder}: save every "
                         "table of a page under its output_dir (tables/ or figures/).")
    relative = {arg: None if value is None else Path(value).resolve().relative_to(folder).as_posix()
                for arg, value in files.items()}
    sentences = derive(name, folder, relative, options)
    key = _key(name, relative, options)
    record_file = folder / FINDINGS_FILE
    records: dict[str, Any] = {}
    if record_file in _STARTED and record_file.is_file():
        records = {record["key"]: record for record in json.loads(record_file.read_text())["findings"]}
    _STARTED.add(record_file)
    records[key] = {"key": key, "finding": name, "tables": relative, "options": options}
    write_json(record_file, {"findings": list(records.values())})
    return HTML(findings_html(key, sentences))  # an empty list shows nothing, and says the data gives nothing
