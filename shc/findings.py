"""Computed prose: the sentences a report states about its numbers, generated from the tables they describe.

Every function takes the table a notebook shows and returns sentences. A notebook shows them with
``findings.show(name, table=<saved file>, ...)`` (the registry :data:`FINDINGS`, at the end of this module), which
computes them from the saved files and records how, so ``python -m shc.reports.check`` re-derives every one. No
sentence that states a number, a ranking or a comparison is typed into a notebook: change the numbers and the
sentences change with them (tested).
Comparisons between methods use the paired differences by seed with a 95% t-interval (:mod:`shc.stats`).
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

import numpy as np

from shc.evaluation import PRIMARY_METRIC
from shc.registry import Registry
from shc.stats import (ONE_SEED_ADVICE, compare_sentence, format_value, metric_name, paired_by_seed, summary_frame,
                       what_this_shows)

__all__ = ["FINDINGS", "FINDINGS_FILE", "Finding", "ablation_findings", "backbone_phrase", "best_methods",
           "best_methods_label", "center_findings", "coarse_structure_findings", "convergence_findings", "derive",
           "device_findings", "device_phrase", "findings_html", "geometry_findings", "hadamard_findings",
           "hierarchy_findings", "pair_findings", "precision_at_k_findings", "reachability_findings",
           "record_distance_finding", "retrieval_findings", "same_run_findings", "same_run_methods", "same_run_rows",
           "show", "sign_findings", "similarity_findings", "tie_findings"]

#: Notebook 00 draws one center set per method on purpose; its one-seed comparison says where the seeds are.
ONE_SET_ADVICE = "this page draws one center set per method; notebook 02 compares the methods over several seeds"

#: The range of stage-1 test accuracies in the paper's Table 2 (NABirds-B 48.44 %, Stanford Cars-A 73.49 %).
PAPER_ACCURACY = (0.4844, 0.7349)


def retrieval_findings(runs: Any, metric: str = PRIMARY_METRIC, reference: str | None = "shc",
                       method: str = "label") -> list[str]:
    """Per code length: the best method and its margin, and ``reference`` against every other method
    (paired by seed). ``runs`` is :func:`shc.results.result_rows`."""
    summary, per_seed = summary_frame(runs, [metric], method=method)
    return what_this_shows(summary, per_seed, metric, reference=reference)


def device_phrase(rows: Any, markdown: bool = True) -> str:
    """Where a grid's runs trained, from their ``device`` column (:func:`shc.results.reading.result_rows`): one
    sentence naming the device when they share one; a warning naming each device and its run count when they do not
    (a run without the record counts as "not recorded"), since runs are not bit-identical across devices
    (docs/gpu.md); "" when no run records it (runs older than the record). When every run records its device and
    each code length (``bits``) trained on one, the warning names the device of each length instead: the comparisons
    of methods at one length are then within one device's runs. ``markdown=False``: without the bold markers (for a
    page's findings, which are plain text)."""
    import pandas as pd

    devices = rows["device"] if "device" in rows else pd.Series([None] * len(rows), dtype=object)
    recorded = devices.dropna()
    if recorded.empty:
        return ""
    counts = recorded.value_counts().sort_index()
    if len(counts) == 1 and len(recorded) == len(rows):
        return f"Every run trained on {counts.index[0]}."
    bold = "**" if markdown else ""
    if len(recorded) == len(rows) and "bits" in rows and (rows.groupby("bits")["device"].nunique() == 1).all():
        lengths = {}  # device -> its code lengths, in the order of the lengths
        for bits, device in rows.groupby("bits")["device"].first().sort_index().items():
            lengths.setdefault(device, []).append(f"{int(bits)}")
        parts = [f"{_and(bits)} bits on {device}" for device, bits in lengths.items()]
        return (f"{bold}These runs trained on more than one device, one per code length{bold}: " + ", ".join(parts)
                + ". Runs are not bit-identical across devices (docs/gpu.md): the comparisons of methods at one code "
                  "length are within one device's runs; a change between lengths of different devices also crosses "
                  "devices, and so do training times.")
    parts = [f"{device} ({count} runs)" for device, count in counts.items()]
    if len(recorded) < len(rows):
        parts.append(f"not recorded ({len(rows) - len(recorded)} runs)")
    return (f"{bold}These runs trained on more than one device{bold}: " + ", ".join(parts) + ". Runs are not "
            "bit-identical across devices (docs/gpu.md): compare methods within one device's runs.")


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
    for bits in sorted(runs["bits"].unique()):
        at = means.loc[bits]
        short = at[at < REACHED]
        single = _single_runs_short(runs[(runs["bits"] == bits) & ~runs["label"].isin(short.index)], key, REACHED)
        if short.empty:
            sentences.append(f"At {bits} bits every method's network reached its targets on the training set (center "
                             f"hit rate at least {REACHED:g} over the seeds; lowest {at.idxmin()}, {at.min():.3f})"
                             + (f"; single runs below it: {single}" if single else "") + ".")
            continue
        listed = ", ".join(f"{name} ({value:.3f})" for name, value in short.sort_values().items())
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


def convergence_findings(runs: Any, history: Any) -> list[str]:
    """How the runs ended: how many selected their last evaluated epoch, and how much validation mAP@ALL
    still rose over the last quarter of training.

    ``runs`` is :func:`shc.results.result_rows`, ``history`` :func:`shc.results.history_rows`. Selecting the
    last epoch is not by itself a sign of an unconverged run: the cosine schedule decays the learning rate to
    0 at the last epoch, so a converged run often peaks there. The late gain says whether the curve was still
    climbing; the test of convergence is doubling the budget (``benchmarks/standard_convergence.py``).

    The sentences name the code lengths they pool, count the runs that ended at their last epoch per budget (methods
    train for different epochs) and name the run of the largest late gain (a reader audit of `standard-fine`'s 03,
    issue 38: "10 of 24 runs ... (each run's own: epoch 120 for 21 runs, 480 for 3 runs)" read as if 24 of the 10
    had ended there, and the largest gain, one method's, was not named).
    """
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
        sentence = (f"{at_end} of {total} runs {lengths} selected their last evaluated epoch "
                    f"({_ended_by_budget(table)}); under the cosine schedule, whose learning rate reaches 0 there, a "
                    "converged run often peaks at its end.")
    if unevaluated:
        sentence += (f" {unevaluated} run{'s have' if unevaluated > 1 else ' has'} no evaluated epoch and "
                     f"{'are' if unevaluated > 1 else 'is'} not counted.")
    gains = {}
    if column in evaluated:
        for (label, bits, seed), curve in evaluated.groupby(["label", "bits", "seed"]):
            curve = curve.sort_values("epoch")
            late = curve[curve["epoch"] <= 0.75 * curve["epoch"].max()]
            if len(late) and len(curve) > 1:
                gains[(label, int(bits), int(seed))] = float(curve[column].iloc[-1] - late[column].iloc[-1])
    if gains:
        (label, bits, seed), largest = max(gains.items(), key=lambda item: item[1])
        tops = sum(np.isclose(gain, largest) for gain in gains.values())
        whose = f": {label}, {bits} bits, seed {seed}" if tops == 1 else f", {tops} runs"  # a tie names no one run
        sentence += (f" Over the last quarter of training, validation {metric_name(column)} rose by "
                     f"{np.mean(list(gains.values())):+.3f} on average (largest {largest:+.3f}{whose}); whether the "
                     "budget suffices is tested by doubling it (benchmarks/standard_convergence.py).")
    by_method = table.groupby(level="label")["at_end"].mean()
    worst = by_method.sort_values(ascending=False)
    detail = ", ".join(f"{name} {share:.0%}" for name, share in worst.items())
    return [sentence, f"Share of runs selecting the last evaluated epoch, by method ({lengths.removeprefix('at ')}): "
                      f"{detail}."]


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


def similarity_findings(accuracy: Any, correlations: Any, agreement: Any | None) -> list[str]:
    """Stage 1: the classifier's accuracy against the paper's range, the rank agreement of the S sources,
    and which S recovers the class hierarchy better (tables of notebook 01)."""
    sentences = []
    mean = float(accuracy["test accuracy"].iloc[0])
    std = accuracy["test accuracy std"].iloc[0]
    seeds = int(accuracy["seeds"].iloc[0])
    low, high = PAPER_ACCURACY
    place = "inside" if low <= mean <= high else ("below" if mean < low else "above")
    spread = f" ± {format_value(std, 2)}" if seeds > 1 and np.isfinite(std) else ""
    sentences.append(f"The stage-1 classifier reaches a test accuracy of {format_value(mean, 3)}{spread} over "
                     f"{seeds} seed(s), {place} the paper's range of {low:.1%} to {high:.1%} (Table 2).")
    names = list(correlations.index)
    seeds_s = [name for name in names if name.startswith("data-dependent S")]
    if len(seeds_s) > 1:
        values = [correlations.loc[a, b] for i, a in enumerate(seeds_s) for b in seeds_s[i + 1:]]
        sentences.append(f"The data-dependent S of different seeds agree with Spearman between "
                         f"{format_value(min(values), 3)} and {format_value(max(values), 3)}.")
    if "text S" in names:
        sentences.append(f"The data-dependent S and the text S agree with Spearman "
                         f"{format_value(correlations.loc['data-dependent S', 'text S'], 3)} "
                         "(1: the same order of class pairs; 0: unrelated).")
    if agreement is not None and {"data-dependent S", "text S"} <= set(agreement.index):
        data, text = agreement.loc["data-dependent S", "roc_auc"], agreement.loc["text S", "roc_auc"]
        sentence = (f"Against the known hierarchy, ROC-AUC is {format_value(data, 3)} for the data-dependent S and "
                    f"{format_value(text, 3)} for the text S (0.5 is chance)")
        by_auc = np.sign(data - text)
        if "top1_same_coarse" in agreement:
            top_data, top_text = (agreement.loc["data-dependent S", "top1_same_coarse"],
                                  agreement.loc["text S", "top1_same_coarse"])
            chance = agreement["top1_chance"].iloc[0] if "top1_chance" in agreement else float("nan")
            sentence += (f"; the nearest other class is in the same coarse class for {top_data:.0%} of classes with "
                         f"the data-dependent S and {top_text:.0%} with the text S"
                         + (f" (chance {chance:.0%})" if np.isfinite(chance) else ""))
            by_top = np.sign(top_data - top_text)
        else:
            by_top = by_auc
        if by_auc == by_top and by_auc != 0:
            better = "data-dependent S" if by_auc > 0 else "text S"
            sentence += f": by both measures the {better} recovers it better."
        elif by_auc == 0 and by_top == 0:
            sentence += ": both recover it equally."
        else:
            sentence += ": the two measures disagree on which S recovers it better."
        sentences.append(sentence)
    return sentences


def center_findings(rows: Any, reference: str | Sequence[str] = "shc", baseline: str = "mds",
                    one_seed: str = ONE_SEED_ADVICE) -> list[str]:
    """Stage 2 (notebook 02's rows, :func:`shc.results.center_rows`): which methods keep the GV distance, and
    S_loss of ``reference`` (one method or several, in turn) against ``baseline`` per code length, paired by seed
    (``one_seed``: the advice of a comparison with one seed, :func:`shc.stats.compare_sentence`)."""
    if not isinstance(reference, str):
        sentences = center_findings(rows, reference[0], baseline, one_seed) if reference else []
        return sentences + [sentence for other in reference[1:]
                            for sentence in center_findings(rows, other, baseline, one_seed)[1:]]
    sentences = []
    keeps = rows.assign(keeps=rows["d_min"] >= rows["gv_distance"]).groupby("label")["keeps"].all()
    kept = [name for name, ok in keeps.items() if ok]
    lost = [name for name, ok in keeps.items() if not ok]
    sentences.append(f"d_min >= the Gilbert-Varshamov d in every run for: {', '.join(kept) or 'none'}"
                     + (f"; not for: {', '.join(lost)}." if lost else "."))
    summary, per_seed = summary_frame(rows, ["s_loss"])
    for bits in sorted(rows["bits"].unique()):
        present = set(summary[summary["bits"] == bits]["method"])
        if {reference, baseline} <= present:
            interval = paired_by_seed(per_seed, "s_loss", int(bits), reference, baseline)
            mean_b = float(summary[(summary["bits"] == bits) & (summary["method"] == baseline)]["mean"].iloc[0])
            ratio = 1 + interval.mean / mean_b if mean_b else float("nan")
            sentence = compare_sentence(reference, baseline, interval, "S_loss", int(bits),
                                        one_seed=one_seed).rstrip(".")
            sentences.append(f"{sentence}; {reference}'s S_loss is {ratio:.2f}x of {baseline}'s (lower is better).")
    return sentences


def ablation_findings(runs: Any, variants: Mapping[str, str], metric: str = PRIMARY_METRIC,
                      reference: str = "shc") -> list[str]:
    """Notebook 05: ``reference`` against each other variant (``variants`` maps method -> display name)."""
    renamed = runs.assign(label=runs["label"].map(lambda name: variants.get(name, name)))
    return what_this_shows(*summary_frame(renamed, [metric]), metric, reference=variants.get(reference, reference))


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


def backbone_phrase(config: Any) -> str:
    """How a run's network starts, in words: ``composite_cnn, trained from scratch``, ``resnet34 with ImageNet
    weights``, ``composite_cnn pretrained on items (stage 0), then fine-tuned``."""
    if getattr(config, "pretrain", None):
        return f"{config.backbone} pretrained on the {config.pretrain} source task (stage 0), then fine-tuned"
    if getattr(config, "pretrained", False) or getattr(config, "weights", None):
        source = getattr(config, "weights", None) or "ImageNet"
        return f"{config.backbone} starting from {source} weights"
    return f"{config.backbone}, trained from scratch"


def hadamard_findings(table: Any, bits: int) -> list[str]:
    """Notebook 00's Hadamard table (index C; columns "d_min of CSQ centers", "GV distance d"): where CSQ's
    d_min stands against the bound for C <= 2q and beyond."""
    sentences = []
    for classes, row in table.iterrows():
        d_min, bound = int(row["d_min of CSQ centers"]), int(row["GV distance d"])
        place = "above" if d_min > bound else "at" if d_min == bound else "below"
        regime = ("Hadamard rows only" if classes <= bits else "Hadamard rows and their negations"
                  if classes <= 2 * bits else f"{classes - 2 * bits} random row(s) beyond 2q")
        sentences.append(f"C = {classes} ({regime}): CSQ's d_min is {d_min}, {place} the bound d = {bound}.")
    return sentences


def pair_findings(S: Any, pairs: Any, coarse: Any | None = None) -> list[str]:
    """The most-similar-pairs table of notebook 01 (:func:`shc.similarity.most_similar_pairs`) in context: how
    many pairs of the whole matrix share its top value (a tie the table cuts in class order), and how many of
    the shown pairs share a coarse class. With ``coarse`` (each class's coarse class, in the order of ``S``) and a
    tie the table cuts, also how many of all the tied pairs share one: the pairs shown are the first in class order,
    often all in one coarse class, so their count alone says little about the tie (a reader audit, issue 38).

    ``S`` must hold the top value at full precision (pages built before 2026-11-29 kept their heatmap's S at 8
    digits for this); today's pages give the tie as its own table instead (:func:`tie_findings`)."""
    matrix = np.asarray(S, dtype=float)
    rows, columns = np.triu_indices(matrix.shape[0], k=1)
    at_top = np.isclose(matrix[rows, columns], float(pairs["similarity"].max()))
    together = None
    if coarse is not None:
        labels = np.asarray(coarse)
        together = int(np.sum(labels[rows[at_top]] == labels[columns[at_top]]))
    return _pair_sentences(pairs, int(np.sum(at_top)), together)


def tie_findings(pairs: Any, ties: Any) -> list[str]:
    """:func:`pair_findings` from the table of every pair tied at the top (:func:`shc.similarity.most_similar_ties`,
    its ``same_coarse`` column where the dataset has a hierarchy) instead of the whole S."""
    if "similarity" not in ties or ties.empty:
        raise ValueError("ties needs the pairs at the largest similarity (shc.similarity.most_similar_ties), with "
                         "their column similarity.")
    if not np.isclose(float(ties["similarity"].max()), float(pairs["similarity"].max())):
        raise ValueError("the tied pairs and the table of top pairs disagree on the largest similarity; save both "
                         "from the same S.")
    together = int(ties["same_coarse"].sum()) if "same_coarse" in ties else None
    return _pair_sentences(pairs, len(ties), together)


def _pair_sentences(pairs: Any, tied: int, together: int | None) -> list[str]:
    top = float(pairs["similarity"].max())
    sentences = []
    if tied > 1:
        shown = int(np.sum(np.isclose(pairs["similarity"].to_numpy(dtype=float), top)))
        cut = f"; the table shows {shown} of them, in class order" if tied > shown else ""
        if tied > shown and together is not None:
            cut += f"; {together} of the {tied} share a coarse class"
        sentences.append(f"{tied} class pairs share the largest similarity, {format_value(top, 4)}{cut}.")
    if "same_coarse" in pairs:
        same = int(pairs["same_coarse"].sum())
        sentences.append(f"{same} of the {len(pairs)} pairs shown share a coarse class.")
    return sentences


FAINT = 0.1  #: closer to 0 than this, a similarity is almost white on a -1..1 heatmap (13 of RdBu's 256 levels)


def sign_findings(S: Any, source: str = "data-dependent S") -> list[str]:
    """How much of a stage-1 ``S`` is negative off the diagonal (notebook 01's heatmap): each row is centred on its
    mean before symmetrising (Eq. 8-9), and a class's few confusable classes pull that mean up, so a row can be
    mostly negative; the share over all off-diagonal entries and its range over the rows. Where the negative entries
    are mostly near 0 (median above -:data:`FAINT`), the sentence says so: the heatmap's colour scale runs from -1 to
    1, so it draws them almost white, and a reader would not see the share it states (a reader audit, issue 38)."""
    matrix = np.asarray(S, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] < 2:
        raise ValueError(f"S must be a square matrix of at least 2 classes, got shape {matrix.shape}.")
    off = ~np.eye(len(matrix), dtype=bool)
    negative = (matrix < 0) & off
    per_row = negative.sum(axis=1)
    share = negative.sum() / off.sum()
    sentence = (f"{share:.0%} of the off-diagonal entries of the {source} are negative (per class: {per_row.min()} to "
                f"{per_row.max()} of its {len(matrix) - 1} others)")
    median = float(np.median(matrix[negative])) if negative.any() else 0.0
    if negative.any() and median > -FAINT:
        sentence += (f"; most of them are close to 0 (median {format_value(median, 2)}), which the heatmap's colour "
                     "scale from -1 to 1 draws almost white")
    return [sentence + "."]


def hierarchy_findings(coarse: Any, shown: int = 3) -> list[str]:
    """Which hierarchy *this* dataset has (notebook 01, :func:`shc.similarity.coarse_class_table`): how many coarse
    classes hold its classes, the first ``shown`` names, how many classes each holds, and the share of a class's
    others inside its coarse class (the chance level of ``top1_same_coarse``)."""
    if not {"coarse_class", "classes"} <= set(coarse.columns) or coarse.empty:
        raise ValueError("coarse needs the columns coarse_class and classes (shc.similarity.coarse_class_table), "
                         "one row per coarse class.")
    counts = coarse["classes"].to_numpy(dtype=int)
    total, groups = int(counts.sum()), len(counts)
    names = [str(name) for name in coarse["coarse_class"]]
    listed = ", ".join(names[:shown]) + (", ..." if groups > shown else "")
    sizes = f"{counts[0]} each" if counts.min() == counts.max() else f"{counts.min()} to {counts.max()} each"
    within = (counts * (counts - 1)).sum() / (total * (total - 1)) if total > 1 else float("nan")
    return [f"This dataset's {total} classes fall into {groups} coarse classes ({listed}; {sizes}): on average "
            f"{within:.1%} of a class's others share its coarse class."]


def coarse_structure_findings(S: Any, centers: Any | None = None, source: str = "S") -> list[str]:
    """How much the coarse classes show in ``S``, and in each center set's cosines (notebook 00).

    Rows and columns in coarse-class order show blocks on the diagonal only where ``S`` rates two classes of one
    coarse class above two of different ones; on a testbed whose similarity comes from shared parts (a reader audit
    of `standard-fine`, issue 38) they need not, so the page states the two means instead of promising blocks. The
    difference is also given in standard deviations of the off-diagonal entries (a scale-free size). ``S`` is a
    heatmap's data file with each row's coarse class (:func:`shc.plots.matrix_frame` with ``coarse_labels``: the
    column ``row_coarse``); ``centers`` the codes of :func:`shc.plots.gram_frames`: then the sentence gives, for each
    center set, the mean cosine of two centers (H H^T / q, Eq. 14) of one coarse class against two of different
    ones, beside S's."""
    from shc.plots.geometry import gram_from_frame
    from shc.plots.style import matrix_from_frame

    if "row_coarse" not in S:
        raise ValueError("S needs each row's coarse class (the column row_coarse): save the heatmap's data with "
                         "plots.matrix_frame(..., coarse_labels=...).")
    matrix, names = matrix_from_frame(S, source)
    coarse = S.loc[S["source"] == source, "row_coarse"].to_numpy()
    off = ~np.eye(len(matrix), dtype=bool)
    same = (coarse[:, None] == coarse[None, :]) & off
    other = ~same & off
    if not same.any() or not other.any():  # nothing to contrast: say so, as the page's prose promises a sentence
        how = "every class is a coarse class of its own" if not same.any() else "all classes share one coarse class"
        return [f"In the {source}, {how}: there is no within- against between-coarse-class contrast to show."]

    def means(values: np.ndarray) -> tuple[float, float]:
        return float(values[same].mean()), float(values[other].mean())

    within, between = means(matrix)
    if centers is None:
        spread = float(matrix[off].std())
        size = (f", {(within - between) / spread:.2f} standard deviations of its off-diagonal entries"
                if spread > 0 else "")
        return [f"In the {source}, two classes of one coarse class have a mean similarity of {_fixed(within)}, "
                f"two of different coarse classes {_fixed(between)}: a difference of "
                f"{within - between:+.3f}{size}."]
    if "code" not in centers or centers["code"].isna().all():
        raise ValueError("centers holds no center codes (a column code of +/- strings): save them with "
                         "plots.gram_frames(...).")
    parts = []
    for method in dict.fromkeys(centers.loc[centers["code"].notna(), "source"]):
        gram, order = gram_from_frame(centers, method)
        if order != names:
            raise ValueError(f"the centers of {method!r} list the classes in another order than S; save both from "
                             "the same class names.")
        inside, outside = means(gram)
        parts.append(f"{method} {_fixed(inside)} against {_fixed(outside)}")
    return [f"Mean cosine of two centers (H H^T / q) of one coarse class against two of different coarse classes, "
            f"beside the {source}'s {_fixed(within)} against {_fixed(between)}: "
            + "; ".join(parts) + "."]


def _fixed(value: float, decimals: int = 3) -> str:
    """``value`` with ``decimals`` decimals and no signed zero (a mean cosine of -0.0001 reads 0.000, not -0.000)."""
    text = f"{value:.{decimals}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


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


def best_methods(runs: Any, metric: str, bits: int, method: str = "label", confidence: float = 0.95) -> list[str]:
    """The methods at the top of ``metric`` at ``bits``: the highest mean and every method the paired interval
    cannot tell apart from it (one seed: only the highest). Best first."""
    from shc.stats import paired_by_seed

    summary, per_seed = summary_frame(runs, [metric], method=method)
    here = summary[(summary["bits"] == bits) & (summary["metric"] == metric)].sort_values("mean", ascending=False,
                                                                                         kind="stable")
    if here.empty:
        return []
    names = list(here["method"])
    top = names[0]
    tied = [other for other in names[1:]
            if paired_by_seed(per_seed, metric, bits, top, other, confidence).verdict == "not distinguishable"]
    return [top, *tied]


def best_methods_label(runs: Any, metric: str, bits: int, method: str = "label") -> str:
    """:func:`best_methods` as a report index shows it: the one best method, or the tied ones "(not distinguishable)",
    naming those whose network did not reach its targets on the training set (mean center hit rate below
    :data:`shc.reachability.REACHED`), since their place in a ranking measures what the network could fit."""
    from shc.reachability import REACHED

    best = best_methods(runs, metric, bits, method=method)
    label = best[0] if len(best) == 1 else f"{', '.join(best)} (not distinguishable)"
    key = "train_center_hit_rate"
    if key in runs and best:
        at = runs[runs["bits"] == bits].groupby(method)[key].mean()
        short = [name for name in best if name in at and at[name] < REACHED]
        if short:
            label += f"; below the training hit rate of {REACHED:g}: {', '.join(short)}"
    return label


def record_distance_finding(history: Any, targets: Mapping[int, int]) -> str:
    """Whether ``d_min >= d`` held at every record of a search history (columns ``bits``, ``d_min``), in words."""
    required = history["bits"].map(targets)
    below = int((history["d_min"] < required).sum())
    if below == 0:
        return f"d_min \u2265 d held at all {len(history)} records."
    return f"d_min fell below d at {below} of {len(history)} records."


def tradeoff_findings(tradeoff: Any) -> list[str]:
    """What the price-of-separation table (:func:`shc.centers.distance_tradeoff`, one row per required d, indexed or
    with a ``d`` column) shows: where S_loss is lowest, whether it rises with d everywhere, and the gap to the
    relaxation bound at the smallest and the largest d. shc-ls is a local search: dropping the constraint (d = 0)
    does not promise the best fit, and a sentence says so when a larger d fits S better."""
    table = tradeoff.reset_index() if "d" not in tradeoff else tradeoff
    table = table.sort_values("d")
    if table.empty:
        return []
    d, loss = table["d"].astype(int).tolist(), table["s_loss"].astype(float).tolist()
    best = int(np.argmin(loss))
    sentences = [f"The lowest S_loss, {loss[best]:.4f}, is reached at d = {d[best]}"
                 + (" (no separation required)." if d[best] == 0 else ".")]
    lower = [(d[i], loss[i]) for i in range(len(d)) if d[i] > d[0] and loss[i] < loss[0]]
    if lower:
        sentences.append(f"Requiring no separation (d = {d[0]}) does not give the best fit here: shc-ls is a local "
                         f"search, and at d = {', '.join(str(x) for x, _ in lower)} it found centers that fit S "
                         f"better ({', '.join(f'{y:.4f}' for _, y in lower)} against {loss[0]:.4f}).")
    rises = sum(1 for i in range(1, len(loss)) if loss[i] < loss[i - 1])
    sentences.append("S_loss never falls as d grows." if rises == 0 else
                     f"S_loss falls {rises} time(s) as d grows from {d[0]} to {d[-1]}: search noise, not a gain from "
                     "separation (every set of the larger d also meets the smaller one).")
    bound = float(table["bound"].iloc[0])
    sentences.append(f"The relaxation bound is {bound:.4f}: S_loss is {loss[0] - bound:.4f} above it at d = {d[0]} and "
                     f"{loss[-1] - bound:.4f} at d = {d[-1]}.")
    return sentences


def geometry_findings(lessons: Any) -> list[str]:
    """The cases of stage 2 that teach most, from :func:`shc.explore.geometry_lessons` (indexed by C and q):
    semantic-only centers that collide (pairs at Hamming distance 0, which no image can tell apart), Algorithm 1's
    S_loss oscillating over its cycles at short codes, and how far SHC moves from its MDS start at each length."""
    sentences = []
    table = lessons.reset_index()
    for C, group in table.groupby("C", sort=True):
        if "semantic colliding pairs" in group:
            colliding = group.dropna(subset=["semantic colliding pairs"])
            hit = colliding[colliding["semantic colliding pairs"] > 0]
            if len(hit):
                parts = ", ".join(f"{int(r['semantic colliding pairs'])} at {int(r['q'])} bits" for _, r in hit.iterrows())
                sentences.append(f"C = {C}: semantic-only centers (no distance term) give some class pairs the same "
                                 f"center: {parts} colliding pair(s), which no image can tell apart.")
            elif len(colliding):
                sentences.append(f"C = {C}: semantic-only centers keep every class on its own center at "
                                 f"{', '.join(str(int(q)) for q in colliding['q'])} bits (no collision).")
        if "shc S_loss reversals" in group:
            trace = group.dropna(subset=["shc S_loss reversals"])
            swinging = trace[trace["shc S_loss reversals"] >= 2]
            if len(swinging):
                parts = ", ".join(f"{int(r['shc S_loss reversals'])} reversals and {int(r['shc S_loss rises'])} rises "
                                  f"in {int(r['shc cycles'])} cycles at {int(r['q'])} bits"
                                  for _, r in swinging.iterrows())
                steady = trace[trace["shc S_loss reversals"] < 2]
                other = (f"; at {_and([str(int(q)) for q in steady['q']])} bits it changes direction at most once "
                         "(no oscillation)" if len(steady) else "")
                sentences.append(f"C = {C}: Algorithm 1 oscillates: its S_loss goes up and down ({parts}){other}; the "
                                 "generator returns the best feasible cycle, not the last.")
            elif len(trace):
                sentences.append(f"C = {C}: Algorithm 1's S_loss changes direction at most once at every length "
                                 "(no oscillation).")
        if "shc share of bits moved" in group:
            moved = group.dropna(subset=["shc share of bits moved"])
            if len(moved):
                parts = ", ".join(f"{format_value(r['shc bits moved from mds'], 3)} bits per center "
                                  f"({r['shc share of bits moved']:.1%}) at {int(r['q'])} bits"
                                  for _, r in moved.iterrows())
                still = moved[moved["shc share of bits moved"] == 0]
                tail = (f"; at {', '.join(str(int(q)) for q in still['q'])} bits it returns its MDS start unchanged"
                        if len(still) else "")
                sentences.append(f"C = {C}: SHC moves from its MDS start by {parts}{tail}.")
    return sentences


# ---- A page's findings, re-derivable from the files beside it (issue 38) ---------------------------------------
#
# A notebook never formats a finding itself: ``findings.show(name, table=<saved file>, option=value)`` reads the
# tables from the files it saved, runs the registered function, shows the sentences as a list marked with a key,
# and records (key, name, files, options) in ``findings.json`` beside the page. ``python -m shc.reports.check`` reads
# that record, runs the function again on the published files and compares its sentences with the page's
# (:func:`derive`): a sentence edited by hand, or a table changed after the page was built, is a problem.

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


def _record_distance(history: Any, targets: Mapping[Any, int]) -> list[str]:
    """:func:`record_distance_finding` with the targets as JSON gives them back (code lengths as strings)."""
    return [record_distance_finding(history, {int(bits): int(d) for bits, d in targets.items()})]


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
        ("record-distance", _record_distance, {"history": 0}),
        ("tradeoff", tradeoff_findings, {"tradeoff": 0}),
        ("geometry", geometry_findings, {"lessons": 0}),
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
