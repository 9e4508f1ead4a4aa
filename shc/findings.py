"""Computed prose: the sentences a report states about its numbers, generated from the tables they describe.

Every function takes the table a notebook shows and returns sentences; a notebook ends with
``Markdown(what_this_shows_markdown(sentences))``. No sentence that states a number, a ranking or a
comparison is typed into a notebook: change the numbers and the sentences change with them (tested).
Comparisons between methods use the paired differences by seed with a 95% t-interval (:mod:`shc.stats`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shc.evaluation import PRIMARY_METRIC
from shc.stats import compare_sentence, format_value, metric_name, paired_by_seed, summary_frame, what_this_shows

__all__ = ["ablation_findings", "backbone_phrase", "best_methods", "center_findings", "convergence_findings",
           "geometry_findings", "hadamard_findings", "pair_findings", "precision_at_k_findings", "reachability_findings",
           "record_distance_finding", "retrieval_findings", "similarity_findings"]

#: The range of stage-1 test accuracies in the paper's Table 2 (NABirds-B 48.44 %, Stanford Cars-A 73.49 %).
PAPER_ACCURACY = (0.4844, 0.7349)


def retrieval_findings(runs: Any, metric: str = PRIMARY_METRIC, reference: str | None = "shc",
                       method: str = "label") -> list[str]:
    """Per code length: the best method and its margin, and ``reference`` against every other method
    (paired by seed). ``runs`` is :func:`shc.results.result_rows`."""
    summary, per_seed = summary_frame(runs, [metric], method=method)
    return what_this_shows(summary, per_seed, metric, reference=reference)


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
        if short.empty:
            sentences.append(f"At {bits} bits every method's network reached its targets on the training set (center "
                             f"hit rate at least {REACHED:g}; lowest {at.idxmin()}, {at.min():.3f}).")
            continue
        listed = ", ".join(f"{name} ({value:.3f})" for name, value in short.sort_values().items())
        sentences.append(f"At {bits} bits the networks of {listed} did not reach their targets on the training set "
                         f"(center hit rate below {REACHED:g}): a ranking that involves them measures what the network "
                         "could fit, not their targets.")
    missing = sorted(runs.loc[runs[key].isna(), "label"].unique())
    if missing:
        sentences.append(f"No reachability is recorded for some runs of {', '.join(missing)} (trained before it was).")
    return sentences


def convergence_findings(runs: Any, history: Any) -> list[str]:
    """How the runs ended: how many selected their last evaluated epoch, and how much validation mAP@ALL
    still rose over the last quarter of training.

    ``runs`` is :func:`shc.results.result_rows`, ``history`` :func:`shc.results.history_rows`. Selecting the
    last epoch is not by itself a sign of an unconverged run: the cosine schedule decays the learning rate to
    0 at the last epoch, so a converged run often peaks there. The late gain says whether the curve was still
    climbing; the test of convergence is doubling the budget (``benchmarks/standard_convergence.py``).
    """
    column = PRIMARY_METRIC if PRIMARY_METRIC in history else "mAP@ALL"  # runs before tie-aware selection: id order
    evaluated = history.dropna(subset=[column]) if column in history else history
    last = evaluated.groupby(["label", "bits", "seed"])["epoch"].max().rename("last_evaluated")
    table = runs.set_index(["label", "bits", "seed"]).join(last)
    at_end = int((table["selected_epoch"] == table["last_evaluated"]).sum())
    total = len(table)
    epochs = int(evaluated["epoch"].max())
    if at_end == 0:
        sentence = (f"No run selected its last evaluated epoch: every validation {metric_name(column)} peaked "
                    f"before epoch {epochs}, so the schedule is long enough for model selection.")
    else:
        sentence = (f"{at_end} of {total} runs selected their last evaluated epoch (epoch {epochs}); under the "
                    "cosine schedule, whose learning rate reaches 0 there, a converged run often peaks at its end.")
    gains = []
    if column in evaluated:
        for _, curve in evaluated.groupby(["label", "bits", "seed"]):
            curve = curve.sort_values("epoch")
            late = curve[curve["epoch"] <= 0.75 * curve["epoch"].max()]
            if len(late) and len(curve) > 1:
                gains.append(float(curve[column].iloc[-1] - late[column].iloc[-1]))
    if gains:
        sentence += (f" Over the last quarter of training, validation {metric_name(column)} rose by "
                     f"{np.mean(gains):+.3f} on average (largest {max(gains):+.3f}); whether the budget suffices is "
                     "tested by doubling it (benchmarks/standard_convergence.py).")
    by_method = table.assign(at_end=table["selected_epoch"] == table["last_evaluated"]).groupby(level="label")[
        "at_end"].mean()
    worst = by_method.sort_values(ascending=False)
    detail = ", ".join(f"{name} {share:.0%}" for name, share in worst.items())
    return [sentence, f"Share of runs selecting the last evaluated epoch, by method: {detail}."]


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


def center_findings(rows: Any, reference: str = "shc", baseline: str = "mds") -> list[str]:
    """Stage 2 (notebook 02's rows, :func:`shc.results.center_rows`): which methods keep the GV distance, and
    S_loss of ``reference`` against ``baseline`` per code length, paired by seed."""
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
            sentence = compare_sentence(reference, baseline, interval, "S_loss", int(bits)).rstrip(".")
            sentences.append(f"{sentence}; {reference}'s S_loss is {ratio:.2f}x of {baseline}'s (lower is better).")
    return sentences


def ablation_findings(runs: Any, variants: Mapping[str, str], metric: str = PRIMARY_METRIC,
                      reference: str = "shc") -> list[str]:
    """Notebook 05: ``reference`` against each other variant (``variants`` maps method -> display name)."""
    renamed = runs.assign(label=runs["label"].map(lambda name: variants.get(name, name)))
    return what_this_shows(*summary_frame(renamed, [metric]), metric, reference=variants.get(reference, reference))


def same_run_findings(runs: Sequence[tuple[Any, Any]], other: str = "csq") -> list[str]:
    """Where runs train exactly as method ``other`` does (issue 38): the same loss on the same centers, so their
    numbers are ``other``'s run. ``runs`` are (config, its stage-2 centers) pairs; ``other``'s centers are generated
    here, seeded as its stage 2 does. One sentence per method and code length where they coincide for every seed
    (MDS's generator returns Hadamard rows, CSQ's centers, when C <= 2q)."""
    from shc.centers import generate_centers
    from shc.methods import get_method

    spec = get_method(other)
    groups: dict[tuple[int, str], list[tuple[Any, Any]]] = {}
    for config, centers in runs:
        if config.method != other and get_method(config.method).loss == spec.loss:
            groups.setdefault((config.bits, config.method), []).append((config, np.asarray(centers)))
    return [f"At {bits} bits the {method} runs are {other}'s runs: the same loss on the same centers (its generator "
            f"returned {other}'s {len(pairs[0][1])} centers for every seed), so their numbers are {other}'s, not a "
            "separate result."
            for (bits, method), pairs in sorted(groups.items())
            if all(np.array_equal(centers, generate_centers(spec.centers, len(centers), bits, seed=config.seed))
                   for config, centers in pairs)]


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
        regime = "Hadamard rows only" if classes <= 2 * bits else f"{classes - 2 * bits} random row(s) beyond 2q"
        sentences.append(f"C = {classes} ({regime}): CSQ's d_min is {d_min}, {place} the bound d = {bound}.")
    return sentences


def pair_findings(S: Any, pairs: Any) -> list[str]:
    """The most-similar-pairs table of notebook 01 (:func:`shc.similarity.most_similar_pairs`) in context: how
    many pairs of the whole matrix share its top value (a tie the table cuts in class order), and how many of
    the shown pairs share a coarse class."""
    matrix = np.asarray(S, dtype=float)
    upper = matrix[np.triu_indices(matrix.shape[0], k=1)]
    top = float(pairs["similarity"].max())
    tied = int(np.sum(np.isclose(upper, top)))
    sentences = []
    if tied > 1:
        shown = int(np.sum(np.isclose(pairs["similarity"].to_numpy(dtype=float), top)))
        cut = f"; the table shows {shown} of them, in class order" if tied > shown else ""
        sentences.append(f"{tied} class pairs share the largest similarity, {format_value(top, 4)}{cut}.")
    if "same_coarse" in pairs:
        same = int(pairs["same_coarse"].sum())
        sentences.append(f"{same} of the {len(pairs)} pairs shown share a coarse class.")
    return sentences


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
                sentences.append(f"C = {C}: Algorithm 1 oscillates: its S_loss goes up and down ({parts}); the "
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
