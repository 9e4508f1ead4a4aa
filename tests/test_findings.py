"""Computed prose: the closing sentences follow the numbers (change the numbers, the sentences change)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shc import findings, plots, similarity


def _runs(shc, mds, bits=16, metric="tie_aware_mAP@ALL"):
    rows = []
    for seed, (a, b) in enumerate(zip(shc, mds)):
        rows += [{"label": "shc", "bits": bits, "seed": seed, metric: a},
                 {"label": "mds", "bits": bits, "seed": seed, metric: b}]
    return pd.DataFrame(rows)


def test_retrieval_sentences_follow_the_numbers():
    higher = findings.retrieval_findings(_runs([0.50, 0.52, 0.55], [0.40, 0.41, 0.45]))
    assert higher[0].startswith("At 16 bits, shc has the highest tie-aware mAP@ALL")  # the primary metric
    assert "shc is higher" in higher[1] and "+0.103" in higher[1]  # mean paired difference (0.1+0.11+0.1)/3
    lower = findings.retrieval_findings(_runs([0.40, 0.41, 0.45], [0.50, 0.52, 0.55]))
    assert lower[0].startswith("At 16 bits, mds has the highest") and "shc is lower" in lower[1]
    noisy = findings.retrieval_findings(_runs([0.50, 0.40, 0.55], [0.45, 0.50, 0.47]))
    assert "not distinguishable" in noisy[1]
    by_index = findings.retrieval_findings(_runs([0.50, 0.52, 0.55], [0.40, 0.41, 0.45], metric="mAP@ALL"), "mAP@ALL")
    assert by_index[1].startswith("mAP@ALL, shc")


def test_device_findings_say_where_the_runs_trained():
    one = _runs([0.50, 0.52, 0.55], [0.40, 0.41, 0.45]).assign(device="cpu", precision="fp32")
    assert findings.device_findings(one) == ["Every run trained on cpu in fp32."]
    assert findings.device_findings(_runs([0.5], [0.4])) == []  # runs from before devices were recorded
    two = pd.concat([one, _runs([0.60, 0.62, 0.65], [0.50, 0.51, 0.55], bits=64).assign(device="cuda (NVIDIA H200)")])
    (sentence,) = findings.device_findings(two)
    assert sentence.startswith("These runs trained on more than one device, one per code length: 16 bits on cpu in "
                               "fp32, 64 bits on cuda (NVIDIA H200).") and "**" not in sentence  # plain text


def test_best_methods_label_names_tied_leaders_that_did_not_reach_their_targets():
    runs = _runs([0.50, 0.52, 0.55], [0.40, 0.41, 0.45])
    assert findings.best_methods_label(runs, "tie_aware_mAP@ALL", 16) == "shc"  # no reachability column: no remark
    tied = _runs([0.50, 0.40, 0.55], [0.45, 0.50, 0.47])  # paired interval holds 0: both lead
    hits = {"shc": 0.95, "mds": 0.60}
    tied["train_center_hit_rate"] = tied["label"].map(hits)
    assert findings.best_methods_label(tied, "tie_aware_mAP@ALL", 16) == (
        "shc; not distinguishable from it: mds; below the training hit rate of 0.9: mds")
    tied["train_center_hit_rate"] = 0.95
    assert findings.best_methods_label(tied, "tie_aware_mAP@ALL", 16) == "shc; not distinguishable from it: mds"


def test_best_methods_label_says_the_tied_are_tied_with_the_best_not_with_each_other():
    """A reader audit (2026-12-05) read "shc-ls, lth, greedyhash, dtsh, mds (not distinguishable)" as five methods
    no interval tells apart, where lth - mds excluded 0: each is compared with the best only."""
    scores = {"shc": [0.50, 0.60, 0.55], "csq": [0.49, 0.52, 0.56], "mds": [0.46, 0.49, 0.53]}
    runs = pd.DataFrame([{"label": name, "bits": 16, "seed": seed, "tie_aware_mAP@ALL": value}
                         for name, values in scores.items() for seed, value in enumerate(values)])
    csq_minus_mds = np.subtract(scores["csq"], scores["mds"])
    assert np.allclose(csq_minus_mds, 0.03)  # +0.03 on every seed: its interval excludes 0
    assert findings.best_methods_label(runs, "tie_aware_mAP@ALL", 16) == "shc; not distinguishable from it: csq, mds"


def test_reachability_sentences_name_the_networks_that_missed_their_targets():
    runs = _runs([0.95, 0.93, 0.97], [0.30, 0.35, 0.32], metric="train_center_hit_rate")
    missed = findings.reachability_findings(runs)
    assert missed == ["At 16 bits the networks of mds (0.323) did not reach their targets on the training set (center "
                      "hit rate below 0.9): a ranking that involves them measures what the network could fit, not "
                      "their targets."]
    reached = findings.reachability_findings(_runs([0.95, 0.93, 0.97], [0.91, 0.92, 0.90],
                                                   metric="train_center_hit_rate"))
    assert reached[0].startswith("At 16 bits every method's network reached") and "lowest mds, 0.910" in reached[0]
    runs.loc[0, "train_center_hit_rate"] = np.nan
    assert "some runs of shc" in findings.reachability_findings(runs)[-1]
    unknown = findings.reachability_findings(_runs([0.5], [0.4]))
    assert "record no reachability" in unknown[0]


def test_reachability_sentences_name_single_runs_under_the_line_of_methods_that_reached_it():
    """An audit of page 06 found GreedyHash's mean at 0.901 with two of its three networks under 0.9, unnamed."""
    runs = _runs([0.95, 0.93, 0.97], [0.95, 0.893, 0.8946], metric="train_center_hit_rate")
    (sentence,) = findings.reachability_findings(runs)
    assert sentence == ("At 16 bits every method's network reached its targets on the training set (center hit rate "
                        "at least 0.9 over the seeds; lowest mds, 0.913); single runs below it: mds seeds 1 and 2 "
                        "(0.893, 0.895).")
    runs = _runs([0.95, 0.89, 0.97], [0.30, 0.35, 0.32], metric="train_center_hit_rate")
    (sentence,) = findings.reachability_findings(runs)
    assert sentence.endswith("not their targets. Single runs below it of the methods that reached it over the seeds: "
                             "shc seed 1 (0.890).")
    assert "mds seed" not in sentence  # mds is named by its mean already


def test_convergence_sentences_count_runs_that_peaked_at_the_end():
    runs = pd.DataFrame({"label": ["shc", "mds"], "bits": [16, 16], "seed": [0, 0], "selected_epoch": [6, 3]})
    history = pd.DataFrame({"label": ["shc"] * 2 + ["mds"] * 2, "bits": 16, "seed": 0, "epoch": [3, 6, 3, 6],
                            "mAP@ALL": [0.1, 0.2, 0.3, 0.2]})
    sentences = findings.convergence_findings(runs, history)
    assert sentences[0].startswith("1 of 2 runs at 16 bits selected their last evaluated epoch (every run's last is "
                                   "epoch 6)")
    assert sentences[1] == "Share of runs selecting the last evaluated epoch, by method (16 bits): shc 100%, mds 0%."
    runs["selected_epoch"] = [3, 3]
    assert findings.convergence_findings(runs, history)[0].startswith("No run at 16 bits selected its last evaluated "
                                                                      "epoch")


def test_convergence_sentence_names_each_budget_when_methods_train_for_different_epochs():
    """Issue 38: "(epoch 160)" was printed for 17 runs of which 15 ended at 80; each run's own last evaluation counts."""
    runs = pd.DataFrame({"label": ["shc", "shc", "mds"], "bits": 16, "seed": [0, 1, 0], "selected_epoch": [80, 60, 160]})
    history = pd.DataFrame({"label": ["shc"] * 4 + ["mds"] * 2, "bits": 16, "seed": [0, 0, 1, 1, 0, 0],
                            "epoch": [40, 80, 40, 80, 80, 160], "mAP@ALL": [0.1, 0.2, 0.3, 0.2, 0.3, 0.4]})
    sentence = findings.convergence_findings(runs, history)[0]
    assert sentence.startswith("2 of 3 runs at 16 bits selected their last evaluated epoch (1 of the 2 runs ending at "
                               "epoch 80, the one run ending at 160);")
    other = findings.convergence_findings(runs.assign(selected_epoch=[80, 80, 80]), history)[0]
    assert other.startswith("2 of 3 runs at 16 bits selected their last evaluated epoch (2 of the 2 runs ending at "
                            "epoch 80, not the one run ending at 160);")
    assert "before its run's end" in findings.convergence_findings(runs.assign(selected_epoch=[40, 40, 80]),
                                                                   history)[0]


def test_convergence_sentence_states_the_late_gain_of_validation_map():
    """Gain from the last evaluation at or before 3/4 of the run to the last one: shc 0.30 -> 0.40 (+0.10) and
    mds 0.50 -> 0.48 (-0.02) over epochs 2, 4, 6, 8 (3/4 of 8 = 6): mean +0.04, largest +0.10."""
    runs = pd.DataFrame({"label": ["shc", "mds"], "bits": [16, 16], "seed": [0, 0], "selected_epoch": [8, 6]})
    history = pd.DataFrame({"label": ["shc"] * 4 + ["mds"] * 4, "bits": 16, "seed": 0, "epoch": [2, 4, 6, 8] * 2,
                            "mAP@ALL": [0.1, 0.2, 0.3, 0.4, 0.3, 0.4, 0.5, 0.48]})
    sentence = findings.convergence_findings(runs, history)[0]
    assert "1 of 2 runs at 16 bits selected their last evaluated epoch (every run's last is epoch 8)" in sentence
    assert "rose by +0.040 on average (largest +0.100: shc, 16 bits, seed 0)" in sentence


def test_the_late_gain_of_the_best_value_does_not_count_a_dip_and_its_recovery_as_climbing():
    """Issue 38's audit of `standard`'s 03: MDS's late gain (+0.048) was mostly a dip at 3/4 of the budget that
    recovered to its earlier peak. Hand values over epochs 2, 4, 6, 8 (3/4 of 8 = 6): shc 0.1, 0.2, 0.3, 0.4 gains
    0.4 - 0.3 = +0.10 either way; mds 0.3, 0.5, 0.4, 0.48 dips: +0.08 from the last value at epoch 6, 0 from its best
    (0.5 before and after). Mean +0.050 (best) against +0.090 (last)."""
    runs = pd.DataFrame({"label": ["shc", "mds"], "bits": [16, 16], "seed": [0, 0], "selected_epoch": [8, 4]})
    history = pd.DataFrame({"label": ["shc"] * 4 + ["mds"] * 4, "bits": 16, "seed": 0, "epoch": [2, 4, 6, 8] * 2,
                            "mAP@ALL": [0.1, 0.2, 0.3, 0.4, 0.3, 0.5, 0.4, 0.48]})
    best = findings.convergence_findings(runs, history, reference="best")
    assert ("Over the last quarter of training, each run's best validation mAP@ALL (the one model selection keeps) "
            "rose by +0.050 on average (largest +0.100: shc, 16 bits, seed 0)") in best[0]
    assert best[-1] == "The late gain of the best value by method, mean over its runs: shc +0.100, mds 0; largest shc."
    last = findings.convergence_findings(runs, history)  # pages built before: the value at 3/4 of the run
    assert "validation mAP@ALL rose by +0.090 on average (largest +0.100: shc, 16 bits, seed 0)" in last[0]
    assert last[-1] == "The late gain by method, mean over its runs: shc +0.100, mds +0.080; largest shc."
    climbing = history.assign(**{"mAP@ALL": [0.1, 0.2, 0.3, 0.4, 0.3, 0.5, 0.4, 0.7]})  # mds past its peak: +0.2
    assert "mds +0.200, shc +0.100" in findings.convergence_findings(runs, climbing, reference="best")[-1]
    with pytest.raises(ValueError, match="reference must be 'last' or 'best'"):
        findings.convergence_findings(runs, history, reference="first")


def test_the_late_gain_is_also_given_by_method_so_one_climbing_method_shows():
    """A pooled mean hid one method still climbing (standard-fine's 03: +0.023 on average, every MDS run +0.047 to
    +0.154). Hand values: shc 0.3 -> 0.4 (+0.10) and 0.3 -> 0.5 (+0.20), mds 0.5 -> 0.48 (-0.02): shc +0.150 (its 2
    runs +0.100 to +0.200), mds -0.020; swap the curves and the order follows."""
    runs = pd.DataFrame({"label": ["shc", "shc", "mds"], "bits": 16, "seed": [0, 1, 0], "selected_epoch": 8})
    curves = {("shc", 0): [0.1, 0.2, 0.3, 0.4], ("shc", 1): [0.1, 0.2, 0.3, 0.5], ("mds", 0): [0.3, 0.4, 0.5, 0.48]}
    history = pd.DataFrame([{"label": label, "bits": 16, "seed": seed, "epoch": epoch, "mAP@ALL": value}
                            for (label, seed), values in curves.items() for epoch, value in zip([2, 4, 6, 8], values)])
    assert findings.convergence_findings(runs, history)[-1] == (
        "The late gain by method, mean over its runs: shc +0.150, mds -0.020; largest shc (its 2 runs +0.100 to "
        "+0.200).")
    flat = history.assign(**{"mAP@ALL": np.where(history["label"] == "mds", history["mAP@ALL"] + [0, 0, 0, 0.0205]
                                                  * 3, history["mAP@ALL"])})  # mds 0.5 -> 0.5005: +0.0005
    assert "mds +0.0005" in findings.convergence_findings(runs, flat)[-1]  # not "+0.001", and never "+0.000"
    flipped = history.assign(label=history["label"].map({"shc": "mds", "mds": "shc"}))
    assert findings.convergence_findings(runs.assign(label=["mds", "mds", "shc"]), flipped)[-1].startswith(
        "The late gain by method, mean over its runs: mds +0.150, shc -0.020")


def test_a_ranking_carries_its_own_caveat_for_networks_that_missed_their_targets():
    """standard-fine's page 04 compared shc and csq at 64 bits (hit rates 0.827 and 0.845) with no word of it in the
    list: the list now ends with the methods below 0.9 at each length, lowest first; none when all reached them."""
    runs = _runs([0.50, 0.52, 0.55], [0.40, 0.41, 0.45])
    assert findings.retrieval_findings(runs) == findings.retrieval_findings(runs.assign(train_center_hit_rate=0.95))
    low = runs.assign(train_center_hit_rate=runs["label"].map({"shc": 0.85, "mds": 0.80}))
    assert findings.retrieval_findings(low)[-1] == (
        "At 16 bits mds (0.800) and shc (0.850) did not reach their targets on the training set (center hit rate "
        "below 0.9): the comparisons above that involve them measure what the network could fit, not the targets.")
    one = runs.assign(train_center_hit_rate=runs["label"].map({"shc": 0.95, "mds": 0.80}))
    assert findings.retrieval_findings(one)[-1].startswith("At 16 bits mds (0.800) did not reach its targets")
    assert "did not reach" not in " ".join(findings.retrieval_findings(runs.assign(train_center_hit_rate=0.9)))
    # page 05's ablation list: the same caveat, under the variants' shown names
    ablation = findings.ablation_findings(low, {"shc": "d + S (SHC)", "mds": "S only"})
    assert ablation[-1].startswith("At 16 bits S only (0.800) and d + S (SHC) (0.850) did not reach their targets")


def test_the_late_gain_says_which_stretch_of_training_it_spans():
    """Evaluated at epochs 2 and 4 (quick), the last evaluation at or before 3/4 of 4 is epoch 2: the gain spans the
    last half, which the page called "the last quarter" (a reader audit, 2026-12-03)."""
    runs = pd.DataFrame({"label": ["shc", "mds"], "bits": 16, "seed": 0, "selected_epoch": [4, 4]})
    history = pd.DataFrame({"label": ["shc"] * 2 + ["mds"] * 2, "bits": 16, "seed": 0, "epoch": [2, 4] * 2,
                            "mAP@ALL": [0.1, 0.3, 0.2, 0.3]})
    first = findings.convergence_findings(runs, history)[0]
    assert "Over the last 50% of training (from the last evaluation at or before three quarters" in first
    assert "last quarter" not in first and "rose by +0.150 on average (largest +0.200: shc" in first
    mixed = pd.concat([history, pd.DataFrame({"label": "crh", "bits": 16, "seed": 0, "epoch": [2, 4, 6, 8],
                                              "mAP@ALL": [0.1, 0.2, 0.3, 0.4]})])
    runs = pd.concat([runs, pd.DataFrame({"label": ["crh"], "bits": [16], "seed": [0], "selected_epoch": [8]})])
    assert "Over the last 25-50% of training" in findings.convergence_findings(runs, mixed)[0]


def test_convergence_sentences_leave_out_runs_without_an_evaluation_and_name_no_run_for_a_tied_largest_gain():
    """A run with no evaluated epoch has no last epoch to compare (it crashed the count); two runs sharing the largest
    late gain (+0.100 each) are counted, not one of them named at random."""
    runs = pd.DataFrame({"label": ["shc", "mds", "crh"], "bits": 16, "seed": 0, "selected_epoch": [8, 8, 8]})
    history = pd.DataFrame({"label": ["shc"] * 4 + ["mds"] * 4, "bits": 16, "seed": 0, "epoch": [2, 4, 6, 8] * 2,
                            "mAP@ALL": [0.1, 0.2, 0.3, 0.4] * 2})
    first = findings.convergence_findings(runs, history)[0]
    assert first.startswith("2 of 2 runs at 16 bits selected their last evaluated epoch")
    assert "at its end. 1 run has no evaluated epoch and is not counted. Over the last quarter" in first
    assert "(largest +0.100, 2 runs)" in first
    assert findings.convergence_findings(runs, history.iloc[:0])[0].startswith("No run has an evaluated epoch")


def test_convergence_sentences_name_the_code_lengths_they_pool_and_the_run_of_the_largest_gain():
    """A reader audit (issue 38): pooled over 16, 32 and 64 bits, the sentences said neither which lengths they covered
    nor whose gain was the largest. mds at 32 bits: 0.2 -> 0.5 over its last quarter (+0.3); the others gain 0."""
    runs = pd.DataFrame({"label": ["shc", "mds", "shc"], "bits": [16, 32, 64], "seed": 0, "selected_epoch": [8, 8, 2]})
    history = pd.DataFrame({"label": ["shc"] * 4 + ["mds"] * 4 + ["shc"] * 4, "bits": [16] * 4 + [32] * 4 + [64] * 4,
                            "seed": 0, "epoch": [2, 4, 6, 8] * 3,
                            "mAP@ALL": [0.1, 0.2, 0.3, 0.3] + [0.1, 0.1, 0.2, 0.5] + [0.4, 0.3, 0.3, 0.3]})
    first, second, _ = findings.convergence_findings(runs, history)  # the third: the late gain by method
    assert first.startswith("2 of 3 runs at 16, 32 and 64 bits selected their last evaluated epoch (every run's last "
                            "is epoch 8)")
    assert "rose by +0.100 on average (largest +0.300: mds, 32 bits, seed 0)" in first
    assert second == ("Share of runs selecting the last evaluated epoch, by method (16, 32 and 64 bits): mds 100%, "
                      "shc 50%.")


def test_similarity_sentences_place_the_accuracy_and_name_the_better_source():
    accuracy = pd.DataFrame({"test accuracy": [0.61], "test accuracy std": [0.02], "seeds": [3]})
    names = ["data-dependent S", "data-dependent S, seed 1", "text S"]
    correlations = pd.DataFrame(np.array([[1, 0.8, 0.3], [0.8, 1, 0.2], [0.3, 0.2, 1]]), index=names, columns=names)
    agreement = pd.DataFrame({"roc_auc": [0.9, 0.7]}, index=["data-dependent S", "text S"])
    sentences = findings.similarity_findings(accuracy, correlations, agreement)
    assert "0.610 ± 0.020 over 3 seed(s), inside the paper's range" in sentences[0]
    assert sentences[1] == "The data-dependent S of different seeds agree with Spearman 0.800."
    assert sentences[-1].endswith("(0.5 is chance): by both measures the data-dependent S recovers it better.")
    accuracy["test accuracy"] = [0.3]
    agreement["roc_auc"] = [0.6, 0.8]
    changed = findings.similarity_findings(accuracy, correlations, agreement)
    assert "below the paper's range" in changed[0] and "the text S recovers it better" in changed[-1]
    # issue 21: ROC-AUC favours the text S while its nearest class is in the same coarse class at chance
    agreement = pd.DataFrame({"roc_auc": [0.66, 0.91], "top1_same_coarse": [0.51, 0.09], "top1_chance": [0.09, 0.09]},
                             index=["data-dependent S", "text S"])
    split = findings.similarity_findings(accuracy, correlations, agreement)[-1]
    assert "51% of classes with the data-dependent S and 9% with the text S (chance 9%)" in split
    assert split.endswith("the two measures disagree on which S recovers it better.") and "better (" not in split


def test_paper_accuracy_range_is_table_2_of_the_paper():
    assert findings.PAPER_ACCURACY == (0.4844, 0.7349)  # NABirds-B 48.44 %, Stanford Cars-A 73.49 %
    accuracy = pd.DataFrame({"test accuracy": [0.5], "test accuracy std": [float("nan")], "seeds": [1]})
    sentence = findings.similarity_findings(accuracy, pd.DataFrame([[1.0]], index=["x"], columns=["x"]), None)[0]
    assert "the paper's range of 48.4% to 73.5% (Table 2)" in sentence and "±" not in sentence


def test_hadamard_sentences_place_d_min_against_the_bound():
    table = pd.DataFrame({"d_min of CSQ centers": [16, 16, 10], "GV distance d": [12, 11, 11]},
                         index=pd.Index([32, 64, 65], name="C"))
    sentences = findings.hadamard_findings(table, bits=32)
    assert sentences[0] == "C = 32 (Hadamard rows only): CSQ's d_min is 16, above the bound d = 12."
    assert sentences[1] == "C = 64 (Hadamard rows and their negations): CSQ's d_min is 16, above the bound d = 11."
    assert sentences[2] == "C = 65 (1 random row(s) beyond 2q): CSQ's d_min is 10, below the bound d = 11."


def test_sign_sentence_counts_the_negative_off_diagonal_entries_by_hand(tmp_path):
    """Of the six off-diagonal entries four are negative (the diagonal's 1s do not count); row 2 has both of its
    others negative, rows 0 and 1 one each. Read back from a heatmap's data file the same way."""
    S = np.array([[1.0, 0.5, -0.2], [0.5, 1.0, -0.4], [-0.2, -0.4, 1.0]])
    expected = ["67% of the off-diagonal entries of the data-dependent S are negative (per class: 1 to 2 of its 2 "
                "others)."]
    assert findings.sign_findings(S) == expected
    saved = plots.save_table(plots.matrix_frame({"data-dependent S": S}, ["a", "b", "c"]), tmp_path / "p" / "figures" / "s")
    assert findings.derive("similarity-signs", tmp_path / "p", {"S": "figures/s.csv"}, {}) == expected
    with pytest.raises(ValueError, match="square matrix"):
        findings.sign_findings(np.ones((2, 3)))


def test_sign_sentence_says_when_the_negative_entries_draw_almost_white():
    """The same signs at a tenth of the size: the negative entries -0.02, -0.04 (each twice) have median -0.03, inside
    0.1 of 0, where a heatmap scaled from -1 to 1 is almost white; at -0.2 and -0.4 (above) nothing is added."""
    S = np.array([[1.0, 0.05, -0.02], [0.05, 1.0, -0.04], [-0.02, -0.04, 1.0]])
    assert findings.sign_findings(S) == [
        "67% of the off-diagonal entries of the data-dependent S are negative (per class: 1 to 2 of its 2 others); most "
        "of them are close to 0 (median -0.030), which the heatmap's colour scale from -1 to 1 draws almost white."]
    assert findings.sign_findings(np.eye(3)) == [
        "0% of the off-diagonal entries of the data-dependent S are negative (per class: 0 to 0 of its 2 others)."]


def test_hierarchy_sentence_names_this_datasets_coarse_classes_by_hand(tmp_path):
    """Five classes under coarse labels 2, 0, 2, 0, 2 of the names a, b, c: c holds three classes and a two, b none
    (it is not listed). Each c class has 2 of its 4 others in c, each a class 1 of 4:
    (3 * 2 + 2 * 1) / (5 * 4) = 40%."""
    table = similarity.coarse_class_table(np.array([2, 0, 2, 0, 2]), ["a", "b", "c"])
    assert table.to_dict("list") == {"coarse_class": ["a", "c"], "classes": [2, 3]}
    expected = ["This dataset's 5 classes fall into 2 coarse classes (a, c; 2 to 3 each): on average 40.0% of a "
                "class's others share its coarse class."]
    assert findings.hierarchy_findings(table) == expected
    saved = plots.save_table(table, tmp_path / "p" / "tables" / "coarse_classes")
    assert findings.derive("hierarchy", tmp_path / "p", {"coarse": "tables/coarse_classes.csv"}, {}) == expected
    # the 100 two-digit numbers under their 10 tens digits, of which three are named: (10 * 10 * 9) / (100 * 99)
    digits = similarity.coarse_class_table(np.repeat(np.arange(10), 10), [f"{tens}x" for tens in range(10)])
    assert findings.hierarchy_findings(digits) == [
        "This dataset's 100 classes fall into 10 coarse classes (0x, 1x, 2x, ...; 10 each): on average 9.1% of a "
        "class's others share its coarse class."]
    assert saved.name == "coarse_classes.csv"
    with pytest.raises(ValueError, match="index coarse_names"):
        similarity.coarse_class_table(np.array([0, 3]), ["a", "b"])
    with pytest.raises(ValueError, match="coarse_class and classes"):
        findings.hierarchy_findings(pd.DataFrame({"name": ["a"]}))


def test_pair_sentences_count_the_ties_the_table_cuts():
    S = np.eye(4)
    S[0, 1] = S[1, 0] = S[2, 3] = S[3, 2] = S[0, 2] = S[2, 0] = 0.9
    pairs = pd.DataFrame({"similarity": [0.9, 0.9], "same_coarse": [True, False]})
    sentences = findings.pair_findings(S, pairs)
    assert sentences == ["3 class pairs share the largest similarity, 0.9000; the table shows 2 of them, in class order.",
                         "1 of the 2 pairs shown shares a coarse class."]
    # with each class's coarse class: of the three tied pairs (0, 1), (0, 2) and (2, 3), (0, 1) and (2, 3) share one
    # (the two shown, (0, 1) and (0, 2), as the table's same_coarse says)
    sentences = findings.pair_findings(S, pairs, coarse=np.array([0, 0, 2, 2]))
    assert sentences[0] == ("3 class pairs share the largest similarity, 0.9000; the table shows 2 of them, in class "
                            "order; 2 of the 3 share a coarse class.")


def test_the_similar_pairs_finding_reads_the_coarse_classes_from_the_heatmap_data(tmp_path):
    """The page's path: S saved with each row's coarse class (matrix_frame's row_coarse), re-derived from the files."""
    S = np.eye(4)
    S[0, 1] = S[1, 0] = S[2, 3] = S[3, 2] = S[0, 2] = S[2, 0] = 0.9
    folder = tmp_path / "page"
    heatmap = plots.save_table(plots.matrix_frame({"data-dependent S": S}, ["a", "b", "c", "d"],
                                                  coarse_labels=[0, 0, 2, 2]), folder / "figures" / "heatmap")
    pairs = plots.save_table(pd.DataFrame({"similarity": [0.9, 0.9], "same_coarse": [True, False]}),
                             folder / "tables" / "pairs")
    sentences = findings.derive("similar-pairs", folder, {"S": heatmap.relative_to(folder).as_posix(),
                                                          "pairs": pairs.relative_to(folder).as_posix()}, {})
    assert sentences[0].endswith("in class order; 2 of the 3 share a coarse class.")


def test_the_tie_sentence_reads_the_table_of_tied_pairs_as_it_read_s_at_full_precision(tmp_path):
    """Today's page 01 publishes every pair at the top (most_similar_ties) and keeps its heatmap's S at 3 digits; the
    sentence is the one the 8-digit S gave. S has three pairs at 0.9 (one a near-tie, 0.9 + 1e-9, in the tolerance) and
    0.8999 just below: at three digits it would read as a fourth tie."""
    S = np.eye(5)
    for (a, b), value in {(0, 1): 0.9, (0, 2): 0.9 + 1e-9, (2, 3): 0.9, (3, 4): 0.8999}.items():
        S[a, b] = S[b, a] = value
    coarse = [0, 0, 1, 1, 1]
    ties = similarity.most_similar_ties(S, list("abcde"), coarse)
    assert list(zip(ties["class_a"], ties["class_b"])) == [(0, 1), (0, 2), (2, 3)]
    assert list(ties["same_coarse"]) == [True, False, True]
    pairs = similarity.most_similar_pairs(S, 2, list("abcde"), coarse)
    folder = tmp_path / "page"
    files = {"pairs": plots.save_table(pairs, folder / "tables" / "pairs"),
             "ties": plots.save_table(ties, folder / "tables" / "ties")}
    derived = findings.derive("similar-pairs", folder, {k: v.relative_to(folder).as_posix() for k, v in files.items()},
                              {})
    assert derived == findings.pair_findings(S, pairs, coarse) == [
        "3 class pairs share the largest similarity, 0.9000; the table shows 2 of them, in class order; 2 of the 3 "
        "share a coarse class.", "1 of the 2 pairs shown shares a coarse class."]
    with pytest.raises(ValueError, match="disagree"):
        findings.tie_findings(pairs.assign(similarity=0.5), ties)


def test_coarse_structure_sentences_give_the_within_and_between_means_of_s_and_of_each_center_set(tmp_path):
    """Coarse classes {0, 1} and {2, 3}. Off-diagonal S: within (0,1), (2,3) = 0.6 and 0.2, mean 0.4; between the four
    pairs (0,2)=0.0, (0,3)=-0.2, (1,2)=-0.2, (1,3)=0.0, mean -0.1; all 12 off-diagonal entries (each pair twice):
    mean (2 * 0.8 - 2 * 0.4) / 12 = 1/15, mean square 0.96 / 12 = 0.08, standard deviation sqrt(0.08 - 1/225) =
    0.2749, so the difference 0.5 is 1.82 of them.
    Centers of 4 bits: "a" gives classes 0 and 1 the same code and 2, 3 its negation-neighbours (cosines by hand)."""
    S = np.array([[1.0, 0.6, 0.0, -0.2], [0.6, 1.0, -0.2, 0.0], [0.0, -0.2, 1.0, 0.2], [-0.2, 0.0, 0.2, 1.0]])
    names = ["w", "x", "y", "z"]
    folder = tmp_path / "page"
    s_file = plots.save_table(plots.matrix_frame({"toy S": S}, names, coarse_labels=[0, 0, 1, 1]),
                              folder / "figures" / "similarity")
    (sentence,) = findings.derive("coarse-structure", folder, {"S": s_file.relative_to(folder).as_posix()},
                                  {"source": "toy S"})
    assert sentence == ("In the toy S, two classes of one coarse class have a mean similarity of 0.400, two of "
                        "different coarse classes -0.100: a difference of +0.500, 1.82 standard deviations of its "
                        "off-diagonal entries.")
    a = np.array([[1, 1, 1, 1], [1, 1, 1, 1], [-1, -1, 1, 1], [-1, -1, -1, 1]])  # cosines: (0,1) 1, (2,3) 0.5
    b = np.array([[1, 1, 1, 1], [-1, -1, -1, -1], [1, 1, -1, -1], [1, -1, 1, -1]])  # (0,1) -1, (2,3) 0; between 0
    gram = plots.gram_frames(S, {"a": a, "b": b}, names, include_similarity=False)
    gram_file = plots.save_table(gram, folder / "figures" / "gram")
    (sentence,) = findings.derive("coarse-structure", folder, {"S": s_file.relative_to(folder).as_posix(),
                                                               "centers": gram_file.relative_to(folder).as_posix()},
                                  {"source": "toy S"})
    # a between: (0,2) 0, (0,3) -0.5, (1,2) 0, (1,3) -0.5: mean -0.25; within (1 + 0.5) / 2 = 0.75
    assert sentence == ("Mean cosine of two centers (H H^T / q) of one coarse class against two of different coarse "
                        "classes, beside the toy S's 0.400 against -0.100: a 0.750 against -0.250; b -0.500 against "
                        "0.000.")
    with pytest.raises(ValueError, match="coarse_labels"):
        findings.coarse_structure_findings(plots.matrix_frame({"toy S": S}, names), source="toy S")
    # nothing to contrast: the sentence the page's prose promises says so
    single = plots.matrix_frame({"toy S": S}, names, coarse_labels=[0, 1, 2, 3])
    assert findings.coarse_structure_findings(single, source="toy S") == [
        "In the toy S, every class is a coarse class of its own: there is no within- against between-coarse-class "
        "contrast to show."]
    one = plots.matrix_frame({"toy S": S}, names, coarse_labels=[0, 0, 0, 0])
    assert "all classes share one coarse class" in findings.coarse_structure_findings(one, source="toy S")[0]
    s_frame = plots.matrix_frame({"toy S": S}, names, coarse_labels=[0, 0, 1, 1])
    shuffled = plots.gram_frames(S[::-1, ::-1], {"a": a[::-1]}, names[::-1], include_similarity=False)
    with pytest.raises(ValueError, match="another order"):
        findings.coarse_structure_findings(s_frame, shuffled, source="toy S")
    with pytest.raises(ValueError, match="gram_frames"):
        findings.coarse_structure_findings(s_frame, pd.DataFrame({"source": ["a"], "row": ["w"]}), source="toy S")


def test_precision_at_k_sentence_states_the_course_not_a_direction():
    frame = pd.DataFrame({"method": "shc", "bits": 16, "seed": [0, 0, 0, 1, 1, 1], "k": [1, 10, 100] * 2,
                          "precision": [0.3, 0.5, 0.2, 0.5, 0.7, 0.4], "recall": 0.0})
    sentence = findings.precision_at_k_findings(frame, 16)[0]
    assert sentence == ("Precision@K at 16 bits (mean over seeds): shc: 0.400 at K = 1, highest 0.600 at K = 10, "
                        "0.300 at K = 100.")


def test_best_methods_respect_ties():
    rows = pd.DataFrame({"method": ["greedyhash", "lth", "shc"] * 3, "bits": 16, "seed": np.repeat([0, 1, 2], 3),
                         "m": [0.60, 0.61, 0.40, 0.62, 0.58, 0.41, 0.61, 0.60, 0.39]})
    assert findings.best_methods(rows, "m", 16, method="method") == ["greedyhash", "lth"]
    rows.loc[rows["method"] == "lth", "m"] -= 0.1
    assert findings.best_methods(rows, "m", 16, method="method") == ["greedyhash"]


def test_the_classifier_settings_table_is_each_seeds_stage_1_schedule(tmp_path):
    """settings_rows(stage="classifier") holds the classifier's own epochs and learning rate (not the hashing
    network's), the dataset's split, and a row per seed; page 01's lines are derived from it."""
    from shc.results import settings_rows
    from shc.runs import RunConfig, load_data

    configs = [RunConfig(seed=seed, epochs=5, lr=0.01, classifier_epochs=3, classifier_lr=0.002, run_dir=str(tmp_path))
               for seed in (0, 1)]
    rows = settings_rows(configs, stage="classifier")
    assert list(rows["label"]) == ["seed 0", "seed 1"]
    assert list(rows["epochs"]) == [3, 3] and list(rows["lr"]) == [0.002, 0.002]
    data = load_data(configs[0])
    assert set(rows["protocol"]) == {data.protocol} and set(rows["classes"]) == {data.num_classes}
    data_line, classifier = findings.grid_findings(rows, configs[0].dataset, what="classifier")
    assert data_line == f"{configs[0].dataset}: {data.num_classes} classes; {data.protocol}"
    assert classifier == f"classifier (2 seeds): {configs[0].backbone}, trained from scratch, 3 epochs, " \
                         f"{configs[0].optimizer}, lr 0.002."
    hashing = settings_rows(configs)
    assert list(hashing["epochs"]) == [5, 5] and "protocol" not in hashing
    with pytest.raises(ValueError, match="stage must be"):
        settings_rows(configs, stage="stage1")


def test_center_sentences_report_the_gv_distance_and_the_s_loss_ratio():
    rows = pd.DataFrame({"label": ["shc", "mds", "random"] * 2, "bits": 16, "seed": [0, 0, 0, 1, 1, 1],
                         "d_min": [4, 4, 1, 4, 5, 2], "gv_distance": 4,
                         "s_loss": [0.05, 0.08, 0.10, 0.06, 0.09, 0.11]})
    sentences = findings.center_findings(rows)
    assert sentences[0] == "d_min >= the Gilbert-Varshamov d in every run for: mds, shc; not for: random."
    assert "shc is lower" in sentences[1] and "0.65x of mds" in sentences[1]  # mean 0.055 / 0.085
    with pytest.raises(ValueError, match=r"rows is empty; pass one row per run \(e\.g\. shc\.results\.result_rows"):
        findings.retrieval_findings(pd.DataFrame())


def test_a_run_on_csq_s_centers_with_csq_s_loss_is_named_as_csq_s_run():
    """Issue 38: 05's "d only (MDS centers)" at 64 bits is CSQ's run (MDS's generator returns Hadamard rows when
    C <= 2q); the page must say so, and must not say it where the centers differ."""
    from shc.centers import generate_centers
    from shc.findings import same_run_findings, same_run_rows
    from shc.runs import RunConfig

    runs = [(RunConfig(method=method, bits=bits, seed=seed), generate_centers("mds", 100, bits, seed=seed))
            for method in ("distance", "mds") for bits in (16, 64) for seed in (0, 1)]
    sentences = same_run_findings(same_run_rows(runs))
    assert sentences == ["At 64 bits the distance runs are csq's runs: the same loss on the same centers (its "
                         "generator returned csq's 100 centers for every seed), so their numbers are csq's, not a "
                         "separate result."]  # mds trains with its own loss, and at 16 bits the centers differ
    from shc.findings import same_run_methods

    rows = same_run_rows(runs)
    assert same_run_methods(rows, 64) == {"distance": "csq"} and same_run_methods(rows, 16) == {}
    one_seed_differs = rows.assign(same_centers=rows["same_centers"] & (rows["seed"] == 0))
    assert same_run_methods(one_seed_differs, 64) == {}  # every seed, or it is not the same runs
    assert same_run_methods(rows.iloc[:0], 64) == {}


def test_tradeoff_findings_say_where_the_fit_is_best_and_call_a_lower_loss_at_larger_d_search_noise():
    table = pd.DataFrame({"d": [0, 2, 4, 6], "d_min": [0, 2, 4, 6], "s_loss": [0.0310, 0.0290, 0.0335, 0.0410],
                          "spearman": [0.5, 0.5, 0.4, 0.3], "bound": 0.0200}).set_index("d")
    sentences = findings.tradeoff_findings(table)
    assert sentences[0] == "The lowest S_loss, 0.0290, is reached at d = 2."
    assert "at d = 2 it found centers that fit S better (0.0290 against 0.0310)" in sentences[1]
    assert sentences[2].startswith("S_loss falls 1 time(s) as d grows from 0 to 6")
    assert sentences[3] == "The relaxation bound is 0.0200: S_loss is 0.0110 above it at d = 0 and 0.0210 at d = 6."
    monotone = findings.tradeoff_findings(table.assign(s_loss=[0.0280, 0.0290, 0.0335, 0.0410]).reset_index())
    assert monotone[0].endswith("d = 0 (no separation required).") and monotone[1] == "S_loss never falls as d grows."
    assert not any("does not give the best fit" in sentence for sentence in monotone)


def test_the_best_method_label_says_which_method_the_shared_seeds_put_ahead():
    """A method higher on every seed both ran, but with fewer seeds and so a lower mean, was labelled "(not
    distinguishable)" beside the top (an audit, 2026-12-02)."""
    a = [{"label": "A", "bits": 16, "seed": s, "tie_aware_mAP@ALL": v} for s, v in enumerate([0.40, 0.41, 0.42, 0.9])]
    b = [{"label": "B", "bits": 16, "seed": s, "tie_aware_mAP@ALL": v} for s, v in enumerate([0.50, 0.50, 0.52])]
    runs = pd.DataFrame(a + b)  # A's mean 0.5325 > B's 0.5067; B higher on seeds 0-2 by ~0.1
    assert findings.best_methods_label(runs, "tie_aware_mAP@ALL", 16) == "A; B ahead of A on the seeds both ran"
    assert findings.best_methods_label(runs, "tie_aware_mAP@ALL", 32) == "n/a (no run at 32 bits)"
    one = _runs([0.5], [0.4])
    assert findings.best_methods_label(one, "tie_aware_mAP@ALL", 16) == "shc (one seed, untested)"


def test_findings_word_a_fall_a_missing_record_and_a_near_total_share_as_they_are():
    runs = pd.DataFrame({"label": ["shc"], "bits": [16], "seed": [0], "selected_epoch": [6]})
    history = pd.DataFrame({"label": "shc", "bits": 16, "seed": 0, "epoch": [2, 4, 6, 8],
                            "mAP@ALL": [0.3, 0.4, 0.5, 0.49]})
    assert "fell by 0.010 on average" in findings.convergence_findings(runs, history)[0]  # "rose by -0.010" before
    hits = _runs([0.99, 0.98], [np.nan, np.nan], metric="train_center_hit_rate")
    assert not any("every method's network reached" in s and "mds" in s for s in findings.reachability_findings(hits))
    only_nan = _runs([np.nan], [np.nan], metric="train_center_hit_rate").assign(bits=32)
    both = pd.concat([_runs([0.95], [0.96], metric="train_center_hit_rate"), only_nan])
    assert any("At 32 bits no run records reachability" in s for s in findings.reachability_findings(both))
    partly = _runs([0.5, 0.5], [0.4, 0.4]).assign(device=["cuda"] * 3 + [None], precision="fp32")
    assert findings.device_findings(partly)[0].startswith("These runs may have trained on more than one device")
    history = pd.DataFrame({"bits": [32] * 4, "d_min": [3] * 4})
    with pytest.raises(ValueError, match=r"no required d for the records at \[32\] bits"):
        findings.record_distance_finding(history, targets={16: 4})
    S = -np.ones((201, 201))
    np.fill_diagonal(S, 1)
    S[0, 1] = S[1, 0] = 0.5  # 2 of 40,200 off-diagonal entries are not negative
    assert findings.sign_findings(S)[0].startswith("over 99% of the off-diagonal entries")


def test_counts_of_one_take_the_singular():
    """An audit of the findings found "1 runs", "1 center sets", "1 coarse classes" and "1 of the 2 pairs shown
    share" (issue 38): every count goes through shc.stats.counted."""
    from shc.results import device_phrase
    from shc.stats import counted

    assert [counted(1, "run"), counted(2, "run"), counted(1, "coarse class", "coarse classes"),
            counted(0, "seed")] == ["1 run", "2 runs", "1 coarse class", "0 seeds"]
    one = pd.DataFrame({"label": ["shc"], "bits": [16], "seed": [0], "classes": [100], "epochs": [80],
                        "backbone": ["small_cnn"], "pretrained": [False], "pretrain": [None], "weights": [None],
                        "batch_size": [64], "optimizer": ["rmsprop"], "lr": [0.001], "eval_every": [2]})
    assert findings.grid_findings(one, "x")[0].startswith("1 run: 1 method x 1 code length x 1 seed on x;")
    assert findings.grid_findings(one, "x", what="centers")[0] == \
        "x: C = 100 classes; 1 center set (1 method x 1 code length x 1 seed)."
    mixed = pd.DataFrame({"label": ["shc", "mds"], "bits": [16, 16], "seed": [0, 0],
                          "device": ["cpu", "cuda (NVIDIA H200)"], "precision": ["fp32", "fp16"]})
    assert "cpu in fp32 (1 run), cuda (NVIDIA H200) in fp16 (1 run)" in device_phrase(mixed)
    hierarchy, = findings.hierarchy_findings(pd.DataFrame({"coarse_class": ["a"], "classes": [5]}))
    assert hierarchy.startswith("This dataset's 5 classes fall into 1 coarse class (a; 5 each): on average 100.0%")
    with pytest.raises(ValueError, match="at least two classes"):
        findings.hierarchy_findings(pd.DataFrame({"coarse_class": ["a"], "classes": [1]}))
    history = pd.DataFrame({"bits": [16], "d_min": [4], "gv_distance": [3]})
    assert findings.record_distance_finding(history) == "d_min \u2265 d held at the one record."
    assert findings.record_distance_finding(history.assign(d_min=2)) == "d_min fell below d at 1 of 1 record."
    with pytest.raises(ValueError, match="no record"):
        findings.record_distance_finding(history.iloc[:0])


def test_the_s_loss_ratio_is_over_the_seeds_the_paired_difference_is_over():
    """The ratio divided the paired mean difference (shared seeds) by the baseline's mean over all its seeds: with
    mds's extra seed at 0.50 it said 0.87x where the shared seeds give 0.055 / 0.085 = 0.65x; a zero baseline gave
    "nanx"."""
    rows = pd.DataFrame({"label": ["shc", "shc", "mds", "mds", "mds"], "bits": 16, "seed": [0, 1, 0, 1, 2],
                         "d_min": 4, "gv_distance": 4, "s_loss": [0.05, 0.06, 0.08, 0.09, 0.50]})
    assert findings.center_findings(rows)[1].endswith(f"shc's S_loss is {0.055 / 0.085:.2f}x of mds's "
                                                      "(lower is better).")
    zero = pd.DataFrame({"label": ["shc", "shc", "mds", "mds"], "bits": 16, "seed": [0, 1, 0, 1], "d_min": 4,
                         "gv_distance": 4, "s_loss": [0.01, 0.02, 0.0, 0.0]})
    sentence = findings.center_findings(zero)[1]
    assert sentence.endswith("no ratio: mds's S_loss is 0 on the seeds both have.") and "nan" not in sentence


def _similarity(accuracy: float, agreement: pd.DataFrame | None = None, spearman: float | None = None) -> list[str]:
    names = ["data-dependent S"] + (["data-dependent S (seed 1)"] if spearman is not None else [])
    correlations = pd.DataFrame(1.0, index=names, columns=names)
    if spearman is not None:
        correlations.iloc[0, 1] = correlations.iloc[1, 0] = spearman
    table = pd.DataFrame({"test accuracy": [accuracy], "test accuracy std": [0.01], "seeds": [3]})
    return findings.similarity_findings(table, correlations, agreement)


def test_similarity_sentences_never_round_into_a_contradiction():
    """0.7350 was "0.735, above the paper's range of 48.4% to 73.5%" (the edge is 73.49%); two seeds' one Spearman
    value was "between 0.800 and 0.800"; an ROC-AUC tie with different top-1 shares was "the two measures disagree"."""
    from shc.findings.centers import PAPER_ACCURACY

    assert PAPER_ACCURACY == (0.4844, 0.7349)
    edge = _similarity(0.7350)[0]
    assert "0.7350 ± 0.010 over 3 seed(s), above the paper's range of 48.44% to 73.49%" in edge
    assert "0.735 ± 0.010 over 3 seed(s), inside the paper's range of 48.4% to 73.5%" in _similarity(0.7346)[0]
    assert "0.700 ± 0.010 over 3 seed(s), inside the paper's range of 48.4% to 73.5%" in _similarity(0.70)[0]
    # a reviewer found rounding still crossing the edges one step away: the printed values must agree with the words
    assert "0.7354 ± 0.010 over 3 seed(s), above the paper's range of 48.44% to 73.49%" in _similarity(0.7354)[0]
    assert "0.73493 ± 0.010 over 3 seed(s), above the paper's range of 48.440% to 73.490%" in \
        _similarity((0.7349 + 0.7349 + 0.7350) / 3)[0]
    assert "0.48436 ± 0.010 over 3 seed(s), below the paper's range of 48.440% to 73.490%" in _similarity(0.48436)[0]
    assert "0.484 ± 0.010 over 3 seed(s), inside the paper's range of 48.4% to 73.5%" in _similarity(0.4844)[0]
    assert _similarity(0.7, spearman=0.8)[1] == "The data-dependent S of different seeds agree with Spearman 0.800."
    tie = pd.DataFrame({"roc_auc": [0.8, 0.8], "top1_same_coarse": [0.6, 0.3]}, index=["data-dependent S", "text S"])
    with_text = pd.DataFrame(1.0, index=["data-dependent S", "text S"], columns=["data-dependent S", "text S"])
    table = pd.DataFrame({"test accuracy": [0.7], "test accuracy std": [0.01], "seeds": [3]})
    last = findings.similarity_findings(table, with_text, tie)[-1]
    assert last.endswith(": ROC-AUC ties them; by the nearest other class the data-dependent S recovers it better.")
    flipped = tie.assign(roc_auc=[0.7, 0.8], top1_same_coarse=[0.5, 0.5])
    assert findings.similarity_findings(table, with_text, flipped)[-1].endswith(
        ": the nearest other class ties them; by ROC-AUC the text S recovers it better.")
    assert findings.similarity_findings(table, with_text, tie.assign(top1_same_coarse=0.5))[-1].endswith(
        ": both recover it equally.")
    # compared as printed: 0.8512 and 0.8508 both read 0.851, 50.4% and 49.6% both read 50%
    alike = tie.assign(roc_auc=[0.8512, 0.8508], top1_same_coarse=[0.504, 0.496])
    assert findings.similarity_findings(table, with_text, alike)[-1].endswith(": both recover it equally.")
    assert findings.similarity_findings(table, with_text, alike.assign(top1_same_coarse=[0.4, 0.5]))[-1].endswith(
        ": ROC-AUC ties them; by the nearest other class the text S recovers it better.")


def test_convergence_counts_only_the_runs_of_its_table_and_never_rounds_a_share_to_all():
    """199 of 200 runs at their last epoch read "shc 100%"; a history curve without a row in the runs table (crh
    here) set the average and the largest late gain of runs the sentence does not count."""
    curve = {"epoch": [2, 4, 6, 8], "mAP@ALL": [0.1, 0.2, 0.3, 0.4]}
    runs = pd.DataFrame({"label": ["shc"], "bits": [16], "seed": [0], "selected_epoch": [8]})
    history = pd.concat([pd.DataFrame({"label": "shc", "bits": 16, "seed": 0, **curve}),
                         pd.DataFrame({"label": "crh", "bits": 16, "seed": 0, "epoch": [2, 4, 6, 8],
                                       "mAP@ALL": [0.1, 0.2, 0.3, 0.9]})])
    first, shares, _ = findings.convergence_findings(runs, history)
    assert first.startswith("1 of 1 run at 16 bits selected its last evaluated epoch")
    assert "rose by +0.100 on average (largest +0.100: shc, 16 bits, seed 0)" in first and "crh" not in first
    many = pd.DataFrame({"label": "shc", "bits": 16, "seed": range(200), "selected_epoch": [8] * 199 + [6]})
    history = pd.concat([pd.DataFrame({"label": "shc", "bits": 16, "seed": seed, **curve}) for seed in range(200)])
    assert findings.convergence_findings(many, history)[1].endswith("by method (16 bits): shc over 99%.")


def test_a_margin_below_the_shown_decimals_is_printed_with_the_decimals_that_show_it():
    """shc 0.5004 against mds 0.5000 read "0.000 above mds" next to an interval that excludes 0."""
    from shc import stats

    rows = pd.DataFrame({"label": ["shc"] * 3 + ["mds"] * 3, "bits": 16, "seed": [0, 1, 2] * 2,
                         "m": [0.5003, 0.5004, 0.5005, 0.5, 0.5, 0.5]})
    summary, per_seed = stats.summary_frame(rows, ["m"])
    assert ", 0.00040 above mds (0.500 ± 0.000, 3 seeds)" in stats.ranking_sentence(summary, "m", 16, per_seed=per_seed)
    rows["m"] = [0.6, 0.61, 0.62, 0.5, 0.5, 0.5]
    summary, per_seed = stats.summary_frame(rows, ["m"])
    assert ", 0.110 above mds" in stats.ranking_sentence(summary, "m", 16, per_seed=per_seed)


def test_the_example_queries_line_counts_the_relevant_results_of_the_figures_data():
    """Page 04 put the examples' precision in the figure's title, where the checker could not read it; the finding
    counts the relevant results of the figure's data, in all and per query in the figure's order."""
    frame = pd.DataFrame({"query": [8] * 3 + [2] * 3, "query_class": ["a"] * 3 + ["b"] * 3, "rank": [1, 2, 3] * 2,
                          "result": range(6), "distance": [0, 1, 1, 0, 2, 2],
                          "correct": [True, True, False, False, False, True]})
    assert findings.example_findings(frame, "mds", 32) == [
        "mds, 32 bits: 3 of the 6 results shown (2 queries x top 3) are of their query's class (precision 0.50); "
        "per query, in the figure's order: 2, 1 of 3."]
    flipped = frame.assign(correct=[True, True, True, False, False, True])
    assert findings.example_findings(flipped.iloc[:3], "shc", 16) == [
        "shc, 16 bits: 3 of the 3 results shown (1 query x top 3) are of their query's class (precision 1.0); "
        "per query, in the figure's order: 3 of 3."]
    with pytest.raises(ValueError, match="ExampleQueries.frame"):
        findings.example_findings(frame.drop(columns="correct"), "mds", 32)
