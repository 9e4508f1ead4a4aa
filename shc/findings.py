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

__all__ = ["ablation_findings", "center_findings", "convergence_findings", "retrieval_findings",
           "similarity_findings"]

#: The range of stage-1 test accuracies in the paper's Table 2.
PAPER_ACCURACY = (0.48, 0.74)


def retrieval_findings(runs: Any, metric: str = PRIMARY_METRIC, reference: str | None = "shc",
                       method: str = "label") -> list[str]:
    """Per code length: the best method and its margin, and ``reference`` against every other method
    (paired by seed). ``runs`` is :func:`shc.results.result_rows`."""
    summary, per_seed = summary_frame(runs, [metric], method=method)
    return what_this_shows(summary, per_seed, metric, reference=reference)


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
                     f"{seeds} seed(s), {place} the paper's range of {low:.0%}-{high:.0%} (Table 2).")
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
        better = "data-dependent S" if data > text else "text S" if text > data else None
        verdict = f"the {better} recovers it better" if better else "both recover it equally"
        sentences.append(f"Against the known hierarchy, ROC-AUC is {format_value(data, 3)} for the data-dependent "
                         f"S and {format_value(text, 3)} for the text S: {verdict} (0.5 is chance).")
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


def bullet_list(sentences: Sequence[str]) -> str:
    return "\n".join(f"- {sentence}" for sentence in sentences)
