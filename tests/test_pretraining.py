"""Stage 0: the item source is disjoint from the query split, its weights start both networks, and it is cached
by identity like every other stage."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from shc.data import load_dataset
from shc.data.composites import composite_items
from shc.models import build_classifier, build_hashing_network
from shc.pipeline import RunConfig, run, run_grid, run_pretraining, stage_directories
from shc.presets import get_preset
from shc.pretraining import available_pretrain_sources, pretraining_data

TINY = {"num_classes": 20, "train_per_class": 20, "val_per_class": 5, "query_per_class": 5, "database_per_class": 20}
FAST = dict(bits=16, epochs=1, classifier_epochs=1, eval_every=1, pretrain="items", pretrain_epochs=1,
            dataset_options=TINY)


def test_items_exclude_every_base_image_of_the_query_split_and_hold_one_item_each():
    splits = load_dataset("digits-composite", seed=3, **TINY)
    items = composite_items("digits-composite", None, 3, **{k: v for k, v in TINY.items() if k != "num_classes"})
    query_items = set(splits.query.source_ids.ravel().tolist())
    assert not query_items & set(items.source_ids.tolist())
    # every base image of the other splits is in it (the source is everything but the query pool)
    others = {i for name in ("train", "val", "database") for i in splits.splits[name].source_ids.ravel().tolist()}
    assert others <= set(items.source_ids.tolist())
    from sklearn.datasets import load_digits

    digits = load_digits()
    base = np.rint(digits.images * 255 / 16).astype(np.uint8)
    np.testing.assert_array_equal(items.labels, digits.target[items.source_ids])
    halves = items.images.reshape(len(items.labels), 8, 2, 8).transpose(0, 2, 1, 3)  # (n, position, h, w)
    filled = halves.reshape(len(items.labels), 2, -1).any(axis=2)
    assert np.all(filled.sum(axis=1) == 1)  # one item, background elsewhere
    position = filled.argmax(axis=1)
    np.testing.assert_array_equal(halves[np.arange(len(position)), position], base[items.source_ids])
    assert 0.3 < position.mean() < 0.7  # both positions are used


def test_a_non_composite_dataset_or_a_second_start_is_refused():
    assert "items" in available_pretrain_sources()
    with pytest.raises(ValueError, match="pretraining source.*'item'.*did you mean 'items'"):
        RunConfig(pretrain="item")
    with pytest.raises(ValueError, match="cannot be combined with pretrained=True or weights="):
        RunConfig(pretrain="items", weights="x.pth")
    with pytest.raises(ValueError, match="needs a composite dataset"):
        pretraining_data(RunConfig(dataset="cifar100", pretrain="items"))


@pytest.fixture(scope="module")
def pretrained_run(tmp_path_factory):
    config = RunConfig(method="shc", run_dir=str(tmp_path_factory.mktemp("runs")), **FAST)
    return config, run(config)


def test_stage0_weights_start_the_classifier_and_the_hashing_network(pretrained_run):
    config, _ = pretrained_run
    weights = stage_directories(config)["stage0"] / "weights.pt"
    saved = torch.load(weights, weights_only=True)
    record = json.loads((weights.parent / "metrics.json").read_text())
    assert record["classes"] == list("0123456789") and 0 <= record["val_accuracy"] <= 1
    for network in (build_hashing_network(config.backbone, 16, weights=weights),
                    build_classifier(config.backbone, 20, weights=weights)):
        for name, tensor in network.backbone.state_dict().items():
            torch.testing.assert_close(tensor, saved[name], rtol=0, atol=0)
    # the stage-1 classifier started there: its first conv moved away from a random init less than a fresh one
    classifier = torch.load(stage_directories(config)["stage1"] / "classifier" / "best.pt", weights_only=True)
    first = next(key for key in saved if key.endswith("weight") and saved[key].ndim == 4)
    start_distance = (classifier["model"]["backbone." + first] - saved[first]).norm()
    torch.manual_seed(0)
    fresh = build_classifier(config.backbone, 20).backbone.state_dict()[first]
    assert start_distance < (classifier["model"]["backbone." + first] - fresh).norm()


def test_stage0_is_keyed_by_identity_and_cached(pretrained_run):
    config, result = pretrained_run
    directories = stage_directories(config)
    before = (directories["stage0"] / "weights.pt").stat().st_mtime_ns
    assert run_pretraining(config) == directories["stage0"] / "weights.pt"
    assert (directories["stage0"] / "weights.pt").stat().st_mtime_ns == before
    longer = config.replace(pretrain_epochs=2)
    changed = stage_directories(longer)
    assert changed["stage0"] != directories["stage0"]
    assert changed["stage1"] != directories["stage1"] and changed["stage3"] != directories["stage3"]
    scratch = stage_directories(config.replace(pretrain=None))
    assert scratch["stage1"] != directories["stage1"] and scratch["stage3"] != directories["stage3"]


def test_a_tiny_variant_of_the_pretrained_preset_runs(tmp_path):
    preset = get_preset("tiny-pretrained")
    configs = preset.configs(run_dir=str(tmp_path))
    assert {c.pretrain for c in configs} == {"items"} and "greedyhash" in {c.method for c in configs}
    rows = run_grid(configs, progress=False)
    assert len(rows) == len(configs) and all(0 < row["tie_aware_mAP@ALL"] <= 1 for row in rows)
    # one stage 0 for the whole grid (same dataset and seed)
    assert len(list((tmp_path / "digits-composite" / "seed0").glob("stage0-pretrain-items-*"))) == 1


def test_item_pretraining_takes_a_data_root_given_as_text(tmp_path):
    """RunConfig.data_root is a string; composite_items joined it with "/" as a Path and every pretrain="items" run
    with --data-root failed with a TypeError (an audit, 2026-12-02). Built here in the official idx format."""
    import gzip

    root = tmp_path / "fashion"
    root.mkdir()
    rng = np.random.default_rng(0)
    for split, count in (("train", 60), ("t10k", 20)):
        labels = np.tile(np.arange(10, dtype=np.uint8), count // 10)
        images = rng.integers(0, 256, (count, 28, 28), dtype=np.uint8)
        (root / f"{split}-labels-idx1-ubyte.gz").write_bytes(gzip.compress(
            b"\x00\x00\x08\x01" + count.to_bytes(4, "big") + labels.tobytes()))
        (root / f"{split}-images-idx3-ubyte.gz").write_bytes(gzip.compress(
            b"\x00\x00\x08\x03" + count.to_bytes(4, "big") + (28).to_bytes(4, "big") * 2 + images.tobytes()))
    counts = {"train_per_class": 2, "val_per_class": 1, "query_per_class": 1, "database_per_class": 2}
    items = composite_items("fashion-composite", str(root), 0, **counts)  # text, as in a RunConfig
    assert len(items.labels) > 0 and set(np.unique(items.labels)) <= set(range(10))
