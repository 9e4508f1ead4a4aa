"""The three SHC stages as cached, resumable steps, and the experiment presets.

One :class:`RunConfig` describes a run (dataset, method, code length, similarity source, backbone,
schedule, seed, run directory). Each stage writes its artifacts under the run directory and skips its
work when they are already there for the same configuration; a stage directory whose recorded
configuration differs is refused (never mixed):

``<run_dir>/<dataset>/seed<k>/``
    ``stage1-<source>/``            ``similarity.npy``, ``config.json``, ``metrics.json`` (classifier
                                    accuracy, for the "logits" source), ``classifier/`` (training run)
    ``stage2-<method>-<q>bit/``     ``centers.npy``, ``quality.json``, ``history.json`` (SHC cycles)
    ``stage3-<method>-<q>bit/``     ``train/`` (checkpoints, ``history.csv``), ``codes.npz``,
                                    ``metrics.json`` (mAP@100/1000/ALL, P@K, R@K, PR curve)

(``<method>-<source>`` instead of ``<method>`` for "shc" and "semantic" built from an S other than
"logits", e.g. ``stage3-shc-text-32bit``.)

Reported retrieval numbers are those of the model selected on the *validation* split (best
validation mAP@ALL over the evaluated epochs), measured once on the query set. The authors' release
instead reports each metric's maximum over epochs on the query set, which is optimistic.

Reading finished runs into tables, curves and example retrievals is :mod:`shc.results`.

Command line: ``python -m shc.pipeline --preset quick`` runs the quick grid and prints the mAP table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

SIMILARITY_SOURCES = ("logits", "text", "labels", "hierarchy")
PRESETS = ("quick", "paper")
MAP_KEYS = ("mAP@100", "mAP@1000", "mAP@ALL")


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run of the pipeline.

    Parameters
    ----------
    dataset, dataset_options, data_root
        Passed to :func:`shc.data.load_dataset`.
    method : str
        A name from :func:`shc.methods.available_methods` ("shc", "csq", "mds", "random", "semantic",
        and the baselines). It fixes the loss, the center generator (if any) and the hash head.
    bits : int
        Code length q.
    similarity : {"logits", "text", "labels", "hierarchy"}
        Source of S for methods that need one: the paper's data-dependent matrix from a trained
        classifier (Eq. 2-12), class-name embeddings (the "BERT" ablation), identity labels, or the
        dataset's coarse hierarchy.
    mask : {"label", "argmax"}
        Which logit stage 1 masks (see :func:`shc.similarity.similarity_from_logits`).
    backbone, pretrained, weights
        Passed to :func:`shc.models.build_backbone` for both the classifier and the hashing network.
    epochs, lr, classifier_epochs, classifier_lr, batch_size, optimizer, eval_every
        The training schedules of stage 3 and stage 1 (RMSprop with cosine annealing by default).
    method_options, center_options
        Overrides of the method's loss defaults and of the center generator's options.
    seed : int
        Seeds the data splits, the classifier, the centers and the hashing network.
    device, precision
        Where and how to compute (not part of the artifacts' identity).
    run_dir : str
        Root folder of the artifacts.
    """

    dataset: str = "digits-composite"
    dataset_options: Mapping[str, Any] = field(default_factory=dict)
    data_root: str | None = None
    method: str = "shc"
    bits: int = 32
    similarity: str = "logits"
    mask: str = "label"
    backbone: str = "small_cnn"
    pretrained: bool = False
    weights: str | None = None
    epochs: int = 12
    lr: float = 1e-3
    classifier_epochs: int = 8
    classifier_lr: float = 1e-3
    batch_size: int = 64
    optimizer: str = "rmsprop"
    eval_every: int = 3
    method_options: Mapping[str, Any] = field(default_factory=dict)
    center_options: Mapping[str, Any] = field(default_factory=dict)
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    run_dir: str = "runs"

    def __post_init__(self) -> None:
        from shc.methods import available_methods

        if self.method not in available_methods():
            raise ValueError(f"Unknown method {self.method!r}; known methods: {', '.join(available_methods())}.")
        if self.similarity not in SIMILARITY_SOURCES:
            raise ValueError(
                f"Unknown similarity source {self.similarity!r}; known sources: {', '.join(SIMILARITY_SOURCES)}."
            )
        if not (isinstance(self.bits, int) and 8 <= self.bits <= 1024):
            raise ValueError(f"bits must be an integer in [8, 1024] (the paper uses 16, 32, 64), got {self.bits!r}.")
        for name in ("epochs", "classifier_epochs", "batch_size", "eval_every"):
            value = getattr(self, name)
            if not (isinstance(value, int) and value >= 1):
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)


@dataclass
class RunResult:
    """What :func:`run` returns: the config, the artifacts in memory and where they are on disk."""

    config: RunConfig
    metrics: dict[str, Any]
    centers: np.ndarray | None
    similarity: np.ndarray | None
    directory: Path


# --------------------------------------------------------------------------------------------
# Artifact bookkeeping
# --------------------------------------------------------------------------------------------
def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def write_json(path: Path, payload: Any) -> None:
    """Write JSON atomically (temporary file + rename), so an interruption never leaves half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False) as handle:
        json.dump(_jsonable(payload), handle, indent=1)
    os.replace(handle.name, path)


def _save_array(path: Path, **arrays: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp.npz", delete=False) as handle:
        np.savez_compressed(handle, **arrays)
    os.replace(handle.name, path)


def _stage_directory(path: Path, identity: Mapping[str, Any]) -> Path:
    """Create (or check) a stage directory whose ``config.json`` records ``identity``."""
    record = path / "config.json"
    identity = _jsonable(identity)
    if record.exists():
        existing = json.loads(record.read_text())
        if existing != identity:
            differing = sorted(k for k in set(existing) | set(identity) if existing.get(k) != identity.get(k))
            details = ", ".join(f"{k}: {existing.get(k)!r} there vs {identity.get(k)!r} now" for k in differing)
            raise ValueError(
                f"{path} holds artifacts of a different configuration ({details}). Refusing to mix them: "
                "use another run_dir, or delete that folder to recompute."
            )
    else:
        write_json(record, identity)
    return path


def _seed_directory(config: RunConfig) -> Path:
    return Path(config.run_dir) / config.dataset / f"seed{config.seed}"


def _data_identity(config: RunConfig) -> dict[str, Any]:
    return {"dataset": config.dataset, "dataset_options": dict(config.dataset_options), "seed": config.seed}


def _needs_training_classifier(config: RunConfig) -> bool:
    return config.similarity == "logits"


def _stage1_identity(config: RunConfig) -> dict[str, Any]:
    identity = {**_data_identity(config), "similarity": config.similarity}
    if _needs_training_classifier(config):
        identity.update(
            mask=config.mask, backbone=config.backbone, pretrained=config.pretrained, weights=config.weights,
            classifier_epochs=config.classifier_epochs, classifier_lr=config.classifier_lr,
            batch_size=config.batch_size, optimizer=config.optimizer,
        )
    return identity


def _method(config: RunConfig):
    from shc.methods import get_method

    return get_method(config.method)


def _stage2_identity(config: RunConfig) -> dict[str, Any]:
    spec = _method(config)
    identity = {**_data_identity(config), "centers": spec.centers, "bits": config.bits,
                "center_options": dict(config.center_options)}
    if spec.needs_similarity:
        identity["stage1"] = _stage1_identity(config)
    return identity


def _stage3_identity(config: RunConfig) -> dict[str, Any]:
    spec = _method(config)
    identity = {
        **_data_identity(config), "method": config.method, "bits": config.bits, "backbone": config.backbone,
        "pretrained": config.pretrained, "weights": config.weights, "epochs": config.epochs, "lr": config.lr,
        "batch_size": config.batch_size, "optimizer": config.optimizer, "eval_every": config.eval_every,
        "method_options": dict(config.method_options),
    }
    if spec.centers is not None:
        identity["stage2"] = _stage2_identity(config)
    return identity


def _other_similarity(config: RunConfig) -> bool:
    """Whether the method's centers are built from an S other than the default data-dependent one."""
    return config.similarity != "logits" and _method(config).needs_similarity


def stage_directories(config: RunConfig) -> dict[str, Path]:
    """Where each stage of ``config`` keeps its artifacts.

    Methods whose centers are built from S ("shc", "semantic") get the similarity source in their stage-2
    and stage-3 folder names unless it is the default "logits" (``stage2-shc-text-32bit``), so the paper's
    data-dependent and text-embedding variants live side by side in one run directory.
    """
    root = _seed_directory(config)
    variant = f"{config.method}-{config.similarity}" if _other_similarity(config) else config.method
    return {
        "stage1": root / f"stage1-{config.similarity}",
        "stage2": root / f"stage2-{variant}-{config.bits}bit",
        "stage3": root / f"stage3-{variant}-{config.bits}bit",
    }


# --------------------------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------------------------
_DATASETS: dict[str, Any] = {}


def load_data(config: RunConfig):
    """The dataset splits of ``config`` (cached per process: building them is deterministic)."""
    from shc.data import load_dataset

    key = json.dumps(_jsonable({**_data_identity(config), "root": config.data_root}))
    if key not in _DATASETS:
        _DATASETS[key] = load_dataset(config.dataset, root=config.data_root, seed=config.seed,
                                      **dict(config.dataset_options))
    return _DATASETS[key]


def _train_config(config: RunConfig, epochs: int, lr: float, select_metric: str):
    from shc.train import TrainConfig

    return TrainConfig(
        epochs=epochs, batch_size=config.batch_size, lr=lr, optimizer=config.optimizer,
        eval_every=min(config.eval_every, epochs), seed=config.seed, device=config.device,
        precision=config.precision, select_metric=select_metric,
    )


def _accuracy(model, split, config: RunConfig) -> float:
    from shc.train import predict

    logits = predict(model, split, batch_size=512, precision=config.precision)
    return float((logits.argmax(dim=1).numpy() == split.labels).mean())


def run_similarity(config: RunConfig, progress: bool = False) -> np.ndarray:
    """Stage 1: the class-similarity matrix S of ``config.similarity`` (cached)."""
    from shc import similarity as sim

    directory = _stage_directory(stage_directories(config)["stage1"], _stage1_identity(config))
    path = directory / "similarity.npy"
    if path.exists():
        return np.load(path)
    data = load_data(config)
    metrics: dict[str, Any] = {"source": config.similarity}
    if config.similarity == "labels":
        S = sim.similarity_from_labels(data.num_classes)
    elif config.similarity == "hierarchy":
        if data.coarse_labels is None:
            raise ValueError(f"dataset {config.dataset!r} has no class hierarchy; use similarity='logits' or 'text'.")
        S = sim.similarity_from_labels(data.num_classes, data.coarse_labels)
    elif config.similarity == "text":
        S = sim.similarity_from_text(data.class_names)
    else:
        from shc.losses import ClassificationLoss
        from shc.models import build_classifier
        from shc.train import fit

        from shc.train import set_seed

        set_seed(config.seed)  # the initial weights must not depend on what ran before in this process
        classifier = build_classifier(config.backbone, data.num_classes, pretrained=config.pretrained,
                                      weights=config.weights)
        started = time.perf_counter()
        fit(classifier, ClassificationLoss(), data.train,
            _train_config(config, config.classifier_epochs, config.classifier_lr, "accuracy"),
            directory / "classifier", evaluate=lambda model: {"accuracy": _accuracy(model, data.val, config)},
            progress=progress)
        logits, labels = sim.collect_logits(classifier, data.train.with_transform(data.val.transform))
        S = sim.similarity_from_logits(logits, labels, data.num_classes, mask=config.mask)
        metrics.update(
            train_seconds=time.perf_counter() - started,
            val_accuracy=_accuracy(classifier, data.val, config),
            test_accuracy=_accuracy(classifier, data.query, config),  # the paper's Table 2 (query = test set)
        )
    write_json(directory / "metrics.json", metrics)
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".tmp.npy", delete=False) as handle:
        np.save(handle, S)
    os.replace(handle.name, path)
    return S


def run_centers(config: RunConfig, progress: bool = False) -> np.ndarray | None:
    """Stage 2: the method's hash centers (None for methods without centers; cached)."""
    from shc.center_search import local_search_centers
    from shc.centers import center_quality, generate_centers, optimize_semantic_centers

    spec = _method(config)
    if spec.centers is None:
        return None
    directory = _stage_directory(stage_directories(config)["stage2"], _stage2_identity(config))
    path = directory / "centers.npy"
    if path.exists():
        return np.load(path)
    data = load_data(config)
    S = run_similarity(config, progress) if spec.needs_similarity else None
    options = dict(config.center_options)
    started = time.perf_counter()
    history: list[dict[str, Any]] = []
    if spec.centers in ("shc", "shc-ls"):
        optimise = optimize_semantic_centers if spec.centers == "shc" else local_search_centers
        result = optimise(S, config.bits, seed=config.seed, **options)
        centers, history = result.centers, result.history
    else:
        centers = generate_centers(spec.centers, data.num_classes, config.bits, similarity=S,
                                   seed=config.seed, **options)
    quality = {"seconds": time.perf_counter() - started, **center_quality(centers, S)}
    write_json(directory / "quality.json", quality)
    write_json(directory / "history.json", history)
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".tmp.npy", delete=False) as handle:
        np.save(handle, centers)
    os.replace(handle.name, path)
    return centers


def encode(model, split, config: RunConfig) -> np.ndarray:
    """Binary codes sign(u) (sign(0) = +1) of a split, as an int8 (n, q) array."""
    from shc.models import hash_codes
    from shc.train import predict

    return np.asarray(hash_codes(predict(model, split, batch_size=512, precision=config.precision)))


def run_hashing(config: RunConfig, progress: bool = False) -> dict[str, Any]:
    """Stage 3 and evaluation: train the hashing network, encode query and database, measure (cached)."""
    from shc.methods import build_criterion
    from shc.metrics import evaluate
    from shc.models import build_hashing_network
    from shc.train import fit, set_seed

    spec = _method(config)
    directory = _stage_directory(stage_directories(config)["stage3"], _stage3_identity(config))
    metrics_path = directory / "metrics.json"
    if metrics_path.exists():
        return json.loads(metrics_path.read_text())
    data = load_data(config)
    centers = run_centers(config, progress)
    set_seed(config.seed)  # initial weights (network and any loss parameters) independent of earlier runs
    model = build_hashing_network(config.backbone, config.bits, pretrained=config.pretrained,
                                  weights=config.weights, **dict(spec.head))
    criterion = build_criterion(config.method, data.num_classes, config.bits, data.train.labels,
                                centers=centers, seed=config.seed, **dict(config.method_options))

    def validate(network) -> dict[str, float]:
        scores = evaluate(encode(network, data.val, config), data.val.labels,
                          encode(network, data.database, config), data.database.labels,
                          ks=(), pr=False)
        return {key: scores[key] for key in MAP_KEYS}

    started = time.perf_counter()
    history = fit(model, criterion, data.train,
                  _train_config(config, config.epochs, config.lr, "mAP@ALL"),
                  directory / "train", evaluate=validate, progress=progress)
    train_seconds = time.perf_counter() - started
    query_codes, db_codes = encode(model, data.query, config), encode(model, data.database, config)
    _save_array(directory / "codes.npz", query_codes=query_codes, query_labels=data.query.labels,
                database_codes=db_codes, database_labels=data.database.labels)
    scores = evaluate(query_codes, data.query.labels, db_codes, data.database.labels)
    metrics = {
        **{key: scores[key] for key in MAP_KEYS},
        "k": scores["k"], "precision@k": scores["precision@k"], "recall@k": scores["recall@k"],
        "pr_radius": scores["pr_radius"], "pr_precision": scores["pr_precision"], "pr_recall": scores["pr_recall"],
        "selected_epoch": history.best_epoch, "train_seconds": train_seconds,
        "method": config.method, "bits": config.bits, "seed": config.seed, "dataset": config.dataset,
    }
    metrics = _jsonable(metrics)  # the same plain form a cached run reads back
    write_json(metrics_path, metrics)
    return metrics


def run(config: RunConfig, progress: bool = False) -> RunResult:
    """All stages of one configuration (each cached): S (if needed), centers (if any), hashing."""
    spec = _method(config)
    S = run_similarity(config, progress) if spec.needs_similarity else None
    centers = run_centers(config, progress)
    metrics = run_hashing(config, progress)
    return RunResult(config, metrics, centers, S, stage_directories(config)["stage3"])


# --------------------------------------------------------------------------------------------
# Presets and grids
# --------------------------------------------------------------------------------------------
PAPER_DATASETS = ("cifar100", "stanford-cars-a", "stanford-cars-b", "nabirds-a", "nabirds-b")
QUICK_METHODS = ("random", "csq", "mds", "shc")


def preset(name: str, methods: Sequence[str] | None = None, bits: Sequence[int] | None = None,
           seeds: Sequence[int] | None = None, datasets: Sequence[str] | None = None,
           **overrides: Any) -> list[RunConfig]:
    """The grid of a preset as a list of configs.

    ``quick``: the embedded default (digits-composite, 100 classes), small CNN, 16/32/64 bits, methods
    random/CSQ/MDS/SHC, seeds 0-2 (the whole grid in minutes on a 2-core CPU).
    ``paper``: the paper's datasets and hyper-parameters (ImageNet ResNet34, RMSprop, cosine annealing,
    batch 64, 300 epochs, lr 7e-5 on CIFAR-100 and 1e-4 elsewhere), every method, for a GPU machine
    with the datasets in place.
    """
    from shc.methods import available_methods

    if name == "quick":
        base = RunConfig(**overrides)
        methods, datasets = methods or QUICK_METHODS, datasets or (base.dataset,)
        seeds = seeds if seeds is not None else (0, 1, 2)
    elif name == "paper":
        paper = dict(backbone="resnet34", pretrained=True, epochs=300, classifier_epochs=300, batch_size=64,
                     eval_every=10, lr=1e-4, classifier_lr=1e-4)
        base = RunConfig(**{**paper, **overrides})
        methods, datasets = methods or available_methods(), datasets or PAPER_DATASETS
        seeds = seeds if seeds is not None else (0,)
    else:
        raise ValueError(f"Unknown preset {name!r}; known presets: {', '.join(PRESETS)}.")
    configs = []
    for dataset in datasets:
        lr = 7e-5 if name == "paper" and dataset == "cifar100" and "lr" not in overrides else None
        for seed in seeds:
            for q in bits or (16, 32, 64):
                for method in methods:
                    changes = dict(dataset=dataset, seed=seed, bits=q, method=method)
                    if lr is not None:
                        changes.update(lr=lr, classifier_lr=lr)
                    configs.append(base.replace(**changes))
    return configs


def run_grid(configs: Iterable[RunConfig], progress: bool = True) -> list[dict[str, Any]]:
    """Run every config (cached stages are skipped) and return one row of headline numbers each."""
    rows = []
    configs = list(configs)
    for number, config in enumerate(configs, 1):
        started = time.perf_counter()
        metrics = run(config).metrics
        rows.append({"dataset": config.dataset, "method": config.method, "bits": config.bits, "seed": config.seed,
                     **{key: metrics[key] for key in MAP_KEYS}, "train_seconds": metrics["train_seconds"]})
        if progress:
            print(f"[{number}/{len(configs)}] {config.dataset} {config.method} {config.bits} bits seed {config.seed}: "
                  + ", ".join(f"{key} {metrics[key]:.4f}" for key in MAP_KEYS)
                  + f" ({time.perf_counter() - started:.1f} s)", flush=True)
    return rows


def summarize(rows: Sequence[Mapping[str, Any]], metric: str = "mAP@ALL"):
    """Mean and standard deviation over seeds: a (dataset, method) x bits table of "mean ± std" strings."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    grouped = frame.groupby(["dataset", "method", "bits"])[metric].agg(["mean", "std", "count"]).reset_index()
    grouped["cell"] = [f"{m:.4f} ± {s:.4f}" if n > 1 else f"{m:.4f}"
                       for m, s, n in zip(grouped["mean"], grouped["std"].fillna(0.0), grouped["count"])]
    table = grouped.pivot(index=["dataset", "method"], columns="bits", values="cell")
    table.columns = [f"{q} bits" for q in table.columns]
    return table


def report_configs(preset_name: str, dataset: str, methods: Sequence[str], bits: Sequence[int],
                   seeds: Sequence[int], run_dir: str, epochs: int | None = None,
                   **overrides: Any) -> list[RunConfig]:
    """The grid of one report notebook: :func:`preset` restricted to one dataset.

    Parameters
    ----------
    preset_name : {"quick", "paper"}
        The pipeline preset giving the schedules and hyper-parameters.
    dataset, methods, bits, seeds, run_dir
        The notebook's parameters.
    epochs : int, optional
        When given, the number of epochs of *both* networks: the hashing network (``epochs``) and the
        stage-1 classifier (``classifier_epochs``, unless ``overrides`` names it). One ``--epochs``
        override of the report runner then shortens every training of a batch, and all notebooks of the
        batch keep agreeing on the stage-1 configuration they share in ``run_dir``.
    **overrides
        Further :class:`RunConfig` fields (e.g. ``dataset_options``, ``eval_every``).
    """
    if epochs is not None:
        overrides = {"classifier_epochs": epochs, **overrides, "epochs": epochs}
    return preset(preset_name, methods=list(methods), bits=list(bits), seeds=list(seeds), datasets=[dataset],
                  run_dir=run_dir, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the SHC pipeline on a preset grid and print the mAP tables.")
    parser.add_argument("--preset", default="quick", choices=PRESETS)
    parser.add_argument("--methods", nargs="+")
    parser.add_argument("--bits", nargs="+", type=int)
    parser.add_argument("--seeds", nargs="+", type=int)
    parser.add_argument("--datasets", nargs="+")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--run-dir", default="runs")
    args = parser.parse_args(argv)
    overrides: dict[str, Any] = {"run_dir": args.run_dir}
    if args.epochs:
        overrides["epochs"] = args.epochs
    configs = preset(args.preset, methods=args.methods, bits=args.bits, seeds=args.seeds,
                     datasets=args.datasets, **overrides)
    started = time.perf_counter()
    rows = run_grid(configs)
    for metric in MAP_KEYS:
        print(f"\n{metric} (mean ± std over seeds)\n{summarize(rows, metric).to_string()}")
    print(f"\n{len(configs)} runs in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
