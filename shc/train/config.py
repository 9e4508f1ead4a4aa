"""Training at the bottom: what a run is (:class:`TrainConfig`) and what it leaves (:class:`History`).

Imports no other part of the training package: the checkpoint files, the distributed plumbing and the loop
build on it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from shc.devices import PRECISIONS, _require

__all__ = ["History", "TrainConfig"]

OPTIMIZERS = ("rmsprop", "adam", "sgd")


SCHEDULERS = ("cosine", "none")


SELECT_MODES = ("max", "min")


SGD_MOMENTUM = 0.9


_ROW_KEYS = ("epoch", "loss", "lr", "seconds", "eval_seconds")


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of one training run (immutable; use ``dataclasses.replace``).

    Parameters
    ----------
    epochs : int
        Number of passes over the training set (paper: 300).
    batch_size : int
        Global batch size, split across ranks under DDP (paper: 64).
    lr : float
        Initial learning rate (paper: 7e-5 for CIFAR-100, 1e-4 otherwise).
    optimizer : {"rmsprop", "adam", "sgd"}
        ``"rmsprop"`` is the paper's; SGD uses momentum 0.9.
    weight_decay : float
        L2 penalty passed to the optimizer (1e-5 as in CSQ's released code;
        the paper does not state one).
    scheduler : {"cosine", "none"}
        ``"cosine"``: ``CosineAnnealingLR(T_max=epochs, eta_min=0)`` stepped
        once per epoch.
    eval_every : int
        Call ``evaluate`` every this many epochs, and always after the last.
    num_workers : int or None
        DataLoader worker processes. ``None`` picks 0 on CPU and for in-memory
        (batched) datasets (the math already uses every core: workers only
        compete with it; see ``benchmarks/bench_train.py``), else on CUDA
        ``min(8, cores per rank - 1)`` (at least 1). The augmentation draws from
        the global random state without workers and from per-worker seeds with
        them, so the numbers depend on the count: fix it to compare machines
        (docs/scale-out.md).
    seed : int
        Seeds the initial random state, the per-epoch shuffles and the
        DataLoader workers.
    deterministic : bool
        ``torch.use_deterministic_algorithms(True, warn_only=True)`` and no
        cuDNN autotuning during ``fit`` (restored afterwards).
    device : str
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"`` or
        ``"cuda:N"``.
    precision : {"auto", "fp32", "bf16", "fp16"}
        Autocast precision of the forward pass. ``"auto"``: fp16 with a
        ``GradScaler`` on CUDA, bf16 on a CPU with native bf16 instructions,
        fp32 otherwise.
    channels_last : bool
        Use the channels-last memory format for the model and 4-D inputs.
    select_metric : str
        Key of the ``evaluate`` dict used for model selection, e.g.
        ``"mAP@ALL"`` or ``"accuracy"``.
    select_mode : {"max", "min"}
        Whether a larger or smaller ``select_metric`` is better.
    grad_clip_norm : float or None
        Clip the global gradient norm to this value; ``None`` disables.
    drop_last : bool
        Drop the last incomplete batch of every epoch. Without it a last batch of one sample (too small for
        BatchNorm; under DDP one smaller than the world) is dropped all the same.
    """

    epochs: int = 300
    batch_size: int = 64
    lr: float = 1e-4
    optimizer: str = "rmsprop"
    weight_decay: float = 1e-5
    scheduler: str = "cosine"
    eval_every: int = 1
    num_workers: int | None = None
    seed: int = 0
    deterministic: bool = True
    device: str = "auto"
    precision: str = "auto"
    channels_last: bool = True
    select_metric: str = "mAP@ALL"
    select_mode: str = "max"
    grad_clip_norm: float | None = None
    drop_last: bool = False

    def evaluates(self, epoch: int) -> bool:
        """Whether :func:`shc.train.fit` evaluates (and may select) the network after ``epoch`` (1-based): every
        ``eval_every`` epochs and after the last."""
        return epoch % self.eval_every == 0 or epoch == self.epochs

    def evaluation_epochs(self) -> tuple[int, ...]:
        """Every epoch :meth:`evaluates`, in order."""
        return tuple(epoch for epoch in range(1, self.epochs + 1) if self.evaluates(epoch))

    def __post_init__(self) -> None:
        def positive_int(name: str) -> None:
            value = getattr(self, name)
            _require(
                isinstance(value, int) and not isinstance(value, bool) and value >= 1,
                f"TrainConfig.{name} must be a positive integer, got {value!r}.",
            )

        for name in ("epochs", "batch_size", "eval_every"):
            positive_int(name)
        _require(
            isinstance(self.lr, (int, float)) and math.isfinite(self.lr) and self.lr > 0,
            f"TrainConfig.lr must be a finite number > 0, got {self.lr!r}.",
        )
        _require(
            isinstance(self.weight_decay, (int, float)) and math.isfinite(self.weight_decay)
            and self.weight_decay >= 0,
            f"TrainConfig.weight_decay must be a finite number >= 0, got {self.weight_decay!r}.",
        )
        for name, allowed in (
            ("optimizer", OPTIMIZERS),
            ("scheduler", SCHEDULERS),
            ("precision", PRECISIONS),
            ("select_mode", SELECT_MODES),
        ):
            value = getattr(self, name)
            _require(value in allowed, f"TrainConfig.{name}={value!r} is unknown; use one of {allowed}.")
        _require(
            self.num_workers is None
            or (isinstance(self.num_workers, int) and self.num_workers >= 0),
            f"TrainConfig.num_workers must be None (automatic) or an integer >= 0, got {self.num_workers!r}.",
        )
        _require(
            isinstance(self.seed, int) and self.seed >= 0,
            f"TrainConfig.seed must be an integer >= 0, got {self.seed!r}.",
        )
        _require(
            isinstance(self.device, str)
            and (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")),
            f"TrainConfig.device={self.device!r} is unknown; use 'auto', 'cpu', 'cuda' or 'cuda:N'.",
        )
        _require(
            isinstance(self.select_metric, str) and self.select_metric != "",
            "TrainConfig.select_metric must name a key of the dict returned by evaluate, e.g. 'mAP@ALL'.",
        )
        _require(
            self.grad_clip_norm is None
            or (isinstance(self.grad_clip_norm, (int, float)) and self.grad_clip_norm > 0),
            f"TrainConfig.grad_clip_norm must be None or a number > 0, got {self.grad_clip_norm!r}.",
        )


@dataclass
class History:
    """Per-epoch record of a run.

    Attributes
    ----------
    rows : list of dict
        One dict per epoch: ``epoch`` (1-based), ``loss`` (sample-weighted mean
        training loss), ``lr`` (learning rate used during the epoch),
        ``seconds`` (training time) and, on evaluated epochs,
        ``eval_seconds`` and the scalar entries returned by ``evaluate``.
    best_epoch, best_metric : int or None, float or None
        The selected epoch and its ``select_metric`` (None without evaluate).
    select_metric : str or None
        The metric used for selection (None without evaluate).
    selected : {"best", "final"}
        Which weights ``fit`` left in the model.
    resumed_after : int
        Epochs an earlier process had completed when this one resumed from ``last.pt`` (0: trained in one go).
    resumed_seconds : float
        Wall-clock seconds the earlier processes spent in :func:`fit` up to that checkpoint (their epochs, evaluations,
        epoch hooks and checkpoint writes; 0.0 when not resumed). A resumed process's own clock covers only its part,
        so a run's ``train_seconds`` adds this (stages 0, 1 and 3). A checkpoint written before 2026-11-29 (format 1)
        holds no clock: its epochs' ``seconds`` and ``eval_seconds`` rows are summed instead (hooks not counted).
    precision : str or None
        The arithmetic every epoch trained in (``auto`` resolved: ``"bf16"``, ``"fp32"``, ``"fp16"``); a run resumes
        only in its own. None for a run resumed from a checkpoint written before 2026-12-01, which did not record its
        earlier epochs' (and for a history read from such a run's files).
    """

    rows: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int | None = None
    best_metric: float | None = None
    select_metric: str | None = None
    selected: str = "final"
    resumed_after: int = 0
    resumed_seconds: float = 0.0
    precision: str | None = None

    @classmethod
    def from_dict(cls, record: Mapping[str, Any]) -> History:
        """A history from :meth:`to_dict`'s form; a record of an older format lacks the later fields (their
        defaults are taken)."""
        names = {item.name for item in dataclasses.fields(cls)}
        unknown = sorted(set(record) - names)
        if unknown:
            raise ValueError(f"a training history with fields {unknown} was written by a newer version of shc; "
                             "upgrade shc (pip install -U shc) to read it.")
        return cls(**record)

    def __len__(self) -> int:
        return len(self.rows)

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python form (what ``history.json`` holds)."""
        return dataclasses.asdict(self)

    def to_frame(self):
        """The rows as a ``pandas.DataFrame`` indexed by epoch (requires pandas)."""
        import pandas as pd

        return pd.DataFrame(self.rows).set_index("epoch")

    @classmethod
    def load(cls, run_dir: str | os.PathLike) -> History:
        """Read ``run_dir/history.json`` written by :func:`fit`."""
        path = Path(run_dir) / "history.json"
        if not path.exists():
            raise FileNotFoundError(f"{path} does not exist: run fit(..., run_dir={str(run_dir)!r}) first.")
        return cls.from_dict(json.loads(path.read_text()))
