"""Runs and their artifacts: what a run *is* (:class:`RunConfig`), where each stage keeps its files, and
what identifies them. Reading (:mod:`shc.results`) and computing (:mod:`shc.pipeline`) both build on this
module; it trains nothing.

Layout of a run directory::

    <run_dir>/<dataset>/seed<k>/
        stage0-pretrain-<source>-<key>/ weights.pt, metrics.json, classifier/ (only with ``pretrain``)
        stage1-<source>-<key>/          similarity.npy, metrics.json, classifier/ (training run), config.json
        stage2-<variant>-<q>bit-<key>/  centers.npy, quality.json, history.json, config.json
        stage3-<variant>-<q>bit-<key>/  train/, codes.npz, metrics.json, encoder.json, config.json

``<variant>`` is the method, plus the S source for methods whose centers are built from an S other than
the default data-dependent one (``shc-text``). ``<key>`` is a short hash of the stage's **identity**:
everything that determines its output (the dataset, its options, the resolved data root and a
fingerprint of the loaded data, the seed, the stage's own settings and, recursively, the identity of the
stages it reads). The identity is stored in ``config.json``. So runs that differ in any setting (say,
more epochs) live side by side, identical ones are reused, and changing the images in a folder changes
the key (:meth:`shc.data.DatasetSplits.fingerprint`). Device and precision are not part of the identity.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shc._io import jsonable
from shc.centers.registry import CENTER_GENERATORS
from shc.evaluation import EVALUATION_VERSION, MAP_KEYS, PRIMARY_METRIC, TIE_AWARE_MAP_KEYS  # noqa: F401

__all__ = ["MAP_KEYS", "PRIMARY_METRIC", "SIMILARITY_SOURCES", "STAGE_THREADS", "TIE_AWARE_MAP_KEYS",
           "MissingRunError", "RunConfig", "StaleRunError", "data_identity", "identity_key", "load_data", "method_spec",
           "other_similarity", "paired_seeds", "stage_directories", "stage_identities"]

SIMILARITY_SOURCES = ("logits", "text", "labels", "hierarchy")
STAGE_THREADS = 1
"""CPU threads every stage computes with (torch and numba), whatever executor, ``--jobs`` or cluster task runs it:
the numbers of a config then do not depend on how it was run (docs/scale-out.md, "One config, one result").
Not part of the identities, so the folders of existing configs keep their names; it changes CPU results, so a
release that changes it must change the identities too. Each stage records it (``threads``)."""
_OPTIMIZERS = ("rmsprop", "adam", "sgd")
_MASKS = ("label", "argmax")
_PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class MissingRunError(FileNotFoundError):
    """A stage's artifacts are not in the run directory; the message names the command that computes them."""


class StaleRunError(MissingRunError):
    """A finished run was measured by an older evaluation; the message names the command that re-evaluates it."""


def _positive_int(name: str, value: Any, upper: int | None = None) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (upper is not None and value > upper):
        allowed = f"an integer in [1, {upper}]" if upper else "a positive integer"
        raise ValueError(f"{name} must be {allowed}, got {value!r}.")


def _positive_float(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value != value:
        raise ValueError(f"{name} must be a positive number, got {value!r}.")


def _choice(name: str, value: Any, known: Any) -> None:
    known = list(known)
    if value not in known:
        import difflib

        close = difflib.get_close_matches(str(value), [str(k) for k in known], n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown {name} {value!r}{hint}; choose one of: {', '.join(map(str, known))}.")


@dataclass(frozen=True)
class RunConfig:
    """Everything that defines one run of the pipeline (validated on construction).

    Parameters
    ----------
    dataset, dataset_options, data_root
        Passed to :func:`shc.data.load_dataset`.
    method : str
        A name from :func:`shc.methods.available_methods`. It fixes the loss, the center generator (if
        any) and the hash head.
    bits : int
        Code length q, in [8, 1024] (the paper uses 16, 32, 64).
    similarity : {"logits", "text", "labels", "hierarchy"}
        Source of S for methods that need one: the paper's data-dependent matrix from a trained
        classifier (Eq. 2-12), class-name embeddings (the "BERT" ablation), identity labels, or the
        dataset's coarse hierarchy.
    mask : {"label", "argmax"}
        Which logit stage 1 masks (see :func:`shc.similarity.similarity_from_logits`).
    backbone, pretrained, weights
        Passed to :func:`shc.models.build_backbone` for both the classifier and the hashing network.
    pretrain, pretrain_epochs, pretrain_lr
        A source task of :mod:`shc.pretraining` (e.g. ``"items"``) that pretrains the backbone once per dataset
        and seed (stage 0), whose weights then start both networks; None (default) starts from ``pretrained``
        / ``weights``. Its schedule: epochs and learning rate (batch size and optimiser as the runs').
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
    pretrain: str | None = None
    pretrain_epochs: int = 10
    pretrain_lr: float = 1e-3
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
        from shc.data import available_datasets
        from shc.methods import available_methods
        from shc.models import available_backbones

        _choice("dataset", self.dataset, available_datasets())
        _choice("method", self.method, available_methods())
        _choice("similarity source", self.similarity, SIMILARITY_SOURCES)
        _choice("mask", self.mask, _MASKS)
        _choice("backbone", self.backbone, available_backbones())
        _choice("optimizer", self.optimizer, _OPTIMIZERS)
        _choice("precision", self.precision, _PRECISIONS)
        if isinstance(self.bits, bool) or not isinstance(self.bits, int) or not 8 <= self.bits <= 1024:
            raise ValueError(f"bits must be an integer in [8, 1024] (the paper uses 16, 32, 64), got {self.bits!r}.")
        if method_spec(self).centers == "csq" and self.bits & (self.bits - 1):
            raise ValueError(f"bits: {self.bits} is not a power of two, and method {self.method!r} uses Hadamard "
                             "centers, which exist only for 16, 32, 64, ... bits; use such a length or another method.")
        for name in ("epochs", "classifier_epochs", "batch_size", "eval_every", "pretrain_epochs"):
            _positive_int(name, getattr(self, name))
        for name in ("lr", "classifier_lr", "pretrain_lr"):
            _positive_float(name, getattr(self, name))
        if self.pretrain is not None:
            from shc.pretraining import available_pretrain_sources

            _choice("pretraining source (pretrain)", self.pretrain, available_pretrain_sources())
            if self.pretrained or self.weights is not None:
                raise ValueError(f"pretrain={self.pretrain!r} gives the backbone its starting weights; it cannot be "
                                 "combined with pretrained=True or weights=. Set one of them.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}.")
        for name in ("dataset_options", "method_options", "center_options"):
            if not isinstance(getattr(self, name), Mapping):
                raise ValueError(f"{name} must be a mapping (dict), got {type(getattr(self, name)).__name__}.")
        if not isinstance(self.pretrained, bool):
            raise ValueError(f"pretrained must be True or False, got {self.pretrained!r}.")
        if not isinstance(self.run_dir, (str, os.PathLike)) or not str(self.run_dir):
            raise ValueError(f"run_dir must be a folder path, got {self.run_dir!r}.")
        if self.data_root is not None:
            if not isinstance(self.data_root, (str, os.PathLike)):
                raise ValueError(f"data_root must be a folder path, got {self.data_root!r}.")
            root = Path(self.data_root).expanduser()
            if root.exists() and not root.is_dir():
                raise ValueError(f"data_root {str(self.data_root)!r} is a file; give the folder holding the dataset.")
        if not isinstance(self.device, str) or not (self.device in ("auto", "cpu", "cuda")
                                                    or self.device.startswith("cuda:")):
            raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {self.device!r}.")

    def replace(self, **changes: Any) -> RunConfig:
        return dataclasses.replace(self, **changes)


# --------------------------------------------------------------------------------------------
# Data (cached per process, and checked against the files each time it is served: shc.data.cache)
# --------------------------------------------------------------------------------------------
def load_data(config: RunConfig):
    """The dataset splits of ``config``, cached per process while the files they were read from are unchanged
    (:func:`shc.data.cache.load_data`)."""
    from shc.data.cache import load_data as cached_splits  # shc.data imports torch: only once data is needed

    return cached_splits(config)


def forget_data() -> None:
    """Drop the per-process dataset cache (:func:`load_data` reloads changed files by itself)."""
    from shc.data.cache import forget_data as forget

    forget()


# --------------------------------------------------------------------------------------------
# Identities and directories
# --------------------------------------------------------------------------------------------
def method_spec(config: RunConfig):
    from shc.methods import get_method

    return get_method(config.method)


def other_similarity(config: RunConfig) -> bool:
    """Whether the method's centers are built from an S other than the default data-dependent one."""
    return config.similarity != "logits" and method_spec(config).needs_similarity


def data_identity(config: RunConfig) -> dict[str, Any]:
    """What fixes a run's splits: dataset, options, seed, resolved data root and the loaded data's fingerprint."""
    from shc.data.cache import resolved_root

    return {"dataset": config.dataset, "dataset_options": dict(config.dataset_options), "seed": config.seed,
            "data_root": resolved_root(config), "data_fingerprint": load_data(config).fingerprint()}


def stage_identities(config: RunConfig) -> dict[str, dict[str, Any] | None]:
    """The identity of each stage of ``config`` (None for a stage the run does not have).

    Stage 0 (the pretrained backbone) appears when ``config.pretrain`` names a source; stage 1 when the
    method's centers need S; stage 2 when the method has centers.
    """
    spec = method_spec(config)
    data = data_identity(config)
    stage0 = None
    if config.pretrain is not None:
        stage0 = {**data, "pretrain": config.pretrain, "backbone": config.backbone, "epochs": config.pretrain_epochs,
                  "lr": config.pretrain_lr, "batch_size": config.batch_size, "optimizer": config.optimizer}
    start = {} if stage0 is None else {"stage0": stage0}  # the starting weights of both networks
    stage1 = {**data, "similarity": config.similarity}
    if config.similarity == "logits":
        stage1.update(mask=config.mask, backbone=config.backbone, pretrained=config.pretrained,
                      weights=config.weights, classifier_epochs=config.classifier_epochs,
                      classifier_lr=config.classifier_lr, batch_size=config.batch_size, optimizer=config.optimizer,
                      **start)
    stage2 = None
    if spec.centers is not None:
        stage2 = {**data, "centers": spec.centers, "bits": config.bits, "center_options": dict(config.center_options)}
        version = CENTER_GENERATORS.get(spec.centers).version
        if version != 1:  # version 1 is left out, so the identities of unchanged generators stay as they were
            stage2["generator_version"] = version
        if spec.needs_similarity:
            stage2["stage1"] = stage1
    stage3 = {
        **data, "method": config.method, "bits": config.bits, "backbone": config.backbone,
        "pretrained": config.pretrained, "weights": config.weights, "epochs": config.epochs, "lr": config.lr,
        "batch_size": config.batch_size, "optimizer": config.optimizer, "eval_every": config.eval_every,
        "method_options": dict(config.method_options), "select": PRIMARY_METRIC, **start,
    }  # what is measured on the query set is not here: it is recomputed from the codes (shc.evaluation)
    if stage2 is not None:
        stage3["stage2"] = stage2
    return {"stage0": stage0, "stage1": stage1, "stage2": stage2, "stage3": stage3}


def identity_key(identity: Mapping[str, Any]) -> str:
    """A short, stable hash of an identity (8 hex digits of SHA-256 over its canonical JSON)."""
    text = json.dumps(jsonable(identity), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def stage_directories(config: RunConfig) -> dict[str, Path]:
    """Where each stage of ``config`` keeps its artifacts (see the module docstring for the layout)."""
    root = Path(config.run_dir) / config.dataset / f"seed{config.seed}"
    identities = stage_identities(config)
    variant = f"{config.method}-{config.similarity}" if other_similarity(config) else config.method
    names = {"stage0": f"stage0-pretrain-{config.pretrain}", "stage1": f"stage1-{config.similarity}",
             "stage2": f"stage2-{variant}-{config.bits}bit", "stage3": f"stage3-{variant}-{config.bits}bit"}
    return {stage: root / f"{name}-{identity_key(identities[stage] or {})}" for stage, name in names.items()}


def describe(config: RunConfig) -> str:
    label = f"{config.method} ({config.similarity} S)" if other_similarity(config) else config.method
    return f"{label}, {config.bits} bits, seed {config.seed}, {config.dataset}"


def artifact(config: RunConfig, stage: str, name: str) -> Path:
    """The path of a stage's artifact, or a :class:`MissingRunError` naming the command that computes it.

    An artifact counts only when its stage's ``config.json`` records the stage's identity (a folder
    whose record is missing or damaged is not trusted).
    """
    directory = stage_directories(config)[stage]
    path = directory / name
    if path.exists() and read_identity(directory) == jsonable(stage_identities(config)[stage]):
        return path
    raise MissingRunError(
        f"{path} is missing: {stage} of ({describe(config)}) has not been computed in run_dir "
        f"{str(config.run_dir)!r}. Compute it first: `python -m shc.reports --preset <preset>` computes every "
        "run its notebooks read (or `python -m shc.pipeline --preset <preset>`), and in Python "
        "`shc.pipeline.run(config)` / `shc.pipeline.run_grid(configs)`."
    )


def read_identity(directory: Path) -> Any:
    """The identity recorded in ``directory/config.json``, or None when it is missing or unreadable."""
    try:
        return json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return None


def paired_seeds(configs_a: list[RunConfig], configs_b: list[RunConfig], name_a: str, name_b: str) -> list[int]:
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


def _data_differences(a: RunConfig, b: RunConfig) -> list[str]:
    """How the data of two runs differs: their settings first, the loaded data's fingerprint only when they agree."""
    from shc.data.cache import resolved_root

    settings = [(name, getattr(a, name), getattr(b, name)) for name in ("dataset", "dataset_options")]
    settings.append(("data_root", resolved_root(a), resolved_root(b)))
    differences = [f"{name} {jsonable(x)!r} against {jsonable(y)!r}" for name, x, y in settings
                   if jsonable(x) != jsonable(y)]
    if not differences and data_identity(a) != data_identity(b):
        differences.append("the loaded data differs (data fingerprint)")
    return differences
