"""Backbones and heads: the stage-1 classifier and the stage-3 hashing network (paper Sec. 3.3).

A backbone maps images to a flat feature vector; :class:`HashingNetwork` adds the hash layer (a linear
layer to ``q`` bits followed by tanh) and :class:`Classifier` a linear layer to ``C`` logits. The hash
head has the options the baselines of ``shc.methods`` need: a BatchNorm on the code layer (OrthoHash,
MDS), no output activation (``activation="identity"``: DPSH, DTSH, HashNet, GreedyHash, IDHN, OrthoHash)
and LTH's dynamic meta-embedding (``memory_slots``, :class:`MetaEmbedding`).

Backbones (:func:`available_backbones`): ``resnet34`` (the paper's), ``resnet18``, ``resnet50`` from
torchvision with the final FC removed, ``small_cnn``, a three-block CNN for the small grey composite
images used in quick experiments and CI, ``composite_cnn``, the same CNN pooling the left and right
halves of the image separately (two-item composites: it keeps which item is where), and ``composite3_cnn``,
pooling thirds (three-item composites). Each has an ``*_mlp`` variant with a hidden ReLU layer over the pooled
cells (:class:`SmallCNN` ``hidden``): only these can reach any center on a composite (the evidence presets' since
issue 35; the plain ones stay selectable to reproduce the confound, docs/standard-fine.md).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from shc.registry import Registry
from shc.validation import sign_pm1

__all__ = [
    "BACKBONES",
    "Classifier",
    "HASH_ACTIVATIONS",
    "HashingNetwork",
    "MetaEmbedding",
    "SmallCNN",
    "available_backbones",
    "build_backbone",
    "build_classifier",
    "build_hashing_network",
    "hash_codes",
]


class _ResNetSpec(NamedTuple):
    weights_enum: str  # torchvision.models.<weights_enum>.IMAGENET1K_V1
    feature_dim: int


_RESNETS = {
    "resnet18": _ResNetSpec("ResNet18_Weights", 512),
    "resnet34": _ResNetSpec("ResNet34_Weights", 512),
    "resnet50": _ResNetSpec("ResNet50_Weights", 2048),
}
_SMALL_CNNS = {"small_cnn": (1, 1), "composite_cnn": (1, 2), "composite3_cnn": (1, 3)}  # name: SmallCNN pooling grid
MIX_WIDTH = 512
"""Width of the hidden layer of the ``*_mlp`` backbones (:class:`SmallCNN` ``hidden``): at least the number of
classes of every testbed (333 on standard-fine), so one unit per class conjunction fits."""
#: Every backbone by name: ``builder(pretrained, weights, in_channels) -> (module, feature_dim)``. A new
#: backbone is one ``@BACKBONES.register(name)`` function.
BACKBONES: Registry[Callable[..., tuple[nn.Module, int]]] = Registry("backbone")


def available_backbones() -> list[str]:
    """Names accepted by :func:`build_backbone`, sorted."""
    return sorted(BACKBONES.names())


# ----------------------------------------------------------------------------------------------
# backbones
# ----------------------------------------------------------------------------------------------
class SmallCNN(nn.Module):
    """Three conv-BN-ReLU blocks (32, 64, 128 channels), 2x2 max-pooling between them, then average pooling
    onto a ``grid`` of cells whose features are concatenated.

    Sized for 8x16 .. 28x56 grey composites on a CPU; any input of at least 1x1 pixels works
    (the pools use ``ceil_mode``). ``grid=(1, 1)`` (``small_cnn``) is global average pooling, which
    discards *where* a pattern is: on a composite it cannot tell "A + B" from "B + A" except through
    border effects. ``grid=(1, 2)`` (``composite_cnn``) pools the left and right halves separately, so the
    features keep which item sits where (feature width ``128 * rows * columns``); ``grid=(1, 3)``
    (``composite3_cnn``) does the same for three items side by side.

    **Reaching any center needs ``hidden``.** Without it the hash layer is linear in the pooled cells, so on a
    composite each bit is ``sign(g1(item 1) + g2(item 2) [+ g3(item 3)] + b)``: an *additive* function of the
    items, which cannot produce most bits of random, CSQ or MDS centers (docs/standard.md, "Reachability").
    ``hidden > 0`` adds a fully connected ReLU layer of that width over all cells (feature width ``hidden``), so
    the features mix the item positions non-linearly before the hash layer, as a ResNet's whole-image receptive
    field does; the ``*_mlp`` backbones (``small_cnn_mlp``, ``composite_cnn_mlp``, ``composite3_cnn_mlp``) are
    these, with :data:`MIX_WIDTH` units. No normalisation in it, so a batch of one image trains.
    """

    def __init__(
        self, in_channels: int = 3, widths: tuple[int, ...] = (32, 64, 128), grid: tuple[int, int] = (1, 1),
        hidden: int = 0,
    ) -> None:
        super().__init__()
        if len(grid) != 2 or min(grid) < 1:
            raise ValueError(f"grid must be (rows, columns) of positive ints, got {grid!r}.")
        if isinstance(hidden, bool) or int(hidden) != hidden or hidden < 0:
            raise ValueError(f"hidden must be a non-negative integer (0: no hidden layer), got {hidden!r}.")
        layers: list[nn.Module] = []
        channels = in_channels
        for position, width in enumerate(widths):
            layers += [
                nn.Conv2d(channels, width, 3, padding=1, bias=False),
                nn.BatchNorm2d(width),
                nn.ReLU(inplace=True),
            ]
            if position < len(widths) - 1:
                layers.append(nn.MaxPool2d(2, ceil_mode=True))
            channels = width
        layers += [nn.AdaptiveAvgPool2d(tuple(grid)), nn.Flatten()]
        self.feature_dim = channels * grid[0] * grid[1]
        if hidden:
            layers += [nn.Linear(self.feature_dim, int(hidden)), nn.ReLU(inplace=True)]
            self.feature_dim = int(hidden)
        self.layers = nn.Sequential(*layers)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.layers(images)


def _read_state_dict(path: str | os.PathLike) -> Mapping[str, torch.Tensor]:
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"weights file {path} does not exist; pass the path of a saved state_dict (.pth).")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(state, Mapping) or not all(isinstance(value, torch.Tensor) for value in state.values()):
        raise ValueError(
            f"{path} does not hold a state_dict (a mapping of parameter names to tensors); save one with "
            "torch.save(model.state_dict(), path)."
        )
    return state


def _torchvision():
    """torchvision, imported (and repaired, :mod:`shc._compat`) on first use: only the ResNet backbones need it,
    and its import costs about 2 s of every process start (its ops pull in torch._dynamo)."""
    from shc._compat import torchvision

    return torchvision


def _imagenet_weights_url(name: str) -> str:
    """URL of torchvision's ImageNet weights (IMAGENET1K_V1) for ResNet ``name``."""
    return getattr(_torchvision().models, _RESNETS[name].weights_enum).IMAGENET1K_V1.url


def _download_imagenet_weights(name: str) -> Mapping[str, torch.Tensor]:
    """torchvision's ImageNet weights (IMAGENET1K_V1) for ``name``, from the torch hub cache or the web.

    The file goes where ``torch.hub`` keeps it (``<torch.hub.get_dir()>/checkpoints``), so either finds
    the other's copy; the download has a timeout and a SHA-256 check of the hash in the file name
    (:func:`shc._download.download_file`), unlike ``torch.hub.load_state_dict_from_url``, which can hang.
    """
    from shc._download import download_file

    url = _imagenet_weights_url(name)
    file_name = url.rsplit("/", 1)[-1]
    cached = Path(torch.hub.get_dir()) / "checkpoints" / file_name
    if not cached.is_file():
        digest = torch.hub.HASH_REGEX.search(file_name)
        download_file(
            url, cached, checksum=("sha256", digest.group(1)) if digest else None,
            instructions=(
                f"pretrained=True needs torchvision's ImageNet weights for {name}, the file {file_name}. Fetch "
                f"it from {url} where the internet is reachable and copy it to {cached}, or pass it with "
                f"build_backbone({name!r}, pretrained=True, weights='/path/to/{file_name}'). shc never falls "
                "back to random weights silently."
            ),
        )
    return torch.load(cached, map_location="cpu", weights_only=True)


def _load_weights(
    module: nn.Module, state: Mapping[str, torch.Tensor], optional_prefixes: tuple[str, ...] = ()
) -> None:
    """Load ``state`` into ``module``; only keys starting with ``optional_prefixes`` may be missing."""
    try:
        missing, unexpected = module.load_state_dict(state, strict=False)
    except RuntimeError as error:  # shape mismatch
        raise ValueError(f"the weights do not fit this backbone: {error}") from error
    missing = [key for key in missing if not key.startswith(optional_prefixes)]
    if missing or unexpected:
        raise ValueError(
            f"the weights do not fit this backbone: missing keys {missing[:5]}, unexpected keys {unexpected[:5]}; "
            "pass a state_dict saved from the same architecture."
        )


def _first_conv_for(conv: nn.Conv2d, in_channels: int, pretrained: bool) -> nn.Conv2d:
    """ResNet's first convolution for ``in_channels`` inputs.

    Pretrained RGB kernels are averaged over colour and spread over the new channels (scaled by
    ``3 / in_channels``), so an image whose channels are all equal gives the activations the RGB network
    gives its grey version. Otherwise the new convolution gets torchvision's ResNet initialisation.
    """
    new_conv = nn.Conv2d(in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, bias=False)
    if pretrained:
        with torch.no_grad():
            grey_kernel = conv.weight.mean(dim=1, keepdim=True)
            new_conv.weight.copy_(grey_kernel.repeat(1, in_channels, 1, 1) * 3 / in_channels)
    else:
        nn.init.kaiming_normal_(new_conv.weight, mode="fan_out", nonlinearity="relu")
    return new_conv


def build_backbone(
    name: str,
    pretrained: bool = False,
    weights: str | os.PathLike | None = None,
    in_channels: int = 3,
) -> tuple[nn.Module, int]:
    """Build a feature extractor by name.

    Parameters
    ----------
    name : str
        One of :func:`available_backbones`.
    pretrained : bool
        ResNets only: start from torchvision's ImageNet weights (``IMAGENET1K_V1``, the classic ones used
        by the hashing literature), taken from the torch hub cache or downloaded. Offline without a cached
        copy this raises a RuntimeError naming the file, its URL and how to pass it with ``weights=``.
    weights : path, optional
        A local state_dict file (.pth) to start from instead of downloading; implies ``pretrained``. For
        ResNets the torchvision ImageNet file itself (its ``fc.*`` entries are dropped); for ``small_cnn``
        a state_dict saved from the same small CNN with the same ``in_channels``.
    in_channels : int
        Image channels (1 for grey images). A ResNet's first convolution is rebuilt for it (see
        :func:`_first_conv_for`); pretrained weights are loaded before that.

    Returns
    -------
    backbone : torch.nn.Module
        Maps (B, in_channels, H, W) images to (B, feature_dim) features.
    feature_dim : int
        512 (resnet18/34), 2048 (resnet50), 128 (small_cnn), 256 (composite_cnn), 384 (composite3_cnn) or
        :data:`MIX_WIDTH` (the ``*_mlp`` backbones).
    """
    builder = BACKBONES.get(name)
    if int(in_channels) != in_channels or in_channels < 1:
        raise ValueError(f"in_channels must be a positive integer, got {in_channels}.")
    return builder(pretrained or weights is not None, weights, int(in_channels))


def _resnet(name: str, pretrained: bool, weights: str | os.PathLike | None, in_channels: int) -> tuple[nn.Module, int]:
    backbone = getattr(_torchvision().models, name)(weights=None)
    if pretrained:
        state = _read_state_dict(weights) if weights is not None else _download_imagenet_weights(name)
        _load_weights(backbone, state, optional_prefixes=("fc.",))
    if in_channels != 3:
        backbone.conv1 = _first_conv_for(backbone.conv1, in_channels, pretrained)
    backbone.fc = nn.Identity()
    return backbone, _RESNETS[name].feature_dim


for _name in _RESNETS:
    BACKBONES.register(_name, functools.partial(_resnet, _name))


def _small_cnn(name: str, pretrained: bool, weights: str | os.PathLike | None,
               in_channels: int) -> tuple[nn.Module, int]:
    base, mixed = name.removesuffix("_mlp"), name.endswith("_mlp")
    backbone = SmallCNN(in_channels, grid=_SMALL_CNNS[base], hidden=MIX_WIDTH if mixed else 0)
    if weights is not None:
        _load_weights(backbone, _read_state_dict(weights))
    elif pretrained:
        raise ValueError(
            f"{name} has no published pretrained weights; use pretrained=False, or pass your own "
            "state_dict file with weights=."
        )
    return backbone, backbone.feature_dim


for _name in (*_SMALL_CNNS, *(f"{name}_mlp" for name in _SMALL_CNNS)):
    BACKBONES.register(_name, functools.partial(_small_cnn, _name))


# ----------------------------------------------------------------------------------------------
# heads
# ----------------------------------------------------------------------------------------------
def hash_codes(u: torch.Tensor | np.ndarray) -> torch.Tensor | np.ndarray:
    """Binary codes ``b = sign(u)`` in {-1, +1} as int8, with ``sign(0) = +1`` (paper Eq. 39).

    Parameters
    ----------
    u : torch.Tensor or numpy.ndarray
        Continuous codes, any shape (typically (N, q) outputs of :class:`HashingNetwork`).

    Returns
    -------
    Same type as ``u``, dtype int8.
    """
    if isinstance(u, torch.Tensor):
        if torch.isnan(u).any():
            raise ValueError("u contains NaN; the network diverged (lower the learning rate).")
        return torch.where(u >= 0, 1, -1).to(torch.int8)
    u = np.asarray(u)
    if np.isnan(u).any():
        raise ValueError("u contains NaN; the network diverged (lower the learning rate).")
    return sign_pm1(u)


def _positive_int(value: int, name: str) -> int:
    if int(value) != value or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value}.")
    return int(value)


HASH_ACTIVATIONS = ("tanh", "identity")
"""Output activations of the hash layer: ``tanh`` (the paper's) or ``identity`` (raw pre-activations, for
losses that apply their own squashing or sign; the codes ``sign(u)`` are the same either way)."""


class MetaEmbedding(nn.Module):
    """LTH's dynamic meta-embedding (Chen et al., "Long-Tail Hashing", SIGIR 2021, Sec. 3.2).

    ``v = f + tanh(W_s f) * (softmax(W_h f) @ M)``: the direct feature ``f`` plus a memory feature, an
    attention-weighted mix of ``num_slots`` memory rows ``M`` (the "hallucinator" ``W_h`` attends, the
    "concept selector" ``W_s`` gates it per dimension). It sits between the backbone and the hash layer,
    so the memory shapes the retrieval codes too, as in LTH.

    One simplification: LTH recomputes ``M`` as the class means of the direct features with a pass over
    the training set before every epoch; here ``M`` is a parameter learned with the rest of the network
    (zero at the start, so training starts from the plain network). That keeps the training loop generic
    (the network never sees labels) and leaves the architecture at retrieval time unchanged.

    Parameters
    ----------
    feature_dim : int
        Width of the features ``f``.
    num_slots : int
        Rows of the memory (LTH uses one per class: ``num_prototypes = num_classes``).
    """

    def __init__(self, feature_dim: int, num_slots: int) -> None:
        super().__init__()
        feature_dim = _positive_int(feature_dim, "feature_dim")
        num_slots = _positive_int(num_slots, "memory_slots")
        self.hallucinator = nn.Linear(feature_dim, num_slots)
        self.selector = nn.Linear(feature_dim, feature_dim)
        self.memory = nn.Parameter(torch.zeros(num_slots, feature_dim))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        attention = torch.softmax(self.hallucinator(features), dim=1)
        return features + torch.tanh(self.selector(features)) * (attention @ self.memory)


class HashingNetwork(nn.Module):
    """Backbone, then the hash layer: ``u = tanh(W f(x) + b)`` in (-1, 1)^q (paper Sec. 3.3).

    Parameters
    ----------
    backbone : torch.nn.Module
        Maps images to (B, feature_dim) features.
    feature_dim : int
        Width of the backbone's features.
    num_bits : int
        Code length ``q``.
    batch_norm : bool
        Put a BatchNorm1d between the hash layer and the activation (OrthoHash's and MDS's code layer).
    activation : {"tanh", "identity"}
        Output activation; ``"identity"`` returns the pre-activations ``z`` (unbounded), for losses that
        squash or binarise themselves (HashNet's ``tanh(beta z)``, GreedyHash's sign, ...).
    memory_slots : int
        If positive, LTH's :class:`MetaEmbedding` with that many memory rows between the backbone and
        the hash layer; 0 (default) for none.
    """

    def __init__(
        self,
        backbone: nn.Module,
        feature_dim: int,
        num_bits: int,
        batch_norm: bool = False,
        activation: str = "tanh",
        memory_slots: int = 0,
    ) -> None:
        super().__init__()
        if activation not in HASH_ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is unknown; use one of {HASH_ACTIVATIONS}.")
        if int(memory_slots) != memory_slots or memory_slots < 0:
            raise ValueError(f"memory_slots must be a non-negative integer (0: no meta-embedding), got {memory_slots}.")
        self.backbone = backbone
        self.feature_dim = _positive_int(feature_dim, "feature_dim")
        self.num_bits = _positive_int(num_bits, "num_bits")
        self.activation = activation
        self.meta_embedding = MetaEmbedding(self.feature_dim, int(memory_slots)) if memory_slots else nn.Identity()
        self.hash_layer = nn.Linear(self.feature_dim, self.num_bits)
        self.code_norm = nn.BatchNorm1d(self.num_bits) if batch_norm else nn.Identity()

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """Backbone features, shape (B, feature_dim)."""
        return self.backbone(images).flatten(1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Continuous codes ``u``, shape (B, q): in (-1, 1) with tanh, unbounded with identity."""
        codes = self.code_norm(self.hash_layer(self.meta_embedding(self.features(images))))
        return torch.tanh(codes) if self.activation == "tanh" else codes

    @torch.no_grad()
    def codes(self, images: torch.Tensor) -> torch.Tensor:
        """Binary codes ``sign(u)`` as int8 (B, q); call ``.eval()`` first for inference."""
        return hash_codes(self(images))

    def extra_repr(self) -> str:
        return f"num_bits={self.num_bits}, activation={self.activation!r}"


class Classifier(nn.Module):
    """Backbone, then a linear layer to ``C`` logits (the stage-1 network, Eq. 2)."""

    def __init__(self, backbone: nn.Module, feature_dim: int, num_classes: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.feature_dim = _positive_int(feature_dim, "feature_dim")
        self.num_classes = _positive_int(num_classes, "num_classes")
        self.head = nn.Linear(self.feature_dim, self.num_classes)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """Backbone features, shape (B, feature_dim)."""
        return self.backbone(images).flatten(1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """Logits, shape (B, C)."""
        return self.head(self.features(images))


def build_hashing_network(backbone_name: str, num_bits: int, pretrained: bool = False,
                          weights: str | os.PathLike | None = None, in_channels: int = 3, batch_norm: bool = False,
                          activation: str = "tanh", memory_slots: int = 0) -> HashingNetwork:
    """:class:`HashingNetwork` on ``build_backbone(backbone_name, pretrained, weights, in_channels)``.

    ``batch_norm``, ``activation`` and ``memory_slots`` are the head options of :class:`HashingNetwork`
    (a method's ``shc.methods.get_method(name).head``).
    """
    backbone, feature_dim = build_backbone(backbone_name, pretrained, weights, in_channels)
    return HashingNetwork(
        backbone, feature_dim, num_bits, batch_norm=batch_norm, activation=activation, memory_slots=memory_slots
    )


def build_classifier(backbone_name: str, num_classes: int, pretrained: bool = False,
                     weights: str | os.PathLike | None = None, in_channels: int = 3) -> Classifier:
    """:class:`Classifier` on ``build_backbone(backbone_name, pretrained, weights, in_channels)``."""
    backbone, feature_dim = build_backbone(backbone_name, pretrained, weights, in_channels)
    return Classifier(backbone, feature_dim, num_classes)

