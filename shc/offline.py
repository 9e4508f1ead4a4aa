"""Offline report pages: MathJax shipped with the reports, no reference to an external URL.

nbconvert 7's ``lab`` template loads four things from CDNs: require.js (a ``<script src>`` in the
head), MathJax 2 (``<script src>`` plus a ``text/x-mathjax-config`` block), mermaid (a module script
that ``import()``\\ s it, only when the page has a diagram) and the Jupyter widgets renderer (only
when the notebook stores widget state). Opened without network, every formula stays raw TeX.

This module makes a page self-contained:

* :func:`install_assets` copies the vendored MathJax 3 bundle (``es5/tex-svg-full.js`` of the npm
  package ``mathjax`` 3.2.2, Apache-2.0, with every TeX extension built in, so it never fetches
  another file; SVG output needs no font files) once under a reports folder;
* :func:`offline_html` rewrites an exported page: it drops the CDN loaders, loads that bundle by a
  *relative* URL with a MathJax 3 configuration equivalent to nbconvert's (``$...$`` and ``$$...$$``,
  AMS equation numbers), and refuses to return a page that still references an external URL;
* :func:`shared_stylesheet` moves the CSS that nbconvert repeats in every page into one file under the same
  ``_assets`` folder, linked by a relative URL (:func:`prune_stylesheets` drops the ones no page links);
* :func:`external_references` lists what a page would fetch from the network (the check behind
  the tests and :func:`offline_problems`).

Typical use in the report runner (``reports_root`` holds every preset's folder, so the assets are stored once)::

    install_assets(reports_root)
    body, _ = exporter.from_notebook_node(notebook)
    page = offline_html(body, page_path=html_path, assets_root=reports_root)
    page = shared_stylesheet(page, page_path=html_path, assets_root=reports_root)
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

__all__ = [
    "ASSETS_DIRNAME",
    "MATHJAX_BUNDLE",
    "MATHJAX_LICENSE",
    "MATHJAX_VERSION",
    "drop_unused_assets",
    "external_references",
    "install_assets",
    "mathjax_src",
    "mathjax_tags",
    "offline_html",
    "offline_problems",
    "prune_stylesheets",
    "shared_stylesheet",
]

_HERE = Path(__file__).resolve().parent
MATHJAX_VERSION = "3.2.2"
#: The vendored bundle (npm ``mathjax@3.2.2``, ``es5/tex-svg-full.js``) and its licence.
MATHJAX_BUNDLE: Path = _HERE / "assets" / "mathjax" / "tex-svg-full.js"
MATHJAX_LICENSE: Path = _HERE / "assets" / "mathjax" / "LICENSE"
#: Folder created by :func:`install_assets` under a reports folder.
ASSETS_DIRNAME = "_assets"
#: Sub-folder of ``_assets`` holding the pages' stylesheets (:func:`shared_stylesheet`), named by content.
STYLESHEETS_DIRNAME = "css"

# MathJax 3 equivalent of the MathJax 2 configuration in nbconvert's base/mathjax.html.j2.
_MATHJAX_CONFIG = r"""window.MathJax = {
  tex: {inlineMath: [['$', '$'], ['\\(', '\\)']], displayMath: [['$$', '$$'], ['\\[', '\\]']],
        processEscapes: true, processEnvironments: true, tags: 'ams', useLabelIds: true},
  svg: {fontCache: 'global'},
  options: {ignoreHtmlClass: 'tex2jax_ignore', processHtmlClass: 'tex2jax_process'}
};"""

_EXTERNAL = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)
_SCRIPT_BLOCK = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.IGNORECASE | re.DOTALL)
_SRC_ATTRIBUTE = re.compile(r"""\bsrc\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.IGNORECASE)
_MATHJAX2_COMMENTS = re.compile(r"<!--\s*(?:Load mathjax|MathJax configuration|End of mathjax configuration)\s*-->",
                                re.IGNORECASE)  # fmt: skip
_HEAD = re.compile(r"<head\b[^>]*>.*?</head\s*>", re.IGNORECASE | re.DOTALL)
_STYLE_BLOCK = re.compile(r"<style\b([^>]*)>(.*?)</style\s*>", re.IGNORECASE | re.DOTALL)
_STYLESHEET_LINK = re.compile(r"""<link\b[^>]*\brel=["']?stylesheet["']?[^>]*\bhref=["']([^"']+)["']""", re.IGNORECASE)
_CSS_IMPORT = re.compile(r"""@import\s+(?:url\(\s*)?["']?([^"')\s;]+)""", re.IGNORECASE)
_CSS_URL = re.compile(r"""url\(\s*["']?([^"')\s]+)""", re.IGNORECASE)
_JS_IMPORT = re.compile(r"""\bimport\s*\(\s*["']([^"']+)["']""")
_JS_IMPORT_FROM = re.compile(r"""\bimport\b[^;'"]*?\bfrom\s*["']([^"']+)["']|\bimport\s*["']([^"']+)["']""")


# --------------------------------------------------------------------------------------
# Assets
# --------------------------------------------------------------------------------------


def install_assets(report_root: str | os.PathLike) -> Path:
    """Copy the MathJax bundle and its licence to ``<report_root>/_assets/mathjax/``; return the bundle path.

    Copies only what is missing or differs (compared by SHA-256), atomically, so calling it before
    every page of a batch is cheap and a reader never sees a half-written file.

    Parameters
    ----------
    report_root : path
        The folder the reports of one preset live in (e.g. ``reports/quick``); created if needed.
    """
    from shc._io import atomic_path

    if not MATHJAX_BUNDLE.is_file():
        raise FileNotFoundError(
            f"the vendored MathJax bundle {MATHJAX_BUNDLE} is missing; reinstall shc (it is package data, "
            "see [tool.setuptools.package-data] in pyproject.toml)."
        )
    target_dir = Path(report_root) / ASSETS_DIRNAME / "mathjax"
    for source in (MATHJAX_BUNDLE, MATHJAX_LICENSE):
        target = target_dir / source.name
        if target.is_file() and _sha256(target) == _sha256(source):
            continue
        with atomic_path(target) as temporary:
            shutil.copyfile(source, temporary)
    return target_dir / MATHJAX_BUNDLE.name


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def mathjax_src(page_path: str | os.PathLike, assets_root: str | os.PathLike) -> str:
    """Relative URL (POSIX, percent-free) from the page's folder to the installed bundle."""
    bundle = Path(assets_root) / ASSETS_DIRNAME / "mathjax" / MATHJAX_BUNDLE.name
    return Path(os.path.relpath(bundle.absolute(), Path(page_path).absolute().parent)).as_posix()


def mathjax_tags(src: str) -> str:
    """The ``<script>`` tags that configure MathJax 3 like nbconvert's MathJax 2 and load it from ``src``."""
    if _EXTERNAL.match(src):
        raise ValueError(f"mathjax src {src!r} is an external URL; pass a relative path (see mathjax_src).")
    return f'<script>\n{_MATHJAX_CONFIG}\n</script>\n<script defer src="{src}"></script>'


def shared_stylesheet(html: str, page_path: str | os.PathLike, assets_root: str | os.PathLike) -> str:
    """Move the ``<style>`` blocks of a page's ``<head>`` into one stylesheet shared by every page (issue 38).

    nbconvert's ``lab`` template writes about 264 kB of the same CSS into every page. This writes that CSS once,
    to ``<assets_root>/_assets/css/page-<sha256 prefix>.css`` (named by its content, so pages built with the same
    nbconvert share one file, and a page never points at a stylesheet that changed under it), and puts a
    ``<link rel="stylesheet">`` with a *relative* URL where the first block was (the pages still open offline
    from a clone). Blocks outside ``<head>`` (an output's own style) stay in the page. A page without a style
    block in its head is returned unchanged.

    Parameters
    ----------
    html : str
        The page.
    page_path : path
        Where the page will live (the relative URL is computed from its folder).
    assets_root : path
        The folder holding ``_assets/`` (the reports root, e.g. ``reports``, shared by every preset).
    """
    from shc._io import atomic_path

    head = _HEAD.search(html)
    if head is None:
        return html
    blocks = list(_STYLE_BLOCK.finditer(head.group(0)))
    if not blocks:
        return html
    css = "\n".join(block.group(2).strip("\n") for block in blocks) + "\n"
    data = css.encode("utf-8")
    target = (Path(assets_root) / ASSETS_DIRNAME / STYLESHEETS_DIRNAME
              / f"page-{hashlib.sha256(data).hexdigest()[:16]}.css")
    if target.is_file() and target.read_bytes() == data:
        os.utime(target)  # in use from now: prune_stylesheets spares it until the page that links it is written
    else:
        with atomic_path(target) as temporary:
            temporary.write_bytes(data)
    href = Path(os.path.relpath(target.absolute(), Path(page_path).absolute().parent)).as_posix()
    new_head, first = [], True
    position = 0
    text = head.group(0)
    for block in blocks:
        new_head.append(text[position:block.start()])
        if first:
            new_head.append(f'<link rel="stylesheet" href="{href}">')
            first = False
        position = block.end()
    new_head.append(text[position:])
    return html[:head.start()] + "".join(new_head) + html[head.end():]


#: Seconds a stylesheet written or reused by :func:`shared_stylesheet` is kept though no page links it yet: the
#: reports root is shared by every preset, and another preset's batch may have made it for a page not yet written.
STYLESHEET_GRACE_SECONDS = 3600.0


def prune_stylesheets(assets_root: str | os.PathLike, grace: float = STYLESHEET_GRACE_SECONDS) -> list[Path]:
    """Delete the stylesheets of ``<assets_root>/_assets/css`` that no page below ``assets_root`` links any more
    (left by pages rebuilt with another nbconvert) and that were not written or reused in the last ``grace``
    seconds; return what was deleted.

    A sheet is kept when any page links a file of its name (pages still being built, in a batch's hidden
    building folder, link theirs as from their final place: the name is what they share), or when it is newer than
    ``grace``: another preset's batch, which this one does not lock, may hold a page linking it in memory."""
    import time

    root = Path(assets_root)
    folder = root / ASSETS_DIRNAME / STYLESHEETS_DIRNAME
    if not folder.is_dir():
        return []
    used = set()
    for page in root.rglob("*.html"):
        for href in _STYLESHEET_LINK.findall(page.read_text(encoding="utf-8", errors="replace")):
            used.add(href.rsplit("/", 1)[-1])
    removed = []
    recent = time.time() - grace
    for sheet in sorted(folder.glob("*.css")):
        if sheet.name not in used and sheet.stat().st_mtime < recent:
            sheet.unlink()
            removed.append(sheet)
    return removed


def drop_unused_assets(preset_dir: str | os.PathLike) -> list[Path]:
    """Tidy after a batch into ``preset_dir`` (a preset's folder under the reports root): delete the stylesheets
    no page links (:func:`prune_stylesheets` on the reports root), and the preset's own ``_assets`` folder, which
    pages built before the assets were shared (issue 38) loaded, once no page of the preset loads from it.
    Returns what was deleted."""
    preset_dir = Path(preset_dir)
    removed = prune_stylesheets(preset_dir.parent)
    legacy = preset_dir / ASSETS_DIRNAME
    if legacy.is_dir():
        pages = [page for page in preset_dir.rglob("*.html") if not page.is_relative_to(legacy)]
        uses = any(f"{ASSETS_DIRNAME}/" in url and (page.parent / url).resolve().is_relative_to(legacy.resolve())
                   for page in pages for url in _local_loads(page.read_text(encoding="utf-8", errors="replace")))
        if not uses:
            shutil.rmtree(legacy)
            removed.append(legacy)
    return removed


def _local_loads(html: str) -> list[str]:
    """The relative script ``src`` and stylesheet ``href`` URLs of a page."""
    urls = []
    for match in _SCRIPT_BLOCK.finditer(html):
        source = _SRC_ATTRIBUTE.search(match.group(1))
        url = next((g for g in source.groups() if g is not None), "") if source else ""
        if url and not _EXTERNAL.match(url) and not url.startswith("data:"):
            urls.append(url.split("?")[0])
    urls += [url.split("?")[0] for url in _STYLESHEET_LINK.findall(html) if not _EXTERNAL.match(url)]
    return urls


# --------------------------------------------------------------------------------------
# Rewriting a page
# --------------------------------------------------------------------------------------


def offline_html(html: str, page_path: str | os.PathLike, assets_root: str | os.PathLike) -> str:
    """Rewrite an nbconvert HTML page so that it works without network.

    Removes require.js, the MathJax 2 loader and configuration, the mermaid loader and the widget
    renderer loader; where the page loaded MathJax, loads the bundle installed by
    :func:`install_assets` under ``assets_root`` instead (relative URL, so the reports folder can
    be moved or served as it is). Pure string function: it reads and writes no file.

    Parameters
    ----------
    html : str
        A page from ``nbconvert.HTMLExporter`` (template ``lab`` or ``classic``), or any HTML page.
    page_path : path
        Where the page will be written (the bundle's URL is relative to its folder).
    assets_root : path
        The folder :func:`install_assets` was (or will be) called with, e.g. ``reports/quick``.

    Raises
    ------
    ValueError
        If the page has a mermaid diagram (mermaid is not shipped) or still references an external
        URL after the rewrite; the message lists the references.
    """
    if not isinstance(html, str):
        raise TypeError(f"html must be a str (the exporter's body), got {type(html).__name__}.")
    if 'class="jp-Mermaid' in html:
        raise ValueError("the page has a mermaid diagram, which needs mermaid.js from a CDN; render it as an "
                         "image in the notebook instead.")  # fmt: skip
    had_mathjax = False

    def rewrite(match: re.Match) -> str:
        nonlocal had_mathjax
        attributes, body = match.group(1), match.group(2)
        source = _SRC_ATTRIBUTE.search(attributes)
        url = next((group for group in source.groups() if group is not None), "") if source else ""
        if "mathjax" in url.lower() or "text/x-mathjax-config" in attributes.lower():
            had_mathjax = True
            return "<!-- MATHJAX -->" if source else ""
        if source and (_EXTERNAL.match(url) or url == ""):  # require.js and any other CDN script
            return ""
        if "mermaid" in body and _JS_IMPORT.search(body):  # loader that runs only when a diagram exists
            return ""
        if "widgetRendererSrc" in body:  # widget views then show their text fallback
            return ""
        return match.group(0)

    page = _SCRIPT_BLOCK.sub(rewrite, html)
    page = _MATHJAX2_COMMENTS.sub("", page)
    if had_mathjax:
        tags = mathjax_tags(mathjax_src(page_path, assets_root))
        marker = "<!-- MATHJAX -->"
        page = page.replace(marker, tags, 1).replace(marker, "") if marker in page else page
    left = external_references(page)
    if left:
        raise ValueError(f"the page still references external URLs after the offline rewrite: {left}; "
                         "embed these resources (e.g. embed_images=True) or drop them.")  # fmt: skip
    return page


# --------------------------------------------------------------------------------------
# Checking pages
# --------------------------------------------------------------------------------------


class _ReferenceParser(HTMLParser):
    """Collects resource URLs a browser would load (not ``<a href>`` navigation links)."""

    _LOADED = {
        "script": ("src",), "img": ("src", "srcset"), "iframe": ("src",), "source": ("src", "srcset"),
        "video": ("src", "poster"), "audio": ("src",), "embed": ("src",), "object": ("data",),
        "track": ("src",), "input": ("src",), "image": ("href", "xlink:href"), "use": ("href", "xlink:href"),
    }  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.urls: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        if tag == "link" and values.get("rel", "").lower() not in ("", "canonical", "alternate", "author"):
            self.urls.append(values.get("href", ""))
        for name in self._LOADED.get(tag, ()):
            if name == "srcset" and name in values:  # "url 2x, url 3x"
                self.urls.extend(part.split()[0] for part in values[name].split(",") if part.strip())
            elif name in values:
                self.urls.append(values[name])
        if "style" in values:
            self.urls.extend(_css_urls(values["style"]))
        self._in = tag if tag in ("style", "script") else None

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        self._in = None

    def handle_endtag(self, tag: str) -> None:
        self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "style":
            self.urls.extend(_css_urls(data))
        elif self._in == "script":
            self.urls.extend(_JS_IMPORT.findall(data))
            self.urls.extend(a or b for a, b in _JS_IMPORT_FROM.findall(data))


def _css_urls(css: str) -> list[str]:
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.DOTALL)  # comments cite URLs without loading them
    return _CSS_IMPORT.findall(css) + _CSS_URL.findall(css)


def external_references(html: str) -> list[str]:
    """Every external (``http:``, ``https:`` or protocol-relative ``//``) URL the page would load.

    Looks at ``<script src>``, ``<link href>`` (stylesheets, icons, preloads), ``<img src/srcset>``,
    media, frames and objects, SVG ``<image>``/``<use>``, CSS ``@import`` and ``url(...)`` in
    ``<style>`` blocks and ``style`` attributes, and ES-module ``import`` in scripts. Plain links
    (``<a href>``) are not loads and are not listed. Returns the URLs in page order, without
    duplicates.
    """
    parser = _ReferenceParser()
    parser.feed(html)
    parser.close()
    return list(dict.fromkeys(url.strip() for url in parser.urls if _EXTERNAL.match(url)))


def offline_problems(folder: str | os.PathLike) -> dict[str, list[str]]:
    """External references of every ``*.html`` page below ``folder``: ``{relative path: urls}``, only pages with some.

    Also reports a page whose relative MathJax ``src`` or stylesheet ``href`` points at a file that does not
    exist (as ``"missing: <url>"``), so a moved page is caught too.
    """
    root = Path(folder)
    problems: dict[str, list[str]] = {}
    for page in sorted(root.rglob("*.html")):
        text = page.read_text(encoding="utf-8", errors="replace")
        found = external_references(text)
        found += [f"missing: {url}" for url in _local_loads(text) if not (page.parent / url).is_file()]
        if found:
            problems[page.relative_to(root).as_posix()] = found
    return problems
