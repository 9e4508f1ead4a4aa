"""What a run *is*: :class:`RunConfig` (validated on construction), its data, its method, and the errors that a
missing or stale run raises. Where each stage keeps its files and what identifies them are the stages'
(:mod:`shc.stages`: every stage one object with its identity, folder, lock and cache); reading
(:mod:`shc.results`) and computing (:mod:`shc.pipeline`) build on both. This module trains nothing.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shc.evaluation import EVALUATION_VERSION, MAP_KEYS, PRIMARY_METRIC, TIE_AWARE_MAP_KEYS  # noqa: F401

__all__ = ["MAP_KEYS", "PRIMARY_METRIC", "SIMILARITY_SOURCES", "STAGE_THREADS", "TIE_AWARE_MAP_KEYS",
           "MissingRunError", "RunConfig", "StaleRunError", "describe", "load_data", "method_spec", "other_similarity"]

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
    """A finished run that cannot be used as it is: measured by an older evaluation, or computed under other settings
    than the config gives (evaluation epochs, method defaults, a weights file: ``shc.stages.base.Stage``); the message
    names the command that re-evaluates it or what to do. A subclass of :class:`MissingRunError` for the readers that
    treat it as not there, but a caller that skips missing runs must re-raise it first: it exists."""


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
        from shc.registry import did_you_mean

        hint = did_you_mean(str(value), [str(k) for k in known])
        raise ValueError(f"unknown {name} {value!r};{hint} Choose one of: {', '.join(map(str, known))}.")


def _check_option_names(config: RunConfig) -> None:
    """``method_options`` must name hyper-parameters of the method's loss and ``center_options`` options of its
    center generator: checked when the config is built (an audit: a typo surfaced only after stages 0-2 had
    trained, and ``--list`` accepted it). The values are checked where they are used."""
    from shc.centers.registry import CENTER_GENERATORS

    spec = method_spec(config)
    unknown = sorted(set(config.method_options) - set(spec.defaults))
    if unknown:
        allowed = ", ".join(spec.defaults) or "none"
        raise ValueError(f"method_options: unknown hyper-parameter(s) {unknown} for method {config.method!r}; "
                         f"allowed: {allowed} (shc.methods.get_method({config.method!r}).defaults).")
    if not config.center_options:
        return
    if spec.centers is None:
        raise ValueError(f"center_options: method {config.method!r} uses no hash centers, so it takes no "
                         f"center_options; drop them (got {sorted(config.center_options)}).")
    allowed = CENTER_GENERATORS.get(spec.centers).options
    unknown = sorted(set(config.center_options) - set(allowed))
    if unknown:
        raise ValueError(f"center_options: unknown option(s) {unknown} for the {spec.centers!r} centers of method "
                         f"{config.method!r}; allowed: {', '.join(allowed) or 'none'}.")


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
        _check_option_names(self)
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
# The method
# --------------------------------------------------------------------------------------------
def method_spec(config: RunConfig):
    """The :class:`shc.methods.MethodSpec` of the config's method (its loss, centers, head)."""
    from shc.methods import get_method

    return get_method(config.method)


def other_similarity(config: RunConfig) -> bool:
    """Whether the method's centers are built from an S other than the default data-dependent one."""
    return config.similarity != "logits" and method_spec(config).needs_similarity


def describe(config: RunConfig) -> str:
    """The run in words: method (and S source), bits, seed, dataset."""
    label = f"{config.method} ({config.similarity} S)" if other_similarity(config) else config.method
    return f"{label}, {config.bits} bits, seed {config.seed}, {config.dataset}"
