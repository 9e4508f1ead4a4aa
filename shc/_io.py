"""Atomic file writes: the one place the package writes an artifact.

Every writer goes through :func:`atomic_path`: the content is written to a temporary file in the same
folder, flushed to disk, then moved over the target with ``os.replace`` (atomic on POSIX and Windows).
An interruption (Ctrl-C, SIGTERM, a crash) therefore leaves either the old file or the new complete one,
never a truncated file, and the temporary file is removed.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["atomic_path", "exclusive_lock", "jsonable", "log_file", "save_npy", "save_npz", "save_torch", "write_bytes",
           "write_json", "write_text"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on failure it is removed.

    ``suffix`` ends the temporary name (some writers insist on an extension: ``.tmp.npy``, ``.tmp.ipynb``).
    The parent folder is created when missing.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # unique per call: two hosts sharing a run folder may run the same pid, and two threads share one
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}{suffix}")
    try:
        yield temporary
        if temporary.exists():
            with open(temporary, "rb") as handle:
                os.fsync(handle.fileno())
            os.replace(temporary, path)
    except OSError as error:
        raise _about_target(error, temporary, path) from error
    finally:
        temporary.unlink(missing_ok=True)


#: Errors of a write that say nothing about which file (a full disk surfaces in ``write`` without a name).
_NAMELESS_WRITE_ERRORS = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


def _about_target(error: OSError, temporary: Path, path: Path) -> OSError:
    """``error`` naming the target ``path`` instead of the temporary file (or nothing): the file the user asked
    for is the one an error message must name."""
    if error.errno is None or not (error.filename in (str(temporary), temporary)
                                   or (error.filename is None and error.errno in _NAMELESS_WRITE_ERRORS)):
        return error
    return type(error)(error.errno, os.strerror(error.errno), str(path))


@contextlib.contextmanager
def log_file(path: str | os.PathLike) -> Iterator[Any]:
    """A binary file handle for a log that grows while a process runs (a kernel's stdout and stderr).

    The one writer that is not atomic, by nature: a log is useful precisely while it is incomplete. Use it only
    for logs inside a folder that is itself swapped in atomically (a report's building folder).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        yield handle


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
    return Path(path)


def write_text(path: str | os.PathLike, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


def jsonable(value: Any) -> Any:
    """Plain JSON types for nested mappings/sequences of numpy and Python values (keys sorted)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in sorted(value.items(), key=lambda item: str(item[0]))}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(path: str | os.PathLike, payload: Any) -> Path:
    return write_text(path, json.dumps(jsonable(payload), indent=1) + "\n")


def save_npy(path: str | os.PathLike, array: np.ndarray) -> Path:
    with atomic_path(path, suffix=".tmp.npy") as temporary:
        np.save(temporary, array)
    return Path(path)


def save_npz(path: str | os.PathLike, **arrays: np.ndarray) -> Path:
    with atomic_path(path, suffix=".tmp.npz") as temporary:
        np.savez_compressed(temporary, **arrays)
    return Path(path)


def save_torch(obj: Any, path: str | os.PathLike) -> Path:
    import torch

    with atomic_path(path, suffix=".tmp.pt") as temporary:
        torch.save(obj, temporary)
    return Path(path)


@contextlib.contextmanager
def exclusive_lock(lock_file: str | os.PathLike, holder: str, busy: str) -> Iterator[None]:
    """Hold an advisory lock on ``lock_file`` for the block, or raise at once if someone else holds it.

    ``holder`` is written into the file (e.g. ``"python -m shc.reports (pid 123)"``); a refused caller gets a
    RuntimeError ``busy.format(holder=<the holder's text>)``. Without ``fcntl`` (Windows) nothing is locked.
    The lock file itself stays (removing it would race with a waiting process); it holds no data.
    """
    try:
        import fcntl
    except ImportError:
        yield
        return
    lock_file = Path(lock_file)
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_file, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            raise RuntimeError(busy.format(holder=handle.read().strip() or "another process")) from None
        handle.seek(0)
        handle.truncate()
        handle.write(holder)
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
