"""Computing the three SHC stages: cached, resumable, and safe to interrupt.

One :class:`~shc.runs.RunConfig` describes a run. Each stage writes its artifacts under the run
directory, in a folder keyed by the stage's identity (:mod:`shc.runs` has the layout), and skips its work
when they are already there: runs that differ in any setting live side by side, identical ones are
reused. Every file is written atomically; a stage folder is locked while it is computed, so a second
process computing the same stage is refused with a message rather than interleaving writes; an
interrupted run resumes (training from its last epoch, bit-identically).

Reported retrieval numbers are those of the model selected on the *validation* split (best validation
mAP@ALL over the evaluated epochs), measured once on the query set. The authors' release instead reports
each metric's maximum over epochs on the query set, which is optimistic. Stage 3 also writes
``encoder.json`` (network and input transform), what ``shc encode`` needs to hash new images.

Reading finished runs into tables, curves and example retrievals is :mod:`shc.results`; the experiment
grids are :mod:`shc.presets`.

Command line: ``python -m shc.pipeline --preset quick`` runs a preset's grid and prints the mAP tables;
``--list`` prints the grid without running it. Under ``torchrun --nproc_per_node=N -m shc.pipeline ...``
stages 1 and 3 train with DistributedDataParallel; stage 2 and every artifact write happen on rank 0
while the other ranks wait.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shc._io import exclusive_lock, jsonable, save_npy, save_npz, save_torch, write_json
from shc.cli_common import describe_error
from shc.executors import _cpu_count, fixed_threads, grid_workers  # noqa: F401 - grid_workers: this module's API
from shc.executors import positive_jobs as _positive_jobs
from shc.evaluation import EVALUATION_VERSION, PRIMARY_METRIC, evaluate_codes, selection_scores
from shc.runs import (
    MAP_KEYS,
    SIMILARITY_SOURCES,
    STAGE_THREADS,
    TIE_AWARE_MAP_KEYS,
    MissingRunError,
    RunConfig,
    load_data,
    method_spec,
    read_identity,
    stage_directories,
    stage_identities,
)

__all__ = ["MAP_KEYS", "SIMILARITY_SOURCES", "GridFailures", "RunConfig", "RunResult", "WorkerMismatchError", "encode",
           "grid_threads", "grid_workers", "load_data", "main", "preset",
           "reevaluate", "report_configs", "run", "run_centers", "run_grid", "run_hashing", "run_pretraining",
           "run_similarity",
           "stage_directories", "summarize"]


@dataclass
class RunResult:
    """What :func:`run` returns: the config, the artifacts in memory and where they are on disk."""

    config: RunConfig
    metrics: dict[str, Any]
    centers: np.ndarray | None
    similarity: np.ndarray | None
    directory: Path


# --------------------------------------------------------------------------------------------
# Ranks (torchrun): rank 0 computes what is not training and writes every file
# --------------------------------------------------------------------------------------------
def _distributed() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _barrier() -> None:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def _is_main() -> bool:
    return _distributed()[0] == 0


# --------------------------------------------------------------------------------------------
# Stage folders: identity record, lock
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _stage(config: RunConfig, stage: str) -> Iterator[Path]:
    """Open a stage folder for computing: record its identity and hold its lock (rank 0).

    A folder whose ``config.json`` is missing, damaged or records another identity holds artifacts nobody
    can vouch for: they are deleted and recomputed. The lock refuses a second process computing the
    same stage at the same time. Inside, this process computes with :data:`~shc.runs.STAGE_THREADS` threads
    (every rank), so the stage's numbers do not depend on the executor, ``--jobs`` or the machine's cores.
    """
    directory = stage_directories(config)[stage]
    with fixed_threads(STAGE_THREADS):
        if not _is_main():
            yield directory
            return
        directory.mkdir(parents=True, exist_ok=True)
        with _lock(directory):
            identity = jsonable(stage_identities(config)[stage])
            if read_identity(directory) != identity:
                for child in directory.iterdir():
                    if child.name == ".lock":
                        continue
                    shutil.rmtree(child) if child.is_dir() else child.unlink()
                write_json(directory / "config.json", identity)
            yield directory


def _lock(directory: Path):
    return exclusive_lock(directory / ".lock", f"pid {os.getpid()}",
                          f"{directory} is being computed by {{holder}} right now. Wait for it to finish (its "
                          "result is then reused), or give this run another run_dir.")


def _cached(config: RunConfig, stage: str, name: str) -> Path | None:
    """The artifact if it is there and its folder's record matches the stage's identity.

    A finished folder whose files do not parse is moved aside (:func:`_set_aside`) and counts as not there, so
    the stage is recomputed from its last intact state, never half-rewritten.

    Under torchrun, rank 0 decides and the other ranks follow (a rank that looked a moment later could see
    a file rank 0 just wrote, skip the stage's barrier, and deadlock the job).
    """
    directory = stage_directories(config)[stage]
    path = directory / name
    found = path.exists() and read_identity(directory) == jsonable(stage_identities(config)[stage])
    if found and _is_main():
        damage = _damage(directory, stage)
        if damage is not None:
            _set_aside(directory, stage, damage)
            found = False
    return path if _agreed(found) else None


def _agreed(flag: bool) -> bool:
    """Rank 0's ``flag`` on every rank (itself outside torchrun)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return flag
    shared = [flag]
    dist.broadcast_object_list(shared, src=0)
    return bool(shared[0])


def _load_array(path: Path) -> np.ndarray:
    try:
        return np.load(path)
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{path} is damaged ({error}); delete it and rerun to recompute it.") from None


# --------------------------------------------------------------------------------------------
# Damaged artifacts: moved aside, recomputed from the last intact state
# --------------------------------------------------------------------------------------------
def _json_object(*required: str):
    """A check that a file holds a JSON object with the ``required`` fields."""
    def check(path: Path) -> None:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        missing = [key for key in required if key not in record]
        if missing:
            raise ValueError(f"lacks {', '.join(missing)}")
    return check


def _json_file(path: Path) -> None:
    json.loads(path.read_text())


def _array_file(path: Path) -> None:
    np.load(path, mmap_mode="r")  # the header and the size the header promises; the values are not read


def _archive_file(path: Path) -> None:
    with np.load(path) as archive:
        for key in archive.files:
            archive[key]  # noqa: B018 - each member is read: a cut member fails here


def _torch_file(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path) as archive:  # torch's format is a zip: a cut file has no central directory
        archive.namelist()


_STAGE_FILES = {  # what a finished stage holds, each with the check that it parses
    "stage0": (("metrics.json", _json_object("source", "train_seconds")), ("weights.pt", _torch_file)),
    "stage1": (("metrics.json", _json_object("source")), ("similarity.npy", _array_file)),
    "stage2": (("quality.json", _json_object()), ("history.json", _json_file), ("centers.npy", _array_file)),
    "stage3": (("codes.npz", _archive_file), ("metrics.json", _json_object("selected_epoch", "train_seconds"))),
}
#: The training run inside a stage folder that a recomputation resumes from (its last completed epoch).
_TRAINING = {"stage0": "classifier", "stage1": "classifier", "stage3": "train"}


def _damage(directory: Path, stage: str) -> str | None:
    """The first file of a finished stage folder that is missing or does not parse, with why; None when all parse."""
    for name, check in _STAGE_FILES[stage]:
        path = directory / name
        try:
            check(path)
        except Exception as error:  # noqa: BLE001 - any failure to parse means damaged
            reason = str(error).strip().splitlines()[0][:120] if str(error).strip() else type(error).__name__
            return f"{path} does not parse ({reason})"
    return None


def _set_aside(directory: Path, stage: str, damage: str) -> None:
    """Move a damaged stage folder to ``damaged-<name>-<time>`` beside it, and start the folder anew from its
    last intact state: its identity record and, where its training checkpoints still load, the training run
    (moved back, so it resumes at its last epoch instead of starting over)."""
    from shc.train.checkpoint import load_checkpoint

    target = directory.with_name(f"damaged-{directory.name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
    with _lock(directory):
        directory.rename(target)
    directory.mkdir()
    write_json(directory / "config.json", read_identity(target))  # the stage's identity: _cached matched it
    training, kept = _TRAINING.get(stage), "from scratch"
    if training is not None and (target / training / "last.pt").exists():
        try:
            for checkpoint in ("last.pt", "best.pt"):
                if (target / training / checkpoint).exists():
                    load_checkpoint(target / training / checkpoint)
        except ValueError:
            pass  # a damaged checkpoint: the training starts over
        else:
            (target / training).rename(directory / training)
            kept = f"resuming {training}/last.pt"
    warnings.warn(f"{damage}: moved {directory.name} aside to {target} and recomputing {stage} ({kept}).",
                  stacklevel=4)


# --------------------------------------------------------------------------------------------
# Stages
# --------------------------------------------------------------------------------------------
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


def run_pretraining(config: RunConfig, progress: bool = False) -> Path | None:
    """Stage 0: the backbone pretrained on ``config.pretrain``'s source task (cached); the path of its
    ``weights.pt``, or None when the run has no pretraining (:mod:`shc.pretraining`)."""
    if config.pretrain is None:
        return None
    cached = _cached(config, "stage0", "weights.pt")
    if cached is not None:
        return cached
    from shc.losses import ClassificationLoss
    from shc.models import build_classifier
    from shc.pretraining import pretraining_data
    from shc.train import fit, set_seed

    source = pretraining_data(config)
    with _stage(config, "stage0") as directory:
        set_seed(config.seed)
        classifier = build_classifier(config.backbone, len(source.class_names))
        started = time.perf_counter()
        history = fit(classifier, ClassificationLoss(), source.train,
                      _train_config(config, config.pretrain_epochs, config.pretrain_lr, "accuracy"),
                      directory / "classifier", evaluate=lambda model: {"accuracy": _accuracy(model, source.val, config)},
                      progress=progress)
        if _is_main():
            save_torch(classifier.backbone.state_dict(), directory / "weights.pt")
            write_json(directory / "metrics.json", {
                "source": config.pretrain, "description": source.description, "classes": list(source.class_names),
                "train_images": len(source.train), "val_accuracy": _accuracy(classifier, source.val, config),
                "selected_epoch": history.best_epoch, "train_seconds": time.perf_counter() - started,
                "threads": _threads()})
    _barrier()
    return stage_directories(config)["stage0"] / "weights.pt"


def _start_weights(config: RunConfig, progress: bool) -> str | None:
    """The weights both networks of ``config`` start from: stage 0's when it pretrains, else ``config.weights``."""
    pretrained = run_pretraining(config, progress)
    return str(pretrained) if pretrained is not None else config.weights


def _similarity(config: RunConfig, directory: Path, progress: bool) -> tuple[np.ndarray, dict[str, Any]]:
    from shc import similarity as sim

    data = load_data(config)
    if config.similarity == "labels":
        return sim.similarity_from_labels(data.num_classes), {}
    if config.similarity == "hierarchy":
        if data.coarse_labels is None:
            raise ValueError(f"dataset {config.dataset!r} has no class hierarchy; use similarity='logits' or 'text'.")
        return sim.similarity_from_labels(data.num_classes, data.coarse_labels), {}
    if config.similarity == "text":
        return sim.similarity_from_text(data.class_names), {}

    from shc.losses import ClassificationLoss
    from shc.models import build_classifier
    from shc.train import fit, predict, set_seed

    weights = _start_weights(config, progress)
    set_seed(config.seed)  # the initial weights must not depend on what ran before in this process
    classifier = build_classifier(config.backbone, data.num_classes, pretrained=config.pretrained, weights=weights)
    started = time.perf_counter()
    fit(classifier, ClassificationLoss(), data.train,
        _train_config(config, config.classifier_epochs, config.classifier_lr, "accuracy"),
        directory / "classifier", evaluate=lambda model: {"accuracy": _accuracy(model, data.val, config)},
        progress=progress)
    # Stage 1's logits go through the same inference path as the codes (the model's own device).
    logits = predict(classifier, data.train.with_transform(data.val.transform), batch_size=512,
                     precision=config.precision).numpy()
    S = sim.similarity_from_logits(logits, data.train.labels, data.num_classes, mask=config.mask)
    metrics = {"train_seconds": time.perf_counter() - started,
               "val_accuracy": _accuracy(classifier, data.val, config),
               "test_accuracy": _accuracy(classifier, data.query, config)}  # the paper's Table 2 (query = test set)
    return S, metrics


def run_similarity(config: RunConfig, progress: bool = False) -> np.ndarray:
    """Stage 1: the class-similarity matrix S of ``config.similarity`` (cached)."""
    cached = _cached(config, "stage1", "similarity.npy")
    if cached is not None:
        return _load_array(cached)
    with _stage(config, "stage1") as directory:
        S, metrics = _similarity(config, directory, progress)
        if _is_main():
            write_json(directory / "metrics.json", {"source": config.similarity, **metrics, "threads": _threads()})
            save_npy(directory / "similarity.npy", S)
    _barrier()
    return S


def run_centers(config: RunConfig, progress: bool = False) -> np.ndarray | None:
    """Stage 2: the method's hash centers (None for methods without centers; cached; rank 0 computes)."""
    from shc.centers import center_quality, run_center_method

    spec = method_spec(config)
    if spec.centers is None:
        return None
    cached = _cached(config, "stage2", "centers.npy")
    if cached is not None:
        return _load_array(cached)
    S = run_similarity(config, progress) if spec.needs_similarity else None
    with _stage(config, "stage2") as directory:
        if _is_main():
            started = time.perf_counter()
            centers, history = run_center_method(spec.centers, load_data(config).num_classes, config.bits,
                                                 similarity=S, seed=config.seed, **dict(config.center_options))
            quality = {"seconds": time.perf_counter() - started, **center_quality(centers, S), "threads": _threads()}
            write_json(directory / "quality.json", quality)
            write_json(directory / "history.json", history)
            save_npy(directory / "centers.npy", centers)
    _barrier()
    return _load_array(stage_directories(config)["stage2"] / "centers.npy")


def encode(model, split, config: RunConfig) -> np.ndarray:
    """Binary codes sign(u) (sign(0) = +1) of a split, as an int8 (n, q) array (the model's own device)."""
    from shc.models import hash_codes
    from shc.train import predict

    return np.asarray(hash_codes(predict(model, split, batch_size=512, precision=config.precision)))


def _write_encoder_record(config: RunConfig, directory: Path) -> None:
    """``encoder.json``: what ``shc encode`` needs to hash image files with this stage's network (no-op when
    present; see :func:`shc.retrieval.write_encoder_record`)."""
    from shc.retrieval.encoder import write_encoder_record

    write_encoder_record(config, directory)


def _load_codes(directory: Path) -> dict[str, np.ndarray]:
    try:
        with np.load(directory / "codes.npz") as archive:
            return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{directory / 'codes.npz'} is damaged ({error}); delete {directory} and rerun to "
                         "retrain the run.") from None


def reevaluate(config: RunConfig, force: bool = False) -> dict[str, Any]:
    """A finished stage 3's ``metrics.json``, measured anew from its stored codes when it is older than
    :data:`shc.evaluation.EVALUATION_VERSION` (or always, with ``force``); nothing is retrained.

    The training fields (selected epoch, training time, ...) are kept; the file is replaced atomically. A
    ``metrics.json`` or ``codes.npz`` that does not parse is never rewritten: the stage is moved aside
    (:func:`_cached`) and this raises :class:`~shc.runs.MissingRunError`, as for a run that has not finished.
    """
    path = _cached(config, "stage3", "metrics.json")
    if path is None:
        raise MissingRunError(f"stage 3 of {config.method}, {config.bits} bits, seed {config.seed} has not finished "
                              f"in {config.run_dir!r}: there are no codes to evaluate. Run it first "
                              "(`python -m shc.pipeline --preset <preset>`).")
    metrics = json.loads(path.read_text())  # parsed by _cached, training fields included
    if not force and metrics.get("evaluation", 0) >= EVALUATION_VERSION:
        return metrics
    metrics = {**metrics, **evaluate_codes(_load_codes(path.parent))}
    if _is_main():
        write_json(path, metrics)
    return metrics


def _finished(config: RunConfig) -> dict[str, Any] | None:
    """The metrics of a finished stage 3 (re-evaluated from its codes if stale), None if it has not finished."""
    return reevaluate(config) if _cached(config, "stage3", "metrics.json") is not None else None


def _write_criterion_artifacts(criterion, directory: Path) -> None:
    """The files a loss keeps of its own (``criterion.artifacts() -> {file name: array or JSON value}``,
    e.g. CRH's codebook and reassignment log) into the stage folder: ``.npy`` names as arrays, others JSON."""
    for name, value in (getattr(criterion, "artifacts", dict)()).items():
        save_npy(directory / name, value) if name.endswith(".npy") else write_json(directory / name, value)


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


def run_hashing(config: RunConfig, progress: bool = False) -> dict[str, Any]:
    """Stage 3 and evaluation: train the hashing network, encode query and database, measure (cached).

    Model selection maximises the validation split's :data:`~shc.evaluation.PRIMARY_METRIC`; the query set is
    measured once, by :func:`shc.evaluation.evaluate_codes` on the stored codes.
    """
    from shc.methods import build_criterion
    from shc.models import build_hashing_network
    from shc.train import fit, set_seed

    finished = _finished(config)
    if finished is not None:
        return finished
    spec = method_spec(config)
    data = load_data(config)
    centers = run_centers(config, progress)
    weights = _start_weights(config, progress)
    with _stage(config, "stage3") as directory:
        if _is_main():
            _write_encoder_record(config, directory)
        set_seed(config.seed)  # initial weights (network and any loss parameters) independent of earlier runs
        model = build_hashing_network(config.backbone, config.bits, pretrained=config.pretrained,
                                      weights=weights, **dict(spec.head))
        criterion = build_criterion(config.method, data.num_classes, config.bits, data.train.labels,
                                    centers=centers, seed=config.seed, **dict(config.method_options))

        def validate(network) -> dict[str, float]:
            return selection_scores(encode(network, data.val, config), data.val.labels,
                                    encode(network, data.database, config), data.database.labels)

        started = time.perf_counter()
        history = fit(model, criterion, data.train, _train_config(config, config.epochs, config.lr, PRIMARY_METRIC),
                      directory / "train", evaluate=validate, progress=progress)
        train_seconds = time.perf_counter() - started
        if _is_main():
            _write_criterion_artifacts(criterion, directory)
            codes = {"query_codes": encode(model, data.query, config), "query_labels": data.query.labels,
                     "database_codes": encode(model, data.database, config), "database_labels": data.database.labels,
                     # reachability (shc.reachability): the training set without augmentation, and the targets
                     "train_codes": encode(model, data.train.with_transform(data.val.transform), config),
                     "train_labels": data.train.labels, **_targets(criterion, centers)}
            save_npz(directory / "codes.npz", **codes)
            metrics = jsonable({
                **evaluate_codes(codes), "selected_epoch": history.best_epoch, "train_seconds": train_seconds,
                # the selection metric at the selected epoch, on the validation split: what the doubling rule reads
                # (benchmarks/standard_convergence.py), so no budget is chosen on the query set
                f"val_{PRIMARY_METRIC}": history.best_metric,
                "threads": _threads(),  # CPU results depend on it (summation order): fixed, STAGE_THREADS
                "method": config.method, "bits": config.bits, "seed": config.seed, "dataset": config.dataset,
            })
            write_json(directory / "metrics.json", metrics)  # last: its presence marks the stage complete
    _barrier()
    return json.loads((stage_directories(config)["stage3"] / "metrics.json").read_text())


def run(config: RunConfig, progress: bool = False) -> RunResult:
    """All stages of one configuration (each cached): S (if needed), centers (if any), hashing."""
    spec = method_spec(config)
    S = run_similarity(config, progress) if spec.needs_similarity else None
    centers = run_centers(config, progress)
    metrics = run_hashing(config, progress)
    return RunResult(config, metrics, centers, S, stage_directories(config)["stage3"])


class GridFailures(RuntimeError):
    """Runs of a grid failed (the others finished): ``failures`` maps each failed run's name to its error and
    ``rows`` holds the finished runs' rows (None for a failed one). A rerun resumes: finished runs are read."""

    def __init__(self, failures: Mapping[str, BaseException], rows: list[dict[str, Any] | None], total: int) -> None:
        self.failures, self.rows = dict(failures), rows
        named = "; ".join(f"{name}: {_failure_line(error)}" for name, error in list(self.failures.items())[:10])
        more = f"; ... and {len(self.failures) - 10} more" if len(self.failures) > 10 else ""
        super().__init__(f"{len(self.failures)} of {total} runs failed ({named}{more}); the other runs finished and "
                         "are kept: fix the cause and rerun the same command to compute only what is missing.")


#: Packages whose exceptions mean a cluster worker itself failed (killed, out of memory, crashed), not the run.
_CLUSTER_PACKAGES = ("ray", "distributed", "dask")


def _failure_line(error: BaseException, limit: int = 300) -> str:
    """One short line for a failed run: the error's type and the first ``limit`` characters of its one-line
    description; a cluster worker's own failure (a Ray or Dask exception, whose message is a multi-line report)
    also gets what to do about it."""
    text = describe_error(error)
    line = f"{type(error).__name__}: {text[:limit]}{'...' if len(text) > limit else ''}"
    if type(error).__module__.split(".")[0] in _CLUSTER_PACKAGES:
        line += (" (a cluster worker failed, not the run: read that worker's log, give each run more memory or CPUs "
                 "with --cpus-per-run, and rerun)")
    return line


def _run_name(config: RunConfig) -> str:
    return f"{config.dataset} {config.method} {config.bits} bits seed {config.seed}"


_SHARED_STAGES = (("stage0", "weights.pt"), ("stage1", "similarity.npy"), ("stage2", "centers.npy"))
"""The stages a hashing run reads, in the order they depend on each other, with the file that completes each."""


def _stage_applies(config: RunConfig, stage: str) -> bool:
    spec = method_spec(config)
    return {"stage0": config.pretrain is not None, "stage1": spec.needs_similarity,
            "stage2": spec.centers is not None}[stage]


class WorkerMismatchError(RuntimeError):
    """A worker sees other data, another package or missing stages at the paths the grid was planned with: it
    refuses to compute (the caller would report the numbers as its own grid's)."""


def _task(config: RunConfig, stage: str) -> tuple[RunConfig, str, dict[str, Any]]:
    """What a worker computes, with what the planning process expects it to find: every stage's identity
    (the data fingerprint among them) as computed here, and where it was computed."""
    return config, stage, {"identities": jsonable(stage_identities(config)), "host": socket.gethostname()}


def _check_task(config: RunConfig, stage: str, expected: Mapping[str, Any]) -> None:
    """Before a worker computes ``stage``: its own identities must be the planner's (same data fingerprint, root
    and package), and every stage it reads must be finished under that identity (in the shared ``run_dir``)."""
    here, planned = jsonable(stage_identities(config)), expected["identities"]
    where = f"worker {socket.gethostname()} (pid {os.getpid()})"
    if here != planned:
        mine, theirs = here["stage3"], planned["stage3"]
        data = [key for key in ("data_root", "data_fingerprint") if mine[key] != theirs[key]]
        what = (f"other data: {config.dataset} at {mine['data_root'] or 'the default data root'} has "
                + ", ".join(f"{key} {mine[key]} there and {theirs[key]} on {expected['host']}" for key in data)
                + "; give every machine the same files at the same path (a --data-root they share)") if data else \
            (f"another {stage} identity than {expected['host']} (another shc version?); install the same shc "
             "on every machine")
        raise WorkerMismatchError(f"{where} refuses {stage} of {_run_name(config)}: it sees {what}, then rerun.")
    artifacts = dict(_SHARED_STAGES)
    for parent in ("stage0", "stage1", "stage2"):
        if parent not in (here[stage] or {}):
            continue
        directory = stage_directories(config)[parent]
        if read_identity(directory) != here[parent] or not (directory / artifacts[parent]).exists():
            raise WorkerMismatchError(
                f"{where} refuses {stage} of {_run_name(config)}: {directory / artifacts[parent]}, which "
                f"{expected['host']} finished, is not there under its identity (config.json); run_dir must be a "
                "folder every machine sees at the same path, then rerun.")


def _compute_stage(task: tuple[RunConfig, str, Mapping[str, Any]]) -> Any:
    """One stage of a config, in an executor's worker, once :func:`_check_task` found what the planner expects:
    a shared stage (0, 1 or 2; returns nothing) or the hashing run (stage 3; returns its metrics)."""
    config, stage, expected = task
    _check_task(config, stage, expected)
    compute = {"stage0": run_pretraining, "stage1": run_similarity, "stage2": run_centers, "stage3": run_hashing}
    result = compute[stage](config)
    return result if stage == "stage3" else None


def _shared_stages_remotely(configs: Sequence[RunConfig], executor: Any, log, progress: bool
                            ) -> dict[int, BaseException]:
    """Stages 0, 1 and 2 of ``configs`` as executor tasks, one stage after the other (a stage's tasks wait for
    the stage they read), each stage folder computed once: the configs sharing it wait for its one task.

    Returns the configs whose shared stage failed (position -> error); their hashing runs are not started.
    """
    failed: dict[int, BaseException] = {}
    for stage, artifact in _SHARED_STAGES:
        folders: dict[Path, list[int]] = {}
        for position, config in enumerate(configs):
            if position not in failed and _stage_applies(config, stage) and _cached(config, stage, artifact) is None:
                folders.setdefault(stage_directories(config)[stage], []).append(position)
        tasks = [_task(configs[positions[0]], stage) for positions in folders.values()]
        for task_position, _, error, seconds in executor.map(_compute_stage, tasks):
            positions = list(folders.values())[task_position]
            if error is not None:
                failed.update((position, error) for position in positions)
                log(f"FAILED {stage} of {_run_name(configs[positions[0]])} (needed by {len(positions)} run(s)): "
                    f"{type(error).__name__}: {describe_error(error)}")
            elif progress:
                log(f"{stage} of {_run_name(configs[positions[0]])} computed ({seconds:.1f} s)")
    return failed


#: The reachability numbers a grid row carries (shc.reachability), when the run has them.
_REACH_ROW_KEYS = ("reach_targets", "train_center_hit_rate", "train_center_bit_error", "query_center_hit_rate")


def run_grid(configs: Iterable[RunConfig], progress: bool = True, log=print, jobs: int | str = 1,
             executor: str = "local", address: str | None = None, cpus_per_run: float = 1,
             gpus_per_run: float = 0) -> list[dict[str, Any]]:
    """Run every config (cached stages are skipped) and return one row of headline numbers each.

    With ``progress``, one line per run (``[n/N] ... (seconds, ETA)``) and, serially, each training's epoch
    bar. ``jobs > 1`` (or ``"auto"``, :func:`resolve_jobs`) trains up to ``jobs`` hashing networks at once in worker processes, each with
    ``cpu_count // jobs`` threads, after stages 1 and 2 of every config were computed here: on a small CPU
    two single-threaded trainings finish sooner than two consecutive two-threaded ones (the small CNN does not
    keep two threads busy; :func:`grid_workers` has the measurement). Results do not depend on ``jobs``, the
    executor, the other runs of the grid or their order: every stage computes with
    :data:`~shc.runs.STAGE_THREADS` threads wherever it runs (the thread count changes CPU results through the
    summation order), and records them (``threads``); tested byte for byte in fp32. Rows come back in the
    order of ``configs``.

    ``executor="dask"`` or ``"ray"`` (:mod:`shc.executors`) runs the grid as tasks of a cluster (``address`` joins
    a running one; None starts a local one, or for Ray uses the one this process joined): first stages 0, 1 and 2, one
    task per stage folder, each stage after the ones it reads, then one task per hashing run, each asking for
    ``cpus_per_run`` CPUs (its thread count) and ``gpus_per_run`` GPUs. ``run_dir`` must be a folder every machine
    sees at the same path (docs/scale-out.md says which file systems keep the stage locks safe). The same numbers as
    the local executor, byte for byte. This process computes every stage's identity, which reads the dataset (its
    fingerprint): the data must be at the same path here and on the workers, and each worker checks that it is
    (and that the stages it reads are there) before computing, refusing with a :class:`WorkerMismatchError`.

    With ``jobs > 1`` or on a cluster, a failing run does not stop the others: each failure is logged by name when it
    happens, and once every other run finished a :class:`GridFailures` names them all (a rerun computes only
    what is missing). Serially (``jobs=1``, local) the first failure is raised at once.
    """
    from shc.executors import open_executor

    configs = list(configs)
    jobs = resolve_jobs(jobs)
    started_all = time.perf_counter()
    rows: list[dict[str, Any] | None] = [None] * len(configs)
    failures: dict[str, BaseException] = {}

    def finished(index: int, metrics: Mapping[str, Any], seconds: float) -> None:
        config = configs[index]
        rows[index] = {"dataset": config.dataset, "method": config.method, "similarity": config.similarity,
                       "bits": config.bits, "seed": config.seed,
                       **{key: metrics[key] for key in (*TIE_AWARE_MAP_KEYS, *MAP_KEYS)},
                       **{key: metrics[key] for key in _REACH_ROW_KEYS if key in metrics},
                       "train_seconds": metrics["train_seconds"]}
        if progress and _is_main():
            done = sum(row is not None for row in rows)
            elapsed = time.perf_counter() - started_all
            eta = elapsed / done * (len(configs) - done - len(failures))
            log(f"[{done}/{len(configs)}] {_run_name(config)}: "
                + ", ".join(f"{key} {metrics[key]:.4f}" for key in (*TIE_AWARE_MAP_KEYS, "mAP@ALL"))
                + (f", train center hit rate {metrics['train_center_hit_rate']:.3f}"
                   if "train_center_hit_rate" in metrics else "")
                + f" ({seconds:.1f} s; ETA {eta / 60:.1f} min)" + (f"; {len(failures)} failed" if failures else ""))

    def failed(index: int, error: BaseException) -> None:
        name = _run_name(configs[index])
        failures[name if name not in failures else f"{name} (run {index + 1} of the grid)"] = error
        log(f"FAILED {_run_name(configs[index])} ({sum(row is not None for row in rows)}/{len(configs)} done, "
            f"{len(failures)} failed): {type(error).__name__}: {describe_error(error)}")

    local = executor == "local"
    if local and (jobs == 1 or len(configs) < 2 or _distributed()[1] > 1):
        for index, config in enumerate(configs):
            started = time.perf_counter()
            finished(index, run(config, progress=progress).metrics, time.perf_counter() - started)
        return rows  # type: ignore[return-value]
    options = dict(jobs=jobs, threads=grid_threads(jobs)) if local else \
        dict(address=address, num_cpus=cpus_per_run, num_gpus=gpus_per_run)
    # Each stage computes with STAGE_THREADS threads whatever the worker was given: a rerun after an interrupt, a
    # cluster task and a one-method grid train a cell exactly as the full local grid does.
    with open_executor(executor, **options) as pool:
        blocked: dict[int, BaseException] = {}
        if pool.remote:
            blocked = _shared_stages_remotely(configs, pool, log, progress and _is_main())
        else:
            for config in configs:  # stages 0-2 here (shared between cells, and each locked while computed)
                run_pretraining(config, progress)
                if method_spec(config).needs_similarity:
                    run_similarity(config, progress)
                run_centers(config, progress)
        for index, error in blocked.items():
            failed(index, error)
        pending = []
        for index, config in enumerate(configs):
            metrics = None if index in blocked else _finished(config)
            if metrics is not None:
                finished(index, metrics, 0.0)
            elif index not in blocked:
                pending.append(index)
        for position, metrics, error, seconds in pool.map(_compute_stage,
                                                          [_task(configs[index], "stage3") for index in pending]):
            if error is not None:
                failed(pending[position], error)
            else:
                finished(pending[position], metrics, seconds)
    if failures:
        raise GridFailures(failures, rows, len(configs))
    return rows  # type: ignore[return-value]


def resolve_jobs(jobs: int | str) -> int:
    """How many hashing runs a grid trains at once: ``jobs`` itself, or, for ``"auto"`` (the command lines'
    default), one run per CPU core where no CUDA device is visible (each run single-threaded: on a small CPU
    that finishes a grid sooner, see :func:`grid_workers`) and one run at a time where one is (the run has the
    GPU to itself; several GPUs train one run with ``torchrun``, docs/gpu.md)."""
    if isinstance(jobs, str) and jobs == "auto":
        import torch

        return 1 if torch.cuda.is_available() else _cpu_count()
    return _positive_jobs(jobs)


def grid_threads(jobs: int | str) -> int:
    """Threads each worker process of a ``--jobs JOBS`` grid is given: ``cores // jobs`` (at least 1). Its stages
    compute with :data:`~shc.runs.STAGE_THREADS` all the same; this is what the process does outside them."""
    return max(1, _cpu_count() // resolve_jobs(jobs))


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def compute_similarities(configs: Iterable[RunConfig], sources: Sequence[str] = ("logits", "text", "hierarchy"),
                         progress: bool = False) -> None:
    """Stage 1 of every config for each S source that applies (hierarchy only where the data has one)."""
    for config in configs:
        for source in sources:
            if source == "hierarchy" and load_data(config).coarse_labels is None:
                continue
            run_similarity(config.replace(similarity=source), progress)


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


# --------------------------------------------------------------------------------------------
# Presets (the table is shc.presets; these keep the historical entry points)
# --------------------------------------------------------------------------------------------
def preset(name: str, methods: Sequence[str] | None = None, bits: Sequence[int] | None = None,
           seeds: Sequence[int] | None = None, datasets: Sequence[str] | None = None,
           **overrides: Any) -> list[RunConfig]:
    """The grid of preset ``name`` (see :mod:`shc.presets`) as a list of configs."""
    from shc.presets import get_preset

    return get_preset(name).configs(methods=methods, bits=bits, seeds=seeds, datasets=datasets, **overrides)


def report_configs(preset_name: str, dataset: str, methods: Sequence[str], bits: Sequence[int],
                   seeds: Sequence[int], run_dir: str, epochs: int | None = None,
                   **overrides: Any) -> list[RunConfig]:
    """The grid of one report notebook: the preset restricted to one dataset (see :func:`shc.presets.report_configs`)."""
    from shc.presets import report_configs as configs

    return configs(preset_name, dataset, methods, bits, seeds, run_dir, epochs=epochs, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    from shc.cli_common import run_cli

    return run_cli(_main, argv)


def _main(argv: Sequence[str] | None) -> int:
    import argparse

    from shc import presets
    from shc.cli_common import jobs_argument

    parser = argparse.ArgumentParser(prog="python -m shc.pipeline",
                                     description="Run the SHC pipeline on a preset grid and print the mAP tables.")
    presets.add_grid_arguments(parser)
    parser.add_argument("--run-dir", default=None,
                        help="artifact root (default: runs/<preset>, where python -m shc.reports reads them)")
    parser.add_argument("--list", action="store_true", help="print the grid the preset expands to and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress output")
    parser.add_argument("--reevaluate", action="store_true",
                        help="measure every finished run of the grid anew from its stored codes (nothing is trained) "
                             "and print how long it took; unfinished runs are listed, not computed")
    parser.add_argument("--jobs", type=jobs_argument, default="auto",
                        help="hashing runs trained at once (default auto: one per CPU core, one at a time on a "
                             "GPU); every stage computes with one thread whatever JOBS is, so the numbers do not "
                             "depend on it (docs/scale-out.md)")
    from shc.cli_common import add_executor_arguments, executor_options

    add_executor_arguments(parser)
    args = parser.parse_args(argv)
    cluster = executor_options(args)
    configs = presets.configs_from_arguments(args, run_dir=args.run_dir or str(Path("runs") / args.preset))
    if args.list:
        for config in configs:
            print(presets.describe_config(config))
        print(f"{len(configs)} runs")
        return 0
    if args.reevaluate:
        return _reevaluate_grid(configs)
    from shc.cli_common import output_folder
    from shc.train.distributed import _process_group

    output_folder(configs[0].run_dir, "--run-dir")
    # under torchrun: the one process group of the job (fit joins it), left as fit leaves its own
    with _process_group(configs[0].device):
        started = time.perf_counter()
        rows = run_grid(configs, progress=not args.quiet, jobs=args.jobs, **cluster)
        if _is_main():
            for metric in (*TIE_AWARE_MAP_KEYS, *MAP_KEYS):
                print(f"\n{metric} (mean ± std over seeds)\n{summarize(rows, metric).to_string()}")
            print(f"\n{len(configs)} runs in {time.perf_counter() - started:.0f} s")
    return 0


def _reevaluate_grid(configs: Sequence[RunConfig]) -> int:
    """``--reevaluate``: every finished run of ``configs`` measured anew from its codes; the time it took."""
    started, done, missing = time.perf_counter(), 0, []
    for config in configs:
        try:
            reevaluate(config, force=True)
            done += 1
        except MissingRunError:
            missing.append(config)
    print(f"re-evaluated {done} run(s) from their stored codes in {time.perf_counter() - started:.1f} s "
          f"(evaluation version {EVALUATION_VERSION})")
    if missing:
        print(f"{len(missing)} run(s) have not finished (nothing to evaluate): "
              + "; ".join(f"{c.method} {c.bits} bits seed {c.seed}" for c in missing[:10])
              + ("; ..." if len(missing) > 10 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
