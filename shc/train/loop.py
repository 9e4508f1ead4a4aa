"""The training loop: :func:`fit` (the guarantees are in the docstring of :mod:`shc.train`).

On top of the training package: it builds on the config and history (:mod:`shc.train.config`), the
checkpoint files (:mod:`shc.train.checkpoint`) and the multi-process plumbing (:mod:`shc.train.distributed`).
"""

from __future__ import annotations

import math
import os
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from shc.devices import (
    _autocast,
    _derived_seed,
    _determinism,
    _generator,
    _move_inputs,
    _require,
    _to_float32,
    resolve_device,
    resolve_num_workers,
    resolve_precision,
    set_seed,
)
from shc.train.checkpoint import (
    CHECKPOINT_VERSION,
    _check_same_arithmetic,
    _check_same_run,
    _run_identity,
    _save_torch,
    _write_history,
    load_checkpoint,
)
from shc.train.config import _ROW_KEYS, SGD_MOMENTUM, History, TrainConfig
from shc.train.distributed import (
    _epoch_batches,
    _gather,
    _gather_rng,
    _process_group,
    _Ranks,
    _restore_rng,
)

__all__ = ["fit"]


class _LossMeter:
    """Sample-weighted mean of the step losses, with a finiteness check one step behind.

    Checking step ``k`` only after step ``k + 1`` has been queued keeps CUDA
    from idling on a host synchronisation every step.
    """

    def __init__(self, epoch: int) -> None:
        self.epoch = epoch
        self.total = 0.0
        self.count = 0
        self.last = float("nan")
        self._pending: tuple[int, torch.Tensor, int] | None = None

    def add(self, step: int, loss: torch.Tensor, batch_size: int) -> None:
        self._flush()
        self._pending = (step, loss, batch_size)

    def _flush(self) -> None:
        if self._pending is None:
            return
        step, loss, batch_size = self._pending
        self._pending = None
        value = loss.item()
        if not math.isfinite(value):
            raise FloatingPointError(
                f"Training loss is {value} at epoch {self.epoch}, step {step}. The run stopped; last.pt still holds "
                "the last completed epoch (resumed with the same settings, the run meets this step again). Lower the "
                "learning rate, set TrainConfig.grad_clip_norm, or use precision='fp32', and train again: a checkpoint "
                "resumes only under the settings that wrote it, so delete last.pt (or use another run_dir) first."
            )
        self.total += value * batch_size
        self.count += batch_size
        self.last = value

    def mean(self) -> float:
        self._flush()
        return self.total / max(self.count, 1)


def _build_optimizer(parameters: list[nn.Parameter], config: TrainConfig) -> torch.optim.Optimizer:
    if config.optimizer == "rmsprop":
        return torch.optim.RMSprop(parameters, lr=config.lr, weight_decay=config.weight_decay)
    if config.optimizer == "adam":
        return torch.optim.Adam(parameters, lr=config.lr, weight_decay=config.weight_decay)
    return torch.optim.SGD(parameters, lr=config.lr, momentum=SGD_MOMENTUM, weight_decay=config.weight_decay)


def _build_scheduler(optimizer: torch.optim.Optimizer, config: TrainConfig):
    if config.scheduler == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=config.epochs)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1.0)


def _resolve_num_workers(num_workers: int | None, device: torch.device, ranks: _Ranks, dataset: Dataset) -> int:
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", str(ranks.world_size)))
    return resolve_num_workers(num_workers, device, local_ranks, dataset)


def _scalar_metrics(metrics: Any, reserved: tuple[str, ...], source: str = "evaluate(model)") -> dict[str, float]:
    """The scalar entries of ``evaluate``'s dict as floats (curves and other arrays are not recorded)."""
    if not isinstance(metrics, Mapping):
        raise TypeError(f"{source} must return a dict of metrics, got {type(metrics).__name__}.")
    clashes = sorted(set(metrics) & set(reserved))
    if clashes:
        raise ValueError(f"{source} returned the reserved key(s) {clashes}; rename them there.")
    scalars = {}
    for key, value in metrics.items():
        if isinstance(value, (int, float, np.number)) or (
            isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 0
        ):
            scalars[str(key)] = float(value)
    return scalars


def _criterion_epoch_end(criterion: Callable, model: nn.Module, train_set: Dataset, epoch: int,
                         precision: str) -> dict[str, float]:
    """Call the criterion's epoch hook, if it has one, and return its scalars for the history row.

    The hook protocol: ``criterion.on_epoch_end(model, train_set, epoch[, precision]) -> dict of scalars or None``
    (``precision`` is passed by keyword where the hook takes it),
    called on every rank after each epoch's training steps, before the learning-rate step, the evaluation
    and the checkpoint (so the checkpoint holds what the hook changed). ``model`` is the bare network (not
    the DDP wrapper) in training mode; ``train_set`` is the dataset ``fit`` trains on, with its training transform
    (augmentation included); ``precision`` is the run's resolved arithmetic, for any inference the hook runs
    (:func:`shc.train.predict`). A loss uses it to
    change its targets between epochs (CRH's center reassignment, ``shc.losses.CRHLoss``). It must draw
    any randomness from its own seeded generators or the global ones, whose states ``last.pt`` saves
    after the hook, so that a resumed run stays bit-identical.
    """
    hook = getattr(criterion, "on_epoch_end", None)
    if hook is None:
        return {}
    import inspect

    parameters = inspect.signature(hook).parameters  # precision is optional: a hook of three arguments still works
    takes_precision = "precision" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    scalars = hook(model, train_set, epoch, precision=precision) if takes_precision else hook(model, train_set, epoch)
    return {} if scalars is None else _scalar_metrics(scalars, _ROW_KEYS, "criterion.on_epoch_end")


def _is_better(value: float, best: float | None, mode: str) -> bool:
    if math.isnan(value):
        return False
    if best is None:
        return True
    return value > best if mode == "max" else value < best


def _unpack_batch(batch: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    if not isinstance(batch, (tuple, list)) or len(batch) != 3:
        raise ValueError(
            "train_set items must be (input, label, index) triples; the index is the sample's position in the "
            "dataset (memory-bank losses use it). Wrap your dataset to return it."
        )
    return batch[0], batch[1], batch[2]


@dataclass
class _TrainingState:
    """Everything an epoch changes, apart from the random states and the history."""

    model: nn.Module
    criterion: nn.Module | None  # the criterion if it is a module (it may hold buffers such as memory banks)
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "criterion": self.criterion.state_dict() if self.criterion is not None else {},
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "scaler": self.scaler.state_dict(),
        }

    def load_state_dict(self, checkpoint: Mapping[str, Any]) -> None:
        self.model.load_state_dict(checkpoint["model"])
        if self.criterion is not None:
            self.criterion.load_state_dict(checkpoint["criterion"])
        self.optimizer.load_state_dict(checkpoint["optimizer"])
        self.scheduler.load_state_dict(checkpoint["scheduler"])
        self.scaler.load_state_dict(checkpoint["scaler"])


def _prepare(
    model: nn.Module, criterion: Callable, config: TrainConfig, device: torch.device, precision: str, ranks: _Ranks
) -> _TrainingState:
    """Move model and criterion to the device and build optimizer, scheduler and grad scaler."""
    model.to(device)
    if config.channels_last:
        model.to(memory_format=torch.channels_last)
    criterion_module = criterion if isinstance(criterion, nn.Module) else None
    criterion_parameters: list[nn.Parameter] = []
    if criterion_module is not None:
        criterion_module.to(device)
        criterion_parameters = [p for p in criterion_module.parameters() if p.requires_grad]
        if criterion_parameters and ranks.distributed:
            raise ValueError(
                "The criterion has trainable parameters, which DistributedDataParallel would not synchronise; "
                "move them into the model."
            )
    parameters = [p for p in model.parameters() if p.requires_grad] + criterion_parameters
    _require(len(parameters) > 0, "The model has no trainable parameters (all have requires_grad=False).")
    optimizer = _build_optimizer(parameters, config)
    return _TrainingState(
        model, criterion_module, optimizer, _build_scheduler(optimizer, config),
        torch.amp.GradScaler(device.type, enabled=precision == "fp16"),
    )


def _resume(state: _TrainingState, last_path: Path, identity: dict[str, Any], config: TrainConfig,
            ranks: _Ranks, device: torch.device, precision: str) -> tuple[int, History | None]:
    """Load ``last.pt`` if it exists (refusing another run's, or one that trained on another kind of ``device`` or in
    another arithmetic than ``precision``, the resolved one: ``auto`` is bf16 on one CPU and fp32 on another);
    returns (completed epochs, its history), the history saying how many epochs and seconds the earlier processes
    had spent (``resumed_after``, ``resumed_seconds``) and in which arithmetic (``precision``: None when the
    checkpoint did not record it)."""
    if not last_path.exists():
        return 0, None
    checkpoint = load_checkpoint(last_path)
    if "precision" in checkpoint:  # the arithmetic, resolved, is compared: "auto" and "bf16" may be the same one
        _check_same_arithmetic(checkpoint, device.type, precision, last_path)
        ignored = {"precision": None, "device": None}
        _check_same_run({**checkpoint["identity"], **ignored}, {**identity, **ignored}, last_path)
    else:  # written before 2026-12-01: the settings as configured; the arithmetic of its epochs is not known
        _check_same_run(checkpoint["identity"], identity, last_path)
    state.load_state_dict(checkpoint)  # the criterion: rank 0's (a single process's: its own)
    criteria = checkpoint.get("criteria")
    if ranks.distributed and state.criterion is not None and checkpoint["criterion"]:
        if criteria is not None and len(criteria) == ranks.world_size:
            state.criterion.load_state_dict(criteria[ranks.rank])  # each rank its own memory bank
        else:
            warnings.warn(f"{last_path} holds the criterion state (a memory bank) of rank 0 only, written before "
                          "2026-12-02 or by another number of ranks: every rank resumes with it, so the resume is "
                          "not bit-exact.", stacklevel=4)
    epoch, rng_states = checkpoint["epoch"], checkpoint["rng"]
    if len(rng_states) == ranks.world_size:
        _restore_rng(rng_states[ranks.rank])
    else:
        warnings.warn(
            f"{last_path} was written by {len(rng_states)} rank(s), this run has {ranks.world_size}: the random "
            "streams of augmentation/dropout restart from the seed, so the resume is not bit-exact.",
            stacklevel=4,
        )
        set_seed(_derived_seed(config.seed, epoch, ranks.rank) % 2**32)
    history = History.from_dict(checkpoint["history"])
    history.resumed_after = epoch
    history.precision = checkpoint.get("precision")  # None: the earlier epochs' arithmetic is not known
    if "elapsed_seconds" in checkpoint:
        history.resumed_seconds = float(checkpoint["elapsed_seconds"])
    else:  # format 1 kept no clock: its epochs' own rows (training and evaluation; hooks were not timed)
        history.resumed_seconds = float(sum(row["seconds"] + row.get("eval_seconds", 0.0) for row in history.rows))
    return epoch, history


def _pending(best_path: Path) -> Path:
    """Where an epoch's new best weights wait until the checkpoint that records the epoch is written."""
    return best_path.with_name("best.pending.pt")


def _settle_best(best_path: Path, history: History | None) -> None:
    """Make ``best.pt`` hold the weights of ``history.best_epoch``. An improving epoch writes its weights as
    :func:`_pending` before ``last.pt``; they become ``best.pt`` once ``last.pt`` records the epoch, and are dropped
    when it does not (the process died between the two writes; on resume the epoch trains again, and where the
    arithmetic is not deterministic it may not improve, so its weights would name an epoch that never happened)."""
    pending = _pending(best_path)
    if not pending.exists():
        return
    try:
        epoch = load_checkpoint(pending)["epoch"]
    except ValueError:  # written in part: its epoch's checkpoint cannot exist either
        epoch = None
    if history is not None and epoch is not None and history.best_epoch == epoch:
        os.replace(pending, best_path)
    else:
        pending.unlink()


def _selected_weights(best_path: Path, history: History) -> dict[str, Any]:
    """The weights of the selected epoch, from ``best.pt``. A missing or unreadable ``best.pt`` cannot be made again
    from ``last.pt`` (the last epoch's weights), so the fix is to train the run anew, not to delete ``best.pt`` alone:
    an audit found that advice looped (deleted, it was then reported as unreadable, with the same advice)."""
    if best_path.is_file():
        try:
            return load_checkpoint(best_path)["model"]
        except (ValueError, KeyError) as error:
            problem = f"cannot be read ({str(error).split('; delete')[0]})"
    else:
        problem = "is missing"
    raise ValueError(f"{best_path} {problem}: it held the weights of the selected epoch {history.best_epoch}, which "
                     f"last.pt (the last epoch's) cannot give back. Delete the folder {best_path.parent} to train the "
                     "run again from scratch, or put back a copy of its best.pt.")


def _evaluate_and_select(
    model: nn.Module, evaluate: Callable, epoch: int, row: dict[str, float], history: History,
    config: TrainConfig, best_path: Path,
) -> None:
    """Run ``evaluate`` (eval mode), add its scalars to ``row``, and on improvement write the weights as
    :func:`_pending`, which :func:`_settle_best` makes ``best.pt`` once the epoch's checkpoint is written."""
    started = time.perf_counter()
    model.eval()
    metrics = _scalar_metrics(evaluate(model), _ROW_KEYS)
    model.train()
    row["eval_seconds"] = time.perf_counter() - started
    row.update(metrics)
    if config.select_metric not in metrics:
        raise KeyError(
            f"evaluate(model) returned {sorted(metrics)} but TrainConfig.select_metric is "
            f"{config.select_metric!r}; set select_metric to one of those keys."
        )
    if _is_better(metrics[config.select_metric], history.best_metric, config.select_mode):
        history.best_epoch, history.best_metric = epoch, metrics[config.select_metric]
        _save_torch({"model": model.state_dict(), "epoch": epoch, "metric": history.best_metric}, _pending(best_path))


def fit(
    model: nn.Module,
    criterion: Callable[[Any, torch.Tensor, torch.Tensor], torch.Tensor],
    train_set: Dataset,
    config: TrainConfig,
    run_dir: str | os.PathLike,
    evaluate: Callable[[nn.Module], Mapping[str, Any]] | None = None,
    progress: bool = True,
) -> History:
    """Train ``model`` with ``criterion`` on ``train_set``; resume from ``run_dir`` if it holds a run.

    Parameters
    ----------
    model : nn.Module
        Trained in place (moved to the device, channels-last if configured).
        On return it holds the selected weights (best validation epoch, or
        the final epoch without ``evaluate``) and is in eval mode.
    criterion : callable
        ``criterion(outputs, labels, indices) -> scalar tensor``, a mean over
        the batch (e.g. ``shc.losses.CenterLoss``, paper Eq. 41-43). Runs in
        float32 outside autocast. If it is an ``nn.Module`` it is moved to the
        device, its trainable parameters (if any) are optimised with the
        model's, and its state (buffers and ``get_extra_state``) is
        checkpointed. A criterion with ``on_epoch_end(model, train_set,
        epoch, precision)`` has it called after every epoch (it may change its targets;
        the scalars it returns join the history row): see
        ``_criterion_epoch_end``.
    train_set : Dataset
        Items ``(input, label, index)``; random augmentation belongs in its
        transform.
    config : TrainConfig
        Hyper-parameters; must match the checkpoint in ``run_dir`` if any.
    run_dir : path
        Directory for ``last.pt``, ``best.pt``, ``history.csv``/``.json``.
    evaluate : callable, optional
        ``evaluate(model) -> dict`` on the *validation* split (called with the
        bare model in eval mode on rank 0, every ``config.eval_every`` epochs
        and after the last); must contain ``config.select_metric``.
    progress : bool
        Show tqdm progress bars (rank 0 only).

    Returns
    -------
    History
        Per-epoch rows and the selected epoch; also in ``run_dir/history.*``.

    Notes
    -----
    Seeds python's, numpy's and torch's global generators with
    ``config.seed`` (plus the rank) before training, or restores them from
    ``last.pt`` when resuming. A process group that ``fit`` creates from
    torchrun's environment gets a timeout of ``DDP_TIMEOUT`` (2 h) and is
    destroyed on return.

    Raises
    ------
    FloatingPointError
        If a loss is NaN or infinite (names epoch and step; ``last.pt`` keeps
        the last good epoch).
    ValueError
        If ``run_dir`` holds a checkpoint of a different configuration.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}.")
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a shc.train.TrainConfig, got {type(config).__name__}.")
    num_samples = len(train_set)
    _require(num_samples > 0, "train_set is empty; nothing to train on.")
    with _process_group(config.device) as ranks:
        device = resolve_device(config.device, ranks.local_rank)
        if device.type == "cuda":
            torch.cuda.set_device(device)
        with _determinism(config.deterministic, device):
            return _fit(model, criterion, train_set, config, Path(run_dir), evaluate, progress, ranks, device)


def _fit(
    model: nn.Module,
    criterion: Callable,
    train_set: Dataset,
    config: TrainConfig,
    run_dir: Path,
    evaluate: Callable | None,
    progress: bool,
    ranks: _Ranks,
    device: torch.device,
) -> History:
    precision = resolve_precision(config.precision, device)
    show = progress and ranks.is_main
    identity = _run_identity(config, len(train_set))
    last_path, best_path = run_dir / "last.pt", run_dir / "best.pt"
    if ranks.is_main:
        run_dir.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()  # this process's share of the run's clock (the checkpoint keeps the sum)
    set_seed(config.seed + ranks.rank)
    state = _prepare(model, criterion, config, device, precision, ranks)
    start_epoch, history = _resume(state, last_path, identity, config, ranks, device, precision)
    if ranks.is_main:
        _settle_best(best_path, history)  # weights of an epoch whose checkpoint was never written are dropped
    if history is None:
        history = History(precision=precision)
    if evaluate is not None:
        history.select_metric = config.select_metric

    trained = model
    if ranks.distributed:
        device_ids = [device.index] if device.type == "cuda" else None
        trained = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
    num_workers = _resolve_num_workers(config.num_workers, device, ranks, train_set)

    for epoch in range(start_epoch + 1, config.epochs + 1):
        row = _train_epoch(
            trained, criterion, state, train_set, config, epoch, ranks, device, precision, num_workers, show
        )
        row.update(_criterion_epoch_end(criterion, model, train_set, epoch, precision))
        state.scheduler.step()
        if evaluate is not None and ranks.is_main and config.evaluates(epoch):
            _evaluate_and_select(model, evaluate, epoch, row, history, config, best_path)
        history.rows.append(row)
        rng_states = _gather_rng(ranks)  # collective: every rank's state goes into rank 0's checkpoint
        # and so does every rank's criterion state under DDP (a memory bank holds that rank's own samples)
        criteria = _gather(ranks, state.criterion.state_dict()) if ranks.distributed and state.criterion is not None \
            else None
        if ranks.is_main:
            checkpoint = {"version": CHECKPOINT_VERSION, "identity": identity, "device": device.type,
                          "precision": precision, "epoch": epoch,
                          **state.state_dict(), **({"criteria": criteria} if criteria is not None else {}),
                          "history": history.to_dict(), "rng": rng_states,
                          "elapsed_seconds": history.resumed_seconds + time.perf_counter() - started}
            _save_torch(checkpoint, last_path)
            _settle_best(best_path, history)
            _write_history(history, run_dir)
            if show:
                summary = ", ".join(f"{key}={value:.4g}" for key, value in row.items() if key != "epoch")
                tqdm.write(f"epoch {epoch}/{config.epochs}: {summary}")

    if ranks.distributed:  # only rank 0 evaluated: share its history (and so the selection); best.pt is written
        shared = [history]
        dist.broadcast_object_list(shared, src=0)
        history = shared[0]
    if evaluate is not None and history.best_epoch is not None:
        model.load_state_dict(_selected_weights(best_path, history))
        history.selected = "best"
    else:
        history.selected = "final"
    if ranks.is_main:
        _write_history(history, run_dir)
    model.eval()
    return history


def _train_step(
    trained: nn.Module,
    criterion: Callable,
    optimizer: torch.optim.Optimizer,
    scaler: torch.amp.GradScaler,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    indices: torch.Tensor,
    weight: float,
    device: torch.device,
    precision: str,
    channels_last: bool,
    grad_clip_norm: float | None,
) -> torch.Tensor:
    """Forward (autocast), float32 loss, backward, step. Returns the detached, unweighted loss.

    ``weight`` multiplies the loss before backward: under DDP it is
    ``world_size * local_share`` so that DDP's average over ranks is the
    gradient of the global batch mean.
    """
    inputs = _move_inputs(inputs, device, channels_last)
    labels = labels.to(device, non_blocking=True)
    indices = indices.to(device, non_blocking=True)
    with _autocast(device, precision):
        outputs = trained(inputs)
    loss = criterion(_to_float32(outputs), labels, indices)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss * weight if weight != 1.0 else loss).backward()
    if grad_clip_norm is not None:
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_([p for group in optimizer.param_groups for p in group["params"]], grad_clip_norm)
    scaler.step(optimizer)
    scaler.update()
    return loss.detach()


def _train_epoch(
    trained: nn.Module,
    criterion: Callable,
    state: _TrainingState,
    train_set: Dataset,
    config: TrainConfig,
    epoch: int,
    ranks: _Ranks,
    device: torch.device,
    precision: str,
    num_workers: int,
    show: bool,
) -> dict[str, float]:
    """One pass over this epoch's batches; returns the history row (epoch, loss, lr, seconds)."""
    batches = _epoch_batches(len(train_set), config, epoch, ranks)
    _require(
        len(batches) > 0,
        f"No batch to train on: {len(train_set)} samples, batch_size={config.batch_size}, "
        f"drop_last={config.drop_last}. "
        + ("Lower batch_size or set drop_last=False." if config.drop_last else
           f"BatchNorm needs at least {max(2, ranks.world_size)} samples; give more training samples."),
    )
    loader = DataLoader(
        train_set,
        batch_sampler=[indices for indices, _ in batches],
        num_workers=num_workers,
        pin_memory=device.type == "cuda",
        generator=_generator(_derived_seed(config.seed, epoch, 1 + ranks.rank)),  # worker seeds only
    )
    lr = state.optimizer.param_groups[0]["lr"]
    meter = _LossMeter(epoch)
    trained.train()
    started = time.perf_counter()
    with tqdm(loader, desc=f"epoch {epoch}/{config.epochs}", disable=not show, leave=False) as bar:
        for step, (batch, (indices, global_size)) in enumerate(zip(bar, batches), start=1):
            inputs, labels, sample_indices = _unpack_batch(batch)
            share = len(indices) / global_size  # this rank's fraction of the global batch
            batch_loss = _train_step(
                trained, criterion, state.optimizer, state.scaler, inputs, labels, sample_indices,
                weight=share * ranks.world_size, device=device, precision=precision,
                channels_last=config.channels_last, grad_clip_norm=config.grad_clip_norm,
            )
            if ranks.distributed:
                batch_loss = batch_loss * share
                dist.all_reduce(batch_loss)
            meter.add(step, batch_loss, global_size)
            if show and step % 10 == 0:
                bar.set_postfix(loss=f"{meter.last:.4g}", refresh=False)
        mean_loss = meter.mean()
    return {"epoch": epoch, "loss": mean_loss, "lr": lr, "seconds": time.perf_counter() - started}
