"""A short run of the ``paper`` preset on a GPU, where CIFAR-100 and the ImageNet weights cannot be had.

The paper preset's configuration (ResNet34 at 224x224, batch 64, RMSprop, cosine annealing, lr 7e-5 for
CIFAR-100, every stage of SHC) runs end to end through the real CIFAR-100 loader on a *stand-in*: 60,000
images written in the official ``cifar-100-python`` pickle format (``train``, ``test``, ``meta``), 100 classes
of two Fashion-MNIST items side by side (class ``10 a + b``: an item of class ``a`` left of one of class ``b``,
the fashion-composite rule), each 28x56 item pair resized (nearest) to 32x32 and repeated on three channels;
coarse label ``a``. The backbone starts from random weights (``pretrained=False``): no ImageNet weights are
reachable offline, and shc never falls back silently, so the run says so. Only ``epochs`` is shortened.

This proves the GPU path of the real configuration (data loading and resizing to 224, autocast, the three
stages, evaluation) and times it; its mAP is no result about the paper's datasets. Results: docs/gpu.md.

Run: ``python benchmarks/paper_standin.py --fashion-root FOLDER --epochs 3 [--methods shc csq]``, FOLDER
holding Fashion-MNIST's idx files (train and/or t10k, plain or .gz; Debian: /usr/share/datasets/fashion-mnist).
"""

from __future__ import annotations

import argparse
import pickle
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

IMAGES_PER_CLASS = 600  # CIFAR-100: 500 train + 100 test per class


def _fashion_items(root: Path) -> tuple[np.ndarray, np.ndarray]:
    """Fashion-MNIST images (N, 28, 28) uint8 and labels from whichever idx pairs ``root`` holds."""
    from shc.data.composites import _read_idx

    images, labels = [], []
    for split in ("train", "t10k"):
        for suffix in ("", ".gz"):
            image_file = root / f"{split}-images-idx3-ubyte{suffix}"
            label_file = root / f"{split}-labels-idx1-ubyte{suffix}"
            if image_file.is_file() and label_file.is_file():
                images.append(_read_idx(image_file))
                labels.append(_read_idx(label_file).astype(np.int64))
                break
    if not images:
        raise SystemExit(f"--fashion-root {root}: no Fashion-MNIST idx files (train-images-idx3-ubyte[.gz] and "
                         "its labels, or t10k-...) there; on Debian: apt-get install dataset-fashion-mnist, "
                         "then --fashion-root /usr/share/datasets/fashion-mnist")
    return np.concatenate(images), np.concatenate(labels)


def write_cifar100_standin(fashion_root: Path, out: Path, seed: int = 0, per_class: int = IMAGES_PER_CLASS) -> Path:
    """Write the stand-in as ``out/cifar-100-python/{train,test,meta}`` and return ``out``: ``per_class`` images
    a class, a sixth of them in ``test`` (CIFAR-100's 500 + 100 at the default)."""
    items, item_labels = _fashion_items(fashion_root)
    rng = np.random.default_rng(seed)
    fine = np.repeat(np.arange(100), per_class)
    by_class = [np.flatnonzero(item_labels == c) for c in range(10)]
    left = _draw(rng, by_class, fine // 10)
    right = _draw(rng, by_class, fine % 10)
    pairs = np.concatenate([items[left], items[right]], axis=2)  # (N, 28, 56)
    rows, cols = np.arange(32) * 28 // 32, np.arange(32) * 56 // 32
    small = pairs[:, rows][:, :, cols]  # nearest-neighbour resize to 32x32
    data = np.repeat(small[:, None], 3, axis=1).reshape(len(fine), 3072)  # CIFAR rows: R plane, G plane, B plane
    order = rng.permutation(len(fine))
    test = np.zeros(len(fine), dtype=bool)
    test[np.concatenate([rng.choice(np.flatnonzero(fine == c), per_class // 6, replace=False) for c in range(100)])] = True
    folder = out / "cifar-100-python"
    folder.mkdir(parents=True, exist_ok=True)
    for name, chosen in (("train", order[~test[order]]), ("test", order[test[order]])):
        content = {"data": data[chosen].astype(np.uint8), "fine_labels": fine[chosen].tolist(),
                   "coarse_labels": (fine[chosen] // 10).tolist(),
                   "filenames": [f"standin_{i}.png" for i in chosen], "batch_label": f"stand-in {name}"}
        (folder / name).write_bytes(pickle.dumps(content))
    names = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "boot"]
    meta = {"fine_label_names": [f"{names[c // 10]}+{names[c % 10]}" for c in range(100)],
            "coarse_label_names": [f"{name}+any" for name in names]}
    (folder / "meta").write_bytes(pickle.dumps(meta))
    return out


def _draw(rng: np.random.Generator, by_class: list[np.ndarray], classes: np.ndarray) -> np.ndarray:
    """One random item index of class ``classes[i]`` for every i (vectorised per item class)."""
    chosen = np.empty(len(classes), dtype=np.int64)
    for c, pool in enumerate(by_class):
        where = np.flatnonzero(classes == c)
        chosen[where] = pool[rng.integers(0, len(pool), len(where))]
    return chosen


def _stage_seconds(stage3: Path, run_seconds: float) -> dict[str, str]:
    """Stage 3's epoch seconds (training only), its validation passes' seconds and images/s, read from the
    run's ``train/history.json``; ``run s`` is the whole ``pipeline.run`` (stage 1 for the first run too)."""
    import json

    rows = json.loads((stage3 / "train" / "history.json").read_text())["rows"]
    train = sum(row["seconds"] for row in rows)
    evaluations = [row["eval_seconds"] for row in rows if row.get("eval_seconds") is not None]
    return {"run s": f"{run_seconds:.1f}", "train s/epoch": f"{train / len(rows):.1f}",
            "train images/s": f"{len(rows) * 9_000 / train:,.0f}",  # CIFAR-100 split: 9,000 train + 1,000 val
            "validation s": f"{sum(evaluations) / max(1, len(evaluations)):.1f}",
            "validation images/s": f"{46_000 / (sum(evaluations) / len(evaluations)):,.0f}" if evaluations else ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fashion-root", type=Path, default=Path("/usr/share/datasets/fashion-mnist"))
    parser.add_argument("--epochs", type=int, default=3, help="epochs of both networks (the paper: 300)")
    parser.add_argument("--methods", nargs="+", default=["shc"])
    parser.add_argument("--bits", type=int, nargs="+", default=[64])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--run-dir", type=Path, default=None, help="default: a temporary folder")
    args = parser.parse_args(argv)

    import torch

    from shc import pipeline
    from shc.presets import get_preset

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(f"--device {args.device}: CUDA is not available here; pass --device cpu to try it slowly.")
    with tempfile.TemporaryDirectory() as scratch:
        run_dir = args.run_dir or Path(scratch) / "runs"
        started = time.perf_counter()
        data_root = write_cifar100_standin(args.fashion_root, Path(scratch) / "data")
        print(f"stand-in written in {time.perf_counter() - started:.1f} s: {data_root}/cifar-100-python")
        configs = get_preset("paper").configs(methods=args.methods, bits=args.bits, seeds=[0], datasets=["cifar100"],
                                              epochs=args.epochs, run_dir=str(run_dir), data_root=str(data_root),
                                              pretrained=False, device=args.device)
        rows = []
        for config in configs:
            started = time.perf_counter()
            result = pipeline.run(config, progress=True)
            seconds = time.perf_counter() - started
            rows.append({"method": config.method, "bits": config.bits, "epochs": config.epochs,
                         "backbone": config.backbone, "batch": config.batch_size,
                         **_stage_seconds(result.directory, seconds),
                         "mAP@ALL (stand-in)": f"{result.metrics['mAP@ALL']:.3f}",
                         "device": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"})
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from run import print_table

    print_table("paper preset on the CIFAR-100-format stand-in", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
