"""The unseen-class protocol (issue 37, shc.data.unseen) and the classifier-code baseline (shc.stages.ClassifierCodes):
no held-out class reaches a training stage, the three pairings evaluate the declared sets, and the baseline's codes
are the centers the classifier predicts."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from shc.data import load_dataset
from shc.data.unseen import held_out_classes, hold_out_classes
from shc.evaluation import PAIRINGS, UNSEEN_KEYS, evaluate_codes, pairing_masks, unseen_scores
from shc.metrics import evaluate
from shc.stages import CLASSIFIER_RULES, ClassifierCodes, classifier_codes

TINY = {"num_classes": 20, "train_per_class": 6, "val_per_class": 2, "query_per_class": 3, "database_per_class": 6}


@pytest.fixture(scope="module")
def both():
    """The same data without and with a quarter of its classes held out."""
    return load_dataset("digits-composite", seed=3, **TINY), load_dataset("digits-composite", seed=3, unseen_classes=0.25,
                                                                         **TINY)


def test_the_held_out_draw_is_a_seeded_quarter_and_refuses_empty_or_full_draws():
    drawn = held_out_classes(20, 0.25, seed=3)
    assert len(drawn) == 5 and np.all(np.diff(drawn) > 0) and drawn.min() >= 0 and drawn.max() < 20
    np.testing.assert_array_equal(drawn, held_out_classes(20, 5, seed=3))  # a count or a fraction: the same draw
    assert any(not np.array_equal(drawn, held_out_classes(20, 0.25, seed)) for seed in range(4, 8))
    for bad in (0.01, 19, 1.5):
        with pytest.raises((ValueError, TypeError), match="unseen_classes"):
            held_out_classes(20, bad, seed=0)


def test_no_held_out_image_is_in_train_or_val_and_query_and_database_keep_every_image(both):
    full, unseen = both
    held = held_out_classes(20, 0.25, seed=3)
    seen = np.setdiff1d(np.arange(20), held)
    assert unseen.num_classes == 15 and unseen.class_names == [full.class_names[c] for c in seen]
    assert unseen.unseen_names == [full.class_names[c] for c in held]
    np.testing.assert_array_equal(unseen.coarse_labels, full.coarse_labels[seen])
    for name in ("train", "val"):  # exactly the seen-class images of the full split, in their order
        kept = ~np.isin(getattr(full, name).labels, held)
        np.testing.assert_array_equal(getattr(unseen, name).source_ids, getattr(full, name).source_ids[kept])
        assert getattr(unseen, name).labels.max() < 15
    for name in ("query", "database"):  # every image, relabelled: the name of each label is the same class
        before, after = getattr(full, name), getattr(unseen, name)
        np.testing.assert_array_equal(after.source_ids, before.source_ids)
        assert [unseen.all_class_names[label] for label in after.labels] == \
            [full.class_names[label] for label in before.labels]
        assert set(after.labels[after.labels >= 15]) == set(range(15, 20))
    assert full.fingerprint() != unseen.fingerprint() and "5 of 20 held out" in unseen.protocol


def test_the_protocol_refuses_multi_label_data_and_a_second_application(both):
    with pytest.raises(ValueError, match="already holds classes out"):
        hold_out_classes(both[1], 0.25, seed=3)
    import dataclasses

    multi = dataclasses.replace(both[0], multi_label=True)
    with pytest.raises(ValueError, match="multi-label"):
        hold_out_classes(multi, 0.25, seed=3)


def test_the_pairings_select_the_declared_queries_and_database_images():
    query_labels, database_labels = np.array([0, 3, 1, 4]), np.array([4, 0, 2, 3, 1])
    masks = pairing_masks(query_labels, database_labels, seen_classes=3)  # 3 and 4 are held out
    assert list(masks) == list(PAIRINGS)
    expected = {"seen@seen": ([1, 0, 1, 0], [0, 1, 1, 0, 1]), "unseen@unseen": ([0, 1, 0, 1], [1, 0, 0, 1, 0]),
                "unseen@all": ([0, 1, 0, 1], [1, 1, 1, 1, 1])}
    for pairing, (queries, database) in expected.items():
        np.testing.assert_array_equal(masks[pairing][0], np.array(queries, bool))
        np.testing.assert_array_equal(masks[pairing][1], np.array(database, bool))


def test_the_pairing_scores_are_the_metrics_of_the_selected_sets_by_hand_and_by_brute_force():
    # held-out class 2's codes are those of seen class 0: perfect among the held-out images, half wrong among all
    codes = {"query_codes": np.array([[1, 1], [-1, -1], [1, 1]]), "query_labels": np.array([0, 1, 2]),
             "database_codes": np.array([[1, 1], [-1, -1], [1, 1], [1, 1]]), "database_labels": np.array([0, 1, 2, 2]),
             "seen_classes": np.array(2)}
    scores = unseen_scores(codes)
    assert set(scores) == set(UNSEEN_KEYS)
    assert scores["seen@seen_tie_aware_mAP@ALL"] == pytest.approx(1.0)
    assert scores["unseen@unseen_tie_aware_mAP@ALL"] == pytest.approx(1.0)
    # query of class 2 against all: 3 images tie at distance 0, 2 of them relevant; tie-aware AP = expected AP over
    # the 3! orders of the tie: orders put the non-relevant one first, second or third with probability 1/3 each
    ap = np.mean([(1 / 2 + 2 / 3) / 2, (1 + 2 / 3) / 2, 1.0])
    assert scores["unseen@all_tie_aware_mAP@ALL"] == pytest.approx(ap)
    rng = np.random.default_rng(0)
    codes = {"query_codes": rng.choice([-1, 1], (30, 8)), "query_labels": rng.integers(0, 6, 30),
             "database_codes": rng.choice([-1, 1], (60, 8)), "database_labels": rng.integers(0, 6, 60),
             "seen_classes": np.array(4)}
    scores = unseen_scores(codes)
    for pairing, (queries, database) in pairing_masks(codes["query_labels"], codes["database_labels"], 4).items():
        direct = evaluate(codes["query_codes"][queries], codes["query_labels"][queries],
                          codes["database_codes"][database], codes["database_labels"][database], ks=(), pr=False,
                          tie_aware=True)
        for key in ("tie_aware_mAP@ALL", "mAP@ALL", "tie_aware_mAP@100", "mAP@100"):
            assert scores[f"{pairing}_{key}"] == pytest.approx(direct[key])
    assert unseen_scores({key: value for key, value in codes.items() if key != "seen_classes"}) == {}


def test_query_reachability_counts_only_the_queries_of_seen_classes():
    targets = np.array([[1, 1, 1, 1], [-1, -1, -1, -1]])
    codes = {"train_codes": targets.copy(), "train_labels": np.array([0, 1]), "target_codes": targets,
             "target_kind": np.array("centers"),
             # the seen queries hit their centers; the held-out query (label 2) has no center
             "query_codes": np.array([[1, 1, 1, 1], [-1, -1, -1, -1], [1, -1, 1, -1]]),
             "query_labels": np.array([0, 1, 2]), "database_codes": targets, "database_labels": np.array([0, 1]),
             "seen_classes": np.array(2)}
    metrics = evaluate_codes(codes)
    assert metrics["query_center_hit_rate"] == 1.0 and metrics["query_center_bit_error"] == 0.0
    # the database holds no held-out image: unseen@unseen has nothing to rank and is left out, unseen@all is there
    assert "unseen@all_tie_aware_mAP@ALL" in metrics and "unseen@unseen_tie_aware_mAP@ALL" not in metrics


def test_classifier_codes_by_hand():
    centers = np.array([[1, 1, 1], [-1, -1, 1], [-1, 1, -1]])
    logits = np.array([[3.0, 0.0, 0.0], [0.0, 0.0, 5.0], np.log([0.4, 0.35, 0.25])])
    np.testing.assert_array_equal(classifier_codes(logits, centers, "top1"), centers[[0, 2, 0]])
    # soft, third image: 0.4 h0 + 0.35 h1 + 0.25 h2 = (-0.2, 0.3, 0.5): not the top class's center
    np.testing.assert_array_equal(classifier_codes(logits[2:], centers, "soft"), [[-1, 1, 1]])
    # a vote of exactly 0 (two opposite centers, equally likely) gives +1
    np.testing.assert_array_equal(classifier_codes(np.zeros((1, 2)), np.array([[1], [-1]]), "soft"), [[1]])
    assert set(CLASSIFIER_RULES) == {"top1", "soft"}
    with pytest.raises(ValueError, match="choose one of: top1, soft"):
        classifier_codes(logits, centers, "top2")
    with pytest.raises(ValueError, match=r"must be \(n, C\) and \(C, q\)"):
        classifier_codes(logits[:, :2], centers, "top1")


@pytest.fixture(scope="module")
def tiny_unseen(tmp_path_factory):
    from shc.pipeline import preset, run_classifier_codes, run_grid

    # RUNS/PRESET, where python -m shc.reports reads a preset's runs (the report test below reads them there)
    configs = preset("tiny-unseen", run_dir=str(tmp_path_factory.mktemp("unseen") / "tiny-unseen"))
    return configs, run_grid(configs, progress=False), run_classifier_codes(configs)


def test_no_held_out_class_reaches_s_the_centers_or_the_networks(tiny_unseen):
    from shc.models import build_classifier
    from shc.runs import load_data
    from shc.stages import Centers, Hashing, Similarity

    configs, rows, _ = tiny_unseen
    data = load_data(configs[0])
    assert data.num_classes == 15 and len(data.unseen_names) == 5
    shc = next(c for c in configs if c.method == "shc")
    assert Similarity(shc).load().shape == (15, 15)
    assert Centers(shc).load().shape == (15, 16)
    state = json.loads((Similarity(shc).directory / "config.json").read_text())
    assert state["dataset_options"]["unseen_classes"] == 0.25
    import torch

    weights = torch.load(Similarity(shc).directory / "classifier" / "best.pt", weights_only=True)["model"]
    assert weights["head.weight"].shape[0] == weights["head.bias"].shape[0] == 15  # 15 outputs, not 20
    build_classifier(shc.backbone, 15).load_state_dict(weights)  # strict: the whole network is the 15-class one
    for config in configs:
        codes = Hashing(config).codes()
        assert codes["train_labels"].max() < 15 and int(codes["seen_classes"]) == 15
        assert set(codes["query_labels"]) == set(range(20)) and set(codes["database_labels"]) == set(range(20))
    for row in rows:
        assert all(0 <= row[key] <= 1 for key in UNSEEN_KEYS)


def test_model_selection_ranks_the_validation_queries_against_the_seen_database_only(tiny_unseen):
    """The selected epoch's validation score in metrics.json is the one of the validation codes against the database
    images of seen classes, recomputed here from the selected weights; against the whole database (its held-out
    images ranked as negatives, as before 2026-12-02) the score differs. The rule is part of the identity."""
    from shc.evaluation import PRIMARY_METRIC, selection_scores
    from shc.retrieval import load_encoder
    from shc.runs import load_data
    from shc.stages import Hashing, encode, selection_rule

    configs, _, _ = tiny_unseen
    config = next(c for c in configs if c.method == "shc")
    data, stage = load_data(config), Hashing(config)
    model = load_encoder(stage.directory, device="cpu").model
    seen = data.database.labels < data.num_classes
    assert 0 < seen.sum() < len(seen)
    val_codes, database_codes = encode(model, data.val, config), encode(model, data.database, config)
    recorded = json.loads((stage.directory / "metrics.json").read_text())[f"val_{PRIMARY_METRIC}"]
    on_seen = selection_scores(val_codes, data.val.labels, database_codes[seen], data.database.labels[seen])
    on_all = selection_scores(val_codes, data.val.labels, database_codes, data.database.labels)
    assert recorded == pytest.approx(on_seen[PRIMARY_METRIC], abs=1e-12)
    assert recorded != pytest.approx(on_all[PRIMARY_METRIC], abs=1e-6)
    assert json.loads((stage.directory / "config.json").read_text())["select"] == selection_rule(config) == \
        f"{PRIMARY_METRIC} without the database's held-out classes"
    plain = config.replace(dataset_options={k: v for k, v in config.dataset_options.items() if k != "unseen_classes"})
    assert selection_rule(plain) == PRIMARY_METRIC  # every other run keeps its identity


def test_the_classifier_code_baseline_gives_each_image_a_predicted_center(tiny_unseen):
    from shc.models import build_classifier
    from shc.runs import load_data
    from shc.stages import Centers, Similarity, classifier_config
    from shc.train import predict

    configs, _, baseline = tiny_unseen
    assert [row["method"] for row in baseline] == [f"{m} ({rule} classifier codes)" for m in ("mds", "shc")
                                                   for rule in ("top1", "soft")]  # greedyhash has no centers
    shc = next(c for c in configs if c.method == "shc")
    data, centers = load_data(shc), Centers(shc).load()
    model = build_classifier(shc.backbone, 15)
    stage1 = Similarity(classifier_config(shc)).directory / "classifier" / "best.pt"
    import torch

    model.load_state_dict(torch.load(stage1, weights_only=True)["model"])
    logits = predict(model, data.query).numpy()
    with np.load(ClassifierCodes(shc, "top1").directory / "codes.npz") as stored:
        np.testing.assert_array_equal(stored["query_codes"], centers[logits.argmax(1)])
        assert int(stored["seen_classes"]) == 15
        metrics = evaluate_codes({key: stored[key] for key in stored.files})
    row = next(row for row in baseline if row["method"] == "shc (top1 classifier codes)")
    assert row["unseen@all_tie_aware_mAP@ALL"] == pytest.approx(metrics["unseen@all_tie_aware_mAP@ALL"])
    assert not ClassifierCodes(next(c for c in configs if c.method == "greedyhash")).applies()


def test_the_results_read_the_pairings_and_the_baseline_and_name_a_missing_one(tiny_unseen, tmp_path, capsys):
    from shc.results import classifier_code_rows, result_rows
    from shc.results.cli import main
    from shc.runs import MissingRunError

    configs = tiny_unseen[0]
    frame = result_rows(configs)
    assert frame[list(UNSEEN_KEYS)].notna().all().all()
    baseline = classifier_code_rows(configs)
    assert list(baseline["label"]) == ["mds (top1 classifier codes)", "mds (soft classifier codes)",
                                       "shc (top1 classifier codes)", "shc (soft classifier codes)"]
    with pytest.raises(MissingRunError, match="classifier-code baseline.*python -m shc.pipeline"):
        classifier_code_rows([configs[0].replace(run_dir=str(tmp_path))])
    assert main(["--preset", "tiny-unseen", "--run-dir", configs[0].run_dir, "--markdown"]) == 0
    out = from_runs = capsys.readouterr().out
    assert "unseen@all: queries of unseen classes against the database images of all classes" in out
    assert "| shc (soft classifier codes) |" in out
    assert "Paired comparisons with shc (mAP@ALL, tie-aware, unseen@all: queries of unseen classes" in out
    assert "unseen@all tie-aware mAP@ALL, shc − mds at 16 bits" in out
    assert "Unseen-class protocol: 25% of the classes are held out of every training stage" in out
    csv = tmp_path / "tiny-unseen.csv"
    assert main(["--preset", "tiny-unseen", "--run-dir", configs[0].run_dir, "--write-csv", str(csv)]) == 0
    assert "(3 runs and their classifier-code baseline)" in capsys.readouterr().out
    assert main(["--preset", "tiny-unseen", "--run-dir", configs[0].run_dir, "--from-csv", str(csv), "--markdown"]) == 0
    out = capsys.readouterr().out
    assert "unseen@all tie-aware mAP@ALL, shc − mds" in out
    # the classifier-code baseline is in the file: its tables from the file are those from the run folders
    section = "### The classifier-code baseline"
    assert section in out and out.split(section, 1)[1] == from_runs.split(section, 1)[1]
    from shc.pipeline import main as pipeline

    assert pipeline(["--preset", "tiny-unseen", "--run-dir", configs[0].run_dir, "--quiet"]) == 0  # all cached
    out = capsys.readouterr().out
    assert "unseen@unseen_tie_aware_mAP@ALL (mean" in out and "classifier-code baseline, unseen@all" in out


def test_the_unseen_presets_hold_out_a_quarter_of_their_regime_and_change_nothing_else():
    from shc.presets import get_preset

    for regime in ("standard", "standard-pretrained"):
        base, unseen = get_preset(regime), get_preset(f"{regime}-unseen")
        base_config, unseen_config = base.base(dataset=base.datasets[0]), unseen.base(dataset=unseen.datasets[0])
        assert dict(unseen_config.dataset_options) == {**dict(base_config.dataset_options), "unseen_classes": 0.25}
        assert unseen_config.replace(dataset_options=base_config.dataset_options) == base_config
        assert (unseen.bits, unseen.seeds, unseen.classifier_codes) == (base.bits, base.seeds, ("top1", "soft"))
        assert {m: c.epochs for c in unseen.configs() for m in [c.method]} == \
            {m: c.epochs for c in base.configs(methods=list(unseen.methods)) for m in [c.method]}
    with pytest.raises(ValueError, match="unknown classifier-code rules"):
        from shc.presets import Preset

        Preset(name="t", description="d", datasets=("digits-composite",), methods=("csq",), bits=(16,), seeds=(0,),
               classifier_codes=("top3",))


def test_a_pairing_reads_as_its_name_in_sentences():
    from shc.results.prose import _metric_title
    from shc.stats import metric_name

    assert metric_name("unseen@all_tie_aware_mAP@ALL") == "unseen@all tie-aware mAP@ALL"
    assert metric_name("seen@seen_mAP@100") == "seen@seen mAP@100"
    assert metric_name("tie_aware_mAP@ALL") == "tie-aware mAP@ALL" and metric_name("mAP@ALL") == "mAP@ALL"
    assert _metric_title("unseen@unseen_tie_aware_mAP@100") == (
        "mAP@100, tie-aware, unseen@unseen: queries of unseen classes against the database images of unseen classes")


def test_the_04_and_06_pages_show_the_three_pairings_of_the_stored_codes(tiny_unseen, tmp_path):
    """Notebooks 04 and 06 under the protocol: each cell of their pairing table is the tie-aware mAP of the run's
    stored codes on the declared query and database subsets, rebuilt here from the labels alone; the checker finds
    nothing on either page."""
    import csv
    from pathlib import Path

    from shc import reports
    from shc.metrics import mean_average_precision
    from shc.pipeline import preset
    from shc.reports.check import check_report_folder
    from shc.stages import Hashing

    configs = tiny_unseen[0]
    results = reports.run_reports("tiny-unseen", only=["04_retrieval", "06_baselines"], output_root=tmp_path,
                                  run_root=Path(configs[0].run_dir).parent, progress=False,
                                  log=lambda _: None)
    assert [result.status for result in results] == ["ok", "ok"], [result.error for result in results]
    subsets = {"seen@seen": (False, False), "unseen@unseen": (True, True), "unseen@all": (True, None)}
    pages = {"04_retrieval": ({"mds", "shc"}, {None: "mAP@ALL", 100: "mAP@100"}),
             "06_baselines": ({"dpsh", "greedyhash", "orthohash", "shc"}, {None: "mAP@ALL"})}
    for stem, (methods, metrics) in pages.items():
        with open(tmp_path / "tiny-unseen" / stem / "tables" / "unseen_pairings.csv", newline="") as handle:
            cells = {(row[0], row[1]): float(row[2]) for row in csv.reader(handle) if "@" in row[0]}
        assert {method for _, method in cells} == methods
        shown_metrics = {f"{pairing} {name} (tie-aware)" for pairing in subsets for name in metrics.values()}
        assert {label for label, _ in cells} == shown_metrics
        for config in preset("tiny-unseen", methods=sorted(methods), run_dir=configs[0].run_dir):
            codes = Hashing(config).codes()
            seen = int(codes["seen_classes"])
            query_unseen, db_unseen = codes["query_labels"] >= seen, codes["database_labels"] >= seen
            for pairing, (query_side, db_side) in subsets.items():
                queries = query_unseen == query_side
                database = np.ones_like(db_unseen) if db_side is None else db_unseen == db_side
                for topk, name in metrics.items():
                    expected = mean_average_precision(codes["query_codes"][queries], codes["query_labels"][queries],
                                                      codes["database_codes"][database],
                                                      codes["database_labels"][database], topk, tie_aware=True)
                    shown = cells[(f"{pairing} {name} (tie-aware)", config.method)]
                    assert shown == pytest.approx(expected, abs=5e-5), (stem, config.method, pairing, name)
    # page 04's classifier-code baseline (shc.reports.blocks.classifier_code_table): a row per center method and rule
    with open(tmp_path / "tiny-unseen" / "04_retrieval" / "tables" / "classifier_codes.csv", newline="") as handle:
        baseline = {row[1] for row in csv.reader(handle) if row[0] == "mAP@ALL (tie-aware)"}
    assert baseline == {f"{method} ({rule} classifier codes)" for method in ("mds", "shc") for rule in ("top1", "soft")}
    problems = check_report_folder(tmp_path / "tiny-unseen")
    assert problems == [], "\n".join(map(str, problems))


def test_stage1_test_accuracy_counts_the_classes_its_classifier_knows_and_old_records_are_not_shown(tmp_path):
    """The query split of a preset that holds classes out has images of classes the classifier cannot name; the
    test accuracy counted them as errors, so with a quarter held out it could not pass 0.75, and the page compared
    it with the paper's range (an audit, 2026-12-02)."""
    from shc import findings
    from shc._io import write_json
    from shc.pipeline import preset
    from shc.results import classifier_table
    from shc.runs import load_data
    from shc.stages import Similarity

    config = preset("tiny-unseen", methods=["shc"], run_dir=str(tmp_path))[0]
    Similarity(config).run()
    record_file = Similarity(config).directory / "metrics.json"
    record = json.loads(record_file.read_text())
    data = load_data(config)
    seen = int((data.query.labels < data.num_classes).sum())
    assert record["test_classes"] == "seen" and 0 < seen < len(data.query)
    # every held-out image is an error of the all-queries number, so the two are tied by the counts
    assert record["test_accuracy_all_queries"] == pytest.approx(record["test_accuracy"] * seen / len(data.query))
    assert classifier_table([config])["test accuracy"].iloc[0] == pytest.approx(record["test_accuracy"])
    old = {key: value for key, value in record.items() if key not in ("test_classes", "test_accuracy_all_queries")}
    write_json(record_file, old)  # as recorded before 2026-12-02
    table = classifier_table([config])
    assert np.isnan(table["test accuracy"].iloc[0])
    sentence = findings.similarity_findings(table, pd.DataFrame(index=["data-dependent S"]), None)[0]
    assert "not shown" in sentence and "paper's range" not in sentence
