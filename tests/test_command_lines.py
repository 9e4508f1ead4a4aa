"""Both command lines (python -m shc.pipeline, python -m shc.reports): every preset, --list, and user errors
reported as one clear line naming the option (no traceback, no silent default)."""

from __future__ import annotations

import pytest

from shc import pipeline, reports
from shc.presets import PRESETS


@pytest.mark.parametrize("name", PRESETS.names())
def test_both_command_lines_accept_every_preset_and_list_its_grid(name, capsys):
    assert pipeline.main(["--preset", name, "--list"]) == 0
    listed = capsys.readouterr().out
    expected = len(PRESETS.get(name).configs())
    assert listed.strip().endswith(f"{expected} runs") and listed.count(" bits ") == expected
    assert reports.main(["--preset", name, "--list"]) == 0
    assert "reports reading" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--epochs", "0"], "argument --epochs: must be a positive integer, got 0"),
        (["--epochs", "-3"], "argument --epochs: must be a positive integer, got -3"),
        (["--bits", "0"], "argument --bits: must be a positive integer, got 0"),
        (["--seeds", "-1"], "argument --seeds: must be a non-negative integer, got -1"),
        (["--preset", "huge"], "argument --preset: invalid choice: 'huge'"),
        (["--jobs", "0"], "argument --jobs: --jobs takes a positive integer or 'auto', got '0'"),
        (["--jobs", "two"], "argument --jobs: --jobs takes a positive integer or 'auto', got 'two'"),
        (["--precision", "fp8"], "argument --precision: invalid choice: 'fp8'"),
    ],
)
def test_pipeline_option_values_are_validated_by_argparse(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        pipeline.main([*argv, "--list"])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


def test_pipeline_precision_reaches_every_config_of_the_grid(capsys):
    import argparse

    from shc.presets import add_grid_arguments, configs_from_arguments

    parser = argparse.ArgumentParser()
    add_grid_arguments(parser)
    given = configs_from_arguments(parser.parse_args(["--preset", "tiny", "--precision", "bf16"]), run_dir="r")
    default = configs_from_arguments(parser.parse_args(["--preset", "tiny"]), run_dir="r")
    assert {config.precision for config in given} == {"bf16"} and {c.precision for c in default} == {"auto"}
    assert pipeline.main(["--preset", "tiny", "--precision", "bf16", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert all(line.endswith("precision=bf16") for line in lines[:-1]) and len(lines) == len(given) + 1


def _grid(*argv):
    import argparse

    from shc.presets import add_grid_arguments, configs_from_arguments

    parser = argparse.ArgumentParser()
    add_grid_arguments(parser)
    return configs_from_arguments(parser.parse_args(list(argv)), run_dir="r")


def test_set_overrides_any_field_and_epochs_keeps_its_meaning():
    # standard: hashing 80 epochs (MDS 160, LTH 320), classifier 8 (shc/presets.py)
    preset = {(c.method, c.epochs, c.classifier_epochs)
              for c in _grid("--preset", "standard", "--methods", "mds", "lth")}
    assert preset == {("mds", 160, 8), ("lth", 320, 8)}
    # --epochs sets both networks; --set classifier_epochs keeps the classifier's (the old grids' reproduction)
    both = {(c.epochs, c.classifier_epochs) for c in _grid("--preset", "standard", "--epochs", "60")}
    kept = {(c.epochs, c.classifier_epochs) for c in _grid("--preset", "standard", "--epochs", "60", "--set",
                                                           "classifier_epochs=8")}
    assert both == {(60, 60)} and kept == {(60, 8)}
    # --set epochs=N: the hashing network's alone, over each method's own budget
    hashing = {(c.method, c.epochs, c.classifier_epochs)
               for c in _grid("--preset", "standard", "--methods", "mds", "lth", "--set", "epochs=80")}
    assert hashing == {("mds", 80, 8), ("lth", 80, 8)}
    # JSON values and bare strings, several --set
    config = _grid("--preset", "tiny", "--set", "lr=0.002", "--set", "optimizer=adam", "--set",
                   'dataset_options={"train_per_class": 7}')[0]
    assert (config.lr, config.optimizer, config.dataset_options["train_per_class"]) == (0.002, "adam", 7)


@pytest.mark.parametrize("argv, message", [
    (["--set", "lrr=0.1"], "'lrr' is not a RunConfig field; did you mean 'lr'"),
    (["--set", "lr"], "--set expects FIELD=JSON, got 'lr'"),
    (["--epochs", "4", "--set", "epochs=8"], "--epochs and --set epochs=... both"),
    (["--set", "epochs=0"], "epochs must be a positive integer"),
])
def test_set_refuses_what_it_cannot_apply_by_name(argv, message, capsys):
    assert pipeline.main(["--preset", "tiny", "--list", *argv]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--bits", "12"], "--bits: 12 is not a power of two"),
        (["--bits", "4"], "--bits: 4 is outside [8, 1024]"),
        (["--methods", "nosuch"], "--methods: unknown value 'nosuch'"),
        (["--methods", "dpshh"], "did you mean 'dpsh'"),
        (["--datasets", "nosuch"], "--datasets: unknown value 'nosuch'"),
        # the preset's digits options carried to another dataset: refused before planning, naming the fix
        (["--preset", "tiny", "--datasets", "imagefolder"],
         "for --datasets imagefolder pass --set 'dataset_options={}'"),
        (["--seeds", "0", "0"], "seeds lists 0 more than once"),
        (["--data-root", "/no/such/folder"], "--data-root '/no/such/folder' is not a folder"),
    ],
)
def test_pipeline_user_errors_are_one_clear_line_and_nothing_runs(argv, message, capsys, tmp_path):
    assert pipeline.main([*argv, "--run-dir", str(tmp_path / "runs"), "--list"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists(), "a refused run leaves no folders behind"


def test_another_dataset_runs_with_its_own_options(capsys, tmp_path):
    argv = ["--preset", "tiny", "--datasets", "imagefolder", "--set", "dataset_options={}", "--list"]
    assert pipeline.main([*argv, "--run-dir", str(tmp_path / "runs")]) == 0
    assert "imagefolder seed 0 16 bits shc" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--timeout", "0"], "argument --timeout: must be a positive number, got 0"),
        (["--timeout", "-1"], "argument --timeout: must be a positive number, got -1"),
        (["--epochs", "0"], "argument --epochs: must be a positive integer, got 0"),
        (["--notebook-jobs", "0"],
         "argument --notebook-jobs: --notebook-jobs takes a positive integer or 'auto', got '0'"),
        (["--notebook-jobs", "all"], "--notebook-jobs takes a positive integer or 'auto', got 'all'"),
    ],
)
def test_reports_option_values_are_validated(argv, message, capsys):
    with pytest.raises(SystemExit):
        reports.main(["--preset", "tiny", *argv])
    assert message in capsys.readouterr().err


def test_reports_user_errors_are_one_clear_line(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert reports.main(["--preset", "tiny", "--output", str(blocker / "reports")]) == 2
    assert "--output" in capsys.readouterr().err
    assert reports.main(["--preset", "tiny", "--methods", "nosuch", "--list"]) == 2
    assert "--methods: unknown value 'nosuch'" in capsys.readouterr().err
    assert reports.main(["--preset", "tiny", "--seeds", "1", "1", "--list"]) == 2
    assert "--seeds lists 1 more than once" in capsys.readouterr().err


def test_debug_shows_the_traceback_of_a_user_error():
    with pytest.raises(ValueError, match="--methods: unknown value"):
        pipeline.main(["--methods", "nosuch", "--list", "--debug"])


def test_results_command_names_the_missing_runs_and_the_command_that_computes_them(capsys, tmp_path):
    from shc import results

    assert results.main(["--preset", "tiny", "--run-dir", str(tmp_path), "--markdown"]) == 2
    err = capsys.readouterr().err
    assert "has not been computed" in err and "`python -m shc.pipeline --preset tiny --methods" in err


def test_results_extended_prints_the_ablation_and_baseline_tables_of_the_stored_runs(capsys, tmp_path):
    """--extended reads the runs notebooks 05 and 06 use (ablations, SHC with the text S, baselines): written
    here with planted mAP values, so the table cells and the paired comparison are known in advance."""
    from shc import results
    from shc._io import write_json
    from shc.presets import ABLATIONS, BASELINES, get_preset
    from shc.stages import stage_directories, stage_identities

    preset = get_preset("tiny")
    configs = preset.configs(run_dir=str(tmp_path))
    configs += preset.configs(methods=list(ABLATIONS), run_dir=str(tmp_path))
    configs += preset.configs(methods=["shc"], run_dir=str(tmp_path), similarity="text")
    configs += preset.configs(methods=list(BASELINES), run_dir=str(tmp_path))
    planted = {"shc": 0.5, "mds": 0.3, "distance": 0.2, "semantic": 0.4, "text": 0.1}
    for config in configs:
        directory = stage_directories(config)["stage3"]
        if directory.exists():
            continue
        directory.mkdir(parents=True)
        write_json(directory / "config.json", stage_identities(config)["stage3"])
        value = planted["text"] if config.similarity == "text" else planted.get(config.method, 0.25)
        write_json(directory / "metrics.json", {  # tie-aware = planted value, ties by index 0.01 below
            **{key: value for key in results.TIE_AWARE_MAP_KEYS}, **{key: value - 0.01 for key in results.MAP_KEYS},
            "selected_epoch": 2, "train_seconds": 1.0, "evaluation": results.EVALUATION_VERSION})
    assert results.main(["--preset", "tiny", "--run-dir", str(tmp_path), "--markdown", "--extended", "--paper"]) == 0
    out = capsys.readouterr().out
    assert "### Ablations (paper Tables 7 and 8)" in out and "### Baselines (paper Table 4)" in out
    assert "**mAP@ALL, tie-aware** (10 runs)" in out and "**mAP@ALL, ties by index** (10 runs)" in out
    assert "| shc (text S) | 0.1000 |" in out and "| semantic | 0.4000 |" in out and "| dpsh | 0.2500 |" in out
    assert "| shc (text S) | 0.0900 |" in out  # the ties-by-index table
    assert "tie-aware mAP@ALL, shc − shc (text S) at 16 bits: +0.400" in out
    # --paper: the paper's Table 4 differences beside ours (best baseline mds 0.3; one seed: no interval)
    assert "| paper | cifar100 | 16 | 0.6360 | mds | +0.016 | +0.024 | +0.016 |" in out
    assert "| ours: tiny (tie-aware) | digits-composite | 16 | 0.5000 | mds | +0.200 | +0.250 | +0.200 |" in out
    # --bits / --seeds restrict the grid (a part of a grid that is still running can be read); outside it they read
    # the runs of that length, as the pipeline trains them (a 12-bit run it trained was refused): none here
    assert results.main(["--preset", "tiny", "--run-dir", str(tmp_path), "--bits", "16", "--seeds", "0"]) == 0
    assert "runs: 2 methods x 1 code length x 1 seed; 2 epochs" in capsys.readouterr().out
    assert results.main(["--preset", "tiny", "--run-dir", str(tmp_path), "--bits", "32"]) == 2
    assert "stage3 of (mds, 32 bits, seed 0, digits-composite) has not been computed" in capsys.readouterr().err
    # a seed beyond the grid reads a replication's runs: none here, so the missing run is named with its command
    assert results.main(["--preset", "tiny", "--run-dir", str(tmp_path), "--seeds", "7"]) == 2
    assert "stage3 of (mds, 16 bits, seed 7, digits-composite) has not been computed" in capsys.readouterr().err


def test_the_pipeline_says_where_and_in_which_arithmetic_its_grid_trained(tmp_path, capsys):
    # a grid resumed on a machine whose "auto" is another arithmetic would mix the two: the last lines say which
    import torch

    from shc.devices import resolve_precision

    grid = ["--preset", "tiny", "--methods", "csq", "--seeds", "0", "--quiet", "--classifier-codes", "none",
            "--device", "cpu"]  # on a machine with a GPU too
    argv = [*grid, "--run-dir", str(tmp_path / "runs")]
    assert pipeline.main(argv) == 0
    expected = f"Every run trained on cpu in {resolve_precision('auto', torch.device('cpu'))}."
    assert expected in capsys.readouterr().out.splitlines()
    # precision is not part of a run's identity: in the same folder the finished run is read, and the line names the
    # arithmetic it trained in, whatever this call asked for
    assert pipeline.main([*argv, "--precision", "bf16"]) == 0
    assert expected in capsys.readouterr().out.splitlines()
    assert pipeline.main([*grid, "--run-dir", str(tmp_path / "fp32"), "--precision", "fp32"]) == 0
    assert "Every run trained on cpu in fp32." in capsys.readouterr().out.splitlines()


def test_results_on_a_run_folder_that_does_not_exist_say_so_and_where_the_committed_files_are(tmp_path, capsys):
    from shc.results import main as results_main

    assert results_main(["--preset", "standard", "--run-dir", str(tmp_path / "absent")]) != 0
    err = capsys.readouterr().err
    assert "absent does not exist: no run of preset 'standard' was computed here" in err
    assert f"`python -m shc.pipeline --preset standard --run-dir {tmp_path / 'absent'}`" in err
    assert "docs/results.md" in err


def test_results_suggest_a_metric_or_method_typed_in_another_case_and_say_when_no_reference_is_read(capsys):
    from shc.results import main as results_main

    with pytest.raises(SystemExit) as stop:
        results_main(["--preset", "quick", "--metrics", "mAP@all"])
    assert stop.value.code == 2 and "unknown metric 'mAP@all'; did you mean 'mAP@ALL'?" in capsys.readouterr().err
    assert pipeline.main(["--preset", "quick", "--methods", "SHC", "--list"]) == 2
    assert "unknown value 'SHC'; did you mean 'shc'" in capsys.readouterr().err
