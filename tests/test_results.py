"""shc.results' regime comparison: two presets' runs side by side, paired by seed (hand-computed cases)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from shc import results
from shc.results import ranking_line, regime_rows

METRIC = "tie_aware_mAP@ALL"


def _rows(values: dict[str, list[float]], bits: int = 16) -> pd.DataFrame:
    return pd.DataFrame([{"method": method, "bits": bits, "seed": seed, METRIC: value}
                         for method, per_seed in values.items() for seed, value in enumerate(per_seed)])


SCRATCH = _rows({"x": [0.50, 0.52, 0.51], "y": [0.40, 0.41, 0.39], "z": [0.30, 0.30, 0.30]})
PRETRAINED = _rows({"x": [0.45, 0.46, 0.47], "y": [0.50, 0.52, 0.51], "z": [0.51, 0.50, 0.52]})


def test_regime_rows_pair_by_seed_with_a_t_interval_and_rank_each_preset():
    frame = regime_rows(SCRATCH, PRETRAINED, METRIC).set_index("method")
    # x: b - a = -0.05, -0.06, -0.04: mean -0.05, sd 0.01, t(0.975, 2) = 4.3027 -> half width 0.024841
    half = 4.302652729911275 * 0.01 / math.sqrt(3)
    assert frame.loc["x", "change"] == pytest.approx(-0.05)
    assert (frame.loc["x", "low"], frame.loc["x", "high"]) == pytest.approx((-0.05 - half, -0.05 + half))
    assert frame.loc["x", "verdict"] == "lower" and frame.loc["x", "seeds"] == 3
    assert frame.loc["z", "change"] == pytest.approx(0.21)
    assert dict(frame["rank a"]) == {"x": 1, "y": 2, "z": 3}
    assert dict(frame["rank b"]) == {"y": 1, "z": 1, "x": 3}  # y and z tie at 0.51 (both rank 1), x 0.46
    assert list(frame.index) == ["y", "z", "x"]  # sorted by the second preset's rank


def test_ranking_line_joins_neighbours_by_their_paired_verdict():
    assert ranking_line(SCRATCH, METRIC, 16) == "x > y > z"
    # y - z per seed: -0.01, +0.02, -0.01 (interval holds 0); z - x: +0.06, +0.04, +0.05 (above 0)
    assert ranking_line(PRETRAINED, METRIC, 16) in ("y ≈ z > x", "z ≈ y > x")
    one_seed = SCRATCH[SCRATCH["seed"] == 0]
    assert ranking_line(one_seed, METRIC, 16) == "x ? y ? z"


def test_regime_rows_refuse_grids_without_a_common_run():
    other = PRETRAINED.assign(bits=32)
    with pytest.raises(ValueError, match="share no"):
        regime_rows(SCRATCH, other, METRIC)
    with pytest.raises(ValueError, match="no tie_aware_mAP@ALL values at 64 bits"):
        ranking_line(SCRATCH, METRIC, 64)


def test_device_phrase_names_one_device_and_warns_on_a_mix():
    import pandas as pd

    from shc.results import device_phrase

    def rows(*devices):
        return pd.DataFrame({"method": ["x"] * len(devices), "device": list(devices)})

    # a CPU's arithmetic is the machine's (bf16 or fp32): a run that did not record it says so
    assert device_phrase(rows("cpu", "cpu")) == "Every run trained on cpu in an unrecorded arithmetic."
    assert device_phrase(rows(None, None)) == ""  # runs older than the record: nothing is claimed
    assert device_phrase(pd.DataFrame({"method": ["x"]})) == ""  # a results file written before the column
    mixed = device_phrase(rows("cpu", "cuda (NVIDIA H200)", "cuda (NVIDIA H200)", None))
    assert mixed.startswith("**These runs trained on more than one device**")
    assert "cpu in an unrecorded arithmetic (1 run), cuda (NVIDIA H200) (2 runs), not recorded (1 run)" in mixed
    # one device recorded beside unrecorded runs is a possible mix, and says so
    assert "not recorded (1 run)" in device_phrase(rows("cpu", None))


def test_device_phrase_names_the_device_of_each_code_length_when_every_length_trained_on_one():
    import pandas as pd

    from shc.results import device_phrase

    h200 = "cuda (NVIDIA H200)"
    by_length = pd.DataFrame({"method": ["x", "y"] * 3, "bits": [16, 16, 64, 64, 32, 32],
                              "device": ["cpu", "cpu", h200, h200, "cpu", "cpu"]})
    phrase = device_phrase(by_length)
    assert phrase.startswith("**These runs trained on more than one device, one per code length**: "
                             "16 and 32 bits on cpu in an unrecorded arithmetic, 64 bits on cuda (NVIDIA H200). ")
    assert "within one device's runs" in phrase
    three = pd.DataFrame({"method": ["x"] * 4, "bits": [16, 32, 64, 128], "device": ["cpu", "cpu", "cpu", h200]})
    assert ": 16, 32 and 64 bits on cpu in an unrecorded arithmetic, 128 bits on cuda (NVIDIA H200). " in \
        device_phrase(three)
    assert device_phrase(by_length, markdown=False).startswith("These runs trained on more than one device, one per")
    # one length split between two devices: the counting warning, not the per-length one
    split = by_length.assign(device=["cpu", h200, h200, h200, "cpu", "cpu"])
    assert device_phrase(split).endswith("compare methods within one device's runs.")
    assert "cpu in an unrecorded arithmetic (3 runs), cuda (NVIDIA H200) (3 runs)" in device_phrase(split)
    # a length whose run did not record its device is not claimed for one device
    unrecorded = by_length.assign(device=["cpu", None, h200, h200, "cpu", "cpu"])
    assert "one per code length" not in device_phrase(unrecorded)


def test_device_phrase_counts_the_precision_of_each_run_as_part_of_where_it_trained():
    import pandas as pd

    from shc.results import device_phrase

    def rows(bits, devices, precisions):
        return pd.DataFrame({"method": ["x"] * len(bits), "bits": bits, "device": devices, "precision": precisions})

    one = rows([16, 32], ["cpu", "cpu"], ["bf16", "bf16"])
    assert device_phrase(one) == "Every run trained on cpu in bf16."
    # one CPU kind per length, in two arithmetics: a mix of precisions, named per length
    assert device_phrase(rows([16, 32], ["cuda (NVIDIA H200)"] * 2, [None, None])) == \
        "Every run trained on cuda (NVIDIA H200)."  # a GPU's "auto" is fp16 on every GPU
    by_length = device_phrase(rows([16, 16, 32, 64], ["cpu"] * 4, ["bf16", "bf16", "fp32", "fp32"]))
    assert by_length.startswith("**These runs trained in more than one precision, one per code length**: "
                                "16 bits on cpu in bf16, 32 and 64 bits on cpu in fp32. Runs are not bit-identical "
                                "across precisions (docs/reliability.md, \"Precision\")")
    # one length split between the two: counted
    split = device_phrase(rows([32, 32, 32], ["cpu"] * 3, ["bf16", "fp32", "fp32"]))
    assert split.startswith("**These runs trained in more than one precision**: cpu in bf16 (1 run), cpu in fp32 "
                            "(2 runs).")
    # two devices stay a mix of devices; a CPU run without the precision record says so
    mixed = device_phrase(rows([16, 16], ["cpu", "cuda (NVIDIA H200)"], [None, "fp16"]))
    assert "more than one device**: cpu in an unrecorded arithmetic (1 run), cuda (NVIDIA H200) in fp16 (1 run)" in mixed
    assert "across devices (docs/gpu.md)" in mixed
    # a precision without a device (cannot happen in result_rows) claims nothing for the run
    assert "not recorded (1 run)" in device_phrase(rows([16, 16], ["cpu", None], ["fp32", "fp32"]))
    # runs of one device where some lack the record: a possible mix, not a claimed one
    old_and_new = device_phrase(rows([16, 16, 16], ["cpu"] * 3, ["fp32", None, None]))
    assert old_and_new.startswith("**These runs may have trained in more than one precision**: cpu in an unrecorded "
                                  "arithmetic (2 runs), cpu in fp32 (1 run).")
    h200 = "cuda (NVIDIA H200)"
    assert device_phrase(rows([16, 32], [h200] * 2, [None, "fp16"])).startswith(
        f"**These runs may have trained in more than one precision, one per code length**: 16 bits on {h200}, 32 bits "
        f"on {h200} in fp16.")


def test_headline_rows_give_each_method_its_paired_verdict_against_shc_and_the_best_baseline():
    import pandas as pd

    from shc.results import headline_rows

    base = {0: 0.50, 1: 0.52, 2: 0.48}
    shifts = {"shc": [0, 0, 0], "shc-ls": [0.10, 0.11, 0.09],  # above: every seed +0.09..0.11
              "crh": [0.02, -0.02, 0.01],  # ties: the differences change sign
              "x": [-0.20, -0.21, -0.19], "y": [-0.05, -0.06, -0.04]}  # y is the best of the others, below SHC
    rows = pd.DataFrame([{"method": method, "bits": 16, "seed": seed, METRIC: base[seed] + shift[seed]}
                         for method, shift in shifts.items() for seed in base]
                        + [{"method": "shc", "bits": 32, "seed": 0, METRIC: 0.6},
                           {"method": "x", "bits": 32, "seed": 0, METRIC: 0.5}])
    table = headline_rows(rows, METRIC).set_index("bits")
    assert list(table.columns) == ["shc", "shc-ls", "crh", "best baseline"]
    assert table.loc[16, "shc"] == "0.500 ± 0.020 (3)"
    # differences 0.10, 0.11, 0.09: sd 0.01, half-width t(0.975, 2) * 0.01 / sqrt(3) = 0.0248
    assert table.loc[16, "shc-ls"] == "0.600 ± 0.030 (3); above, +0.100 [+0.075, +0.125]"
    assert "; ties, " in table.loc[16, "crh"]
    assert table.loc[16, "best baseline"] == "y: 0.450 ± 0.010 (3); below, -0.050 [-0.075, -0.025]"
    # one seed: no verdict; a method without runs at a length says so
    assert table.loc[32, "best baseline"] == "x: 0.500 (1 seed); -0.100 from one seed"
    assert table.loc[32, "shc-ls"] == "not run" and table.loc[32, "crh"] == "not run"
    with pytest.raises(ValueError, match="compares with 'shc', which has no runs"):
        headline_rows(rows[rows["method"] != "shc"], METRIC)
    # with the reachability column, each cell carries the seed mean of the training hit rate (issue 35)
    hits = rows.assign(train_center_hit_rate=[0.9, 0.8, 0.7] * 5 + [1.0, 0.5])
    cells = headline_rows(hits, METRIC).set_index("bits")
    assert cells.loc[16, "shc"] == "0.500 ± 0.020 (3), hit 0.800"
    assert cells.loc[32, "best baseline"] == "x: 0.500 (1 seed), hit 0.500; -0.100 from one seed"


def test_verdict_sentence_groups_every_method_by_its_paired_verdict_against_shc():
    import pandas as pd

    from shc.results import verdict_sentence

    base = {0: 0.50, 1: 0.52, 2: 0.48}
    shifts = {"shc": [0, 0, 0], "a": [0.10, 0.11, 0.09], "b": [0.02, -0.02, 0.01], "c": [-0.20, -0.21, -0.19],
              "d": [-0.05, -0.06, -0.04]}
    rows = pd.DataFrame([{"method": method, "bits": 16, "seed": seed, METRIC: base[seed] + shift[seed]}
                         for method, shift in shifts.items() for seed in base]
                        + [{"method": "e", "bits": 16, "seed": 0, METRIC: 0.9}])  # one seed: no interval
    # groups in ascending order of mean: c (0.30), d (0.45) below shc's 0.50; b ties; a above
    assert verdict_sentence(rows, 16, METRIC) == (
        "At 16 bits, shc is above c and d; ties b; is below a; untested against e (one seed) "
        "(paired 95% intervals over 3 seeds).")
    assert verdict_sentence(rows[rows["method"].isin(["shc", "b"])], 16, METRIC) == (
        "At 16 bits, shc ties b (paired 95% intervals over 3 seeds).")
    with pytest.raises(ValueError, match="no tie_aware_mAP@ALL runs of 'shc' at 32 bits"):
        verdict_sentence(rows, 32, METRIC)


def test_grid_phrase_puts_each_noun_in_the_number_of_its_count():
    from shc.results import grid_phrase

    assert grid_phrase(["shc", "mds"], [16, 32, 64], [0, 1, 2]) == "2 methods x 3 code lengths x 3 seeds"
    assert grid_phrase(["shc"], [16], [0]) == "1 method x 1 code length x 1 seed"


def test_an_ablations_grid_counts_variants_not_methods():
    """Page 05's grid line said "4 methods" for distance, semantic, shc and shc (text S): three methods, four
    variants (issue 38)."""
    from shc.findings import grid_findings
    from shc.results import grid_phrase

    assert grid_phrase(["shc", "shc (text S)"], [16], [0, 1], unit="variant") == "2 variants x 1 code length x 2 seeds"
    assert grid_phrase(["shc"], [16], [0], unit="variant") == "1 variant x 1 code length x 1 seed"
    with pytest.raises(ValueError, match="unit must be one of"):
        grid_phrase(["shc"], [16], [0], unit="methods")
    settings = pd.DataFrame({"label": ["shc", "shc (text S)"], "bits": [16, 16], "seed": [0, 0], "classes": [100, 100],
                             "epochs": [4, 4], "backbone": ["small_cnn"] * 2, "pretrained": [False, False],
                             "pretrain": ["", ""], "weights": ["", ""], "batch_size": [64, 64],
                             "optimizer": ["rmsprop"] * 2, "lr": [0.001, 0.001], "eval_every": [2, 2]})
    line, = grid_findings(settings, "digits-composite", unit="variant")
    assert line.startswith("2 runs: 2 variants x 1 code length x 1 seed on digits-composite;")
    assert grid_findings(settings, "digits-composite")[0].startswith("2 runs: 2 methods x")


def test_budget_phrase_groups_the_methods_of_each_budget():
    from shc.results import budget_phrase

    # standard-fine: a tie between 60 and 120 goes to the first method's budget; the others are grouped
    fine = {"random": [60], "csq": [60], "shc-ls": [120], "mds": [60], "crh": [120], "shc": [60], "lth": [120],
            "greedyhash": [120]}
    assert budget_phrase(fine) == "60 epochs, 120 for shc-ls, crh, lth, greedyhash"
    assert budget_phrase({"mds": [160], "shc": [80], "dtsh": [160]}) == "160 epochs, 80 for shc"
    assert budget_phrase({"shc": [80, 160]}) == "80/160 epochs"
    with pytest.raises(ValueError, match="at least one"):
        budget_phrase({})


def test_budget_phrase_names_the_code_length_whose_budget_differs():
    """standard-fine's LTH trains 480 epochs at 16 bits, 960 at 32 and 64 (Preset.bits_config): the phrase says where,
    where "480/960" would not; a method with one budget at every length reads as before."""
    from shc.presets import PRESETS
    from shc.results import budget_phrase, budgets_by_bits

    configs = PRESETS.get("standard-fine").configs(seeds=[0, 1])
    methods = ["random", "crh", "lth"]
    budgets = budgets_by_bits(configs, methods)
    assert budgets == {"random": {16: 120, 32: 120, 64: 120}, "crh": {16: 120, 32: 120, 64: 120},
                       "lth": {16: 480, 32: 960, 64: 960}}
    assert budget_phrase(budgets) == "120 epochs, 960 for lth (480 at 16 bits)"  # its usual budget: the most common
    only64 = budgets_by_bits([c for c in configs if c.bits == 64], methods, labels={"lth": "LTH"})
    assert budget_phrase(only64) == "120 epochs, 960 for LTH"
    # the most common budget of a method is its usual one; on a tie, the shortest code length's
    assert budget_phrase({"a": {16: 80, 32: 160}, "b": {16: 80, 32: 80}, "c": {16: 80, 32: 80}}) == (
        "80 epochs, 80 for a (160 at 32 bits)")
    assert budget_phrase({"a": {16: 80, 32: 80}, "b": [80], "c": [160]}) == "80 epochs, 160 for c"  # forms mix
    mixed = [c for c in configs if c.method == "lth"] + [configs[0].replace(method="lth", epochs=7)]
    with pytest.raises(ValueError, match="several budgets at one code length"):
        budgets_by_bits(mixed, ["lth"])


def _versus(capsys, *arguments: str) -> tuple[int, str, str]:
    from shc.results import main

    status = main(["--preset", "tiny", *arguments])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_versus_refuses_grids_that_do_not_share_dataset_splits_or_seeds(tmp_path, capsys):
    """The issue's case: --versus printed "same splits, paired by seed" for two presets of different datasets."""
    dirs = ["--run-dir", str(tmp_path / "a"), "--versus-run-dir", str(tmp_path / "b")]
    (tmp_path / "a").mkdir()  # empty: the grids are refused before any run is read
    status, _, err = _versus(capsys, "--versus", "tiny-fine", "--seeds", "0", *dirs)
    assert status == 2 and "--versus tiny-fine and --preset tiny do not share splits (seed 0: dataset " in err
    assert "cannot be paired by seed" in err and len(err.strip().splitlines()) == 1
    status, _, err = _versus(capsys, "--versus", "quick", *dirs)  # the same dataset, other seeds
    assert status == 2 and "--versus quick has seeds [0, 1, 2] and --preset tiny seeds [0]" in err
    status, _, err = _versus(capsys, "--versus", "quick", "--seeds", "0", *dirs)  # the same dataset, other splits
    assert status == 2 and "do not share splits (seed 0: dataset_options {" in err


def test_versus_says_which_seeds_it_checked_and_pairs(tmp_path, capsys):
    from shc.pipeline import preset, run_grid

    run_grid(preset("tiny", methods=["shc"], run_dir=str(tmp_path / "a")), progress=False)
    run_grid(preset("tiny-pretrained", methods=["shc"], run_dir=str(tmp_path / "b")), progress=False)
    status, out, err = _versus(capsys, "--methods", "shc", "--run-dir", str(tmp_path / "a"), "--versus",
                               "tiny-pretrained", "--versus-run-dir", str(tmp_path / "b"))
    assert status == 0, err
    assert "the same splits at each of seeds 0 (checked: dataset, options and data fingerprint)" in out
    assert "| 16 | shc |" in out


def test_a_results_file_rebuilds_the_tables_and_comparisons_without_the_run_folders(tmp_path, capsys):
    """Issue 38: one CSV per preset holds every run's config and measures; the tables and paired comparisons printed
    from it equal those printed from the runs, with the run folders gone; a stale file is named, not read."""
    from shc.pipeline import preset, run_grid
    from shc.results import read_results
    from shc.results.cli import main

    run_dir, csv = tmp_path / "runs", tmp_path / "results" / "tiny.csv"
    configs = preset("tiny", run_dir=str(run_dir))
    run_grid(configs, progress=False)
    assert main(["--preset", "tiny", "--run-dir", str(run_dir), "--write-csv", str(csv)]) == 0
    from_runs = capsys.readouterr().out
    assert f"wrote {csv} (2 runs)" in from_runs
    written = pd.read_csv(csv)  # each run's arithmetic is recorded: two CPUs of one grid may differ in it
    assert written["precision"].notna().all() and set(written["precision"]) <= {"fp32", "bf16"}
    run_dir.rename(tmp_path / "gone")
    assert main(["--preset", "tiny", "--run-dir", str(run_dir), "--from-csv", str(csv)]) == 0
    from_file = capsys.readouterr().out

    def body(text):  # everything after the header line (which names its source)
        return text.split("seeded random.\n", 1)[1]

    assert body(from_file) == body(from_runs) and "0." in body(from_file) and "Paired comparisons" in body(from_file)
    with pytest.raises(ValueError, match=r"does not hold the grid asked for \(shc 16 bits seed 0: other epochs"):
        read_results(csv, preset("tiny", run_dir=str(run_dir), epochs=3)[1:])
    with pytest.raises(ValueError, match="shc 16 bits seed 1: missing.*--write-csv"):
        read_results(csv, preset("tiny", run_dir=str(run_dir), seeds=[1])[1:])


def test_a_metric_no_run_stores_is_said_to_be_missing_not_printed_as_an_empty_frame(tmp_path, capsys):
    from shc.pipeline import preset, run_grid
    from shc.results.cli import main

    run_dir, csv = tmp_path / "runs", tmp_path / "tiny.csv"
    run_grid(preset("tiny", run_dir=str(run_dir)), progress=False)
    assert main(["--preset", "tiny", "--run-dir", str(run_dir), "--write-csv", str(csv)]) == 0
    table = pd.read_csv(csv)
    table["query_center_hit_rate"] = float("nan")  # as in a file of runs measured before reachability
    table.to_csv(csv, index=False)
    capsys.readouterr()
    assert main(["--preset", "tiny", "--from-csv", str(csv), "--metrics", "query_center_hit_rate"]) == 0
    out = capsys.readouterr().out
    assert "n/a: none of these runs stores it" in out and "Empty DataFrame" not in out


def test_a_results_file_holds_the_classifier_code_baseline_where_the_preset_computes_it(tmp_path, capsys):
    """Issue 37's baseline from a clone: written beside the runs, read back row for row (by rule and center method);
    a file written before it was computed says so and names the command, a file missing one of its rows is refused."""
    import pandas as pd

    from shc.pipeline import preset, run_classifier_codes, run_grid
    from shc.results import classifier_code_rows
    from shc.results.files import read_classifier_codes
    from shc.results.cli import main

    run_dir, csv = tmp_path / "runs", tmp_path / "tiny-unseen.csv"
    configs = preset("tiny-unseen", methods=["mds", "greedyhash"], run_dir=str(run_dir))
    run_grid(configs, progress=False)
    argv = ["--preset", "tiny-unseen", "--methods", "mds", "greedyhash", "--run-dir", str(run_dir)]
    assert main([*argv, "--write-csv", str(csv)]) == 0  # the baseline is not computed yet
    assert "not their classifier-code baseline, which is not computed yet: `python -m shc.pipeline" in (
        capsys.readouterr().out)
    assert main([*argv, "--from-csv", str(csv)]) == 0
    assert "The classifier-code baseline is not in" in capsys.readouterr().out
    run_classifier_codes(configs)
    assert main([*argv, "--write-csv", str(csv)]) == 0
    from_runs = classifier_code_rows(configs)
    from_file = read_classifier_codes(csv, configs, ("top1", "soft"))
    assert list(from_file["label"]) == ["mds (top1 classifier codes)", "mds (soft classifier codes)"]  # no greedyhash
    pd.testing.assert_frame_equal(from_file[list(from_runs.columns)].reset_index(drop=True), from_runs,
                                  check_dtype=False)
    table = pd.read_csv(csv)
    table[table["label"] != "mds (soft classifier codes)"].to_csv(csv, index=False)
    with pytest.raises(ValueError, match=r"mds \(soft classifier codes\) 16 bits seed 0: missing"):
        read_classifier_codes(csv, configs, ("top1", "soft"))


def test_several_results_files_read_as_one_taking_each_cell_at_its_settings(tmp_path):
    """A grid written in two files (LTH rerun at its converged budget beside a grid whose run folders are gone,
    docs/gpu.md section 7): each cell is the one row at the config's settings, whichever file holds it; a stale row
    is passed over where the other file holds the cell, refused where none does, and a cell held twice at its
    settings is refused with both files named."""
    from shc.pipeline import preset
    from shc.results.files import _settings, read_results
    from shc.results.reading import _identity

    configs = preset("tiny", run_dir=str(tmp_path / "runs"))
    assert len({config.method for config in configs}) >= 2, "the tiny grid needs two methods for this test"
    rows = [{**_identity(config), **_settings(config), METRIC: 0.1 * (index + 1)} for index, config in enumerate(configs)]
    stale = [{**row, "epochs": row["epochs"] * 2, METRIC: 0.9} for row in rows]  # every cell at other epochs
    first, second, both = tmp_path / "first.csv", tmp_path / "second.csv", tmp_path / "both.csv"
    pd.DataFrame([stale[0], *rows[1:]]).to_csv(first, index=False)   # cell 0 stale here ...
    pd.DataFrame([rows[0]]).to_csv(second, index=False)               # ... and current here
    pd.DataFrame(rows).to_csv(both, index=False)

    read = read_results([first, second], configs)
    assert list(read[METRIC]) == pytest.approx([0.1 * (index + 1) for index in range(len(configs))])
    pd.testing.assert_frame_equal(read_results([second, first], configs), read)  # the files' order does not matter
    assert list(read["method"]) == [config.method for config in configs]  # the configs' order, not the files'
    label = f"{_identity(configs[0])['label']} {configs[0].bits} bits seed {configs[0].seed}"
    with pytest.raises(ValueError, match=rf"{label}: other epochs"):
        read_results(first, configs)
    with pytest.raises(ValueError, match=rf"{label}: 2 rows at its settings \({both}, {second}\)"):
        read_results([both, second], configs)
    with pytest.raises(ValueError, match=r"files .*first\.csv, .*second\.csv do not hold"):
        read_results([first, second], preset("tiny", run_dir=str(tmp_path / "runs"), seeds=[1]))


@pytest.mark.parametrize("field, other", [("eval_every", 7), ("classifier_lr", 0.5), ("mask", "argmax"),
                                          ("center_options", {"min_distance": 3}), ("pretrain_epochs", 9), ("weights", "w.pt")])
def test_a_results_row_trained_with_any_other_setting_is_refused(tmp_path, field, other):
    """An audit (2026-12-02) found rows trained with another eval_every, classifier_lr, mask or center_options read
    as the preset's: only ten fields were compared. A file written before they were recorded lacks their columns, and
    its rows are compared on the ten (the committed files)."""
    import dataclasses

    from shc.pipeline import preset
    from shc.results.files import REQUIRED_CONFIG_COLUMNS, _settings, read_results
    from shc.results.reading import _identity

    configs = preset("tiny", run_dir=str(tmp_path / "runs"))
    assert getattr(configs[0], field) != other
    rows = [{**_identity(config), **_settings(config), METRIC: 0.5} for config in configs]
    path = tmp_path / "r.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert len(read_results(path, configs)) == len(configs)
    changed = [dataclasses.replace(config, **{field: other}) for config in configs]
    with pytest.raises(ValueError, match=rf"other {field} \(asked"):
        read_results(path, changed)
    old = tmp_path / "old.csv"  # written before 2026-12-02: the required columns only
    pd.DataFrame(rows).drop(columns=[c for c in _settings(configs[0]) if c not in REQUIRED_CONFIG_COLUMNS]).to_csv(
        old, index=False)
    assert len(read_results(old, changed)) == len(configs)
    # an old file read beside a new one (the README's standard-fine block: a cell retrained since): each row is
    # compared on its own file's fields, not taken for NaN in the new columns (which refused every old row)
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    pd.DataFrame(rows[:1]).drop(columns=[c for c in _settings(configs[0]) if c not in REQUIRED_CONFIG_COLUMNS]).to_csv(
        first, index=False)
    pd.DataFrame(rows[1:]).to_csv(second, index=False)
    assert len(read_results([first, second], configs)) == len(configs)
    with pytest.raises(ValueError, match=rf"other {field} \(asked"):  # the new file's rows still compared on all
        read_results([first, second], changed)


def test_hashing_epochs_reads_the_runs_of_another_budget_on_the_presets_stage_1(tmp_path, capsys):
    """`--hashing-epochs E` reads the runs a validation budget check trained (the hashing network at E epochs, the
    preset's stage-1 classifier, as `benchmarks/standard_convergence.py` trains them): their own mAP, a header that
    says E, and the preset's own budget, never trained here, named as missing rather than read."""
    from shc.pipeline import preset, run_grid
    from shc.results import load_metrics
    from shc.results.cli import main

    run_dir = tmp_path / "runs"
    base = preset("tiny", methods=["shc"], run_dir=str(run_dir))
    budget = base[0].epochs + 1
    longer = [config.replace(epochs=budget) for config in base]  # stage 1 stays at the preset's classifier_epochs
    run_grid(longer, progress=False)
    argv = ["--preset", "tiny", "--methods", "shc", "--run-dir", str(run_dir), "--metrics", "tie_aware_mAP@ALL"]
    assert main([*argv, "--hashing-epochs", str(budget)]) == 0
    out = capsys.readouterr().out
    assert f"{budget} epochs" in out.splitlines()[0]
    assert f"({load_metrics(longer[0])['tie_aware_mAP@ALL']:.3f}, 1 seed)" in out
    assert main(argv) != 0  # the preset's budget: no such run
    assert "python -m shc.pipeline" in capsys.readouterr().err


def test_hashing_epochs_per_method_reads_one_methods_longer_runs_beside_the_grid(tmp_path, capsys):
    """`--hashing-epochs METHOD=E` (issue 35: LTH's next doubling step beside the grid's other methods): that
    method's cells are read at E, every other at its preset budget, and the header says so; malformed items, a
    method outside the grid and a budget given twice are refused with the fix."""
    from shc.pipeline import preset
    from shc.results.cli import hashing_budgets, main
    from shc.results.files import _settings
    from shc.results.reading import _identity

    assert hashing_budgets(["lth=960"]) == (None, {"lth": 960})
    assert hashing_budgets(["40", "lth=960"]) == (40, {"lth": 960})
    for items, message in ((["lth=0"], "neither E nor METHOD=E"), (["=960"], "neither E nor METHOD=E"),
                           (["lth"], "neither E nor METHOD=E"), (["40", "80"], "budget twice"),
                           (["lth=1", "lth=2"], "lth's budget twice")):
        with pytest.raises(ValueError, match=message):
            hashing_budgets(items)
    configs = preset("tiny", run_dir=str(tmp_path / "runs"))
    methods = list(dict.fromkeys(config.method for config in configs))
    assert "shc" in methods and len(methods) >= 2, "the tiny grid needs shc and another method for this test"
    longer = configs[0].epochs * 2
    stored = [config.replace(epochs=longer) if config.method == "shc" else config for config in configs]
    csv = tmp_path / "mixed.csv"
    pd.DataFrame([{**_identity(config), **_settings(config), METRIC: 0.25 if config.method == "shc" else 0.5}
                  for config in stored]).to_csv(csv, index=False)
    argv = ["--preset", "tiny", "--run-dir", str(tmp_path / "runs"), "--metrics", METRIC, "--from-csv", str(csv)]
    assert main([*argv, "--hashing-epochs", f"shc={longer}"]) == 0
    out = capsys.readouterr().out
    assert f", {longer} for shc)" in out.splitlines()[0] and "0.25" in out
    assert main(argv) == 2 and "other epochs" in capsys.readouterr().err  # the preset's budget: not in the file
    assert main([*argv, "--hashing-epochs", "nosuch=3"]) == 2
    assert "--hashing-epochs names nosuch, not a method of this grid" in capsys.readouterr().err


# Two trainings of one grid (say on two machines): shc above p, below q and tied with r in the first; in the second
# p moves to a tie (shc - p per seed: +0.01, -0.01, +0.01) and q to below shc (a verdict to the other side).
FIRST = _rows({"shc": [0.50, 0.52, 0.51], "p": [0.40, 0.41, 0.39], "q": [0.60, 0.62, 0.61], "r": [0.50, 0.53, 0.49]})
SECOND = _rows({"shc": [0.50, 0.52, 0.51], "p": [0.49, 0.53, 0.50], "q": [0.40, 0.41, 0.39], "r": [0.50, 0.53, 0.49]})


def test_run_differences_pair_the_runs_and_put_the_largest_first():
    from shc.results.statistics import run_differences

    runs = run_differences(FIRST, SECOND, METRIC)
    assert len(runs) == 12
    top = runs.iloc[0]
    assert (top["method"], top["seed"]) == ("q", 2) and top["difference"] == pytest.approx(0.39 - 0.61)
    # |b - a|: p 0.09, 0.12, 0.11; q 0.20, 0.21, 0.22; shc and r 0 -> 0.95 over 12 runs
    assert runs["difference"].abs().mean() == pytest.approx(0.95 / 12)
    assert list(runs["difference"].abs()) == sorted(runs["difference"].abs(), reverse=True)
    assert run_differences(FIRST, _rows({"shc": [0.5]}, bits=32), METRIC).empty  # no run in common


def test_verdict_changes_say_which_verdicts_of_the_reference_moved_and_which_reversed():
    from shc.results.statistics import verdict_changes

    changes = verdict_changes(FIRST, SECOND, METRIC, reference="shc").set_index("method")
    assert list(changes.index) == ["p", "q", "r"]  # the grid's order, the reference left out
    assert tuple(changes.loc["p", ["verdict a", "verdict b", "moved", "reversed"]]) == ("above", "ties", True, False)
    assert tuple(changes.loc["q", ["verdict a", "verdict b", "moved", "reversed"]]) == ("below", "above", True, True)
    assert tuple(changes.loc["r", ["verdict a", "verdict b", "moved", "reversed"]]) == ("ties", "ties", False, False)
    one_seed = verdict_changes(FIRST[FIRST["seed"] == 0], SECOND[SECOND["seed"] == 0], METRIC, "shc")
    assert set(one_seed["verdict a"]) == {"untested"} and not one_seed["moved"].any()


def test_versus_csv_compares_a_grid_with_its_rerun_from_two_results_files(tmp_path, capsys):
    """Issue 38: the differences between a grid and its rerun on another machine are printed by a command from the
    two committed results files (no run folders), not merged by hand: run by run and verdict by verdict."""
    from shc.pipeline import preset
    from shc.results.cli import main
    from shc.results.files import _settings
    from shc.results.reading import _identity

    configs = preset("tiny", seeds=[0, 1, 2], run_dir=str(tmp_path / "runs"))
    methods = list(dict.fromkeys(config.method for config in configs))
    assert "shc" in methods and len(methods) >= 2, "the tiny grid needs shc and another method for this test"
    other = next(method for method in methods if method != "shc")
    values = {"first": {"shc": [0.50, 0.52, 0.51], other: [0.40, 0.41, 0.39]},
              "second": {"shc": [0.50, 0.52, 0.51], other: [0.49, 0.53, 0.50]}}
    for name, table in values.items():
        pd.DataFrame([{**_identity(config), **_settings(config), METRIC: table.get(config.method, [0.3] * 3)[config.seed],
                       "selected_epoch": 1 + config.seed} for config in configs]).to_csv(tmp_path / f"{name}.csv",
                                                                                         index=False)
    argv = ["--preset", "tiny", "--seeds", "0", "1", "2", "--run-dir", str(tmp_path / "runs"), "--metrics", METRIC,
            "--from-csv", str(tmp_path / "second.csv"), "--versus-csv", str(tmp_path / "first.csv")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "### second against first (mAP@ALL, tie-aware)" in out
    assert "(the same preset and settings on both sides)" in out
    assert f"(read from second: `{tmp_path / 'second.csv'}`; first: `{tmp_path / 'first.csv'}`)" in out
    assert (f"- tie-aware mAP@ALL, run by run ({len(configs)} runs in both: the same method, code length and seed), "
            f"first -> second: |difference| {0.32 / len(configs):.3f} on the mean, 0.120 at most ({other} 16 bits seed "
            "1: 0.410 -> 0.530, selected at epoch 2 -> 2).") in out
    assert (f"- tie-aware mAP@ALL, the verdicts of shc against each other method (paired 95% intervals over seeds), first -> second: 1 of "
            f"{len(methods) - 1} moved, none to the other side: at 16 bits {other} (above -> ties).") in out
    assert main(argv[:-2] + ["--versus-csv", str(tmp_path / "missing.csv")]) == 2
    captured = capsys.readouterr()  # refused before this side's tables are printed
    assert "missing.csv does not exist" in captured.err and captured.out == ""
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    assert main(argv[:-2] + ["--versus-csv", str(tmp_path / "other.csv")]) == 2
    assert "other.csv is not a results file: it lacks the columns dataset, method" in capsys.readouterr().err
    (tmp_path / "empty.csv").write_text("")
    assert main(argv[:-2] + ["--versus-csv", str(tmp_path / "empty.csv")]) == 2
    assert "empty.csv is not a results file" in capsys.readouterr().err
    assert main([*argv, "--versus-run-dir", str(tmp_path)]) == 2
    assert "give one of them" in capsys.readouterr().err
    assert main(argv[:-2] + ["--versus-csv", str(tmp_path / "second.csv")]) == 2
    assert "names the same results files as --from-csv" in capsys.readouterr().err


def test_plain_and_markdown_tables_show_the_same_mean_and_std_in_grid_order():
    """Both formats of `python -m shc.results` say "mean ± std over seeds"; the plain one once printed bare means in
    alphabetical order. Hand values: shc 0.5, 0.7 (mean 0.6, std 0.1414); csq 0.2 from one seed."""
    import pandas as pd

    from shc.results.tables import _markdown_table, _plain_table

    rows = pd.DataFrame({"label": ["shc", "shc", "csq"], "bits": [16, 16, 16], "seed": [0, 1, 0],
                         "mAP@ALL": [0.5, 0.7, 0.2]})
    plain = _plain_table(rows, "mAP@ALL", order=["shc", "csq"]).splitlines()
    assert plain[0].split() == ["16", "bits"] and plain[1].split() == ["method"]
    assert plain[2].split() == ["shc", "0.6000", "±", "0.1414"] and plain[3].split() == ["csq", "0.2000"]
    assert _markdown_table(rows, "mAP@ALL", order=["shc", "csq"]).splitlines()[2:] == [
        "| shc | 0.6000 ± 0.1414 |", "| csq | 0.2000 |"]


def test_the_selected_epoch_share_reads_each_runs_own_budget():
    import pandas as pd

    from shc.results import selected_epoch_share
    from shc.runs import RunConfig

    configs = [RunConfig(method="csq", bits=16, seed=0, epochs=80), RunConfig(method="lth", bits=16, seed=0, epochs=320)]
    runs = pd.DataFrame({"method": ["lth", "csq"], "bits": [16, 16], "seed": [0, 0], "selected_epoch": [160, 80]})
    assert selected_epoch_share(runs, configs).tolist() == [0.5, 1.0]
    with pytest.raises(ValueError, match=r"no config for the run\(s\) \[\('lth', 32, 0\)\]"):
        selected_epoch_share(runs.assign(bits=[32, 16]), configs)


def test_measured_pairings_are_the_pairing_columns_that_hold_values():
    import numpy as np
    import pandas as pd

    from shc.results import measured_pairings

    runs = pd.DataFrame({"unseen@all_tie_aware_mAP@ALL": [0.3, np.nan], "seen@seen_tie_aware_mAP@ALL": [np.nan] * 2,
                         "unseen@all_tie_aware_mAP@100": [0.4, 0.5], "tie_aware_mAP@ALL": [0.6, 0.7]})
    assert measured_pairings(runs) == ["unseen@all_tie_aware_mAP@ALL"]
    assert measured_pairings(runs, ("tie_aware_mAP@ALL", "tie_aware_mAP@100")) == [
        "unseen@all_tie_aware_mAP@ALL", "unseen@all_tie_aware_mAP@100"]
    assert measured_pairings(runs[["tie_aware_mAP@ALL"]]) == []


def test_relabelled_renames_only_the_named_rows_from_the_chosen_column():
    rows = pd.DataFrame({"label": ["shc", "shc (text S)", "csq"], "similarity": ["logits", "text", "logits"],
                         "mAP@ALL": [0.5, 0.4, 0.3]})
    by_label = results.relabelled(rows, {"shc": "SHC", "absent": "never used"})
    assert by_label["label"].tolist() == ["SHC", "shc (text S)", "csq"]
    by_source = results.relabelled(rows, {"text": "text S"}, by="similarity")
    assert by_source["label"].tolist() == ["shc", "text S", "csq"]
    assert rows["label"].tolist() == ["shc", "shc (text S)", "csq"]  # a copy: the rows are untouched
    with pytest.raises(ValueError, match="no 'source' column"):
        results.relabelled(rows, {}, by="source")


def test_relabelled_at_one_code_length_leaves_the_other_lengths_named_as_before():
    """Page 05's audit: "d only (MDS centers), csq's runs" is true at 64 bits only (MDS's generator returns CSQ's
    Hadamard rows where C <= 2q), so it must not name the 16- and 32-bit runs of the same method."""
    rows = pd.DataFrame({"label": ["d only"] * 3 + ["shc"] * 3, "method": ["distance"] * 3 + ["shc"] * 3,
                         "bits": [16, 32, 64] * 2})
    named = results.relabelled(rows, {"distance": "d only, csq's runs"}, by="method", bits=64)
    assert named["label"].tolist() == ["d only", "d only", "d only, csq's runs", "shc", "shc", "shc"]
    assert results.relabelled(rows, {"distance": "x"}, by="method")["label"].tolist()[:3] == ["x"] * 3
    with pytest.raises(ValueError, match="no 'bits' column"):
        results.relabelled(rows.drop(columns="bits"), {}, by="method", bits=64)


def test_a_readable_table_writes_every_cell_as_text_and_names_value_columns_on_request():
    import numpy as np

    frame = pd.DataFrame({"tie_aware_mAP@ALL": [0.51234, np.nan], "train_center_hit_rate": [0.9, 1.0],
                          "kept": [True, False], "never": [np.nan, np.nan], "options": [{"a": 1}, {}]})
    table = results.readable_table(frame).frame  # shown in full, never cut to "..."
    assert table.index.name == "rank" and table.index.tolist() == [1, 2]
    assert "never" not in table.columns  # no value at all: left out
    assert table.loc[1, "tie_aware_mAP@ALL"] == "0.5123" and table.loc[2, "tie_aware_mAP@ALL"] == "n/a"
    assert table["kept"].tolist() == ["yes", "no"] and table["options"].tolist() == ["a = 1", "none"]
    named = results.readable_table(frame, named=True, drop_empty=False).frame
    assert named.columns.tolist() == ["mAP@ALL (tie-aware)", "center hit rate (train)", "kept", "never", "options"]


def _seeded(values: dict[str, dict[int, float]], bits: int = 16) -> pd.DataFrame:
    """Rows whose seeds differ between methods: ``{method: {seed: value}}``."""
    return pd.DataFrame([{"method": method, "bits": bits, "seed": seed, METRIC: value}
                         for method, per_seed in values.items() for seed, value in per_seed.items()])


# A's mean (0.620) is above B's (0.572) only through its seed 3, which B lacks; on seeds 0-2, A is below B.
REVERSED = _seeded({"a": {0: 0.50, 1: 0.52, 2: 0.51, 3: 0.95}, "b": {0: 0.56, 1: 0.57, 2: 0.585}})


def test_an_order_of_means_that_the_shared_seeds_reverse_is_said_not_hidden():
    from shc.findings import best_methods
    from shc.stats import ranking_sentence, summary_frame

    assert ranking_line(REVERSED, METRIC, 16) == "a < b"  # was "a ? b", as if untested
    summary, per_seed = summary_frame(REVERSED, [METRIC], method="method")
    sentence = ranking_sentence(summary, METRIC, 16, per_seed=per_seed)
    assert "excludes 0" not in sentence and "puts b ahead" in sentence  # was: a is best, "excludes 0"
    assert best_methods(REVERSED.rename(columns={"method": "label"}), METRIC, 16) == ["a", "b"]  # was ["a"]


def test_methods_without_a_shared_seed_are_said_to_be_unpaired_not_one_seed():
    disjoint = _seeded({"shc": {0: 0.50, 1: 0.52, 2: 0.51}, "lth": {3: 0.61, 4: 0.60, 5: 0.62}})
    assert ranking_line(disjoint, METRIC, 16) == "lth ? shc"
    cell = results.headline_rows(disjoint, METRIC, ours=()).iloc[0]["best baseline"]
    assert cell.endswith("; no seed shared with shc") and "nan" not in cell  # was "+nan from one seed"
    assert results.verdict_sentence(disjoint, 16, METRIC) == "At 16 bits, shc not compared with lth (no seed ran both)."


def test_a_one_seed_difference_that_rounds_to_zero_has_no_sign():
    one = _seeded({"shc": {0: 0.5000}, "lth": {0: 0.49999}})
    cell = results.headline_rows(one, METRIC, ours=()).iloc[0]["best baseline"]
    assert "-0.000 " not in cell and cell.endswith("; -0.000010 from one seed")  # two significant digits
    frame = regime_rows(one, _seeded({"shc": {0: 0.49999}, "lth": {0: 0.5}}), METRIC).set_index("method")
    assert frame.loc["shc", "change [95% CI]"] == "-0.000010 (one seed)"


def test_regime_rows_leave_out_a_run_without_the_metric_instead_of_failing():
    a = SCRATCH.copy()
    a.loc[(a["method"] == "x") & (a["seed"] == 2), METRIC] = float("nan")  # a failed run
    frame = regime_rows(a, PRETRAINED, METRIC).set_index("method")
    assert frame.loc["x", "seeds"] == 2 and frame.loc["y", "seeds"] == 3


def test_rows_with_two_runs_of_one_method_and_seed_are_refused_with_the_fix():
    twice = pd.concat([SCRATCH.assign(label=SCRATCH["method"]),
                       SCRATCH[SCRATCH["method"] == "x"].assign(label="x (top1 codes)")])
    with pytest.raises(ValueError, match=r"several runs of x at 16 bits, seed 0 \(they differ in label\)"):
        results.headline_rows(twice, METRIC, reference="x", ours=())
    with pytest.raises(ValueError, match="keep one dataset and one variant per method"):
        ranking_line(twice, METRIC, 16)
