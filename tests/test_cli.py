"""The `shc` command end to end on a tiny pipeline run: export a split, encode it, index it, search it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from shc.cli import main
from shc.data.__main__ import main as data_main
from shc.pipeline import RunConfig, run, stage_directories
from shc.retrieval import HashIndex, load_encoder

OPTIONS = {"num_classes": 10, "train_per_class": 20, "val_per_class": 5, "query_per_class": 3, "database_per_class": 12}


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    config = RunConfig(method="csq", bits=16, epochs=2, eval_every=1, dataset_options=OPTIONS, run_dir=str(root / "runs"))
    run(config)
    stage3 = stage_directories(config)["stage3"]
    images = root / "database"
    assert data_main(["export-images", "digits-composite", "--split", "database", "--out", str(images),
                      "--option", "num_classes=10", "--option", "train_per_class=20", "--option", "val_per_class=5",
                      "--option", "query_per_class=3", "--option", "database_per_class=12"]) == 0
    codes = root / "codes.npz"
    assert main(["encode", "--run", str(stage3), "--images", str(images), "--out", str(codes), "--quiet"]) == 0
    return config, stage3, images, codes, root


def test_encoded_export_equals_the_pipeline_database_codes(tiny_run):
    _, stage3, images, codes, _ = tiny_run
    stored = np.load(stage3 / "codes.npz")
    with np.load(codes) as archive:
        paths, encoded = archive["paths"], archive["codes"]
    assert len(paths) == len(stored["database_codes"]) == 10 * 12
    positions = np.array([int(Path(p).stem) for p in paths])  # export names files by split position
    np.testing.assert_array_equal(encoded[np.argsort(positions)], stored["database_codes"])
    # class sub-folders carry the labels: the folder of each file is its class name
    names = load_encoder(stage3).class_names
    assert [Path(p).parent.name for p in paths] == [names[i] for i in stored["database_labels"][positions]]


def test_search_prints_the_exact_ranking_and_writes_an_offline_gallery(tiny_run, capsys):
    _, stage3, images, codes, root = tiny_run
    index_path = root / "db.shcidx"
    assert main(["index", str(codes), "--out", str(index_path)]) == 0
    with np.load(codes) as archive:
        paths, encoded = archive["paths"], archive["codes"]
    query = images / paths[7]
    capsys.readouterr()
    assert main(["search", "--index", str(index_path), "--run", str(stage3), "--image", str(query), "-k", "5",
                 "--html", str(root / "out.html")]) == 0
    lines = capsys.readouterr().out.splitlines()
    table = [line.split() for line in lines[2:7]]
    # brute force: distances to every indexed code, ties by position (the index ids)
    distances = (16 - encoded.astype(int) @ encoded[7].astype(int)) // 2
    order = np.lexsort((np.arange(len(distances)), distances))[:5]
    assert [int(row[0]) for row in table] == [1, 2, 3, 4, 5]
    assert [int(row[1]) for row in table] == distances[order].tolist()
    assert [row[2] for row in table] == paths[order].tolist()
    assert table[0][1] == "0"  # the query itself is indexed
    page = (root / "out.html").read_text()
    assert page.count("data:image/png;base64,") == 6 and "http" not in page


def test_unreadable_files_are_skipped_and_counted(tiny_run, tmp_path, capsys):
    _, stage3, images, _, _ = tiny_run
    folder = tmp_path / "mixed" / "nested"
    folder.mkdir(parents=True)
    Image.open(next(images.rglob("*.png"))).save(folder / "good.jpg")
    (folder / "broken.png").write_bytes(b"not an image")
    (folder / "notes.txt").write_text("ignored: not an image suffix")
    out = tmp_path / "codes.npz"
    assert main(["encode", "--run", str(stage3), "--images", str(tmp_path / "mixed"), "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "skipped 1 unreadable file" in captured.err and "broken.png" in captured.err
    with np.load(out) as archive:
        assert archive["paths"].tolist() == ["nested/good.jpg"] and archive["codes"].shape == (1, 16)


def test_run_root_instead_of_stage3_folder_is_refused_with_the_folders_to_use(tiny_run, capsys):
    config, stage3, images, _, root = tiny_run
    assert main(["encode", "--run", config.run_dir, "--images", str(images), "--out", str(root / "x.npz")]) == 2
    err = capsys.readouterr().err
    assert "encoder.json" in err and str(stage3) in err


def test_index_of_other_bits_is_refused(tiny_run, tmp_path, capsys):
    _, stage3, images, _, _ = tiny_run
    other = tmp_path / "other.shcidx"
    HashIndex(32).add(np.ones((3, 32), np.int8)).save(other)
    query = next(images.rglob("*.png"))
    assert main(["search", "--index", str(other), "--run", str(stage3), "--image", str(query)]) == 2
    assert "32-bit codes but 16-bit" in capsys.readouterr().err


def test_python_dash_m_shc_runs_the_same_command():
    result = subprocess.run([sys.executable, "-m", "shc", "--help"], capture_output=True, text=True, check=True)
    assert "encode" in result.stdout and "search" in result.stdout
