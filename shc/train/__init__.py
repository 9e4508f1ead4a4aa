"""The single training loop every method plugs into, and the one inference path.

``fit(model, criterion, train_set, config, run_dir, evaluate)`` trains any
``nn.Module`` with any loss of the interface ``criterion(outputs, labels,
indices) -> scalar`` on any dataset whose items are ``(input, label, index)``.
It is the same loop for the stage-1 classifier (cross-entropy) and the stage-3
hashing network (``L = L_C + gamma L_Q``, paper Eq. 41-43) and for every
baseline.

What it guarantees:

- **Paper defaults.** RMSprop, cosine-annealed learning rate, batch 64,
  300 epochs, lr 1e-4 (the paper uses 7e-5 for CIFAR-100; Sec. "Experimental
  Settings"). The cosine schedule is ``CosineAnnealingLR(T_max=epochs)``
  stepped once per *epoch*, exactly as the PyTorch scheduler the paper links to
  is normally used.
- **Model selection on the validation split.** ``evaluate(model)`` returns a
  dict of metrics (e.g. validation mAP); the best epoch by
  ``config.select_metric`` is kept in ``run_dir/best.pt`` and loaded back into
  the model at the end. The query set is never looked at.
- **Exact resume.** ``run_dir/last.pt`` is written atomically after every
  epoch with the model, optimizer, scheduler, grad-scaler, history and every
  random state (python, numpy, torch, CUDA; per rank under DDP). The shuffle of
  epoch ``e`` is drawn from a generator seeded by ``(seed, e)`` (so the loader
  generator needs no saving), and DataLoader worker seeds likewise. Calling
  ``fit`` again on the same ``run_dir`` after an interruption gives
  bit-identical weights to an uninterrupted run; a checkpoint written with a
  different configuration is refused.
- **NaN/inf stops the run** with a ``FloatingPointError`` naming the epoch and
  step; ``last.pt`` still holds the last good epoch. (The loss of step ``k`` is
  checked after step ``k + 1`` has been queued, so that CUDA never waits on a
  host sync; the in-memory model is left in its failed state.)
- **Speed.** bf16 autocast on CPUs with native bf16 (AVX512-BF16/AMX), fp16
  autocast with a ``GradScaler`` on CUDA, channels-last inputs and weights for
  4-D images. The loss is always computed in float32 on the network's outputs.
  A dataset that defines ``__getitems__(indices)`` is fetched a whole batch at a
  time (PyTorch's DataLoader calls it), the fast path for in-memory data.
- **Multi-GPU / multi-process** through ``torchrun``::

      torchrun --nproc_per_node=4 your_script.py   # your_script calls shc.train.fit

  ``fit`` initialises the process group from torchrun's environment (NCCL on
  CUDA, gloo on CPU) unless one is already initialised, wraps the model in
  ``DistributedDataParallel`` and splits every *global* batch of
  ``batch_size`` samples across the ranks. Each rank's loss is weighted by its
  share of the batch, so the averaged gradient equals the single-process
  gradient of the batch mean whatever the split. Only rank 0 writes files and
  shows progress. Caveats: BatchNorm statistics are per rank (each sees
  ``batch_size / world_size`` samples); pairwise/listwise losses only see
  pairs within their rank's share of the batch; a loss with a memory bank
  updates each rank's copy with that rank's samples only.

Files in ``run_dir``: ``last.pt``, ``best.pt`` (when ``evaluate`` is given),
``history.csv`` and ``history.json``. Checkpoints hold only tensors and plain
Python values, so they load with ``torch.load(..., weights_only=True)``.

Modules, each importing only those listed before it (and :mod:`shc.devices` below them all):
``config`` (:class:`TrainConfig`, :class:`History`), ``checkpoint`` (the files of a run),
``distributed`` (ranks, process group, batch shares, random states), ``loop`` (:func:`fit`) and
``inference`` (:func:`predict`). This package re-exports their public names; a module of the package
imports its siblings, never the package.
"""

from shc.devices import resolve_device, resolve_precision, set_seed
from shc.train.config import History, TrainConfig
from shc.train.inference import predict
from shc.train.loop import fit

__all__ = [
    "History",
    "TrainConfig",
    "fit",
    "predict",
    "resolve_device",
    "resolve_precision",
    "set_seed",
]
