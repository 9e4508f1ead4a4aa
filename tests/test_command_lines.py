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
        (["--jobs", "0"], "argument --jobs: --jobs takes a positive integer, got '0'"),
        (["--jobs", "two"], "argument --jobs: --jobs takes a positive integer, got 'two'"),
    ],
)
def test_pipeline_option_values_are_validated_by_argparse(argv, message, capsys):
    with pytest.raises(SystemExit) as stop:
        pipeline.main([*argv, "--list"])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--bits", "12"], "--bits: 12 is not a power of two"),
        (["--bits", "4"], "--bits: 4 is outside [8, 1024]"),
        (["--methods", "nosuch"], "--methods: unknown value 'nosuch'"),
        (["--methods", "dpshh"], "did you mean 'dpsh'"),
        (["--datasets", "nosuch"], "--datasets: unknown value 'nosuch'"),
        (["--seeds", "0", "0"], "seeds lists 0 more than once"),
        (["--data-root", "/no/such/folder"], "--data-root '/no/such/folder' is not a folder"),
    ],
)
def test_pipeline_user_errors_are_one_clear_line_and_nothing_runs(argv, message, capsys, tmp_path):
    assert pipeline.main([*argv, "--run-dir", str(tmp_path / "runs"), "--list"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists(), "a refused run leaves no folders behind"


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--timeout", "0"], "argument --timeout: must be a positive number, got 0"),
        (["--timeout", "-1"], "argument --timeout: must be a positive number, got -1"),
        (["--epochs", "0"], "argument --epochs: must be a positive integer, got 0"),
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
    assert "has not been computed" in err and "python -m shc.reports --preset" in err
