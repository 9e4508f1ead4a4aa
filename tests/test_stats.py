"""Tests of shc.stats: paired t-intervals by hand, numeric summaries, and sentences that follow the numbers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from shc import stats

T_975_2 = 4.302652729749464  # Student t quantile, 0.975, 2 degrees of freedom (tables: 4.303)


def test_paired_interval_by_hand():
    interval = stats.paired_interval([0.6, 0.7, 0.8], [0.5, 0.5, 0.5])  # differences 0.1, 0.2, 0.3
    half_width = T_975_2 * 0.1 / math.sqrt(3)  # sd 0.1, n 3
    assert half_width == pytest.approx(0.248414, abs=1e-6)
    assert interval.mean == pytest.approx(0.2)
    assert interval.low == pytest.approx(0.2 - half_width, rel=1e-9)
    assert interval.high == pytest.approx(0.2 + half_width, rel=1e-9)
    assert interval.n == 3 and interval.confidence == 0.95 and interval.reason is None
    assert interval.verdict == "not distinguishable"  # [-0.048, 0.448] contains 0


def test_mean_interval_by_hand_and_shared_by_the_paired_interval_and_the_figures():
    mean, low, high = stats.mean_interval([0.1, 0.2, 0.3])  # sd 0.1, n 3
    assert mean == pytest.approx(0.2) and (low, high) == pytest.approx((0.2 - 0.248414, 0.2 + 0.248414), abs=1e-6)
    paired = stats.paired_interval([0.6, 0.7, 0.8], [0.5, 0.5, 0.5])
    assert (mean, low, high) == pytest.approx((paired.mean, paired.low, paired.high))
    one = stats.mean_interval([0.4])
    assert one[0] == 0.4 and math.isnan(one[1]) and math.isnan(one[2])
    assert all(math.isnan(value) for value in stats.mean_interval([0.4, float("nan"), 0.5]))
    with pytest.raises(ValueError, match="at least one value"):
        stats.mean_interval([])
    for bad in (0.0, 1.0, True, 95):
        with pytest.raises(ValueError, match="confidence must lie in"):
            stats.mean_interval([0.1, 0.2], bad)
    from shc.plots.curves import interval_frame

    per_seed = pd.DataFrame({"method": ["a"] * 3 + ["b"], "bits": [16] * 4, "metric": ["m"] * 4,
                             "value": [0.1, 0.2, 0.3, 0.5]})
    frame = interval_frame(per_seed, "m").set_index("method")
    assert tuple(frame.loc["a", ["mean", "low", "high"]]) == stats.mean_interval([0.1, 0.2, 0.3])
    assert frame.loc["b", "n"] == 1 and math.isnan(frame.loc["b", "low"])
    with pytest.raises(ValueError, match="confidence must lie in"):
        interval_frame(per_seed.iloc[:0], "m", confidence=1.5)


def test_paired_interval_verdicts_and_degenerate_cases():
    assert stats.paired_interval([1.1, 1.2, 1.3, 1.2], [1.0, 1.0, 1.0, 1.0]).verdict == "higher"
    assert stats.paired_interval([1.0, 1.0, 1.0, 1.0], [1.1, 1.2, 1.3, 1.2]).verdict == "lower"
    constant = stats.paired_interval([0.3, 0.4], [0.2, 0.3])  # identical differences: the point itself
    assert (constant.low, constant.high) == pytest.approx((0.1, 0.1)) and constant.verdict == "higher"
    one = stats.paired_interval([0.5], [0.4])
    assert one.mean == pytest.approx(0.1) and math.isnan(one.low) and math.isnan(one.high)
    assert "one seed" in one.reason and one.verdict == "undetermined"
    none = stats.paired_interval([], [])
    assert none.n == 0 and math.isnan(none.mean) and none.reason == "no paired seeds"
    wider = stats.paired_interval([0.6, 0.7, 0.8], [0.5, 0.5, 0.5], confidence=0.99)
    assert wider.high - wider.low > 2 * 0.248414
    with pytest.raises(ValueError, match="same order"):
        stats.paired_interval([1, 2], [1])
    with pytest.raises(ValueError, match="confidence"):
        stats.paired_interval([1, 2], [1, 2], confidence=95)
    with pytest.raises(ValueError, match="finite"):
        stats.paired_interval([1, np.nan], [1, 2])


def _rows(shc_values, mds_values, bits=16):
    return [{"label": name, "bits": bits, "seed": seed, "mAP@ALL": value, "d_min": 5}
            for name, values in (("shc", shc_values), ("mds", mds_values)) for seed, value in enumerate(values)]


def test_summary_frame_is_numeric_and_tidy():
    summary, per_seed = stats.summary_frame(_rows([0.6, 0.7, 0.8], [0.5, 0.5, 0.5]), ["mAP@ALL", "d_min"])
    assert list(summary.columns) == ["method", "bits", "metric", "mean", "std", "n"]
    assert list(per_seed.columns) == ["method", "bits", "seed", "metric", "value"]
    shc = summary[(summary["method"] == "shc") & (summary["metric"] == "mAP@ALL")].iloc[0]
    assert shc["mean"] == pytest.approx(0.7) and shc["std"] == pytest.approx(0.1) and shc["n"] == 3
    assert summary["mean"].dtype == float and len(per_seed) == 12
    with pytest.raises(ValueError, match="seed"):
        stats.summary_frame([{"label": "shc", "bits": 8, "mAP@ALL": 0.1}], ["mAP@ALL"])


def test_compare_sentence_follows_the_interval():
    higher = stats.compare_sentence("shc", "mds", stats.paired_interval([1.1, 1.2, 1.3, 1.2], [1, 1, 1, 1]),
                                    "mAP@ALL", 16)  # fmt: skip
    assert higher.startswith("mAP@ALL, shc \u2212 mds at 16 bits: +0.200 [")
    assert higher.endswith("(95% t-interval over 4 seeds): shc is higher.")
    lower = stats.compare_sentence("shc", "mds", stats.paired_interval([1, 1, 1, 1], [1.1, 1.2, 1.3, 1.2]),
                                   "mAP@ALL", 16)  # fmt: skip
    assert "-0.200" in lower and lower.endswith("shc is lower.")
    unclear = stats.compare_sentence("shc", "mds", stats.paired_interval([0.6, 0.7, 0.8], [0.5, 0.5, 0.5]), "mAP@ALL")
    assert unclear == "mAP@ALL, shc \u2212 mds: +0.200 [-0.048, +0.448] (95% t-interval over 3 seeds): not distinguishable here."
    single = stats.compare_sentence("shc", "mds", stats.paired_interval([0.6], [0.5]), "mAP@ALL", 32)
    assert "one seed" in single and "higher" not in single


def test_ranking_and_what_this_shows_change_with_the_numbers():
    summary, per_seed = stats.summary_frame(_rows([0.71, 0.72, 0.73], [0.50, 0.52, 0.51]), ["mAP@ALL"])
    sentences = stats.what_this_shows(summary, per_seed, "mAP@ALL", reference="shc")
    assert sentences[0].startswith("At 16 bits, shc has the highest mAP@ALL (0.720 ± 0.010, 3 seeds), 0.210 above mds")
    assert "excludes 0" in sentences[0]
    assert sentences[1].endswith("shc is higher.")

    summary, per_seed = stats.summary_frame(_rows([0.50, 0.52, 0.51], [0.71, 0.72, 0.73]), ["mAP@ALL"])  # swapped
    swapped = stats.what_this_shows(summary, per_seed, "mAP@ALL", reference="shc")
    assert swapped[0].startswith("At 16 bits, mds has the highest mAP@ALL")
    assert swapped[1].endswith("shc is lower.")

    summary, per_seed = stats.summary_frame(_rows([0.60, 0.75, 0.52], [0.58, 0.55, 0.70]), ["mAP@ALL"])  # noisy
    noisy = stats.what_this_shows(summary, per_seed, "mAP@ALL", reference="shc")
    assert "not distinguishable" in noisy[0] and noisy[1].endswith("not distinguishable here.")
    assert noisy != sentences != swapped

    loss = stats.ranking_sentence(summary, "mAP@ALL", 16, higher_is_better=False)
    assert loss.startswith("At 16 bits, mds has the lowest mAP@ALL") and "below shc" in loss
    markdown = stats.what_this_shows_markdown(noisy)
    assert markdown.startswith("## What this shows\n\n- At 16 bits")
    with pytest.raises(ValueError, match="no mAP@100"):
        stats.what_this_shows(summary, per_seed, "mAP@100")


def test_format_value_and_summary_table_show_no_reprs():
    assert stats.format_value(np.float64(0.048123456)) == "0.04812"
    assert stats.format_value(np.float32(123.456)) == "123.5"
    assert stats.format_value(np.int64(64)) == "64"
    assert stats.format_value(1.5e-7) == "1.500e-07"
    assert stats.format_value(float("nan")) == "n/a" and stats.format_value(None) == "n/a"
    assert stats.format_value(np.bool_(True)) == "yes"
    summary = {"S_loss random (64 bits)": np.float64(0.0481234), "d_min <shc>": np.int64(24)}
    table = stats.summary_table(summary)
    assert "np.float64" not in table and "0.04812" in table and "&lt;shc&gt;" in table and "<td style" in table
    markdown = stats.summary_table(summary, digits=2, fmt="markdown")
    assert markdown.splitlines()[2] == "| S_loss random (64 bits) | 0.048 |"
    with pytest.raises(ValueError, match="fmt"):
        stats.summary_table(summary, fmt="latex")


def test_a_tie_of_three_at_the_top_names_all_three():
    """Page 04 at 32 bits named shc-ls and crh as the tied best while shc - shc-ls also held 0 (an audit): the sentence
    names every method the paired interval cannot tell from the best, as best_methods does."""
    values = {"a": [0.62, 0.61, 0.63], "b": [0.60, 0.62, 0.61], "c": [0.58, 0.62, 0.60], "d": [0.50, 0.51, 0.50]}
    rows = pd.DataFrame([{"dataset": "x", "method": m, "label": m, "bits": 32, "seed": s, "mAP@ALL": v}
                         for m, vs in values.items() for s, v in enumerate(vs)])
    summary, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
    for other in ("b", "c"):
        assert stats.paired_by_seed(per_seed, "mAP@ALL", 32, "a", other).verdict == "not distinguishable"
    assert stats.paired_by_seed(per_seed, "mAP@ALL", 32, "a", "d").verdict == "higher"
    sentence = stats.ranking_sentence(summary, "mAP@ALL", 32, per_seed=per_seed)
    assert sentence.startswith("At 32 bits, a, b and c, not distinguishable, have the highest mAP@ALL: a 0.620")
    b = stats.paired_by_seed(per_seed, "mAP@ALL", 32, "a", "b")
    assert f"(b {stats.signed_interval(b.mean, b.low, b.high).split(' ', 1)[1]}, c [" in sentence
    assert " d " not in sentence


def test_a_tied_group_at_the_top_names_the_pairs_inside_it_that_differ():
    """A group ties its best, not each other: page 04 of standard-fine read "lth, crh, shc-ls and mds, not
    distinguishable" where crh and shc-ls were both above mds (an audit). A noisy best ties b and c, while b - c is
    +0.04, +0.04, +0.035 by seed: the sentence says so, with b - c's own interval, in either direction of the metric."""
    values = {"a": [0.70, 0.55, 0.65], "b": [0.62, 0.60, 0.61], "c": [0.58, 0.56, 0.575]}
    for higher in (True, False):
        rows = pd.DataFrame([{"dataset": "x", "method": m, "label": m, "bits": 16, "seed": s,
                              "mAP@ALL": v if higher else 1 - v} for m, vs in values.items() for s, v in enumerate(vs)])
        summary, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
        for other in ("b", "c"):
            assert stats.paired_by_seed(per_seed, "mAP@ALL", 16, "a", other).verdict == "not distinguishable"
        pair = stats.paired_by_seed(per_seed, "mAP@ALL", 16, "b", "c")
        assert pair.verdict == ("higher" if higher else "lower") and pair.mean == pytest.approx(0.115 / 3 * (1 if higher else -1))
        sentence = stats.ranking_sentence(summary, "mAP@ALL", 16, higher_is_better=higher, per_seed=per_seed)
        assert sentence.startswith("At 16 bits, a, b and c, not distinguishable, have the ")
        side = "above" if higher else "below"
        assert sentence.endswith(f"; but within the group the paired intervals put b {side} c "
                                 f"({stats.signed_interval(pair.mean, pair.low, pair.high)}), its interval excluding 0.")
    # means over all seeds in one order, the seeds both ran in the other (b's fourth seed lifts its mean above c's):
    # the pair is named in the paired order, on the seeds both ran (a review of the first version found "c ahead of b"
    # beside a listed mean of b above c's, unexplained)
    uneven = {"a": [0.75, 0.50, 0.70, 0.62], "b": [0.56, 0.57, 0.565, 0.80], "c": [0.60, 0.61, 0.605]}
    rows = pd.DataFrame([{"dataset": "x", "method": m, "label": m, "bits": 16, "seed": s, "mAP@ALL": v}
                         for m, vs in uneven.items() for s, v in enumerate(vs)])
    summary, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
    sentence = stats.ranking_sentence(summary, "mAP@ALL", 16, per_seed=per_seed)
    assert sentence.index("b 0.624") < sentence.index("c 0.605")  # b's mean is listed first
    pair = stats.paired_by_seed(per_seed, "mAP@ALL", 16, "c", "b")
    assert pair.n == 3 and pair.verdict == "higher"
    assert sentence.endswith(f"put c above b on the 3 seeds both ran "
                             f"({stats.signed_interval(pair.mean, pair.low, pair.high)}), its interval excluding 0.")
    # a group whose members all tie each other says nothing more (the three-way tie above)
    tied = {"a": [0.62, 0.61, 0.63], "b": [0.60, 0.62, 0.61], "c": [0.58, 0.62, 0.60]}
    rows = pd.DataFrame([{"dataset": "x", "method": m, "label": m, "bits": 16, "seed": s, "mAP@ALL": v}
                         for m, vs in tied.items() for s, v in enumerate(vs)])
    summary, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
    assert "within the group" not in stats.ranking_sentence(summary, "mAP@ALL", 16, per_seed=per_seed)


def test_a_tie_of_two_at_the_top_says_their_paired_interval_holds_0():
    """A mean difference always lies inside its own interval; what ties two methods is an interval that holds 0 (an
    audit of the quick pages). Paired differences a - b by seed: +0.02, -0.01, +0.02 (mean +0.01)."""
    values = {"a": [0.62, 0.61, 0.63], "b": [0.60, 0.62, 0.61], "d": [0.50, 0.51, 0.50]}
    rows = pd.DataFrame([{"dataset": "x", "method": m, "label": m, "bits": 32, "seed": s, "mAP@ALL": v}
                         for m, vs in values.items() for s, v in enumerate(vs)])
    summary, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
    interval = stats.paired_by_seed(per_seed, "mAP@ALL", 32, "a", "b")
    assert interval.low < 0 < interval.high and interval.mean == pytest.approx(0.01)
    bounds = stats.signed_interval(interval.mean, interval.low, interval.high).split(" ", 1)[1]
    sentence = stats.ranking_sentence(summary, "mAP@ALL", 32, per_seed=per_seed)
    assert sentence.startswith("At 32 bits, a and b, not distinguishable, have the highest mAP@ALL: a 0.620")
    assert sentence.endswith(f"; the paired 95% interval over 3 seeds of their difference, {bounds}, holds 0.")


def test_a_runner_up_below_the_best_with_a_noisier_method_that_ties_it_names_both():
    """standard-fine at 32 bits: CRH is above MDS (the interval excludes 0) while shc-ls and LTH, lower but noisier,
    tie CRH; the sentence keeps the runner-up's verdict and names the tied ones, not a group that skips MDS."""
    values = {"a": [0.66, 0.65, 0.66], "b": [0.645, 0.64, 0.65], "c": [0.66, 0.61, 0.62]}
    rows = pd.DataFrame([{"dataset": "x", "method": m, "label": m, "bits": 32, "seed": s, "mAP@ALL": v}
                         for m, vs in values.items() for s, v in enumerate(vs)])
    summary, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
    assert stats.paired_by_seed(per_seed, "mAP@ALL", 32, "a", "b").verdict == "higher"
    c = stats.paired_by_seed(per_seed, "mAP@ALL", 32, "a", "c")
    assert c.verdict == "not distinguishable"
    sentence = stats.ranking_sentence(summary, "mAP@ALL", 32, per_seed=per_seed)
    assert sentence.startswith("At 32 bits, a has the highest mAP@ALL") and "above b" in sentence
    assert sentence.endswith(f"excludes 0, but the paired intervals cannot tell a from c "
                             f"({stats.signed_interval(c.mean, c.low, c.high).split(' ', 1)[1]}).")


def test_paired_by_seed_pairs_only_shared_seeds():
    rows = _rows([0.6, 0.7, 0.8], [0.5, 0.5])  # mds lacks seed 2
    _, per_seed = stats.summary_frame(rows, ["mAP@ALL"])
    interval = stats.paired_by_seed(per_seed, "mAP@ALL", 16, "shc", "mds")
    assert interval.n == 2 and interval.mean == pytest.approx(0.15)
    with pytest.raises(ValueError, match=r"no mAP@ALL values of 'csq' at 16 bits; methods there: \['mds', 'shc'\]"):
        stats.paired_by_seed(per_seed, "mAP@ALL", 16, "shc", "csq")
    assert isinstance(per_seed, pd.DataFrame)
    twice = pd.concat([per_seed, per_seed[per_seed["method"] == "mds"].head(1)], ignore_index=True)  # seed 0 again
    with pytest.raises(ValueError, match="'mds' has several mAP@ALL values for one seed at 16 bits"):
        stats.paired_by_seed(twice, "mAP@ALL", 16, "shc", "mds")


def test_a_tie_at_the_top_names_both_methods_and_small_differences_keep_their_sign():
    summary, per_seed = stats.summary_frame(_rows([0.60, 0.75, 0.52], [0.58, 0.55, 0.70]), ["mAP@ALL"])
    tied = stats.ranking_sentence(summary, "mAP@ALL", 16, per_seed=per_seed)
    assert "has the highest" not in tied and "not distinguishable" in tied
    assert tied.startswith("At 16 bits, ") and " and " in tied.split(",")[1]
    # the 02 case of issue 21: -0.00032 [-0.00044, -0.00021] printed as -0.000 [-0.000, -0.000]
    assert stats.signed_interval(-0.00032, -0.00044, -0.00021) == "-0.00032 [-0.00044, -0.00021]"
    assert stats.signed_interval(0.041, 0.012, 0.070) == "+0.041 [+0.012, +0.070]"
    interval = stats.PairedInterval(-0.00032, -0.00044, -0.00021, 3, 0.95)
    sentence = stats.compare_sentence("shc", "mds", interval, "S_loss", 64)
    assert "-0.000 " not in sentence and "-0.00032 [-0.00044, -0.00021]" in sentence and "shc is lower" in sentence


def test_our_differences_pair_each_dataset_on_its_own():
    from shc.paper import our_differences

    rows = pd.DataFrame([{"dataset": dataset, "method": method, "bits": 16, "seed": seed, "m": value + shift}
                         for dataset, shift in (("cars-a", 0.0), ("cars-b", 0.3))
                         for method, values in (("shc", [0.5, 0.6, 0.7]), ("csq", [0.4, 0.4, 0.4]))
                         for seed, value in enumerate(values)])
    got = our_differences(rows, "m", "ours", baselines=("csq",)).set_index("dataset")  # raised before
    assert got.loc["cars-a", "shc"] == pytest.approx(0.6) and got.loc["cars-b", "shc"] == pytest.approx(0.9)
    assert got.loc["cars-a", "shc - csq"] == pytest.approx(0.2) and got.loc["cars-b", "shc - csq"] == pytest.approx(0.2)


def test_a_difference_of_exactly_zero_on_every_seed_is_not_distinguishable():
    """Two methods equal on every seed (a d_min, a hit rate of 1.0) give the interval [0, 0]: it holds 0, so neither
    "higher" nor "lower" (a mutation to a closed comparison survived every test)."""
    interval = stats.paired_interval(np.array([0.5] * 3), np.array([0.5] * 3))
    assert (interval.low, interval.high) == (0.0, 0.0)
    assert interval.verdict == "not distinguishable"


def test_a_run_without_one_metric_pairs_the_seeds_that_have_it():
    """summary_frame leaves out a missing value, so the paired interval is over the seeds both methods have (without
    the drop, paired_by_seed refused the NaN)."""
    rows = pd.DataFrame({"label": ["a", "a", "b", "b"], "bits": 16, "seed": [0, 1, 0, 1],
                         "M": [0.5, np.nan, 0.4, 0.45], "N": [0.1, 0.2, 0.3, 0.4]})
    summary, per_seed = stats.summary_frame(rows, ["M", "N"])
    assert len(per_seed) == 7
    interval = stats.paired_by_seed(per_seed, "M", 16, "a", "b")
    assert interval.n == 1 and interval.mean == pytest.approx(0.1)
    assert summary[(summary["method"] == "a") & (summary["metric"] == "M")]["n"].iloc[0] == 1


def test_a_lower_is_better_ranking_states_a_positive_margin_and_the_lower_interval():
    """Nothing called ranking_sentence lower-is-better with per-seed numbers: a mutant that expected "higher" there
    said a clearly lowest method was behind, and one that kept the margin's sign printed "-0.210 below b"."""
    rows = pd.DataFrame({"label": ["a"] * 3 + ["b"] * 3, "bits": 16, "seed": [0, 1, 2] * 2,
                         "loss": [0.50, 0.52, 0.51, 0.71, 0.72, 0.73]})
    summary, per_seed = stats.summary_frame(rows, ["loss"])
    sentence = stats.ranking_sentence(summary, "loss", 16, higher_is_better=False, per_seed=per_seed)
    assert sentence.startswith("At 16 bits, a has the lowest loss (0.510 ± 0.010, 3 seeds), 0.210 below b ")
    assert sentence.endswith("[-0.235, -0.185], excludes 0.")


def test_percent_words_never_rounds_a_share_to_none_or_all():
    assert [stats.percent_words(share) for share in (0.0, 0.001, 0.333, 0.999, 1.0)] == \
        ["0%", "under 1%", "33%", "over 99%", "100%"]
