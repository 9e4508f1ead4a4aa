"""The one inference path: :func:`predict` (stage-1 logits, stage-3 codes, the retrieval encoder)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset
from tqdm import tqdm

from shc.devices import (_autocast, _generator, _move_inputs, _require, resolve_device, resolve_num_workers,
                         resolve_precision)

__all__ = ["predict"]


@torch.no_grad()
def predict(
    model: nn.Module,
    dataset: Dataset,
    batch_size: int = 256,
    device: str | torch.device | None = None,
    precision: str = "auto",
    channels_last: bool = True,
    num_workers: int | None = None,
    progress: bool = False,
) -> torch.Tensor:
    """The model's outputs over ``dataset``, in dataset order (eval mode, no grad).

    Used to compute hash-layer outputs u (take ``sign`` for codes) or logits.
    Pass a split with its *evaluation* transform (no augmentation) for codes
    and logits that do not change between calls. The model's train/eval mode is
    restored afterwards; ``predict`` itself draws no random number (a split
    with an augmenting transform does, from the global random state).

    Parameters
    ----------
    model : nn.Module
        Network whose ``forward`` returns a tensor.
    dataset : Dataset
        Items ``(input, ...)``; only the input is used.
    batch_size : int
        Inference batch size.
    device : str, torch.device or None
        ``None``: the device of the model's first parameter.
    precision : {"auto", "fp32", "bf16", "fp16"}
        Autocast precision (see :func:`resolve_precision`); outputs are
        returned in float32 either way.
    channels_last : bool
        Feed 4-D inputs in channels-last memory format.
    num_workers : int or None
        DataLoader workers; ``None`` (default): :func:`shc.devices.resolve_num_workers`, 0 on a CPU or for a
        batched in-memory split, else several on a GPU, where one process cannot decode and resize images as
        fast as the GPU encodes them (docs/gpu.md: with 0 workers, validation of a ResNet34 at 224x224 ran at
        746 images/s on an H100; with 8, at 2,660 to 2,965).
    progress : bool
        Show a tqdm bar.

    Returns
    -------
    torch.Tensor
        ``(len(dataset), ...)`` float32 outputs on the CPU.
    """
    _require(isinstance(batch_size, int) and batch_size >= 1, f"batch_size must be a positive integer, got {batch_size!r}.")
    _require(len(dataset) > 0, "dataset is empty; nothing to predict.")
    if device is None:
        first = next(model.parameters(), None)
        device = first.device if first is not None else torch.device("cpu")
    device = resolve_device(device)
    precision = resolve_precision(precision, device)
    _require(num_workers is None or (isinstance(num_workers, int) and num_workers >= 0),
             f"num_workers must be None (automatic) or an integer >= 0, got {num_workers!r}.")
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=resolve_num_workers(num_workers, device, dataset=dataset),
        pin_memory=device.type == "cuda",
        generator=_generator(0),  # keeps the global random state untouched
    )
    was_training = model.training
    model.eval()
    outputs = []
    try:
        for batch in tqdm(loader, desc="predict", disable=not progress, leave=False):
            inputs = batch[0] if isinstance(batch, (tuple, list)) else batch
            with _autocast(device, precision):
                result = model(_move_inputs(inputs, device, channels_last))
            if not isinstance(result, torch.Tensor):
                raise TypeError(f"predict needs a model whose forward returns a tensor, got {type(result).__name__}.")
            outputs.append(result.float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(outputs)
