"""Tests of shc.data: the composites against the real base images, and every paper dataset's
official on-disk format on miniature files written here (pickles, devkit .mat, NABirds text files)."""

from __future__ import annotations

import gzip
import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from scipy.io import savemat
from sklearn.datasets import load_digits

import shc.data.composites as composites
from shc._download import DownloadError
from shc.data import (
    CompositeTransform,
    DatasetSplits,
    HashingSplit,
    available_datasets,
    default_transforms,
    load_dataset,
)
from shc.data.splits import _stratified_partition

SPLITS = ("train", "val", "query", "database")


def stored_images(split: HashingSplit) -> np.ndarray:
    return np.stack([split.raw_image(i) for i in range(len(split))])


def source_sets(splits: DatasetSplits) -> dict[str, set[int]]:
    return {name: set(split.source_ids.ravel().tolist()) for name, split in splits.splits.items()}


def assert_composites_match(
    splits: DatasetSplits, base_images: np.ndarray, base_labels: np.ndarray, item_of_name
):
    """Every item of every composite is an exact base image of the class's item, its recorded
    source, and no base image is used by two splits (brute-force lookup by pixel content)."""
    lookup = {image.tobytes(): index for index, image in enumerate(base_images)}
    assert len(lookup) == len(base_images), "test needs distinct base images"
    num_columns = base_images.shape[2]

    def base_ids(composite: np.ndarray) -> list[int]:
        items = np.split(composite, composite.shape[1] // num_columns, axis=1)
        return [lookup[np.ascontiguousarray(item).tobytes()] for item in items]

    used = {}
    for name, split in splits.splits.items():
        matched = np.array([base_ids(image) for image in stored_images(split)])
        expected_items = np.array([item_of_name(splits.class_names[y]) for y in split.labels])
        np.testing.assert_array_equal(base_labels[matched], expected_items)
        np.testing.assert_array_equal(matched, split.source_ids)
        used[name] = set(matched.ravel().tolist())
    for a in SPLITS:
        for b in SPLITS:
            if a < b:
                assert not used[a] & used[b], f"{a} and {b} share base images"


# ----------------------------------------------------------------------------------------------
# digits-composite
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits():
    return load_dataset("digits-composite")


@pytest.fixture(scope="module")
def base_digits():
    raw = load_digits()
    return np.rint(raw.images * 255 / 16).astype(np.uint8), raw.target


def test_digits_default_shapes_and_classes(digits):
    assert digits.name == "digits-composite" and available_datasets()[0] == "digits-composite"
    assert digits.num_classes == 100 and not digits.multi_label
    assert digits.class_names == [f"{n:02d}" for n in range(100)]
    assert [len(digits.splits[s]) for s in SPLITS] == [5000, 1000, 1000, 5000]
    for name, per_class in zip(SPLITS, (50, 10, 10, 50)):
        np.testing.assert_array_equal(np.bincount(digits.splits[name].labels, minlength=100), per_class)
    raw = digits.train.raw_image(3)
    assert raw.shape == (8, 16) and raw.dtype == np.uint8 and raw.max() > 200
    image, label, index = digits.query[7]
    assert image.shape == (3, 8, 16) and image.dtype == torch.float32
    assert label.dtype == torch.int64 and label.ndim == 0 and int(label) == digits.query.labels[7]
    assert index == 7
    torch.testing.assert_close(image[0], image[2])  # grey replicated


def test_digits_hierarchy_is_first_digit(digits):
    np.testing.assert_array_equal(digits.coarse_labels, [int(name[0]) for name in digits.class_names])
    assert digits.coarse_names[3] == "3x" and len(digits.coarse_names) == 10
    assert digits.coarse_title == "coarse class (the class of its first digit)"  # the legends say which digit


def test_digits_composites_are_real_digits_from_disjoint_pools(digits, base_digits):
    assert_composites_match(digits, *base_digits, item_of_name=lambda name: [int(c) for c in name])


def test_digits_left_half_of_37_is_a_three(digits, base_digits):
    images, targets = base_digits
    sample = int(np.flatnonzero(digits.train.labels == digits.class_names.index("37"))[0])
    left, right = digits.train.raw_image(sample)[:, :8], digits.train.raw_image(sample)[:, 8:]
    assert targets[(images == left).all(axis=(1, 2))].tolist() == [3]
    assert targets[(images == right).all(axis=(1, 2))].tolist() == [7]


def test_digits_deterministic_per_seed(digits):
    again, other = load_dataset("digits-composite", seed=0), load_dataset("digits-composite", seed=1)
    for name in SPLITS:
        np.testing.assert_array_equal(stored_images(again.splits[name]), stored_images(digits.splits[name]))
        np.testing.assert_array_equal(again.splits[name].labels, digits.splits[name].labels)
    assert not np.array_equal(stored_images(other.train), stored_images(digits.train))


@pytest.mark.parametrize("name", ["query", "database"])
def test_evaluation_splits_are_stored_in_a_seeded_class_independent_order(digits, name):
    # Hamming ties are broken by database index: the index must carry no information about the class.
    labels = digits.splits[name].labels
    index = np.arange(len(labels))
    assert np.any(np.diff(labels) < 0), "the split is still sorted by class"
    # the class is not a function of the index: blocks of consecutive items mix classes as a random order does
    blocks = labels[: len(labels) // 50 * 50].reshape(-1, 50)
    distinct = np.mean([len(set(block.tolist())) for block in blocks])
    assert distinct > 30, distinct  # 50 items of a random order over 100 classes hold about 40 classes
    assert abs(np.corrcoef(index, labels)[0, 1]) < 0.1
    again, other = load_dataset("digits-composite", seed=0), load_dataset("digits-composite", seed=1)
    np.testing.assert_array_equal(again.splits[name].labels, labels)  # same seed, same order
    np.testing.assert_array_equal(again.splits[name].source_ids, digits.splits[name].source_ids)
    # the same samples as the loader's class-by-class split (its images stay with their labels and provenance:
    # test_digits_composites_are_real_digits_from_disjoint_pools)
    assert sorted(labels.tolist()) == sorted(np.repeat(np.arange(100), len(labels) // 100).tolist())
    assert not np.array_equal(other.splits[name].labels, labels)


def test_digits_three_digit_subset_of_555(base_digits):
    splits = load_dataset(
        "digits-composite",
        num_classes=555,  # picks num_digits=3
        train_per_class=2,
        val_per_class=1,
        query_per_class=1,
        database_per_class=2,
    )
    numbers = [int(name) for name in splits.class_names]
    assert splits.num_classes == 555 and len(set(numbers)) == 555 and numbers == sorted(numbers)
    assert all(len(name) == 3 for name in splits.class_names) and numbers[0] == 0 and numbers[-1] >= 990
    counts = np.bincount(splits.coarse_labels, minlength=10)  # evenly spread over the hundreds
    assert counts.min() >= 55 and counts.max() <= 56
    np.testing.assert_array_equal(splits.coarse_labels, [n // 100 for n in numbers])
    np.testing.assert_array_equal(np.bincount(splits.train.labels), 2)
    assert splits.train.raw_image(0).shape == (8, 24)
    assert_composites_match(splits, *base_digits, item_of_name=lambda name: [int(c) for c in name])


def test_shared_rows_by_hand():
    from shc.data.splits import _shared_rows

    assert _shared_rows(np.array([3, 7]), np.array([7, 1, 3, 3])).tolist() == [True, False, True, True]
    pairs = np.array([[1, 2], [2, 1], [5, 5]])  # a composite's (item 1, item 2) ids: order matters
    assert _shared_rows(np.array([[2, 1]]), pairs).tolist() == [False, True, False]
    assert _shared_rows(np.zeros((0, 2), int), pairs).tolist() == [False, False, False]


def test_a_composite_protocol_selects_against_its_whole_database(digits):
    """Validation and database draw from disjoint pools, so model selection's database is the database itself."""
    assert digits.selection_database() is digits.database and digits.selection_left_out() == ()


def test_digits_option_errors():
    with pytest.raises(ValueError, match=r"num_classes must lie in \[1, 100\] for num_digits=2"):
        load_dataset("digits-composite", num_digits=2, num_classes=101)
    with pytest.raises(ValueError, match="num_digits"):
        load_dataset("digits-composite", num_digits=5)
    with pytest.raises(ValueError, match=r"unknown option.*num_items.*num_digits=None"):
        load_dataset("digits-composite", num_items=2)
    with pytest.raises(ValueError, match=r"num_classes must be at least 1, got 0; leave it None for all 100"):
        load_dataset("digits-composite", num_digits=2, num_classes=0)
    with pytest.raises(ValueError, match=r"num_classes must be a whole number of classes, got 20.5"):
        load_dataset("digits-composite", num_classes=20.5)


# ----------------------------------------------------------------------------------------------
# Transforms and the batched fast path
# ----------------------------------------------------------------------------------------------


def test_composite_transform_eval_by_hand():
    image = np.array([[0, 255], [51, 102]], dtype=np.uint8)
    out = CompositeTransform(mean=0.5, std=0.25)(image)
    expected = torch.tensor([[-2.0, 2.0], [-1.2, -0.4]])  # (x / 255 - 0.5) / 0.25
    assert out.shape == (3, 2, 2)
    for channel in out:
        torch.testing.assert_close(channel, expected)


def test_composite_transform_train_shift_is_a_zero_filled_translation():
    torch.manual_seed(0)
    images = np.random.default_rng(0).integers(1, 256, size=(64, 5, 7), dtype=np.uint8)
    out = CompositeTransform(mean=0.0, std=1.0, train=True)(images)[:, 0] * 255
    padded = np.pad(images.astype(np.float32), ((0, 0), (1, 1), (1, 1)))
    shifts = {(dy, dx) for dy in range(3) for dx in range(3)}
    seen = set()
    for k in range(len(images)):
        hits = [
            s
            for s in shifts
            if np.allclose(out[k].numpy(), padded[k, s[0] : s[0] + 5, s[1] : s[1] + 7], atol=1e-3)
        ]
        assert len(hits) == 1
        seen.add(hits[0])
    assert len(seen) > 3  # each image draws its own shift


def test_composite_transform_resize_and_batches_agree():
    images = np.random.default_rng(1).integers(0, 256, size=(4, 8, 16), dtype=np.uint8)
    transform = CompositeTransform(0.3, 0.4, image_size=32)
    batch = transform(images)
    assert batch.shape == (4, 3, 32, 64)
    torch.testing.assert_close(batch[2], transform(images[2]))
    assert CompositeTransform(0.3, 0.4, image_size=(12, 20))(images).shape == (4, 3, 12, 20)


def test_digits_normalisation_constants_match_the_data(base_digits):
    pixels = base_digits[0] / 255.0
    mean, std = (
        default_transforms("digits-composite", train=False).mean,
        default_transforms("digits-composite", False).std,
    )
    assert abs(mean - pixels.mean()) < 1e-3 and abs(std - pixels.std()) < 1e-3


def test_batched_loading_equals_per_item(digits):
    split = digits.query
    loader = torch.utils.data.DataLoader(split, batch_size=64, shuffle=False)
    images, labels, indices = next(iter(loader))
    expected = torch.stack([split[i][0] for i in range(64)])
    torch.testing.assert_close(images, expected)
    np.testing.assert_array_equal(labels.numpy(), split.labels[:64])
    np.testing.assert_array_equal(indices.numpy(), np.arange(64))
    all_images, all_labels = split.tensors()
    torch.testing.assert_close(all_images[:64], expected)
    assert all_images.shape == (1000, 3, 8, 16) and all_labels.dtype == torch.int64


def test_with_transform_shares_storage(digits):
    plain = digits.train.with_transform(None)
    assert plain.transform is None and digits.train.transform is not None
    assert np.shares_memory(plain.raw_image(0), digits.train.raw_image(0))
    assert isinstance(plain[0][0], np.ndarray)


def test_default_transforms_natural_images():
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (40, 60, 3), dtype=np.uint8))
    assert default_transforms("cifar100", train=True)(image).shape == (3, 224, 224)
    assert default_transforms("nabirds-a", train=False, image_size=32)(image).shape == (3, 32, 32)


# ----------------------------------------------------------------------------------------------
# Stratified partition (used by every random protocol)
# ----------------------------------------------------------------------------------------------


def test_stratified_partition_exact_sizes_and_proportional_classes():
    labels = np.repeat(np.arange(5), [7, 13, 31, 2, 47])
    sizes = [30, 20]
    parts = _stratified_partition(labels, sizes, np.random.default_rng(3))
    np.testing.assert_array_equal(np.bincount(parts, minlength=3), [30, 20, 100 - 50])
    counts = np.bincount(labels)
    for part, size in enumerate(sizes):
        per_class = np.bincount(labels[parts == part], minlength=5)
        assert np.all(np.abs(per_class - counts * size / 100) < 2)  # sequential rounding: < 2 off
    again = _stratified_partition(labels, sizes, np.random.default_rng(3))
    np.testing.assert_array_equal(parts, again)


# ----------------------------------------------------------------------------------------------
# fashion-composite / mnist-composite on tiny idx files
# ----------------------------------------------------------------------------------------------


def write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, dtype=">i4").tobytes()
    content = header + array.astype(np.uint8).tobytes()
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as handle:
            handle.write(content)
    else:
        path.write_bytes(content)


def write_tiny_mnist(folder: Path, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    folder.mkdir(parents=True, exist_ok=True)
    train_labels, test_labels = np.repeat(np.arange(10), 12), np.repeat(np.arange(10), 4)
    train_images = rng.integers(0, 256, (len(train_labels), 28, 28), dtype=np.uint8)
    test_images = rng.integers(0, 256, (len(test_labels), 28, 28), dtype=np.uint8)
    write_idx(folder / "train-images-idx3-ubyte.gz", train_images)
    write_idx(folder / "train-labels-idx1-ubyte", train_labels)
    write_idx(folder / "t10k-images-idx3-ubyte.gz", test_images)
    write_idx(folder / "t10k-labels-idx1-ubyte", test_labels)
    return np.concatenate([train_images, test_images]), np.concatenate([train_labels, test_labels])


SMALL_COMPOSITE = dict(train_per_class=2, val_per_class=1, query_per_class=1, database_per_class=2)


def test_fashion_composite_from_idx_files(tmp_path):
    images, labels = write_tiny_mnist(tmp_path, np.random.default_rng(0))
    splits = load_dataset("fashion-composite", root=tmp_path, **SMALL_COMPOSITE)
    assert splits.num_classes == 100 and splits.class_names[1] == "T-shirt/top + Trouser"
    assert splits.coarse_names[9] == "Ankle boot" and splits.coarse_labels[95] == 9
    assert splits.coarse_title == "coarse class (the class of its first item)"
    assert splits.train[0][0].shape == (3, 28, 56) and len(splits.train) == 200
    names = splits.coarse_names
    assert_composites_match(
        splits, images, labels, item_of_name=lambda n: [names.index(p) for p in n.split(" + ")]
    )


def test_idx_files_of_two_image_sizes_or_a_cut_header_are_named(tmp_path):
    """Training images of 28 x 28 beside test images of 32 x 32 (files of two datasets) stopped in a raw numpy
    concatenate error; a header cut short, in numpy's "buffer is smaller than requested size"."""
    write_tiny_mnist(tmp_path, np.random.default_rng(0))
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.zeros((40, 32, 32), dtype=np.uint8))
    with pytest.raises(ValueError, match=r"do not hold images of one size.*\(120, 28, 28\) and \(40, 32, 32\)"):
        load_dataset("fashion-composite", root=tmp_path, **SMALL_COMPOSITE)
    write_tiny_mnist(tmp_path, np.random.default_rng(0))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(bytes([0, 0, 0x08, 3, 0, 0]))  # three sizes named, half of one
    with pytest.raises(ValueError, match="truncated or damaged: its header names 3 dimensions and holds 0"):
        load_dataset("fashion-composite", root=tmp_path, **SMALL_COMPOSITE)


def test_mnist_composite_torchvision_layout(tmp_path):
    images, labels = write_tiny_mnist(tmp_path / "MNIST" / "raw", np.random.default_rng(1))
    splits = load_dataset("mnist-composite", root=tmp_path, num_classes=10, **SMALL_COMPOSITE)
    assert splits.class_names == [f"{n:02d}" for n in range(0, 100, 10)]
    assert_composites_match(splits, images, labels, item_of_name=lambda name: [int(c) for c in name])


def test_idx_bad_magic_is_reported(tmp_path):
    write_tiny_mnist(tmp_path, np.random.default_rng(0))
    (tmp_path / "train-labels-idx1-ubyte").write_bytes(b"\x00\x00\x0d\x01garbage")
    with pytest.raises(ValueError, match="not an unsigned-byte idx file \\(bad magic number"):
        load_dataset("mnist-composite", root=tmp_path)


# ----------------------------------------------------------------------------------------------
# CIFAR-100 pickles
# ----------------------------------------------------------------------------------------------


def write_tiny_cifar(root: Path, per_class_train: int = 8, per_class_test: int = 4, classes: int = 10):
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    offset = 0
    for name, per_class in (("train", per_class_train), ("test", per_class_test)):
        fine = np.tile(np.arange(classes), per_class)
        data = (
            (offset + np.arange(len(fine)))[:, None] * 7 + np.arange(3072)[None, :]
        ) % 256  # image id in pixels
        content = {
            "data": data.astype(np.uint8),
            "fine_labels": fine.tolist(),
            "coarse_labels": (fine // 2).tolist(),
            "filenames": [f"{name}_{i}.png" for i in range(len(fine))],
            "batch_label": name,
        }
        (folder / name).write_bytes(pickle.dumps(content))
        offset += len(fine)
    meta = {
        b"fine_label_names": [f"fine{i}".encode() for i in range(classes)],  # Python-2 style bytes
        b"coarse_label_names": [f"coarse{i}".encode() for i in range(classes // 2)],
    }
    (folder / "meta").write_bytes(pickle.dumps(meta))


def test_cifar100_protocol_on_tiny_pickles(tmp_path):
    write_tiny_cifar(tmp_path)  # 10 classes x 12 images
    splits = load_dataset("cifar100", root=tmp_path, train_size=30, query_size=20, val_size=10, image_size=32)
    assert [len(splits.splits[s]) for s in SPLITS] == [20, 10, 20, 70]
    for name, per_class in zip(SPLITS, (2, 1, 2, 7)):  # stratified: 3 train (1 of them val), 2 query, 7 db
        np.testing.assert_array_equal(np.bincount(splits.splits[name].labels, minlength=10), per_class)
    ids = source_sets(splits)
    assert set().union(*ids.values()) == set(range(120)) and sum(map(len, ids.values())) == 120
    assert splits.class_names[3] == "fine3" and splits.coarse_names == [f"coarse{i}" for i in range(5)]
    assert splits.coarse_title == "coarse class (its CIFAR-100 superclass)"
    np.testing.assert_array_equal(splits.coarse_labels, np.arange(10) // 2)
    sample = 5
    source = int(splits.database.source_ids[sample])
    expected = ((source * 7 + np.arange(3072)) % 256).astype(np.uint8).reshape(3, 32, 32).transpose(1, 2, 0)
    np.testing.assert_array_equal(splits.database.raw_image(sample), expected)
    assert splits.database.labels[sample] == source % 10  # fine label of image `source` (tiled classes)
    image, label, _ = splits.train[0]
    assert image.shape == (3, 32, 32) and label.dtype == torch.int64
    assert "10,000" in splits.protocol


def test_the_gpu_record_s_cifar100_stand_in_is_official_format_with_known_pixels(tmp_path, monkeypatch):
    """benchmarks/paper_standin.py (docs/gpu.md): class 10a+b shows an item of class a left of one of class b."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from paper_standin import write_cifar100_standin

    items = np.repeat(np.arange(10), 3)
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", np.broadcast_to((10 * items + 5)[:, None, None], (30, 28, 28)))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", items)
    root = write_cifar100_standin(tmp_path, tmp_path / "standin", per_class=12)
    splits = load_dataset("cifar100", root=root, train_size=600, query_size=200, val_size=100, image_size=32)
    assert splits.num_classes == 100 and splits.class_names[13] == "trouser+dress"
    np.testing.assert_array_equal(splits.coarse_labels, np.arange(100) // 10)
    database = splits.database
    images = np.stack([database.raw_image(i) for i in range(len(database))])  # (n, 32, 32, 3)
    left, right = database.labels // 10, database.labels % 10
    np.testing.assert_array_equal(images[:, :, :16], np.broadcast_to((10 * left + 5)[:, None, None, None], (len(left), 32, 16, 3)))
    np.testing.assert_array_equal(images[:, :, 16:], np.broadcast_to((10 * right + 5)[:, None, None, None], (len(left), 32, 16, 3)))
    assert sum(len(part) for part in splits.splits.values()) == 1200  # 12 a class, train+test pooled


def test_cifar100_download_fetches_the_official_archive_with_a_timeout_and_extracts_it(tmp_path, monkeypatch):
    """download=True through shc._download (a timeout, the MD5 checked), not torchvision's untimed download: the
    archive is the official tar.gz of the cifar-100-python folder, here a tiny one served as a file:// URL."""
    import hashlib
    import tarfile

    import shc.data.formats as formats

    write_tiny_cifar(tmp_path / "source")
    archive = tmp_path / "server" / "cifar-100-python.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "source" / "cifar-100-python", arcname="cifar-100-python")
    monkeypatch.setattr(formats, "CIFAR100_URLS", (archive.as_uri(),))
    monkeypatch.setattr(formats, "CIFAR100_MD5", "0000")  # a wrong checksum: refused, nothing extracted
    root = tmp_path / "data"
    with pytest.raises(DownloadError, match="md5 .* does not start with the expected 0000"):
        load_dataset("cifar100", root=root, download=True, train_size=30, query_size=20, val_size=10, image_size=32)
    assert not (root / "cifar-100-python").exists()
    monkeypatch.setattr(formats, "CIFAR100_MD5", hashlib.md5(archive.read_bytes()).hexdigest())
    downloaded = load_dataset("cifar100", root=root, download=True, train_size=30, query_size=20, val_size=10,
                              image_size=32)
    local = load_dataset("cifar100", root=tmp_path / "source", train_size=30, query_size=20, val_size=10,
                         image_size=32)
    assert np.array_equal(downloaded.train.labels, local.train.labels)
    assert sorted(p.name for p in root.iterdir()) == ["cifar-100-python", "cifar-100-python.tar.gz"]


def test_cifar100_seeded(tmp_path):
    write_tiny_cifar(tmp_path)
    first, again, other = (
        load_dataset("cifar100", root=tmp_path, seed=s, train_size=30, query_size=20) for s in (4, 4, 5)
    )
    np.testing.assert_array_equal(first.query.source_ids, again.query.source_ids)
    assert not np.array_equal(first.query.source_ids, other.query.source_ids)


def test_cifar100_sizes_must_fit(tmp_path):
    write_tiny_cifar(tmp_path)
    with pytest.raises(ValueError, match="exceeds the 120 images"):
        load_dataset("cifar100", root=tmp_path, train_size=100, query_size=30)


# ----------------------------------------------------------------------------------------------
# Stanford Cars devkit
# ----------------------------------------------------------------------------------------------


def write_cars_annotations(path: Path, classes_1_based: list[int], fnames: list[str]) -> None:
    fields = ["bbox_x1", "bbox_y1", "bbox_x2", "bbox_y2", "class", "fname"]
    annotations = np.zeros((1, len(fnames)), dtype=[(f, "O") for f in fields])
    for k, (cls, fname) in enumerate(zip(classes_1_based, fnames)):
        annotations[0, k] = (
            np.array([[1]], np.uint8),
            np.array([[2]], np.uint8),
            np.array([[20]], np.uint8),
            np.array([[10]], np.uint8),
            np.array([[cls]], np.uint8),
            np.array([fname]),
        )
    savemat(path, {"annotations": annotations})


def write_tiny_cars(root: Path, kaggle: bool = False) -> dict[str, int]:
    """3 classes; 2 train and 2 test images per class; returns image path -> 0-based class.
    ``kaggle``: the mirror's layout (nested image folders, test annotations inside devkit/)."""
    (root / "devkit").mkdir(parents=True)
    names = np.array(
        ["AM General Hummer SUV 2000", "Acura RL Sedan 2012", "Audi R8 Coupe 2012"], dtype=object
    )
    savemat(root / "devkit" / "cars_meta.mat", {"class_names": names.reshape(1, -1)})
    truth = {}
    test_annotations = "devkit/cars_test_annos_withlabels.mat" if kaggle else "cars_test_annos_withlabels.mat"
    for part, annotation_file in (("train", "devkit/cars_train_annos.mat"), ("test", test_annotations)):
        images = f"cars_{part}/cars_{part}" if kaggle else f"cars_{part}"
        (root / images).mkdir(parents=True)
        classes = [1, 2, 3, 3, 2, 1]
        fnames = [f"{k:05d}.jpg" for k in range(1, 7)]
        for k, (cls, fname) in enumerate(zip(classes, fnames)):
            colour = (40 * cls, 7 * k, 200 if part == "train" else 20)
            Image.new("RGB", (30, 20), colour).save(root / images / fname)
            truth[f"{images}/{fname}"] = cls - 1
        write_cars_annotations(root / annotation_file, classes, fnames)
    return truth


def relative(path_text: str, root: Path) -> str:
    return Path(path_text).relative_to(root).as_posix()


@pytest.mark.parametrize("kaggle", [False, True])
def test_stanford_cars_a_official_split(tmp_path, kaggle):
    truth = write_tiny_cars(tmp_path / "stanford_cars", kaggle)
    splits = load_dataset("stanford-cars-a", root=tmp_path, val_size=3, image_size=16)
    folder = tmp_path / "stanford_cars"
    assert (
        splits.num_classes == 3
        and splits.class_names[1] == "Acura RL Sedan 2012"
        and splits.coarse_labels is None
    )
    files = {name: [relative(p, folder) for p in split.paths] for name, split in splits.splits.items()}
    assert sorted(files["query"]) == sorted(k for k in truth if k.startswith("cars_test"))
    assert sorted(files["database"]) == sorted(k for k in truth if k.startswith("cars_train"))
    assert len(files["val"]) == 3 and len(files["train"]) == 3
    assert sorted(files["train"] + files["val"]) == sorted(files["database"])
    np.testing.assert_array_equal(np.bincount(splits.val.labels, minlength=3), 1)
    for name, split in splits.splits.items():
        np.testing.assert_array_equal(split.labels, [truth[f] for f in files[name]])
    raw = splits.query.raw_image(0)
    assert raw.shape == (20, 30, 3) and raw.dtype == np.uint8
    assert abs(int(raw[..., 2].mean()) - 20) <= 3  # a test-set image (blue channel 20, JPEG-lossy)
    assert splits.query[0][0].shape == (3, 16, 16)
    # model selection ranks the validation queries against the database without their own images
    selection = splits.selection_database()
    assert sorted(relative(p, folder) for p in selection.paths) == sorted(files["train"])
    assert splits.selection_left_out() == ("validation images",)


def test_stanford_cars_b_random_disjoint(tmp_path):
    write_tiny_cars(tmp_path)
    splits = load_dataset("stanford-cars-b", root=tmp_path, train_size=6, query_size=3, val_size=3)
    ids = source_sets(splits)
    assert [len(ids[s]) for s in SPLITS] == [3, 3, 3, 3]
    assert set().union(*ids.values()) == set(range(12)) and sum(map(len, ids.values())) == 12
    np.testing.assert_array_equal(np.bincount(splits.query.labels, minlength=3), 1)


# ----------------------------------------------------------------------------------------------
# NABirds text files
# ----------------------------------------------------------------------------------------------


def write_tiny_nabirds(root: Path) -> dict[str, tuple[int, bool]]:
    """Leaf classes 5, 7, 12, 20 (non-contiguous) under parents 2 and 3; 6 images each, half train.
    Returns image path -> (leaf class id, is official train)."""
    (root / "images").mkdir(parents=True)
    classes = {
        0: "Birds",
        2: "Ducks",
        3: "Hawks",
        5: "Mallard (Male)",
        7: "Mallard (Female)",
        12: "Red-tailed Hawk",
        20: "Cooper's Hawk",
        30: "Unused leaf",
    }
    hierarchy = {2: 0, 3: 0, 5: 2, 7: 2, 12: 3, 20: 3, 30: 3}
    truth, image_lines, label_lines, split_lines = {}, [], [], []
    for leaf in (20, 5, 12, 7):
        (root / "images" / f"{leaf:04d}").mkdir()
        for k in range(6):
            image_id = f"{leaf:04d}{k:04d}-aaaa-bbbb-cccc-{leaf * 10 + k:012d}"
            relative_path = f"{leaf:04d}/{image_id.replace('-', '')}.png"
            Image.new("RGB", (12, 9), (leaf * 10, k * 30, 5)).save(root / "images" / relative_path)
            is_train = k % 2 == 0
            truth[relative_path] = (leaf, is_train)
            image_lines.append(f"{image_id} {relative_path}")
            label_lines.append(f"{image_id} {leaf}")
            split_lines.append(f"{image_id} {int(is_train)}")
    (root / "images.txt").write_text("\n".join(image_lines) + "\n")
    (root / "image_class_labels.txt").write_text("\n".join(label_lines[::-1]) + "\n")  # other order
    (root / "train_test_split.txt").write_text("\n".join(sorted(split_lines)) + "\n")
    (root / "classes.txt").write_text("".join(f"{i} {name}\n" for i, name in classes.items()))
    (root / "hierarchy.txt").write_text("".join(f"{c} {p}\n" for c, p in hierarchy.items()))
    return truth


def nabirds_truth_of(splits: DatasetSplits, folder: Path, truth: dict) -> dict[str, list]:
    return {
        name: [truth[relative(p, folder / "images")] for p in split.paths]
        for name, split in splits.splits.items()
    }


def test_nabirds_a_official_split_and_hierarchy(tmp_path):
    truth = write_tiny_nabirds(tmp_path / "nabirds")
    splits = load_dataset("nabirds-a", root=tmp_path, val_size=4, image_size=8)
    assert splits.class_names == ["Mallard (Male)", "Mallard (Female)", "Red-tailed Hawk", "Cooper's Hawk"]
    np.testing.assert_array_equal(splits.coarse_labels, [0, 0, 1, 1])
    assert splits.coarse_names == ["Ducks", "Hawks"]
    assert splits.coarse_title == "coarse class (its parent in hierarchy.txt)"
    leaf_to_label = {5: 0, 7: 1, 12: 2, 20: 3}
    facts = nabirds_truth_of(splits, tmp_path / "nabirds", truth)
    for name, split in splits.splits.items():
        np.testing.assert_array_equal(split.labels, [leaf_to_label[leaf] for leaf, _ in facts[name]])
    assert all(not is_train for _, is_train in facts["query"]) and len(facts["query"]) == 12
    assert all(is_train for _, is_train in facts["database"]) and len(facts["database"]) == 12
    ids = source_sets(splits)
    assert ids["train"] | ids["val"] == ids["database"] and not ids["train"] & ids["val"]
    assert len(ids["val"]) == 4 and not ids["val"] & ids["query"]
    image = splits.database.raw_image(0)
    leaf = facts["database"][0][0]
    assert image.shape == (9, 12, 3) and image[0, 0, 0] == leaf * 10
    assert splits.val[0][0].shape == (3, 8, 8)

    swapped = load_dataset("nabirds-a", root=tmp_path, val_size=4, train_on_official_test=True)
    assert all(not t for _, t in nabirds_truth_of(swapped, tmp_path / "nabirds", truth)["database"])


def test_nabirds_b_random_disjoint_database_is_the_rest(tmp_path):
    write_tiny_nabirds(tmp_path)
    splits = load_dataset("nabirds-b", root=tmp_path, train_size=8, query_size=8, val_size=4)
    ids = source_sets(splits)
    assert [len(ids[s]) for s in SPLITS] == [4, 4, 8, 8]
    assert set().union(*ids.values()) == set(range(24)) and sum(map(len, ids.values())) == 24
    assert "25,612" in splits.protocol


@pytest.mark.parametrize(("dataset", "write", "damage"), [
    ("cifar100", write_tiny_cifar, ("cifar-100-python/train", lambda data: data[: len(data) // 2])),
    ("stanford-cars-a", write_tiny_cars, ("devkit/cars_train_annos.mat", lambda data: b"MATLAB 5.0 garbage" * 9)),
    ("stanford-cars-a", write_tiny_cars, ("devkit/cars_meta.mat", lambda data: data[:200])),
    ("nabirds-a", write_tiny_nabirds, ("classes.txt", lambda data: b"\xff\xfe" + data)),
])
def test_a_damaged_dataset_file_is_named_with_the_fix(tmp_path, dataset, write, damage):
    """A truncated pickle, a garbled or cut .mat, a text file that is not UTF-8: the error names the file and how
    to restore it, not a bare UnpicklingError, IndexError or UnicodeDecodeError."""
    write(tmp_path)
    name, change = damage
    path = tmp_path / name
    path.write_bytes(change(path.read_bytes()))
    with pytest.raises(ValueError, match="is damaged or not the official file") as raised:
        load_dataset(dataset, root=tmp_path, **({"train_size": 30, "query_size": 20, "val_size": 10}
                                                 if dataset == "cifar100" else {}))
    assert str(path) in str(raised.value)


# ----------------------------------------------------------------------------------------------
# imagefolder
# ----------------------------------------------------------------------------------------------


def test_imagefolder_split(tmp_path):
    for c, name in enumerate(["cat", "ant", "bee"]):
        (tmp_path / name / "nested").mkdir(parents=True)
        for k in range(10):
            where = tmp_path / name / ("nested" if k % 3 == 0 else "")
            Image.new("RGB", (8, 8), (c * 80, k, 0)).save(where / f"{k}.png")
    (tmp_path / "ant" / "notes.txt").write_text("not an image")
    splits = load_dataset("imagefolder", root=tmp_path, train_size=12, query_size=6, val_size=3)
    assert splits.class_names == ["ant", "bee", "cat"]
    ids = source_sets(splits)
    assert [len(ids[s]) for s in SPLITS] == [9, 3, 6, 12]
    assert set().union(*ids.values()) == set(range(30))
    for split in splits.splits.values():
        folders = [Path(p).relative_to(tmp_path).parts[0] for p in split.paths]
        assert [splits.class_names[y] for y in split.labels] == folders
    written_order = {"cat": 0, "ant": 1, "bee": 2}
    for i in range(len(splits.query)):  # each image is its class folder's colour
        red = splits.query.raw_image(i)[0, 0, 0]
        assert red == 80 * written_order[splits.class_names[splits.query.labels[i]]]


# ----------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("cifar100", ["cifar-100-python", "https://www.cs.toronto.edu/~kriz/cifar.html", "download=True",
                      "load_dataset('cifar100', download=True)", "--data-root"]),
        ("stanford-cars-a", ["cars_train_annos.mat", "cars_meta.mat", "cars_test_annos_withlabels.mat", "--data-root"]),
        ("stanford-cars-b", ["devkit/cars_meta.mat", "cars_train/"]),
        ("nabirds-a", ["image_class_labels.txt", "hierarchy.txt", "https://dl.allaboutbirds.org/nabirds"]),
        ("nabirds-b", ["train_test_split.txt", "images/"]),
        ("fashion-composite", ["train-images-idx3-ubyte", "dataset-fashion-mnist", "download=True",
                               "python -c \"from shc.data import load_dataset; load_dataset('fashion-composite', "]),
        ("fashion-modes", ["train-images-idx3-ubyte", "dataset-fashion-mnist", "download=True"]),
        ("mnist-composite", ["t10k-labels-idx1-ubyte", "load_dataset('mnist-composite', download=True)",
                             "--data-root"]),
        ("imagefolder", ["root="]),
    ],
)
def test_missing_dataset_says_what_and_where(tmp_path, monkeypatch, name, expected):
    monkeypatch.setattr(composites, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian-package")
    with pytest.raises(FileNotFoundError) as error:
        load_dataset(name, root=tmp_path / "empty")
    message = str(error.value)
    assert all(text in message for text in expected), message
    if name != "imagefolder":
        assert str(tmp_path / "empty") in message


def test_unknown_dataset_lists_known_names():
    with pytest.raises(
        ValueError, match=r"unknown dataset 'cifar10'.*digits-composite.*nabirds-b.*imagefolder"
    ):
        load_dataset("cifar10")
    with pytest.raises(ValueError, match="Known datasets"):
        default_transforms("nope", train=True)


def test_seed_and_size_validation(tmp_path):
    with pytest.raises(ValueError, match="seed"):
        load_dataset("digits-composite", seed=-1)
    write_tiny_cifar(tmp_path)
    with pytest.raises(ValueError, match=r"val_size=1.5.*\[0, 1\]"):
        load_dataset("cifar100", root=tmp_path, train_size=30, query_size=20, val_size=1.5)


def test_multi_hot_labels_are_float_vectors():
    labels = np.array([[1, 0, 1], [0, 1, 0]])
    split = HashingSplit(labels, images=np.zeros((2, 4, 4), np.uint8))
    _, label, index = split[1]
    assert label.dtype == torch.float32 and label.tolist() == [0.0, 1.0, 0.0] and index == 1
    with pytest.raises(ValueError, match="exactly one of images"):
        HashingSplit(labels)


# ----------------------------------------------------------------------------------------------
# fashion-modes: visual modes of single items (issue 35's non-compositional testbed)
# ----------------------------------------------------------------------------------------------
def test_kmeans_recovers_separated_blobs_and_visual_modes_number_them_by_size():
    from shc.data.modes import kmeans, visual_modes

    rng = np.random.default_rng(0)
    blobs = np.repeat(np.arange(3), [50, 30, 20])
    points = rng.normal(size=(100, 4)) * 0.1 + np.eye(4)[blobs] * 10
    labels, centres = kmeans(points, 3, np.random.default_rng(1))
    assert len(set(zip(labels, blobs))) == 3  # a one-to-one map between clusters and blobs
    np.testing.assert_allclose(np.sort(centres.sum(axis=1)), [10, 10, 10], atol=0.2)
    # two items of two prototypes each (7 and 4 images): every image's mode is its prototype, the larger first
    prototypes = rng.integers(0, 256, (4, 28, 28))
    which = np.array([0] * 7 + [1] * 4 + [2] * 4 + [3] * 7)
    images = np.clip(prototypes[which] + rng.integers(-3, 4, (22, 28, 28)), 0, 255).astype(np.uint8)
    items = which // 2
    fine = visual_modes(images, items, subclasses=2, components=3)
    np.testing.assert_array_equal(fine, [0] * 7 + [1] * 4 + [3] * 4 + [2] * 7)


def test_fashion_modes_splits_are_disjoint_draws_of_each_mode_with_the_item_as_coarse_class(tmp_path):
    from shc.data.modes import visual_modes

    rng = np.random.default_rng(0)
    prototypes = rng.integers(0, 256, (20, 28, 28))  # two per item, 8 noisy images of each (6 + 2 per file pair)
    which = np.concatenate([np.repeat(np.arange(20), 6), np.repeat(np.arange(20), 2)])
    images = np.clip(prototypes[which] + rng.integers(-3, 4, (len(which), 28, 28)), 0, 255).astype(np.uint8)
    labels = which // 2
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", images[:120])
    write_idx(tmp_path / "train-labels-idx1-ubyte", labels[:120])
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", images[120:])
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", labels[120:])
    splits = load_dataset("fashion-modes", root=tmp_path, subclasses=2, train_per_class=2, val_per_class=1,
                          query_per_class=1, database_per_class=1)
    fine = visual_modes(images, labels, 2)
    assert splits.num_classes == 20 and splits.class_names[3] == "Trouser #2"
    np.testing.assert_array_equal(splits.coarse_labels, np.repeat(np.arange(10), 2))
    assert splits.coarse_names[9] == "Ankle boot"
    assert splits.coarse_title == "coarse class (the item whose mode it is)"
    used = []
    for split, count in (("train", 2), ("val", 1), ("query", 1), ("database", 1)):
        part = getattr(splits, split)
        np.testing.assert_array_equal(np.bincount(part.labels, minlength=20), [count] * 20)
        ids = part.source_ids
        np.testing.assert_array_equal(fine[ids], part.labels)  # each image is of its class's mode ...
        np.testing.assert_array_equal(np.stack([part.raw_image(i) for i in range(len(ids))]), images[ids])  # its image
        used.extend(ids.tolist())
    assert len(used) == len(set(used))  # without replacement, no image in two splits
    again = load_dataset("fashion-modes", root=tmp_path, subclasses=2, train_per_class=2, val_per_class=1,
                         query_per_class=1, database_per_class=1, seed=0)
    np.testing.assert_array_equal(again.train.source_ids, splits.train.source_ids)
    other = load_dataset("fashion-modes", root=tmp_path, subclasses=2, train_per_class=2, val_per_class=1,
                         query_per_class=1, database_per_class=1, seed=1)
    assert not np.array_equal(other.train.source_ids, splits.train.source_ids)
    with pytest.raises(ValueError, match=r"fashion-modes class \d+ has 8 images but .* ask for 400; lower them"):
        load_dataset("fashion-modes", root=tmp_path, subclasses=2, train_per_class=100, val_per_class=100,
                     query_per_class=100, database_per_class=100)
    with pytest.raises(ValueError, match="subclasses must be an integer in"):
        load_dataset("fashion-modes", root=tmp_path, subclasses=1)


def test_the_protocol_says_at_what_size_the_networks_see_the_images():
    """A reader audit (issue 38): `standard-fine`'s pages named "Fashion-MNIST 28x28 images" while its networks train at
    14 pixels high; the protocol now says so whenever ``image_size`` resizes them (and only then)."""
    native = load_dataset("digits-composite")
    assert "networks see" not in native.protocol
    resized = load_dataset("digits-composite", image_size=16)
    assert resized.protocol == native.protocol + "; the networks see the images at 16 pixels high (width in proportion)"
    assert resized.train[0][0].shape[-2] == 16  # what the sentence says is what the transform does
    pair = load_dataset("digits-composite", image_size=(12, 20))
    assert pair.protocol.endswith("; the networks see the images at 12x20 pixels")
    assert pair.query[0][0].shape[-2:] == (12, 20)


def test_a_hand_made_protocol_leaves_out_only_what_it_declares():
    """Splits built without source_ids number their samples from 0 each, so equal ids mean nothing: only a protocol
    that declares its database holds the validation images (val_in_database) has them left out of selection."""
    from shc.data.splits import DatasetSplits, HashingSplit

    def split(n):
        return HashingSplit(np.arange(n) % 2, images=np.zeros((n, 4, 4), np.uint8))

    parts = {"train": split(8), "val": split(4), "query": split(4), "database": split(10)}
    own = DatasetSplits(name="mine", **parts, class_names=["a", "b"], num_classes=2, multi_label=False,
                        coarse_labels=None, coarse_names=None, protocol="by hand")
    assert own.selection_database() is own.database and own.selection_left_out() == ()
