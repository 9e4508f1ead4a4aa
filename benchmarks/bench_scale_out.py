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


def codes_rows(count: int, bits_list: list[int]) -> tuple[list[dict], list[str]]:
    """Table 1 as rows (``store``, ``bits``, ``bytes/code``, ``codes/GiB``), and the stores left out (not installed)."""
    rows, missing = [], []
    rng = np.random.default_rng(0)
    for bits in bits_list:
        codes = np.where(rng.random((count, bits)) < 0.5, -1, 1).astype(np.int8)
        index = HashIndex(bits).add(codes)
        sizes = [("HashIndex (memory)", index.nbytes / count)]
        with tempfile.TemporaryDirectory() as folder:
            for target in ("faiss", "usearch", "npy"):
                try:
                    path = Path(folder) / f"codes.{target}"
                    export_codes(index, target, path)
                    sizes.append((f"{target} file", _file_bytes(path, target) / count))
                except ImportError as error:
                    missing.append(f"{target}: {error}")
        dim = 8 * ((bits + 7) // 8)
        sizes.append(("milvus binary (formula)", 8 + dim / 8))
        sizes.append(("milvus-lite float (formula)", 8 + 4 * dim))
        rows += [{"store": name, "bits": bits, "bytes/code": round(per_code, 2), "codes/GiB": round(2**30 / per_code)}
                 for name, per_code in sizes]
    return rows, missing


def codes_table(count: int, bits_list: list[int]) -> None:
    rows, missing = codes_rows(count, bits_list)
    print(f"codes: bytes per code and codes per GiB ({count:,} random codes, ids 0..N-1)")
    print(f"{'store':<28}{'bits':>6}{'bytes/code':>12}{'codes/GiB':>16}")
    for note in missing:
        print(f"  ({note})")
    for row in rows:
        print(f"{row['store']:<28}{row['bits']:>6}{row['bytes/code']:>12.2f}{row['codes/GiB']:>16,.0f}")


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


def runs_rows(throughputs: list[float]) -> tuple[list[dict], str]:
    """Table 2 as rows (``images/s (yours)``, ``CIFAR-100 runs/hour/GPU``, ``grid GPU-hours``) and its heading."""
    from shc.presets import get_preset

    preset = get_preset("paper")
    configs = preset.configs()
    epochs, classifier_epochs = preset.config["epochs"], preset.config["classifier_epochs"]
    hashing = sum(config.epochs * training_images(config.dataset) for config in configs)  # each run its dataset's
    classifiers = {(c.dataset, c.seed): classifier_epochs * training_images(c.dataset) for c in configs}
    total = hashing + sum(classifiers.values())
    per_run = epochs * training_images("cifar100")
    heading = (f"runs: the paper preset, {len(configs)} hashing runs + {len(classifiers)} stage-1 classifiers; a "
               f"CIFAR-100 run is {epochs} epochs x {training_images('cifar100'):,} training images = {per_run:,} "
               f"images, the grid {total:,} images with each dataset's own training set (estimate: formula)")
    rows = [{"images/s (yours)": ips, "CIFAR-100 runs/hour/GPU": round(3600 * ips / per_run, 2),
             "grid GPU-hours": round(total / ips / 3600)} for ips in throughputs]
    return rows, heading


def runs_table(throughputs: list[float]) -> None:
    rows, heading = runs_rows(throughputs)
    print(f"\n{heading}")
    print(f"{'images/s (yours)':>18}{'CIFAR-100 runs/hour/GPU':>25}{'grid GPU-hours':>16}")
    for row in rows:
        print(f"{row['images/s (yours)']:>18,.0f}{row['CIFAR-100 runs/hour/GPU']:>25.2f}{row['grid GPU-hours']:>16,.0f}")


def run(quick: bool = False) -> list[dict]:
    """Both tables as rows for ``benchmarks/run.py`` (``table`` tells them apart), at the defaults of
    :func:`main` (``quick``: 20,000 codes instead of 200,000)."""
    codes, _ = codes_rows(20_000 if quick else 200_000, [16, 32, 64])
    runs, _ = runs_rows([500, 1000, 2000])
    return [{"table": "codes", **row} for row in codes] + [{"table": "runs", **row} for row in runs]


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
