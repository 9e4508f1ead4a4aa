"""The :class:`Stage`: what every stage of a run shares (identity, folder, lock, cache, load, compute, save).

A stage is built from one :class:`~shc.runs.RunConfig` and answers everything about its part of the run, so the
config enters this module once per stage:

- its **identity** (:attr:`Stage.identity`): the config fields it depends on (:meth:`Stage.own_identity`) and,
  nested under their names, the identities of the parents it reads (:meth:`Stage.reads`);
- its **folder** (:attr:`Stage.directory`): ``<run_dir>/<dataset>/seed<k>/<label>-<key>``, ``<key>`` 8 hex digits
  of a hash of the identity (:func:`identity_key`), which ``config.json`` records;
- its **lock** (:meth:`Stage.lock`): a second process computing the same folder is refused with a message;
- whether it is **cached** (:meth:`Stage.cached`): its completing file is there under its identity and every file
  it holds parses; a finished folder whose files do not parse is moved aside and recomputed (:meth:`Stage.set_aside`);
- :meth:`Stage.load` of its artifacts, :meth:`Stage.compute` and :meth:`Stage.save` (every file atomically,
  through :mod:`shc._io`, with its provenance: the identity in ``config.json``, seconds and threads in its record).

:meth:`Stage.run` is the one "look up, lock, compute, write atomically" of every stage: cached, it loads;
otherwise it runs the parents it reads, opens its folder (recording the identity, holding the lock, computing with
:data:`~shc.runs.STAGE_THREADS` threads), computes, saves on rank 0 and loads. Under torchrun a training stage
computes on every rank (DDP) and the others on rank 0 alone; rank 0 decides what is cached and writes every file
while the other ranks wait at a barrier.

The stages themselves are :mod:`shc.stages.definitions`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from shc._io import atomic_path, exclusive_lock, jsonable, write_json
from shc.executors import fixed_threads
from shc.runs import STAGE_THREADS

__all__ = ["Stage", "identity_key", "is_main", "read_identity", "require_validation"]

Check = Callable[[Path], None]
"""A check that a file parses: raises any exception when it does not."""

#: A stage folder's record of what its result depends on beyond its identity (:meth:`Stage.settings`).
SETTINGS_FILE = "settings.json"


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes, read in 1 MiB blocks (a ResNet's weights are about 90 MB)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------
# Identities
# --------------------------------------------------------------------------------------------
def identity_key(identity: Mapping[str, Any]) -> str:
    """A short, stable hash of an identity (8 hex digits of SHA-256 over its canonical JSON)."""
    text = json.dumps(jsonable(identity), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def read_identity(directory: Path) -> Any:
    """The identity recorded in ``directory/config.json``, or None when it is missing or unreadable."""
    try:
        return json.loads((directory / "config.json").read_text())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------------------------
# Ranks (torchrun): rank 0 decides what is cached and writes every file
# --------------------------------------------------------------------------------------------
def distributed() -> tuple[int, int]:
    """(rank, world size) of this process: (0, 1) outside torchrun."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def barrier() -> None:
    """Wait for every rank (nothing outside torchrun)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def is_main() -> bool:
    """Whether this process is rank 0 (the one that writes)."""
    return distributed()[0] == 0


def agreed(flag: bool) -> bool:
    """Rank 0's ``flag`` on every rank (itself outside torchrun)."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return flag
    shared = [flag]
    dist.broadcast_object_list(shared, src=0)
    return bool(shared[0])


def threads() -> int:
    """torch's thread count here: each stage records it (CPU results depend on it through the summation order)."""
    import torch

    return torch.get_num_threads()


# --------------------------------------------------------------------------------------------
# File checks: what a finished stage holds must parse
# --------------------------------------------------------------------------------------------
def json_object(*required: str) -> Check:
    """A check that a file holds a JSON object with the ``required`` fields."""
    def check(path: Path) -> None:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
        missing = [key for key in required if key not in record]
        if missing:
            raise ValueError(f"lacks {', '.join(missing)}")
    return check


def json_file(path: Path) -> None:
    json.loads(path.read_text())


def array_file(path: Path) -> None:
    np.load(path, mmap_mode="r")  # the header and the size the header promises; the values are not read


def archive_file(path: Path) -> None:
    with np.load(path) as archive:
        for key in archive.files:
            archive[key]  # noqa: B018 - each member is read: a cut member fails here


def torch_file(path: Path) -> None:
    import zipfile

    with zipfile.ZipFile(path) as archive:  # torch's format is a zip: a cut file has no central directory
        archive.namelist()


def load_array(path: Path) -> np.ndarray:
    """A ``.npy`` artifact, or a ValueError that names the damaged file and the fix."""
    try:
        return np.load(path)
    except (OSError, ValueError, EOFError) as error:
        raise ValueError(f"{path} is damaged ({error}); delete it and rerun to recompute it.") from None


# --------------------------------------------------------------------------------------------
# The Stage
# --------------------------------------------------------------------------------------------
class Stage:
    """One stage of one run (see the module docstring). A subclass declares:

    - ``name`` (``"stage1"``: the key of its identity inside its children's, and of :data:`STAGES`),
    - ``parents``: the stage classes it may read (those of them that :meth:`reads` returns are run first and
      their identities nested into this one's),
    - ``files``: what a finished folder holds, each with the check that it parses; ``complete``, the one whose
      presence marks the stage finished (written last),
    - ``training``: the training run inside the folder that a recomputation resumes from (None: none),
    - ``schedule``: the config field of that training's epochs, where the identity leaves out ``eval_every``
      (which fixes the epochs it evaluates and selects): a finished folder evaluated at other epochs is refused
      (:meth:`check_schedule`; None: not checked),
    - ``trains``: whether :meth:`compute` runs on every rank under torchrun (DDP) or on rank 0 alone,

    and implements :meth:`own_identity`, :meth:`label`, :meth:`compute`, :meth:`save` and :meth:`load`.
    """

    name: ClassVar[str]
    parents: ClassVar[tuple[type[Stage], ...]] = ()
    files: ClassVar[tuple[tuple[str, Check], ...]] = ()
    complete: ClassVar[str]
    training: ClassVar[str | None] = None
    schedule: ClassVar[str | None] = None
    trains: ClassVar[bool] = False

    def __init__(self, config: Any) -> None:
        self.config = config

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config.method}, {self.config.bits} bits, seed {self.config.seed})"

    # ---- identity and folder -------------------------------------------------------------
    def own_identity(self) -> dict[str, Any] | None:
        """The config fields this stage's output depends on; None when the run has no such stage."""
        raise NotImplementedError

    def label(self) -> str:
        """The folder's name before its key (``stage2-shc-32bit``)."""
        raise NotImplementedError

    def applies(self) -> bool:
        """Whether the run of this config needs the stage (the pipeline and the grids run only those); cheap (no
        data is read). A stage that applies to some runs only overrides it, and its :meth:`own_identity` is None
        where it does not."""
        return True

    def reads(self) -> tuple[type[Stage], ...]:
        """The parents whose output this stage reads (and whose identities are nested into its own)."""
        return tuple(parent for parent in self.parents if parent(self.config).applies())

    @cached_property
    def identity(self) -> dict[str, Any] | None:
        """Own fields, then each parent read under its name; None when the run has no such stage."""
        own = self.own_identity()
        if own is None:
            return None
        return {**own, **{parent.name: parent(self.config).identity for parent in self.reads()}}

    @cached_property
    def directory(self) -> Path:
        config = self.config
        return (Path(config.run_dir) / config.dataset / f"seed{config.seed}"
                / f"{self.label()}-{identity_key(self.identity or {})}")

    def recorded(self, directory: Path | None = None) -> bool:
        """Whether ``config.json`` of the folder records this stage's identity."""
        return read_identity(directory or self.directory) == jsonable(self.identity)

    # ---- lock and cache ------------------------------------------------------------------
    def lock(self):
        """The folder's lock: a second process computing it at the same time is refused with a message."""
        return exclusive_lock(self.directory / ".lock", f"pid {os.getpid()} on {socket.gethostname()}",
                              f"{self.directory} is being computed by {{holder}} right now. Wait for it to finish "
                              "(its result is then reused), or give this run another run_dir.")

    def cached(self) -> Path | None:
        """The completing file if it is there and the folder records this stage's identity.

        A finished folder whose files do not parse is moved aside (:meth:`set_aside`) and counts as not there,
        so the stage is recomputed from its last intact state, never half-rewritten. Under torchrun rank 0
        decides and the other ranks follow (a rank that looked a moment later could see a file rank 0 just
        wrote, skip the stage's barrier, and deadlock the job).
        """
        if self.identity is None:
            return None
        path = self.directory / self.complete
        found = path.exists() and self.recorded()
        if found and is_main():
            damage = self.damage()
            if damage is not None:
                self.set_aside(damage)
                found = False
            else:
                self.check_schedule()
                self.check_settings()
                found = self.current(path)
        return path if agreed(found) else None

    def current(self, path: Path) -> bool:
        """Whether the finished folder's result (its completing file ``path``) is today's; a stage whose result
        carries a version (a measure of an older evaluation) overrides it, and is then computed again."""
        return True

    def evaluation_epochs(self) -> tuple[int, ...] | None:
        """The epochs at which this config evaluates (and so may select) the network of the folder's
        :attr:`training` run, where the identity does not fix them (:attr:`schedule`); None: nothing to check."""
        from shc.train import TrainConfig

        if self.schedule is None:
            return None
        epochs = getattr(self.config, self.schedule)
        return TrainConfig(epochs=epochs, eval_every=min(self.config.eval_every, epochs)).evaluation_epochs()

    def check_schedule(self) -> None:
        """Refuse a finished folder whose training evaluated at other epochs than this config does
        (:meth:`evaluation_epochs`): its selected network, and everything computed from it, would be another
        config's. Raised, not recomputed: the stages that read this one were built on it under the same identity."""
        from shc.runs import StaleRunError

        expected = self.evaluation_epochs()
        record = self.directory / (self.training or "") / "history.json"
        if expected is None or self.training is None or not record.is_file():
            return
        history = json.loads(record.read_text(encoding="utf-8"))
        metric = history.get("select_metric")
        evaluated = tuple(row["epoch"] for row in history.get("rows", []) if metric in row)
        if metric is not None and evaluated != tuple(expected):
            raise StaleRunError(
                f"{self.directory} holds a {self.training} evaluated at epochs {list(evaluated)}, but this config "
                f"evaluates it at {list(expected)} (eval_every): its selected {self.training}, and what later stages "
                f"computed from it, come from other settings. Give this run another run_dir, or delete "
                f"{self.directory} and the folders of the same seed that read it (their identities nest "
                f"{self.name}'s), then run again.")

    def settings(self) -> dict[str, Any] | None:
        """What the stage's result depends on beyond its identity, recorded in :data:`SETTINGS_FILE` when the folder
        is opened and checked on reuse (:meth:`check_settings`): the content of a weights file the identity names by
        path (``weights``), and the hyper-parameters held in code for the method it names (its loss, published
        defaults and head: ``shc.methods.MethodSpec``), which a new release may change under the same identity. Not
        part of the identity, which would re-key every run folder; None when the identity names neither."""
        own = self.own_identity() or {}
        found: dict[str, Any] = {}
        if own.get("weights"):
            weights = Path(str(own["weights"])).expanduser()
            found["weights_sha256"] = file_sha256(weights) if weights.is_file() else None  # gone: not checked
        if own.get("method"):
            from shc.runs import method_spec

            spec = method_spec(self.config)
            found["method"] = jsonable({"loss": spec.loss, "defaults": dict(spec.defaults), "head": dict(spec.head)})
        return found or None

    def recorded_settings(self) -> dict[str, Any]:
        """The folder's :data:`SETTINGS_FILE` record; empty when there is none or it does not parse."""
        try:
            recorded = json.loads((self.directory / SETTINGS_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return recorded if isinstance(recorded, dict) else {}

    def check_settings(self) -> None:
        """Refuse a folder whose recorded :meth:`settings` differ from this config's: its result was computed with
        other method defaults or other weights under the same identity. A folder without the record (computed before
        2026-12-02) is not checked; a setting this machine cannot read (a weights file gone) is not compared."""
        from shc.runs import StaleRunError

        record, current = self.directory / SETTINGS_FILE, self.settings()
        if current is None or not record.is_file():
            return
        try:  # a damaged record is not a record of other settings (an audit: it was reported as one)
            recorded = json.loads(record.read_text(encoding="utf-8"))
            if not isinstance(recorded, dict):
                raise ValueError("not a JSON object")
        except ValueError as error:
            raise StaleRunError(
                f"{record} is damaged ({str(error)[:80]}), so the settings {self.directory}'s result was computed "
                "with cannot be checked. If they were this config's (its method defaults and weights), delete that "
                f"file alone: it is written again from this config. If not, delete {self.directory} and run again."
            ) from None
        differ = sorted(key for key, value in current.items() if value is not None and recorded.get(key) != value)
        if differ:
            raise StaleRunError(
                f"{self.directory} was computed with other {' and '.join(differ)} than this config gives ({record} "
                f"records {', '.join(f'{key}={recorded.get(key)!r}' for key in differ)}; now "
                f"{', '.join(f'{key}={current[key]!r}' for key in differ)}): its result is another setting's. Give "
                f"this run another run_dir, or delete {self.directory} and the folders of the same seed that read it, "
                "then run again.")

    def damage(self) -> str | None:
        """The first file of the finished folder that is missing or does not parse, with why; None if all parse."""
        for name, check in self.files:
            path = self.directory / name
            try:
                check(path)
            except Exception as error:  # noqa: BLE001 - any failure to parse means damaged
                reason = str(error).strip().splitlines()[0][:120] if str(error).strip() else type(error).__name__
                return f"{path} does not parse ({reason})"
        return None

    def set_aside(self, damage: str) -> None:
        """Move the damaged folder's files to ``damaged-<name>-<time>`` beside it and start it anew from its last
        intact state: its identity record and settings (copied, so the new start is checked against the old one's
        settings: :meth:`check_settings`) and, where its training checkpoints still load, the training run (left in
        place, so it resumes at its last epoch instead of starting over).

        Everything happens under the folder's lock, and the folder itself never moves: its lock file stays where
        every other process looks for it, so none can see a half-rebuilt folder (a recorded identity without its
        training) and start that training over."""
        from shc.train.checkpoint import load_checkpoint

        directory = self.directory
        target = directory.with_name(f"damaged-{directory.name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}")
        with self.lock():
            # another process may have set it aside (and begun it anew) between our look and the lock: then the
            # folder here is that new one, not the damaged one, and moving it would lose its work
            if not ((directory / self.complete).exists() and self.recorded() and self.damage() is not None):
                return
            training = directory / self.training if self.training is not None else None
            resumes = training is not None and (training / "last.pt").exists()
            try:
                for checkpoint in ("last.pt", "best.pt") if resumes else ():
                    if (training / checkpoint).exists():
                        load_checkpoint(training / checkpoint)
            except ValueError:
                resumes = False  # a damaged checkpoint: the training starts over
            target.mkdir()
            # the completing file first: a move cut short leaves an unfinished folder, never a finished-looking one
            children = sorted(directory.iterdir(), key=lambda child: child.name != self.complete)
            for child in children:
                if child.name in ("config.json", SETTINGS_FILE):  # kept: its time stays the stage's first start
                    with atomic_path(target / child.name) as temporary:
                        shutil.copy2(child, temporary)
                elif child.name != ".lock" and not (resumes and child == training):
                    child.rename(target / child.name)
        kept = f"resuming {self.training}/last.pt" if resumes else "from scratch"
        warnings.warn(f"{damage}: moved {directory.name}'s files aside to {target} and recomputing {self.name} "
                      f"({kept}).", stacklevel=5)

    @contextlib.contextmanager
    def open(self) -> Iterator[Path]:
        """The folder, opened for computing: its identity recorded and its lock held (rank 0), every rank computing
        with :data:`~shc.runs.STAGE_THREADS` threads, so the numbers do not depend on the executor, ``--jobs`` or
        the machine's cores. A folder whose ``config.json`` is missing, damaged or records another identity holds
        artifacts nobody can vouch for: they are deleted first."""
        directory = self.directory
        with fixed_threads(STAGE_THREADS):
            if not is_main():
                yield directory
                return
            directory.mkdir(parents=True, exist_ok=True)
            with self.lock():
                if not self.recorded():
                    for child in directory.iterdir():
                        if child.name != ".lock":
                            shutil.rmtree(child) if child.is_dir() else child.unlink()
                    write_json(directory / "config.json", jsonable(self.identity))
                self.check_settings()  # a training resumed under other defaults or weights would mix two settings
                current = self.settings()
                if current is not None:
                    recorded = self.recorded_settings()  # what this machine cannot read now (a weights file gone)
                    write_json(directory / SETTINGS_FILE,  # keeps its record, checked when the file is back
                               {key: recorded.get(key) if value is None else value for key, value in current.items()})
                yield directory

    # ---- compute, save, load -------------------------------------------------------------
    def inputs(self, progress: bool = False) -> dict[str, Any]:
        """The outputs of the parents this stage reads, by name (each cached or computed)."""
        return {parent.name: parent(self.config).run(progress) for parent in self.reads()}

    def compute(self, inputs: Mapping[str, Any], directory: Path, progress: bool) -> Any:
        """The stage's work from its parents' outputs (``inputs``); what it returns goes to :meth:`save`.
        Training writes its checkpoints into ``directory`` as it goes (that is what resumes)."""
        raise NotImplementedError

    def save(self, outputs: Any, directory: Path) -> None:
        """Write the outputs atomically (rank 0), ``complete`` last: its presence marks the stage finished."""
        raise NotImplementedError

    def load(self) -> Any:
        """The finished stage's artifacts, read from its folder."""
        raise NotImplementedError

    def run(self, progress: bool = False) -> Any:
        """The stage's artifacts: loaded when cached, else computed (parents first) and saved; None when the run
        has no such stage."""
        if self.identity is None:
            return None
        if self.cached() is not None:
            return self.load()
        inputs = self.inputs(progress)
        with self.open() as directory:
            # another process may have finished the folder between cached() and the lock: use its result
            if not agreed(is_main() and self.intact()):
                outputs = self.compute(inputs, directory, progress) if self.trains or is_main() else None
                if is_main():
                    self.save(outputs, directory)
        barrier()
        return self.load()

    def intact(self) -> bool:
        """Whether the folder holds this stage's finished, intact result (checked under its lock by :meth:`run`)."""
        path = self.directory / self.complete
        return path.exists() and self.recorded() and self.damage() is None and self.current(path)


def require_validation(split, model: str) -> None:
    """Refuse an empty validation split before training (it would fail at the first evaluation, after
    ``eval_every`` epochs, losing them, with no word of the split)."""
    if len(split) == 0:
        raise ValueError(f"the validation split is empty, and {model} is selected on it: give it images (a composite's "
                         "dataset_options val_per_class >= 1; a random protocol's val_size > 0).")
