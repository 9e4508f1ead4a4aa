"""Split containers and split arithmetic: :class:`HashingSplit`, :class:`DatasetSplits`, and the
stratified random partitions behind every protocol."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

__all__ = ["DatasetSplits", "HashingSplit"]


class HashingSplit(Dataset):
    """One split (train, val, query or database) of a hashing dataset.

    Items are ``(image, label, index)``: the transformed image (float ``(3, H, W)`` with the
    default transforms), the label (int64 scalar tensor, or float32 multi-hot ``(C,)``) and the
    sample's index within this split (for memory-bank losses).

    Parameters
    ----------
    labels : np.ndarray
        ``(n,)`` class indices or ``(n, C)`` multi-hot labels.
    images : np.ndarray, optional
        In-memory storage: ``(n, H, W)`` grey or ``(n, H, W, 3)`` RGB uint8 images.
    paths : sequence of str or Path, optional
        File storage: ``n`` image files, read lazily with PIL and converted to RGB. Give exactly one
        of ``images`` and ``paths``.
    transform : callable, optional
        Applied to each image (a uint8 array for in-memory storage, a PIL image for files). A
        transform with a true ``batched`` attribute also maps a ``(B, H, W[, 3])`` uint8 stack to
        ``(B, 3, H', W')``; in-memory splits then transform whole batches at once.
    source_ids : np.ndarray, optional
        Provenance of each sample: ``(n,)`` index in the dataset's full image list, or ``(n, k)``
        base-image ids of a composite's ``k`` items. Default ``arange(n)``.
    """

    def __init__(
        self,
        labels: np.ndarray,
        *,
        images: np.ndarray | None = None,
        paths: Sequence[str | Path] | None = None,
        transform: Callable | None = None,
        source_ids: np.ndarray | None = None,
    ) -> None:
        labels = np.asarray(labels)
        if labels.ndim not in (1, 2):
            raise ValueError(
                f"labels must be (n,) class indices or (n, C) multi-hot, got shape {labels.shape}"
            )
        self.labels = labels.astype(np.int64 if labels.ndim == 1 else np.float32, copy=False)
        if (images is None) == (paths is None):
            raise ValueError("give exactly one of images= (in-memory uint8 array) or paths= (files)")
        n = len(self.labels)
        if images is not None:
            images = np.asarray(images)
            if images.dtype != np.uint8 or images.ndim not in (3, 4) or len(images) != n:
                raise ValueError(
                    f"images must be a uint8 array (n={n}, H, W[, 3]); got {images.dtype} "
                    f"{images.shape}: convert with .astype(np.uint8) and match the labels"
                )
        if paths is not None:
            paths = np.asarray([str(p) for p in paths], dtype=object)
            if len(paths) != n:
                raise ValueError(f"got {len(paths)} paths for {n} labels: give one path per label")
        self._images = images
        self._paths = paths
        self.transform = transform
        self.source_ids = np.arange(n) if source_ids is None else np.asarray(source_ids)
        if len(self.source_ids) != n:
            raise ValueError(f"source_ids has {len(self.source_ids)} rows for {n} samples")

    def __len__(self) -> int:
        return len(self.labels)

    def __repr__(self) -> str:
        if self._images is not None:
            storage = "in-memory " + "x".join(map(str, self._images.shape[1:]))
        else:
            storage = "image files"
        transform = repr(self.transform)
        if "\n" in transform:  # e.g. a torchvision Compose: keep the repr on one line
            transform = f"{type(self.transform).__name__}(...)"
        return f"HashingSplit(n={len(self)}, {storage}, transform={transform})"

    @property
    def in_memory(self) -> bool:
        """True when the images are held in a uint8 array (no file reads)."""
        return self._images is not None

    @property
    def batched(self) -> bool:
        """True when a batch is one vectorised transform call on held pixels (the composites): such a split is
        fastest in the training process itself, with no DataLoader workers (:func:`shc.devices.resolve_num_workers`)."""
        return self._images is not None and bool(getattr(self.transform, "batched", False))

    @property
    def paths(self) -> np.ndarray | None:
        """The image file of each sample (file-backed splits), else None."""
        return self._paths

    def _load(self, i: int) -> Any:
        if self._images is not None:
            return self._images[i]
        from PIL import Image, UnidentifiedImageError

        from shc.data.transforms import convert_image

        try:
            with Image.open(self._paths[i]) as image:
                return convert_image(image, "RGB")
        except (OSError, UnidentifiedImageError, ValueError) as error:
            raise ValueError(f"image file {self._paths[i]} cannot be read ({error}); replace or remove it, then "
                             "rerun (the data fingerprint changes, so no stale result is reused).") from None

    def raw_image(self, i: int) -> np.ndarray:
        """The stored image ``i`` untransformed: ``H x W x 3`` (or ``H x W`` grey) uint8, for display."""
        return np.asarray(self._load(i))

    def __getitem__(self, i: int) -> tuple[Any, torch.Tensor, int]:
        i = int(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"index {i} out of range for a split of {len(self)} samples")
        i %= len(self)
        image = self._load(i)
        if self.transform is not None:
            image = self.transform(image)
        return image, torch.tensor(self.labels[i]), i

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, torch.Tensor, int]]:
        """A batch of items; one vectorised transform call for in-memory batched transforms."""
        if not self.batched:
            return [self[i] for i in indices]
        indices = [int(i) for i in indices]
        images = self.transform(self._images[indices])
        labels = torch.as_tensor(self.labels[indices])
        return list(zip(images.unbind(0), labels.unbind(0), indices))

    def tensors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The whole transformed split as ``(images (n, 3, H, W), labels)`` tensors.

        One call for in-memory splits with a batched transform (the composites); otherwise a loop
        over the items, so mind the memory for large file-backed splits (use a DataLoader there).
        With an augmenting (train) transform this is one random draw of the augmentation.
        """
        if self.transform is None:
            raise ValueError("tensors() needs a transform: use split.with_transform(...) first")
        labels = torch.as_tensor(self.labels)
        if self.batched:
            return self.transform(self._images), labels
        if len(self) == 0:
            raise ValueError("tensors() of an empty split with a per-image transform is undefined")
        return torch.stack([self[i][0] for i in range(len(self))]), labels

    def with_transform(self, transform: Callable | None) -> HashingSplit:
        """The same split (shared storage) with another transform."""
        other = copy.copy(self)
        other.transform = transform
        return other

    def subset(self, indices: np.ndarray) -> HashingSplit:
        """A new split of the samples ``indices`` (in that order), same transform."""
        indices = np.asarray(indices, dtype=np.int64)
        return HashingSplit(
            self.labels[indices],
            images=None if self._images is None else self._images[indices],
            paths=None if self._paths is None else self._paths[indices],
            transform=self.transform,
            source_ids=self.source_ids[indices],
        )


def _shared_rows(reference: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Which of ``rows`` (``(n,)`` ids or ``(n, k)`` id tuples) also stand in ``reference``: a boolean mask over
    ``rows``."""
    reference, rows = np.asarray(reference), np.asarray(rows)
    if len(reference) == 0 or len(rows) == 0:
        return np.zeros(len(rows), bool)
    _, inverse = np.unique(np.concatenate([reference, rows]), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    in_reference = np.zeros(inverse.max() + 1, bool)
    in_reference[inverse[: len(reference)]] = True
    return in_reference[inverse[len(reference):]]


@dataclass(frozen=True, eq=False)  # identity equality: the fields hold arrays
class DatasetSplits:
    """The four splits of a dataset with its class metadata.

    Attributes
    ----------
    name : str
        Registry name.
    train, val, query, database : HashingSplit
        ``val`` is for model selection; it never overlaps ``train`` or ``query``.
    class_names : list of str
        ``num_classes`` names, in label order.
    num_classes : int
    multi_label : bool
        Whether labels are ``(n, C)`` multi-hot.
    coarse_labels : np.ndarray or None
        ``(C,)`` coarse class id of each class (the hierarchy), or None.
    coarse_names : list of str or None
        Names of the coarse classes, indexed by ``coarse_labels``.
    coarse_meaning : str
        What a class's coarse class is on this dataset, in words ("the class of its first item"; empty: not said);
        :attr:`coarse_title` puts it in legends.
    protocol : str
        One line describing the split protocol and sizes (for reports).
    unseen_names : list of str
        Names of the classes held out of training (:mod:`shc.data.unseen`; label ``num_classes + i`` in the query
        and database splits is ``unseen_names[i]``); empty when every class is seen.
    unseen_coarse_labels : np.ndarray or None
        The coarse class of each held-out class (with a hierarchy), in ``unseen_names``' order.
    val_in_database : bool
        Whether the database also holds the validation images (an official protocol whose database is the whole
        official training set, from which ``val`` is carved; the splits' ``source_ids`` then index one image list).
    """

    name: str
    train: HashingSplit
    val: HashingSplit
    query: HashingSplit
    database: HashingSplit
    class_names: list[str] = field(repr=False)
    num_classes: int
    multi_label: bool
    coarse_labels: np.ndarray | None = field(repr=False)
    coarse_names: list[str] | None = field(repr=False)
    protocol: str
    unseen_names: list[str] = field(default_factory=list, repr=False)
    unseen_coarse_labels: np.ndarray | None = field(default=None, repr=False)
    val_in_database: bool = False
    coarse_meaning: str = ""

    @property
    def coarse_title(self) -> str:
        """A legend's title for coarse classes: "coarse class (the class of its first item)", or "coarse class"."""
        return f"coarse class ({self.coarse_meaning})" if self.coarse_meaning else "coarse class"

    def __post_init__(self) -> None:
        if len(self.class_names) != self.num_classes:
            raise ValueError(f"{len(self.class_names)} class names for {self.num_classes} classes")
        if self.coarse_labels is not None:
            if self.coarse_labels.shape != (self.num_classes,) or self.coarse_names is None:
                raise ValueError("coarse_labels must be (num_classes,) and come with coarse_names")
            if self.coarse_labels.min() < 0 or self.coarse_labels.max() >= len(self.coarse_names):
                raise ValueError("coarse_labels must index coarse_names")

    def selection_left_out(self) -> tuple[str, ...]:
        """What :meth:`selection_database` leaves out of the database, in words (empty: nothing)."""
        left_out = []
        if self.unseen_names:
            left_out.append("held-out classes")
        if self.val_in_database:
            left_out.append("validation images")
        return tuple(left_out)

    def selection_mask(self) -> np.ndarray:
        """Which database images :meth:`selection_database` keeps (a boolean mask over ``database``)."""
        keep = np.ones(len(self.database), bool)
        if self.val_in_database:  # found by source_ids, which such a protocol's splits share
            keep &= ~_shared_rows(self.val.source_ids, self.database.source_ids)
        if self.unseen_names:
            keep &= np.asarray(self.database.labels) < self.num_classes
        return keep

    def selection_database(self) -> HashingSplit:
        """The database stage 3's model selection ranks the validation queries against: this database without the
        images of held-out classes (the unseen-class protocol, :mod:`shc.data.unseen`: no training stage meets
        them) and without the validation images themselves (an official protocol's database is the whole official
        training set, from which ``val`` is carved, so each validation query would find itself at distance 0);
        the database itself where neither applies (every composite and ``fashion-modes`` protocol)."""
        keep = self.selection_mask()
        return self.database if keep.all() else self.database.subset(np.flatnonzero(keep))

    def fingerprint(self) -> str:
        """A short hash of the data itself: class names and hierarchy, and for every split its labels,
        provenance and images (the pixels of in-memory images; path, size and modification time of
        files). Two loads of the same files give the same value; adding, removing, relabelling or
        editing an image changes it. The pipeline keys its cached stages on it."""
        import hashlib

        digest = hashlib.blake2b(digest_size=8)
        digest.update("\x1f".join(self.class_names).encode())
        if self.coarse_labels is not None:
            digest.update(np.ascontiguousarray(self.coarse_labels).tobytes())
        if self.unseen_names:  # only then, so the fingerprints of data without held-out classes stay as they were
            digest.update(("\x1e" + "\x1f".join(self.unseen_names)).encode())
        for name, split in self.splits.items():
            digest.update(name.encode())
            digest.update(np.ascontiguousarray(split.labels).tobytes())
            digest.update(np.ascontiguousarray(split.source_ids).tobytes())
            if split.in_memory:
                digest.update(np.ascontiguousarray(split._images).tobytes())
            else:
                digest.update(_file_stats(split.paths))
        return digest.hexdigest()

    def source_stamp(self, root: str | os.PathLike | None = None) -> str:
        """A short hash of what these splits were read from, as it is on disk *now*: each image file's path,
        size and modification time and the modification time of each folder holding one; with ``root``, also
        every file and folder down to two levels below it (the index, label and array files of every layout:
        ``images.txt``, ``devkit/*.mat``, ``cifar-100-python/train``, ``MNIST/raw/*``). Adding, removing,
        renaming or editing a file changes it, so a per-process cache that compares it
        (:func:`shc.runs.load_data`) never serves splits that no longer match the files."""
        import hashlib

        digest = hashlib.blake2b(digest_size=8)
        entries: list[str] = []
        for split in self.splits.values():
            if not split.in_memory:
                digest.update(_file_stats(split.paths))
                entries += sorted({os.path.dirname(os.path.abspath(path)) for path in split.paths})
        if root is not None:
            level = [os.path.abspath(root)] if os.path.isdir(root) else []
            for _ in range(3):  # root, its sub-folders, theirs
                entries += level
                listed = [entry for folder in level for entry in os.scandir(folder)]
                entries += sorted(entry.path for entry in listed if entry.is_file())
                level = sorted(entry.path for entry in listed if entry.is_dir())
        digest.update(_file_stats(entries))
        return digest.hexdigest()

    @property
    def all_class_names(self) -> list[str]:
        """The name of every label of the query and database splits: the seen classes, then the held-out ones."""
        return [*self.class_names, *self.unseen_names]

    @property
    def all_coarse_labels(self) -> np.ndarray | None:
        """The coarse class of every label of the query and database splits (seen, then held out), or None."""
        if self.coarse_labels is None or self.unseen_coarse_labels is None:
            return self.coarse_labels
        return np.concatenate([self.coarse_labels, self.unseen_coarse_labels])

    @property
    def splits(self) -> dict[str, HashingSplit]:
        """The four splits by name, in the order train, val, query, database."""
        return {"train": self.train, "val": self.val, "query": self.query, "database": self.database}


def _file_stats(paths: Sequence[str | os.PathLike]) -> bytes:
    """Path, size and modification time of each file or folder (``missing`` for one that is gone), as bytes."""
    parts = []
    for path in paths:
        try:
            stat = os.stat(path)
            parts.append(f"{path}\x1f{stat.st_size}\x1f{stat.st_mtime_ns}")
        except OSError:
            parts.append(f"{path}\x1fmissing")
    return "".join(parts).encode()  # as the fingerprint always hashed them: its keys stay the same


# ----------------------------------------------------------------------------------------------
# Split arithmetic
# ----------------------------------------------------------------------------------------------


def _stratified_partition(labels: np.ndarray, sizes: Sequence[int], rng: np.random.Generator) -> np.ndarray:
    """Assign each sample to one of ``len(sizes)`` parts of exactly the given sizes, every class
    divided in proportion to its size (largest remainders, random tie-break), members chosen at
    random. Samples beyond ``sum(sizes)`` get part id ``len(sizes)``.

    Returns the ``(n,)`` part id of each sample.
    """
    n = len(labels)
    if sum(sizes) > n:
        raise ValueError(f"split sizes {list(sizes)} add up to more than the {n} samples")
    _, inverse, counts = np.unique(labels, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    remaining, left = counts.astype(np.int64), n
    quotas = np.zeros((len(sizes), len(counts)), dtype=np.int64)
    for part, size in enumerate(sizes):
        if left == 0:
            break
        quota, remainder = np.divmod(remaining * size, left)
        shortfall = size - quota.sum()  # == sum(remainder) / left < number of non-zero remainders
        largest_first = np.lexsort((rng.random(len(counts)), -remainder))
        quota[largest_first[:shortfall]] += 1
        quotas[part] = quota
        remaining -= quota
        left -= size
    order = rng.permutation(n)
    order = order[np.argsort(inverse[order], kind="stable")]  # grouped by class, random within
    class_of = inverse[order]
    rank = np.arange(n) - (np.cumsum(counts) - counts)[class_of]
    parts = np.empty(n, dtype=np.int64)
    parts[order] = (rank[None, :] >= np.cumsum(quotas, axis=0)[:, class_of]).sum(axis=0)
    return parts


def _resolve_size(value: int | float, total: int, option: str) -> int:
    """A count from a count or a fraction of ``total``, validated."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{option} must be an int count or a float fraction, got {value!r}")
    if isinstance(value, (float, np.floating)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{option}={value} as a fraction must lie in [0, 1]; pass an int for a count")
        return round(value * total)
    if not 0 <= value <= total:
        raise ValueError(f"{option}={value} must lie in [0, {total}] (the images it is drawn from)")
    return int(value)


def _carve_validation(train: np.ndarray, labels: np.ndarray, val_size: int | float, rng: np.random.Generator):
    """Split the training indices ``train`` into (fit, val), stratified."""
    size = _resolve_size(val_size, len(train), "val_size")
    part = _stratified_partition(labels[train], [size], rng)
    return train[part == 1], train[part == 0]


def _random_protocol(
    labels: np.ndarray,
    seed: int,
    train_size: int | float,
    query_size: int | float,
    database_size: int | float | None,
    val_size: int | float,
) -> dict[str, np.ndarray]:
    """Disjoint stratified random train / query / database indices (database ``None``: all the
    rest), then val carved from train."""
    n = len(labels)
    sizes = [_resolve_size(train_size, n, "train_size"), _resolve_size(query_size, n, "query_size")]
    if database_size is not None:
        sizes.append(_resolve_size(database_size, n, "database_size"))
    if sum(sizes) > n:
        raise ValueError(
            f"train_size + query_size + database_size = {sum(sizes)} exceeds the {n} images; lower them"
        )
    rng = np.random.default_rng(seed)
    parts = _stratified_partition(labels, sizes, rng)
    fit, val = _carve_validation(np.flatnonzero(parts == 0), labels, val_size, rng)
    return {
        "train": fit,
        "val": val,
        "query": np.flatnonzero(parts == 1),
        "database": np.flatnonzero(parts == 2),
    }


def _official_protocol(
    is_train: np.ndarray, labels: np.ndarray, seed: int, val_size: int | float
) -> dict[str, np.ndarray]:
    """Official split: query = test, database = the full official train, fit on train minus val."""
    official_train = np.flatnonzero(is_train)
    fit, val = _carve_validation(official_train, labels, val_size, np.random.default_rng(seed))
    return {"train": fit, "val": val, "query": np.flatnonzero(~is_train), "database": official_train}


def _describe_sizes(indices: dict[str, np.ndarray]) -> str:
    return " / ".join(f"{name} {len(idx):,}" for name, idx in indices.items())


def _apportion(total: int, weights: Sequence[float]) -> list[int]:
    """Integers proportional to ``weights`` summing to ``total`` (largest remainders)."""
    weights = np.asarray(weights, dtype=np.float64)
    exact = total * weights / weights.sum()
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(counts - exact, kind="stable")[: total - counts.sum()]] += 1
    return counts.tolist()
