"""The Stage (issue 36): folders built before the refactor are found and reused unchanged, a new stage is one class
plus one line in the pipeline, and the evaluation completes a stage 3 that was cut off before it measured."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from shc import pipeline
from shc._io import jsonable, save_npy, save_npz, save_torch, write_json
from shc.evaluation import EVALUATION_VERSION
from shc.pipeline import PIPELINE, RunConfig, run
from shc.stages import STAGES, Centers, Evaluation, Hashing, Pretraining, Similarity, Stage
from shc.stages import artifact, stage_directories, stage_identities
from shc.stages.base import array_file

BEFORE = json.loads((Path(__file__).parent / "data" / "stage_folders_before_issue36.json").read_text())
"""Folder names and identities the code before the Stage refactor gave eleven configs (written at af07af9 by
tests/data/stage_folders_before_issue36.py): every stage, with and without pretraining, S sources, options."""


def _config(record, run_dir="RUN") -> RunConfig:
    """The record's config. Its options are set past RunConfig's check of their names: one record names an shc-ls
    option (``max_iterations``) that shc-ls has since dropped, and what is tested is the folder a name gives."""
    fields = {**record["config"], "run_dir": str(run_dir)}
    options = {name: fields.pop(name) for name in ("center_options", "method_options") if name in fields}
    config = RunConfig(**fields)
    for name, value in options.items():
        object.__setattr__(config, name, value)
    return config


def _raised_versions(record) -> dict:
    """The record's identities with the versions raised since it was written: a loss above version 1 (CRH's 2 since
    2026-12-05, exact reassignment costs: docs/baselines.md) enters stage 3's identity as ``loss_version``."""
    from shc.losses import LOSSES
    from shc.methods import get_method

    identities = json.loads(json.dumps(record["identities"]))
    version = getattr(LOSSES.get(get_method(record["config"]["method"]).loss), "version", 1)
    if version != 1:
        identities["stage3"]["loss_version"] = version
    return identities


@pytest.mark.parametrize("record", BEFORE, ids=[f"{r['config']['method']}-{i}" for i, r in enumerate(BEFORE)])
def test_every_folder_and_identity_is_the_one_built_before_the_refactor(record):
    """Unchanged where no version was raised; a raised loss version gives stage 3 a folder of its own (the older
    runs are trained again, not reused) and leaves every other stage's folder as it was."""
    config = _config(record)
    expected = _raised_versions(record)
    folders = {stage: str(path) for stage, path in stage_directories(config).items()}
    raised = {"stage3"} if expected != record["identities"] else set()
    assert {stage: folder for stage, folder in folders.items() if stage not in raised} == {
        stage: folder for stage, folder in record["folders"].items() if stage not in raised}
    for stage in raised:
        assert folders[stage] != record["folders"][stage]
        assert folders[stage].rsplit("-", 1)[0] == record["folders"][stage].rsplit("-", 1)[0]
    assert jsonable(stage_identities(config)) == expected


def test_the_stages_are_registered_in_the_order_a_run_computes_them():
    assert list(STAGES) == ["stage0", "stage1", "stage2", "stage3", "evaluation", "classifier"]
    # the classifier-code baseline (issue 37) is computed after a grid, not by every run
    assert [stage.name for stage in PIPELINE] == list(STAGES)[:5]
    assert Hashing.parents == (Pretraining, Centers) and Centers.parents == (Similarity,)


def _lay_out_finished_run(record, run_dir: Path) -> dict[Path, bytes]:
    """The folders of a finished run exactly where the code before the refactor put them, each with its recorded
    identity and small artifacts that parse; returns every file's bytes."""
    config = _config(record, run_dir)
    rng = np.random.default_rng(0)
    codes = np.where(rng.random((6, config.bits)) < 0.5, -1, 1).astype(np.int8)
    labels = np.array([0, 0, 1, 1, 2, 2])
    for stage, folder in record["folders"].items():
        identity = record["identities"][stage]
        if identity is None or (stage == "stage1" and "stage1" not in json.dumps(record["identities"]["stage2"])):
            continue  # a stage this run does not have (stage 1: only when its centers read S)
        directory = run_dir / Path(folder).relative_to("RUN")
        directory.mkdir(parents=True)
        write_json(directory / "config.json", identity)
        if stage == "stage0":
            save_torch({}, directory / "weights.pt")
            write_json(directory / "metrics.json", {"source": "items", "train_seconds": 1.0})
        elif stage == "stage1":
            save_npy(directory / "similarity.npy", np.eye(20))
            write_json(directory / "metrics.json", {"source": "logits"})
        elif stage == "stage2":
            save_npy(directory / "centers.npy", codes[:3])
            write_json(directory / "quality.json", {"d_min": 1})
            write_json(directory / "history.json", [])
        else:
            save_npz(directory / "codes.npz", query_codes=codes, query_labels=labels, database_codes=codes,
                     database_labels=labels)
            measures = {key: 0.5 for key in ("mAP@100", "mAP@1000", "mAP@ALL")}  # every mAP a finished run has
            measures.update({f"tie_aware_{key}": value for key, value in measures.items()})
            write_json(directory / "metrics.json", {**measures, "evaluation": EVALUATION_VERSION,
                                                    "selected_epoch": 2, "train_seconds": 3.0})
    return {path: path.read_bytes() for path in run_dir.rglob("*") if path.is_file()}


@pytest.mark.parametrize("index", [0, 3, 5, 8])  # shc (S from logits), shc-ls, shc pretrained, greedyhash pretrained
def test_a_run_finished_before_the_refactor_is_reused_unchanged(index, tmp_path, monkeypatch):
    record = BEFORE[index]
    before = _lay_out_finished_run(record, tmp_path)
    times = {path: path.stat().st_mtime_ns for path in before}

    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{self} was computed although its folder was finished")

    for _, stage in STAGES.items():  # each stage defines its own compute: patching the base class would guard nothing
        monkeypatch.setattr(stage, "compute", refuse)
    result = run(_config(record, tmp_path))
    assert result.metrics["mAP@ALL"] == 0.5 and result.directory == tmp_path / Path(record["folders"]["stage3"]).relative_to("RUN")
    if record["identities"]["stage2"] is not None:
        np.testing.assert_array_equal(result.centers, np.load(artifact(_config(record, tmp_path), "stage2", "centers.npy")))
    after = {path: path.read_bytes() for path in tmp_path.rglob("*") if path.is_file() and path.name != ".lock"}
    assert after == before and {path: path.stat().st_mtime_ns for path in before} == times


class ClassCounts(Stage):
    """A stage added by a test: how often each bit of the centers is +1 (it reads stage 2)."""

    name = "counts"
    parents = (Centers,)
    files = (("counts.npy", array_file),)
    complete = "counts.npy"
    computed = 0

    def own_identity(self):
        return {"dataset": self.config.dataset, "seed": self.config.seed, "bits": self.config.bits}

    def label(self):
        return f"counts-{self.config.method}-{self.config.bits}bit"

    def compute(self, inputs, directory, progress):
        type(self).computed += 1
        return (inputs["stage2"] > 0).sum(axis=0)

    def save(self, outputs, directory):
        save_npy(directory / "counts.npy", outputs)

    def load(self):
        return np.load(self.directory / "counts.npy")


def test_a_new_stage_is_one_class_and_one_line_in_the_pipeline(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "PIPELINE", (*PIPELINE, ClassCounts))
    config = RunConfig(method="mds", bits=16, epochs=1, eval_every=1, run_dir=str(tmp_path),
                       dataset_options={"num_classes": 10, "train_per_class": 6, "val_per_class": 2,
                                        "query_per_class": 2, "database_per_class": 6})
    result = run(config)
    counts = ClassCounts(config)
    np.testing.assert_array_equal(counts.load(), (result.centers > 0).sum(axis=0))
    # its folder sits beside the others, keyed by its identity, which nests the stage it reads
    assert counts.directory.parent == Hashing(config).directory.parent and counts.directory.name.startswith(
        "counts-mds-16bit-")
    recorded = json.loads((counts.directory / "config.json").read_text())
    assert recorded == jsonable(counts.identity) and recorded["stage2"] == jsonable(Centers(config).identity)
    # cached: a second run reads it
    run(config)
    assert ClassCounts.computed == 1
    # a damaged artifact is moved aside and recomputed
    (counts.directory / "counts.npy").write_bytes(b"not an array")
    with pytest.warns(UserWarning, match="moved .* aside"):
        np.testing.assert_array_equal(ClassCounts(config).run(), (result.centers > 0).sum(axis=0))
    assert ClassCounts.computed == 2


def test_a_stage_3_cut_off_before_its_evaluation_is_measured_without_retraining(tmp_path, monkeypatch):
    config = RunConfig(method="csq", bits=16, epochs=1, eval_every=1, run_dir=str(tmp_path),
                       dataset_options={"num_classes": 10, "train_per_class": 6, "val_per_class": 2,
                                        "query_per_class": 2, "database_per_class": 6})
    monkeypatch.setattr(Evaluation, "compute", lambda self, *args: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run(config)
    record = Hashing(config).load()  # the training record is complete, the measures are not there
    assert {"selected_epoch", "train_seconds", "val_tie_aware_mAP@ALL"} <= set(record) and "evaluation" not in record
    monkeypatch.undo()
    monkeypatch.setattr(Hashing, "compute", lambda self, *args: pytest.fail("stage 3 was retrained"))
    metrics = run(config).metrics
    assert metrics["evaluation"] == EVALUATION_VERSION and 0 <= metrics["tie_aware_mAP@ALL"] <= 1
    assert {key: metrics[key] for key in record} == record  # the training fields kept as they were


def _small(tmp_path, **changes) -> RunConfig:
    return RunConfig(**{"method": "shc", "bits": 16, "epochs": 1, "classifier_epochs": 4, "eval_every": 1,
                        "run_dir": str(tmp_path), "dataset_options": {
                            "num_classes": 10, "train_per_class": 6, "val_per_class": 2, "query_per_class": 2,
                            "database_per_class": 6}, **changes})


def test_a_classifier_evaluated_at_other_epochs_is_refused_not_reused(tmp_path):
    """eval_every fixes which epochs the stage-1 classifier is evaluated (and selected) at, but is not in the
    identity (adding it would re-key every finished run): a finished folder evaluated at other epochs is refused,
    naming both schedules, where it would have served another config's S (an audit, 2026-12-02)."""
    from shc.runs import StaleRunError

    every_epoch = _small(tmp_path)
    Similarity(every_epoch).run()
    history = json.loads((Similarity(every_epoch).directory / "classifier" / "history.json").read_text())
    assert [row["epoch"] for row in history["rows"] if "accuracy" in row] == [1, 2, 3, 4]
    assert Similarity(every_epoch).evaluation_epochs() == (1, 2, 3, 4)
    every_third = _small(tmp_path, eval_every=3)
    assert Similarity(every_third).directory == Similarity(every_epoch).directory  # the same folder
    assert Similarity(every_third).evaluation_epochs() == (3, 4)  # every 3rd and the last, as fit evaluates
    with pytest.raises(StaleRunError, match=r"evaluated at epochs \[1, 2, 3, 4\].*evaluates it at \[3, 4\]"):
        Similarity(every_third).run()
    assert Similarity(_small(tmp_path, eval_every=8)).evaluation_epochs() == (4,)  # min(eval_every, epochs)
    np.testing.assert_array_equal(Similarity(every_epoch).run(), Similarity(every_epoch).load())  # still served


def test_a_stage_finished_by_another_process_while_this_one_waited_is_used_not_recomputed(tmp_path, monkeypatch):
    """The cache is read before the lock: a process that found nothing, then got the lock after another finished
    the folder, used to compute it again and overwrite it (an audit, 2026-12-02)."""
    config = _small(tmp_path, method="mds")
    expected = Centers(config).run()  # the other process's result
    calls = []
    monkeypatch.setattr(Centers, "cached", lambda self: None)  # this process looked before the other finished
    monkeypatch.setattr(Centers, "compute", lambda self, *args: calls.append(1))
    np.testing.assert_array_equal(Centers(config).run(), expected)
    assert calls == []


def test_an_artifact_of_a_stage_killed_before_it_finished_is_missing_not_served(tmp_path):
    """load_history read the one-row history of a run killed after its first epoch while load_metrics called it
    missing (an audit, 2026-12-02): an artifact counts once its stage finished."""
    from shc.results import load_history
    from shc.runs import MissingRunError

    config = _small(tmp_path, method="csq", epochs=2)
    run(config)
    assert len(load_history(config)) == 2
    (Hashing(config).directory / "metrics.json").unlink()  # as if killed before its last file
    with pytest.raises(MissingRunError, match="has not been computed"):
        load_history(config)


def test_a_stage_lock_names_the_host_beside_the_pid(tmp_path):
    """On a run_dir shared by cluster workers, "pid N" alone does not say which machine computes the folder."""
    import os
    import socket

    stage = Centers(_small(tmp_path, method="csq"))
    with stage.lock():
        assert (stage.directory / ".lock").read_text() == f"pid {os.getpid()} on {socket.gethostname()}"


def test_a_classifier_code_baseline_of_an_older_evaluation_is_measured_again(tmp_path):
    """Its stage checked only that an "evaluation" field exists, so after a version bump the baseline kept its old
    measures beside re-measured networks (an audit, 2026-12-02)."""
    from shc.results import classifier_code_rows
    from shc.runs import MissingRunError
    from shc.stages import ClassifierCodes

    config = _small(tmp_path, method="mds")
    ClassifierCodes(config).run()
    record = ClassifierCodes(config).directory / "metrics.json"
    stale = {**json.loads(record.read_text()), "evaluation": EVALUATION_VERSION - 1, "mAP@ALL": -1.0}
    write_json(record, stale)
    assert ClassifierCodes(config).cached() is None
    with pytest.raises(MissingRunError, match="older evaluation"):
        classifier_code_rows([config], rules=("top1",))
    assert ClassifierCodes(config).run()["evaluation"] == EVALUATION_VERSION
    assert json.loads(record.read_text())["mAP@ALL"] >= 0  # measured again, not the stale number


def test_reading_a_damaged_classifier_code_baseline_moves_nothing(tmp_path):
    """shc.results read the baseline through the stage's cache, which moves a damaged folder aside: a reader (a
    report, a results command) rearranged run folders. It now looks only, and names the folder missing."""
    from shc.results import classifier_code_rows
    from shc.runs import MissingRunError
    from shc.stages import ClassifierCodes

    config = _small(tmp_path, method="mds")
    ClassifierCodes(config).run()
    folder = ClassifierCodes(config).directory
    (folder / "metrics.json").write_text("{cut")
    listing = sorted(path.name for path in folder.parent.iterdir())
    with pytest.raises(MissingRunError, match="damaged"):
        classifier_code_rows([config], rules=("top1",))
    assert sorted(path.name for path in folder.parent.iterdir()) == listing  # nothing moved aside
    assert (folder / "metrics.json").read_text() == "{cut"


def test_a_run_of_other_method_defaults_or_other_weights_is_refused_not_reused(tmp_path, monkeypatch):
    """A method's published defaults and head live in code, and ``weights`` names a file by its path: neither is in
    the identity (adding them would re-key every finished run), so a new release's defaults or a weights file
    replaced under the same name reused results of the old ones (an audit, 2026-12-02). Each stage folder now
    records them in settings.json and a finished folder of other settings is refused, naming them."""
    import dataclasses

    import torch

    from shc.methods import METHODS
    from shc.models import build_backbone
    from shc.runs import StaleRunError
    from shc.stages.base import SETTINGS_FILE

    config = _small(tmp_path, method="csq")
    run(config)
    recorded = json.loads((Hashing(config).directory / SETTINGS_FILE).read_text())
    spec = METHODS.get("csq")
    assert recorded == {"method": jsonable({"loss": spec.loss, "defaults": dict(spec.defaults), "head": dict(spec.head)})}
    run(config)  # the same settings: reused
    changed = dataclasses.replace(spec, defaults={**spec.defaults, "gamma": 0.5})
    monkeypatch.setitem(METHODS._entries, "csq", changed)  # a release that changed CSQ's published default
    with pytest.raises(StaleRunError, match=r"other method than this config gives.*gamma.*0\.5"):
        run(config)
    monkeypatch.undo()
    (Hashing(config).directory / SETTINGS_FILE).unlink()  # a folder computed before the record: not checked
    assert run(config).metrics["evaluation"] == EVALUATION_VERSION

    weights = tmp_path / "start.pt"
    module, _ = build_backbone(config.backbone, pretrained=False)
    torch.save(module.state_dict(), weights)
    with_weights = _small(tmp_path / "w", method="csq", weights=str(weights))
    run(with_weights)
    assert "weights_sha256" in json.loads((Hashing(with_weights).directory / SETTINGS_FILE).read_text())
    torch.save({name: value + 1 for name, value in module.state_dict().items()}, weights)  # replaced, same name
    with pytest.raises(StaleRunError, match="other weights_sha256"):
        run(with_weights)


def test_opening_a_folder_while_its_weights_file_is_away_keeps_the_recorded_hash(tmp_path):
    """An audit: Stage.open rewrote settings.json from what this machine could read, so a weights file missing for a
    moment (a share not mounted) recorded weights_sha256=None, and the same folder was refused once the same file
    was back."""
    import torch

    from shc.models import build_backbone
    from shc.stages.base import SETTINGS_FILE

    weights = tmp_path / "start.pt"
    config = _small(tmp_path / "w", method="csq")
    module, _ = build_backbone(config.backbone, pretrained=False)
    torch.save(module.state_dict(), weights)
    stage = Hashing(config.replace(weights=str(weights)))
    with stage.open():
        pass  # an interrupted start: the identity and settings recorded, nothing finished
    recorded = json.loads((stage.directory / SETTINGS_FILE).read_text())["weights_sha256"]
    assert recorded is not None
    weights.rename(tmp_path / "away.pt")
    with stage.open():
        pass
    assert json.loads((stage.directory / SETTINGS_FILE).read_text())["weights_sha256"] == recorded
    (tmp_path / "away.pt").rename(weights)  # the same bytes back: the folder is still this run's
    stage.check_settings()
