"""The cached three-stage pipeline on the embedded default, end to end on a reduced grid."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from shc.centers import gv_min_distance
from shc.evaluation import EVALUATION_VERSION
from shc.metrics import mean_average_precision, precision_recall_at_k
from shc.pipeline import MAP_KEYS, RunConfig, _reevaluate_grid, preset, run, run_grid, stage_directories, summarize
from shc.results import load_metrics
from shc.runs import MissingRunError

FAST = dict(epochs=2, classifier_epochs=2, eval_every=1, bits=16)


@pytest.fixture(scope="module")
def shc_run(tmp_path_factory):
    config = RunConfig(method="shc", run_dir=str(tmp_path_factory.mktemp("runs")), **FAST)
    return config, run(config)


def test_all_stage_artifacts_are_written(shc_run):
    config, result = shc_run
    directories = stage_directories(config)
    for name in ("similarity.npy", "metrics.json", "config.json"):
        assert (directories["stage1"] / name).exists()
    for name in ("centers.npy", "quality.json", "history.json"):
        assert (directories["stage2"] / name).exists()
    for name in ("codes.npz", "metrics.json", "train/history.csv", "train/best.pt"):
        assert (directories["stage3"] / name).exists()
    S = np.load(directories["stage1"] / "similarity.npy")
    assert S.shape == (100, 100) and np.allclose(S, S.T) and np.all(np.diag(S) == 1)
    assert result.centers.shape == (100, 16)
    assert json.loads((directories["stage2"] / "quality.json").read_text())["d_min"] >= gv_min_distance(100, 16)


def test_reported_map_is_the_metric_of_the_stored_codes_and_beats_random_codes(shc_run):
    config, result = shc_run
    codes = np.load(stage_directories(config)["stage3"] / "codes.npz")
    args = codes["query_codes"], codes["query_labels"], codes["database_codes"], codes["database_labels"]
    assert result.metrics["mAP@ALL"] == pytest.approx(mean_average_precision(*args))
    assert result.metrics["mAP@100"] == pytest.approx(mean_average_precision(*args, topk=100))
    rng = np.random.default_rng(0)
    random_codes = [rng.choice([-1, 1], size=c.shape) for c in (args[0], args[2])]
    chance = mean_average_precision(random_codes[0], args[1], random_codes[1], args[3])
    assert result.metrics["mAP@ALL"] > chance + 0.1
    assert len(result.metrics["precision@k"]) == len(result.metrics["k"])


def test_rerun_skips_cached_stages(shc_run):
    config, result = shc_run
    stage3 = stage_directories(config)["stage3"]
    before = (stage3 / "codes.npz").stat().st_mtime_ns
    again = run(config)
    assert (stage3 / "codes.npz").stat().st_mtime_ns == before
    assert again.metrics == result.metrics
    np.testing.assert_array_equal(again.centers, result.centers)


def test_tie_aware_numbers_are_stored_and_match_the_metrics_of_the_codes(shc_run):
    config, result = shc_run
    codes = np.load(stage_directories(config)["stage3"] / "codes.npz")
    args = codes["query_codes"], codes["query_labels"], codes["database_codes"], codes["database_labels"]
    assert result.metrics["tie_aware_mAP@ALL"] == pytest.approx(mean_average_precision(*args, tie_aware=True))
    assert result.metrics["tie_aware_mAP@100"] == pytest.approx(mean_average_precision(*args, 100, tie_aware=True))
    precision, _ = precision_recall_at_k(*args, result.metrics["k"], tie_aware=True)
    np.testing.assert_allclose(result.metrics["tie_aware_precision@k"], precision)
    assert result.metrics["evaluation"] == EVALUATION_VERSION
    # the database is stored in a random order, so the two rankings differ only by the draw of tie orders
    assert abs(result.metrics["mAP@ALL"] - result.metrics["tie_aware_mAP@ALL"]) < 0.05


def test_a_run_measured_by_an_older_evaluation_is_reevaluated_from_its_codes_not_retrained(shc_run, tmp_path,
                                                                                           capsys):
    config, result = shc_run
    stage3 = stage_directories(config)["stage3"]
    copy = config.replace(run_dir=str(tmp_path / "runs"))
    shutil.copytree(stage_directories(config)["stage3"].parent, stage_directories(copy)["stage3"].parent)
    path = stage_directories(copy)["stage3"] / "metrics.json"
    old = {key: value for key, value in result.metrics.items() if not key.startswith(("tie_aware", "query_tie"))}
    path.write_text(json.dumps({**old, "evaluation": 2}))
    with pytest.raises(MissingRunError, match="--reevaluate"):
        load_metrics(copy)  # the read-only layer names the command; it never shows stale numbers
    checkpoint = (stage_directories(copy)["stage3"] / "train" / "last.pt").stat().st_mtime_ns
    again = run(copy)  # re-evaluated from codes.npz: the same numbers as the fresh run, no training
    assert (stage_directories(copy)["stage3"] / "train" / "last.pt").stat().st_mtime_ns == checkpoint
    assert set(again.metrics) == set(result.metrics)
    for key, value in result.metrics.items():
        if isinstance(value, str):
            assert again.metrics[key] == value
        else:
            np.testing.assert_allclose(np.asarray(again.metrics[key], float), np.asarray(value, float), err_msg=key)
    assert load_metrics(copy) == again.metrics
    # --reevaluate measures every finished run of a grid anew and names those that have not finished
    unfinished = copy.replace(seed=7)
    assert _reevaluate_grid([copy, unfinished]) == 0
    out = capsys.readouterr().out
    assert "re-evaluated 1 run(s)" in out and "1 run(s) have not finished" in out and "seed 7" in out
    assert stage3.exists()  # the original run is untouched
    assert _reevaluate_grid([unfinished]) == 1  # nothing finished: a failure, not a silent success
    with pytest.raises(FileNotFoundError, match=r"does not exist, so there is no run to re-evaluate"):
        _reevaluate_grid([copy.replace(run_dir=str(tmp_path / "nowhere"))])
    # a finished run computed under other method defaults is refused with its reason, not called unfinished
    from shc.stages.base import SETTINGS_FILE

    record = stage_directories(copy)["stage3"] / SETTINGS_FILE
    settings = json.loads(record.read_text())
    record.write_text(json.dumps({**settings, "method": {**settings["method"], "defaults": {"gamma": 123.0}}}))
    capsys.readouterr()
    assert _reevaluate_grid([copy]) == 1
    out = capsys.readouterr().out
    assert "re-evaluated 0 run(s)" in out and "have not finished" not in out
    assert f"refused shc {copy.bits} bits seed {copy.seed}:" in out and "other method" in out


def test_changing_one_setting_coexists_and_reuses_the_shared_stages(shc_run):
    config, result = shc_run
    longer = config.replace(epochs=3)
    before, after = stage_directories(config), stage_directories(longer)
    assert before["stage1"] == after["stage1"] and before["stage2"] == after["stage2"]  # reused, not recomputed
    assert before["stage3"] != after["stage3"]
    centers_mtime = (before["stage2"] / "centers.npy").stat().st_mtime_ns
    run(longer)
    assert (before["stage2"] / "centers.npy").stat().st_mtime_ns == centers_mtime
    assert json.loads((after["stage3"] / "config.json").read_text())["epochs"] == 3
    assert json.loads((before["stage3"] / "metrics.json").read_text()) == result.metrics  # the first run is intact


def test_an_artifact_without_its_identity_is_recomputed_not_trusted(tmp_path):
    from shc.pipeline import run_centers

    config = RunConfig(method="csq", run_dir=str(tmp_path), **FAST)
    run_centers(config)
    stage2 = stage_directories(config)["stage2"]
    np.save(stage2 / "centers.npy", np.ones((100, 16), dtype=np.int8))  # a foreign result ...
    (stage2 / "config.json").write_text("{damaged")  # ... whose identity record is damaged
    centers = run_centers(config)
    assert len(np.unique(centers, axis=0)) == 100, "the untrusted artifact was returned"
    assert json.loads((stage2 / "config.json").read_text())["centers"] == "csq"


def _image_folder(root, classes, per_class, seed):
    from PIL import Image

    rng = np.random.default_rng(seed)
    for c in range(classes):
        (root / f"class{c}").mkdir(parents=True, exist_ok=True)
        for i in range(per_class):
            Image.fromarray(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)).save(root / f"class{c}" / f"{i}.png")


def test_the_cache_key_covers_the_data_root_and_its_contents(tmp_path):
    from shc.runs import forget_data

    options = {"train_size": 6, "query_size": 2, "val_size": 1}
    first, second = tmp_path / "a", tmp_path / "b"
    _image_folder(first, 3, 10, seed=0)
    _image_folder(second, 3, 10, seed=1)
    make = lambda root: RunConfig(dataset="imagefolder", data_root=str(root), dataset_options=options,  # noqa: E731
                                  method="csq", run_dir=str(tmp_path / "runs"), **FAST)
    key_a, key_b = stage_directories(make(first))["stage3"], stage_directories(make(second))["stage3"]
    assert key_a != key_b, "two image folders share one cached result"
    _image_folder(first, 4, 10, seed=2)  # a class added to the same folder
    forget_data()
    assert stage_directories(make(first))["stage3"] != key_a, "new contents of a folder reuse the old result"


def test_a_stage_being_computed_elsewhere_is_refused_with_a_lock_message(tmp_path):
    import fcntl

    from shc.pipeline import run_centers

    config = RunConfig(method="csq", run_dir=str(tmp_path), **FAST)
    stage2 = stage_directories(config)["stage2"]
    stage2.mkdir(parents=True)
    with open(stage2 / ".lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        holder.write("pid 12345")
        holder.flush()
        with pytest.raises(RuntimeError, match="being computed by pid 12345"):
            run_centers(config)
    assert run_centers(config).shape == (100, 16)  # once released, it computes


def test_methods_without_similarity_skip_stage1(tmp_path):
    config = RunConfig(method="csq", run_dir=str(tmp_path), **FAST)
    rows = run_grid([config], progress=False)
    assert not stage_directories(config)["stage1"].exists()
    assert set(MAP_KEYS) <= set(rows[0])


def test_quick_preset_grid_and_summary():
    configs = preset("quick")
    assert len(configs) == 4 * 3 * 3
    assert {c.method for c in configs} == {"random", "csq", "mds", "shc"}
    assert {c.bits for c in configs} == {16, 32, 64} and {c.seed for c in configs} == {0, 1, 2}
    rows = [{"dataset": "d", "method": "shc", "bits": 16, "seed": s, "mAP@ALL": v} for s, v in ((0, 0.5), (1, 0.7))]
    assert summarize(rows).loc[("d", "shc"), "16 bits"] == "0.6000 ± 0.1414"


def test_paper_preset_uses_paper_hyperparameters():
    configs = preset("paper", methods=["shc"], bits=[32])
    cifar = next(c for c in configs if c.dataset == "cifar100")
    cars = next(c for c in configs if c.dataset == "stanford-cars-a")
    assert (cifar.backbone, cifar.pretrained, cifar.epochs, cifar.batch_size) == ("resnet34", True, 300, 64)
    assert cifar.lr == 7e-5 and cars.lr == 1e-4


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"method": "lsh"}, "unknown method 'lsh'.*Choose one of: shc"),
        ({"similarity": "bert"}, "Choose one of: logits, text, labels, hierarchy"),
        ({"dataset": "imagenet"}, "unknown dataset 'imagenet'.*digits-composite"),
        ({"lr": 0.0}, "lr must be a positive number"),
        ({"seed": -1}, "seed must be a non-negative integer"),
        ({"backbone": "small_cn"}, "did you mean 'small_cnn'"),
        ({"bits": 4}, r"bits must be an integer in \[8, 1024\]"),
        ({"epochs": 0}, "epochs must be a positive integer"),
    ],
)
def test_bad_config_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**changes)


def test_unknown_preset_and_duplicate_seeds_are_refused():
    known = ("Known presets: tiny, quick, standard, standard-pretrained, tiny-pretrained, standard-fine, tiny-fine, "
             "standard-modes, tiny-modes, standard-unseen, standard-pretrained-unseen, tiny-unseen, paper")
    with pytest.raises(ValueError, match=f"unknown preset 'huge'.*{known}"):
        preset("huge")
    with pytest.raises(ValueError, match="seeds lists 0 more than once"):
        preset("quick", seeds=[0, 0])


@pytest.mark.parametrize("name", ["methods", "bits", "seeds", "datasets"])
def test_an_empty_list_is_refused_not_taken_for_the_whole_grid(name):
    """``methods or self.methods`` turned [] into every method of the preset (a notebook given methods: [] trained
    them all); only seeds were refused. None still means the preset's own."""
    from shc.presets import get_preset, report_configs

    with pytest.raises(ValueError, match=f"{name} is empty"):
        get_preset("standard").configs(**{name: []})
    assert len(get_preset("tiny").configs(**{name: None})) == len(get_preset("tiny").configs())
    if name == "methods":
        with pytest.raises(ValueError, match="methods is empty"):
            report_configs("standard", "fashion-composite", [], [16], [0])


def test_training_does_not_depend_on_what_ran_before(tmp_path):
    import torch

    from shc.results import load_history

    config = RunConfig(method="random", epochs=1, eval_every=1, bits=16, precision="fp32")
    first = config.replace(run_dir=str(tmp_path / "a"))
    run(first)
    torch.randn(1000)  # consume random numbers, as an earlier run in the same process would
    second = config.replace(run_dir=str(tmp_path / "b"))
    run(second)
    assert load_history(first)["loss"].tolist() == load_history(second)["loss"].tolist()


def test_a_tiny_variant_of_the_standard_preset_runs(tmp_path):
    """The evidence preset's path end to end (fashion-composite, composite_cnn_mlp, 14x28) at toy size."""
    from shc.data.composites import DEBIAN_FASHION_MNIST

    if not DEBIAN_FASHION_MNIST.is_dir():
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist; .ci/run does it)")
    options = {"num_classes": 10, "train_per_class": 10, "val_per_class": 2, "query_per_class": 2,
               "database_per_class": 5, "image_size": 14}
    config = preset("standard", methods=["shc"], bits=[16], seeds=[0], epochs=1, eval_every=1,
                    dataset_options=options, run_dir=str(tmp_path))[0]
    assert (config.dataset, config.backbone, config.lr) == ("fashion-composite", "composite_cnn_mlp", 3e-3)
    result = run(config)
    assert result.centers.shape == (10, 16) and 0 <= result.metrics["mAP@ALL"] <= 1
    assert result.similarity.shape == (10, 10)


def test_parallel_grid_equals_serial_single_thread_runs_in_config_order(tmp_path):
    """run_grid(jobs=2) trains in spawned one-thread workers; a one-thread serial run of stage 3 on the same S and
    centers gives the same numbers (fp32: bf16 autocast on a CPU is not bit-reproducible across processes)."""
    import torch

    configs = [RunConfig(method=method, epochs=1, eval_every=1, bits=16, precision="fp32", run_dir=str(tmp_path / "parallel"),
                         dataset_options={"num_classes": 10, "train_per_class": 10, "val_per_class": 2,
                                          "query_per_class": 2, "database_per_class": 5})
               for method in ("shc", "random", "csq")]
    parallel = run_grid(configs, progress=False, jobs=2)
    assert [(row["method"], row["bits"]) for row in parallel] == [("shc", 16), ("random", 16), ("csq", 16)]
    for config, row in zip(configs, parallel):
        stored = json.loads((stage_directories(config)["stage3"] / "metrics.json").read_text())
        assert row["mAP@ALL"] == stored["mAP@ALL"]
    serial_configs = [c.replace(run_dir=str(tmp_path / "serial")) for c in configs]
    for config, twin in zip(configs, serial_configs):  # the same S and centers: stage 3 alone is compared
        for stage in ("stage1", "stage2"):
            source, target = stage_directories(config)[stage], stage_directories(twin)[stage]
            if source.exists() and not target.exists():
                shutil.copytree(source, target)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        serial = run_grid(serial_configs, progress=False)
    finally:
        torch.set_num_threads(threads)
    assert [row["mAP@ALL"] for row in serial] == [row["mAP@ALL"] for row in parallel]
    lines = []  # a second call finds every cell cached: no worker starts, rows come back at once
    assert run_grid(configs, progress=True, log=lines.append, jobs=2) == parallel
    assert len(lines) == 3 and all("(cached" in line for line in lines)  # read, not trained
    assert lines[-1].endswith("(cached; ETA 0.0 min)") and "ETA" not in lines[0]  # nothing trained: no rate yet


def test_the_grid_eta_counts_epochs_not_runs():
    """A grid starts its longest runs first, so its first finished run is its slowest: the ETA reads seconds per
    epoch from the runs trained so far (cached ones took no time and are left out) and shares the epochs left
    between the workers, never more workers than runs left."""
    from shc.pipeline import grid_eta

    # standard's 32-bit grid after its first LTH run: 320 epochs in 850 s; left: LTH x2, MDS/DTSH/IDHN x9, 33 x 80
    left = [320] * 2 + [160] * 9 + [80] * 33
    assert grid_eta([(320, 850.0)], left, jobs=2) == pytest.approx(4720 * 850 / 320 / 2)  # 104.5 minutes
    assert grid_eta([(320, 850.0), (80, 90.0)], [80], jobs=2) == pytest.approx(80 * 940 / 400)  # one run: one worker
    assert grid_eta([], left, jobs=2) is None  # nothing trained yet: no rate
    assert grid_eta([(80, 90.0)], [], jobs=2) == 0.0


def test_a_parallel_grid_starts_the_longest_runs_first_and_returns_rows_in_grid_order(monkeypatch, tmp_path):
    """Workers take runs in submission order: the most epochs go first (ties keep the grid's order), so a long
    budget listed last does not run alone at the end (docs/gpu.md, section 6). Rows stay in the grid's order."""
    import contextlib

    from shc import executors, pipeline

    epochs = [80, 320, 80, 160, 320, 80]  # seed-major order of a grid, as the pipeline lists it
    configs = [RunConfig(method="greedyhash", epochs=e, seed=i, run_dir=str(tmp_path)) for i, e in enumerate(epochs)]
    assert pipeline.longest_first(configs) == [1, 4, 3, 0, 2, 5]
    assert pipeline.longest_first([]) == []
    submitted = []
    keys = (*pipeline.TIE_AWARE_MAP_KEYS, *pipeline.MAP_KEYS)

    class Recorder:  # an executor that records what it was given and "trains" each run into its seed / 10
        remote = False

        def map(self, function, tasks):
            submitted.extend(task[0].seed for task in tasks)
            return [(position, {**{key: task[0].seed / 10 for key in keys}, "train_seconds": 1.0}, None, 1.0)
                    for position, task in enumerate(tasks)]

    monkeypatch.setattr(executors, "open_executor", lambda name, **options: contextlib.nullcontext(Recorder()))
    rows = run_grid(configs, progress=False, jobs=2)
    assert submitted == [1, 4, 3, 0, 2, 5]
    assert [row["seed"] for row in rows] == list(range(6))
    assert [row["mAP@ALL"] for row in rows] == [seed / 10 for seed in range(6)]


@pytest.mark.parametrize("cuda, cores, expected", [(False, 2, 2), (False, 16, 16), (True, 16, 1), (False, 1, 1)])
def test_auto_jobs_is_one_run_per_core_on_a_cpu_and_one_at_a_time_on_a_gpu(monkeypatch, cuda, cores, expected):
    import torch

    from shc import pipeline

    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(pipeline, "_cpu_count", lambda: cores)
    assert pipeline.resolve_jobs("auto") == expected
    assert pipeline.grid_threads("auto") == max(1, cores // expected)
    assert pipeline.resolve_jobs(3) == 3


def test_both_command_lines_default_to_auto_jobs_and_take_a_number(monkeypatch, tmp_path):
    import argparse

    from shc import pipeline
    from shc.cli_common import jobs_argument
    from shc.reports.cli import _parser

    asked = []

    class Asked(Exception):
        pass

    def fake_grid(configs, progress=True, log=print, jobs=1, **cluster):
        asked.append(jobs)
        assert cluster["executor"] == "local" and cluster["address"] is None  # --executor's default (shc.executors)
        raise Asked

    monkeypatch.setattr(pipeline, "run_grid", fake_grid)
    for argv in ([], ["--jobs", "3"]):
        with pytest.raises(Asked):
            pipeline._main(["--preset", "tiny", "--run-dir", str(tmp_path), "--quiet", *argv])
    assert asked == ["auto", 3]
    assert _parser().parse_args([]).jobs == "auto" and _parser().parse_args(["--jobs", "3"]).jobs == 3
    with pytest.raises(argparse.ArgumentTypeError, match="positive integer or 'auto'"):
        jobs_argument("-1")


@pytest.mark.parametrize("jobs", [0, -1, 1.5, True, "all"])
def test_jobs_must_be_a_positive_integer(jobs):
    with pytest.raises(ValueError, match="jobs must be a positive integer"):
        run_grid([], jobs=jobs)


def _needs_fashion_mnist():
    from shc.data.composites import DEBIAN_FASHION_MNIST

    if not DEBIAN_FASHION_MNIST.is_dir():
        pytest.skip("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist; .ci/run does it)")


def test_the_many_class_preset_has_more_classes_than_2q_sharing_items_evenly():
    """standard-fine (issue 20): 333 three-item composites, so C > 2q at 16, 32 and 64 bits, every item
    33-34 times in each position; the grid is the issue's methods x 3 lengths x 3 seeds."""
    _needs_fashion_mnist()
    from shc.runs import load_data

    configs = preset("standard-fine")
    assert len(configs) == 72 and {c.method for c in configs} == {
        "random", "csq", "mds", "shc", "shc-ls", "crh", "greedyhash", "lth"}
    data = load_data(configs[0])
    assert data.num_classes == 333 and all(data.num_classes > 2 * q for q in (16, 32, 64))
    items = [name.split(" + ") for name in data.class_names]
    assert all(len(parts) == 3 for parts in items) and len(set(map(tuple, items))) == 333
    for position in range(3):
        counts = np.unique([parts[position] for parts in items], return_counts=True)[1]
        assert len(counts) == 10 and counts.min() >= 33 and counts.max() <= 34
    image = data.train[0][0]
    assert tuple(image.shape) == (3, 14, 42) and configs[0].backbone == "composite3_cnn_mlp"
    # one budget for all on the new backbone (docs/standard-fine.md: the networks reach their targets only at 120),
    # but LTH's, which moves by 0.068 from 120 to 240 and by 0.024 from 240 to 480, so it trains for 480, and at 32
    # and 64 bits, where 480 -> 960 moves its seed mean by 0.039 and 0.028, for 960
    assert {(c.method, c.bits): c.epochs for c in configs} == {
        **{(method, q): 120 for method in ("random", "csq", "mds", "shc", "shc-ls", "crh", "greedyhash")
           for q in (16, 32, 64)}, ("lth", 16): 480, ("lth", 32): 960, ("lth", 64): 960}


def test_the_tiny_many_class_preset_runs_csq_beyond_2q_and_crh(tmp_path):
    """tiny-fine: 37 classes > 2q = 32 at 16 bits; CSQ fills the rows past 2q with balanced random ones,
    CRH keeps its codebook as stage artifacts."""
    _needs_fashion_mnist()
    from shc.centers import csq_centers

    configs = preset("tiny-fine", run_dir=str(tmp_path))
    assert [(c.method, c.bits, c.dataset_options["num_classes"]) for c in configs] == [("csq", 16, 37),
                                                                                         ("crh", 16, 37)]
    rows = run_grid(configs, progress=False)
    assert all(0 <= row["mAP@ALL"] <= 1 for row in rows)
    centers = np.load(stage_directories(configs[0])["stage2"] / "centers.npy")
    np.testing.assert_array_equal(centers, csq_centers(37, 16, seed=0))
    assert np.all(np.abs(centers[:16] @ centers[:16].T - 16 * np.eye(16)) == 0)  # Hadamard rows
    assert np.all(centers[32:].sum(axis=1) == 0)  # past 2q: balanced random rows
    stage3 = stage_directories(configs[1])["stage3"]
    assert np.load(stage3 / "class_centers.npy").shape == (37, 16)
    assert json.loads((stage3 / "reassignments.json").read_text())["log"][0]["epoch"] == 1


def test_the_modes_presets_are_a_100_class_item_hierarchy_and_the_tiny_one_runs(tmp_path):
    """standard-modes (issue 35): 100 visual modes of single items, C > 2q at 16 and 32 bits, coarse class =
    item; tiny-modes runs CSQ and CRH end to end and records reachability against each one's targets."""
    _needs_fashion_mnist()
    from shc.runs import load_data

    configs = preset("standard-modes")
    assert len(configs) == 72 and configs[0].backbone == "small_cnn_mlp"
    data = load_data(configs[0])
    assert data.num_classes == 100 and all(data.num_classes > 2 * q for q in (16, 32))
    np.testing.assert_array_equal(data.coarse_labels, np.repeat(np.arange(10), 10))
    assert tuple(data.train[0][0].shape) == (3, 14, 14) and len(data.train) == 5000
    rows = run_grid(preset("tiny-modes", run_dir=str(tmp_path)), progress=False)
    assert [row["reach_targets"] for row in rows] == ["centers", "learned class codes"]
    assert all(0 <= row["train_center_hit_rate"] <= 1 and 0 <= row["mAP@ALL"] <= 1 for row in rows)


def test_a_preset_gives_a_method_its_own_budget_at_one_code_length():
    """Preset.bits_config: fields for one method at one code length, over method_config (LTH's 960 epochs at 64 bits
    on standard-fine); an explicit ``epochs=`` still wins; a code length the grid lacks is refused."""
    from shc.presets import PRESETS, Preset

    def preset(bits_config):
        return Preset(name="t", description="d", datasets=("digits-composite",), methods=("csq", "lth"), bits=(16, 64),
                      seeds=(0,), config={"epochs": 3}, method_config={"lth": {"epochs": 5}}, bits_config=bits_config)

    own = preset({64: {"lth": {"epochs": 9}}})
    assert {(c.method, c.bits): c.epochs for c in own.configs()} == {
        ("csq", 16): 3, ("lth", 16): 5, ("csq", 64): 3, ("lth", 64): 9}
    assert {c.epochs for c in own.configs(epochs=2)} == {2}
    with pytest.raises(ValueError, match="32 bits, which the grid does not have"):
        preset({32: {"lth": {"epochs": 9}}})
    with pytest.raises(ValueError, match="nope"):
        preset({64: {"nope": {"epochs": 9}}})
    fine = {(c.bits, c.epochs) for c in PRESETS.get("standard-fine").configs(methods=["lth"], seeds=[0])}
    assert fine == {(16, 480), (32, 960), (64, 960)}
    assert own.own_fields("lth") == {"epochs": 5} and own.own_fields("lth", 64) == {"epochs": 9}
    assert own.own_fields("csq", 64) == {}


def test_a_preset_gives_a_method_its_own_fields_and_an_explicit_override_wins():
    """Preset.method_config: per-method fields (a baseline's own epochs) over the preset's config; an explicit
    ``epochs=`` of a batch wins; an unknown method or an invalid field is refused when the preset is built."""
    from shc.presets import Preset

    def preset(method_config):
        return Preset(name="t", description="d", datasets=("digits-composite",), methods=("csq", "mds"), bits=(16,),
                      seeds=(0,), config={"epochs": 3}, method_config=method_config)

    own = preset({"mds": {"epochs": 7}})
    assert {c.method: c.epochs for c in own.configs()} == {"csq": 3, "mds": 7}
    assert {c.method: c.epochs for c in own.configs(epochs=2)} == {"csq": 2, "mds": 2}
    with pytest.raises(ValueError, match="nope"):
        preset({"nope": {"epochs": 1}})
    with pytest.raises(ValueError, match="epochs"):
        preset({"mds": {"epochs": 0}})


def test_the_command_an_error_names_computes_that_very_run(tmp_path, monkeypatch):
    """A missing run's error names the preset command with the run's method, bits and seed (and --run-dir when it is
    not the preset's own folder); a configuration no preset holds gets the Python call."""
    from shc.presets import compute_command, default_run_dir

    (config,) = preset("quick", methods=["shc"], bits=[16], seeds=[2], run_dir=str(default_run_dir("quick")))
    python = "(or in Python `shc.pipeline.run(config)`)"
    command = "`python -m shc.pipeline --preset quick --methods shc --bits 16 --seeds 2"
    assert compute_command(config) == f"{command}` {python}"
    elsewhere = config.replace(run_dir=str(tmp_path))
    assert compute_command(elsewhere) == f"{command} --run-dir {tmp_path}` {python}"
    with monkeypatch.context() as away:  # run from another folder, the command's default is that folder's runs/quick
        away.chdir(tmp_path)
        assert compute_command(config) == f"{command} --run-dir {default_run_dir('quick')}` {python}"
    (lth,) = preset("standard-fine", methods=["lth"], bits=[64], seeds=[0], run_dir=str(tmp_path))
    assert compute_command(lth).startswith("`python -m shc.pipeline --preset standard-fine --methods lth --bits 64")
    assert compute_command(lth.replace(epochs=7)) == ("in Python `shc.pipeline.run(config)` (no preset's grid holds "
                                                      "this configuration)")
    with pytest.raises(MissingRunError, match=r"which does not exist .* Compute it first: `python -m shc.pipeline "
                                              r"--preset quick --methods shc --bits 16 --seeds 2 --run-dir"):
        from shc.results import load_metrics

        load_metrics(elsewhere.replace(run_dir=str(tmp_path / "absent")))


def test_history_rows_keep_the_epochs_timings_to_four_significant_digits(shc_run):
    """The stacked history is the run's own history but for its wall-clock timings, rounded as ``%.4g`` prints them
    (their later digits are timer noise); the losses keep every digit."""
    from shc.results import history_rows, load_history
    from shc.results.reading import TIMING_DIGITS

    config, _ = shc_run
    own, stacked = load_history(config), history_rows([config])
    assert TIMING_DIGITS == 4 and list(stacked["loss"]) == list(own["loss"])
    for column in ("seconds", "eval_seconds"):
        expected = [float(f"{value:.4g}") if np.isfinite(value) else value for value in own[column]]
        np.testing.assert_allclose(stacked[column].to_numpy(), np.array(expected, dtype=float), rtol=1e-12)
    assert not np.array_equal(own["seconds"], stacked["seconds"])  # the timings had more digits to drop


def test_round_significant_matches_printf_rounding():
    from shc.results.reading import round_significant

    rng = np.random.default_rng(3)
    values = np.concatenate([rng.lognormal(0, 4, 2000) * rng.choice([-1, 1], 2000), [0.0, np.nan, np.inf, 12345.0]])
    for digits in (1, 4, 8):
        expected = np.array([float(f"{value:.{digits}g}") for value in values])
        np.testing.assert_allclose(round_significant(values, digits), expected, rtol=1e-12, equal_nan=True)
