"""``fashion-modes``: classes that are not products of parts, with a coarse-to-fine hierarchy.

The composite testbeds make every class an ordered tuple of items, so a network that recognises the items and
adds their evidence per position separates every class. Stanford Cars (makes > models) and NABirds (families >
species) are not like that: a fine class is one visual mode of its coarse class. ``fashion-modes`` rebuilds that
structure offline: each of the 10 Fashion-MNIST items is split into ``subclasses`` **visual modes** by k-means
(Lloyd's algorithm, k-means++ start, 4 restarts) in the space of the item's top ``components`` principal
components of its images pooled to 14x14 pixels. A fine class is one (item, mode); its coarse class is the item
(``coarse_labels``, the ``hierarchy`` similarity source). 10 x 10 = 100 classes by default, so C > 2q at 16
and 32 bits.

Why this construction. The modes are real sub-populations (long and short sleeves, high and low boots, bags
with and without handles: the clusters of the items' own images), every image belongs to exactly one of them
by a fixed rule (the nearest mode centre), and modes of one item are near each other and far from other
items', as models of one make are. Their boundaries are geometric, not semantic: images near a boundary are
hard to classify, like two years of one car model. The modes are fixed data, independent of the split seed: the
k-means of each item is fitted with a fixed seed on at most 2,000 of its images, then every one of the 70,000
images is assigned to its nearest mode centre; only the split draws depend on ``seed``.

Splits: every fine class's images are permuted (seeded) and cut into ``train_per_class``, ``val_per_class``,
``query_per_class`` and ``database_per_class`` images, without replacement, so no image is in two splits or
twice in one. A class with fewer images than the four counts together is refused, naming the smallest class.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from shc.data.composites import FASHION_MNIST_NAMES, _idx_base
from shc.data.splits import DatasetSplits, HashingSplit

__all__ = ["kmeans", "visual_modes"]

_MODE_SEED = 0x5EED
"""The fixed seed of the k-means restarts: the modes are data, the same for every split seed."""
_RESTARTS = 4
_ITERATIONS = 100
_FIT_POINTS = 2000
"""k-means is fitted on a seeded sample of at most this many images of an item, then every image of the item goes
to its nearest mode centre (the fit costs seconds, not minutes, and the modes stay the same)."""


def kmeans(points: np.ndarray, k: int, rng: np.random.Generator, restarts: int = _RESTARTS,
           iterations: int = _ITERATIONS) -> tuple[np.ndarray, np.ndarray]:
    """Lloyd's k-means with a k-means++ start, the best of ``restarts`` by inertia: ``(labels (n,), centres (k, d))``.

    Vectorised over points and centres. A centre that loses all its points is moved to the point farthest from
    its current centre, so exactly ``k`` non-empty clusters come back (``n >= k``).
    """
    points = np.asarray(points, np.float64)
    if points.ndim != 2 or not 1 <= k <= len(points):
        raise ValueError(f"k-means needs 2-D points and 1 <= k <= their number; got shape {points.shape}, k={k}.")
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    squared = (points**2).sum(axis=1)

    def distances_to(centres: np.ndarray) -> np.ndarray:  # einsum, not BLAS: faster here for k << d << n
        return squared[:, None] - 2 * np.einsum("nd,kd->nk", points, centres) + (centres**2).sum(axis=1)

    for _ in range(restarts):
        centres = points[[rng.integers(len(points))]]
        for _ in range(1, k):  # k-means++: next centre with probability proportional to the squared distance
            nearest = distances_to(centres).min(axis=1)
            nearest = np.maximum(nearest, 0)
            centres = np.vstack([centres, points[rng.choice(len(points), p=nearest / nearest.sum())]])
        labels = np.full(len(points), -1)
        for _ in range(iterations):
            distances = distances_to(centres)
            new = distances.argmin(axis=1)
            counts = np.bincount(new, minlength=k)
            for empty in np.flatnonzero(counts == 0):  # rare: reseed at the worst-served point
                far = int(distances[np.arange(len(points)), new].argmax())
                new[far] = empty
                counts = np.bincount(new, minlength=k)
            if np.array_equal(new, labels):
                break
            labels = new
            centres = np.zeros((k, points.shape[1]))
            np.add.at(centres, labels, points)  # each mode's sum, added in point order
            centres /= counts[:, None]
        inertia = float(np.sum((points - centres[labels]) ** 2))
        if best is None or inertia < best[0]:
            best = (inertia, labels.copy(), centres.copy())
    return best[1], best[2]


def visual_modes(images: np.ndarray, labels: np.ndarray, subclasses: int, components: int = 32) -> np.ndarray:
    """Each image's fine class ``item * subclasses + mode`` (int64): k-means of every item's images, 2x2-average
    pooled (28x28 -> 14x14, the resolution the testbeds train at), in the space of that item's top
    ``components`` principal components (module docstring). Modes of an item are numbered by decreasing size
    (ties by first member), so the numbering does not depend on the restarts' order."""
    fine = np.empty(len(labels), np.int64)
    rng = np.random.default_rng(_MODE_SEED)
    height, width = images.shape[1] // 2 * 2, images.shape[2] // 2 * 2
    pooled = images[:, :height, :width].reshape(len(images), height // 2, 2, width // 2, 2).mean(axis=(2, 4))
    for item in np.unique(labels):
        members = np.flatnonzero(labels == item)
        pixels = pooled[members].reshape(len(members), -1) / 255.0
        pixels -= pixels.mean(axis=0)
        sample = pixels[np.sort(rng.permutation(len(members))[:_FIT_POINTS])]
        _, vectors = np.linalg.eigh(sample.T @ sample)
        projected = pixels @ vectors[:, -components:]
        _, centres = kmeans(sample @ vectors[:, -components:],
                            subclasses, rng)
        modes = (((projected[:, None, :] - centres[None]) ** 2).sum(axis=2)).argmin(axis=1)
        sizes = np.bincount(modes, minlength=subclasses)
        if sizes.min() == 0:
            raise RuntimeError(f"item {item}: a visual mode got no image; report this (it cannot happen for k <= "
                               f"{_FIT_POINTS}).")
        first = np.unique(modes, return_index=True)[1]  # each mode's first member (every mode has one)
        rank = np.empty(subclasses, np.int64)
        rank[np.lexsort((first, -sizes))] = np.arange(subclasses)
        fine[members] = item * subclasses + rank[modes]
    return fine


@lru_cache(maxsize=2)
def _fine_labels(root: Path | None, download: bool, subclasses: int) -> tuple[np.ndarray, np.ndarray, str]:
    base = _idx_base("fashion", root, download)
    return base.images, visual_modes(base.images, base.labels, subclasses), base.description


def _load_fashion_modes(root: Path | None, seed: int, *, subclasses: int = 10, train_per_class: int = 50,
                       val_per_class: int = 10, query_per_class: int = 10, database_per_class: int = 50,
                       download: bool = False) -> DatasetSplits:
    """Fashion-MNIST items split into ``subclasses`` visual modes each (module docstring), drawn per class
    without replacement into the four splits."""
    if isinstance(subclasses, bool) or not isinstance(subclasses, (int, np.integer)) or not 2 <= subclasses <= 50:
        raise ValueError(f"subclasses must be an integer in [2, 50] (modes per Fashion-MNIST item), got {subclasses!r}")
    counts = {"train": train_per_class, "val": val_per_class, "query": query_per_class,
              "database": database_per_class}
    for split, count in counts.items():
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"{split}_per_class must be a non-negative int, got {count!r}")
    images, fine, description = _fine_labels(root, bool(download), int(subclasses))
    num_classes = 10 * int(subclasses)
    sizes = np.bincount(fine, minlength=num_classes)
    needed = sum(counts.values())
    if sizes.min() < needed:
        raise ValueError(f"fashion-modes class {sizes.argmin()} has {sizes.min()} images but the four *_per_class "
                         f"counts ask for {needed}; lower them (or use fewer subclasses).")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(fine))
    order = order[np.argsort(fine[order], kind="stable")]  # grouped by class, random within
    rank = np.arange(len(order)) - np.repeat(np.cumsum(sizes) - sizes, sizes)  # position within its class
    bounds = np.cumsum([0, *counts.values()])
    splits = {}
    for (split, _), low, high in zip(counts.items(), bounds[:-1], bounds[1:]):
        chosen = order[(rank >= low) & (rank < high)]
        splits[split] = HashingSplit(fine[chosen], images=images[chosen], source_ids=chosen)
    per_class = " / ".join(f"{split} {count}" for split, count in counts.items())
    return DatasetSplits(
        name="fashion-modes", **splits,
        class_names=[f"{item} #{mode + 1}" for item in FASHION_MNIST_NAMES for mode in range(subclasses)],
        num_classes=num_classes, multi_label=False,
        coarse_labels=np.repeat(np.arange(10), subclasses), coarse_names=list(FASHION_MNIST_NAMES),
        coarse_meaning="the item whose mode it is",
        protocol=(f"{subclasses} visual modes (k-means of each item's principal components) of each item of "
                  f"{description}: {num_classes} classes, per class {per_class}, drawn without replacement; "
                  "coarse class = item"),
    )
