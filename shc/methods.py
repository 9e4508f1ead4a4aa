"""The hashing methods as configurations of one training loop: SHC, its ablations, the nine baselines and CRH.

Each method is a :class:`MethodSpec`: which loss of :mod:`shc.losses` it trains with, which hash
centers of :mod:`shc.centers` it needs (if any), the options of its hash head
(:func:`shc.models.build_hashing_network`) and its published hyper-parameters. Switching methods is
switching the name; the network, the data, the loop (:func:`shc.train.fit`) and the metrics stay the
same. A pipeline runs any method as::

    spec = get_method(name)
    centers = None
    if spec.centers is not None:  # S: the stage-1 class similarity, needed when spec.needs_similarity
        centers = generate_centers(spec.centers, C, q, similarity=S if spec.needs_similarity else None)
    model = build_hashing_network(backbone, q, **spec.head)
    criterion = build_criterion(name, C, q, splits.train.labels, centers=centers)
    fit(model, criterion, splits.train, config, run_dir)   # codes: sign(model outputs)

``docs/baselines.md`` relates every implementation to its official code.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from torch import nn

from shc.centers import CENTER_GENERATORS, generate_centers
from shc.losses import LOSSES, _label_tensor
from shc.registry import Registry
from shc.validation import sign_codes

__all__ = ["METHODS", "MethodSpec", "OUTSIDE_PAPER", "available_methods", "build_criterion", "get_method",
           "method_label", "method_table", "outside_paper_markdown"]

_CONTEXT_ARGUMENTS = ("num_classes", "num_bits", "train_labels", "centers", "seed", "similarity")
"""What :func:`build_criterion` knows besides the hyper-parameters; a loss receives those its
constructor names."""


@dataclass(frozen=True)
class MethodSpec:
    """One hashing method (immutable).

    Attributes
    ----------
    name : str
        Registry name.
    loss : str
        Name of its loss in ``shc.losses.LOSSES``.
    centers : str or None
        The ``shc.centers`` generator of its hash centers (or codebook), None for methods without.
    needs_similarity : bool
        Its centers need the stage-1 similarity matrix S.
    head : mapping
        Keyword options of :func:`shc.models.build_hashing_network` (``batch_norm``, ``activation``,
        ``memory_slots``).
    defaults : mapping
        The hyper-parameters, keyword arguments of the loss: the published ones, except where docs/baselines.md
        records a choice (CSQ's ``gamma`` at SHC's 1e-4, MDS without its pair term); :func:`build_criterion`
        accepts exactly these names as overrides.
    reference : str
        Paper, venue and official code.
    """

    name: str
    loss: str
    centers: str | None
    needs_similarity: bool
    head: Mapping[str, Any]
    defaults: Mapping[str, Any]
    reference: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "head", MappingProxyType(dict(self.head)))
        object.__setattr__(self, "defaults", MappingProxyType(dict(self.defaults)))
        if self.loss not in LOSSES:
            raise ValueError(f"method {self.name!r}: loss {self.loss!r} is not registered in shc.losses.LOSSES.")
        if self.centers is not None and self.centers not in CENTER_GENERATORS:  # the registry now, not a copy of it
            raise ValueError(f"method {self.name!r}: centers {self.centers!r} is not one of "
                             f"{tuple(CENTER_GENERATORS.names())}.")
        if self.needs_similarity != _semantic(self.centers):
            raise ValueError(f"method {self.name!r}: needs_similarity must be True exactly for the center generators "
                             "that read S (CenterGenerator.needs_similarity).")


def _semantic(centers: str | None) -> bool:
    """Whether the center generator ``centers`` reads stage 1's S (False without centers)."""
    return centers is not None and centers in CENTER_GENERATORS and CENTER_GENERATORS.get(centers).needs_similarity


_LINEAR_HEAD = {"activation": "identity"}
_CENTER_DEFAULTS = {"gamma": 1e-4}  # SHC's (paper Sec. 4.4); the official CSQ ResNet runs use 0.05: docs/baselines.md


def _center_loss_method(name: str, centers: str, reference: str) -> MethodSpec:
    """A method trained with the CSQ/SHC center loss (:class:`shc.losses.CenterLoss`, paper Eq. 41-43) on the
    centers of generator ``centers``; it needs S exactly when those centers do."""
    return MethodSpec(name, "center", centers, _semantic(centers), {}, _CENTER_DEFAULTS, reference)


_CRH_DEFAULTS = {"scale": None, "margin": 0.2, "quantization_weight": None, "codebook_multiple": 2,
                 "reassign_until": 20, "reassign_every": 5, "reassign_from": 1}  # CRH's published settings (its own entry adds assignment)


def _scrh_method(name: str, semantic_weight: float, reference: str, **options: Any) -> MethodSpec:
    """SCRH (:class:`shc.losses.SemanticCRHLoss`) with CRH's settings, started at shc-ls's centers of the stage-1 S,
    with the semantic weight of Eq. S2 (docs/baselines.md) and any other loss ``options`` (``reassign_from``)."""
    return MethodSpec(name, "scrh", "shc-ls", True, _LINEAR_HEAD,
                      {**_CRH_DEFAULTS, "semantic_weight": semantic_weight, **options}, reference)


METHODS: Registry[MethodSpec] = Registry("method")
"""Every method by name, in the order of :func:`available_methods`; a new method is one
``METHODS.register(name, MethodSpec(...))``."""
for _spec in (
    _center_loss_method(
        "shc", "shc",
        "Chen et al., Deep Hashing with Semantic Hash Centers for Image Retrieval, ACM TOIS 2025.",
    ),
    _center_loss_method(
        "csq", "csq",
        "Yuan et al., Central Similarity Quantization, CVPR 2020; "
        "https://github.com/yuanli2333/Hadamard-Matrix-for-hashing",
    ),
    MethodSpec(
        "mds", "mds", "mds", False, {"batch_norm": True},
        {"scale": None, "quantization_weight": 1e-4, "pair_weight": 0.0},
        "Wang et al., Hash Centers with Minimal Distance Separation, CVPR 2023; "
        "https://github.com/Wangld5/Center-Hashing",
    ),
    _center_loss_method(
        "random", "random",
        "Random (Bernoulli) centers with the CSQ/SHC loss: CSQ's random-center variant (CVPR 2020).",
    ),
    _center_loss_method(
        "semantic", "semantic",
        "SHC ablation: centers from the semantic term alone, no distance constraint (TOIS 2025, Table 7).",
    ),
    _center_loss_method(
        "distance", "mds",
        "SHC ablation: minimum-distance (MDS) centers with SHC's center loss, no semantic term "
        "(TOIS 2025, Table 7 'd only'); compare 'mds', the MDS method with its own loss.",
    ),
    _center_loss_method(
        "shc-ls", "shc-ls",
        "SHC's center loss with centers from exact feasible local search on SHC's semantic loss without its "
        "spreading term (Eq. 22 with mu = 0), under the same distance constraint (shc.centers.search; "
        "docs/centers.md).",
    ),
    MethodSpec(
        "dpsh", "dpsh", None, False, _LINEAR_HEAD, {"quantization_weight": 0.1},
        "Li, Wang & Kang, Feature Learning based Deep Supervised Hashing with Pairwise Labels, IJCAI 2016; "
        "https://github.com/TreezzZ/DPSH_PyTorch",
    ),
    MethodSpec(
        "dtsh", "dtsh", None, False, _LINEAR_HEAD, {"margin": None, "quantization_weight": 1.0},
        "Wang, Shi & Kitani, Deep Supervised Hashing with Triplet Labels, ACCV 2016; "
        "https://github.com/Minione/DTSH",
    ),
    MethodSpec(
        "hashnet", "hashnet", None, False, _LINEAR_HEAD,
        {"alpha": None, "step_size": 200, "gamma": 0.005, "power": 0.5},
        "Cao et al., HashNet: Deep Learning to Hash by Continuation, ICCV 2017; "
        "https://github.com/thuml/HashNet",
    ),
    MethodSpec(
        "greedyhash", "greedyhash", None, False, _LINEAR_HEAD, {"quantization_weight": 0.1},
        "Su et al., Greedy Hash: Towards Fast Optimization for Accurate Hash Coding in CNN, NeurIPS 2018; "
        "https://github.com/ssppp/GreedyHash",
    ),
    MethodSpec(
        "idhn", "idhn", None, False, _LINEAR_HEAD,
        {"scale": 5.0, "soft_weight": 0.1, "quantization_weight": 0.1},
        "Zhang, Lai & Feng, Improved Deep Hashing with Soft Pairwise Similarity for Multi-label Image "
        "Retrieval, IEEE TMM 2019; https://github.com/pectinid16/IDHN",
    ),
    MethodSpec(
        "lth", "lth", None, False, {"memory_slots": 100}, {"beta": 0.99},
        "Chen et al., Long-Tail Hashing, SIGIR 2021; https://github.com/butterfly-chinese/long-tail-hashing",
    ),
    MethodSpec(
        "orthohash", "orthohash", "random", False, {"batch_norm": True, "activation": "identity"},
        {"scale": 8.0, "margin": 0.2, "quantization_weight": 0.0},
        "Hoe et al., One Loss for All: Deep Hashing with a Single Cosine Similarity based Learning "
        "Objective, NeurIPS 2021; https://github.com/kamwoh/orthohash",
    ),
    MethodSpec(
        "crh", "crh", None, False, _LINEAR_HEAD,
        {**_CRH_DEFAULTS, "assignment": "greedy"},
        "Yin et al., Codebook-Centric Deep Hashing: End-to-End Joint Learning of Semantic Hash Centers and "
        "Neural Hash Function (Center-Reassigned Hashing), AAAI 2026, arXiv 2511.12162; implemented from the "
        "paper's text (the released code has no licence)",
    ),
    _scrh_method("scrh", 1.0, "Ours (issue 37, docs/baselines.md): CRH started at shc-ls's semantic centers of the "
                              "stage-1 S, reassigned with their semantic fit in the cost"),
    _scrh_method("scrh-start", 0.0, "Ours (issue 37): SCRH's ablation with semantic_weight 0, CRH started at shc-ls's "
                                    "semantic centers and reassigned as CRH (the semantic start alone)"),
    _scrh_method("scrh-late", 1.0, "Ours (issue 37, docs/baselines.md): SCRH whose first reassignment waits until "
                                   "after epoch 40, when the network is near its semantic start "
                                   "(benchmarks/scrh_first_pass.py)", reassign_from=40),
):
    METHODS.register(_spec.name, _spec)

#: Methods of the comparison pages (notebook 06) that are not among the paper's: the tag their rows carry and the
#: sentence a reader needs, shown only on pages whose runs include them (issue 38: no page speaks of rows it lacks).
OUTSIDE_PAPER: Mapping[str, tuple[str, str]] = MappingProxyType({
    "shc-ls": ("ours, not in the paper", "SHC's semantic loss without its spreading term (Eq. 22 with mu = 0), "
                                         "under SHC's distance constraint, solved by exact local search "
                                         "(`docs/centers.md`), trained like SHC"),
    "crh": ("AAAI 2026, after the paper", "Center-Reassigned Hashing (Yin et al.), which learns its centers while the "
                                          "network trains (`docs/baselines.md`)"),
    "scrh": ("ours, not in the paper", "CRH started at shc-ls's semantic centers and reassigned with their fit to S "
                                       "in the cost (`docs/baselines.md`, \"SCRH\")"),
    "scrh-start": ("ours, not in the paper", "SCRH's ablation: CRH started at shc-ls's semantic centers and "
                                             "reassigned as CRH, the semantic start alone (`docs/baselines.md`)"),
    "scrh-late": ("ours, not in the paper", "SCRH whose first reassignment waits until after epoch 40, when the "
                                            "network is near its semantic start (`docs/baselines.md`)"),
})


def method_label(name: str) -> str:
    """The row label of method ``name`` on a comparison page: its name, tagged where the paper does not have it
    (:data:`OUTSIDE_PAPER`), e.g. ``"crh (AAAI 2026, after the paper)"``."""
    get_method(name)
    return f"{name} ({OUTSIDE_PAPER[name][0]})" if name in OUTSIDE_PAPER else name


def method_table(methods: Sequence[str]):
    """What each method is, one row per method (index: :func:`method_label`): its loss, its centers ("none": a
    method that learns its targets), its head ("tanh" unless the method sets one) and its reference."""
    import pandas as pd

    specs = [get_method(name) for name in methods]
    return pd.DataFrame([{"method": method_label(name), "loss": spec.loss, "centers": spec.centers or "none",
                          "head": dict(spec.head) or "tanh", "reference": spec.reference}
                         for name, spec in zip(methods, specs)]).set_index("method")


def outside_paper_markdown(methods: Sequence[str]) -> str:
    """The Markdown that introduces the methods of ``methods`` that are not in the paper (:data:`OUTSIDE_PAPER`),
    one sentence each in the order given; empty when every method is the paper's."""
    for name in methods:
        get_method(name)
    sentences = [f"`{name}` (**{OUTSIDE_PAPER[name][0]}**) is {OUTSIDE_PAPER[name][1]}; its rows are labelled so."
                 for name in dict.fromkeys(methods) if name in OUTSIDE_PAPER]
    return " ".join(sentences)


def available_methods() -> list[str]:
    """Names accepted by :func:`get_method`: SHC, the center methods and ablations, then the other baselines."""
    return METHODS.names()


def get_method(name: str) -> MethodSpec:
    """The :class:`MethodSpec` of ``name``; a ValueError suggests the closest names and lists the known ones."""
    return METHODS.get(name)


def _check_centers(centers: Any, num_classes: int, num_bits: int, name: str) -> np.ndarray:
    shape = np.shape(centers)
    if tuple(shape) != (num_classes, num_bits):
        raise ValueError(f"method {name!r} needs ({num_classes}, {num_bits}) centers (num_classes, num_bits), got "
                         f"shape {tuple(shape)}.")
    return sign_codes(centers, f"the centers of method {name!r}")


def build_criterion(name: str, num_classes: int, num_bits: int, train_labels: Any, centers: Any | None = None,
                    seed: int = 0, similarity: Any | None = None, **overrides: Any) -> nn.Module:
    """The training loss of method ``name`` with its published hyper-parameters.

    Parameters
    ----------
    name : str
        One of :func:`available_methods`.
    num_classes, num_bits : int
        C and q (the network's code length).
    train_labels : array-like
        The labels of the training split given to ``fit``, in dataset order: (N,) class indices or
        (N, C) multi-hot rows. Memory-bank losses (DPSH, MDS's pair term) size their bank with it and
        LTH counts classes in it.
    centers : array-like, optional
        (C, q) +-1 centers for methods with ``spec.centers``, from
        ``shc.centers.generate_centers(spec.centers, ...)``. If omitted, centers that need no similarity
        matrix (``random``, ``csq``, ``mds``) are generated here with ``seed``; ``shc`` and ``semantic``
        require them.
    seed : int
        Seed of generated centers and of the center loss's multi-label tie-break signs.
    similarity : array-like, optional
        The stage-1 S (C, C), for a loss that reads it (SCRH's semantic reassignment); others ignore it.
    **overrides
        Hyper-parameters replacing ``spec.defaults`` (only those names are accepted).

    Returns
    -------
    torch.nn.Module
        ``criterion(outputs, labels, indices) -> scalar``; it may own trainable parameters (classifiers),
        which ``shc.train.fit`` optimises with the network.
    """
    spec = get_method(name)
    unknown = sorted(set(overrides) - set(spec.defaults))
    if unknown:
        allowed = ", ".join(f"{key}={value!r}" for key, value in spec.defaults.items())
        raise TypeError(f"unknown hyper-parameter(s) {unknown} for method {name!r}; allowed: {allowed}.")
    labels = _label_tensor(train_labels, num_classes)  # validated once for every method
    if spec.centers is None:
        if centers is not None:
            raise ValueError(f"method {name!r} uses no hash centers; drop centers=.")
    elif centers is None:
        if spec.needs_similarity:
            raise ValueError(
                f"method {name!r} needs centers built from the stage-1 similarity S: pass centers="
                f"shc.centers.generate_centers({spec.centers!r}, {num_classes}, {num_bits}, similarity=S)."
            )
        centers = generate_centers(spec.centers, num_classes, num_bits, seed=seed)
    else:
        centers = _check_centers(centers, num_classes, num_bits, name)
    context = dict(zip(_CONTEXT_ARGUMENTS, (num_classes, num_bits, labels, centers, seed, similarity)))
    loss_class = LOSSES[spec.loss]
    accepted = inspect.signature(loss_class).parameters
    arguments = {key: value for key, value in context.items() if key in accepted}
    return loss_class(**arguments, **{**spec.defaults, **overrides})
