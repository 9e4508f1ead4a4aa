"""Composite datasets: base images (scikit-learn digits, MNIST, Fashion-MNIST) composed side by side
into multi-item classes, each split drawn from its own disjoint pool of base images."""

from __future__ import annotations

import gzip
import importlib.util
import inspect
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from shc.data.formats import default_data_root
from shc.data.splits import DatasetSplits, HashingSplit, _apportion, _stratified_partition

FASHION_MNIST_NAMES = (
    "T-shirt/top",
    "Trouser",
    "Pullover",
    "Dress",
    "Coat",
    "Sandal",
    "Shirt",
    "Sneaker",
    "Bag",
    "Ankle boot",
)
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
IDX_FILES = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
IDX_MIRRORS = {  # torchvision's mirrors (torchvision.datasets.FashionMNIST.mirrors, MNIST.mirrors)
    "fashion": ("http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",),
    "mnist": ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
}
IDX_MD5 = {  # (file, md5) in IDX_FILES order, as torchvision's ``resources`` lists them
    "fashion": (
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ),
    "mnist": (
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ),
}


@dataclass(frozen=True)
class _BaseImages:
    images: np.ndarray  # (N, h, w) uint8
    labels: np.ndarray  # (N,) int64 in 0..len(names)-1
    names: tuple[str, ...]
    description: str
    item_word: str  # "digit" or "item"
    separator: str  # joins item names into class names


@lru_cache(maxsize=1)
def _sklearn_digits() -> _BaseImages:
    """scikit-learn's digits as uint8 (values 0..16 scaled to 0..255).

    Reads the CSV that ``load_digits`` reads straight from the installed wheel, which skips the ~1 s
    import of ``sklearn.datasets``; falls back to ``load_digits`` if the file ever moves.
    """
    spec = importlib.util.find_spec("sklearn")
    csv = Path(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz") if spec else None
    if csv is not None and csv.is_file():
        table = np.loadtxt(csv, delimiter=",")  # 64 pixels then the digit, per row
        pixels, targets = table[:, :-1].reshape(-1, 8, 8), table[:, -1]
    else:
        from sklearn.datasets import load_digits

        digits = load_digits()
        pixels, targets = digits.images, digits.target
    images = np.rint(pixels * (255.0 / 16.0)).astype(np.uint8)
    images.flags.writeable = False
    description = f"scikit-learn's {len(images):,} handwritten 8x8 digits"
    return _BaseImages(images, targets.astype(np.int64), tuple("0123456789"), description, "digit", "")


def _pools(base: _BaseImages, per_class: dict[str, int], seed: int):
    """The seeded partition of the base images into one disjoint pool per split (in ``per_class`` order), in
    proportion to the images per class of each split: ``(rng, pool sizes, pool id of each base image)``. The
    generator goes on to draw the composites, so every caller sees the same pools for a seed."""
    rng = np.random.default_rng(seed)
    pool_sizes = _apportion(len(base.labels), list(per_class.values()))
    return rng, pool_sizes, _stratified_partition(base.labels, pool_sizes, rng)


def _composite_dataset(
    name: str,
    base: _BaseImages,
    num_items: int | None,
    num_classes: int | None,
    per_class: dict[str, int],
    seed: int,
) -> DatasetSplits:
    """Compose ``num_items`` base images side by side into ``len(base.names) ** num_items`` classes
    (``num_items=None``: 2, or the fewest items that give ``num_classes``), or an evenly spaced
    subset of ``num_classes`` of them.

    The base images are first partitioned (per base class, in proportion to ``per_class``) into one
    disjoint pool per split; each composite of a split takes, for each position, a random base
    image of the right base class from that split's pool, drawn with replacement: no base image is in
    two splits, but a split can hold the same composite twice where its pools are small (``quick``:
    a few per split; ``standard`` and ``standard-fine``: none).
    """
    option, num_base = f"num_{base.item_word}s", len(base.names)
    hint = (
        f"leave {option}=None for the fewest {base.item_word}s that fit"
        if num_items
        else f"at most 4 {base.item_word}s"
    )
    if num_items is None:
        num_items = 2
        while num_classes is not None and num_base**num_items < num_classes and num_items < 4:
            num_items += 1
    if isinstance(num_items, bool) or not isinstance(num_items, (int, np.integer)) or not 1 <= num_items <= 4:
        raise ValueError(f"{option} must be 1, 2, 3 or 4, got {num_items}")
    for split, count in per_class.items():
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise ValueError(f"{split}_per_class must be a non-negative int, got {count!r}")
    if sum(per_class.values()) == 0:
        raise ValueError("all *_per_class counts are 0: ask for at least one sample")
    total = num_base**num_items
    if num_classes is None:
        num_classes = total
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)):
        raise ValueError(f"num_classes must be a whole number of classes, got {num_classes!r}; e.g. num_classes=100.")
    if num_classes < 1:
        raise ValueError(f"num_classes must be at least 1, got {num_classes}; leave it None for all {total} classes.")
    if num_classes > total:
        raise ValueError(
            f"num_classes must lie in [1, {total}] for {option}={num_items}, got {num_classes} ({hint})"
        )
    numbers = np.arange(num_classes, dtype=np.int64) * total // num_classes  # evenly spaced subset
    class_items = np.stack(np.unravel_index(numbers, (num_base,) * num_items), axis=1)  # (C, k)

    rng, pool_sizes, pool_of = _pools(base, per_class, seed)
    splits = {}
    for pool, (split, count) in enumerate(per_class.items()):
        members = np.flatnonzero(pool_of == pool)
        members = members[np.argsort(base.labels[members], kind="stable")]  # grouped by base class
        members_per_class = np.bincount(base.labels[members], minlength=num_base)
        if count and members_per_class.min() == 0:
            raise ValueError(
                f"the {split} pool has no base image of class {base.names[members_per_class.argmin()]}: "
                f"make {split}_per_class a larger share of the per-class counts"
            )
        labels = np.repeat(np.arange(num_classes), count)
        items = class_items[labels]  # (n, k) base class per position
        first_member = np.cumsum(members_per_class) - members_per_class
        offset = (rng.random(items.shape) * members_per_class[items]).astype(np.int64)
        source_ids = members[first_member[items] + offset]  # (n, k) base image ids
        height, width = base.images.shape[1:]
        images = base.images[source_ids].transpose(0, 2, 1, 3).reshape(len(labels), height, num_items * width)
        splits[split] = HashingSplit(labels, images=images, source_ids=source_ids)

    # coarse class = first item; digits read as number patterns: "3x" = all the numbers starting with 3
    suffix = "x" * (num_items - 1) if base.item_word == "digit" else ""
    coarse_names = [name + suffix for name in base.names]
    counts = " / ".join(f"{split} {count}" for split, count in per_class.items())
    return DatasetSplits(
        name=name,
        **splits,
        class_names=[base.separator.join(base.names[i] for i in row) for row in class_items],
        num_classes=num_classes,
        multi_label=False,
        coarse_labels=class_items[:, 0].copy(),
        coarse_names=coarse_names,
        coarse_meaning=f"the class of its first {base.item_word}",
        protocol=(
            f"{num_items}-{base.item_word} composites of {base.description}: {num_classes} classes, "
            f"per class {counts}; each split drawn from its own disjoint pool of base images "
            f"(pools {pool_sizes}); coarse class = first {base.item_word}"
        ),
    )


def _read_idx(path: Path) -> np.ndarray:
    """An idx file (MNIST format, optionally gzipped) as a uint8 array."""
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle:
            content = handle.read()
    except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError; a truncated .gz, EOFError
        raise ValueError(f"{path} cannot be read ({type(error).__name__}: {error}): the file is damaged; delete it "
                         "and install or download it again.") from None
    if len(content) < 4 or content[:2] != b"\x00\x00" or content[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte idx file (bad magic number {content[:4]!r})")
    ndim = content[3]
    if ndim == 0 or len(content) < 4 + 4 * ndim:
        raise ValueError(f"{path} is truncated or damaged: its header names {ndim} dimensions and holds "
                         f"{max(len(content) - 4, 0) // 4}; delete it and install or download it again.")
    shape = tuple(int(size) for size in np.frombuffer(content, dtype=">i4", count=ndim, offset=4))
    data = np.frombuffer(content, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != np.prod(shape):
        raise ValueError(f"{path} is truncated: header says {shape}, found {data.size} values")
    return data.reshape(shape)


def _find_idx_files(folders: Sequence[Path]) -> list[Path] | None:
    """The four idx files (plain or .gz) from the first folder holding all of them."""
    for folder in folders:
        found = []
        for stem in IDX_FILES:
            candidates = [folder / stem, folder / f"{stem}.gz"]
            found.append(next((c for c in candidates if c.is_file()), None))
        if all(found):
            return found
    return None


def _manual_install(kind: str, folders: Sequence[Path]) -> str:
    """How to get the idx files by hand (the end of every not-found or download error)."""
    expected = f"{', '.join(IDX_FILES)} (each optionally .gz)"
    places = ", ".join(map(str, folders))
    if kind == "fashion":
        return (
            f"To install Fashion-MNIST: `sudo apt-get install dataset-fashion-mnist` (Debian/Ubuntu; puts the "
            f"files in {DEBIAN_FASHION_MNIST}), or pass download=True where the internet is reachable (from a "
            "shell: python -c \"from shc.data import load_dataset; load_dataset('fashion-composite', download=True)\"), "
            f"or fetch {expected} from {IDX_MIRRORS['fashion'][0]} (or "
            f"https://github.com/zalandoresearch/fashion-mnist) and put them in one of: {places} "
            "(or pass their folder as root=; on the command line --data-root)."
        )
    return (
        "To install MNIST: pass download=True where the internet is reachable (from a shell: python -c \"from "
        f"shc.data import load_dataset; load_dataset('mnist-composite', download=True)\"), or fetch {expected} from "
        f"{IDX_MIRRORS['mnist'][0]} (torchvision's MNIST mirror) and put them in one of: {places} "
        "(or pass their folder as root=; on the command line --data-root)."
    )


def _download_idx_files(kind: str, folder: Path, folders: Sequence[Path]) -> None:
    """Fetch the four gzipped idx files of ``kind`` into ``folder`` (torchvision's mirrors and checksums)."""
    from shc._download import download_file

    for file_name, md5 in IDX_MD5[kind]:
        if (folder / file_name).is_file():
            continue
        download_file([mirror + file_name for mirror in IDX_MIRRORS[kind]], folder / file_name,
                      checksum=("md5", md5), instructions=_manual_install(kind, folders))


def _check_which_idx(kind: str, train_labels: np.ndarray, path: Path, folders: Sequence[Path]) -> None:
    """Refuse MNIST's files where Fashion-MNIST's were asked for, and the other way round: both use the same file
    names, and both may sit in the data root itself. The official training labels tell them apart: Fashion-MNIST
    has exactly 6,000 of each class among its 60,000, MNIST between 5,421 and 6,742. Files of another size (a
    subset, a test's tiny files) are not judged."""
    if train_labels.ndim != 1 or len(train_labels) != 60_000 or train_labels.max(initial=0) > 9:
        return
    balanced = bool(np.all(np.bincount(train_labels, minlength=10) == 6_000))
    if balanced == (kind == "fashion"):
        return
    found, wanted = ("Fashion-MNIST", "MNIST") if balanced else ("MNIST", "Fashion-MNIST")
    home = "FashionMNIST/raw" if balanced else "MNIST/raw"
    raise ValueError(f"{path} holds {found}'s training labels ({'exactly' if balanced else 'not'} 6,000 per "
                     f"class), not {wanted}'s: the two share their file names. Move {found}'s four files into "
                     f"<data root>/{home}, where only {found} is looked for. {_manual_install(kind, folders)}")


def _idx_base(kind: str, root: Path | None, download: bool) -> _BaseImages:
    """Fashion-MNIST or MNIST base images (train and t10k pooled) from idx files.

    Looked for in the data root (``root``, else :func:`default_data_root`) and its torchvision
    sub-folder ``FashionMNIST/raw`` / ``MNIST/raw``, then (Fashion-MNIST) in Debian's
    :data:`DEBIAN_FASHION_MNIST`; then, with ``download=True``, fetched into that sub-folder with a
    timeout (:func:`shc._download.download_file`). Every failure says how to install the files by hand.
    """
    fashion = kind == "fashion"
    folder_name = "FashionMNIST" if fashion else "MNIST"
    data_root = root if root is not None else default_data_root()
    folders = [data_root, data_root / folder_name / "raw"]
    if fashion:
        folders.append(DEBIAN_FASHION_MNIST)
    files = _find_idx_files(folders)
    if files is None and download:
        _download_idx_files(kind, folders[1], folders)
        files = _find_idx_files(folders)
    if files is None:
        raise FileNotFoundError(
            f"{folder_name} idx files not found in any of: {', '.join(map(str, folders))}. "
            + _manual_install(kind, folders)
        )
    train_labels = _read_idx(files[1])
    _check_which_idx(kind, train_labels, files[1], folders)
    parts = [_read_idx(files[0]), _read_idx(files[2])]
    if any(part.ndim != 3 for part in parts) or parts[0].shape[1:] != parts[1].shape[1:]:
        raise ValueError(
            f"the idx image files {files[0].name} and {files[2].name} in {files[0].parent} do not hold images of one "
            f"size ({parts[0].shape} and {parts[1].shape}; each should be (count, 28, 28)): they come from "
            f"different datasets or one is damaged. {_manual_install(kind, folders)}")
    images = np.concatenate(parts)
    labels = np.concatenate([train_labels, _read_idx(files[3])]).astype(np.int64)
    if images.ndim != 3 or len(images) != len(labels) or labels.max() > 9:
        raise ValueError(
            f"inconsistent idx files in {files[0].parent}: {images.shape} images, {labels.shape} labels"
        )
    names = FASHION_MNIST_NAMES if fashion else tuple("0123456789")
    height, width = images.shape[1:]
    description = f"{len(labels):,} {'Fashion-MNIST' if fashion else 'MNIST'} {height}x{width} images"
    return _BaseImages(
        images, labels, names, description, "item" if fashion else "digit", " + " if fashion else ""
    )


_SPLIT_OPTIONS = {"train_per_class": 50, "val_per_class": 10, "query_per_class": 10, "database_per_class": 50}
"""Images per class in each split, by default: the keyword options every composite shares."""


#: The base images of every composite dataset by name: ``base(root, download) -> _BaseImages``.
COMPOSITE_BASES: dict[str, Callable[[Path | None, bool], _BaseImages]] = {}


@dataclass(frozen=True)
class ItemImages:
    """Single base items of a composite dataset, outside some of its splits' pools (a pretraining source).

    ``images`` are ``(n, h, k * w)`` uint8 canvases the size of the dataset's composites, each holding one item at
    a random one of the ``k`` positions (background elsewhere); ``labels`` the item's base class.
    """

    images: np.ndarray
    labels: np.ndarray
    names: tuple[str, ...]
    source_ids: np.ndarray  # (n,) base-image ids
    description: str


def composite_items(name: str, root: str | Path | None, seed: int, exclude: Sequence[str] = ("query",),
                    num_items: int = 2, download: bool = False, **per_class: int) -> ItemImages:
    """Every base image of composite dataset ``name`` outside the pools of the ``exclude`` splits, alone on a
    canvas the size of a ``num_items`` composite (the pools are those of :func:`shc.data.load_dataset` with the
    same ``seed`` and ``*_per_class`` options, so no image of an excluded split is among them).

    A source task disjoint from the composite classes: its labels are single base classes (10 here), never an
    ordered tuple of them, and with the default ``exclude`` no query image's item is in it.
    """
    if name not in COMPOSITE_BASES:
        raise ValueError(f"{name!r} is not a composite dataset; item pretraining needs one of "
                         f"{sorted(COMPOSITE_BASES)}.")
    split_counts = {split: per_class.pop(f"{split}_per_class", _SPLIT_OPTIONS[f"{split}_per_class"])
                    for split in ("train", "val", "query", "database")}
    if per_class:
        raise ValueError(f"unknown option(s) {sorted(per_class)} for composite_items; it takes num_items, download "
                         "and the *_per_class counts.")
    unknown = sorted(set(exclude) - set(split_counts))
    if unknown:
        raise ValueError(f"exclude names unknown split(s) {unknown}; choose from {list(split_counts)}.")
    base = COMPOSITE_BASES[name](None if root is None else Path(root).expanduser(), download)  # a str root too
    _, _, pool_of = _pools(base, split_counts, seed)
    excluded = [list(split_counts).index(split) for split in exclude]
    members = np.flatnonzero(~np.isin(pool_of, excluded))
    rng = np.random.default_rng([seed, 0x17E5])  # the position of each item: independent of the composites' draws
    position = rng.integers(0, num_items, len(members))
    height, width = base.images.shape[1:]
    canvas = np.zeros((len(members), height, num_items, width), np.uint8)
    canvas[np.arange(len(members)), :, position] = base.images[members]
    kept = ", ".join(split for split in split_counts if split not in exclude)
    return ItemImages(canvas.reshape(len(members), height, num_items * width), base.labels[members].copy(),
                      base.names, members, f"{len(members):,} single {base.item_word}s of {base.description} (the "
                      f"{kept} pools of seed {seed}), each at a random one of {num_items} positions")


def _composite_loader(name: str, base: Callable[[Path | None, bool], _BaseImages], items_option: str,
                      downloads: bool, doc: str) -> Callable[..., DatasetSplits]:
    """The loader of composite dataset ``name``, composed from the base images ``base(root, download)``.

    Its signature is ``(root, seed, *, <items_option>=None, num_classes=None, train_per_class=50,
    val_per_class=10, query_per_class=10, database_per_class=50[, download=False])``: explicit, so that
    :func:`shc.data.load_dataset` and the dataset listing read every option and its default from it. One
    body serves every base (digits, MNIST, Fashion-MNIST); ``items_option`` is the name users know for the
    number of items side by side (``num_digits`` or ``num_items``).
    """
    keyword = inspect.Parameter.KEYWORD_ONLY
    options = {items_option: None, "num_classes": None, **_SPLIT_OPTIONS, **({"download": False} if downloads else {})}
    signature = inspect.Signature(
        [inspect.Parameter("root", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Path | None),
         inspect.Parameter("seed", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=int)]
        + [inspect.Parameter(key, keyword, default=value) for key, value in options.items()],
        return_annotation=DatasetSplits,
    )

    def load(root: Path | None, seed: int, **given: Any) -> DatasetSplits:
        bound = signature.bind(root, seed, **given)  # a TypeError names an unknown option
        bound.apply_defaults()
        values = bound.arguments
        per_class = {split: values[f"{split}_per_class"] for split in ("train", "val", "query", "database")}
        images = base(root, values.get("download", False))
        return _composite_dataset(name, images, values[items_option], values["num_classes"], per_class, seed)

    COMPOSITE_BASES[name] = base
    load.__signature__ = signature  # type: ignore[attr-defined]
    load.__name__ = load.__qualname__ = "_load_" + name.replace("-", "_")
    load.__doc__ = doc
    return load


_load_digits_composite = _composite_loader(
    "digits-composite", lambda root, download: _sklearn_digits(), "num_digits", False,
    "Embedded scikit-learn digits composites (``root`` is unused).")
_load_mnist_composite = _composite_loader(
    "mnist-composite", lambda root, download: _idx_base("mnist", root, download), "num_digits", True,
    "MNIST digit composites from idx files.")
_load_fashion_composite = _composite_loader(
    "fashion-composite", lambda root, download: _idx_base("fashion", root, download), "num_items", True,
    'Fashion-MNIST item composites ("T-shirt/top + Trouser") from idx files.')
