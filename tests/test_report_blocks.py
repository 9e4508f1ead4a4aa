"""The blocks report pages share (shc.reports.blocks): each saves the files the pages link under the names they had,
with the numbers of the runs table, and returns what the page shows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from shc import results
from shc.reports import blocks


def _runs(rows: str = "label") -> pd.DataFrame:
    """Two methods x two code lengths x two seeds; every metric = method offset + bits/100 + seed/1000."""
    generator = [(m, q, s) for m in ("shc", "mds") for q in (16, 32) for s in (0, 1)]
    frame = pd.DataFrame(generator, columns=[rows, "bits", "seed"]).assign(dataset="toy")
    if rows != "label":
        frame["label"] = frame[rows]
    value = np.array([(0.5 if m == "shc" else 0.3) + q / 100 + s / 1000 for m, q, s in generator])
    for offset, key in enumerate((*results.REPORTED_MAP_KEYS, *results.REACH_KEYS)):
        frame[key] = value + offset / 10_000  # each metric its own numbers: a table under another's name shows
    return frame


def test_map_tables_save_one_table_per_metric_and_the_numbers_behind_them(tmp_path):
    runs = _runs()
    tables = blocks.map_tables(runs, tmp_path, ["mds", "shc"])
    assert list(tables) == list(results.REPORTED_MAP_KEYS)
    for metric, table in tables.items():
        saved = pd.read_csv(tmp_path / f"{metric.replace('@', '_at_')}.csv", index_col=0, header=[0, 1])
        assert list(saved.index) == ["mds", "shc"]  # the order given, not the runs'
        assert saved.loc["shc", ("toy", "32 bits")] == table.cells.loc["shc", ("toy", "32 bits")]
        offset = results.REPORTED_MAP_KEYS.index(metric) / 10_000
        assert table.mean.loc["shc", ("toy", "16 bits")] == pytest.approx(0.5 + 0.16 + 0.0005 + offset)
        assert float(saved.loc["shc", ("toy", "16 bits")].split(" ± ")[0]) == pytest.approx(0.6605 + offset, abs=1e-4)
    summary = pd.read_csv(tmp_path / "map_summary.csv")
    per_seed = pd.read_csv(tmp_path / "map_per_seed.csv")
    assert len(summary) == 2 * 2 * len(results.REPORTED_MAP_KEYS)
    assert len(per_seed) == 2 * len(summary)
    at = summary[(summary["method"] == "mds") & (summary["bits"] == 32) & (summary["metric"] == "mAP@ALL")]
    offset = results.REPORTED_MAP_KEYS.index("mAP@ALL") / 10_000
    assert float(at["mean"].iloc[0]) == pytest.approx(0.3 + 0.32 + 0.0005 + offset)


def test_reach_and_unseen_tables_take_the_pages_row_and_names(tmp_path):
    runs = _runs("method")
    reach = blocks.reach_table(runs, tmp_path, ["shc", "mds"], row="method", labels={"shc": "SHC"})
    assert list(reach.cells.index.get_level_values(-1).unique()) == ["SHC", "mds"]
    saved = pd.read_csv(tmp_path / "reachability.csv", index_col=[0, 1], header=[0, 1])
    assert len(saved) == 2 * len(results.REACH_KEYS) and list(saved.index.names) == ["metric", "method"]
    first = len(results.REPORTED_MAP_KEYS) / 10_000  # the first reach measure's offset
    assert saved.iloc[0, 1] == reach.cells.iloc[0, 1] == f"{0.8205 + first:.4f} ± 0.0007"  # shc's first, 32 bits
    assert blocks.unseen_table(runs, tmp_path / "u", ["shc"], []) is None
    assert not (tmp_path / "u").exists()  # nothing saved for a grid without held-out classes
    unseen = blocks.unseen_table(runs, tmp_path, ["shc", "mds"], ["mAP@ALL"], row="method")
    assert (tmp_path / "unseen_pairings.csv").is_file()
    offset = results.REPORTED_MAP_KEYS.index("mAP@ALL") / 10_000
    assert unseen.mean.loc["mds", ("toy", "16 bits")] == pytest.approx(0.3 + 0.16 + 0.0005 + offset)


def test_curve_figures_are_saved_under_the_pages_names_with_the_k_data_once(tmp_path):
    pr = pd.DataFrame({"method": "shc", "bits": 16, "seed": 0, "rank": [1, 2, 3], "recall": [0.0, 0.5, 1.0],
                       "precision": [1.0, 0.8, 0.5]})
    figures = blocks.pr_figures({"rank": pr}, [16], tmp_path)
    assert len(figures) == 1 and (tmp_path / "pr_curve_rank_16bits.png").is_file()
    k = pd.DataFrame({"method": "shc", "bits": [16] * 3 + [32] * 3, "seed": 0, "k": [1, 5, 10] * 2,
                      "precision": [1.0, 0.8, 0.123456789] * 2, "recall": [0.1, 0.4, 0.7] * 2})
    shown, files = blocks.precision_recall_at_k(k, [16, 32], tmp_path, digits=8)
    assert len(shown) == 4 and sorted(files) == [16, 32]
    for q in (16, 32):
        assert files[q].name.startswith(f"precision_at_k_{q}bits.csv")
        assert (tmp_path / f"recall_at_k_{q}bits.png").is_file()
        assert not list(tmp_path.glob(f"recall_at_k_{q}bits.csv*"))  # the recall figure reads the precision file
        assert pd.read_csv(files[q])["precision"].iloc[-1] == pytest.approx(0.123456789, abs=1e-9)
