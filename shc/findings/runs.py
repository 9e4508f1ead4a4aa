"""Computed prose about trained runs: retrieval rankings and ties, reachability, convergence, devices, ablations,
precision@K and the best methods (pages 03-06). Each function takes the table a notebook shows and returns sentences;
:mod:`shc.findings` registers them, so the report checker re-derives every one from the published files.
Comparisons between methods use the paired differences by seed with a 95% t-interval (:mod:`shc.stats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shc.evaluation import PRIMARY_METRIC
from shc.stats import (counted, format_value, metric_name, paired_by_seed, percent_words, signed_number,
                       summary_frame, what_this_shows)

__all__ = ["ablation_findings", "best_methods", "best_methods_label", "bullet_list",
           "convergence_findings", "device_findings", "device_phrase", "example_findings", "missed_targets",
           "precision_at_k_findings",
           "reachability_findings", "retrieval_findings", "same_run_findings", "same_run_methods", "same_run_rows"]


def retrieval_findings(runs: Any, metric: str = PRIMARY_METRIC, reference: str | None = "shc",
                       method: str = "label") -> list[str]:
    """Per code length: the best method and its margin, and ``reference`` against every other method
    (paired by seed). ``runs`` is :func:`shc.results.result_rows`."""
    summary, per_seed = summary_frame(runs, [metric], method=method)
    return what_this_shows(summary, per_seed, metric, reference=reference) + _short_of_targets(runs, method)


def missed_targets(runs: Any, method: str = "label") -> dict[int, Any]:
    """Per code length, the methods whose mean training center hit rate is below :data:`shc.reachability.REACHED`
    (a Series, method -> rate, lowest first); lengths where every recorded method reached them are left out."""
    from shc.reachability import REACHED

    key = "train_center_hit_rate"
    if key not in runs or runs[key].isna().all():
        return {}
    means = runs.groupby(["bits", method], sort=False)[key].mean().dropna()
    short = means[means < REACHED]
    return {int(bits): rates.droplevel("bits").sort_values() for bits, rates in short.groupby(level="bits")}


def _short_of_targets(runs: Any, method: str = "label") -> list[str]:
    """The caveat a ranking carries in its own list (a reader audit of ``standard-fine``'s page 04, issue 38: its
    64-bit comparisons stood without it, the warning sections above): per code length, the compared methods whose
    networks did not reach their targets."""
    from shc.reachability import REACHED

    return [f"At {bits} bits {_and([f'{name} ({rate:.3f})' for name, rate in rates.items()])} did not reach "
            f"{'its' if len(rates) == 1 else 'their'} targets on the training set (center hit rate below {REACHED:g}):"
            " the comparisons above that involve "
            f"{'it' if len(rates) == 1 else 'them'} measure what the network could fit, not the targets."
            for bits, rates in sorted(missed_targets(runs, method).items())]


#: how :func:`device_phrase` names the arithmetic of a CPU run that did not record it (runs before 2026-11-29)
UNRECORDED_ARITHMETIC = "an unrecorded arithmetic"


def device_phrase(rows: Any, markdown: bool = True) -> str:
    """Where a grid's runs trained, from their ``device`` column (:func:`shc.results.reading.result_rows`): one
    sentence naming the device when they share one; a warning naming each device and its run count when they do not
    (a run without the record counts as "not recorded"), since runs are not bit-identical across devices
    (docs/gpu.md); "" when no run records it (runs older than the record). When every run records its device and
    each code length (``bits``) trained on one, the warning names the device of each length instead: the comparisons
    of methods at one length are then within one device's runs. A run that records its ``precision`` (the arithmetic
    it trained in) counts as trained on "<device> in <precision>" (``cpu in bf16``): two CPUs differ in it, and a grid
    of one CPU in bf16 and another in fp32 does not come out the same (docs/standard-fine.md, "The 32-bit grid's CPU
    and arithmetic"); a CPU run from before that record counts as "cpu in an unrecorded arithmetic", and a grid of one
    kind of device where some runs lack the record "may have trained in more than one precision". ``markdown=False``:
    without the bold markers (for a page's findings, which are plain text)."""
    import pandas as pd

    devices = rows["device"] if "device" in rows else pd.Series([None] * len(rows), index=rows.index, dtype=object)
    bare = devices.dropna()
    precisions = rows["precision"] if "precision" in rows else pd.Series([None] * len(rows), index=rows.index,
                                                                          dtype=object)
    # "cpu in bf16": the arithmetic is part of where a run trained; a CPU's is the machine's, so a CPU run from
    # before the record says that it is not known (a CUDA run's "auto" is fp16 on every GPU)
    devices = devices.where(precisions.isna() | devices.isna(), devices.astype(str) + " in " + precisions.astype(str))
    devices = devices.where(precisions.notna() | (devices != "cpu"), f"cpu in {UNRECORDED_ARITHMETIC}")
    rows = rows.assign(device=devices)
    recorded = devices.dropna()
    if recorded.empty:
        return ""
    counts = recorded.value_counts().sort_index()
    if len(counts) == 1 and len(recorded) == len(rows):
        return f"Every run trained on {counts.index[0]}."
    # one kind of device in two arithmetics is a mix of precisions, a possible one where a run did not record its
    # own (it may have trained in either); the warning names what differs
    one_device = bare.nunique() == 1 and len(bare) == len(rows)
    what, where = (("precision", "precisions (docs/reliability.md, \"Precision\")") if one_device else
                   ("device", "devices (docs/gpu.md)"))
    trained = "may have trained" if one_device and precisions.isna().any() else "trained"
    trained_in = f"{trained} in" if one_device else f"{trained} on"
    bold = "**" if markdown else ""
    if len(recorded) == len(rows) and "bits" in rows and (rows.groupby("bits")["device"].nunique() == 1).all():
        lengths = {}  # device -> its code lengths, in the order of the lengths
        for bits, device in rows.groupby("bits")["device"].first().sort_index().items():
            lengths.setdefault(device, []).append(f"{int(bits)}")
        parts = [f"{_and(bits)} bits on {device}" for device, bits in lengths.items()]
        return (f"{bold}These runs {trained_in} more than one {what}, one per code length{bold}: " + ", ".join(parts)
                + f". Runs are not bit-identical across {where}: the comparisons of methods at one code "
                  f"length are within one {what}'s runs; a change between lengths of different {what}s also crosses "
                  f"{what}s, and so do training times.")
    parts = [f"{device} ({counted(count, 'run')})" for device, count in counts.items()]
    if len(recorded) < len(rows):
        parts.append(f"not recorded ({counted(len(rows) - len(recorded), 'run')})")
    if len(counts) < 2:  # one recorded device and unrecorded runs: they may all have trained on it
        return (f"{bold}These runs may have trained {'in' if one_device else 'on'} more than one {what}{bold}: " + ", ".join(parts) + ". Runs "
                f"are not bit-identical across {where}: compare methods within one {what}'s runs.")
    return (f"{bold}These runs {trained_in} more than one {what}{bold}: " + ", ".join(parts) + ". Runs are not "
            f"bit-identical across {where}: compare methods within one {what}'s runs.")


def _and(items: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def device_findings(runs: Any) -> list[str]:
    """Where the runs trained (:func:`device_phrase`, plain text): one device, which device each code length trained
    on, or a warning naming the devices of a mixed grid; no sentence for runs from before devices were recorded.
    ``runs`` is :func:`shc.results.result_rows`."""
    sentence = device_phrase(runs, markdown=False)
    return [sentence] if sentence else []


def reachability_findings(runs: Any) -> list[str]:
    """Did each network reach its own targets? Per code length, the methods whose mean training center hit rate
    (:mod:`shc.reachability`) is below :data:`shc.reachability.REACHED`, with the rate, or that every method
    reached them; a warning that a ranking involving those methods measures the backbone. ``runs`` is
    :func:`shc.results.result_rows`; runs without reachability (trained before it was recorded) are named."""
    from shc.reachability import REACHED

    key = "train_center_hit_rate"
    if key not in runs or runs[key].isna().all():
        return ["These runs record no reachability (they were trained before stage 3 stored the training codes): "
                "whether each network reached its targets is unknown. Retrain them to know."]
    sentences = []
    means = runs.groupby(["bits", "label"], sort=False)[key].mean()
    missed = missed_targets(runs)
    for bits in sorted(runs["bits"].unique()):
        at = means.loc[bits].dropna()  # a method without the record is named below, not counted as reached
        if at.empty:
            sentences.append(f"At {bits} bits no run records reachability: whether the networks reached their "
                             "targets is unknown.")
            continue
        short = missed.get(int(bits), at.iloc[:0])
        single = _single_runs_short(runs[(runs["bits"] == bits) & ~runs["label"].isin(short.index)], key, REACHED)
        if short.empty:
            sentences.append(f"At {bits} bits every method's network reached its targets on the training set (center "
                             f"hit rate at least {REACHED:g} over the seeds; lowest {at.idxmin()}, {at.min():.3f})"
                             + (f"; single runs below it: {single}" if single else "") + ".")
            continue
        listed = ", ".join(f"{name} ({value:.3f})" for name, value in short.items())
        sentences.append(f"At {bits} bits the networks of {listed} did not reach their targets on the training set "
                         f"(center hit rate below {REACHED:g}): a ranking that involves them measures what the network "
                         "could fit, not their targets"
                         + (f". Single runs below it of the methods that reached it over the seeds: {single}" if single
                            else "") + ".")
    missing = sorted(runs.loc[runs[key].isna(), "label"].unique())
    if missing:
        sentences.append(f"No reachability is recorded for some runs of {', '.join(missing)} (trained before it was).")
    return sentences


def _single_runs_short(runs: Any, key: str, reached: float) -> str:
    """``shc seed 1 (0.897), greedyhash seeds 1 and 2 (0.893, 0.895)``: the runs under ``reached``, per method (in
    the order of their lowest rate), or ``""``; a seed's comparisons involving one of them measure the network."""
    if "seed" not in runs:
        return ""
    low = runs[runs[key] < reached].sort_values(["seed"])
    parts = []
    for label, rows in sorted(low.groupby("label"), key=lambda item: item[1][key].min()):
        seeds = [str(int(seed)) for seed in rows["seed"]]
        rates = ", ".join(f"{value:.3f}" for value in rows[key])
        parts.append(f"{label} seed{'s' if len(seeds) > 1 else ''} {_and(seeds)} ({rates})")
    return ", ".join(parts)


def _late_stretch(stretches: list[float]) -> str:
    """What the late gain spans: from each run's last evaluation at or before three quarters of its epochs to its
    end, the last quarter only where evaluations fall there (a run evaluated at epochs 2 and 4 spans its last half)."""
    low, high = min(stretches), max(stretches)
    if np.isclose(low, 0.25) and np.isclose(high, 0.25):
        return "Over the last quarter of training"
    share = (f"{100 * low:.0f}%" if np.isclose(low, high) else f"{100 * low:.0f}-{100 * high:.0f}%")
    return (f"Over the last {share} of training (from the last evaluation at or before three quarters of its epochs, "
            "to the end)")


def convergence_findings(runs: Any, history: Any, reference: str = "last") -> list[str]:
    """How the runs ended: how many selected their last evaluated epoch, and how much validation mAP@ALL
    still rose over the last quarter of training (or the stretch from the last evaluation before it).

    ``reference`` says what the late gain is measured from. ``"best"`` (notebook 03 since 2026-12-05): how much the
    last quarter raised each run's best validation value, ``max(curve) - max(curve up to 3/4 of the epochs)``, never
    negative: the value model selection keeps, so a run that dipped before the last quarter and recovered is not
    "still climbing" (a reader audit of `standard`'s 03, issue 38: MDS's "+0.048" was mostly a dip at epoch 120 of
    160 that recovered to its earlier peak). ``"last"`` (pages built before; their checker re-derives them so): the
    last value minus the value at the last evaluation at or before 3/4 of the epochs.

    ``runs`` is :func:`shc.results.result_rows`, ``history`` :func:`shc.results.history_rows`. Selecting the
    last epoch is not by itself a sign of an unconverged run: the cosine schedule decays the learning rate to
    0 at the last epoch, so a converged run often peaks there. The late gain says whether the curve was still
    climbing; the test of convergence is doubling the budget (``benchmarks/standard_convergence.py``).

    The sentences name the code lengths they pool, count the runs that ended at their last epoch per budget (methods
    train for different epochs) and name the run of the largest late gain (a reader audit of `standard-fine`'s 03,
    issue 38: "10 of 24 runs ... (each run's own: epoch 120 for 21 runs, 480 for 3 runs)" read as if 24 of the 10
    had ended there, and the largest gain, one method's, was not named).
    """
    if reference not in ("last", "best"):
        raise ValueError(f"reference must be 'last' or 'best' (what the late gain is measured from), "
                         f"not {reference!r}.")
    column = PRIMARY_METRIC if PRIMARY_METRIC in history else "mAP@ALL"  # runs before tie-aware selection: id order
    evaluated = history.dropna(subset=[column]) if column in history else history
    last = evaluated.groupby(["label", "bits", "seed"])["epoch"].max().rename("last_evaluated")
    table = runs.set_index(["label", "bits", "seed"]).join(last)
    unevaluated = int(table["last_evaluated"].isna().sum())
    table = table.dropna(subset=["last_evaluated"])
    if table.empty:
        return ["No run has an evaluated epoch in its training history, so none can be said to have converged."]
    table["at_end"] = table["selected_epoch"] == table["last_evaluated"]
    at_end, total = int(table["at_end"].sum()), len(table)
    lengths = _lengths(table.index.get_level_values("bits"))
    if at_end == 0:
        sentence = (f"No run {lengths} selected its last evaluated epoch: every validation {metric_name(column)} "
                    "peaked before its run's end, so the schedule is long enough for model selection.")
    else:
        sentence = (f"{at_end} of {counted(total, 'run')} {lengths} selected "
                    f"{'its' if total == 1 else 'their'} last evaluated epoch "
                    f"({_ended_by_budget(table)}); under the cosine schedule, whose learning rate reaches 0 there, a "
                    "converged run often peaks at its end.")
    if unevaluated:
        sentence += (f" {unevaluated} run{'s have' if unevaluated > 1 else ' has'} no evaluated epoch and "
                     f"{'are' if unevaluated > 1 else 'is'} not counted.")
    gains, stretches = {}, []  # stretches: the share of each run's epochs the gain spans
    if column in evaluated:
        counted_runs = set(table.index)  # the runs the sentence counts: a curve without a row is not one of them
        for (label, bits, seed), curve in evaluated.groupby(["label", "bits", "seed"]):
            if (label, bits, seed) not in counted_runs:
                continue
            curve = curve.sort_values("epoch")
            late = curve[curve["epoch"] <= 0.75 * curve["epoch"].max()]
            if len(late) and len(curve) > 1:
                gains[(label, int(bits), int(seed))] = float(
                    curve[column].max() - late[column].max() if reference == "best"
                    else curve[column].iloc[-1] - late[column].iloc[-1])
                stretches.append(1.0 - late["epoch"].iloc[-1] / curve["epoch"].iloc[-1])
    if gains:
        (label, bits, seed), largest = max(gains.items(), key=lambda item: item[1])
        tops = sum(np.isclose(gain, largest) for gain in gains.values())
        whose = f": {label}, {bits} bits, seed {seed}" if tops == 1 else f", {tops} runs"  # a tie names no one run
        mean = float(np.mean(list(gains.values())))
        moved = f"rose by {mean:+.3f}" if mean >= 0 else f"fell by {-mean:.3f}"  # "rose by -0.010" before
        what = (f"each run's best validation {metric_name(column)} (the one model selection keeps)"
                if reference == "best" else f"validation {metric_name(column)}")
        sentence += (f" {_late_stretch(stretches)}, {what} {moved} on average "
                     f"(largest {largest:+.3f}{whose}); whether the "
                     "budget suffices is tested by doubling it (benchmarks/standard_convergence.py).")
    by_method = table.groupby(level="label")["at_end"].mean()
    worst = by_method.sort_values(ascending=False)
    detail = ", ".join(f"{name} {percent_words(share)}" for name, share in worst.items())
    sentences = [sentence, f"Share of runs selecting the last evaluated epoch, by method "
                           f"({lengths.removeprefix('at ')}): {detail}."]
    return sentences + ([_late_gain_by_method(gains, reference)] if gains else [])


def _late_gain_by_method(gains: Mapping[tuple[str, int, int], float], reference: str = "last") -> str:
    """The late gain's mean by method, largest first, and the range of the first method's runs: a pooled mean hides
    one method still climbing (a reader audit of ``standard-fine``'s page 03, issue 38: +0.023 on average while
    every MDS run rose by +0.047 to +0.154). With ``reference="best"`` the sentence says what the gain is."""
    import pandas as pd

    frame = pd.Series(gains, dtype=float).rename_axis(["label", "bits", "seed"])
    means = frame.groupby(level="label").mean().sort_values(ascending=False, kind="stable")
    first = frame.xs(means.index[0], level="label")
    spread = (f" (its {counted(len(first), 'run')} {signed_number(first.min())} to {signed_number(first.max())})"
              if len(first) > 1 else "")
    detail = ", ".join(f"{name} {signed_number(gain)}" for name, gain in means.items())  # never "+0.000"
    name = "The late gain of the best value" if reference == "best" else "The late gain"
    return f"{name} by method, mean over its runs: {detail}; largest {means.index[0]}{spread}."


def _lengths(bits: Any) -> str:
    """``at 16 bits`` or ``at 16, 32 and 64 bits``: the code lengths a pooled sentence covers."""
    values = sorted({int(b) for b in bits})
    if not values:
        raise ValueError("no code length to name: pass the bits of at least one run.")
    return f"at {_and([str(b) for b in values])} bits"


def _ended_by_budget(table: Any) -> str:
    """How many runs ended at their last evaluated epoch, per last epoch (each run's own budget; issue 38: budgets
    differ between methods, so no single epoch describes them): ``every run's last is epoch 80`` when one budget is
    shared, else ``8 of the 21 runs ending at epoch 120, 2 of the 3 runs ending at 480``."""
    groups = table.groupby(table["last_evaluated"].astype(int))["at_end"].agg(["sum", "size"]).sort_index()
    if len(groups) == 1:
        return f"every run's last is epoch {groups.index[0]}"
    parts = []
    for n, (epoch, row) in enumerate(groups.iterrows()):
        at = f"ending at {'epoch ' if n == 0 else ''}{epoch}"
        if int(row["size"]) == 1:  # "1 of the 1 run" reads oddly: say whether the one run did
            parts.append(f"{'' if row['sum'] else 'not '}the one run {at}")
        else:
            parts.append(f"{int(row['sum'])} of the {int(row['size'])} runs {at}")
    return ", ".join(parts)


def ablation_findings(runs: Any, variants: Mapping[str, str], metric: str = PRIMARY_METRIC,
                      reference: str = "shc") -> list[str]:
    """Notebook 05: ``reference`` against each other variant (``variants`` maps method -> display name)."""
    renamed = runs.assign(label=runs["label"].map(lambda name: variants.get(name, name)))
    return (what_this_shows(*summary_frame(renamed, [metric]), metric, reference=variants.get(reference, reference))
            + _short_of_targets(renamed))  # its own caveat, as retrieval_findings' (issue 38's audit of page 05)


def same_run_rows(runs: Sequence[tuple[Any, Any]], other: str = "csq") -> Any:
    """Which runs train exactly as method ``other`` does (issue 38): one row per run whose method has ``other``'s
    loss, with ``same_centers`` True where its stage-2 centers are ``other``'s (generated here, seeded as its stage
    2 does). ``runs`` are (config, its stage-2 centers) pairs. The table :func:`same_run_findings` words."""
    import pandas as pd

    from shc.centers import generate_centers
    from shc.methods import get_method

    spec = get_method(other)
    rows = [{"method": config.method, "bits": config.bits, "seed": config.seed, "classes": len(centers),
             "same_as": other, "same_centers": bool(np.array_equal(
                 np.asarray(centers), generate_centers(spec.centers, len(centers), config.bits, seed=config.seed)))}
            for config, centers in runs if config.method != other and get_method(config.method).loss == spec.loss]
    return pd.DataFrame(rows, columns=["method", "bits", "seed", "classes", "same_as", "same_centers"])


def _same_for_every_seed(rows: Any) -> Any:
    """:func:`same_run_rows` grouped by code length, method and the other method: whether every seed's centers are the
    other's (``all_same``) and the number of classes."""
    return rows.groupby(["bits", "method", "same_as"], sort=True).agg(
        all_same=("same_centers", "all"), classes=("classes", "first"))


def same_run_findings(rows: Any) -> list[str]:
    """One sentence per method and code length whose runs are, for every seed, another method's runs: the same loss
    on the same centers (MDS's generator returns Hadamard rows, CSQ's centers, when C <= 2q). ``rows`` is
    :func:`same_run_rows`."""
    if not len(rows):
        return []
    return [f"At {bits} bits the {method} runs are {other}'s runs: the same loss on the same centers (its generator "
            f"returned {other}'s {int(row['classes'])} centers for every seed), so their numbers are {other}'s, not "
            "a separate result."
            for (bits, method, other), row in _same_for_every_seed(rows).iterrows() if bool(row["all_same"])]


def same_run_methods(rows: Any, bits: int) -> dict[str, str]:
    """The methods whose runs at ``bits`` are, for every seed, another method's (:func:`same_run_rows`): method ->
    that method, e.g. ``{"distance": "csq"}`` at C <= 2q. A summary that shows such a method's number says whose it
    is (page 05's index line), as :func:`same_run_findings` does on the page."""
    if not len(rows):
        return {}
    grouped = _same_for_every_seed(rows)
    return {method: other for (at, method, other), row in grouped.iterrows() if at == bits and bool(row["all_same"])}


def bullet_list(sentences: Sequence[str]) -> str:
    return "\n".join(f"- {sentence}" for sentence in sentences)


def example_findings(frame: Any, method: str, bits: int) -> list[str]:
    """Page 04's example queries of one method (:meth:`shc.results.ExampleQueries.frame`: one row per shown result,
    columns ``query, query_class, rank, result, distance, correct``): how many of the shown results are of their
    query's class, in all and per query. The figure's title said it as a number the checker could not read."""
    if frame.empty or not {"query", "rank", "correct"} <= set(frame.columns):
        raise ValueError("frame needs the rows of ExampleQueries.frame() (query, rank, correct), one per result shown.")
    correct = frame["correct"].astype(bool)
    per_query = correct.groupby(frame["query"], sort=False).sum().astype(int)
    k = int(frame["rank"].max())
    return [f"{method}, {bits} bits: {int(correct.sum())} of the {len(frame)} results shown "
            f"({counted(len(per_query), 'query', 'queries')} x top {k}) are of their query's class (precision "
            f"{format_value(float(correct.mean()), 2)}); per query, in the figure's order: "
            f"{', '.join(str(value) for value in per_query)} of {k}."]


def precision_at_k_findings(frame: Any, bits: int, method: str = "method") -> list[str]:
    """How precision@K moves with K at one code length (:func:`shc.results.curve_rows` of kind "k"): per method,
    the value at the smallest K, the largest value and where, and the value at the largest K. Recall@K can only
    grow with K; precision@K need not fall (ties and class sizes shape it), so its course is stated, not assumed."""
    rows = frame[frame["bits"] == bits]
    sentences = []
    for name, group in rows.groupby(method, sort=False):
        curve = group.groupby("k")["precision"].mean().sort_index()
        if curve.empty:
            continue
        first_k, last_k, peak_k = int(curve.index[0]), int(curve.index[-1]), int(curve.idxmax())
        sentences.append(f"{name}: {format_value(curve.iloc[0], 3)} at K = {first_k}, highest "
                         f"{format_value(curve.max(), 3)} at K = {peak_k}, {format_value(curve.iloc[-1], 3)} at "
                         f"K = {last_k}")
    return [f"Precision@K at {bits} bits (mean over seeds): " + "; ".join(sentences) + "."] if sentences else []


def _top_verdicts(runs: Any, metric: str, bits: int, method: str, confidence: float
                  ) -> tuple[str | None, int, list[tuple[str, str]]]:
    """The method of the highest mean of ``metric`` at ``bits``, its number of seeds, and each other method with the
    paired interval's verdict of the top against it (:func:`shc.stats.paired_by_seed`), best mean first."""
    from shc.stats import paired_by_seed

    summary, per_seed = summary_frame(runs, [metric], method=method)
    here = summary[(summary["bits"] == bits) & (summary["metric"] == metric)].sort_values("mean", ascending=False,
                                                                                         kind="stable")
    if here.empty:
        return None, 0, []
    names = list(here["method"])
    top = names[0]
    return top, int(here["n"].iloc[0]), [(other, paired_by_seed(per_seed, metric, bits, top, other,
                                                                 confidence).verdict) for other in names[1:]]


def best_methods(runs: Any, metric: str, bits: int, method: str = "label", confidence: float = 0.95) -> list[str]:
    """The methods at the top of ``metric`` at ``bits``: the highest mean and every method the paired interval does
    not put below it: those it cannot tell apart from it, and any it puts above it on the seeds both ran (possible
    where the highest mean includes seeds the other lacks). One seed: only the highest. Best mean first."""
    top, _, verdicts = _top_verdicts(runs, metric, bits, method, confidence)
    if top is None:
        return []
    return [top, *(other for other, verdict in verdicts if verdict in ("not distinguishable", "lower"))]


def best_methods_label(runs: Any, metric: str, bits: int, method: str = "label") -> str:
    """:func:`best_methods` as a report index shows it: the one best method and those not distinguishable from it,
    a method the paired interval puts above the highest mean on the seeds both ran as "ahead on the shared seeds",
    "one seed, untested" where the top has a single seed, naming those whose network did not reach its targets on
    the training set (mean center hit rate below :data:`shc.reachability.REACHED`), since their place in a ranking
    measures what the network could fit."""
    from shc.reachability import REACHED

    top, seeds, verdicts = _top_verdicts(runs, metric, bits, method, 0.95)
    if top is None:
        return f"n/a (no run at {bits} bits)"
    tied = [other for other, verdict in verdicts if verdict == "not distinguishable"]
    ahead = [other for other, verdict in verdicts if verdict == "lower"]  # the top is lower than these
    best = [top, *tied, *ahead]
    # each tied method is measured against the top only: two of them may differ (a reader audit, 2026-12-05, read
    # "a, b, c (not distinguishable)" as a group of three where the interval of b - c excluded 0)
    label = top if not tied else f"{top}; not distinguishable from it: {', '.join(tied)}"
    if ahead:
        label += f"; {', '.join(ahead)} ahead of {top} on the seeds both ran"
    if seeds < 2 and not tied and not ahead:
        label += " (one seed, untested)"
    key = "train_center_hit_rate"
    if key in runs and best:
        at = runs[runs["bits"] == bits].groupby(method)[key].mean()
        short = [name for name in best if name in at and at[name] < REACHED]
        if short:
            label += f"; below the training hit rate of {REACHED:g}: {', '.join(short)}"
    return label
