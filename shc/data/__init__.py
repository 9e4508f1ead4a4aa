"""Datasets for deep hashing: a registry of loaders returning train / val / query / database splits.

``load_dataset(name, root, seed, **options)`` returns a :class:`DatasetSplits` whose four
:class:`HashingSplit` objects yield ``(image, label, index)`` items with the default transforms of
:func:`default_transforms` attached. Registered names (see :func:`available_datasets`):

``digits-composite`` (the default; embedded, nothing to download)
    Real handwritten 8x8 digits from scikit-learn's ``load_digits`` composed side by side into
    multi-digit numbers (``num_digits=2``: 100 classes "00".."99"; ``3``: 1,000 classes). Classes
    sharing a digit share visual structure, so a data-dependent class similarity has a known ground
    truth; the hierarchy (coarse class = first digit) is ``coarse_labels``. The four splits are drawn
    from disjoint pools of base images: no handwritten digit appears in two splits.
``fashion-composite`` / ``mnist-composite``
    The same construction from 28x28 Fashion-MNIST / MNIST idx files (train and t10k pooled), found
    in ``root`` (or torchvision's ``root/FashionMNIST/raw``, ``root/MNIST/raw``), else in Debian's
    ``/usr/share/datasets/fashion-mnist`` (``apt-get install dataset-fashion-mnist``), else, with
    ``download=True``, fetched from torchvision's mirror into ``root/FashionMNIST/raw`` (md5-checked,
    with a timeout: ``$SHC_DOWNLOAD_TIMEOUT``, default 30 s); a failure says how to install the files.
``fashion-modes``
    Classes that are not products of parts (:mod:`shc.data.modes`): each Fashion-MNIST item split into
    ``subclasses`` visual modes by k-means (10 x 10 = 100 classes; coarse class = item), as Stanford Cars'
    models are modes of its makes. Same files as ``fashion-composite``.
``cifar100``, ``stanford-cars-a``, ``stanford-cars-b``, ``nabirds-a``, ``nabirds-b``
    The paper's datasets in their official on-disk formats with the paper's protocols (Sec. 5.1,
    Table 1). The validation split is always carved out of the training split (fit on train minus
    val); for the A protocols the database is still the full official training set (so it contains
    the validation images). Two Table 1 numbers do not match the official files: Cars-A lists 8,184
    training images (the devkit has 8,144) and NABirds-A lists 24,633 train / 23,929 query (the
    official split has 23,929 train / 24,633 test; ``train_on_official_test=True`` reproduces the
    paper's counts). NABirds-B's three sizes add up to more than the dataset: its database is the rest.
    Hierarchies: CIFAR-100's 20 superclasses; for NABirds the 555 leaf classes that hold images are
    numbered 0..554 in class-id order and their parent in ``hierarchy.txt`` is the coarse class;
    Stanford Cars has none.
``imagefolder``
    A user's own ``root/<class>/<image>`` tree with a seeded, stratified, disjoint random split.

Files are looked for in ``root`` (or its conventional sub-folder: ``cifar-100-python``,
``stanford_cars``, ``nabirds``), by default :func:`default_data_root` (``$SHC_DATA_ROOT`` or
``~/shc-data``); a missing dataset raises FileNotFoundError naming the expected files and where to
get them.

Random ("B"-style) splits are *stratified*: every class is divided in proportion to its size, with
exactly the requested totals; this is a random selection as in the paper, with less variance
across seeds. All splits are deterministic for a seed. The query and database splits are stored in a
seeded random order (:func:`evaluation_order`), never grouped by class, so that breaking Hamming ties
by database index is not correlated with the class.

Options of each dataset (keyword arguments of ``load_dataset``; every dataset also takes
``image_size``, forwarded to :func:`default_transforms`):

==================== ==========================================================================
composites           ``num_digits`` (``num_items`` for fashion) = None (2, 3 when ``num_classes``
                     > 100, 4 when > 1,000), ``num_classes`` = all (else a deterministic, evenly spaced subset of
                     the numbers: e.g. 555 of the 1,000 three-digit ones), ``train_per_class``
                     = 50, ``val_per_class`` = 10, ``query_per_class`` = 10,
                     ``database_per_class`` = 50; fashion / mnist also ``download`` = False.
fashion-modes        ``subclasses`` = 10, ``train_per_class`` = 50, ``val_per_class`` = 10,
                     ``query_per_class`` = 10, ``database_per_class`` = 50, ``download`` = False.
cifar100             ``train_size`` = 10,000, ``query_size`` = 5,000, ``database_size`` = None
                     (all the rest: 45,000), ``val_size`` = 0.1 (of train), ``download`` = False.
stanford-cars-a      ``val_size`` = 0.1 (of the official train set).
stanford-cars-b      ``train_size`` = 5,880, ``query_size`` = 1,958, ``database_size`` = None
                     (the rest: 8,347), ``val_size`` = 0.1.
nabirds-a            ``val_size`` = 0.1, ``train_on_official_test`` = False.
nabirds-b            ``train_size`` = 16,384, ``query_size`` = 8,171, ``database_size`` = None
                     (the rest: 24,007), ``val_size`` = 0.1.
imagefolder          ``train_size`` = 0.5, ``query_size`` = 0.1, ``database_size`` = None,
                     ``val_size`` = 0.1, ``extensions`` = common image suffixes.
==================== ==========================================================================

Every dataset also takes ``unseen_classes`` (default 0): a count, or a fraction of the classes, held out of
training under the unseen-class protocol of :mod:`shc.data.unseen` (train and val keep the seen classes only,
query and database keep all; held-out labels are numbered after the seen ones).

Sizes are counts (int) or fractions (float in [0, 1]) of the images they are drawn from. Since the
validation split comes out of the paper's training split, the default ``val_size=0.1`` fits on 10%
fewer images than the paper; ``val_size=0`` fits on all of them (and leaves the validation split
empty, so no model selection).

Modules: :mod:`~shc.data.splits` (containers, stratified partitions), :mod:`~shc.data.transforms`,
:mod:`~shc.data.composites`, :mod:`~shc.data.formats` (paper datasets, image folders).

Fast path: the composites' transform (:class:`CompositeTransform`) works on whole batches, so
in-memory splits with it fetch DataLoader batches in one vectorised call (``__getitems__``) and
:meth:`HashingSplit.tensors` returns a whole transformed split at once.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shc.registry import Registry
from shc.data.composites import _load_digits_composite, _load_fashion_composite, _load_mnist_composite
from shc.data.modes import _load_fashion_modes
from shc.data.formats import (
    _load_cifar100,
    _load_imagefolder,
    _load_nabirds_a,
    _load_nabirds_b,
    _load_stanford_cars_a,
    _load_stanford_cars_b,
    default_data_root,
)
from shc.data.splits import DatasetSplits, HashingSplit
from shc.data.transforms import CompositeTransform, natural_image_transform
from shc.data.unseen import hold_out_classes

__all__ = [
    "check_dataset_options",
    "CompositeTransform",
    "DATASETS",
    "DatasetSplits",
    "HashingSplit",
    "available_datasets",
    "foreign_prose",
    "default_data_root",
    "default_transforms",
    "evaluation_order",
    "load_dataset",
    "natural_image_transform",
]


@dataclass(frozen=True)
class _Entry:
    loader: Callable[..., DatasetSplits]
    pixel_stats: tuple[float, float] | None  # grey composites: (mean, std) on [0, 1]; None: natural images
    #: phrases that describe this dataset's classes and no other's: a report page of another dataset that contains
    #: one speaks of a foreign testbed (``foreign-prose``, :mod:`shc.reports.check`; issue 38)
    prose: tuple[str, ...] = ()


#: Every dataset by name (a new dataset is one ``DATASETS.register(name, _Entry(loader, pixel_stats))``).
DATASETS: Registry[_Entry] = Registry("dataset")
_DIGITS_PROSE = ("two-digit", "tens digit")  # a class is a two-digit number; its coarse class, the tens digit
DATASETS.register("digits-composite", _Entry(_load_digits_composite, (0.3053, 0.3759), _DIGITS_PROSE))  # load_digits
DATASETS.register("fashion-composite", _Entry(_load_fashion_composite, (0.2860, 0.3530),  # Fashion-MNIST train set
                                              ("pair of Fashion-MNIST items", "pairs of Fashion-MNIST items",
                                               "three Fashion-MNIST items")))
DATASETS.register("mnist-composite", _Entry(_load_mnist_composite, (0.1307, 0.3081), _DIGITS_PROSE))  # MNIST train set
DATASETS.register("fashion-modes", _Entry(_load_fashion_modes, (0.2860, 0.3530), ("visual mode",)))  # as above
DATASETS.register("cifar100", _Entry(_load_cifar100, None))
DATASETS.register("stanford-cars-a", _Entry(_load_stanford_cars_a, None))
DATASETS.register("stanford-cars-b", _Entry(_load_stanford_cars_b, None))
DATASETS.register("nabirds-a", _Entry(_load_nabirds_a, None))
DATASETS.register("nabirds-b", _Entry(_load_nabirds_b, None))
DATASETS.register("imagefolder", _Entry(_load_imagefolder, None))

available_datasets = DATASETS.names
_entry = DATASETS.get


def default_transforms(name: str, train: bool, image_size: int | tuple[int, int] | None = None) -> Callable:
    """The transform ``load_dataset`` attaches to the ``train`` (augmenting) or evaluation splits.

    Composites: :class:`CompositeTransform` (native size unless ``image_size``; +-1 px random
    translation for training). Natural images: :func:`natural_image_transform` (the paper's
    resize 256 / crop 224 / flip, ImageNet normalisation; ``image_size`` replaces 224).
    """
    entry = _entry(name)
    if entry.pixel_stats is not None:
        return CompositeTransform(*entry.pixel_stats, train=train, image_size=image_size)
    if image_size is not None and not isinstance(image_size, int):
        raise ValueError(f"natural-image datasets take a square image_size (int), got {image_size!r}")
    return natural_image_transform(train, 224 if image_size is None else image_size)


def foreign_prose(text: str, dataset: str | None) -> list[str]:
    """The phrases of ``text`` that describe another registered dataset's classes and not ``dataset``'s (a page
    about fashion-composite that speaks of "two-digit numbers"); sorted, each once. ``dataset`` None or unknown:
    every dataset's phrases count as foreign."""
    own = set(DATASETS.get(dataset).prose) if dataset in DATASETS else set()
    lowered = text.lower()
    return sorted({phrase for _, entry in DATASETS.items() for phrase in entry.prose
                   if phrase not in own and phrase.lower() in lowered})

def check_dataset_options(name: str, options: Mapping[str, Any]) -> None:
    """Refuse ``options`` that dataset ``name``'s loader does not take, naming the ones it does (what
    :func:`load_dataset` checks first; a grid checks its configs with it before it plans any run)."""
    entry = _entry(name)
    parameters = inspect.signature(entry.loader).parameters
    accepted = {key: p.default for key, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}
    unknown = sorted(set(options) - set(accepted) - {"image_size", "unseen_classes"})
    if unknown:
        known = ", ".join(f"{key}={default!r}" for key, default in accepted.items())
        raise ValueError(
            f"unknown option(s) {unknown} for {name!r}; its options are image_size=None, unseen_classes=0, {known}"
        )


def load_dataset(
    name: str = "digits-composite", root: str | Path | None = None, seed: int = 0, **options: Any
) -> DatasetSplits:
    """Load a registered dataset's train / val / query / database splits with default transforms.

    Parameters
    ----------
    name : str
        One of :func:`available_datasets` (see the module docstring for each one's protocol).
    root : str or Path, optional
        Folder holding the dataset files (or its parent). Default: :func:`default_data_root`;
        unused by ``digits-composite``.
    seed : int
        Seed of every random choice (splits, composites); same seed, same splits.
    **options
        Dataset options (module docstring table), plus ``image_size`` for the transforms and
        ``unseen_classes`` (a count or fraction of the classes held out of training: :mod:`shc.data.unseen`).

    Raises
    ------
    ValueError
        Unknown name or option.
    FileNotFoundError
        Dataset files missing; the message lists the expected files and where to get them.
    """
    entry = _entry(name)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    check_dataset_options(name, options)
    image_size = options.pop("image_size", None)
    unseen_classes = options.pop("unseen_classes", 0)
    splits = entry.loader(Path(root).expanduser() if root is not None else None, int(seed), **options)
    if unseen_classes:
        splits = hold_out_classes(splits, unseen_classes, int(seed))
    train_transform = default_transforms(name, True, image_size)
    eval_transform = default_transforms(name, False, image_size)
    query, database = evaluation_order(splits.query, splits.database, int(seed))
    if image_size is not None:  # what the networks see is not the base images' size: say so where the data is named
        splits = dataclasses.replace(splits,
                                     protocol=f"{splits.protocol}; {_input_size_phrase(train_transform, image_size)}")
    return dataclasses.replace(
        splits,
        train=splits.train.with_transform(train_transform),
        val=splits.val.with_transform(eval_transform),
        query=query.with_transform(eval_transform),
        database=database.with_transform(eval_transform),
    )


def _input_size_phrase(transform: Callable, image_size: int | tuple[int, int]) -> str:
    """How ``image_size`` resizes the images for the networks, in words (a dataset's ``protocol``)."""
    if not isinstance(image_size, (int, np.integer)):
        return f"the networks see the images at {image_size[0]}x{image_size[1]} pixels"
    if isinstance(transform, CompositeTransform):  # an int sets the height and keeps the aspect ratio
        return f"the networks see the images at {image_size} pixels high (width in proportion)"
    return f"the networks see {image_size}x{image_size} crops of the images"


#: Salt of the evaluation order's generator, so that it is independent of every other draw of ``seed``.
_EVALUATION_ORDER_SALT = 0x0DE7


def evaluation_order(query: HashingSplit, database: HashingSplit, seed: int) -> tuple[HashingSplit, HashingSplit]:
    """The query and database splits in a seeded random order, independent of the class.

    Hamming ranking breaks ties by database index (:mod:`shc.metrics`). Loaders build their splits class by
    class (the composites) or in file order; on a database grouped by class, "ties by index" puts whole
    classes of a tie in a fixed order and biases every id-order metric (P@K rose with K on the ``standard``
    preset). Stored in a random order, the id-order metrics are one random draw of the tie order and the
    tie-aware ones (their expectation) do not depend on the order at all. Same seed, same order.
    """
    rng = np.random.default_rng([int(seed), _EVALUATION_ORDER_SALT])
    return query.subset(rng.permutation(len(query))), database.subset(rng.permutation(len(database)))
