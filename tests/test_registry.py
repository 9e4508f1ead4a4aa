"""One registry idiom for every name -> thing table, and each table checked entry by entry (timm's pattern)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from shc.data import DATASETS
from shc.losses import LOSSES
from shc.methods import METHODS, build_criterion
from shc.models import BACKBONES, build_backbone
from shc.presets import NOTEBOOKS, PRESETS
from shc.registry import Registry

REGISTRIES = {"dataset": DATASETS, "loss": LOSSES, "method": METHODS, "backbone": BACKBONES, "preset": PRESETS}


def test_registry_keeps_order_refuses_a_second_entry_and_suggests_close_names():
    table = Registry("colour")
    table.register("red", 1)
    table.register("green")(2)
    assert table.names() == ["red", "green"] and "red" in table and len(table) == 2
    table.register("red", 1)  # the same object again: a no-op
    with pytest.raises(ValueError, match="a colour named 'red' is already registered"):
        table.register("red", 3)
    with pytest.raises(ValueError, match=r"unknown colour 'gren'; did you mean 'green'\? Known colours: red, green"):
        table.get("gren")
    with pytest.raises(ValueError, match=r"unknown colour 'blue'\. Known colours"):
        table["blue"]


@pytest.mark.parametrize("kind", sorted(REGISTRIES))
def test_every_table_uses_the_registry_idiom(kind):
    registry = REGISTRIES[kind]
    assert isinstance(registry, Registry) and registry.kind == kind and len(registry) > 0
    with pytest.raises(ValueError, match=f"unknown {kind}"):
        registry.get("no-such-name")


@pytest.mark.parametrize("name", METHODS.names())
def test_every_method_builds_its_loss_on_a_tiny_problem(name):
    spec = METHODS.get(name)
    labels = np.arange(8) % 4
    centers = None
    if spec.needs_similarity:
        centers = np.where(np.random.default_rng(0).random((4, 16)) < 0.5, -1, 1).astype(np.int8)
    criterion = build_criterion(name, 4, 16, labels, centers=centers)
    # each loss's values are checked against hand and reference values in test_baselines.py; here: every registered
    # method builds, gives a finite scalar, and trains the network (a gradient reaches the outputs)
    logits = torch.randn(8, 16, requires_grad=True)
    loss = criterion(torch.tanh(logits), torch.as_tensor(labels), torch.arange(8))
    assert loss.ndim == 0 and torch.isfinite(loss)
    loss.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.abs().sum() > 0


@pytest.mark.parametrize("name", BACKBONES.names())
def test_every_backbone_maps_images_to_its_feature_size(name):
    backbone, dim = build_backbone(name, in_channels=1)
    backbone.eval()
    with torch.no_grad():
        features = backbone(torch.randn(2, 1, 32, 32))
    assert features.shape == (2, dim)


@pytest.mark.parametrize("name", DATASETS.names())
def test_every_dataset_entry_has_a_loader_with_keyword_options(name):
    import inspect

    entry = DATASETS.get(name)
    parameters = inspect.signature(entry.loader).parameters
    assert list(parameters)[:2] == ["root", "seed"]
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in list(parameters.values())[2:])


@pytest.mark.parametrize("name", PRESETS.names())
def test_every_preset_expands_to_valid_configs_and_names_every_notebook(name):
    preset = PRESETS.get(name)
    configs = preset.configs()
    assert len(configs) == len(preset.datasets) * len(preset.seeds) * len(preset.bits) * len(preset.methods)
    assert preset.notebooks and set(preset.notebooks) <= set(NOTEBOOKS)
    # the pretrained and many-class testbeds leave out 05 (the ablations are the standard preset's question)
    left_out = set(NOTEBOOKS) - set(preset.notebooks)
    # the unseen-class presets leave out 00 too (the geometry is the seen-class presets' page)
    expected = ({"05_ablations"} if name in ("standard-pretrained", "standard-fine", "standard-modes")
                else {"00_center_geometry", "05_ablations"} if name.endswith("-unseen") else set())
    assert left_out == expected


@pytest.mark.parametrize("name", PRESETS.names())
def test_every_example_method_of_a_preset_is_a_method_its_page_trains(name):
    """04's example queries read the runs of ``example_methods``; the batch computes the runs of ``methods`` only, so
    an example method outside them fails the page on a missing run (tiny-modes did, with MDS and SHC)."""
    for parameters in PRESETS.get(name).notebooks.get("04_retrieval", ()):
        examples = parameters.get("example_methods", [])
        assert examples and set(examples) <= set(parameters["methods"]), (name, examples, parameters["methods"])


@pytest.mark.parametrize("name", __import__("shc.centers", fromlist=["x"]).CENTER_GENERATORS.names())
def test_every_center_method_gives_valid_centers_and_refuses_unknown_options(name):
    from shc.centers import CENTER_GENERATORS, center_quality, gv_min_distance, run_center_method
    from shc.similarity import hierarchical_similarity

    generator = CENTER_GENERATORS.get(name)
    S = hierarchical_similarity(12, num_groups=3, seed=0) if generator.needs_similarity else None
    centers, history = run_center_method(name, 12, 16, similarity=S, seed=0)
    assert centers.shape == (12, 16) and set(np.unique(centers)) <= {-1, 1}
    if "min_distance" in generator.options:  # the methods that guarantee the GV distance
        assert center_quality(centers)["d_min"] >= gv_min_distance(12, 16)
    with pytest.raises(TypeError, match="Unknown option"):
        run_center_method(name, 12, 16, similarity=S, no_such_option=1)


def test_did_you_mean_ignores_letter_case():
    from shc.registry import did_you_mean

    assert did_you_mean("SHC", ["shc", "csq"]) == " did you mean 'shc'?"
    assert did_you_mean("mAP@all", ["mAP@ALL", "mAP@100"]) == " did you mean 'mAP@ALL'?"
    assert did_you_mean("zzz", ["shc", "csq"]) == ""


def test_a_center_generator_registered_later_can_back_a_method(monkeypatch):
    # docs/architecture.md's recipe: register a generator, then a method on it. MethodSpec checked a frozen copy of
    # the generator names (CENTER_METHODS), so a generator added after shc.centers was imported was refused.
    from shc.centers import CENTER_GENERATORS, CenterGenerator
    from shc.centers.registry import _without_history
    from shc.methods import MethodSpec, _center_loss_method

    monkeypatch.setattr(CENTER_GENERATORS, "_entries", dict(CENTER_GENERATORS._entries))  # undone after the test
    plain = CENTER_GENERATORS.register("test-ones", CenterGenerator(
        "test-ones", _without_history(lambda C, q, seed=0: np.ones((C, q), np.int8)), (), False))
    CENTER_GENERATORS.register("test-semantic", CenterGenerator("test-semantic", plain.run, (), True))
    spec = _center_loss_method("test-ones-hash", "test-ones", "a test")
    assert spec.centers == "test-ones" and spec.needs_similarity is False
    assert _center_loss_method("test-semantic-hash", "test-semantic", "a test").needs_similarity is True
    with pytest.raises(ValueError, match="needs_similarity must be True exactly"):
        MethodSpec("wrong", "center", "test-ones", True, {}, {}, "a test")
    with pytest.raises(ValueError, match="centers 'nosuch' is not one of"):
        MethodSpec("wrong", "center", "nosuch", False, {}, {}, "a test")
