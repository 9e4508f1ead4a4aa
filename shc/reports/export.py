"""Executed notebook -> standalone HTML (with code, or the reading version without)."""

from __future__ import annotations

import copy
import functools
import os
import re
from pathlib import Path

from shc._io import write_text

__all__ = ["notebook_title", "render_html"]


def render_html(
    notebook_path: str | os.PathLike,
    html_path: str | os.PathLike,
    *,
    include_input: bool = True,
    header: str | None = None,
) -> Path:
    """Convert an executed notebook to a standalone HTML file (atomically), figures embedded as PNG.

    Parameters
    ----------
    notebook_path, html_path : path
    include_input : bool
        False gives the reading version: outputs and markdown only, no code or prompts.
    header : str, optional
        Markdown shown as the first cell (e.g. the parameters of the run).
    """
    import nbformat

    notebook = nbformat.read(str(notebook_path), as_version=4)
    if header:
        notebook = copy.deepcopy(notebook)
        notebook.cells.insert(0, nbformat.v4.new_markdown_cell(header))
    body, _ = _html_exporter(include_input).from_notebook_node(notebook)
    return write_text(Path(html_path), body)


@functools.cache
def _html_exporter(include_input: bool):
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    if not include_input:
        exporter.exclude_input = True
        exporter.exclude_input_prompt = True
        exporter.exclude_output_prompt = True
    return exporter


def notebook_title(notebook_path: Path) -> str:
    import nbformat

    try:
        notebook = nbformat.read(str(notebook_path), as_version=4)
    except (OSError, ValueError):
        return notebook_path.stem
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            heading = re.search(r"^#\s+(.+)$", cell.source, flags=re.MULTILINE)
            if heading:
                return heading.group(1).strip()
    return notebook_path.stem


