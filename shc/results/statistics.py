"""Statistics over seeds of :func:`~shc.results.reading.result_rows`: paired comparisons of methods and presets.

:func:`ranking_line` orders the methods at one code length, joined by ``>`` or ``≈`` after the paired 95% interval
of each neighbour pair; :func:`regime_rows` sets two presets' runs side by side, paired by seed (``--versus``),
:func:`run_differences` pairs them run by run and :func:`verdict_changes` says which verdicts of a reference method
moved between them (``--versus-csv``: the same grid trained twice, say on two machines);
:func:`headline_rows` is the README's headline (``--headline``): SHC, shc-ls, CRH and the best baseline per length, and
:func:`verdict_sentence` the reference against every other method in one computed sentence per length.
The statistics themselves are :mod:`shc.stats`.
"""

from __future__ import annotations

import pandas as pd

from shc.evaluation import PRIMARY_METRIC


def _per_method(rows: pd.DataFrame, metrics: list[str]):
    """:func:`shc.stats.summary_frame` by method, for rows with at most one run per (method, code length, seed): a
    results file holds other datasets and other S sources or classifier codes of a method too, which would be
    paired as if they were seeds."""
    from shc.stats import summary_frame

    keys = [column for column in ("method", "bits", "seed") if column in rows]
    twice = rows[rows.duplicated(keys, keep=False)] if len(keys) == 3 else rows.iloc[:0]
    if not twice.empty:
        differ = [column for column in ("dataset", "label", "similarity", "classifier_codes") if column in rows
                  and twice[column].nunique(dropna=False) > 1]
        first = twice.iloc[0]
        raise ValueError(f"the rows hold several runs of {first['method']} at {first['bits']} bits, seed "
                         f"{first['seed']} (they differ in {', '.join(differ) or 'nothing recorded'}); keep one "
                         "dataset and one variant per method first, as python -m shc.results does.")
    return summary_frame(rows, metrics, method="method")


def ranking_line(rows: pd.DataFrame, metric: str, bits: int) -> str:
    """The methods at ``bits`` from best to worst mean ``metric``, each joined to the next by ``>`` when the paired
    95% interval of their difference over seeds lies above 0 and by ``≈`` when it contains 0, e.g.
    ``lth > greedyhash ≈ shc-ls > shc``; ``<`` where it lies below 0 (the means include seeds only one of the two
    ran, and on the seeds both ran the order reverses), ``?`` where fewer than two seeds have both (no interval).
    ``rows``: :func:`result_rows`."""
    from shc.stats import paired_by_seed

    summary, per_seed = _per_method(rows, [metric])
    at = summary[summary["bits"] == bits].sort_values("mean", ascending=False, kind="stable")
    if at.empty:
        raise ValueError(f"no {metric} values at {bits} bits; code lengths there: {sorted(summary['bits'].unique())}.")
    names = list(at["method"])
    joints = {"higher": " > ", "not distinguishable": " ≈ ", "lower": " < "}
    parts = [names[0]]
    for upper, lower in zip(names, names[1:]):
        parts.append(joints.get(paired_by_seed(per_seed, metric, bits, upper, lower).verdict, " ? ") + lower)
    return "".join(parts)


def regime_rows(rows_a: pd.DataFrame, rows_b: pd.DataFrame, metric: str = PRIMARY_METRIC) -> pd.DataFrame:
    """Two presets' runs of the same methods, code lengths and seeds side by side (e.g. from scratch and
    pretrained): per (bits, method) the mean ± std of ``metric`` in each, the paired change ``b - a`` over the
    seeds both have (same split and seed) with its 95% t-interval, and each method's rank (1 = best mean) in
    each. Only the (method, bits) cells both presets have are compared."""
    import pandas as pd

    from shc.stats import paired_interval, signed_interval, signed_number

    keys = ["method", "bits", "seed"]
    merged = rows_a[[*keys, metric]].merge(rows_b[[*keys, metric]], on=keys, suffixes=(" a", " b"))
    merged = merged.dropna(subset=[f"{metric} a", f"{metric} b"])  # a run without the metric pairs with nothing
    if merged.empty:
        raise ValueError("the two grids share no (method, code length, seed) run; compare presets with common "
                         "methods, lengths and seeds.")
    out = []
    for (bits, method), cell in merged.groupby(["bits", "method"], sort=True):
        a, b = cell[f"{metric} a"].to_numpy(), cell[f"{metric} b"].to_numpy()
        change = paired_interval(b, a)
        out.append({"bits": bits, "method": method, "mean a": a.mean(), "std a": a.std(ddof=1) if a.size > 1 else
                    float("nan"), "mean b": b.mean(), "std b": b.std(ddof=1) if b.size > 1 else float("nan"),
                    "change": change.mean, "low": change.low, "high": change.high, "seeds": a.size,
                    "change [95% CI]": signed_interval(change.mean, change.low, change.high)
                    if change.defined else f"{signed_number(change.mean)} (one seed)", "verdict": change.verdict})
    frame = pd.DataFrame(out)
    for side in ("a", "b"):
        frame[f"rank {side}"] = frame.groupby("bits")[f"mean {side}"].rank(ascending=False, method="min").astype(int)
    return frame.sort_values(["bits", "rank b"], kind="stable").reset_index(drop=True)


def run_differences(rows_a: pd.DataFrame, rows_b: pd.DataFrame, metric: str = PRIMARY_METRIC) -> pd.DataFrame:
    """Two grids run by run: for each (method, code length, seed) both hold, ``metric`` in each and the difference
    ``b - a``, largest ``|b - a|`` first (ties kept in method, length and seed order); with each side's selected epoch
    where the rows record it (``selected_epoch``). What ``--versus-csv`` summarises as the mean and the largest
    difference; an empty frame when the grids share no run."""
    keys = ["method", "bits", "seed"]
    extra = [column for column in ("selected_epoch",) if column in rows_a and column in rows_b]
    merged = rows_a[[*keys, metric, *extra]].merge(rows_b[[*keys, metric, *extra]], on=keys, suffixes=(" a", " b"))
    merged = merged.dropna(subset=[f"{metric} a", f"{metric} b"])
    merged["difference"] = merged[f"{metric} b"] - merged[f"{metric} a"]
    merged = merged.sort_values(keys, kind="stable")
    return merged.iloc[(-merged["difference"].abs()).argsort(kind="stable")].reset_index(drop=True)


def verdict_changes(rows_a: pd.DataFrame, rows_b: pd.DataFrame, metric: str = PRIMARY_METRIC,
                    reference: str = "shc", confidence: float = 0.95) -> pd.DataFrame:
    """The verdicts of ``reference`` against every other method in two grids of the same methods: per code length
    and method that both grids hold with the reference, the paired interval's verdict in each ("above", "below",
    "ties"; "untested" under two paired seeds), whether it ``moved`` and whether it ``reversed`` (above in one, below
    in the other). Which of a grid's findings held when it was trained again (``--versus-csv``)."""
    from shc.stats import paired_by_seed

    sides = [_per_method(rows, [metric]) for rows in (rows_a, rows_b)]
    cells = [{(int(bits), name) for bits, name in zip(summary["bits"], summary["method"])} for summary, _ in sides]
    common = cells[0] & cells[1]
    order = list(dict.fromkeys(rows_a["method"]))  # the grid's method order at each length
    out = []
    for bits, name in sorted(common, key=lambda cell: (cell[0], order.index(cell[1]))):
        if name == reference or (bits, reference) not in common:
            continue
        verdicts = [_HEADLINE_VERDICTS.get(paired_by_seed(per_seed, metric, bits, reference, name, confidence).verdict,
                                           "untested") for _, per_seed in sides]
        out.append({"bits": bits, "method": name, "verdict a": verdicts[0], "verdict b": verdicts[1],
                    "moved": verdicts[0] != verdicts[1], "reversed": {*verdicts} == {"above", "below"}})
    return pd.DataFrame(out, columns=["bits", "method", "verdict a", "verdict b", "moved", "reversed"])


#: What the headline says of a method against the reference, from the paired interval's verdict.
_HEADLINE_VERDICTS = {"higher": "above", "lower": "below", "not distinguishable": "ties"}


def headline_rows(rows: pd.DataFrame, metric: str = PRIMARY_METRIC, reference: str = "shc",
                  ours: tuple[str, ...] = ("shc-ls", "crh"), confidence: float = 0.95) -> pd.DataFrame:
    """The README's headline table (issue 38): per code length, ``reference`` (SHC), each method of ``ours`` and the
    best other method (the highest mean ``metric`` among the rest: the best baseline), each as ``mean ± std (n)``
    with, where the rows have it, ``hit``: the training center hit rate's mean over seeds (issue 35: did the network
    reach its targets), and, for all but the reference, its paired difference from the reference over the seeds both
    have with the 95% t-interval and the verdict ("above", "below", "ties"; one seed: no verdict). A method without
    runs at a length reads "not run". ``rows``: :func:`~shc.results.reading.result_rows` (or a results file's rows)."""
    from shc.stats import format_value, paired_by_seed, signed_interval, signed_number

    summary, per_seed = _per_method(rows, [metric])
    hits = _per_method(rows, ["train_center_hit_rate"])[1] \
        if "train_center_hit_rate" in rows and rows["train_center_hit_rate"].notna().any() else None
    if reference not in set(summary["method"]):
        raise ValueError(f"the headline compares with {reference!r}, which has no runs here; methods: "
                         f"{sorted(summary['method'].unique())}.")

    def cell(bits: int, name: str) -> str:
        found = summary[(summary["bits"] == bits) & (summary["method"] == name)]
        if found.empty:
            return "not run"
        mean, std, n = found.iloc[0][["mean", "std", "n"]]
        text = f"{format_value(float(mean), 3)} ± {format_value(float(std), 2)} ({int(n)})" if n > 1 else \
            f"{format_value(float(mean), 3)} (1 seed)"
        if hits is not None:  # issue 35: reachability beside mAP (did the network reach its targets)
            hit = hits[(hits["bits"] == bits) & (hits["method"] == name)]["value"].mean()
            text += f", hit {format_value(float(hit), 3)}" if pd.notna(hit) else ""
        if name == reference or reference not in set(summary[summary["bits"] == bits]["method"]):
            return text
        interval = paired_by_seed(per_seed, metric, bits, name, reference, confidence)
        if interval.n == 0:
            return f"{text}; no seed shared with {reference}"
        if not interval.defined:
            return f"{text}; {signed_number(interval.mean)} from one seed"
        difference = signed_interval(interval.mean, interval.low, interval.high)
        return f"{text}; {_HEADLINE_VERDICTS[interval.verdict]}, {difference}"

    out = []
    for bits in sorted(summary["bits"].unique()):
        here = summary[(summary["bits"] == bits) & ~summary["method"].isin([reference, *ours])]
        best = here.sort_values("mean", ascending=False, kind="stable")["method"].iloc[0] if not here.empty else None
        out.append({"bits": int(bits), reference: cell(bits, reference), **{name: cell(bits, name) for name in ours},
                    "best baseline": f"{best}: {cell(bits, best)}" if best else "not run"})
    return pd.DataFrame(out)


def verdict_sentence(rows: pd.DataFrame, bits: int, metric: str = PRIMARY_METRIC, reference: str = "shc",
                     confidence: float = 0.95) -> str:
    """One computed sentence of the reference against every other method at ``bits``, grouped by the paired
    interval's verdict, e.g. "At 16 bits, shc is above random, csq and mds; ties greedyhash; is below shc-ls and crh
    (paired 95% intervals over 3 seeds)." Methods with one seed paired with the reference are named as untested,
    those with none (no seed ran both) as not compared. ``rows``: :func:`~shc.results.reading.result_rows` (or a
    results file's rows)."""
    from shc.stats import paired_by_seed

    summary, per_seed = _per_method(rows, [metric])
    here = summary[summary["bits"] == bits].sort_values("mean", ascending=True, kind="stable")
    if reference not in set(here["method"]):
        raise ValueError(f"no {metric} runs of {reference!r} at {bits} bits; methods there: {sorted(here['method'])}.")
    groups: dict[str, list[str]] = {"above": [], "ties": [], "below": [], "untested": [], "unpaired": []}
    seeds = set()
    for name in here["method"]:
        if name == reference:
            continue
        interval = paired_by_seed(per_seed, metric, bits, reference, name, confidence)
        key = _HEADLINE_VERDICTS.get(interval.verdict, "untested" if interval.n else "unpaired")
        groups[key].append(name)
        if key not in ("untested", "unpaired"):
            seeds.add(interval.n)

    def names(items: list[str]) -> str:
        return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"

    parts = [f"{verb} {names(groups[key])}" for key, verb in (("above", "is above"), ("ties", "ties"),
                                                               ("below", "is below")) if groups[key]]
    counted = f"paired {confidence:.0%} intervals over {names([str(n) for n in sorted(seeds)])} seeds" if seeds else ""
    sentence = f"At {bits} bits, {reference} " + "; ".join(parts) if parts else f"At {bits} bits, {reference}"
    if groups["untested"]:
        sentence += f"{';' if parts else ''} untested against {names(groups['untested'])} (one seed)"
    if groups["unpaired"]:
        sentence += (f"{';' if parts or groups['untested'] else ''} not compared with {names(groups['unpaired'])} "
                     "(no seed ran both)")
    return sentence + (f" ({counted})." if counted else ".")
