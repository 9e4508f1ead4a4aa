"""Tests of shc.offline: exported pages reference no external URL and typeset their math offline."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import nbformat
import pytest

from shc import offline

MARKDOWN = (
    "# Offline math\n\n"
    "The similarity $\\mathbf{S}$ is approximated by\n\n"
    "$$\\min_{\\mathbf{H}} \\|\\mathbf{S} - \\mathbf{H}\\mathbf{H}^\\top / q\\|_F^2 \\quad \\boldsymbol{x}$$\n"
)


def _export(notebook, include_input: bool = True) -> str:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", embed_images=True)
    exporter.exclude_input = not include_input
    body, _ = exporter.from_notebook_node(notebook)
    return body


@pytest.fixture(scope="module")
def exported() -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell(MARKDOWN),
        nbformat.v4.new_code_cell("print('cost: $5')", outputs=[nbformat.v4.new_output("stream", text="cost: $5\n")]),
    ]
    return _export(notebook)


@pytest.fixture()
def offline_page(exported, tmp_path) -> Path:
    """The exported page rewritten and written two folders below the reports root, assets installed."""
    page = tmp_path / "quick" / "04_retrieval" / "04_retrieval-report.html"
    page.parent.mkdir(parents=True)
    page.write_text(offline.offline_html(exported, page, tmp_path / "quick"), encoding="utf-8")
    offline.install_assets(tmp_path / "quick")
    return page


def test_nbconvert_page_references_cdns_before_the_rewrite(exported):
    found = offline.external_references(exported)
    assert any("require" in url for url in found)
    assert any("mathjax" in url.lower() for url in found)
    assert any("mermaid" in url for url in found)


def test_rewritten_page_has_no_external_reference_and_loads_local_mathjax(offline_page):
    html = offline_page.read_text(encoding="utf-8")
    assert offline.external_references(html) == []
    sources = re.findall(r'<script[^>]*\bsrc="([^"]+)"', html)
    assert sources == ["../_assets/mathjax/tex-svg-full.js"]
    assert (offline_page.parent / sources[0]).resolve() == (offline_page.parents[1] / "_assets/mathjax/tex-svg-full.js")
    assert (offline_page.parent / sources[0]).read_bytes() == offline.MATHJAX_BUNDLE.read_bytes()
    assert "MathJax.Hub" not in html and "x-mathjax-config" not in html  # the MathJax 2 configuration is gone
    assert "inlineMath: [['$', '$']" in html  # nbconvert's $...$ delimiters, now for MathJax 3
    assert "\\mathbf{S}" in html  # the TeX itself is left for MathJax
    assert offline.offline_problems(offline_page.parents[1]) == {}


def test_offline_problems_finds_external_and_missing_references(offline_page):
    root = offline_page.parents[1]
    (root / "_assets" / "mathjax" / "tex-svg-full.js").unlink()
    (root / "other.html").write_text('<link rel="stylesheet" href="//cdn.example.org/a.css">', encoding="utf-8")
    problems = offline.offline_problems(root)
    assert problems == {
        "04_retrieval/04_retrieval-report.html": ["missing: ../_assets/mathjax/tex-svg-full.js"],
        "other.html": ["//cdn.example.org/a.css"],
    }


def test_external_references_lists_loads_not_links():
    page = """<html><head>
    <link rel="stylesheet" href="https://cdn.example.org/style.css">
    <link rel="icon" href="favicon.png">
    <style>/* see https://example.org/doc */ @import "http://fonts.example.org/f.css";
      .a { background: url('//img.example.org/bg.png'); } .b { background: url(data:image/png;base64,AAA); }</style>
    <script src="local.js"></script><script src="HTTPS://cdn.example.org/lib.js"></script>
    <script type="module">const m = await import("https://esm.example.org/m.mjs");</script>
    </head><body>
    <a href="https://github.com/org/shc">source</a>
    <img src="data:image/png;base64,AAAA"><img srcset="small.png 1x, https://img.example.org/big.png 2x">
    <div style="background-image: url(https://img.example.org/div.png)"></div>
    <iframe src="https://frame.example.org/"></iframe>
    </body></html>"""
    assert offline.external_references(page) == [
        "https://cdn.example.org/style.css",
        "http://fonts.example.org/f.css",
        "//img.example.org/bg.png",
        "HTTPS://cdn.example.org/lib.js",
        "https://esm.example.org/m.mjs",
        "https://img.example.org/big.png",
        "https://img.example.org/div.png",
        "https://frame.example.org/",
    ]


def test_offline_html_refuses_pages_it_cannot_make_offline(tmp_path):
    with pytest.raises(ValueError, match="https://img.example.org/x.png"):
        offline.offline_html('<img src="https://img.example.org/x.png">', tmp_path / "a.html", tmp_path)
    with pytest.raises(ValueError, match="mermaid"):
        offline.offline_html('<div class="jp-Mermaid"><pre class="mermaid">graph TD</pre></div>', tmp_path / "a.html",
                             tmp_path)  # fmt: skip
    with pytest.raises(TypeError, match="html must be a str"):
        offline.offline_html(b"<html></html>", tmp_path / "a.html", tmp_path)


def test_page_without_mathjax_gets_none(tmp_path):
    page = "<html><head><title>index</title></head><body><p>$5</p></body></html>"
    assert offline.offline_html(page, tmp_path / "index.html", tmp_path) == page


def test_install_assets_copies_once_and_repairs(tmp_path):
    bundle = offline.install_assets(tmp_path)
    assert bundle == tmp_path / "_assets" / "mathjax" / "tex-svg-full.js"
    assert bundle.read_bytes() == offline.MATHJAX_BUNDLE.read_bytes()
    assert (bundle.parent / "LICENSE").read_text(encoding="utf-8").count("Apache License") >= 1
    stamp = bundle.stat().st_mtime_ns
    os.utime(bundle, ns=(stamp - 10**9, stamp - 10**9))
    offline.install_assets(tmp_path)
    assert bundle.stat().st_mtime_ns == stamp - 10**9  # unchanged copy left alone
    bundle.write_text("truncated", encoding="utf-8")
    offline.install_assets(tmp_path)
    assert bundle.read_bytes() == offline.MATHJAX_BUNDLE.read_bytes()


def test_mathjax_tags_reject_external_urls():
    with pytest.raises(ValueError, match="external URL"):
        offline.mathjax_tags("https://cdn.example.org/mathjax.js")


def _chromium_dom(page: Path) -> str:
    from shc.reports.browser import find_chromium, rendered_dom

    if find_chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium); the browser check needs it")
    return rendered_dom(page)


@pytest.mark.browser
def test_math_is_typeset_in_headless_chromium_without_network(offline_page):
    dom = _chromium_dom(offline_page)
    assert "<mjx-container" in dom, "MathJax did not typeset the page"
    assert dom.count('display="true"') >= 1  # the $$...$$ equation
    text = re.sub(r"<script\b.*?</script>|<style\b.*?</style>", "", dom, flags=re.DOTALL)
    assert "$\\mathbf" not in text and "$$\\min" not in text  # no raw TeX left
    assert "cost: $5" in text  # code output is not touched


@pytest.mark.browser
def test_browser_check_passes_the_offline_page_and_fails_it_without_mathjax_or_with_a_dead_link(offline_page):
    """shc.reports.browser on what Chromium shows: the clean page has no problem; the same page with its MathJax
    script removed shows raw TeX, and a link to a missing file is dead."""
    from shc.reports.browser import browser_problems

    assert browser_problems(offline_page, _chromium_dom(offline_page)) == []
    html = offline_page.read_text(encoding="utf-8")
    without = re.sub(r"<script[^>]*mathjax[^>]*>\s*</script>", "", html, flags=re.IGNORECASE)
    assert without != html
    broken = offline_page.with_name("broken-report.html")
    broken.write_text(without.replace("</body>", '<p><a href="tables/missing.csv">data</a></p></body>'),
                      encoding="utf-8")
    kinds = {problem.kind: problem.detail for problem in browser_problems(broken, _chromium_dom(broken))}
    assert set(kinds) == {"raw-tex", "dead-link"}, kinds
    assert "\\mathbf" in kinds["raw-tex"] and "tables/missing.csv" in kinds["dead-link"]


def test_shared_stylesheet_stores_the_head_css_once_and_links_it_relatively(exported, tmp_path):
    head_css = [block for block in re.findall(r"<style[^>]*>(.*?)</style>", exported.split("</head>")[0], re.S)]
    assert sum(map(len, head_css)) > 100_000  # nbconvert's lab template repeats its CSS in every page
    pages = [tmp_path / "quick" / "04_retrieval" / "a.html", tmp_path / "fine" / "00_x" / "bits-16" / "b.html"]
    offline.install_assets(tmp_path)
    sources = [offline.offline_html(exported, page, tmp_path) for page in pages]
    rewritten = [offline.shared_stylesheet(source, page, tmp_path) for source, page in zip(sources, pages)]
    sheets = sorted((tmp_path / "_assets" / "css").iterdir())
    assert len(sheets) == 1 and re.fullmatch(r"page-[0-9a-f]{16}\.css", sheets[0].name)
    # the file holds exactly the head's CSS, in page order; the body is untouched
    assert sheets[0].read_text(encoding="utf-8") == "\n".join(css.strip("\n") for css in head_css) + "\n"
    for page, html, source in zip(pages, rewritten, sources):
        head, body = html.split("</head>", 1)
        assert "<style" not in head and body == source.split("</head>", 1)[1]
        href = re.findall(r'<link rel="stylesheet" href="([^"]+)">', head)
        assert len(href) == 1 and (page.parent / href[0]).resolve() == sheets[0].resolve()
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(html, encoding="utf-8")
    assert re.findall(r'href="([^"]+\.css)"', rewritten[1]) == [f"../../../_assets/css/{sheets[0].name}"]
    assert offline.offline_problems(tmp_path) == {}
    sheets[0].unlink()
    assert offline.offline_problems(tmp_path)["quick/04_retrieval/a.html"] == [f"missing: ../../_assets/css/{sheets[0].name}"]
    unstyled = "<html><head><title>t</title></head><body><style>.a{}</style></body></html>"
    assert offline.shared_stylesheet(unstyled, pages[0], tmp_path) == unstyled  # an output's own style stays


def test_prune_stylesheets_and_drop_unused_assets_keep_what_a_page_still_loads(tmp_path):
    preset = tmp_path / "quick"
    page = preset / "00_x" / "00_x-report.html"
    page.parent.mkdir(parents=True)
    new = offline.shared_stylesheet("<html><head><style>.new{}</style></head><body></body></html>", page, tmp_path)
    offline.shared_stylesheet("<html><head><style>.old{}</style></head><body></body></html>", page, tmp_path)
    building = preset / ".01_y.building-1" / "01_y-report.html"  # a page of a batch still running
    building.parent.mkdir()
    building.write_text(offline.shared_stylesheet("<html><head><style>.b{}</style></head></html>",
                                                  preset / "01_y" / "01_y-report.html", tmp_path), encoding="utf-8")
    page.write_text(new + f'<script src="../{offline.ASSETS_DIRNAME}/mathjax/tex-svg-full.js"></script>',
                    encoding="utf-8")
    offline.install_assets(preset)  # the old layout: MathJax in the preset's own folder, still loaded by the page
    assert len(list((tmp_path / "_assets" / "css").iterdir())) == 3
    old_sheet = [p for p in (tmp_path / "_assets" / "css").iterdir() if p.read_text() == ".old{}\n"]
    assert offline.drop_unused_assets(preset) == []  # just written: another batch may hold its page in memory
    hour_ago = time.time() - offline.STYLESHEET_GRACE_SECONDS - 1
    for sheet in (tmp_path / "_assets" / "css").iterdir():
        os.utime(sheet, (hour_ago, hour_ago))
    assert offline.drop_unused_assets(preset) == old_sheet  # no page links it any more
    kept = sorted(path.name for path in (tmp_path / "_assets" / "css").iterdir())
    assert len(kept) == 2 and all(name in page.read_text() + building.read_text() for name in kept)
    assert (preset / "_assets").is_dir()  # a page still loads MathJax from it
    page.write_text(new, encoding="utf-8")
    assert offline.drop_unused_assets(preset) == [preset / "_assets"] and not (preset / "_assets").exists()
