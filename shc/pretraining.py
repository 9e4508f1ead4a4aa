"""Stage 0: a backbone pretrained on a disjoint source task, the offline analogue of the paper's ImageNet start.

The paper fine-tunes an ImageNet-pretrained ResNet-34 in both networks (the stage-1 classifier and the hashing
network). Here no ImageNet weights can be had, so the regime is rebuilt from data the package has: a
**source task** (:data:`PRETRAIN_SOURCES`) trains the configured backbone with a classification head once per
(dataset, seed); the backbone's weights (``weights.pt``, the stage's artifact) then start every network of the
run. A run asks for it with ``RunConfig(pretrain="items")``; its stage folder is keyed by identity like every
other stage (``<run_dir>/<dataset>/seed<k>/stage0-pretrain-<source>-<key>/``), and stages 1 and 3 of such a run
carry stage 0's identity in theirs.

Sources
-------
``items``
    Single-item classification on a composite dataset's base images (10 Fashion-MNIST items, 10 digits): every
    base image outside the **query** pool of the seed, alone at a random position of a canvas the size of a
    composite (:func:`shc.data.composites.composite_items`), at the run's input size, 5% held out to select the
    epoch. No composite class is a label there (labels are single items, the classes are ordered tuples of
    them) and no query image's item is in it. Like ImageNet for CIFAR-100 it knows the parts the classes are
    made of, not the classes; unlike it, its items are the exact parts. The database pool stays in, as
    ImageNet-scale sources hold images like the retrieval database.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from shc.registry import Registry

__all__ = ["PRETRAIN_SOURCES", "PretrainData", "PretrainSource", "available_pretrain_sources", "pretraining_data"]


@dataclass(frozen=True)
class PretrainData:
    """A source task: training and held-out splits (items ``(image, label, index)``), its class names, a line."""

    train: object  # shc.data.HashingSplit with the augmenting transform
    val: object  # shc.data.HashingSplit with the evaluation transform
    class_names: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class PretrainSource:
    """One source task: ``build(config) -> PretrainData`` and what it is."""

    name: str
    build: Callable[..., PretrainData]
    description: str


#: Every pretraining source by name (a new source is one ``PRETRAIN_SOURCES.register(name, PretrainSource(...))``).
PRETRAIN_SOURCES: Registry[PretrainSource] = Registry("pretraining source")
available_pretrain_sources = PRETRAIN_SOURCES.names

VAL_FRACTION = 0.05
"""Share of the source held out to select the pretraining epoch."""


def _items(config) -> PretrainData:
    from shc.data import HashingSplit, default_transforms
    from shc.data.cache import load_data
    from shc.data.composites import COMPOSITE_BASES, composite_items

    if config.dataset not in COMPOSITE_BASES:
        raise ValueError(f"pretrain='items' needs a composite dataset ({', '.join(sorted(COMPOSITE_BASES))}); "
                         f"{config.dataset!r} is not one. Use pretrained=True (ImageNet weights) for natural images.")
    options = dict(config.dataset_options)
    image_size = options.pop("image_size", None)
    composite = load_data(config).train.raw_image(0)
    num_items = composite.shape[1] // composite.shape[0]  # square base items side by side
    counts = {key: value for key, value in options.items() if key.endswith("_per_class")}
    items = composite_items(config.dataset, config.data_root, config.seed, exclude=("query",), num_items=num_items,
                            download=bool(options.get("download", False)), **counts)  # a str root is made a Path
    held_out = np.random.default_rng([config.seed, 0x5E1]).random(len(items.labels)) < VAL_FRACTION
    splits = [HashingSplit(items.labels[part], images=items.images[part], source_ids=items.source_ids[part],
                           transform=default_transforms(config.dataset, train, image_size))
              for part, train in ((~held_out, True), (held_out, False))]
    return PretrainData(*splits, items.names, f"single-item classification on {items.description}; "
                                               f"{held_out.sum():,} held out")


PRETRAIN_SOURCES.register("items", PretrainSource(
    "items", _items, "single-item classification on the composite's base images outside the query pool"))


def pretraining_data(config) -> PretrainData:
    """The source task of ``config.pretrain`` for ``config``'s dataset and seed."""
    return PRETRAIN_SOURCES.get(config.pretrain).build(config)
