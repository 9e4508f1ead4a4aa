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


def runs_table(throughputs: list[float]) -> None:
    from shc.presets import get_preset

    preset = get_preset("paper")
    configs = preset.configs()
    epochs, classifier_epochs = preset.config["epochs"], preset.config["classifier_epochs"]
    train_images = 10_000  # CIFAR-100's default train_size (shc.data.formats._load_cifar100)
    per_run = epochs * train_images
    stage1 = classifier_epochs * train_images
    datasets_seeds = len({(c.dataset, c.seed) for c in configs})
    total = len(configs) * per_run + datasets_seeds * stage1
    print(f"\nruns: the paper preset, {len(configs)} hashing runs + {datasets_seeds} stage-1 classifiers; "
          f"{epochs} epochs x {train_images:,} training images = {per_run:,} images a run (estimate: formula)")
    print(f"{'images/s (yours)':>18}{'runs/hour/GPU':>16}{'grid GPU-hours':>16}")
    for ips in throughputs:
        print(f"{ips:>18,.0f}{3600 * ips / per_run:>16.2f}{total / ips / 3600:>16,.0f}")


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
