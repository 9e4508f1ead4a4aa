"""Multi-process training plumbing: the ranks of a torchrun job, its process group, each rank's share of
a global batch, and the random states gathered for exact resume."""

from __future__ import annotations

import contextlib
import datetime
import os
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.distributed as dist

from shc.devices import _derived_seed, _generator

if TYPE_CHECKING:
    from shc.train.config import TrainConfig


# the other ranks wait in a collective while rank 0 runs evaluate (fit) or computes stage 2 and writes (shc.pipeline);
# torch's defaults (10 minutes for NCCL, 30 for gloo) would end a long one
DDP_TIMEOUT = datetime.timedelta(hours=2)


@dataclass(frozen=True)
class _Ranks:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


@contextlib.contextmanager
def _process_group(device: str) -> Iterator[_Ranks]:
    """Join the DDP process group: an existing one, or one described by torchrun's env vars (``fit``, and
    ``python -m shc.pipeline`` under torchrun around its whole grid; the timeout is ``DDP_TIMEOUT``).

    A group created here is destroyed on exit: on a normal exit once every rank has got there
    (:func:`_leave_process_group`), on an exception at once.
    """
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if dist.is_available() and dist.is_initialized():
        yield _Ranks(dist.get_rank(), dist.get_world_size(), local_rank)
        return
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        yield _Ranks()
        return
    if not dist.is_available():
        raise RuntimeError(f"WORLD_SIZE={world_size} asks for distributed training but torch.distributed is unavailable.")
    use_cuda = device != "cpu" and torch.cuda.is_available()
    dist.init_process_group(backend="nccl" if use_cuda else "gloo", timeout=DDP_TIMEOUT)
    try:
        yield _Ranks(dist.get_rank(), dist.get_world_size(), local_rank)
    except BaseException:
        dist.destroy_process_group()  # no barrier: the other ranks may never reach one
        raise
    _leave_process_group()


def _leave_process_group() -> None:
    """Destroy the process group once every rank has got here, so that no rank tears its connections down
    while another may still be sending or receiving. Only the normal exit waits; a rank that raised must
    not, as the others may never get here.

    Known, not understood: rarely, one rank of a two-rank gloo job on CPU aborts inside torch
    (``terminate called without an active exception``) while the other is still alive. It was seen once in
    CI before this barrier existed and once in about 700 local torchrun launches after, so the barrier
    does not prevent it (docs/architecture.md).
    """
    try:
        dist.barrier()  # if another rank raised meanwhile, its leaving breaks this barrier at once (tested)
    finally:
        dist.destroy_process_group()


def _epoch_batches(
    num_samples: int, config: TrainConfig, epoch: int, ranks: _Ranks
) -> list[tuple[list[int], int]]:
    """This rank's share of every global batch of ``epoch`` (1-based), with the global batch size.

    The permutation depends only on ``(seed, epoch)``, never on the rank or
    the world size, so every run of the same config sees the same global
    batches; each is cut into ``world_size`` contiguous, near-equal shares.
    Without ``drop_last`` a trailing batch of one sample is dropped
    (BatchNorm cannot normalise one sample in training mode, and every
    backbone has it), and under DDP one smaller than ``world_size`` (some
    rank would get no sample), so that a world of two trains the batches of
    a single process.
    """
    order = torch.randperm(num_samples, generator=_generator(_derived_seed(config.seed, epoch)))
    global_batches = list(order.split(config.batch_size))
    minimum = config.batch_size if config.drop_last else max(2, ranks.world_size)
    global_batches = [batch for batch in global_batches if len(batch) >= minimum]
    return [(torch.tensor_split(batch, ranks.world_size)[ranks.rank].tolist(), len(batch)) for batch in global_batches]


def _capture_rng() -> dict[str, Any]:
    numpy_state = np.random.get_state(legacy=False)
    return {
        "python": random.getstate(),
        "numpy": {
            "bit_generator": numpy_state["bit_generator"],
            "key": torch.from_numpy(numpy_state["state"]["key"].astype(np.int64)),
            "pos": int(numpy_state["state"]["pos"]),
            "has_gauss": int(numpy_state["has_gauss"]),
            "gauss": float(numpy_state["gauss"]),
        },
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state() if torch.cuda.is_available() and torch.cuda.is_initialized() else None,
    }


def _restore_rng(state: Mapping[str, Any]) -> None:
    random.setstate(state["python"])
    numpy_state = state["numpy"]
    np.random.set_state(
        {
            "bit_generator": numpy_state["bit_generator"],
            "state": {"key": numpy_state["key"].numpy().astype(np.uint32), "pos": numpy_state["pos"]},
            "has_gauss": numpy_state["has_gauss"],
            "gauss": numpy_state["gauss"],
        }
    )
    torch.set_rng_state(state["torch"])
    if state["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state(state["cuda"])


def _gather_rng(ranks: _Ranks) -> list[dict[str, Any]]:
    """Every rank's random state, in rank order (a collective call under DDP)."""
    return _gather(ranks, _capture_rng())


def _gather(ranks: _Ranks, state: dict[str, Any]) -> list[dict[str, Any]]:
    """Every rank's ``state`` (its tensors moved to the CPU), in rank order (a collective call under DDP)."""
    if not ranks.distributed:
        return [state]
    local = {key: value.detach().cpu() if torch.is_tensor(value) else value for key, value in state.items()}
    states: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(states, local)
    return states
