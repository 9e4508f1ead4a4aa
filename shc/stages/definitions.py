"""The five stages of a run (:class:`~shc.stages.base.Stage` subclasses) and the layout they make.

Layout of a run directory::

    <run_dir>/<dataset>/seed<k>/
        stage0-pretrain-<source>-<key>/ weights.pt, metrics.json, classifier/ (only with ``pretrain``)
        stage1-<source>-<key>/          similarity.npy, metrics.json, classifier/ (training run), config.json
        stage2-<variant>-<q>bit-<key>/  centers.npy, quality.json, history.json, config.json
        stage3-<variant>-<q>bit-<key>/  train/, codes.npz, metrics.json, encoder.json, config.json

=============  ==========  ===============================  ===========================================
stage          ``name``    complete when                    reads (its identity nests theirs)
=============  ==========  ===============================  ===========================================
Pretraining    stage0      ``weights.pt``                   -
Similarity     stage1      ``similarity.npy``               Pretraining (a logits S from pretrained weights)
Centers        stage2      ``centers.npy``                  Similarity (centers built from S: SHC, shc-ls)
Hashing        stage3      ``metrics.json`` (training)      Pretraining, Centers
Evaluation     evaluation  ``metrics.json`` at the current  Hashing (its folder: what stage 3 measures on the
                           evaluation version               query set is recomputed from the stored codes)
=============  ==========  ===============================  ===========================================

``<variant>`` is the method, plus the S source for methods whose centers are built from an S other than the default
data-dependent one (``shc-text``). ``<key>`` is 8 hex digits of a hash of the stage's **identity**: everything
that determines its output (the dataset, its options, the resolved data root and a fingerprint of the loaded data,
the seed, the stage's own settings and, nested, the identity of the stages it reads; ``config.json`` records
it). So runs that differ in any setting (say, more epochs) live side by side, identical ones are reused, and
changing the images in a folder changes the key (:meth:`shc.data.DatasetSplits.fingerprint`). Device and
precision are not part of the identity. The identities and folder names are those of every release since the
layout was introduced (``tests/test_stages.py`` checks them against folders built before the Stage refactor).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from shc._io import jsonable, save_npy, save_npz, save_torch, write_json
from shc.evaluation import EVALUATION_VERSION, PRIMARY_METRIC, evaluate_codes, measured, selection_scores
from shc.registry import Registry
from shc.runs import MissingRunError, describe, load_data, method_spec, other_similarity
from shc.stages.base import (Stage, archive_file, array_file, is_main, json_file, json_object, load_array,
                             require_validation, threads, torch_file)
from shc.validation import sign_pm1

__all__ = ["CLASSIFIER_RULES", "STAGES", "Centers", "ClassifierCodes", "Evaluation", "Hashing", "Pretraining",
           "Similarity", "artifact", "classifier_codes", "classifier_config", "data_identity", "encode", "paired_seeds",
           "selection_rule", "stage_directories", "stage_identities", "write_encoder_record"]

STAGES: Registry[type[Stage]] = Registry("stage")
"""The stages by name (``stage0`` ... ``stage3``, ``evaluation``), in the order a run computes them."""


def data_identity(config: Any) -> dict[str, Any]:
    """What fixes a run's splits: dataset, options, seed, resolved data root and the loaded data's fingerprint."""
    from shc.data.cache import resolved_root

    return {"dataset": config.dataset, "dataset_options": dict(config.dataset_options), "seed": config.seed,
            "data_root": resolved_root(config), "data_fingerprint": load_data(config).fingerprint()}


def _train_config(config: Any, epochs: int, lr: float, select_metric: str):
    from shc.train import TrainConfig

    return TrainConfig(
        epochs=epochs, batch_size=config.batch_size, lr=lr, optimizer=config.optimizer,
        eval_every=min(config.eval_every, epochs), seed=config.seed, device=config.device,
        precision=config.precision, select_metric=select_metric,
    )


def _device_record(config: Any) -> dict[str, str]:
    """Where a hashing run trained and in which precision (``auto`` resolved): results are not bit-identical across
    devices, so ``shc.results`` says when a grid mixes them (docs/gpu.md)."""
    from shc.devices import describe_device, resolve_device, resolve_precision

    device = resolve_device(config.device)
    return {"device": describe_device(device), "precision": resolve_precision(config.precision, device)}


def _accuracy(model, split, config: Any) -> float:
    from shc.train import predict

    logits = predict(model, split, batch_size=512, precision=config.precision)
    return float((logits.argmax(dim=1).numpy() == split.labels).mean())


def _fit_classifier(config: Any, classes: int, train, val, directory: Path, epochs: int, lr: float,
                    weights: str | None, progress: bool):
    """A classifier (backbone + FC, softmax cross-entropy) trained into ``directory/classifier``, selected on ``val``'s
    accuracy: stage 0's on its source task, stage 1's on the run's classes. (model, history, seconds); the seconds of
    a resumed run include what the earlier processes spent up to its checkpoint (History.resumed_seconds)."""
    from shc.losses import ClassificationLoss
    from shc.models import build_classifier
    from shc.train import fit, set_seed

    require_validation(val, "the classifier")
    set_seed(config.seed)  # the initial weights must not depend on what ran before in this process
    model = build_classifier(config.backbone, classes, pretrained=config.pretrained, weights=weights)
    started = time.perf_counter()
    history = fit(model, ClassificationLoss(), train, _train_config(config, epochs, lr, "accuracy"),
                  directory / "classifier", evaluate=lambda network: {"accuracy": _accuracy(network, val, config)},
                  progress=progress)
    return model, history, time.perf_counter() - started + history.resumed_seconds


# --------------------------------------------------------------------------------------------
# Stage 0: the backbone pretrained on a source task
# --------------------------------------------------------------------------------------------
@STAGES.register("stage0")
class Pretraining(Stage):
    """Stage 0: the backbone pretrained once per dataset and seed on ``config.pretrain``'s source task
    (:mod:`shc.pretraining`); its ``weights.pt`` start both networks of the run. The run has it only with
    ``pretrain``; :meth:`load` gives the path of the weights."""

    name = "stage0"
    files = (("metrics.json", json_object("source", "train_seconds")), ("weights.pt", torch_file))
    complete = "weights.pt"
    training, schedule = "classifier", "pretrain_epochs"  # eval_every is not in the identity: Stage.check_schedule
    trains = True

    def applies(self) -> bool:
        return self.config.pretrain is not None

    def own_identity(self) -> dict[str, Any] | None:
        config = self.config
        if config.pretrain is None:
            return None
        return {**data_identity(config), "pretrain": config.pretrain, "backbone": config.backbone,
                "epochs": config.pretrain_epochs, "lr": config.pretrain_lr, "batch_size": config.batch_size,
                "optimizer": config.optimizer}

    def label(self) -> str:
        return f"stage0-pretrain-{self.config.pretrain}"

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        from shc.pretraining import pretraining_data

        config = self.config
        source = pretraining_data(config)
        model, history, seconds = _fit_classifier(config, len(source.class_names), source.train, source.val,
                                                  directory, config.pretrain_epochs, config.pretrain_lr, None, progress)
        return model, {"source": config.pretrain, "description": source.description,
                       "classes": list(source.class_names), "train_images": len(source.train),
                       "val_accuracy": _accuracy(model, source.val, config), "selected_epoch": history.best_epoch,
                       "train_seconds": seconds, "threads": threads()}

    def save(self, outputs: Any, directory: Path) -> None:
        model, record = outputs
        save_torch(model.backbone.state_dict(), directory / "weights.pt")
        write_json(directory / "metrics.json", record)

    def load(self) -> Path:
        return self.directory / "weights.pt"


def _start_weights(config: Any, inputs: Mapping[str, Any]) -> str | None:
    """The weights both networks of ``config`` start from: stage 0's when it pretrains, else ``config.weights``."""
    return str(inputs["stage0"]) if inputs.get("stage0") is not None else config.weights


# --------------------------------------------------------------------------------------------
# Stage 1: the class similarity S
# --------------------------------------------------------------------------------------------
@STAGES.register("stage1")
class Similarity(Stage):
    """Stage 1: the class-similarity matrix S of ``config.similarity``: the paper's data-dependent S from a
    trained classifier's masked logits (Eq. 2-12, :func:`shc.similarity.similarity_from_logits`), class-name
    embeddings, identity labels or the dataset's coarse hierarchy. A run needs it when its centers do."""

    name = "stage1"
    parents = (Pretraining,)
    files = (("metrics.json", json_object("source")), ("similarity.npy", array_file))
    complete = "similarity.npy"
    training, schedule = "classifier", "classifier_epochs"  # eval_every is not in the identity: Stage.check_schedule
    trains = True

    def applies(self) -> bool:
        return method_spec(self.config).needs_similarity

    def reads(self) -> tuple[type[Stage], ...]:
        return super().reads() if self.config.similarity == "logits" else ()  # only the classifier starts from it

    def own_identity(self) -> dict[str, Any]:
        config = self.config
        identity = {**data_identity(config), "similarity": config.similarity}
        if config.similarity == "logits":
            identity.update(mask=config.mask, backbone=config.backbone, pretrained=config.pretrained,
                            weights=config.weights, classifier_epochs=config.classifier_epochs,
                            classifier_lr=config.classifier_lr, batch_size=config.batch_size,
                            optimizer=config.optimizer)
        return identity

    def label(self) -> str:
        return f"stage1-{self.config.similarity}"

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        from shc import similarity as sim

        config = self.config
        data = load_data(config)
        if config.similarity == "labels":
            return sim.similarity_from_labels(data.num_classes), {}
        if config.similarity == "hierarchy":
            if data.coarse_labels is None:
                raise ValueError(f"dataset {config.dataset!r} has no class hierarchy; use similarity='logits' or "
                                 "'text'.")
            return sim.similarity_from_labels(data.num_classes, data.coarse_labels), {}
        if config.similarity == "text":
            return sim.similarity_from_text(data.class_names), {}
        from shc.train import predict

        classifier, _, seconds = _fit_classifier(config, data.num_classes, data.train, data.val, directory,
                                                 config.classifier_epochs, config.classifier_lr,
                                                 _start_weights(config, inputs), progress)
        # Stage 1's logits go through the same inference path as the codes (the model's own device).
        logits = predict(classifier, data.train.with_transform(data.val.transform), batch_size=512,
                         precision=config.precision).numpy()
        S = sim.similarity_from_logits(logits, data.train.labels, data.num_classes, mask=config.mask)
        # the paper's Table 2 (query = test), on the classes the classifier knows; held-out ones separately
        seen = data.query.subset(np.flatnonzero(data.query.labels < data.num_classes))
        return S, {"train_seconds": seconds, "val_accuracy": _accuracy(classifier, data.val, config),
                   "test_accuracy": _accuracy(classifier, seen, config), "test_classes": "seen",
                   **({"test_accuracy_all_queries": _accuracy(classifier, data.query, config)}
                      if len(seen) < len(data.query) else {})}

    def save(self, outputs: Any, directory: Path) -> None:
        S, record = outputs
        write_json(directory / "metrics.json", {"source": self.config.similarity, **record, "threads": threads()})
        save_npy(directory / "similarity.npy", S)

    def load(self) -> np.ndarray:
        return load_array(self.directory / "similarity.npy")


# --------------------------------------------------------------------------------------------
# Stage 2: the hash centers
# --------------------------------------------------------------------------------------------
@STAGES.register("stage2")
class Centers(Stage):
    """Stage 2: the method's hash centers (:func:`shc.centers.run_center_method`; for SHC the paper's Algorithm 1,
    Eq. 22-38, at the GV distance of Eq. 13, from S), with their quality (d_min, S_loss) and the optimiser's
    history. Rank 0 computes."""

    name = "stage2"
    parents = (Similarity,)
    files = (("quality.json", json_object()), ("history.json", json_file), ("centers.npy", array_file))
    complete = "centers.npy"

    def applies(self) -> bool:
        return method_spec(self.config).centers is not None

    def own_identity(self) -> dict[str, Any] | None:
        from shc.centers.registry import CENTER_GENERATORS

        config, spec = self.config, method_spec(self.config)
        if spec.centers is None:
            return None
        version = CENTER_GENERATORS.get(spec.centers).version  # version 1 is left out: older identities stay
        return {**data_identity(config), "centers": spec.centers, "bits": config.bits,
                "center_options": dict(config.center_options),
                **({"generator_version": version} if version != 1 else {})}

    def label(self) -> str:
        return f"stage2-{_variant(self.config)}-{self.config.bits}bit"

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        from shc.centers import center_quality, run_center_method

        config = self.config
        S = inputs.get("stage1")
        started = time.perf_counter()
        centers, history = run_center_method(method_spec(config).centers, load_data(config).num_classes, config.bits,
                                             similarity=S, seed=config.seed, **dict(config.center_options))
        quality = {"seconds": time.perf_counter() - started, **center_quality(centers, S), "threads": threads()}
        return centers, quality, history

    def save(self, outputs: Any, directory: Path) -> None:
        centers, quality, history = outputs
        write_json(directory / "quality.json", quality)
        write_json(directory / "history.json", history)
        save_npy(directory / "centers.npy", centers)

    def load(self) -> np.ndarray:
        return load_array(self.directory / "centers.npy")


def _variant(config: Any) -> str:
    """The method in folder names, with the S source when its centers are built from a non-default S."""
    return f"{config.method}-{config.similarity}" if other_similarity(config) else config.method


# --------------------------------------------------------------------------------------------
# Stage 3: the hashing network
# --------------------------------------------------------------------------------------------
def encode(model, split, config: Any) -> np.ndarray:
    """Binary codes sign(u) (sign(0) = +1) of a split, as an int8 (n, q) array (the model's own device)."""
    from shc.models import hash_codes
    from shc.train import predict

    return np.asarray(hash_codes(predict(model, split, batch_size=512, precision=config.precision)))


ENCODER_FILE = "encoder.json"
ENCODER_FORMAT = 1


def _input_record(data: Any, config: Any) -> dict[str, Any]:
    """How a file image becomes the network input: the evaluation transform of ``data`` as plain values."""
    from shc.data.transforms import IMAGENET_MEAN, IMAGENET_STD, CompositeTransform

    transform = data.database.transform
    if isinstance(transform, CompositeTransform):
        image = data.database.raw_image(0)
        return {"kind": "composite", "channels": "L", "mean": transform.mean, "std": transform.std,
                "image_size": transform.image_size, "native_size": list(image.shape[:2])}
    return {"kind": "natural", "channels": "RGB", "mean": list(IMAGENET_MEAN), "std": list(IMAGENET_STD),
            "image_size": int(dict(config.dataset_options).get("image_size") or 224)}


def write_encoder_record(config: Any, directory: str | Path) -> Path:
    """Write ``encoder.json`` (what ``shc encode`` needs to hash image files with the network of the stage-3
    folder ``directory``; read by :func:`shc.retrieval.load_encoder`). Nothing is done when it exists."""
    path = Path(directory) / ENCODER_FILE
    if path.exists():
        return path
    data = load_data(config)
    write_json(path, {
        "format": ENCODER_FORMAT, "dataset": config.dataset, "dataset_options": dict(config.dataset_options),
        "class_names": list(data.class_names), "method": config.method, "bits": config.bits,
        "backbone": config.backbone, "pretrained": config.pretrained, "head": dict(method_spec(config).head),
        "precision": config.precision, "input": _input_record(data, config),
    })
    return path


def _targets(criterion, centers: np.ndarray | None) -> dict[str, np.ndarray]:
    """The codes the network was trained towards, for reachability: a loss's learned class codes at the end of
    training (``criterion.learned_targets()``: CRH), else the fixed centers, else nothing (the classes' majority
    codes stand in; :func:`shc.evaluation.reachability_scores`)."""
    learned = getattr(criterion, "learned_targets", None)
    if learned is not None:
        return {"target_codes": np.asarray(learned(), np.int8), "target_kind": np.array("learned class codes")}
    if centers is not None:
        return {"target_codes": np.asarray(centers, np.int8), "target_kind": np.array("centers")}
    return {}


def selection_rule(config: Any) -> str:
    """What stage 3 selects its epoch by, as its identity records it: :data:`~shc.evaluation.PRIMARY_METRIC` of
    the validation queries against the database, without what :meth:`~shc.data.splits.DatasetSplits.selection_database`
    leaves out (the held-out classes of the unseen-class protocol, and validation images that the database also holds
    in an official protocol). Runs selected before 2026-12-02 ranked against the whole database; their identity names
    the plain metric, so they are never read as runs of this rule. Where nothing is left out (every composite and
    ``fashion-modes`` run), the identity is the one it always was."""
    left_out = load_data(config).selection_left_out()
    return f"{PRIMARY_METRIC} without the database's {' and '.join(left_out)}" if left_out else PRIMARY_METRIC


@STAGES.register("stage3")
class Hashing(Stage):
    """Stage 3: the hashing network (backbone + FC + tanh to q bits) trained with the method's loss (for the center
    methods CSQ's, Eq. 39-43), selected on the validation split's :data:`~shc.evaluation.PRIMARY_METRIC`; the codes
    of the query, database and training sets (no augmentation) and the targets, in ``codes.npz``. Its record
    (``metrics.json``: selected epoch, seconds, the validation score at that epoch) is what :class:`Evaluation`
    completes with the query-set measures."""

    name = "stage3"
    parents = (Pretraining, Centers)
    files = (("codes.npz", archive_file), ("metrics.json", json_object("selected_epoch", "train_seconds")))
    complete = "metrics.json"
    training = "train"
    trains = True

    def own_identity(self) -> dict[str, Any]:
        from shc.losses import LOSSES

        config, version = self.config, getattr(LOSSES.get(method_spec(self.config).loss), "version", 1)
        return {**data_identity(config), "method": config.method, "bits": config.bits, "backbone": config.backbone,
                "pretrained": config.pretrained, "weights": config.weights, "epochs": config.epochs,
                "lr": config.lr, "batch_size": config.batch_size, "optimizer": config.optimizer,
                "eval_every": config.eval_every, "method_options": dict(config.method_options),
                "select": selection_rule(config),  # what is measured on the query set is not here: Evaluation
                **({"loss_version": version} if version != 1 else {})}  # version 1 left out, as stage 2's

    def label(self) -> str:
        return f"stage3-{_variant(self.config)}-{self.config.bits}bit"

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        from shc.methods import build_criterion
        from shc.models import build_hashing_network
        from shc.train import fit, set_seed

        config, spec, data = self.config, method_spec(self.config), load_data(self.config)
        centers = inputs.get("stage2")
        if is_main():
            write_encoder_record(config, directory)
        set_seed(config.seed)  # initial weights (network and any loss parameters) independent of earlier runs
        model = build_hashing_network(config.backbone, config.bits, pretrained=config.pretrained,
                                      weights=_start_weights(config, inputs), **dict(spec.head))
        # S for a loss that reads it (SCRH); stage 2 has just read it, so stage 1 is there (its identity is nested)
        similarity = Similarity(config).load() if spec.needs_similarity else None
        criterion = build_criterion(config.method, data.num_classes, config.bits, data.train.labels,
                                    centers=centers, seed=config.seed, similarity=similarity,
                                    **dict(config.method_options))

        require_validation(data.val, "the hashing network")
        database = data.selection_database()  # no held-out class, no validation query's own image

        def validate(network) -> dict[str, float]:
            return selection_scores(encode(network, data.val, config), data.val.labels,
                                    encode(network, database, config), database.labels)

        started = time.perf_counter()
        history = fit(model, criterion, data.train, _train_config(config, config.epochs, config.lr, PRIMARY_METRIC),
                      directory / "train", evaluate=validate, progress=progress)
        # a resumed run's clock: this process's, plus what the earlier processes spent up to the checkpoint
        record = {"selected_epoch": history.best_epoch,
                  "train_seconds": time.perf_counter() - started + history.resumed_seconds,
                  "resumed_after_epoch": history.resumed_after,
                  # the selection metric at the selected epoch, on the validation split: what the doubling rule
                  # reads (benchmarks/standard_convergence.py), so no budget is chosen on the query set
                  f"val_{PRIMARY_METRIC}": history.best_metric,
                  "threads": threads(),  # CPU results depend on it (summation order): fixed, STAGE_THREADS
                  # the device, and the arithmetic of the run's every epoch (None: resumed from a checkpoint that
                  # did not record its earlier epochs'; this machine's alone would misname such a hybrid)
                  **_device_record(config), "precision": history.precision,
                  "method": config.method, "bits": config.bits, "seed": config.seed, "dataset": config.dataset}
        if not is_main():
            return None
        codes = {"query_codes": encode(model, data.query, config), "query_labels": data.query.labels,
                 "database_codes": encode(model, data.database, config), "database_labels": data.database.labels,
                 # reachability (shc.reachability): the training set without augmentation, and the targets
                 "train_codes": encode(model, data.train.with_transform(data.val.transform), config),
                 "train_labels": data.train.labels, **_targets(criterion, centers),
                 # the unseen-class protocol (shc.data.unseen): labels from seen_classes on are held out
                 **({"seen_classes": np.array(data.num_classes)} if data.unseen_names else {})}
        return criterion, codes, record

    def save(self, outputs: Any, directory: Path) -> None:
        criterion, codes, record = outputs
        # the files a loss keeps of its own (criterion.artifacts() -> {file name: array or JSON value}, e.g. CRH's
        # codebook and reassignment log): .npy names as arrays, others JSON
        for name, value in (getattr(criterion, "artifacts", dict)()).items():
            save_npy(directory / name, value) if name.endswith(".npy") else write_json(directory / name, value)
        save_npz(directory / "codes.npz", **codes)
        write_json(directory / "metrics.json", jsonable(record))  # last: its presence marks the stage complete

    def load(self) -> dict[str, Any]:
        return json.loads((self.directory / "metrics.json").read_text())

    def codes(self) -> dict[str, np.ndarray]:
        """The stored codes, labels and targets of the finished stage (``codes.npz``)."""
        try:
            with np.load(self.directory / "codes.npz") as archive:
                return {key: archive[key] for key in archive.files}
        except (OSError, ValueError, EOFError) as error:
            raise ValueError(f"{self.directory / 'codes.npz'} is damaged ({error}); delete {self.directory} and "
                             "rerun to retrain the run.") from None


# --------------------------------------------------------------------------------------------
# The evaluation: what stage 3's codes give on the query set, at the current evaluation version
# --------------------------------------------------------------------------------------------
@STAGES.register("evaluation")
class Evaluation(Stage):
    """The query-set measures of stage 3's stored codes (:func:`shc.evaluation.evaluate_codes`: mAP@100/1000/ALL
    with ties by index and tie-aware, P@K, R@K, reachability), merged into stage 3's ``metrics.json``. It lives in
    stage 3's folder under stage 3's identity: a new :data:`~shc.evaluation.EVALUATION_VERSION` re-measures every
    run from its codes, retraining nothing. ``force`` re-measures a current one too."""

    name = "evaluation"
    parents = (Hashing,)
    files = Hashing.files
    complete = "metrics.json"

    def __init__(self, config: Any, force: bool = False) -> None:
        super().__init__(config)
        self.force = force

    @property
    def hashing(self) -> Hashing:
        return Hashing(self.config)

    def own_identity(self) -> dict[str, Any]:
        return self.hashing.own_identity()

    @property
    def identity(self) -> dict[str, Any]:  # type: ignore[override] - stage 3's folder, so stage 3's identity
        return self.hashing.identity

    @property
    def directory(self) -> Path:  # type: ignore[override]
        return self.hashing.directory

    def label(self) -> str:
        return self.hashing.label()

    def cached(self) -> Path | None:
        path = self.hashing.cached()
        if path is None or self.force:
            return None
        return path if measured(json.loads(path.read_text())) else None

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        return jsonable({**inputs["stage3"], **evaluate_codes(self.hashing.codes())})  # training fields kept

    def save(self, outputs: Any, directory: Path) -> None:
        write_json(directory / "metrics.json", outputs)

    def load(self) -> dict[str, Any]:
        return self.hashing.load()

    def intact(self) -> bool:  # stage 3 finished and measured by today's evaluation
        return not self.force and self.hashing.intact() and measured(self.load())

    def finished(self) -> dict[str, Any] | None:
        """The measures of a finished stage 3 (re-measured when stale), None when it has not finished."""
        return self.run() if self.hashing.cached() is not None else None


# --------------------------------------------------------------------------------------------
# The classifier's own codes: how much of retrieval is classification
# --------------------------------------------------------------------------------------------
CLASSIFIER_RULES = ("top1", "soft")
"""How :class:`ClassifierCodes` turns stage 1's class probabilities p into a code: ``top1`` the center of the
predicted class (h_argmax p); ``soft`` sign(sum_c p_c h_c), the probability-weighted vote of every center."""


def classifier_codes(logits: np.ndarray, centers: np.ndarray, rule: str) -> np.ndarray:
    """Codes (n, q) from logits (n, C) and centers (C, q) by ``rule`` (:data:`CLASSIFIER_RULES`); a tie gives +1."""
    logits, centers = np.asarray(logits, np.float64), np.asarray(centers, np.float64)
    if logits.ndim != 2 or centers.ndim != 2 or logits.shape[1] != centers.shape[0] or not np.isfinite(logits).all():
        raise ValueError(f"logits {logits.shape} and centers {centers.shape} must be (n, C) and (C, q), the logits "
                         "finite (NaN: stage 1 diverged).")
    if rule == "top1":
        return centers[logits.argmax(axis=1)].astype(np.int8)
    if rule == "soft":
        weights = np.exp(logits - logits.max(axis=1, keepdims=True))  # softmax without its positive denominator
        return sign_pm1(weights @ centers)  # which leaves every vote's sign as it is
    raise ValueError(f"unknown classifier-code rule {rule!r}; choose one of: {', '.join(CLASSIFIER_RULES)}.")


def classifier_config(config: Any) -> Any:
    """The config whose stage 1 trains the classifier :class:`ClassifierCodes` reads: ``config`` with the
    data-dependent S (the classifier of the paper's stage 1, the same folder as SHC's)."""
    return config.replace(similarity="logits")


@STAGES.register("classifier")
class ClassifierCodes(Stage):
    """Sablayrolles et al.'s trivial solution (ICASSP 2017) as a baseline of every center method: no hashing
    network; stage 1's classifier (selected on the validation split) labels each query and database image, and the
    image gets its predicted class's center (``top1``) or the vote of all centers weighted by the class
    probabilities (``soft``). Its ``codes.npz`` and ``metrics.json`` are laid out as stage 3's, measured by the
    same :func:`~shc.evaluation.evaluate_codes` (the unseen-class pairings too), so it sits beside the networks in
    every table: the part of seen-class retrieval that is classification. Applies to methods with centers."""

    name = "classifier"
    parents = (Similarity, Centers)
    files = (("codes.npz", archive_file), ("metrics.json", json_object("rule", "evaluation")))
    complete = "metrics.json"

    def current(self, path: Path) -> bool:  # measured by an older evaluation: measured again, as Evaluation does
        return measured(json.loads(path.read_text(encoding="utf-8")))

    def __init__(self, config: Any, rule: str = "top1") -> None:
        if rule not in CLASSIFIER_RULES:
            raise ValueError(f"unknown classifier-code rule {rule!r}; choose one of: {', '.join(CLASSIFIER_RULES)}.")
        super().__init__(config)
        self.rule = rule

    def applies(self) -> bool:
        return method_spec(self.config).centers is not None

    def reads(self) -> tuple[type[Stage], ...]:
        return (Centers,) if self.applies() else ()  # the classifier's stage 1 is read in compute (classifier_config)

    def own_identity(self) -> dict[str, Any] | None:
        if not self.applies():
            return None
        return {"rule": self.rule, "classifier": Similarity(classifier_config(self.config)).identity}

    def label(self) -> str:
        return f"classifier-{self.rule}-{_variant(self.config)}-{self.config.bits}bit"

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        from shc.models import build_classifier
        from shc.train import predict
        from shc.train.checkpoint import load_checkpoint

        config, data = self.config, load_data(self.config)
        stage1 = Similarity(classifier_config(config))
        stage1.run(progress)  # trains the classifier when no run of the grid has yet
        saved = stage1.directory / "classifier"
        checkpoint = load_checkpoint(saved / "best.pt" if (saved / "best.pt").exists() else saved / "last.pt")
        model = build_classifier(config.backbone, data.num_classes)  # the weights are all in the checkpoint
        model.load_state_dict(checkpoint["model"])
        centers = inputs["stage2"]
        codes = {}
        for split in ("query", "database"):
            logits = predict(model, getattr(data, split), batch_size=512, precision=config.precision).numpy()
            codes[f"{split}_codes"] = classifier_codes(logits, centers, self.rule)
            codes[f"{split}_labels"] = getattr(data, split).labels
        if data.unseen_names:
            codes["seen_classes"] = np.array(data.num_classes)
        record = {"rule": self.rule, "method": config.method, "bits": config.bits, "seed": config.seed,
                  "dataset": config.dataset, "classifier": stage1.directory.name, "threads": threads()}
        return codes, jsonable({**record, **evaluate_codes(codes)})

    def save(self, outputs: Any, directory: Path) -> None:
        codes, record = outputs
        save_npz(directory / "codes.npz", **codes)
        write_json(directory / "metrics.json", record)

    def load(self) -> dict[str, Any]:
        return json.loads((self.directory / "metrics.json").read_text())


# --------------------------------------------------------------------------------------------
# Every stage of a config at once
# --------------------------------------------------------------------------------------------
_FOLDER_STAGES = ("stage0", "stage1", "stage2", "stage3")


def stage_identities(config: Any) -> dict[str, dict[str, Any] | None]:
    """The identity of each stage of ``config`` (None for a stage the run does not have): stage 0 with
    ``pretrain``, stage 2 when the method has centers; stage 1's exists always (a run computes it when its
    centers need S)."""
    return {name: STAGES.get(name)(config).identity for name in _FOLDER_STAGES}


def stage_directories(config: Any) -> dict[str, Path]:
    """Where each stage of ``config`` keeps its artifacts (the module docstring has the layout)."""
    return {name: STAGES.get(name)(config).directory for name in _FOLDER_STAGES}


def artifact(config: Any, stage: str, name: str) -> Path:
    """The path of a stage's artifact, or a :class:`~shc.runs.MissingRunError` naming the command that computes
    it. An artifact counts only when its stage finished (its completing file is there: a run killed mid-training
    has a partial history) and its ``config.json`` records the stage's identity (a folder whose record is missing
    or damaged is not trusted)."""
    found = STAGES.get(stage)(config)
    path = found.directory / name
    if path.exists() and (found.directory / found.complete).exists() and found.recorded():
        return path
    where = (f"run_dir {str(config.run_dir)!r}" if Path(config.run_dir).is_dir()
             else f"run_dir {str(config.run_dir)!r}, which does not exist (no run of it was computed on this machine)")
    raise MissingRunError(
        f"{path} is missing: {stage} of ({describe(config)}) has not been computed in {where}. Compute it first: "
        "the pipeline command of its preset with its method, bits and seed (`shc.presets.compute_command(config)` "
        "names it), or in Python `shc.pipeline.run(config)`; cached stages are read, not recomputed."
    )


# --------------------------------------------------------------------------------------------
# Two grids on the same data
# --------------------------------------------------------------------------------------------
def paired_seeds(configs_a: list[Any], configs_b: list[Any], name_a: str, name_b: str) -> list[int]:
    """The seeds on which two grids' runs of the same method and code length can be paired (the same dataset,
    options, data and so splits per seed); a ValueError naming the difference where the grids do not share them.

    What ``python -m shc.results --versus`` checks before it says "same splits, paired by seed"."""
    cells_a = {(c.method, c.bits, c.seed): c for c in configs_a}
    cells_b = {(c.method, c.bits, c.seed): c for c in configs_b}
    common = sorted(cells_a.keys() & cells_b.keys())
    if not common:
        raise ValueError(f"{name_a} and {name_b} share no (method, code length, seed) run; compare presets with "
                         "common methods, code lengths and seeds.")
    cells = {(method, bits) for method, bits, _ in common}
    seeds_a, seeds_b = ({c.seed for c in grid if (c.method, c.bits) in cells} for grid in (configs_a, configs_b))
    if seeds_a != seeds_b:
        raise ValueError(f"{name_a} has seeds {sorted(seeds_a)} and {name_b} seeds {sorted(seeds_b)}: a paired "
                         f"comparison needs the same seeds on both sides; pass --seeds with seeds both have.")
    for seed in sorted(seeds_a):
        a, b = next(cells_a[key] for key in common if key[2] == seed), next(cells_b[key] for key in common
                                                                             if key[2] == seed)
        differences = _data_differences(a, b)
        if differences:
            raise ValueError(f"{name_a} and {name_b} do not share splits (seed {seed}: {'; '.join(differences)}, "
                             f"{name_a} first): runs on other data cannot be paired by seed; compare presets of one "
                             "dataset with the same options and data.")
    return sorted(seeds_a)


def _data_differences(a: Any, b: Any) -> list[str]:
    """How the data of two runs differs: their settings first, the loaded data's fingerprint only when they agree."""
    from shc.data.cache import resolved_root

    settings = [(name, getattr(a, name), getattr(b, name)) for name in ("dataset", "dataset_options")]
    settings.append(("data_root", resolved_root(a), resolved_root(b)))
    differences = [f"{name} {jsonable(x)!r} against {jsonable(y)!r}" for name, x, y in settings
                   if jsonable(x) != jsonable(y)]
    if not differences and data_identity(a) != data_identity(b):
        differences.append("the loaded data differs (data fingerprint)")
    return differences
