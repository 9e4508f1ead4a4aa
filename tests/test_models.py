"""Backbones and heads (shc.models): shapes, ranges, codes, weights loading and its failures."""

from __future__ import annotations

import hashlib
import socket

import numpy as np
import pytest
import torch

import shc.models
from shc._compat import torchvision
from shc._download import DownloadError
from shc.models import (
    Classifier,
    HashingNetwork,
    available_backbones,
    build_backbone,
    build_classifier,
    build_hashing_network,
    hash_codes,
)


def test_available_backbones():
    assert available_backbones() == ["composite3_cnn", "composite3_cnn_mlp", "composite_cnn", "composite_cnn_mlp",
                                     "resnet18", "resnet34", "resnet50", "small_cnn", "small_cnn_mlp"]


@pytest.mark.parametrize("name", ["small_cnn", "composite_cnn", "composite3_cnn"])
def test_mlp_backbones_mix_every_pooled_cell_through_one_relu_layer(name):
    """``<name>_mlp`` = ``<name>``'s pooled cells, then ReLU(W x + b) over all of them (MIX_WIDTH units)."""
    from shc.models import MIX_WIDTH

    torch.manual_seed(0)
    mixed, dim = build_backbone(f"{name}_mlp")
    plain, plain_dim = build_backbone(name)
    assert dim == MIX_WIDTH
    plain.load_state_dict({key: value for key, value in mixed.state_dict().items() if key in plain.state_dict()})
    mixed.eval(), plain.eval()
    images = torch.randn(2, 3, 14, 14 * max(1, plain_dim // 128))
    linear = mixed.layers[-2]
    assert isinstance(linear, torch.nn.Linear) and linear.in_features == plain_dim
    torch.testing.assert_close(mixed(images), torch.relu(plain(images) @ linear.weight.T + linear.bias))
    build_hashing_network(f"{name}_mlp", 16).train()(images[:1])  # a batch of one trains (no BatchNorm1d)


def test_the_mlp_backbone_reaches_targets_that_are_not_additive_in_the_items():
    """Two items side by side, four classes (a, b); 16 random target bits per class, so most bits are no additive
    function of the items (bit = +1 iff a == b is one). composite_cnn_mlp fits every bit of every class."""
    torch.manual_seed(0)
    patterns = torch.rand(2, 1, 8, 8)
    images = torch.cat([torch.cat([patterns[a], patterns[b]], dim=2)[None] for a in (0, 1) for b in (0, 1)])
    targets = torch.where(torch.rand(4, 16) < 0.5, -1.0, 1.0)
    targets[:, 0] = torch.tensor([1.0, -1.0, -1.0, 1.0])  # XOR-like: a == b
    network = build_hashing_network("composite_cnn_mlp", 16, in_channels=1)
    optimizer = torch.optim.Adam(network.parameters(), lr=3e-3)
    for _ in range(150):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy((network(images) + 1) / 2, (targets + 1) / 2)
        loss.backward()
        optimizer.step()
    network.eval()
    assert torch.equal(network.codes(images).float(), targets)


def test_composite3_cnn_pools_the_three_item_positions_separately():
    torch.manual_seed(0)
    composite, dim = build_backbone("composite3_cnn")
    assert dim == 384
    composite.eval()
    images = torch.randn(2, 3, 28, 84)
    maps = composite.layers[:-2](images)  # (2, 128, 7, 21): three cells of 7 columns
    thirds = [maps[..., 7 * k:7 * (k + 1)].mean(dim=(2, 3)) for k in range(3)]
    torch.testing.assert_close(composite(images), torch.stack(thirds, dim=2).flatten(1))


def test_composite_cnn_pools_the_left_and_right_halves_separately():
    torch.manual_seed(0)
    composite, dim = build_backbone("composite_cnn")
    plain, plain_dim = build_backbone("small_cnn")
    assert (dim, plain_dim) == (256, 128)
    plain.load_state_dict(composite.state_dict())  # same weights: only the pooling differs
    composite.eval(), plain.eval()
    images = torch.randn(3, 3, 28, 56)
    features = composite(images)
    assert features.shape == (3, 256)
    maps = composite.layers[:-2](images)  # (3, 128, 7, 14) before pooling
    left, right = maps[..., :7].mean(dim=(2, 3)), maps[..., 7:].mean(dim=(2, 3))
    torch.testing.assert_close(features, torch.stack([left, right], dim=2).flatten(1))
    torch.testing.assert_close(plain(images), (left + right) / 2)  # global pool = mean of the halves
    swapped = torch.cat([images[..., 28:], images[..., :28]], dim=3)
    assert not torch.allclose(composite(swapped), features, atol=1e-3)  # "B + A" is not "A + B"


def test_composite_cnn_round_trips_and_has_no_pretrained_weights(tmp_path):
    original, _ = build_backbone("composite_cnn", in_channels=1)
    torch.save(original.state_dict(), tmp_path / "c.pth")
    restored, _ = build_backbone("composite_cnn", weights=tmp_path / "c.pth", in_channels=1)
    for key, value in original.state_dict().items():
        torch.testing.assert_close(restored.state_dict()[key], value, rtol=0, atol=0)
    with pytest.raises(ValueError, match="composite_cnn has no published pretrained weights"):
        build_backbone("composite_cnn", pretrained=True)
    network = build_hashing_network("composite_cnn", 16)
    assert network(torch.randn(2, 3, 28, 56)).shape == (2, 16)


def test_unknown_backbone_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown backbone 'vgg16'.*resnet34.*small_cnn"):
        build_backbone("vgg16")


@pytest.mark.parametrize(("size", "channels"), [((8, 16), 1), ((28, 56), 1), ((5, 7), 3), ((1, 1), 1)])
def test_small_cnn_feature_shape(size, channels):
    backbone, feature_dim = build_backbone("small_cnn", in_channels=channels)
    assert feature_dim == 128
    assert backbone(torch.randn(3, channels, *size)).shape == (3, 128)


@pytest.mark.parametrize(("name", "feature_dim"), [("resnet18", 512), ("resnet34", 512), ("resnet50", 2048)])
def test_resnet_feature_dims(name, feature_dim):
    backbone, dim = build_backbone(name)
    assert dim == feature_dim
    backbone.eval()
    with torch.no_grad():
        assert backbone(torch.randn(1, 3, 32, 32)).shape == (1, feature_dim)


def test_hashing_network_range_codes_and_features():
    torch.manual_seed(0)
    network = build_hashing_network("small_cnn", num_bits=16, in_channels=1)
    images = torch.randn(6, 1, 8, 16)
    u = network(images)
    assert u.shape == (6, 16)
    assert torch.all(u.abs() < 1)
    assert network.features(images).shape == (6, 128)
    codes = network.codes(images)
    assert codes.dtype == torch.int8
    assert not codes.requires_grad
    np.testing.assert_array_equal(codes.numpy(), np.where(u.detach().numpy() >= 0, 1, -1))


def test_hashing_network_with_batch_norm_on_the_code_layer():
    network = HashingNetwork(*build_backbone("small_cnn", in_channels=1), num_bits=8, batch_norm=True)
    assert isinstance(network.code_norm, torch.nn.BatchNorm1d)
    u = network(torch.randn(4, 1, 8, 16))
    # In training mode BN standardises each bit over the batch, so no bit can be constant across it.
    assert torch.all(u.std(dim=0) > 0)


def test_identity_activation_returns_the_pre_activations_of_the_same_head():
    torch.manual_seed(0)
    tanh_network = build_hashing_network("small_cnn", num_bits=8, in_channels=1).eval()
    linear_network = build_hashing_network("small_cnn", num_bits=8, in_channels=1, activation="identity").eval()
    linear_network.load_state_dict(tanh_network.state_dict())  # same parameter names: heads are interchangeable
    images = torch.randn(5, 1, 8, 16)
    with torch.no_grad():
        z = linear_network(images)
        torch.testing.assert_close(torch.tanh(z), tanh_network(images))
    assert (z.abs() > 0).all()
    with pytest.raises(ValueError, match=r"activation='relu' is unknown.*'tanh', 'identity'"):
        build_hashing_network("small_cnn", num_bits=8, activation="relu")


def test_meta_embedding_mixes_an_attended_memory_into_the_features():
    torch.manual_seed(0)
    network = build_hashing_network("small_cnn", num_bits=8, in_channels=1, memory_slots=3).eval()
    plain = build_hashing_network("small_cnn", num_bits=8, in_channels=1).eval()
    plain.load_state_dict(network.state_dict(), strict=False)  # everything but the meta-embedding
    images = torch.randn(4, 1, 8, 16)
    with torch.no_grad():
        torch.testing.assert_close(network(images), plain(images))  # the memory starts at zero
        network.meta_embedding.memory.normal_()
        meta = network.meta_embedding
        f = network.features(images)
        attention = torch.softmax(f @ meta.hallucinator.weight.T + meta.hallucinator.bias, dim=1)
        gate = torch.tanh(f @ meta.selector.weight.T + meta.selector.bias)
        infused = f + gate * (attention @ meta.memory)
        expected = torch.tanh(network.hash_layer(infused))
        torch.testing.assert_close(network(images), expected)
        assert not torch.allclose(expected, plain(images))
    network.train()
    network(images).sum().backward()
    assert network.meta_embedding.memory.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="memory_slots must be a non-negative integer"):
        build_hashing_network("small_cnn", num_bits=8, memory_slots=-1)


def test_hash_codes_sign_of_zero_is_plus_one_for_torch_and_numpy():
    u = [[-0.3, 0.0, 0.2], [-0.0, -1.0, 1e-30]]
    expected = np.array([[-1, 1, 1], [1, -1, 1]], dtype=np.int8)
    torch_codes = hash_codes(torch.tensor(u))
    numpy_codes = hash_codes(np.array(u))
    assert torch_codes.dtype == torch.int8 and numpy_codes.dtype == np.int8
    np.testing.assert_array_equal(torch_codes.numpy(), expected)
    np.testing.assert_array_equal(numpy_codes, expected)
    with pytest.raises(ValueError, match="NaN"):
        hash_codes(torch.tensor([0.5, float("nan")]))


def test_classifier_logits_shape():
    classifier = build_classifier("small_cnn", num_classes=10, in_channels=1)
    assert isinstance(classifier, Classifier)
    assert classifier(torch.randn(2, 1, 8, 16)).shape == (2, 10)


def test_heads_reject_bad_sizes():
    backbone, dim = build_backbone("small_cnn")
    with pytest.raises(ValueError, match="num_bits must be a positive integer"):
        HashingNetwork(backbone, dim, 0)
    with pytest.raises(ValueError, match="num_classes must be a positive integer"):
        Classifier(backbone, dim, -3)


# ----------------------------------------------------------------------------------------------
def _imagenet_like_state_dict(name):
    """A full torchvision ResNet state_dict (with fc, as in the ImageNet files), random but seeded."""
    torch.manual_seed(123)
    return getattr(torchvision.models, name)(weights=None).state_dict()


def test_pretrained_from_local_file_gives_exactly_those_weights(tmp_path):
    state = _imagenet_like_state_dict("resnet18")
    path = tmp_path / "resnet18-imagenet.pth"
    torch.save(state, path)
    backbone, _ = build_backbone("resnet18", pretrained=True, weights=path)
    loaded = backbone.state_dict()
    assert set(loaded) == {key for key in state if not key.startswith("fc.")}
    for key, value in loaded.items():
        torch.testing.assert_close(value, state[key], rtol=0, atol=0)


def test_weights_file_for_grey_input_sums_the_rgb_kernels(tmp_path):
    state = _imagenet_like_state_dict("resnet18")
    torch.save(state, tmp_path / "w.pth")
    backbone, _ = build_backbone("resnet18", weights=tmp_path / "w.pth", in_channels=1)
    torch.testing.assert_close(backbone.conv1.weight, state["conv1.weight"].sum(dim=1, keepdim=True))
    torch.testing.assert_close(backbone.layer1[0].conv1.weight, state["layer1.0.conv1.weight"], rtol=0, atol=0)


def test_weights_of_another_architecture_are_rejected(tmp_path):
    torch.save(_imagenet_like_state_dict("resnet18"), tmp_path / "r18.pth")
    with pytest.raises(ValueError, match="do not fit this backbone"):
        build_backbone("resnet50", weights=tmp_path / "r18.pth")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        build_backbone("resnet18", weights=tmp_path / "missing.pth")


def test_small_cnn_round_trips_its_own_state_dict(tmp_path):
    torch.manual_seed(1)
    original, _ = build_backbone("small_cnn", in_channels=1)
    torch.save(original.state_dict(), tmp_path / "cnn.pth")
    restored, _ = build_backbone("small_cnn", weights=tmp_path / "cnn.pth", in_channels=1)
    for key, value in original.state_dict().items():
        torch.testing.assert_close(restored.state_dict()[key], value, rtol=0, atol=0)
    with pytest.raises(ValueError, match="no published pretrained weights"):
        build_backbone("small_cnn", pretrained=True)


def _closed_port_url(file_name: str) -> str:
    """A URL on 127.0.0.1 whose port was just freed: the connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/models/{file_name}"


def test_offline_pretrained_without_weights_raises_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    url = _closed_port_url("resnet34-b627a593.pth")
    monkeypatch.setattr(shc.models, "_imagenet_weights_url", lambda name: url)
    with pytest.raises(DownloadError) as raised:
        build_backbone("resnet34", pretrained=True)
    message = str(raised.value)
    assert "resnet34-b627a593.pth" in message and url in message
    assert str(tmp_path / "hub" / "checkpoints" / "resnet34-b627a593.pth") in message  # where to put it
    assert "weights=" in message
    assert isinstance(raised.value, RuntimeError)
    assert not list((tmp_path / "hub" / "checkpoints").glob("*"))  # no partial file left behind


def test_imagenet_weight_urls_are_torchvisions_v1_files():
    assert shc.models._imagenet_weights_url("resnet18") == "https://download.pytorch.org/models/resnet18-f37072fd.pth"
    assert shc.models._imagenet_weights_url("resnet34") == "https://download.pytorch.org/models/resnet34-b627a593.pth"


def test_pretrained_downloads_checks_the_hash_and_caches(monkeypatch, tmp_path):
    state = _imagenet_like_state_dict("resnet18")
    source = tmp_path / "served.pth"
    torch.save(state, source)
    prefix = hashlib.sha256(source.read_bytes()).hexdigest()[:8]
    served = source.rename(tmp_path / f"resnet18-{prefix}.pth")
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    monkeypatch.setattr(shc.models, "_imagenet_weights_url", lambda name: served.as_uri())
    backbone, _ = build_backbone("resnet18", pretrained=True)
    torch.testing.assert_close(backbone.conv1.weight, state["conv1.weight"], rtol=0, atol=0)
    assert (tmp_path / "hub" / "checkpoints" / served.name).is_file()
    served.unlink()  # the second build reads the cached copy
    again, _ = build_backbone("resnet18", pretrained=True)
    torch.testing.assert_close(again.layer4[1].conv2.weight, state["layer4.1.conv2.weight"], rtol=0, atol=0)


def test_pretrained_download_with_a_wrong_hash_is_refused(monkeypatch, tmp_path):
    source = tmp_path / "resnet18-00000000.pth"
    torch.save(_imagenet_like_state_dict("resnet18"), source)
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    monkeypatch.setattr(shc.models, "_imagenet_weights_url", lambda name: source.as_uri())
    with pytest.raises(DownloadError, match="sha256 .* does not start with the expected 00000000"):
        build_backbone("resnet18", pretrained=True)
    assert not (tmp_path / "hub" / "checkpoints" / source.name).exists()
