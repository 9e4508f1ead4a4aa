"""Statistics over seeds and prose computed from them: every sentence that states a number comes from here.

Report notebooks must not hard-code claims ("SHC beats MDS") that the table next to them may
contradict. They build numeric tables with :func:`summary_frame` and word them with

* :func:`compare_sentence`: one paired comparison over seeds, e.g.
  ``"mAP@ALL, shc − mds at 16 bits: +0.041 [+0.012, +0.070] (95% t-interval over 3 seeds): higher."``;
  "lower" when the interval lies below 0, "not distinguishable here" when it contains 0;
* :func:`ranking_sentence`: the best method with its margin to the runner-up;
* :func:`what_this_shows`: the closing section of a notebook, a few such sentences per code length.

Paired intervals (:func:`paired_interval`) are Student-t intervals of the per-seed differences
``a_s - b_s``: the runs of two methods with one seed share data split and initialisation seed,
so pairing removes the seed-to-seed variation both share.

:func:`format_value` and :func:`summary_table` render numbers for readers (4 significant digits,
no ``np.float64(...)`` reprs).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "PairedInterval",
    "confidence_level",
    "mean_interval",
    "compare_sentence",
    "counted",
    "percent_words",
    "format_value",
    "paired_by_seed",
    "paired_interval",
    "ranking_sentence",
    "summary_frame",
    "summary_table",
    "what_this_shows",
    "what_this_shows_markdown",
    "signed_interval",
    "signed_number",
]

MINUS = "\u2212"  # typographic minus for "a − b"


@dataclass(frozen=True)
class PairedInterval:
    """Mean of the paired differences ``a - b`` over seeds and its two-sided t-interval.

    ``low``/``high`` are NaN when the interval is undefined (fewer than two pairs); ``reason`` then
    says why.
    """

    mean: float
    low: float
    high: float
    n: int
    confidence: float
    reason: str | None = None

    @property
    def defined(self) -> bool:
        return math.isfinite(self.low) and math.isfinite(self.high)

    @property
    def verdict(self) -> str:
        """ "higher" (interval above 0), "lower" (below 0), "not distinguishable" (contains 0) or "undetermined"."""
        if not self.defined:
            return "undetermined"
        if self.low > 0:
            return "higher"
        if self.high < 0:
            return "lower"
        return "not distinguishable"


def confidence_level(confidence: float) -> float:
    """``confidence`` as a float in (0, 1), or a ValueError that names the fix."""
    if isinstance(confidence, bool) or not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), e.g. 0.95 for a 95% interval; got {confidence!r}.")
    return float(confidence)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``values`` (one per seed) and its two-sided Student-t interval ``(mean, low, high)``:
    ``mean ± t_{(1 + confidence) / 2, n - 1} * sd / sqrt(n)``, ``sd`` the sample standard deviation (ddof = 1).

    One value gives NaN bounds; a NaN value gives NaN everywhere (the caller decides whether that is an error:
    :func:`paired_interval` refuses it, a figure shows the gap). No values: ValueError.
    """
    confidence = confidence_level(confidence)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"values must be 1-D with at least one value (one per seed); got shape {values.shape}.")
    mean = float(values.mean())
    if values.size == 1:
        return mean, math.nan, math.nan
    from scipy.stats import t

    half_width = float(t.ppf((1.0 + confidence) / 2.0, values.size - 1) * values.std(ddof=1) / math.sqrt(values.size))
    return mean, mean - half_width, mean + half_width


def paired_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95) -> PairedInterval:
    """Student-t interval of the mean paired difference ``a_s - b_s`` over seeds ``s``.

    ``mean ± t_{(1 + confidence) / 2, n - 1} * sd / sqrt(n)`` with ``sd`` the sample standard deviation
    (ddof = 1) of the differences. With identical differences (sd = 0) the interval is the point.

    Parameters
    ----------
    a, b : sequences of float, equal length
        One value per seed, in the same seed order (see :func:`paired_by_seed`).
    confidence : float
        In (0, 1), e.g. 0.95.

    Returns
    -------
    PairedInterval
        With n < 2 the bounds are NaN and ``reason`` explains it (the mean is NaN for n = 0).
    """
    confidence = confidence_level(confidence)
    first, second = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if first.ndim != 1 or first.shape != second.shape:
        raise ValueError(f"a and b must be 1-D with one value per seed, in the same order; got {first.shape} and "
                         f"{second.shape}.")  # fmt: skip
    if not (np.isfinite(first).all() and np.isfinite(second).all()):
        raise ValueError("a and b must be finite; drop the seeds whose runs failed from both.")
    differences = first - second
    n = differences.size
    if n == 0:
        return PairedInterval(math.nan, math.nan, math.nan, 0, confidence, "no paired seeds")
    mean, low, high = mean_interval(differences, confidence)
    if n == 1:
        return PairedInterval(mean, low, high, 1, confidence, "one seed: no interval (run >= 2 seeds)")
    return PairedInterval(mean, low, high, n, confidence)


def _frame(rows: Any):
    import pandas as pd

    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    if frame.empty:
        raise ValueError("rows is empty; pass one row per run (e.g. shc.results.result_rows(configs)).")
    return frame


def summary_frame(rows: Any, metrics: Sequence[str], method: str = "label"):
    """Numeric tables of runs: per-seed values and their mean, std and count per (method, bits, metric).

    Parameters
    ----------
    rows : DataFrame or iterable of mappings
        One row per run with columns ``method`` (see below), ``bits``, ``seed`` and the metrics
        (``shc.results.result_rows``).
    metrics : sequence of str
        Metric columns, e.g. ``["mAP@ALL", "mAP@100"]``.
    method : str
        The column naming a method (default ``"label"``: the method plus a non-default S source).

    Returns
    -------
    summary, per_seed : pandas.DataFrame
        ``summary``: ``method, bits, metric, mean, std, n`` (std with ddof = 1, NaN for one seed);
        ``per_seed``: ``method, bits, seed, metric, value``. Both numeric, for ``save_table``.
    """
    frame = _frame(rows)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    missing = [c for c in (method, "bits", "seed", *metrics) if c not in frame.columns]
    if missing or not metrics:
        raise ValueError(f"rows need the columns {missing or metrics or ['<a metric>']}; they have "
                         f"{list(frame.columns)}.")  # fmt: skip
    per_seed = frame.melt(id_vars=[method, "bits", "seed"], value_vars=metrics, var_name="metric", value_name="value")
    per_seed = per_seed.rename(columns={method: "method"}).dropna(subset=["value"])
    per_seed = per_seed[["method", "bits", "seed", "metric", "value"]].astype({"value": float})
    summary = (per_seed.groupby(["method", "bits", "metric"], sort=False)["value"]
               .agg(mean="mean", std="std", n="count").reset_index())  # fmt: skip
    return summary, per_seed.reset_index(drop=True)


def paired_by_seed(per_seed: Any, metric: str, bits: int, name_a: str, name_b: str,
                   confidence: float = 0.95) -> PairedInterval:  # fmt: skip
    """:func:`paired_interval` of ``name_a - name_b`` over the seeds both have (``per_seed`` of :func:`summary_frame`)."""
    frame = _frame(per_seed)
    # plain arrays, not frame filters: the pages and the results commands ask for thousands of these
    methods, seeds, values = (frame[column].to_numpy() for column in ("method", "seed", "value"))
    at = (frame["metric"].to_numpy() == metric) & (frame["bits"].to_numpy() == bits)
    by_seed = {}
    for name in (name_a, name_b):
        mine = at & (methods == name)
        if not mine.any():
            raise ValueError(f"no {metric} values of {name!r} at {bits} bits; methods there: "
                             f"{sorted(set(methods[at].tolist()))}.")  # fmt: skip
        by_seed[name] = dict(zip(seeds[mine].tolist(), values[mine].tolist()))
        if len(by_seed[name]) < mine.sum():
            raise ValueError(f"{name!r} has several {metric} values for one seed at {bits} bits; one run per seed.")
    common = sorted(set(by_seed[name_a]) & set(by_seed[name_b]))
    return paired_interval(np.array([by_seed[name_a][seed] for seed in common], dtype=float),
                           np.array([by_seed[name_b][seed] for seed in common], dtype=float), confidence)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the right number: ``1 run``, ``3 runs``, ``1 center set``; ``plural`` where adding
    an s is wrong. Every sentence of a page counts through it (an audit found "1 runs", "1 coarse classes")."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def percent_words(share: float) -> str:
    """A share in whole percent that never rounds to a contradiction: ``"33%"``, but ``"under 1%"`` for a share
    above 0 that would print as 0% and ``"over 99%"`` for one below 1 that would print as 100%."""
    percent = f"{share:.0%}"
    if percent in ("0%", "100%") and 0 < share < 1:
        return "under 1%" if share < 0.5 else "over 99%"
    return percent


def format_value(value: Any, digits: int = 4) -> str:
    """A number for readers: ``digits`` significant digits in fixed point, integers as integers.

    NaN/None give "n/a", bools "yes"/"no"; numpy scalars print like Python numbers (no reprs);
    very large or small magnitudes use scientific notation. Anything else is ``str(value)``.
    """
    if value is None:
        return "n/a"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):d}"
    if isinstance(value, (float, np.floating)):
        number = float(value)
        if not math.isfinite(number):
            return "n/a" if math.isnan(number) else ("inf" if number > 0 else "-inf")
        if number == 0:
            return "0"
        magnitude = math.floor(math.log10(abs(number)))
        if not -4 <= magnitude < 6:
            return f"{number:.{digits - 1}e}"
        return f"{number:.{max(0, digits - 1 - magnitude)}f}"
    return str(value)


def metric_name(metric: str) -> str:
    """A metric key for readers: ``tie_aware_mAP@ALL`` -> ``tie-aware mAP@ALL``; an unseen-class pairing keeps its
    name in front: ``unseen@all_tie_aware_mAP@ALL`` -> ``unseen@all tie-aware mAP@ALL`` (others unchanged)."""
    if metric.startswith(("seen@", "unseen@")):
        pairing, rest = metric.split("_", 1)
        return f"{pairing} {metric_name(rest)}"
    return "tie-aware " + metric.removeprefix("tie_aware_") if metric.startswith("tie_aware_") else metric


def _signed(value: float, digits: int, places: int | None = None) -> str:
    """``+0.041``; an exact (or rounding-noise, below 1e-12) zero prints as ``0``: it has no sign to show."""
    if math.isfinite(value) and abs(value) < _ZERO:
        return "0"
    return f"{value:+.{_decimals([value], digits) if places is None else places}f}"


_ZERO = 1e-12


def _decimals(values: Sequence[float], digits: int) -> int:
    """At least ``digits`` decimals, more where the smallest non-zero magnitude would print as 0: two significant
    digits of it stay visible, so a difference shows its sign (-0.00032, never -0.000)."""
    small = [abs(v) for v in values if math.isfinite(v) and abs(v) >= _ZERO]
    if not small:
        return digits
    return max(digits, 1 - math.floor(math.log10(min(small))))


def signed_number(value: float, digits: int = 3) -> str:
    """``+0.041``, with more decimals where ``digits`` would print a non-zero value as 0 (``-0.00032``, never
    ``-0.000``); an exact zero prints as ``0``."""
    return _signed(value, digits)


#: What a one-seed comparison advises by default (:func:`compare_sentence`).
ONE_SEED_ADVICE = "run two or more seeds to test it"


def signed_interval(mean: float, low: float, high: float, digits: int = 3) -> str:
    """``+0.041 [+0.012, +0.070]``, all three with one number of decimals, enough to show each one's sign."""
    places = _decimals([mean, low, high], digits)
    return f"{_signed(mean, digits, places)} [{_signed(low, digits, places)}, {_signed(high, digits, places)}]"


def compare_sentence(name_a: str, name_b: str, interval: PairedInterval, metric: str, bits: int | None = None,
                     digits: int = 3, one_seed: str = ONE_SEED_ADVICE) -> str:  # fmt: skip
    """Word a paired comparison: the mean difference, its interval and "higher"/"lower"/"not distinguishable".

    Example: ``"mAP@ALL, shc − mds at 16 bits: +0.041 [+0.012, +0.070] (95% t-interval over 3 seeds):
    higher."`` The verdict is about ``name_a`` relative to ``name_b`` and follows only from the interval.
    ``one_seed``: what the sentence advises when only one seed has both runs (a page that draws one set on
    purpose says where the comparison over seeds is).
    """
    if not isinstance(interval, PairedInterval):
        raise TypeError("interval must be a PairedInterval (paired_interval or paired_by_seed).")
    where = f" at {bits} bits" if bits is not None else ""
    head = f"{metric_name(metric)}, {name_a} {MINUS} {name_b}{where}"
    if interval.n == 0:
        return f"{head}: no seed has both runs, so they cannot be compared."
    if not interval.defined:
        return (f"{head}: {_signed(interval.mean, digits)} from one seed; a difference from one seed has no "
                f"interval and cannot be told apart from seed noise ({one_seed}).")  # fmt: skip
    level = f"{interval.confidence:.0%} t-interval over {interval.n} seeds"
    verdict = {"higher": f"{name_a} is higher", "lower": f"{name_a} is lower",
               "not distinguishable": "not distinguishable here"}[interval.verdict]  # fmt: skip
    return f"{head}: {signed_interval(interval.mean, interval.low, interval.high, digits)} ({level}): {verdict}."


def _ranked(summary: Any, metric: str, bits: int, higher_is_better: bool):
    frame = _frame(summary)
    rows = frame[(frame["metric"] == metric) & (frame["bits"] == bits)].dropna(subset=["mean"])
    if rows.empty:
        raise ValueError(f"no {metric} rows at {bits} bits in the summary; metrics there: "
                         f"{sorted(frame['metric'].unique())}, bits {sorted(frame['bits'].unique())}.")  # fmt: skip
    return rows.sort_values("mean", ascending=not higher_is_better, kind="stable")


def _mean_with_spread(row, digits: int) -> str:
    spread = f" ± {row['std']:.{digits}f}" if row["n"] > 1 and math.isfinite(row["std"]) else ""
    seeds = f"{int(row['n'])} seed" + ("s" if row["n"] != 1 else "")
    return f"{row['mean']:.{digits}f}{spread}, {seeds}"


def ranking_sentence(summary: Any, metric: str, bits: int, higher_is_better: bool = True,
                     per_seed: Any = None, digits: int = 3, confidence: float = 0.95) -> str:  # fmt: skip
    """The best method at one code length and its margin to the runner-up, from the numbers.

    With ``per_seed`` (of :func:`summary_frame`) the margin is also checked by a paired interval, and
    the sentence says when the two are not distinguishable, and when the seeds both ran reverse the order of the
    means (possible only where one method has seeds the other lacks).
    """
    rows = _ranked(summary, metric, bits, higher_is_better)
    best = rows.iloc[0]
    better = "highest" if higher_is_better else "lowest"
    sentence = (f"At {bits} bits, {best['method']} has the {better} {metric_name(metric)} "
                f"({_mean_with_spread(best, digits)})")
    if len(rows) == 1:
        return sentence + "; it is the only method with this metric here."
    second = rows.iloc[1]
    margin = abs(best["mean"] - second["mean"])
    side = "above" if higher_is_better else "below"
    # a margin that would print as 0.000 gets the decimals that show it (an audit found "0.000 above")
    shown = digits if round(margin, digits) or margin < _ZERO else _decimals([margin], digits)
    sentence += f", {margin:.{shown}f} {side} {second['method']} ({_mean_with_spread(second, digits)})"
    if per_seed is not None:
        interval = paired_by_seed(per_seed, metric, bits, best["method"], second["method"], confidence)
        tied = []  # (row, interval) of every method the paired interval cannot tell from the best
        for _, row in rows.iloc[1:].iterrows():
            each = paired_by_seed(per_seed, metric, bits, best["method"], row["method"], confidence)
            if each.verdict == "not distinguishable":
                tied.append((row, each))
        named = [f"{row['method']} {signed_interval(each.mean, each.low, each.high, digits).split(' ', 1)[1]}"
                 for row, each in tied]
        if interval.verdict == "not distinguishable" and len(tied) > 1:  # no single best: name the whole group
            group = [best, *(row for row, _ in tied)]
            names = ", ".join(row["method"] for row in group[:-1]) + f" and {group[-1]['method']}"
            values = ", ".join(f"{row['method']} {_mean_with_spread(row, digits)}" for row in group)
            sentence = (f"At {bits} bits, {names}, not distinguishable, have the {better} {metric_name(metric)}: "
                        f"{values}; the paired {interval.confidence:.0%} interval over {interval.n} seeds of "
                        f"{best['method']} minus each of the others holds 0 ({', '.join(named)})")
            # the group ties its best, not necessarily each other (an audit: "lth, crh, shc-ls and mds, not
            # distinguishable" where crh and shc-ls are both above mds): name the pairs inside it that do differ
            apart = []
            for i, upper in enumerate(group[1:], 1):
                for lower in group[i + 1:]:
                    pair = paired_by_seed(per_seed, metric, bits, upper["method"], lower["method"], confidence)
                    if pair.verdict not in ("higher", "lower"):
                        continue
                    ahead = pair.verdict == ("higher" if higher_is_better else "lower")
                    first, second = (upper, lower) if ahead else (lower, upper)
                    mean, low, high = ((pair.mean, pair.low, pair.high) if ahead
                                       else (-pair.mean, -pair.high, -pair.low))
                    # the paired interval reads the seeds both ran; where they are fewer than the group's, or put
                    # the pair in the other order than the means over all seeds do, the sentence says so
                    seeds = (f" on the {pair.n} seeds both ran" if pair.n != interval.n or not ahead else "")
                    apart.append(f"{first['method']} {side} {second['method']}{seeds} "
                                 f"({signed_interval(mean, low, high, digits)})")
            if apart:
                listed = apart[0] if len(apart) == 1 else ", ".join(apart[:-1]) + " and " + apart[-1]
                sentence += f"; but within the group the paired intervals put {listed}, " + (
                    "its interval excluding 0" if len(apart) == 1 else "each interval excluding 0")
            return sentence + "."
        if interval.verdict == "not distinguishable":  # no single best: name both
            return (f"At {bits} bits, {best['method']} and {second['method']}, not distinguishable, have the "
                    f"{better} {metric_name(metric)}: {best['method']} {_mean_with_spread(best, digits)}, "
                    f"{second['method']} {_mean_with_spread(second, digits)}; the paired {interval.confidence:.0%} "
                    f"interval over {interval.n} seeds of their difference, "
                    f"{signed_interval(interval.mean, interval.low, interval.high, digits).split(' ', 1)[1]}, holds 0.")
        elif interval.verdict == "undetermined":
            sentence += "; with fewer than two paired seeds the margin is not tested"
        elif interval.verdict != ("higher" if higher_is_better else "lower"):  # the seeds both ran say otherwise
            return (sentence + f"; but on the {interval.n} seeds both ran, the paired {interval.confidence:.0%} "
                    f"interval of {best['method']} minus {second['method']}, "
                    f"{signed_interval(interval.mean, interval.low, interval.high, digits).split(' ', 1)[1]}, puts "
                    f"{second['method']} ahead: the means include seeds only one of them ran.")
        else:
            sentence += (f"; the paired {interval.confidence:.0%} interval of the difference, "
                         f"{signed_interval(interval.mean, interval.low, interval.high, digits).split(' ', 1)[1]}, "
                         "excludes 0")
            if tied:  # a method further down whose paired interval holds 0 (its seeds differ more): say so
                shown = [f"{row['method']} ({text.split(' ', 1)[1]})" for (row, _), text in zip(tied, named)]
                sentence += (f", but the paired intervals cannot tell {best['method']} from "
                             + (shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]))
    return sentence + "."


def what_this_shows(summary: Any, per_seed: Any, metric: str, reference: str | None = None,
                    higher_is_better: bool = True, digits: int = 3, confidence: float = 0.95) -> list[str]:  # fmt: skip
    """A notebook's closing sentences, all computed: per code length, the ranking and the reference's comparisons.

    Parameters
    ----------
    summary, per_seed : DataFrame
        The two results of :func:`summary_frame`.
    metric : str
        The metric the section is about, e.g. "mAP@ALL".
    reference : str, optional
        A method compared with every other one (e.g. "shc"); skipped at code lengths without it.
    higher_is_better : bool
        False for losses and times.
    """
    sentences = []
    frame = _frame(summary)
    for bits in sorted(frame[frame["metric"] == metric]["bits"].unique()):
        bits = int(bits)
        sentences.append(ranking_sentence(summary, metric, bits, higher_is_better, per_seed, digits, confidence))
        methods = list(_ranked(summary, metric, bits, higher_is_better)["method"])
        if reference is None or reference not in methods:
            continue
        for other in methods:
            if other != reference:
                interval = paired_by_seed(per_seed, metric, bits, reference, other, confidence)
                sentences.append(compare_sentence(reference, other, interval, metric, bits, digits))
    if not sentences:
        raise ValueError(f"the summary has no {metric} rows; metrics there: {sorted(frame['metric'].unique())}.")
    return sentences


def what_this_shows_markdown(sentences: Iterable[str], heading: str = "What this shows") -> str:
    """The sentences as a Markdown section (``IPython.display.Markdown(...)`` in a notebook)."""
    items = "\n".join(f"- {sentence}" for sentence in sentences)
    return f"## {heading}\n\n{items}\n"


def summary_table(summary: Mapping[str, Any], digits: int = 4, fmt: str = "html") -> str:
    """A small name -> value mapping (e.g. a notebook's ``publish_summary`` dict) as an HTML or Markdown table.

    Values go through :func:`format_value` (``digits`` significant digits), so readers see ``0.04812``,
    not ``np.float64(0.0481234...)``. ``fmt`` is "html" or "markdown".
    """
    if not isinstance(summary, Mapping) or not summary:
        raise ValueError("summary must be a non-empty mapping name -> value.")
    rows = [(str(name), format_value(value, digits)) for name, value in summary.items()]
    if fmt == "markdown":
        def cell(text: str) -> str:
            return text.replace("|", "\\|")

        return "| quantity | value |\n|---|---:|\n" + "".join(f"| {cell(n)} | {cell(v)} |\n" for n, v in rows)
    if fmt != "html":
        raise ValueError(f"fmt must be 'html' or 'markdown', got {fmt!r}.")
    body = "".join(f"<tr><td>{html.escape(n)}</td><td style=\"text-align:right\">{html.escape(v)}</td></tr>"
                   for n, v in rows)  # fmt: skip
    return f'<table class="shc-summary"><thead><tr><th>quantity</th><th>value</th></tr></thead><tbody>{body}</tbody></table>'
