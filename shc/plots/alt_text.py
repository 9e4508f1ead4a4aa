"""Alt texts: a figure described in words from its own text (titles, axis labels, legends), for readers who cannot
see it, and the plain text of the TeX in its labels. :func:`shc.plots.style.save_figure` stores the text beside
each PNG; the report pages use it as the image's ``alt``."""

from __future__ import annotations

import re

from matplotlib.figure import Figure

__all__ = ["figure_alt_text", "plain_text", "wrapped_title"]

#: TeX that figure labels use, as plain text for an alt text (mathtext commands without an entry lose the backslash).
_TEX_WORDS = {"pm": "±", "leq": "≤", "le": "≤", "geq": "≥", "ge": "≥", "times": "×", "cdot": "·", "neq": "≠",
              "approx": "≈", "top": "T", "mu": "μ", "gamma": "γ", "lambda": "λ", "alpha": "α", "beta": "β",
              "sigma": "σ", "rho": "ρ", "Delta": "Δ", "delta": "δ", "infty": "∞", "to": "→", "rightarrow": "→",
              "ell": "l", "sum": "Σ", "in": "∈", "prime": "′"}


def plain_text(text: str) -> str:
    """A figure label as a reader hears it: matplotlib's mathtext (``$...$``) without dollars, braces and backslashes,
    ``\\mathrm{x}``-style wrappers dropped and symbols as characters (``$d_{\\min}$`` -> ``d_min``, ``$\\pm$`` ->
    ``±``); the lines of a label in two lines read as one, joined by a comma."""
    import re

    def math(match: re.Match) -> str:
        inner = re.sub(r"\\(?:mathrm|mathbf|mathit|mathcal|text|operatorname|bf|rm)\s*", "", match.group(1))
        inner = re.sub(r"\\([A-Za-z]+)", lambda word: _TEX_WORDS.get(word.group(1), word.group(1)), inner)
        inner = re.sub(r"\\[,;:! ]", " ", inner)
        return inner.replace("{", "").replace("}", "").replace("\\", "")

    text = re.sub(r"\s*\n\s*", ", ", text.strip())
    return re.sub(r"\s+", " ", re.sub(r"(?<!\\)\$(.*?)(?<!\\)\$", math, text)).replace("\\$", "$").strip()


def wrapped_title(axes, title: str, width: int, **kwargs):
    """Set ``title`` on ``axes`` wrapped to ``width`` characters a line (``textwrap.fill``, words kept whole) while
    its alt text reads it unwrapped: a line break of a wrapped name is no pause, and joining its lines with a comma
    read "Sandal + Ankle, boot" (a reader audit of `standard`'s page 04, issue 38). Returns the title's ``Text``."""
    import textwrap

    text = axes.set_title(textwrap.fill(title, width=width, break_long_words=False), **kwargs)
    text._shc_unwrapped = title  # what :func:`figure_alt_text` reads in place of the drawn lines
    return text


def _title(axes, loc: str) -> str:
    """The title of ``axes`` at ``loc`` as its alt text reads it: unwrapped where :func:`wrapped_title` set it."""
    artist = {"left": axes._left_title, "center": axes.title, "right": axes._right_title}[loc]
    return getattr(artist, "_shc_unwrapped", None) or artist.get_text()


def _is_colorbar(axes) -> bool:
    """A colour bar's axes (marked by ``_colorbar`` or, matplotlib >= 3.6, by their label): a scale, not a panel."""
    return getattr(axes, "_colorbar", None) is not None or axes.get_label() == "<colorbar>"


def _figure_legend_words(entries: list[str], drawn: list[tuple[str, set[str]]]) -> str:
    """The entries of a figure legend, said with where they are drawn: "in every panel" only for the entries that
    every panel draws (one per code length in a figure of panels per method), the others with their panels' names
    (a method drawn in its own panel only). An entry no panel labels is listed as the legend's."""
    shown = entries[:12]
    more = ", ..." if len(entries) > 12 else ""
    if len(drawn) <= 1:
        return "Lines in the panel: " + ", ".join(shown) + more
    everywhere = [entry for entry in shown if all(entry in labels for _, labels in drawn)]
    somewhere = {entry: [name for name, labels in drawn if entry in labels] for entry in shown
                 if entry not in everywhere}
    if not somewhere:
        return "Lines in every panel: " + ", ".join(shown) + more
    words = ["Legend: " + ", ".join(
        f"{entry} (in {', '.join(names)})" if names else entry for entry, names in somewhere.items())]
    if everywhere:
        words.append("in every panel: " + ", ".join(everywhere))
    return "; ".join(words) + more


def figure_alt_text(fig: Figure, limit: int = 600) -> str:
    """A description of ``fig`` for readers who cannot see it (an image's alt text), from its own text.

    The text :func:`save_figure` stored (:func:`figure_alt_text` of the figure plus the name of its data file)
    when there is one; otherwise the suptitle, then per panel its title, "y against x" (an axis label the panel
    lacks is read from a panel it shares that axis with) and the legend entries,
    then a line under all panels (``supxlabel``), then the entries of a legend beside the panels (a figure legend: what every panel draws). A panel's title is
    all of its titles (left, centre, right: ``set_title(..., loc="left")`` is a panel's name in several figures).
    """
    stored = getattr(fig, "_shc_alt", None)
    if stored:
        return stored
    parts = []
    suptitle = plain_text(fig._suptitle.get_text()) if getattr(fig, "_suptitle", None) is not None else ""
    if suptitle:
        parts.append(suptitle)
    panels, count, drawn = [], 0, []
    for axes in fig.axes:
        if not axes.get_visible() or _is_colorbar(axes):
            continue
        count += 1
        title = " ".join(plain_text(_title(axes, loc)) for loc in ("left", "center", "right")
                         if axes.get_title(loc))  # a panel's name is often its left-aligned title
        drawn.append((title or f"panel {count}", {plain_text(label) for label in axes.get_legend_handles_labels()[1]}))
        x, y = (plain_text(_axis_label(axes, which)) for which in ("x", "y"))
        words = [title] if title else []
        if x and y:
            words.append(f"{y} against {x}")
        elif x or y:  # e.g. a row of panels whose y axes differ, each titled with its quantity
            words.append(f"x axis: {x}" if x else f"y axis: {y}")
        legend = axes.get_legend()
        if legend is not None:
            entries = [plain_text(text.get_text()) for text in legend.get_texts() if text.get_text()]
            if entries:
                words.append("lines: " + ", ".join(entries[:12]) + (", ..." if len(entries) > 12 else ""))
        if words:
            panels.append("; ".join(words))
    panel_part = len(parts)  # where the panels' words go: the part a long text shortens first
    if panels:  # the count is of the panels drawn, not of their distinct descriptions
        parts.append(f"{count} panels: " + _panel_words(panels) if count > 1 else panels[0])
    supxlabel = plain_text(fig._supxlabel.get_text()) if getattr(fig, "_supxlabel", None) is not None else ""
    if supxlabel:  # a line under every panel (the budgets of a convergence grid's shared axis)
        parts.append(supxlabel)
    shared = [plain_text(text.get_text()) for legend in fig.legends for text in legend.get_texts() if text.get_text()]
    if shared:  # a legend beside the panels (``fig.legend``): the panels each of its entries is drawn in
        parts.append(_figure_legend_words(shared, drawn))
    text = ". ".join(parts) or "A figure of this report"
    if len(text) > limit and panels and count > 1:  # the lines under and beside the panels say more than their tail
        spare = limit - (len(text) - len(parts[panel_part]))
        if spare > 40:
            parts[panel_part] = _shorten(parts[panel_part], spare)
            text = ". ".join(parts)
    return text if len(text) <= limit else _shorten(text, limit)


def _shorten(text: str, width: int) -> str:
    """``text`` cut to at most ``width`` characters at a word's end, marked ``...`` (a cut inside a word read
    "Hamming distanc..." on ``standard-fine``'s page 02, issue 38); inside the word only when one word fills it."""
    if len(text) <= width:
        return text
    head = text[: width - 2]  # one character more than fits: whether the cut falls between two words
    cut = head.rfind(" ")
    head = head[:cut] if cut > 0 else head[:-1]
    return head.rstrip(" ,;:.|") + "..."


def _panel_words(panels: list[str]) -> str:
    """The panels' descriptions joined by " | ", once each; a grid whose rows repeat the same panels under a name
    ("16 bits: loss", "16 bits: mAP", "32 bits: loss", "32 bits: mAP") as one row's panels and the rows' names."""
    heads = [panel.split(": ", 1) for panel in panels]
    # a row's name is a plain name before its panel's words ("16 bits: loss"), not a panel's own words up to an
    # "x axis: " marker (a 2 x 3 grid of six different panels read as rows of one panel, issue 38's audit)
    if all(len(head) == 2 and ";" not in head[0] and not head[0].endswith("axis") for head in heads):
        rows = list(dict.fromkeys(head for head, _ in heads))
        tails = [[tail for head, tail in heads if head == row] for row in rows]
        if len(rows) > 1 and all(row == tails[0] for row in tails) and len(tails[0]) * len(rows) == len(panels):
            return f"a row each for {', '.join(rows[:-1])} and {rows[-1]}, each row: " + " | ".join(tails[0])
    # panels that differ only in their titles ("random: d_min = 1; center pairs against Hamming distance ..." six
    # times): the shared words once, then the titles. Said six times, they ran past the limit and cut the last
    # panel's words mid-phrase (a reader audit of `standard`'s page 02, issue 38)
    split = [panel.split("; ", 1) for panel in panels]
    if len(split) > 1 and all(len(parts) == 2 for parts in split) and len({tail for _, tail in split}) == 1:
        titles = list(dict.fromkeys(title for title, _ in split))
        if len(titles) == len(split):
            return f"each with {split[0][1]}, titled " + " | ".join(titles)
    return " | ".join(dict.fromkeys(panels))


def _axis_label(axes, which: str) -> str:
    """The ``which`` ("x" or "y") axis label of ``axes``, or, where it has none, that of an axes it shares that axis
    with: ``subplots(sharey=True)`` labels only the first panel's y axis and ``sharex=True`` only the bottom row's x
    axis, yet every panel plots against them (an alt text named the axes of the labelled panel alone)."""
    own = axes.get_xlabel() if which == "x" else axes.get_ylabel()
    if own:
        return own
    shared = axes.get_shared_x_axes() if which == "x" else axes.get_shared_y_axes()
    for sibling in shared.get_siblings(axes):
        label = sibling.get_xlabel() if which == "x" else sibling.get_ylabel()
        if label:
            return label
    return ""
