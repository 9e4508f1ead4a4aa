"""Report notebooks 01-05 and the package functions they call.

One module fixture runs notebooks 01-05 through the batch runner with the "tiny" preset (a 20-class digits
composite, 2 epochs, one seed; about 1.5 min on a busy 2-core machine): every report must succeed, write its
figures and tables, and its numbers must agree with independent recomputations from the stored pipeline
artifacts (brute-force mAP from the stored codes, brute-force d_min and S_loss from the stored centers, pair
counting for the hierarchy ROC-AUC). The other tests are fast unit tests of the result-reading functions
(shc.pipeline), the S comparisons (shc.similarity) and the new figures (shc.plots) against hand-computed values.
"""

from __future__ import annotations

import csv
import html
import json
import os
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from scipy.stats import spearmanr

from shc import findings, pipeline, plots, reports, results
from shc.metrics import mean_average_precision
from shc.similarity import hierarchy_agreement, most_similar_pairs, similarity_correlations, similarity_from_labels

NOTEBOOKS = ("01_similarity", "02_hash_centers", "03_train_hashing", "04_retrieval", "05_ablations", "06_baselines")
FIGURES = {
    "01_similarity": ("similarity_heatmap", "similarity_sources", "similarity_by_coarse_class"),
    "02_hash_centers": ("distance_histograms", "similarity_vs_gram", "shc_history", "shc_ls_history"),
    "03_train_hashing": ("convergence", "convergence_overlay"),
    "04_retrieval": ("pr_curve_radius_16bits", "pr_curve_rank_16bits", "precision_at_k_16bits", "recall_at_k_16bits",
                     "example_queries_mds", "example_queries_shc", "code_embedding_shc", "class_ap_vs_similarity"),
    "05_ablations": ("ablation_terms",),
    "06_baselines": ("pr_curve_rank_16bits", "precision_at_k_16bits", "recall_at_k_16bits"),
}  # fmt: skip
TABLES = {
    "01_similarity": ("classifier_accuracy", "most_similar_pairs", "similarity_correlations", "hierarchy_agreement"),
    "02_hash_centers": ("center_quality", "center_quality_runs", "shc_history", "generation_seconds"),
    "03_train_hashing": ("runs", "training_history", "selected_epoch_and_time"),
    "04_retrieval": ("mAP_at_100", "mAP_at_1000", "mAP_at_ALL"),
    "05_ablations": ("ablation_terms", "ablation_center_quality", "ablation_similarity_source",
                     "ablation_terms_per_seed", "ablation_similarity_source_per_seed"),
    "06_baselines": ("methods", "mAP_at_100", "mAP_at_1000", "mAP_at_ALL", "train_seconds", "selected_epoch",
                     "paper_side_by_side"),
}


# --------------------------------------------------------------------------------------
# Independent references
# --------------------------------------------------------------------------------------


def _brute_force_map(query_codes, query_labels, db_codes, db_labels, topk=None) -> float:
    """AP@K per query from a stable Hamming ranking, one query at a time (no shc.metrics)."""
    precisions = []
    for code, label in zip(query_codes, query_labels):
        distances = np.sum(db_codes != code, axis=1)  # bits that differ
        ranking = np.argsort(distances, kind="stable")[: topk or len(db_codes)]
        relevant = db_labels[ranking] == label
        hits = np.flatnonzero(relevant)
        precisions.append(np.mean((np.arange(hits.size) + 1) / (hits + 1)) if hits.size else 0.0)
    return float(np.mean(precisions))


def _brute_force_d_min(centers: np.ndarray) -> int:
    num_classes = len(centers)
    return min(int(np.sum(centers[i] != centers[j])) for i in range(num_classes) for j in range(i + 1, num_classes))


def _csv_rows(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _cell(path: Path, row_label: str) -> str:
    """The first value of the CSV row whose last index entry is ``row_label`` (tables with one data column)."""
    rows = [row for row in _csv_rows(path) if row_label in row]
    assert len(rows) == 1, (row_label, rows)
    return rows[0][-1]


# --------------------------------------------------------------------------------------
# The tiny batch (module fixture)
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("notebooks")
    log: list[str] = []
    # two notebooks at a time: every test of the batch's pages checks the parallel path too
    reports_run = reports.run_reports("tiny", only=list(NOTEBOOKS), output_root=root / "reports", run_root=root / "runs",
                                      log=log.append, notebook_jobs=2)
    tiny = reports.notebook_table()["04_retrieval"]["tiny"][0]
    run_dir = str(root / "runs" / "tiny")

    def configs(methods, **changes):
        return pipeline.report_configs(tiny["preset"], tiny["dataset"], methods, tiny["bits"], tiny["seeds"], run_dir,
                                       **changes)

    return {"results": reports_run, "log": log, "preset_dir": root / "reports" / "tiny", "run_dir": Path(run_dir),
            "configs": configs}  # fmt: skip


def test_notebooks_run_two_at_a_time_and_the_results_keep_the_plan_order(batch):
    log = batch["log"]
    assert f"executing {len(NOTEBOOKS)} notebooks, 2 at a time ..." in log
    assert [result.job.notebook for result in batch["results"]] == list(NOTEBOOKS)
    for number, stem in enumerate(NOTEBOOKS, start=1):  # each announced once, then reported once, under its number
        started = log.index(f"[{number}/{len(NOTEBOOKS)}] {stem}: running ...")
        finished = [i for i, line in enumerate(log) if line.startswith(f"[{number}/{len(NOTEBOOKS)}] {stem}: ok in ")]
        assert len(finished) == 1 and finished[0] > started
    # never more than two running: the third is announced only after one of the first two finished
    third = log.index(f"[3/{len(NOTEBOOKS)}] {NOTEBOOKS[2]}: running ...")
    assert any(" ok in " in line for line in log[:third])


def _report(batch, stem: str) -> Path:
    return batch["preset_dir"] / stem


def test_every_notebook_runs_and_the_index_lists_its_headline_numbers(batch):
    failed = {result.job.name: result.error for result in batch["results"] if result.status != "ok"}
    assert not failed, failed
    assert [result.job.notebook for result in batch["results"]] == list(NOTEBOOKS)
    index = (batch["preset_dir"] / "index.html").read_text(encoding="utf-8")
    for stem in NOTEBOOKS:
        summary = json.loads((_report(batch, stem) / reports.SUMMARY_FILE).read_text())
        assert summary, stem
        assert f"{stem}/{stem}-report.html" in index
        assert html.escape(reports.format_summary(summary).split(" · ")[0]) in index


def test_every_figure_and_table_is_written(batch):
    for stem in NOTEBOOKS:
        for figure in FIGURES[stem]:
            for suffix in (".png", ".svg"):
                path = _report(batch, stem) / "figures" / f"{figure}{suffix}"
                assert path.is_file() and path.stat().st_size > 1000, path
        page = (_report(batch, stem) / f"{stem}-report.html").read_text(encoding="utf-8")
        for png in (_report(batch, stem) / "figures").glob("*.png"):  # every figure has the data it draws
            data = [png.with_suffix(suffix) for suffix in plots.DATA_SUFFIXES]
            if not any(path.is_file() for path in data):  # or names, in its alt text, the table that holds it
                alt = re.search(rf'<img alt="([^"]*)"[^>]*src="figures/{re.escape(png.name)}"', page).group(1)
                named = re.search(r"The plotted numbers are in ((?:tables|figures)/[\w.-]+?)\.$", alt)
                data = [png.parents[1] / named.group(1)]
            assert any(path.is_file() for path in data), png
            assert len(pd.read_csv(next(path for path in data if path.is_file()))) > 1, png
        for table in TABLES[stem]:
            assert len(_csv_rows(_report(batch, stem) / "tables" / f"{table}.csv")) > 1, (stem, table)


def test_notebooks_share_one_set_of_stage_artifacts(batch):
    # every stage computed once in the preset's run_dir: logits S once per seed, each center set and run once,
    # the text-S variant of SHC beside the default one instead of colliding with it
    folders = {path.name.rsplit("-", 1)[0] for path in (batch["run_dir"] / "digits-composite" / "seed0").iterdir()}
    assert folders == {
        "stage1-logits", "stage1-text", "stage1-hierarchy",
        *(f"stage2-{m}-16bit" for m in ("random", "csq", "mds", "shc", "shc-ls", "semantic", "distance",
                                         "shc-text", "orthohash")),
        *(f"stage3-{m}-16bit" for m in ("mds", "shc", "semantic", "distance", "shc-text", "dpsh", "greedyhash",
                                         "orthohash")),
    }  # fmt: skip


def test_map_tables_are_the_brute_force_map_of_the_stored_codes(batch):
    summary = json.loads((_report(batch, "04_retrieval") / reports.SUMMARY_FILE).read_text())
    for config in batch["configs"](["mds", "shc"]):
        codes = np.load(pipeline.stage_directories(config)["stage3"] / "codes.npz")
        args = codes["query_codes"], codes["query_labels"], codes["database_codes"], codes["database_labels"]
        for metric, topk in (("mAP@ALL", None), ("mAP@100", 100)):
            expected = _brute_force_map(*args, topk=topk)
            table = _report(batch, "04_retrieval") / "tables" / f"{metric.replace('@', '_at_')}.csv"
            assert float(_cell(table, config.method)) == pytest.approx(expected, abs=5e-5)
            tie_aware = mean_average_precision(*args, topk, tie_aware=True)  # tested against every tie order
            table = _report(batch, "04_retrieval") / "tables" / f"tie_aware_{metric.replace('@', '_at_')}.csv"
            assert float(_cell(table, config.method)) == pytest.approx(tie_aware, abs=5e-5)
        assert summary[f"tie-aware mAP@ALL {config.method} (16 bits)"] == pytest.approx(
            mean_average_precision(*args, tie_aware=True), abs=1e-9)


def test_baseline_tables_are_the_brute_force_map_of_the_stored_codes(batch):
    summary = json.loads((_report(batch, "06_baselines") / reports.SUMMARY_FILE).read_text())
    maps = {}
    for config in batch["configs"](["dpsh", "greedyhash", "orthohash", "shc"]):
        codes = np.load(pipeline.stage_directories(config)["stage3"] / "codes.npz")
        args = codes["query_codes"], codes["query_labels"], codes["database_codes"], codes["database_labels"]
        table = _report(batch, "06_baselines") / "tables" / "mAP_at_ALL.csv"
        assert float(_cell(table, config.method)) == pytest.approx(_brute_force_map(*args), abs=5e-5)
        maps[config.method] = mean_average_precision(*args, tie_aware=True)
    # the label names the best method first; the tiny runs (2 epochs) add that it missed its targets
    best, _, remark = summary["best method (tie-aware mAP@ALL, 16 bits)"].partition("; ")
    best = best.removesuffix(" (one seed, untested)")  # one seed: the label says its lead is not tested
    assert best == max(maps, key=maps.get) and remark in ("", f"below the training hit rate of 0.9: {best}")
    seconds = _report(batch, "06_baselines") / "tables" / "train_seconds.csv"
    assert all(float(_cell(seconds, method)) > 0 for method in maps)


def test_center_quality_is_computed_from_the_stored_centers_and_the_data_dependent_s(batch):
    runs = pd.read_csv(_report(batch, "02_hash_centers") / "tables" / "center_quality_runs.csv").set_index("method")
    for config in batch["configs"](["random", "csq", "mds", "shc", "semantic"]):
        centers = np.load(pipeline.stage_directories(config)["stage2"] / "centers.npy").astype(np.int64)
        S = np.load(pipeline.stage_directories(config)["stage1"] / "similarity.npy")
        assert runs.loc[config.method, "d_min"] == _brute_force_d_min(centers)
        assert runs.loc[config.method, "s_loss"] == pytest.approx(np.mean((S - centers @ centers.T / 16) ** 2))
    assert runs.loc["shc", "d_min"] >= runs.loc["shc", "gv_distance"]  # SHC keeps the GV distance (Eq. 22)
    quality = _csv_rows(_report(batch, "02_hash_centers") / "tables" / "center_quality.csv")
    shc_row = next(row for row in quality if row[1] == "shc")
    assert float(shc_row[3]) == pytest.approx(runs.loc["shc", "s_loss"], abs=5e-5)  # d_min, S_loss, ...


def test_the_shc_ls_history_table_holds_each_run_s_records_and_its_target_distance(batch):
    from shc.centers import gv_min_distance

    table = pd.read_csv(_report(batch, "02_hash_centers") / "tables" / "shc_ls_history.csv")
    (config,) = batch["configs"](["shc-ls"])
    records = json.loads((pipeline.stage_directories(config)["stage2"] / "history.json").read_text())
    assert len(table) == len(records) and set(table["method"]) == {"shc-ls"}
    np.testing.assert_allclose(table["s_loss"], [record["s_loss"] for record in records], atol=5e-5)
    assert set(table["gv_distance"]) == {gv_min_distance(len(np.load(
        pipeline.stage_directories(config)["stage2"] / "centers.npy")), config.bits)}


def test_similarity_report_recovers_the_known_hierarchy_consistently(batch):
    table = pd.read_csv(_report(batch, "01_similarity") / "tables" / "hierarchy_agreement.csv", index_col=0)
    assert table.loc["hierarchy S", "roc_auc"] == 1.0 and table.loc["hierarchy S", "top1_same_coarse"] == 1.0
    # Independent ROC-AUC of the stored data-dependent S: count the won and tied (same-coarse, other) pair pairs.
    # Tiny classes are the numbers 0, 5, ..., 95 (20 evenly spaced of 100); the coarse class is the tens digit.
    S = results.load_similarity(batch["configs"](["shc"])[0])
    coarse = (np.arange(20) * 5) // 10
    rows, columns = np.triu_indices(20, k=1)
    same = coarse[rows] == coarse[columns]
    positive, negative = S[rows, columns][same], S[rows, columns][~same]
    wins = (positive[:, None] > negative[None, :]).sum() + 0.5 * (positive[:, None] == negative[None, :]).sum()
    assert table.loc["data-dependent S", "roc_auc"] == pytest.approx(wins / (positive.size * negative.size))
    text_S = results.load_similarity(batch["configs"](["shc"])[0].replace(similarity="text"))
    correlations = pd.read_csv(_report(batch, "01_similarity") / "tables" / "similarity_correlations.csv", index_col=0)
    expected = spearmanr(S[rows, columns], text_S[rows, columns]).statistic
    assert correlations.loc["data-dependent S", "text S"] == pytest.approx(expected)


def test_training_history_has_every_epoch_of_every_run(batch):
    history = pd.read_csv(_report(batch, "03_train_hashing") / "tables" / "training_history.csv")
    assert sorted(zip(history["method"], history["epoch"])) == [("mds", 1), ("mds", 2), ("shc", 1), ("shc", 2)]
    columns = ["loss", "mAP@100", "mAP@1000", "mAP@ALL", "tie_aware_mAP@100", "tie_aware_mAP@1000", "tie_aware_mAP@ALL"]
    assert history[columns].notna().all().all()  # eval_every=1 in "tiny"


def test_ablation_tables_read_the_same_runs_as_the_retrieval_tables(batch):
    terms = _report(batch, "05_ablations") / "tables" / "ablation_terms.csv"
    rows = [row for row in _csv_rows(terms) if row[0] == "mAP@ALL (ties by index)"]
    by_variant = {row[1]: row[2] for row in rows}
    retrieval = _report(batch, "04_retrieval") / "tables" / "mAP_at_ALL.csv"
    assert by_variant["d + S (SHC)"] == _cell(retrieval, "shc")
    distance_run = results.load_metrics(batch["configs"](["distance"])[0])  # MDS centers under SHC's loss
    assert float(by_variant["d only (MDS centers)"]) == pytest.approx(distance_run["mAP@ALL"], abs=5e-5)
    text_run = results.load_metrics(batch["configs"](["shc"], similarity="text")[0])
    sources = [row for row in _csv_rows(_report(batch, "05_ablations") / "tables" / "ablation_similarity_source.csv")
               if row[0] == "mAP@ALL (ties by index)"]  # fmt: skip
    tie_aware = [row for row in _csv_rows(terms) if row[0] == "mAP@ALL (tie-aware)"]
    assert float(dict((row[1], row[2]) for row in tie_aware)["d only (MDS centers)"]) == pytest.approx(
        distance_run["tie_aware_mAP@ALL"], abs=5e-5)
    assert float(dict((row[1], row[2]) for row in sources)["text embedding (BERT in the paper)"]) == pytest.approx(
        text_run["mAP@ALL"], abs=5e-5)
    # the index line of the distance-only variant says whose runs it shows when they are CSQ's (C <= 2q)
    same = pd.read_csv(_report(batch, "05_ablations") / "tables" / "same_runs.csv")
    q = int(same["bits"].max())
    twin = bool(same[(same["method"] == "distance") & (same["bits"] == q)]["same_centers"].all())
    summary = json.loads((_report(batch, "05_ablations") / reports.SUMMARY_FILE).read_text())
    keys = [key for key in summary if "d only (MDS centers)" in key]
    assert keys == [f"tie-aware mAP@ALL d only (MDS centers){', csq' + chr(39) + 's runs' if twin else ''} ({q} bits)"]
    # the checker derives every mean of the summary again from the page's runs table (an audit: 05 had none)
    from shc.reports.check_summary import derived_summary, summary_problems

    derived = derived_summary(_report(batch, "05_ablations"))
    assert set(derived) == set(summary) and all(value is not None for value in derived.values())
    assert list(summary_problems(_report(batch, "05_ablations"), "05_ablations/summary.json")) == []


def test_page_05_names_a_variant_anothers_runs_only_at_the_lengths_where_it_is(batch, tmp_path):
    """At 16 bits MDS's generator returns CSQ's Hadamard rows (tiny's C = 20 <= 2q), so the distance-only runs are
    CSQ's and the page says so; at 8 bits (C > 2q) they are not. A reader audit (2026-12-05) found the longest
    length's name on every length's rows of ``tables/runs.csv``."""
    [page] = reports.run_reports("tiny", only=["05_ablations"], overrides={"bits": [8, 16]}, output_root=tmp_path,
                                 run_root=batch["run_dir"].parent, log=lambda line: None, progress=False)
    assert page.status == "ok", page
    folder = tmp_path / "tiny" / "05_ablations" / "tables"
    same = pd.read_csv(folder / "same_runs.csv")
    twins = same[same["method"] == "distance"].groupby("bits")["same_centers"].all()
    assert twins.to_dict() == {8: False, 16: True}
    runs = pd.read_csv(folder / "runs.csv")
    named = runs[runs["method"] == "distance"].set_index("bits")["label"]
    assert named.to_dict() == {8: "d only (MDS centers)", 16: "d only (MDS centers), csq's runs"}


def test_page_05_takes_any_subset_of_the_variants(batch, tmp_path):
    # the methods parameter is Table 7's rows; section 2 (SHC's two sources of S) reads SHC's runs regardless.
    # Before, a subset without shc crashed (the labels were a fixed dict, the text-S runs were not computed).
    [page] = reports.run_reports("tiny", only=["05_ablations"], overrides={"methods": ["distance", "semantic"]},
                                 output_root=tmp_path, run_root=batch["run_dir"].parent, log=lambda line: None,
                                 progress=False)
    assert page.status == "ok", page
    folder = tmp_path / "tiny" / "05_ablations"
    def rows(table):
        return {row[1] for row in _csv_rows(folder / "tables" / table) if row[0] == "mAP@ALL (ties by index)"}

    assert rows("ablation_terms.csv") == {"d only (MDS centers)", "S only (Eq. 46-49)"}
    assert rows("ablation_similarity_source.csv") == {"text embedding (BERT in the paper)", "data-dependent (SHC)"}


def test_top_results_are_the_hamming_nearest_with_correct_flags(batch):
    config = batch["configs"](["shc"])[0]
    examples = results.top_results(config, n_queries=4, k=6)
    codes = results.load_codes(config)
    # the splits are stored in a random order: the examples are the first query of 4 evenly spaced classes
    labels = codes["query_labels"]
    classes = np.unique(labels)
    expected_classes = classes[[0, 6, 13, 19]]  # rint(linspace(0, 19, 4)) of the 20 tiny classes
    assert labels[examples.query_indices].tolist() == expected_classes.tolist()
    assert examples.query_indices.tolist() == [int(np.flatnonzero(labels == c)[0]) for c in expected_classes]
    for row, query in enumerate(examples.query_indices):
        distances = np.sum(codes["database_codes"] != codes["query_codes"][query], axis=1)
        expected = np.argsort(distances, kind="stable")[:6]
        np.testing.assert_array_equal(examples.result_indices[row], expected)
        np.testing.assert_array_equal(examples.correct[row],
                                      codes["database_labels"][expected] == codes["query_labels"][query])
    data = pipeline.load_data(config)
    np.testing.assert_array_equal(examples.result_images[1][0], data.database.raw_image(examples.result_indices[1, 0]))
    assert examples.query_titles[0] == data.class_names[codes["query_labels"][examples.query_indices[0]]]
    frame = examples.frame()  # the figure's data: one row a result, with its query's class (the panel title)
    assert len(frame) == 4 * 6 and frame["rank"].tolist()[:6] == [1, 2, 3, 4, 5, 6]
    assert frame["query_class"].tolist()[::6] == [data.class_names[c] for c in expected_classes]
    assert frame["correct"].tolist() == examples.correct.reshape(-1).tolist()


def test_curves_by_method_stack_the_stored_curves(batch):
    configs = batch["configs"](["mds", "shc"])
    k, precision = results.curves_by_method(configs, "precision@k", 16)
    metrics = results.load_metrics(configs[1])
    np.testing.assert_array_equal(k, metrics["k"])
    np.testing.assert_allclose(precision["shc"], [metrics["precision@k"]])
    pr = results.pr_curves_by_method(configs, 16)
    np.testing.assert_allclose(pr["shc"]["pr_recall"], np.asarray(metrics["pr_recall"], dtype=float))
    with pytest.raises(ValueError, match="no config has bits=32"):
        results.curves_by_method(configs, "recall@k", 32)


def test_results_imports_no_trainer_and_never_computes():
    import subprocess
    import sys

    code = ("import sys, shc.results; "
            "print(sorted(m for m in ('shc.train', 'shc.pipeline', 'shc.losses', 'torch.optim') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"shc.results imported {out}"


def test_reading_a_missing_run_names_the_fix(tmp_path):
    config = pipeline.RunConfig(run_dir=str(tmp_path))
    with pytest.raises(results.MissingRunError, match=r"Compute it first: in Python `shc.pipeline.run\(config\)` \(no "
                                                      r"preset's grid holds this configuration\)"):
        results.load_metrics(config)
    with pytest.raises(ValueError, match="no hash centers"):
        results.load_center_quality(config.replace(method="dpsh"))


# --------------------------------------------------------------------------------------
# Results tables (fast, hand-made rows)
# --------------------------------------------------------------------------------------


def _rows(values: dict[tuple[str, int], list[float]], metric: str = "mAP@ALL") -> list[dict]:
    return [{"dataset": "d", "label": label, "method": label, "bits": bits, "seed": seed, metric: value}
            for (label, bits), runs in values.items() for seed, value in enumerate(runs)]  # fmt: skip


def test_retrieval_table_cells_are_mean_and_sample_std_over_seeds():
    table = results.retrieval_table(_rows({("a", 16): [0.5, 0.7], ("b", 16): [0.4], ("a", 32): [0.9, 0.9]}))
    assert table.cells.loc["a", ("d", "16 bits")] == "0.6000 ± 0.1414"  # std of (0.5, 0.7) with ddof 1: 0.1414
    assert table.cells.loc["b", ("d", "16 bits")] == "0.4000"  # one seed: no ± part
    assert table.cells.loc["b", ("d", "32 bits")] == ""  # never run
    assert table.count.loc["a", ("d", "16 bits")] == 2
    assert list(table.cells.columns) == [("d", "16 bits"), ("d", "32 bits")]


def test_retrieval_table_cells_never_show_a_signed_zero():
    # mean of (-0.00007, 0.00003, 0.0) is -0.0000133...: four places would print "-0.0000" (the report checker's
    # signed-zero); the cell keeps two significant digits of the mean instead, the std at four places
    table = results.retrieval_table(_rows({("a", 16): [-0.00007, 0.00003, 0.0], ("b", 16): [0.5, 0.5, 0.5],
                                           ("c", 16): [0.00002, 0.00002, 0.00002]}))
    assert table.cells.loc["a", ("d", "16 bits")] == "-0.000013 ± 0.0001"
    assert table.cells.loc["b", ("d", "16 bits")] == "0.5000 ± 0.0000"  # an ordinary mean keeps its four places
    assert table.cells.loc["c", ("d", "16 bits")] == "0.000020 ± 0.0000"
    # ranked on the values as shown, with each cell's own decimals: -0.000013 and 0.000020 look different, so they
    # do not share a rank (an audit found two bold times shown as 0.00030 and 0.00034, ranked at three places)
    assert table.rank[("d", "16 bits")].tolist() == [3.0, 1.0, 2.0]
    # an exact negative zero (pandas' mean of -0.0s) prints without its sign
    zero = results.retrieval_table(_rows({("a", 16): [-0.0, -0.0]}))
    assert zero.cells.loc["a", ("d", "16 bits")] == "0.0000 ± 0.0000"


def test_retrieval_table_ranks_dense_on_shown_values_and_marks_best_and_second():
    rows = _rows({("a", 16): [0.80001], ("b", 16): [0.8], ("c", 16): [0.7], ("d", 16): [0.6]})
    table = results.retrieval_table(rows, order=["d", "c", "b", "a"])
    assert list(table.cells.index) == ["d", "c", "b", "a"]
    # a and b both show 0.8000: both best; c is second (dense ranking), d third
    assert table.rank[("d", "16 bits")].tolist() == [3.0, 2.0, 1.0, 1.0]
    html = table.to_html()
    assert html.count("font-weight: bold") == 1 and html.count("text-decoration: underline") == 1
    bold_ids = html.split("font-weight: bold")[0].rsplit("}", 1)[-1]
    assert "row2_col0" in bold_ids and "row3_col0" in bold_ids


def test_retrieval_table_lower_is_better_for_times_and_stacks_metrics():
    rows = [{"dataset": "d", "label": m, "bits": 16, "seed": 0, "mAP@ALL": v, "train_seconds": t}
            for m, v, t in (("a", 0.5, 10.0), ("b", 0.6, 20.0))]  # fmt: skip
    table = results.retrieval_table(rows, ["mAP@ALL", "train_seconds"], labels={"a": "A"})
    assert table.cells.index.tolist() == [("mAP@ALL (ties by index)", "A"), ("mAP@ALL (ties by index)", "b"),
                                          ("train seconds", "A"), ("train seconds", "b")]  # fmt: skip
    assert results.value_name("tie_aware_mAP@100") == "mAP@100 (tie-aware)"
    assert table.rank.iloc[:, 0].tolist() == [2.0, 1.0, 1.0, 2.0]
    assert table.cells.index.names == ["metric", "method"]


def test_retrieval_table_leaves_the_selected_epoch_unranked():
    """The selected epoch describes a run, it does not grade it: no bold best, no underlined second."""
    rows = [{"dataset": "d", "label": m, "bits": 16, "seed": 0, "mAP@ALL": v, "selected_epoch": e}
            for m, v, e in (("a", 0.5, 8), ("b", 0.6, 7))]  # fmt: skip
    table = results.retrieval_table(rows, ["mAP@ALL", "selected_epoch"])
    assert table.rank.iloc[:2, 0].tolist() == [2.0, 1.0] and table.rank.iloc[2:, 0].isna().all()
    assert table.cells.iloc[2:, 0].tolist() == ["8", "7"]
    html = table.to_html()
    assert html.count("font-weight: bold") == 1 and html.count("text-decoration: underline") == 1


def test_retrieval_table_rejects_rows_without_the_columns():
    with pytest.raises(ValueError, match="lack the column"):
        results.retrieval_table([{"dataset": "d", "method": "a", "bits": 16, "mAP@ALL": 0.5}])
    with pytest.raises(ValueError, match="rows is empty"):
        results.retrieval_table([])


def test_hamming_top_k_ranks_by_distance_with_ties_in_database_order():
    database = np.array([[1, 1, 1, 1], [-1, 1, 1, 1], [1, 1, 1, 1], [-1, -1, -1, -1], [1, -1, 1, 1]])
    indices, distances = results.hamming_top_k(np.array([[1, 1, 1, 1], [-1, -1, -1, -1]]), database, k=3)
    np.testing.assert_array_equal(indices, [[0, 2, 1], [3, 1, 4]])
    np.testing.assert_array_equal(distances, [[0, 0, 1], [0, 3, 3]])
    with pytest.raises(ValueError, match="k must lie in"):
        results.hamming_top_k(database[:1], database, k=6)


def test_report_configs_epochs_set_both_networks_unless_the_classifier_is_named():
    configs = pipeline.report_configs("quick", "digits-composite", ["mds", "shc"], [16, 32], [0, 1], "runs", epochs=3)
    assert len(configs) == 8 and {(c.epochs, c.classifier_epochs) for c in configs} == {(3, 3)}
    named = pipeline.report_configs("quick", "digits-composite", ["shc"], [16], [0], "runs", epochs=3,
                                    classifier_epochs=5)  # fmt: skip
    assert (named[0].epochs, named[0].classifier_epochs) == (3, 5)
    default = pipeline.report_configs("quick", "digits-composite", ["shc"], [16], [0], "runs")[0]
    from shc.presets import get_preset

    assert (default.epochs, default.classifier_epochs) == (get_preset("quick").base().epochs, 8)
    assert default.epochs == 4  # the quick preset's own (the README's main job within 12 minutes)


def test_similarity_variants_of_semantic_methods_get_their_own_stage_folders():
    default = pipeline.RunConfig(method="shc", bits=16, run_dir="r")
    stage3 = pipeline.stage_directories(default)["stage3"]
    assert stage3.parent == Path("r/digits-composite/seed0") and stage3.name.startswith("stage3-shc-16bit-")
    text = pipeline.stage_directories(default.replace(similarity="text"))
    assert text["stage2"].name.startswith("stage2-shc-text-16bit-") and text["stage1"].name.startswith("stage1-text-")
    # methods that never read S keep one folder whatever the source
    mds = default.replace(method="mds")
    assert pipeline.stage_directories(mds.replace(similarity="text"))["stage3"] == pipeline.stage_directories(mds)[
        "stage3"]
    assert results.run_label(default.replace(similarity="text")) == "shc (text S)"
    assert results.run_label(mds.replace(similarity="text")) == "mds"


# --------------------------------------------------------------------------------------
# Comparing similarity matrices (hand-computed)
# --------------------------------------------------------------------------------------

HAND_S = np.array([[1.0, 0.6, 0.2, -0.1], [0.6, 1.0, 0.6, 0.0], [0.2, 0.6, 1.0, 0.3], [-0.1, 0.0, 0.3, 1.0]])
HAND_COARSE = np.array([0, 0, 1, 1])


def test_hierarchy_agreement_hand_computed():
    # same-coarse pairs: (0,1)=.6, (2,3)=.3; others: .2, -.1, .6, 0.
    result = hierarchy_agreement(HAND_S, HAND_COARSE)
    assert result["within_mean"] == pytest.approx(0.45)
    assert result["between_mean"] == pytest.approx(0.175)
    assert result["gap"] == pytest.approx(0.275)
    # .6 beats .2, -.1, 0 and ties .6 (3.5 of 4); .3 beats .2, -.1, 0 (3 of 4): (3.5 + 3) / 8
    assert result["roc_auc"] == pytest.approx(6.5 / 8)
    # nearest other class: 0 -> 1 (same), 1 -> 0 (tie with 2, first wins; same), 2 -> 1 (other), 3 -> 2 (same)
    assert result["top1_same_coarse"] == pytest.approx(0.75)
    assert result["top1_chance"] == pytest.approx(1 / 3)  # one of the 3 other classes shares the coarse class


def test_hierarchy_agreement_is_undefined_without_both_kinds_of_pairs():
    flat = hierarchy_agreement(HAND_S, [0, 0, 0, 0])
    assert np.isnan(flat["roc_auc"]) and np.isnan(flat["between_mean"]) and flat["top1_same_coarse"] == 1.0
    with pytest.raises(ValueError, match="one coarse class per class"):
        hierarchy_agreement(HAND_S, [0, 1])


def test_similarity_correlations_match_scipy_on_the_off_diagonal_pairs():
    other = similarity_from_labels(4, HAND_COARSE)
    table = similarity_correlations({"hand": HAND_S, "labels": other})
    rows, columns = np.triu_indices(4, k=1)
    assert table.loc["hand", "labels"] == pytest.approx(spearmanr(HAND_S[rows, columns], other[rows, columns])[0])
    assert table.loc["hand", "hand"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least two"):
        similarity_correlations({"hand": HAND_S})


def test_most_similar_pairs_sorted_with_ties_in_class_order():
    table = most_similar_pairs(HAND_S, 3, ["a", "b", "c", "d"], HAND_COARSE)
    assert list(zip(table["class_a"], table["class_b"])) == [(0, 1), (1, 2), (2, 3)]
    assert table["name_b"].tolist() == ["b", "c", "d"]
    assert table["similarity"].tolist() == pytest.approx([0.6, 0.6, 0.3])
    assert table["same_coarse"].tolist() == [True, False, True]
    with pytest.raises(ValueError, match="n must be an integer in \\[1, 6\\]"):
        most_similar_pairs(HAND_S, 7)


# --------------------------------------------------------------------------------------
# New figures
# --------------------------------------------------------------------------------------


def _history_frame() -> pd.DataFrame:
    rows = []
    for bits in (16, 32):
        for method in ("mds", "shc"):
            for seed in (0, 1):
                for epoch in (1, 2, 3):
                    evaluated = epoch != 2
                    rows.append({"label": method, "bits": bits, "seed": seed, "epoch": epoch, "loss": 1.0 / epoch,
                                 "mAP@100": 0.1 * epoch if evaluated else np.nan,
                                 "mAP@ALL": 0.05 * epoch + 0.01 * seed if evaluated else np.nan})  # fmt: skip
    return pd.DataFrame(rows)


def test_plot_convergence_has_one_row_per_code_length_and_averages_seeds(tmp_path):
    fig = plots.plot_convergence(_history_frame())
    axes = [a for a in fig.axes if a.get_title()]
    assert len(axes) == 2 * 3  # 2 code lengths x (loss, mAP@100, mAP@ALL)
    panel = next(a for a in axes if a.get_title() == "32 bits: validation mAP@ALL")
    shc_line = next(line for line in panel.get_lines() if line.get_label() == "shc")
    np.testing.assert_allclose(shc_line.get_xdata(), [1, 3])  # epoch 2 was not evaluated
    np.testing.assert_allclose(shc_line.get_ydata(), [0.055, 0.155])  # mean over seeds 0 and 1
    plots.save_figure(fig, tmp_path / "convergence")
    with pytest.raises(ValueError, match="columns"):
        plots.plot_convergence(_history_frame().drop(columns="bits"))


def test_a_seed_band_does_not_go_below_zero_where_no_run_does():
    """A reader audit of `standard-fine`'s convergence figure: three seeds whose loss ratio at one epoch is 0.9, 0.05
    and 0.05 have mean - std = -0.16, a band under 0 where no run went (a loss is not negative). The band is mean -+
    std cut at 0 (hand values), on the convergence figure and on plot_curves' seed bands alike; values that do go
    below 0 keep their whole band."""
    rows = [{"label": "csq", "bits": 16, "seed": seed, "epoch": epoch, "loss": loss, "mAP@ALL": 0.5}
            for seed, ratios in enumerate(([1.0, 0.9], [1.0, 0.05], [1.0, 0.05]))
            for epoch, loss in zip((1, 2), ratios)]
    fig = plots.plot_convergence(pd.DataFrame(rows), metrics=["mAP@ALL"])
    panel = next(a for a in fig.axes if a.get_title() == "16 bits: training loss / epoch 1")
    band = np.concatenate([path.vertices for collection in panel.collections for path in collection.get_paths()])
    mean, spread = np.mean([0.9, 0.05, 0.05]), np.std([0.9, 0.05, 0.05], ddof=1)
    assert mean - spread < 0  # what the old band drew
    at_two = band[band[:, 0] == 2, 1]  # epoch 2 (epoch 1's band has no width: every ratio is 1)
    assert at_two.min() == 0 and at_two.max() == pytest.approx(mean + spread)
    for shift, floor in ((0.0, 0.0), (-0.5, mean - spread - 0.5)):  # shifted below 0: the band is whole
        runs = np.array([[1.0, 0.9], [1.0, 0.05], [1.0, 0.05]]) + shift
        curves = plots.plot_curves(np.array([1, 2]), {"csq": runs}, xlabel="epoch", ylabel="value")
        band = np.concatenate([path.vertices for collection in curves.axes[0].collections
                               for path in collection.get_paths()])
        assert band[band[:, 0] == 2, 1].min() == pytest.approx(floor)
    import warnings

    from shc.plots.curves import _band

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NaN values (epochs never evaluated) are left out, without a warning
        lower, upper = _band(np.array([0.1]), np.array([0.2]), np.array([np.nan, 0.3, np.nan]))
        assert lower == pytest.approx(0.0) and upper == pytest.approx(0.3)
        lower, _ = _band(np.array([0.1]), np.array([0.2]), np.array([np.nan]))
        assert lower == pytest.approx(-0.1)


def test_plot_center_history_draws_every_record_and_the_target_distance():
    frame = pd.DataFrame({"cycle": [0, 1, 2], "bits": 16, "objective": [3.0, 2.0, 1.5], "s_loss": [0.3, 0.2, 0.15],
                          "d_min": [4, 4, 5], "violation": [0, 0, 0], "proxy_residual": [np.nan, 0.5, 0.4],
                          "slack_residual": [np.nan, 2.0, 1.0], "gv_distance": 4})  # fmt: skip
    fig = plots.plot_center_history(frame)
    assert isinstance(fig, Figure)
    d_min_axes = next(a for a in fig.axes if a.get_title() == "d_min (bits)")
    ys = [line.get_ydata() for line in d_min_axes.get_lines()]
    assert any(np.array_equal(y, [4, 4, 5]) for y in ys) and any(np.allclose(y, 4) and len(y) == 2 for y in ys)
    # pairs closer than d are a count: whole-number ticks from 0 up, even when every cycle is at 0 (the axis had ticks
    # from -0.04 to 0.04), and a line at 0 above the frame's edge
    for violation in ([0, 0, 0], [7, 3, 0]):
        axes = next(a for a in plots.plot_center_history(frame.assign(violation=violation)).axes
                    if a.get_title() == "pairs closer than d")
        low, high = axes.get_ylim()
        shown = [tick for tick in axes.get_yticks() if low <= tick <= high]
        assert low < 0 and high >= max(1, max(violation)) and shown[0] == 0
        assert all(tick == int(tick) for tick in shown)
    with pytest.raises(ValueError, match="lacks the columns"):
        plots.plot_center_history(frame.drop(columns="slack_residual"))


def test_plot_search_history_draws_the_seed_mean_per_code_length_and_says_whether_d_held():
    frame = pd.DataFrame({"cycle": [0, 1, 2] * 3, "seed": [0, 0, 0, 1, 1, 1, 0, 0, 0],
                          "bits": [16] * 6 + [32] * 3, "s_loss": [0.3, 0.2, 0.1, 0.5, 0.4, 0.3, 0.2, 0.2, 0.1],
                          "d_min": [4, 5, 5, 4, 4, 3, 9, 9, 9], "gv_distance": [4] * 6 + [9] * 3})
    fig = plots.plot_search_history(frame)
    lines = {line.get_label(): line.get_ydata() for line in fig.axes[0].get_lines()}
    np.testing.assert_allclose(lines["16 bits"], [0.4, 0.3, 0.2])  # mean of seeds 0 and 1
    np.testing.assert_allclose(lines["32 bits"], [0.2, 0.2, 0.1])
    with pytest.raises(ValueError, match="lacks the columns"):
        plots.plot_search_history(frame.drop(columns="seed"))
    # d from the history's own gv_distance column: seed 1's last 16-bit record fell to 3 < 4
    assert findings.record_distance_finding(frame) == "d_min fell below d at 1 of 9 records."
    assert findings.record_distance_finding(frame, {16: 3, 32: 9}) == "d_min \u2265 d held at all 9 records."
    with pytest.raises(ValueError, match="pass targets"):
        findings.record_distance_finding(frame.drop(columns="gv_distance"))


def test_similarity_comparison_figures(tmp_path):
    matrices = {"hand": HAND_S, "labels": similarity_from_labels(4, HAND_COARSE)}
    fig = plots.plot_similarity_comparison(matrices)
    assert [a.get_title() for a in fig.axes[:2]] == ["hand", "labels"]
    grouped = plots.plot_similarity_by_group(matrices, HAND_COARSE)
    assert grouped.axes[0].get_title(loc="left") == "hand\nROC-AUC 0.812"  # 6.5 / 8 = 0.8125, shown as 0.812
    assert grouped.axes[1].get_title(loc="left") == "labels\nROC-AUC 1.000"
    plots.save_figure(grouped, tmp_path / "by_group")
    with pytest.raises(ValueError, match="same classes"):
        plots.plot_similarity_comparison({"a": HAND_S, "b": np.eye(3)})


def test_every_generated_page_works_offline_is_titled_and_shows_no_stderr_or_reprs(batch):
    from shc.offline import offline_problems

    assert offline_problems(batch["preset_dir"]) == {}, "a page loads something from the network"
    pages = sorted(batch["preset_dir"].rglob("*-report.html"))
    assert len(pages) == len(NOTEBOOKS)
    for page in pages:
        text = page.read_text()
        title = re.search(r"<title>(.*?)</title>", text, flags=re.S).group(1).strip()
        assert title not in ("Notebook", "") and "$" not in title, f"{page.name}: title {title!r}"
        assert 'data-mime-type="application/vnd.jupyter.stderr"' not in text, f"{page.name} shows stderr"
        assert "np.float64(" not in text and "np.int64(" not in text, f"{page.name} shows numpy reprs"
        assert "PosixPath(" not in text, f"{page.name} shows a path repr"


def test_the_report_checker_finds_nothing_in_the_tiny_reports(batch):
    from shc.reports.check import check_report_folder

    problems = check_report_folder(batch["preset_dir"])
    assert problems == [], "\n".join(map(str, problems))


def test_every_csv_is_linked_from_its_page_and_the_index_and_every_table_is_in_the_bundle(batch, capsys):
    import zipfile

    from shc.reports.bundle import main as bundle_main

    preset_dir = batch["preset_dir"]
    index = (preset_dir / "index.html").read_text(encoding="utf-8")
    assert not (preset_dir / reports.BUNDLE_FILE).exists()  # a batch without --bundle writes none (issue 38) ...
    assert reports.BUNDLE_FILE not in index
    assert bundle_main([str(preset_dir)]) == 0  # ... one is written on request, for a folder already built
    with zipfile.ZipFile(preset_dir / reports.BUNDLE_FILE) as archive:
        bundled = set(archive.namelist())
    for stem in NOTEBOOKS:
        folder = _report(batch, stem)
        page = (folder / f"{stem}-report.html").read_text(encoding="utf-8")
        page_links = set(re.findall(r'href="([^"]+)"', page))
        assert {"../index.html", "run.json"} <= page_links and f"../{reports.BUNDLE_FILE}" not in page_links, stem
        record = json.loads((folder / "run.json").read_text())
        csvs = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                      if p.name.endswith(plots.DATA_SUFFIXES))
        assert csvs and sorted(record["files"]["tables"] + record["files"]["figure_data"]) == csvs, stem
        for name in csvs:
            assert name in page_links, (stem, name)
            assert f'href="{stem}/{name}"' in index, (stem, name)
            # the bundle holds the tables; the figure data stay beside their figures (not a second copy)
            assert (f"tiny/{stem}/{name}" in bundled) == ("figures" not in name.split("/")[:-1]), (stem, name)
        assert f"tiny/{stem}/run.json" in bundled
        assert not any(os.path.isabs(str(value)) for value in record["parameters"].values()), record["parameters"]
        assert {"notebook", "html"} <= set(record["local_files"]) and "notebook" not in record["files"]
    # the next batch into the folder without --bundle removes the zip, which would describe the pages before it
    log: list[str] = []
    results = reports.run_reports("tiny", only=list(NOTEBOOKS), output_root=preset_dir.parent,
                                  run_root=batch["run_dir"].parent, skip_existing=True, compute=False, log=log.append)
    assert [result.status for result in results] == ["skipped"] * len(NOTEBOOKS), log
    assert not (preset_dir / reports.BUNDLE_FILE).exists()
    assert bundle_main([str(batch["run_dir"])]) == 2  # one line through run_cli, not a traceback
    assert "is not a built report folder" in capsys.readouterr().err


def test_smoke_pages_say_so_and_evidence_presets_do_not(batch):
    notice = "Smoke scale, not evidence."
    assert notice in (batch["preset_dir"] / "index.html").read_text(encoding="utf-8")
    for page in batch["preset_dir"].rglob("*-report.html"):
        assert notice in page.read_text(encoding="utf-8"), page.name
    assert reports.smoke_notice("standard") is None and reports.smoke_notice("quick")


def test_no_figure_is_shown_twice_and_each_has_its_own_alt_text(batch):
    for page in batch["preset_dir"].rglob("*-report.html"):
        text = page.read_text(encoding="utf-8")
        # whole images (a saved figure is shown from its file, any other embedded): the same file or bytes twice
        images = re.findall(r'<img\b[^>]*src="(figures/[^"]+|data:image/png;base64,[^"]+)"', text)
        assert len(images) == len(set(images)), f"{page.name} shows a figure twice"
        assert all((page.parent / src).is_file() for src in images if src.startswith("figures/")), page.name
        alts = re.findall(r'<img\b[^>]*alt="([^"]*)"', text)
        assert len(alts) == len(images) and all(len(alt) > 20 for alt in alts), (page.name, alts)
