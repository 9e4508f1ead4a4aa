"""Provenance of a report or run: which code, which environment, which command, how long.

:func:`provenance` gathers what ``run.json`` should record so a reader can tell which commit
produced a report: the git commit and whether the working tree had uncommitted changes, the
versions of shc, torch, numpy and Python, the CPU count, torch's thread count and device, the
preset, overrides and command. It never raises for a missing git or a tree outside a checkout
(those fields are then ``None``) and records no host name or user name.

:class:`Timer` measures wall-clock and CPU time of a block, CPU time including finished child
processes (e.g. a papermill kernel: ``resource.getrusage(RUSAGE_CHILDREN)``)::

    with Timer() as timer:
        execute_notebook(...)
    record["time"] = timer.as_dict()   # {"wall_s": ..., "cpu_s": ..., "children_cpu_s": ...}
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["Timer", "checkout_root", "git_state", "provenance"]

_GIT_TIMEOUT_S = 10


def _git(args: Sequence[str], cwd: Path) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})  # fmt: skip
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_state(path: str | os.PathLike | None = None, exclude: Sequence[str] = ()) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout containing ``path`` (default: the shc package's folder).

    ``exclude``: folders relative to the checkout's top whose changes do not make it dirty (the report folder a
    batch writes into: its own pages are not the code that built them).

    Returns
    -------
    dict
        ``commit`` (40-hex SHA of HEAD), ``dirty`` (True when tracked files differ from HEAD or
        untracked, non-ignored files exist, outside ``exclude``) and ``branch`` (None when detached); all three
        ``None`` outside a git checkout or without git. Never raises.
    """
    folder = Path(path) if path is not None else Path(__file__).resolve().parent
    folder = folder if folder.is_dir() else folder.parent
    unknown = {"commit": None, "dirty": None, "branch": None}
    if not folder.is_dir():
        return unknown
    commit = _git(["rev-parse", "--verify", "HEAD"], folder)
    if commit is None:
        return unknown
    pathspecs = ["--", ":/", *(f":(top,exclude){Path(name).as_posix()}" for name in exclude)] if exclude else []
    status = _git(["status", "--porcelain", "--untracked-files=normal", *pathspecs], folder)
    branch = _git(["symbolic-ref", "--quiet", "--short", "HEAD"], folder)
    return {"commit": commit, "dirty": None if status is None else bool(status), "branch": branch or None}


def checkout_root(path: str | os.PathLike | None = None) -> Path | None:
    """The top folder of the git checkout containing ``path`` (default: the shc package's folder); None outside one
    or without git. Never raises."""
    folder = Path(path) if path is not None else Path(__file__).resolve().parent
    folder = folder if folder.is_dir() else folder.parent
    if not folder.is_dir():
        return None
    top = _git(["rev-parse", "--show-toplevel"], folder)
    return Path(top) if top else None


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version(module)
    except PackageNotFoundError:
        loaded = sys.modules.get(module)
        return getattr(loaded, "__version__", None)


def _torch_state() -> dict[str, Any]:
    try:
        import torch
    except ImportError:
        return {"torch_threads": None, "device": None, "cuda_device": None}
    cuda = torch.cuda.is_available()
    return {
        "torch_threads": torch.get_num_threads(),
        "device": "cuda" if cuda else "cpu",
        "cuda_device": torch.cuda.get_device_name(0) if cuda else None,
    }


def _usable_cpus() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count()


def cpu_model(cpuinfo: str | os.PathLike = "/proc/cpuinfo") -> str | None:
    """The CPU's model name (e.g. "AMD EPYC 9B14"): Linux's ``model name`` line of ``cpuinfo``, else
    ``platform.processor()``, else None. Runs on one kind of machine differ by CPU maker and generation (their
    arithmetic and speed), so a benchmark or report names the model, not only the core count."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and value.strip():
                    return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or None


def provenance(
    command: Sequence[str] | str | None = None,
    preset: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    path: str | os.PathLike | None = None,
    exclude: Sequence[str] = (),
) -> dict[str, Any]:
    """Everything a report record needs to say what produced it (JSON-serialisable, no host or user name).

    Parameters
    ----------
    command : sequence of str or str, optional
        The exact command; default ``[sys.executable, *sys.argv]`` with the interpreter shown as
        ``python`` (``sys.argv`` of a Jupyter kernel is the kernel's, so pass the batch command).
    preset : str, optional
        The report preset (e.g. "quick").
    overrides : mapping, optional
        Command-line overrides of the preset (e.g. ``{"bits": [16, 32]}``).
    path : path, optional
        A path inside the git checkout to describe (default: where shc is imported from).
    exclude : sequence of str
        Folders (relative to the checkout's top) whose changes do not count as dirty (:func:`git_state`).

    Returns
    -------
    dict
        ``git`` (:func:`git_state`), ``versions`` (shc, torch, numpy, python), ``platform``
        (e.g. "Linux-x86_64"), ``cpu_model`` (:func:`cpu_model`), ``cpu_count`` (usable CPUs), ``torch_threads``,
        ``device``, ``cuda_device``, ``command`` (list of str), ``preset``, ``overrides``.
    """
    import shc

    if command is None:
        command = ["python", *sys.argv]
    elif isinstance(command, str):
        command = [command]
    else:
        command = [str(part) for part in command]
    record: dict[str, Any] = {
        "git": git_state(path, exclude),
        "versions": {
            "shc": getattr(shc, "__version__", None),
            "torch": _version("torch"),
            "numpy": _version("numpy"),
            "python": platform.python_version(),
        },
        "platform": f"{platform.system()}-{platform.machine()}",
        "cpu_model": cpu_model(),
        "cpu_count": _usable_cpus(),
        **_torch_state(),
        "command": list(command),
        "preset": preset,
        "overrides": dict(overrides) if overrides is not None else None,
    }
    return record


class Timer:
    """Context manager measuring wall-clock and CPU time of a block (this process and its finished children).

    Attributes (set on exit; read them after the block, or call :meth:`as_dict`):
    ``wall_s`` (``time.perf_counter``), ``cpu_s`` (this process, all threads: ``time.process_time``)
    and ``children_cpu_s`` (user + system time of child processes that finished and were waited for
    during the block; 0.0 on platforms without :mod:`resource`).
    """

    def __init__(self) -> None:
        self.wall_s: float | None = None
        self.cpu_s: float | None = None
        self.children_cpu_s: float | None = None

    @staticmethod
    def _children() -> float:
        try:
            import resource
        except ImportError:  # Windows
            return 0.0
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def __enter__(self) -> Timer:
        self._start = (time.perf_counter(), time.process_time(), self._children())
        return self

    def __exit__(self, *exc_info: object) -> None:
        wall, cpu, children = self._start
        self.wall_s = time.perf_counter() - wall
        self.cpu_s = time.process_time() - cpu
        self.children_cpu_s = self._children() - children

    def as_dict(self, digits: int = 3) -> dict[str, float]:
        """``{"wall_s", "cpu_s", "children_cpu_s", "total_cpu_s"}`` rounded to ``digits`` decimals."""
        if self.wall_s is None:
            raise RuntimeError("the Timer has not finished; read it after the with-block.")
        total = self.cpu_s + self.children_cpu_s
        return {name: round(value, digits) for name, value in
                (("wall_s", self.wall_s), ("cpu_s", self.cpu_s), ("children_cpu_s", self.children_cpu_s),
                 ("total_cpu_s", total))}  # fmt: skip
