"""Computed prose about stages 1 and 2: the stage-1 S (signs, ties, coarse structure, the hierarchy, the classifier),
the centers (quality, Hadamard capacity, the price of separation, Algorithm 1's lessons) and their records (pages
00-02). Each function takes the table a notebook shows and returns sentences; :mod:`shc.findings` registers them, so
the report checker re-derives every one from the published files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from shc.findings.runs import _and
from shc.stats import ONE_SEED_ADVICE, compare_sentence, counted, format_value, percent_words, paired_by_seed, summary_frame

__all__ = ["FAINT", "ONE_SET_ADVICE", "PAPER_ACCURACY", "center_findings", "coarse_structure_findings",
           "geometry_findings", "hadamard_findings", "hierarchy_findings", "pair_findings", "record_distance_finding",
           "sign_findings", "similarity_findings", "tie_findings", "tradeoff_findings"]


#: Notebook 00 draws one center set per method on purpose; its one-seed comparison says where the seeds are.
ONE_SET_ADVICE = "this page draws one center set per method; notebook 02 compares the methods over several seeds"


#: The range of stage-1 test accuracies in the paper's Table 2 (NABirds-B 48.44 %, Stanford Cars-A 73.49 %).
PAPER_ACCURACY = (0.4844, 0.7349)


def similarity_findings(accuracy: Any, correlations: Any, agreement: Any | None) -> list[str]:
    """Stage 1: the classifier's accuracy against the paper's range, the rank agreement of the S sources,
    and which S recovers the class hierarchy better (tables of notebook 01)."""
    sentences = []
    mean = float(accuracy["test accuracy"].iloc[0])
    std = accuracy["test accuracy std"].iloc[0]
    seeds = int(accuracy["seeds"].iloc[0])
    low, high = PAPER_ACCURACY
    if not np.isfinite(mean):  # shc.results.classifier_table: a record that counted held-out classes as errors
        sentences.append(f"The stage-1 classifier's test accuracy is not shown: its record counted the query images "
                         f"of held-out classes, which it cannot name, as errors; its validation accuracy is "
                         f"{format_value(float(accuracy['validation accuracy'].iloc[0]), 3)} over {seeds} seed(s).")
    else:
        place = "inside" if low <= mean <= high else ("below" if mean < low else "above")
        spread = f" ± {format_value(std, 2)}" if seeds > 1 and np.isfinite(std) else ""
        decimals = _accuracy_decimals(mean, place)
        sentences.append(f"The stage-1 classifier reaches a test accuracy of {mean:.{decimals}f}{spread} over {seeds} "
                         f"seed(s), {place} the paper's range of {low:.{decimals - 2}%} to {high:.{decimals - 2}%} "
                         "(Table 2).")
    names = list(correlations.index)
    seeds_s = [name for name in names if name.startswith("data-dependent S")]
    if len(seeds_s) > 1:
        values = [correlations.loc[a, b] for i, a in enumerate(seeds_s) for b in seeds_s[i + 1:]]
        agree = (f"Spearman {format_value(values[0], 3)}" if len(values) == 1 else
                 f"Spearman between {format_value(min(values), 3)} and {format_value(max(values), 3)}")
        sentences.append(f"The data-dependent S of different seeds agree with {agree}.")
    if "text S" in names:
        sentences.append(f"The data-dependent S and the text S agree with Spearman "
                         f"{format_value(correlations.loc['data-dependent S', 'text S'], 3)} "
                         "(1: the same order of class pairs; 0: unrelated).")
    if agreement is not None and {"data-dependent S", "text S"} <= set(agreement.index):
        data, text = agreement.loc["data-dependent S", "roc_auc"], agreement.loc["text S", "roc_auc"]
        sentence = (f"Against the known hierarchy, ROC-AUC is {format_value(data, 3)} for the data-dependent S and "
                    f"{format_value(text, 3)} for the text S (0.5 is chance)")
        # compared as shown (3 significant digits, whole percent): values that print alike are a tie in the sentence
        by_auc = np.sign(float(format_value(data, 3)) - float(format_value(text, 3)))
        if "top1_same_coarse" in agreement:
            top_data, top_text = (agreement.loc["data-dependent S", "top1_same_coarse"],
                                  agreement.loc["text S", "top1_same_coarse"])
            chance = agreement["top1_chance"].iloc[0] if "top1_chance" in agreement else float("nan")
            sentence += (f"; the nearest other class is in the same coarse class for {top_data:.0%} of classes with "
                         f"the data-dependent S and {top_text:.0%} with the text S"
                         + (f" (chance {chance:.0%})" if np.isfinite(chance) else ""))
            by_top = np.sign(round(100 * float(top_data)) - round(100 * float(top_text)))
        else:
            by_top = by_auc
        def better(sign: float) -> str:
            return "data-dependent S" if sign > 0 else "text S"

        if by_auc == by_top:
            sentence += (f": by both measures the {better(by_auc)} recovers it better." if by_auc != 0 else
                         ": both recover it equally.")
        elif by_auc == 0 or by_top == 0:  # one measure ties: the other decides, and the sentence says which
            nearest = "the nearest other class"
            decides, ties = (nearest, "ROC-AUC") if by_auc == 0 else ("ROC-AUC", nearest)
            sentence += f": {ties} ties them; by {decides} the {better(by_auc or by_top)} recovers it better."
        else:
            sentence += ": the two measures disagree on which S recovers it better."
        sentences.append(sentence)
    return sentences


def _accuracy_decimals(mean: float, place: str) -> int:
    """Decimals of an accuracy (and two fewer of the paper's range in percent) at which the printed values stand as
    ``place`` says: 3 (0.617 inside 48.4% to 73.5%) unless rounding puts the accuracy on or across a printed edge
    (0.7354 read "0.735 above ... 73.5%"; the edge is 73.49%), then more, up to 8."""
    low, high = PAPER_ACCURACY
    for decimals in range(3, 9):
        shown, edges = round(mean, decimals), (round(low, decimals), round(high, decimals))
        seen = "inside" if edges[0] <= shown <= edges[1] else ("below" if shown < edges[0] else "above")
        if seen == place and (place == "inside" or shown not in edges):
            return decimals
    return 8


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
            sentence = compare_sentence(reference, baseline, interval, "S_loss", int(bits),
                                        one_seed=one_seed).rstrip(".")
            sentences.append(f"{sentence}; {_ratio_words(per_seed, int(bits), reference, baseline)}.")
    return sentences


def _ratio_words(per_seed: Any, bits: int, reference: str, baseline: str) -> str:
    """``shc's S_loss is 0.87x of mds's``: the ratio of the two means over the seeds both have (the seeds the paired
    difference is over; an audit found the baseline's mean taken over all its seeds), or why there is none."""
    at = per_seed[(per_seed["metric"] == "s_loss") & (per_seed["bits"] == bits)]
    ref, base = (at[at["method"] == name].set_index("seed")["value"] for name in (reference, baseline))
    shared = ref.index.intersection(base.index)
    mean_b = float(base[shared].mean())
    if not mean_b > 0:
        return f"no ratio: {baseline}'s S_loss is {format_value(mean_b, 3)} on the seeds both have"
    return f"{reference}'s S_loss is {float(ref[shared].mean()) / mean_b:.2f}x of {baseline}'s (lower is better)"


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
            cut += f"; {together} of the {tied} {'shares' if together == 1 else 'share'} a coarse class"
        sentences.append(f"{tied} class pairs share the largest similarity, {format_value(top, 4)}{cut}.")
    if "same_coarse" in pairs:
        same = int(pairs["same_coarse"].sum())
        sentences.append(f"{same} of the {len(pairs)} pairs shown {'shares' if same == 1 else 'share'} a coarse "
                         "class.")
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
    sentence = (f"{percent_words(share)} of the off-diagonal entries of the {source} are negative (per class: {per_row.min()} to "
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
    if total < 2:
        raise ValueError(f"coarse holds {total} class; a hierarchy needs at least two classes to say how many of a "
                         "class's others share its coarse class.")
    within = (counts * (counts - 1)).sum() / (total * (total - 1))
    return [f"This dataset's {total} classes fall into {counted(groups, 'coarse class', 'coarse classes')} ({listed}; "
            f"{sizes}): on average {within:.1%} of a class's others share its coarse class."]


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


def record_distance_finding(history: Any, targets: Mapping[int, int] | None = None) -> str:
    """Whether ``d_min >= d`` held at every record of a search history (columns ``bits``, ``d_min``), in words; d
    per code length from ``targets``, else from the history's ``gv_distance`` column
    (:func:`shc.results.center_history_rows`)."""
    if len(history) == 0:
        raise ValueError("the history has no record; pass the search history of Algorithm 1 "
                         "(shc.results.center_history_rows).")
    if targets is None and "gv_distance" not in history:
        raise ValueError("the history has no gv_distance column; pass targets={bits: d} (or read it with "
                         "shc.results.center_history_rows).")
    required = history["gv_distance"] if targets is None else history["bits"].map(targets)
    if required.isna().any():  # a comparison with NaN is False: the record would count as held
        missing = sorted({int(bits) for bits in history.loc[required.isna(), "bits"]})
        raise ValueError(f"no required d for the records at {missing} bits; give targets for every code length of "
                         "the history.")
    below = int((history["d_min"] < required).sum())
    if below == 0:
        return (f"d_min \u2265 d held at all {len(history)} records." if len(history) > 1 else
                "d_min \u2265 d held at the one record.")  # an empty history is refused above
    return f"d_min fell below d at {below} of {counted(len(history), 'record')}."


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


def geometry_findings(lessons: Any, every_length: bool = False) -> list[str]:
    """The cases of stage 2 that teach most, from :func:`shc.explore.geometry_lessons` (indexed by C and q):
    semantic-only centers that collide (pairs at Hamming distance 0, which no image can tell apart), Algorithm 1's
    S_loss oscillating over its cycles at short codes, and how far SHC moves from its MDS start at each length.

    ``every_length`` (pages built since 2026-12-02): the collision sentence also names the lengths where no pair
    collides, as the oscillation sentence does; without it, a page of 16 and 32 bits read "19 at 16 bits colliding
    pair(s)" and left 32 bits unsaid (the default keeps that wording, so earlier pages still re-derive)."""
    sentences = []
    table = lessons.reset_index()
    for C, group in table.groupby("C", sort=True):
        if "semantic colliding pairs" in group:
            colliding = group.dropna(subset=["semantic colliding pairs"])
            hit = colliding[colliding["semantic colliding pairs"] > 0]
            if len(hit) and every_length:
                parts = ", ".join(f"{counted(int(r['semantic colliding pairs']), 'colliding pair')} at {int(r['q'])} "
                                  "bits" for _, r in hit.iterrows())
                apart = colliding[colliding["semantic colliding pairs"] == 0]
                rest = (f"; at {_and([str(int(q)) for q in apart['q']])} bits every class keeps its own center"
                        if len(apart) else "")
                sentences.append(f"C = {C}: semantic-only centers (no distance term) give some class pairs the same "
                                 f"center, which no image can tell apart: {parts}{rest}.")
            elif len(hit):
                parts = ", ".join(f"{int(r['semantic colliding pairs'])} at {int(r['q'])} bits" for _, r in hit.iterrows())
                sentences.append(f"C = {C}: semantic-only centers (no distance term) give some class pairs the same "
                                 f"center: {parts} colliding pair(s), which no image can tell apart.")
            elif len(colliding):
                lengths = [str(int(q)) for q in colliding["q"]]
                sentences.append(f"C = {C}: semantic-only centers keep every class on its own center at "
                                 f"{_and(lengths) if every_length else ', '.join(lengths)} bits (no collision).")
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
