"""Executed notebook -> offline HTML (with code, or the reading version without)."""

from __future__ import annotations

import copy
import functools
import html
import os
import re
from pathlib import Path

from shc._io import write_text

__all__ = ["notebook_title", "plain_title", "render_html", "with_figure_files"]


def render_html(
    notebook_path: str | os.PathLike,
    html_path: str | os.PathLike,
    *,
    include_input: bool = True,
    header: str | None = None,
    footer: str | None = None,
    assets_root: str | os.PathLike | None = None,
    page_path: str | os.PathLike | None = None,
) -> Path:
    """Convert an executed notebook to an HTML file (atomically) that works offline.

    The page is titled after the notebook's first heading and works offline: MathJax comes from the
    bundle installed under ``assets_root`` (:func:`shc.offline.install_assets`, default: the page's
    folder) and the CSS from one shared stylesheet there (:func:`shc.offline.shared_stylesheet`), both
    referenced by relative URLs, and nothing loads from the network. A figure that the notebook saved with
    :func:`shc.plots.save_figure` is shown from its file (``figures/<name>.png`` beside the page: the displayed
    PNG is that file, byte for byte), so each figure is stored once; any other image stays embedded. The
    reading version (``include_input=False``) also leaves out stderr streams (warnings, progress bars).

    Parameters
    ----------
    notebook_path, html_path : path
    include_input : bool
        False gives the reading version: outputs and markdown only, no code, prompts or stderr.
    header, footer : str, optional
        Markdown shown as the first and the last cell (the parameters of the run, links to its files).

    Every output image gets the alt text its notebook gave it (``metadata["image/png"]["alt"]``, which
    :func:`shc.plots.use_style` makes figures carry), instead of nbconvert's placeholder.
    assets_root : path, optional
        Folder holding ``_assets/`` (a preset's report folder); created there when missing.
    page_path : path, optional
        Where the page will finally live, when it is written elsewhere first (the relative asset URL
        is computed from it); default ``html_path``.
    """
    import nbformat

    from shc.offline import install_assets, offline_html, shared_stylesheet

    notebook = nbformat.read(str(notebook_path), as_version=4)
    notebook = copy.deepcopy(notebook)
    if header:
        notebook.cells.insert(0, nbformat.v4.new_markdown_cell(header))
    if footer:
        notebook.cells.append(nbformat.v4.new_markdown_cell(footer))
    if not include_input:
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.outputs = [output for output in cell.outputs
                                if not (output.output_type == "stream" and output.get("name") == "stderr")]
    _without_widget_views(notebook)
    title = notebook_title(Path(notebook_path))
    body, _ = _html_exporter(include_input).from_notebook_node(notebook, resources={"metadata": {"name": title}})
    body = _with_alt_texts(body, _image_alts(notebook))
    html_path = Path(html_path)
    body = with_figure_files(body, html_path.parent)
    assets_root = Path(assets_root) if assets_root is not None else html_path.parent
    install_assets(assets_root)
    page_path = Path(page_path) if page_path is not None else html_path
    body = body.replace("</head>", f"<style>\n{PAGE_CSS}</style>\n</head>", 1)
    body = offline_html(body, page_path, assets_root)
    body = shared_stylesheet(body, page_path, assets_root)
    return write_text(html_path, body)


#: CSS the pages add to nbconvert's: an output cell is a fixed-layout table cell with ``overflow: hidden``, so a table
#: wider than the page (03's runs table) lost its last columns; such a table now scrolls sideways (issue 38).
PAGE_CSS = ".jp-RenderedHTMLCommon table { display: block; max-width: 100%; overflow-x: auto; }\n"

_EMBEDDED_PNG = re.compile(r'(<img\b[^>]*?\bsrc=")data:image/png;base64,([^"]*)("[^>]*>)')


def with_figure_files(body: str, page_dir: str | os.PathLike, folder: str = "figures") -> str:
    """Point every embedded PNG of ``body`` that is byte-identical to a file of ``<page_dir>/<folder>/`` at that
    file (a relative ``src``), so the page does not carry a second copy of a saved figure; other images stay
    embedded. :func:`shc.plots.save_figure` makes a saved figure display as exactly its file. Each such figure is
    also a link to its file, which a browser opens at full size: a wide figure (page 02's seven heatmaps of 100
    classes) is scaled down to the page's width."""
    import base64
    import hashlib

    files = {}
    for path in sorted(Path(page_dir, folder).glob("*.png")):
        files.setdefault(hashlib.sha256(path.read_bytes()).digest(), f"{folder}/{path.name}")

    def replace(match: re.Match) -> str:
        try:
            data = base64.b64decode(match.group(2), validate=False)
        except ValueError:
            return match.group(0)
        name = files.get(hashlib.sha256(data).digest())
        if name is None:
            return match.group(0)
        link = html.escape(name, quote=True)
        return (f'<a href="{link}" title="the figure at full size">{match.group(1)}{link}{match.group(3)}</a>')

    return _EMBEDDED_PNG.sub(replace, body) if files else body


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _without_widget_views(notebook) -> None:
    """Drop widget views (and the stored widget state): the widget renderer loads from a CDN, which
    :func:`shc.offline.offline_html` removes, so on an offline page a view is an empty box. The page shows the
    output's other forms instead (the live explorer's note, shc.explore)."""
    notebook.metadata.pop("widgets", None)
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        kept = []
        for output in cell.get("outputs", []):
            data = output.get("data")
            if data is not None and _WIDGET_VIEW in data:
                data.pop(_WIDGET_VIEW)
                if not set(data) - {"text/plain"}:
                    continue  # only a repr such as "VBox(children=...)" is left
            kept.append(output)
        cell.outputs = kept


_PREFERRED_OVER_PNG = {"text/html", "application/pdf", "text/latex", "image/svg+xml"}


def _image_alts(notebook) -> list[str | None]:
    """The alt text of every PNG output, in page order (None where the output has none)."""
    alts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
            data = output.get("data", {})
            if "image/png" in data and not _PREFERRED_OVER_PNG & set(data):  # the PNG is what the page shows
                alts.append((output.get("metadata", {}).get("image/png") or {}).get("alt"))
    return alts


def _with_alt_texts(body: str, alts: list[str | None]) -> str:
    """Put ``alts`` on the embedded PNG images of ``body`` in order (nbconvert's template writes none)."""
    images = iter(alts)

    def replace(match: re.Match) -> str:
        tag = match.group(0)
        alt = next(images, None)
        if not alt:
            return tag
        tag = re.sub(r'\salt="[^"]*"', "", tag)
        return tag.replace("<img", f'<img alt="{html.escape(alt, quote=True)}"', 1)

    return re.sub(r'<img\b[^>]*src="data:image/png;base64,[^"]*"[^>]*>', replace, body)


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
    """The notebook's first markdown heading, without TeX markup (``$\\mathbf{S}$`` -> ``S``)."""
    import nbformat

    try:
        notebook = nbformat.read(str(notebook_path), as_version=4)
    except (OSError, ValueError):
        return notebook_path.stem
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            heading = re.search(r"^#\s+(.+)$", cell.source, flags=re.MULTILINE)
            if heading:
                return plain_title(heading.group(1).strip())
    return notebook_path.stem


def plain_title(title: str) -> str:
    """A heading without TeX markup, for titles and the index (``$\\mathbf{S}$`` -> ``S``)."""
    return re.sub(r"\$([^$]*)\$", lambda m: re.sub(r"\\[a-zA-Z]+\{([^}]*)\}", r"\1", m.group(1)), title)


