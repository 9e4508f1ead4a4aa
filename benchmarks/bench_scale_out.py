"""The arithmetic of docs/scale-out.md: what fits where, and how many runs an hour a GPU gives.

Table 1, ``codes``: bytes a code takes in each store and codes per GiB, measured as the size of the file each
export writes for ``--count`` random codes (ids 0..N-1) divided by N (``HashIndex``: ``nbytes``, its memory; the
``.shcidx`` file is the same plus a header). The FAISS file keeps no ids for ids 0..N-1; other ids add an
``IndexBinaryIDMap``'s 8 bytes a code. Milvus keeps its collection on a server: its row is the formula of
the raw field bytes (id 8 + the vector), without the server's index and segment overhead.

Table 2, ``runs``: the paper preset's grid (``shc.presets``) and, per run, the images one training passes through
(epochs x training images; stage 1's classifier once per dataset and seed). Runs per hour per GPU = 3600 x
throughput / images per run, for throughputs given with ``--images-per-second`` (ResNet34 training steps per
second x batch on *your* GPU: measure them with ``python benchmarks/bench_train.py`` there); this prints an
estimate from that formula, not a measurement. Training images: CIFAR-100's default split (``train_size``
10,000); the other paper datasets use their own.

Run: ``python benchmarks/bench_scale_out.py`` (``--count 200000``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

from shc.retrieval import HashIndex
from shc.retrieval.stores import export_codes


def _file_bytes(location: Path, target: str) -> int:
    if target == "npy":  # codes + ids + description
        return sum(os.path.getsize(location.with_name(f"codes{suffix}")) for suffix in (".npy", ".ids.npy", ".json"))
    return os.path.getsize(location)


def codes_table(count: int, bits_list: list[int]) -> None:
    print(f"codes: bytes per code and codes per GiB ({count:,} random codes, ids 0..N-1)")
    print(f"{'store':<28}{'bits':>6}{'bytes/code':>12}{'codes/GiB':>16}")
    rng = np.random.default_rng(0)
    for bits in bits_list:
        codes = np.where(rng.random((count, bits)) < 0.5, -1, 1).astype(np.int8)
        index = HashIndex(bits).add(codes)
        rows = [("HashIndex (memory)", index.nbytes / count)]
        with tempfile.TemporaryDirectory() as folder:
            for target in ("faiss", "usearch", "npy"):
                try:
                    path = Path(folder) / f"codes.{target}"
                    export_codes(index, target, path)
                    rows.append((f"{target} file", _file_bytes(path, target) / count))
                except ImportError as error:
                    print(f"  ({target}: {error})")
        dim = 8 * ((bits + 7) // 8)
        rows.append(("milvus binary (formula)", 8 + dim / 8))
        rows.append(("milvus-lite float (formula)", 8 + 4 * dim))
        for name, per_code in rows:
            print(f"{name:<28}{bits:>6}{per_code:>12.2f}{2**30 / per_code:>16,.0f}")


#: The images each paper dataset's loader trains stage 3 on before it carves out validation (the loaders' defaults,
#: shc.data.formats): CIFAR-100's train_size, the official train sets of Cars-A (8,144; Table 1 prints 8,184) and
#: NABirds-A (23,929), the random protocol's train_size of Cars-B and NABirds-B.
PAPER_TRAIN_POOLS = {"cifar100": 10_000, "stanford-cars-a": 8_144, "stanford-cars-b": 5_880, "nabirds-a": 23_929,
                     "nabirds-b": 16_384}
VAL_SIZE = 0.1  # every paper loader's default val_size, carved from the training pool


def training_images(dataset: str) -> int:
    """The images a run of ``dataset`` trains on an epoch: its pool less the validation carve (CIFAR-100: 9,000)."""
    from shc.data.splits import _resolve_size

    pool = PAPER_TRAIN_POOLS[dataset]
    return pool - _resolve_size(VAL_SIZE, pool, "val_size")


def runs_table(throughputs: list[float]) -> None:
    from shc.presets import get_preset

    preset = get_preset("paper")
    configs = preset.configs()
    epochs, classifier_epochs = preset.config["epochs"], preset.config["classifier_epochs"]
    hashing = sum(config.epochs * training_images(config.dataset) for config in configs)  # each run its dataset's
    classifiers = {(c.dataset, c.seed): classifier_epochs * training_images(c.dataset) for c in configs}
    total = hashing + sum(classifiers.values())
    per_run = epochs * training_images("cifar100")
    print(f"\nruns: the paper preset, {len(configs)} hashing runs + {len(classifiers)} stage-1 classifiers; a CIFAR-100 "
          f"run is {epochs} epochs x {training_images('cifar100'):,} training images = {per_run:,} images, the grid "
          f"{total:,} images with each dataset's own training set (estimate: formula)")
    print(f"{'images/s (yours)':>18}{'CIFAR-100 runs/hour/GPU':>25}{'grid GPU-hours':>16}")
    for ips in throughputs:
        print(f"{ips:>18,.0f}{3600 * ips / per_run:>25.2f}{total / ips / 3600:>16,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--bits", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--images-per-second", type=float, nargs="+", default=[500, 1000, 2000],
                        help="training throughputs to evaluate the formula at (measure yours on the GPU)")
    args = parser.parse_args()
    codes_table(args.count, args.bits)
    runs_table(args.images_per_second)


if __name__ == "__main__":
    main()
