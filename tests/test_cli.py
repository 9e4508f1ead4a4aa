"""The `shc` command end to end on a tiny pipeline run: export a split, encode it, index it, search it."""

from __future__ import annotations

import json
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


def test_export_images_of_a_run_are_its_split_and_a_partial_option_list_is_not(tiny_run, tmp_path, capsys):
    """``--run`` takes every dataset option from the run: the splits are drawn per class one after the other, so the
    documented ``--option database_per_class=N`` alone exported other images than the run's database (a probe)."""
    _, stage3, images, _, _ = tiny_run
    assert data_main(["export-images", "--run", str(stage3), "--out", str(tmp_path / "by-run")]) == 0
    exported = sorted(path.relative_to(images) for path in images.rglob("*.png"))
    assert exported == sorted(path.relative_to(tmp_path / "by-run") for path in (tmp_path / "by-run").rglob("*.png"))
    assert all(np.array_equal(np.asarray(Image.open(images / path)), np.asarray(Image.open(tmp_path / "by-run" / path)))
               for path in exported)
    partial = ["--option", "num_classes=10", "--option", "database_per_class=12"]  # the training split's size left out
    assert data_main(["export-images", "digits-composite", *partial, "--out", str(tmp_path / "partial")]) == 0
    by_position = {path.stem: np.asarray(Image.open(path)) for path in (tmp_path / "partial").rglob("*.png")}
    assert len(by_position) == len(exported)
    assert not all(np.array_equal(np.asarray(Image.open(images / path)), by_position[path.stem]) for path in exported)
    capsys.readouterr()
    for argv, words in ((["digits-composite", "--run", str(stage3)], "drop DATASET"),
                        (["--run", str(stage3), "--seed", "1"], "drop --seed"), ([], "give a DATASET")):
        with pytest.raises(SystemExit) as stop:
            data_main(["export-images", *argv, "--out", str(tmp_path / "refused")])
        assert stop.value.code == 2 and words in capsys.readouterr().err
    assert data_main(["export-images", "--run", str(tmp_path), "--out", str(tmp_path / "refused")]) == 2
    assert "has no config.json; give a run's stage folder" in capsys.readouterr().err
    assert data_main(["export-images", "--run", str(tmp_path / "nope"), "--out", str(tmp_path / "refused")]) == 2
    assert f"--run {tmp_path / 'nope'} does not exist" in capsys.readouterr().err  # was "has no config.json"
    # the same dataset, split and seed with other options: the refusal names the options, not the values asked for
    other = ["--option", "num_classes=10", "--option", "database_per_class=11"]
    assert data_main(["export-images", "digits-composite", *other, "--out", str(tmp_path / "partial")]) == 2
    line = capsys.readouterr().err
    assert "options {'database_per_class': 12, 'num_classes': 10} where this export's is {'num_classes': 10, " in line
    assert "dataset 'digits-composite'" not in line


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
    for path in paths[order]:  # captioned with the class folder, as the terminal prints them
        assert f"<br>{path}</figcaption>" in page and f'alt="{path}"' in page


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


# --------------------------------------------------------------------------------------------
# Provenance: codes know which run and which weights made them (issue 24)
# --------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def other_run(tiny_run):
    """A second finished run with the same code length (another seed): same shape of codes, other weights."""
    config = tiny_run[0].replace(seed=1)
    run(config)
    return stage_directories(config)["stage3"]


def _index_of(stage3: Path, images: Path, folder: Path, *extra: str) -> Path:
    codes, index = folder / "codes.npz", folder / "db.shcidx"
    assert main(["encode", "--run", str(stage3), "--images", str(images), "--out", str(codes), "--quiet",
                 *extra]) == 0
    assert main(["index", str(codes), "--out", str(index)]) == 0
    return index


def test_codes_and_index_record_the_run_and_a_digest_of_its_weights(tiny_run, tmp_path):
    import torch

    from shc.retrieval import weights_digest

    _, stage3, images, _, _ = tiny_run
    index_path = _index_of(stage3, images, tmp_path)
    recorded = HashIndex.load(index_path).metadata["provenance"]
    with np.load(tmp_path / "codes.npz") as archive:
        assert json.loads(str(archive["provenance"])) == recorded
    assert recorded["run"] == str(stage3.resolve()) and recorded["identity"] == stage3.name.rsplit("-", 1)[1]
    assert recorded["weights"] == "train/best.pt" and recorded["finished"] is True
    state = torch.load(stage3 / "train" / "best.pt", weights_only=True)["model"]
    assert recorded["weights_sha256"] == weights_digest(state)
    name = next(key for key, value in state.items() if value.is_floating_point())
    first = (0,) * state[name].ndim
    state[name][first] = torch.nextafter(state[name][first], torch.tensor(np.inf))  # one ulp of one weight
    assert weights_digest(state) != recorded["weights_sha256"]


def test_codes_record_their_arithmetic_and_search_notes_another(tiny_run, tmp_path, capsys):
    """Codes encoded in bf16 on one CPU and a query encoded in fp32 on another come from the same weights but may
    differ in a bit whose output is near 0; the codes now say how they were made, and search says when it differs."""
    import torch

    from shc.devices import resolve_precision
    from shc.retrieval import arithmetic_note

    _, stage3, images, _, _ = tiny_run
    index_path = _index_of(stage3, images, tmp_path)
    index = HashIndex.load(index_path)
    recorded = index.metadata["provenance"]
    here = resolve_precision("auto", torch.device("cpu"))
    assert (recorded["device"], recorded["precision"]) == ("cpu", here)
    encoder = load_encoder(stage3, device="cpu")
    assert arithmetic_note(recorded, encoder, "db") is None
    assert arithmetic_note({k: v for k, v in recorded.items() if k != "precision"}, encoder, "db") is None  # older
    other = "fp32" if here == "bf16" else "bf16"
    index.metadata = {**index.metadata, "provenance": {**recorded, "precision": other}}
    moved = tmp_path / "other.shcidx"
    index.save(moved)
    query = next(images.rglob("*.png"))
    capsys.readouterr()
    assert main(["search", "--index", str(moved), "--run", str(stage3), "--image", str(query), "--device", "cpu"]) == 0
    err = capsys.readouterr().err
    assert f"made on cpu in {other}" in err and f"encoded on cpu in {here}" in err and "near 0" in err, err


def test_a_run_trained_in_fp16_on_a_gpu_encodes_on_a_cpu_in_its_arithmetic(tiny_run, tmp_path):
    """An audit: encoder.json of a GPU run records fp16, which a CPU has no arithmetic for; load_encoder refused it
    with advice ("use bf16 or fp32") that neither it nor shc encode could take. It now encodes in the CPU's auto
    arithmetic, and the codes' provenance says which (arithmetic_note compares it with the codes it searches)."""
    import shutil

    import torch

    from shc.devices import resolve_precision
    from shc.retrieval import arithmetic_note
    from shc.retrieval.encoder import ENCODER_FILE

    _, stage3, images, _, _ = tiny_run
    gpu_run = tmp_path / stage3.name
    shutil.copytree(stage3, gpu_run)
    record = json.loads((gpu_run / ENCODER_FILE).read_text())
    (gpu_run / ENCODER_FILE).write_text(json.dumps({**record, "precision": "fp16"}))
    encoder = load_encoder(gpu_run, device="cpu")
    here = resolve_precision("auto", torch.device("cpu"))
    assert encoder.provenance["precision"] == here
    query = next(images.rglob("*.png"))
    codes = encoder.encode(torch.stack([encoder.load_image(query)]))
    np.testing.assert_array_equal(codes, load_encoder(stage3, device="cpu").encode(
        torch.stack([encoder.load_image(query)])))  # the same weights, the same CPU arithmetic
    note = arithmetic_note({"device": "cuda", "precision": "fp16"}, encoder, "db")
    assert "made on cuda in fp16" in note and f"encoded on cpu in {here}" in note


def test_search_refuses_an_index_encoded_by_another_run_naming_both(tiny_run, other_run, tmp_path, capsys):
    _, stage3, images, _, _ = tiny_run
    index_path = _index_of(stage3, images, tmp_path)
    query = next(images.rglob("*.png"))
    capsys.readouterr()
    assert main(["search", "--index", str(index_path), "--run", str(other_run), "--image", str(query)]) == 2
    err = capsys.readouterr().err
    assert str(stage3.resolve()) in err and str(other_run.resolve()) in err and "another run" in err
    assert "--force" in err and len(err.strip().splitlines()) == 1
    assert main(["search", "--index", str(index_path), "--run", str(other_run), "--image", str(query),
                 "--force"]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "--force" in captured.err and "rank" in captured.out


def test_encode_refuses_an_unfinished_run_unless_asked_and_records_it(tiny_run, tmp_path, capsys):
    import shutil

    _, stage3, images, _, _ = tiny_run
    unfinished = tmp_path / stage3.name
    shutil.copytree(stage3, unfinished)
    (unfinished / "metrics.json").unlink()  # what an interrupted training leaves
    out = tmp_path / "codes.npz"
    capsys.readouterr()
    assert main(["encode", "--run", str(unfinished), "--images", str(images), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "has not finished training" in err and "--allow-unfinished" in err and not out.exists()
    assert main(["encode", "--run", str(unfinished), "--images", str(images), "--out", str(out), "--quiet",
                 "--allow-unfinished"]) == 0
    assert "has not finished" in capsys.readouterr().err
    with np.load(out) as archive:
        assert json.loads(str(archive["provenance"]))["finished"] is False


def test_encode_refuses_a_finished_run_whose_selected_weights_are_gone(tiny_run, tmp_path, capsys):
    """A finished run without train/best.pt was encoded with last.pt, the last epoch's weights, silently: codes that
    differ from the run's own (a reliability audit, 2026-12-03). Refused now, with the selected epoch named;
    --allow-unfinished encodes with last.pt and records it."""
    import shutil

    _, stage3, images, _, _ = tiny_run
    copy = tmp_path / stage3.name
    shutil.copytree(stage3, copy)
    (copy / "train" / "best.pt").unlink()
    selected = json.loads((copy / "metrics.json").read_text())["selected_epoch"]
    out = tmp_path / "codes.npz"
    capsys.readouterr()
    assert main(["encode", "--run", str(copy), "--images", str(images), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"best.pt (the weights of the selected epoch {selected}) is missing" in err and not out.exists()
    assert main(["encode", "--run", str(copy), "--images", str(images), "--out", str(out), "--quiet",
                 "--allow-unfinished"]) == 0
    with np.load(out) as archive:
        assert json.loads(str(archive["provenance"]))["weights"] == "train/last.pt"


def test_codes_of_an_interrupted_run_are_refused_once_it_finished_with_other_weights(tiny_run, tmp_path, capsys):
    """The issue's case: encode a run interrupted mid-training, let it finish (its best.pt changes), then search
    its old index with the same --run: the weights differ, so the search is refused instead of answered."""
    import shutil

    import torch

    _, stage3, images, _, _ = tiny_run
    copy = tmp_path / stage3.name
    shutil.copytree(stage3, copy)
    metrics = (copy / "metrics.json").read_bytes()
    (copy / "metrics.json").unlink()
    best = copy / "train" / "best.pt"
    finished_weights = best.read_bytes()
    checkpoint = torch.load(best, weights_only=True)
    checkpoint["model"] = {key: value * 0.5 if value.is_floating_point() else value
                           for key, value in checkpoint["model"].items()}  # an earlier state of training
    torch.save(checkpoint, best)
    index_path = _index_of(copy, images, tmp_path, "--allow-unfinished")
    best.write_bytes(finished_weights)  # training resumed and finished
    (copy / "metrics.json").write_bytes(metrics)
    query = next(images.rglob("*.png"))
    capsys.readouterr()
    assert main(["search", "--index", str(index_path), "--run", str(copy), "--image", str(query)]) == 2
    err = capsys.readouterr().err
    assert "other weights of the run" in err and "unfinished" in err


def test_verify_provenance_is_the_helper_for_hashindex_users(tiny_run, other_run, tmp_path):
    from shc.retrieval import verify_provenance

    _, stage3, images, _, _ = tiny_run
    index = HashIndex.load(_index_of(stage3, images, tmp_path))
    recorded = index.metadata["provenance"]
    assert verify_provenance(recorded, load_encoder(stage3), "db") is None
    with pytest.raises(ValueError, match="force=True"):
        verify_provenance(recorded, load_encoder(other_run), "db")
    assert "another run" in verify_provenance(recorded, load_encoder(other_run), "db", force=True)
    with pytest.raises(ValueError, match="does not record which network"):
        verify_provenance(None, load_encoder(stage3), "db")


def test_images_of_another_size_are_encoded_with_a_warning_that_counts_them(tiny_run, tmp_path, capsys):
    """A digits composite is 8x16 (height x width); a 28x28 image and a 16x32 one are resized to it, the square one
    to another aspect ratio. Both are counted, by size, in the warning; an image of the native size is not."""
    _, stage3, images, _, _ = tiny_run
    folder = tmp_path / "sizes"
    folder.mkdir()
    native = Image.open(next(images.rglob("*.png")))
    assert native.size == (16, 8)
    native.save(folder / "native.png")
    native.resize((28, 28)).save(folder / "square.png")
    native.resize((32, 16)).save(folder / "double.png")
    capsys.readouterr()
    assert main(["encode", "--run", str(stage3), "--images", str(folder), "--out", str(tmp_path / "c.npz"),
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "2 image(s) were not 16x8 pixels" in err and "28x28 (1)" in err and "32x16 (1)" in err
    assert "1 of them were stretched to another aspect ratio" in err
    assert main(["encode", "--run", str(stage3), "--images", str(images), "--out", str(tmp_path / "d.npz"),
                 "--quiet"]) == 0
    assert "were not" not in capsys.readouterr().err


def test_search_takes_the_run_the_index_records_when_none_is_given(tiny_run, tmp_path, capsys):
    _, stage3, images, codes, _ = tiny_run
    index_path = tmp_path / "db.shcidx"
    assert main(["index", str(codes), "--out", str(index_path)]) == 0
    query = str(next(images.rglob("*.png")))
    capsys.readouterr()
    assert main(["search", "--index", str(index_path), "--run", str(stage3), "--image", query, "-k", "4"]) == 0
    named = capsys.readouterr().out
    assert main(["search", "--index", str(index_path), "--image", query, "-k", "4"]) == 0
    assert capsys.readouterr().out == named
    moved = HashIndex.load(index_path)
    moved.metadata = {**moved.metadata, "run": str(tmp_path / "elsewhere")}
    moved.save(tmp_path / "moved.shcidx")
    assert main(["search", "--index", str(tmp_path / "moved.shcidx"), "--image", query]) == 2
    assert "which is not on this machine; pass --run" in capsys.readouterr().err


def test_no_command_overwrites_a_file_it_reads(tiny_run, tmp_path, capsys):
    """index --out onto its codes file, search --html onto the index, the query or an indexed image, and encode --out
    onto an image it encodes all wrote over their own input and exited 0 (an audit, 2026-12-02)."""
    _, stage3, images, codes, root = tiny_run
    copy = tmp_path / "c.npz"
    copy.write_bytes(codes.read_bytes())
    assert main(["index", str(copy), "--out", str(copy)]) == 2
    assert "--out would overwrite" in capsys.readouterr().err and copy.read_bytes() == codes.read_bytes()
    index_path = tmp_path / "db.shcidx"
    assert main(["index", str(codes), "--out", str(index_path)]) == 0
    with np.load(codes) as archive:
        indexed = images / archive["paths"][3]
    query = tmp_path / "q.png"
    query.write_bytes(indexed.read_bytes())
    before = {path: path.read_bytes() for path in (index_path, query, indexed)}
    for target in before:
        capsys.readouterr()
        assert main(["search", "--index", str(index_path), "--run", str(stage3), "--image", str(query),
                     "--html", str(target)]) == 2, target
        assert "--html would overwrite" in capsys.readouterr().err
    assert all(path.read_bytes() == data for path, data in before.items())
    image = sorted(images.rglob("*.png"))[0]
    kept = image.read_bytes()
    assert main(["encode", "--run", str(stage3), "--images", str(images), "--out", str(image), "--quiet"]) == 2
    assert "writes a codes file (.npz)" in capsys.readouterr().err and image.read_bytes() == kept
    run_codes = stage3 / "codes.npz"  # a file of the network encoding them, with the name a codes file has
    kept = run_codes.read_bytes()
    assert main(["encode", "--run", str(stage3), "--images", str(images), "--out", str(run_codes), "--quiet"]) == 2
    assert "--out would overwrite" in capsys.readouterr().err and run_codes.read_bytes() == kept


def test_the_retrieval_commands_name_what_was_given_instead(tiny_run, tmp_path, capsys):
    """A newcomer's mix-ups got a wrong reason or a harmful fix (a probe, 2026-12-02): a folder as --index was "no index
    file" with a fix that then failed; an index given to `shc index` got numpy's words on pickles and a fix that
    overwrote it; a codes file as --index "does not start with b'SHCHIDX'"; a run folder that does not exist "is not a
    trained stage-3 folder" with a heavy preset to train; a query that does not exist "is not an image file"; an
    .shcidx name for encode's codes file made search fail later."""
    _, stage3, images, codes, _ = tiny_run
    index_path = tmp_path / "db.shcidx"
    assert main(["index", str(codes), "--out", str(index_path)]) == 0
    query = next(images.rglob("*.png"))
    cases = [
        (["search", "--index", str(tmp_path), "--run", str(stage3), "--image", str(query)], "is a folder; give the index"),
        (["index", str(index_path), "--out", str(tmp_path / "again.shcidx")], "is already an index"),
        (["search", "--index", str(codes), "--run", str(stage3), "--image", str(query)], "it is a zip archive, as the codes file"),
        (["encode", "--run", str(stage3.with_name("stage3-shc-32bit-nope")), "--images", str(images), "--out",
          str(tmp_path / "c.npz")], "does not exist; stage-3 folders beside it: " + stage3.name),
        (["encode", "--run", str(stage3 / "train" / "best.pt"), "--images", str(images), "--out",
          str(tmp_path / "c.npz")], f"is a file; pass a stage-3 folder: {stage3}"),
        (["search", "--index", str(index_path), "--run", str(stage3), "--image", str(tmp_path / "nope.png")],
         "does not exist; give the query image"),
        (["encode", "--run", str(stage3), "--images", str(images), "--out", str(tmp_path / "x.shcidx")],
         "writes a codes file (.npz)"),
    ]
    for argv, words in cases:
        capsys.readouterr()
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err, (argv, err)
    assert not (tmp_path / "again.shcidx").exists() and not (tmp_path / "x.shcidx").exists()


def test_encoding_no_readable_image_writes_nothing_and_says_so(tiny_run, tmp_path, capsys):
    _, stage3, _, _, _ = tiny_run
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.png").write_bytes(b"not a png")
    out = tmp_path / "c.npz"
    assert main(["encode", "--run", str(stage3), "--images", str(broken), "--out", str(out), "--quiet"]) == 2
    assert "none of the 1 image files" in capsys.readouterr().err and not out.exists()


def test_a_gallery_of_a_file_name_that_is_not_utf8_is_written(tiny_run, tmp_path, capsys):
    import os

    _, stage3, images, _, _ = tiny_run
    folder = tmp_path / "weird"
    folder.mkdir()
    source = sorted(images.rglob("*.png"))[0].read_bytes()
    with open(os.path.join(os.fsencode(folder), b"\xff.png"), "wb") as handle:  # Linux allows any bytes
        handle.write(source)
    codes, index_path, page = tmp_path / "c.npz", tmp_path / "i.shcidx", tmp_path / "g.html"
    assert main(["encode", "--run", str(stage3), "--images", str(folder), "--out", str(codes), "--quiet"]) == 0
    assert main(["index", str(codes), "--out", str(index_path)]) == 0
    query = tmp_path / "q.png"
    query.write_bytes(source)
    assert main(["search", "--index", str(index_path), "--run", str(stage3), "--image", str(query),
                 "--html", str(page)]) == 0
    assert "<br>?.png</figcaption>" in page.read_text(encoding="utf-8")  # the undecodable byte shown as ?
