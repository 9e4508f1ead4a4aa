"""Where and how tensors are computed: seeding, device and precision resolution, autocast, channels-last
inputs, derived seeds and determinism. Used by training and inference alike (one device policy)."""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import torch

PRECISIONS = ("auto", "fp32", "bf16", "fp16")


_AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def set_seed(seed: int) -> None:
    """Seed python's ``random``, numpy's global generator and torch (CPU and CUDA)."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def resolve_device(device: str | torch.device = "auto", local_rank: int = 0) -> torch.device:
    """Turn ``"auto"``/``"cuda"``/``"cpu"``/``"cuda:N"`` into a concrete ``torch.device``.

    ``"auto"`` and ``"cuda"`` pick ``cuda:local_rank`` (one GPU per DDP rank).
    """
    from shc.validation import device_name

    if isinstance(device, torch.device):
        return device
    device = device_name(device)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise RuntimeError(f"device={device!r} was requested but CUDA is not available; use device='cpu' or 'auto'.")
    count = torch.cuda.device_count()
    if device == "cuda":
        return torch.device("cuda", local_rank % count)
    chosen = torch.device(device)
    if chosen.index is not None and chosen.index >= count:
        raise RuntimeError(f"device={device!r} was requested but this machine has {count} GPU(s): use one of "
                           f"{', '.join(f'cuda:{index}' for index in range(count))}, 'cuda' or 'auto'.")
    return chosen


def describe_device(device: torch.device) -> str:
    """What a run records as its device (``metrics.json``'s ``device``): ``"cpu"``, or ``"cuda (<GPU name>)"``.
    Runs are not bit-identical across devices (other kernels; ``auto`` precision differs), so a grid's tables say
    when their runs come from more than one (docs/gpu.md)."""
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return device.type


def resolve_num_workers(num_workers: int | None, device: torch.device, local_ranks: int | None = None,
                        dataset: Any = None) -> int:
    """DataLoader workers: ``num_workers`` when given; else 0 on a CPU, and 0 for a ``dataset`` whose batches
    are one vectorised call on held pixels (``dataset.batched``: the composites), where worker processes only
    add their start-up and copies (on an H100, 10 steps of the standard preset: 0.07 s in-process against
    0.29 s with 8 workers, docs/gpu.md); else, on a GPU, the cores left to each of the ``local_ranks``
    processes of this machine after its own (at least 1, at most 8), so that decoding and resizing images per
    item keeps up with the device (``local_ranks`` None: torchrun's ``LOCAL_WORLD_SIZE``, else 1). Training and
    :func:`shc.train.predict` share this rule."""
    if num_workers is not None:
        return num_workers
    if device.type == "cpu" or getattr(dataset, "batched", False):
        return 0
    if local_ranks is None:
        local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    return min(8, max(1, (os.cpu_count() or 1) // max(1, local_ranks) - 1))


def _cpu_has_native_bf16() -> bool:
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def resolve_precision(precision: str, device: torch.device) -> str:
    """Resolve ``"auto"`` to ``"fp16"`` (CUDA), ``"bf16"`` (CPU with native bf16) or ``"fp32"``."""
    _require(precision in PRECISIONS, f"precision={precision!r} is unknown; use one of {PRECISIONS}.")
    if precision != "auto":
        if precision == "fp16" and device.type == "cpu":
            raise ValueError("precision='fp16' needs CUDA; on a CPU use 'bf16' or 'fp32' (or 'auto').")
        return precision
    if device.type == "cuda":
        return "fp16"
    return "bf16" if _cpu_has_native_bf16() else "fp32"


def _autocast(device: torch.device, precision: str) -> contextlib.AbstractContextManager:
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=_AUTOCAST_DTYPES[precision])


def _to_float32(outputs: Any) -> Any:
    """Cast the floating tensors in (nested) outputs to float32, so the loss runs in fp32."""
    if isinstance(outputs, torch.Tensor):
        return outputs.float() if outputs.is_floating_point() else outputs
    if isinstance(outputs, Mapping):
        return type(outputs)({key: _to_float32(value) for key, value in outputs.items()})
    if isinstance(outputs, (tuple, list)):
        return type(outputs)(_to_float32(value) for value in outputs)
    return outputs


def _move_inputs(inputs: torch.Tensor, device: torch.device, channels_last: bool) -> torch.Tensor:
    inputs = inputs.to(device, non_blocking=True)
    if channels_last and inputs.dim() == 4:
        inputs = inputs.contiguous(memory_format=torch.channels_last)
    return inputs


def _derived_seed(*entropy: int) -> int:
    """An independent 63-bit seed for the stream named by ``entropy`` (numpy's SeedSequence)."""
    state = np.random.SeedSequence(list(entropy)).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@contextlib.contextmanager
def _determinism(enabled: bool, device: torch.device) -> Iterator[None]:
    """Set deterministic algorithms / cuDNN autotuning for the duration of ``fit``."""
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.backends.cudnn.benchmark,
        torch.backends.cudnn.deterministic,
    )
    if enabled and device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # effective before cuBLAS starts
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    torch.backends.cudnn.benchmark = not enabled
    torch.backends.cudnn.deterministic = enabled
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = saved[2:]
