"""Keeping committed notebooks clean and runnable as reports."""

from __future__ import annotations

import os
import re
from pathlib import Path

from shc._io import write_text
from shc.reports.plan import RUNNER_PARAMETERS, declared_parameters

__all__ = ["check_notebook", "strip_notebook"]

_VOLATILE_METADATA = ("papermill", "widgets", "execution")


def strip_notebook(path: str | os.PathLike) -> bool:
    """Remove outputs, execution counts and run metadata from a notebook in place.

    Returns True when the file changed. Cell ids and tags (``parameters``) are kept.
    """
    import nbformat

    path = Path(path)
    notebook = nbformat.read(str(path), as_version=4)
    before = nbformat.writes(notebook)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in (*_VOLATILE_METADATA, "collapsed", "scrolled"):
            cell.metadata.pop(key, None)
    for key in _VOLATILE_METADATA:
        notebook.metadata.pop(key, None)
    after = nbformat.writes(notebook)
    if after == before:
        return False
    write_text(path, after if after.endswith("\n") else after + "\n")
    return True


def check_notebook(path: str | os.PathLike) -> list[str]:
    """Problems that keep a notebook from being a clean, runnable report (empty list: none).

    Checks: the first code cell is tagged ``parameters``; papermill understands every assignment in
    it (one ``name = value  # help`` per line, no second ``=`` on the line) and it declares
    ``output_dir`` and ``run_dir``; no code cell has outputs or an execution count.
    """
    import nbformat

    notebook = nbformat.read(str(path), as_version=4)
    problems = []
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if not code_cells or "parameters" not in code_cells[0].metadata.get("tags", []):
        problems.append("the first code cell must be tagged 'parameters'")
    else:
        declared = set(declared_parameters(path))
        assigned = re.findall(r"^(\w+)\s*(?::[^=]+)?=", code_cells[0].source, flags=re.MULTILINE)
        unparsed = [name for name in assigned if name not in declared]
        if unparsed:
            problems.append(f"papermill cannot parse the parameters {unparsed} (keep '=' out of their comments)")
        missing = [name for name in RUNNER_PARAMETERS if name not in declared]
        if missing:
            problems.append(f"the parameters cell must declare {missing}")
    fix = "run python -m shc.reports --strip-notebooks"
    with_outputs = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code" and cell.outputs]
    with_counts = [i for i, cell in enumerate(notebook.cells)
                   if cell.cell_type == "code" and cell.execution_count is not None]  # fmt: skip
    if with_outputs:
        problems.append(f"cells {with_outputs} have outputs ({fix})")
    if with_counts:
        problems.append(f"cells {with_counts} have execution counts ({fix})")
    return problems


