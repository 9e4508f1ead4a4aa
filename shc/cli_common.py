"""What every command line of the package shares: user errors as one clear line, tracebacks only for bugs.

A user or environment error (a bad option value, a missing, damaged or wrong-format file, a path that is a
folder or under a file, a read-only or full file system, a run that is not computed yet, a busy run folder)
is printed as one line, ``error: <message>``, with exit status 2; ``--debug`` (or ``SHC_DEBUG=1``) shows the
traceback instead. Ctrl-C and SIGTERM exit with status 130 after saying what was kept. Any other exception is
a bug and keeps its traceback. Every command line of the package (``shc``, ``python -m shc.data``,
``python -m shc.pipeline``, ``python -m shc.reports``, ``python -m shc.results``) runs through :func:`run_cli`.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

__all__ = ["USER_ERRORS", "add_executor_arguments", "describe_error", "device_name", "executor_options",
           "non_negative_float", "non_negative_int", "output_file", "output_folder", "port_number",
           "positive_float", "positive_int", "refuse_overwriting", "refuse_replacing", "run_cli"]

#: Exceptions that describe a problem with the user's input or environment, not a bug. OSError covers the
#: file system (missing, is-a-folder, not-a-folder, permission, read-only, full disk, ...).
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, OSError, EOFError, RuntimeError, TypeError)

#: What to do about an operating-system error, by errno.
_OS_FIXES = {
    errno.ENOSPC: "the disk is full: free some space or write elsewhere",
    errno.EDQUOT: "the disk quota is exhausted: free some space or write elsewhere",
    errno.EFBIG: "the file is larger than this system allows (a full disk or a file-size limit): write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.EACCES: "permission denied: choose a location you can write to, or fix the permissions",
    errno.EPERM: "operation not permitted: choose a location you can write to, or fix the permissions",
    errno.ENOTDIR: "a part of this path is a file, not a folder: choose another path",
    errno.EISDIR: "this is a folder: give a file path",
    errno.EEXIST: "a file is in the way of a folder of that name: move it or choose another path",
    errno.ENOENT: "no such file or folder: check the path",
    errno.ENAMETOOLONG: "the name is too long: choose a shorter path",
    errno.EIO: "input/output error: check the disk",
}


def describe_error(error: BaseException) -> str:
    """One line for ``error``: an operating-system error as ``<file>: <reason> (<what to do>)``, any other as its
    message with the line breaks folded."""
    if isinstance(error, OSError) and error.errno in _OS_FIXES and error.strerror:
        where = f"{error.filename}: " if error.filename is not None else ""
        also = f" -> {error.filename2}" if getattr(error, "filename2", None) is not None else ""
        return f"{where}{error.strerror}{also} ({_OS_FIXES[error.errno]})"
    text = str(error).strip() or type(error).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _terminate(signum, frame):  # SIGTERM (e.g. a batch scheduler, `kill`) unwinds like Ctrl-C
    raise KeyboardInterrupt(f"signal {signum}")


INTERRUPTED = "interrupted: every finished artifact is kept and a rerun resumes where this one stopped."
"""What a computing command says when Ctrl-C or SIGTERM stops it."""


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None,
            interrupted: str = INTERRUPTED) -> int:
    """Run a command-line ``main(argv)``: user errors as one line (exit 2), interrupts cleanly (exit 130) with the
    line ``interrupted`` (a server passes its own: it has no artifacts to resume).

    SIGTERM is turned into the same clean unwinding as Ctrl-C, so temporary files and building folders
    are removed and every finished artifact stays.
    """
    import signal
    import threading

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _run(main, argv, interrupted)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None, interrupted: str) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("SHC_DEBUG") == "1"
    argv = [argument for argument in argv if argument != "--debug"]
    try:
        return main(argv)
    except KeyboardInterrupt:
        print(f"\n{interrupted}", file=sys.stderr)
        return 130
    except USER_ERRORS as error:
        if debug:
            raise
        print(f"error: {describe_error(error)} (--debug shows the traceback)", file=sys.stderr)
        return 2


def _integer_at_least(minimum: int, meaning: str):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {meaning}, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {meaning}, got {value}")
        return value

    parse.__name__ = meaning.replace(" ", "_")  # argparse names the type in its messages
    return parse


#: argparse types: an integer >= 1, and an integer >= 0.
positive_int = _integer_at_least(1, "a positive integer")
non_negative_int = _integer_at_least(0, "a non-negative integer")


def jobs_argument(text: str, option: str = "--jobs") -> int | str:
    """argparse type of ``--jobs`` (and of ``option`` alike): ``auto`` (kept as the word:
    :func:`shc.pipeline.resolve_jobs` turns it into a number on the machine that trains) or a positive integer."""
    if text == "auto":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{option} takes a positive integer or 'auto', got {text!r}")
    return value


def _finite_float(text: str, zero: bool) -> float:
    """A finite number > 0 (>= 0 with ``zero``), or the argparse error that names what is wanted."""
    wanted = "a non-negative number" if zero else "a positive number"
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text!r}") from None
    if not ((value >= 0 if zero else value > 0) and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be {wanted}, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    return _finite_float(text, zero=False)


def device_name(text: str) -> str:
    """argparse type: ``auto``, ``cpu``, ``cuda`` or ``cuda:N`` (whether CUDA is there is checked when it is used)."""
    from shc.validation import device_name as check

    try:
        return check(text, "--device")
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _check_writable(target: Path, folder: Path, option: str) -> None:
    """Refuse ``target`` unless ``folder`` (where it goes) is, or can be made, a folder this process writes."""
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ValueError(f"{option} {str(target)!r} cannot be written: {existing} is a file, not a folder; choose "
                         f"another {option}.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{option} {str(target)!r} cannot be written ({existing} is read-only or not yours); "
                         f"choose another {option}.")


def output_folder(folder: str | os.PathLike, option: str) -> Path:
    """``folder`` as a Path, after checking this process can write into it (it, or its nearest existing ancestor,
    is a writable folder); the ValueError names ``option`` and what to do."""
    folder = Path(folder).expanduser()
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{option} {str(folder)!r} is a file, not a folder; choose another {option}.")
    _check_writable(folder, folder, option)
    return folder


def output_file(path: str | os.PathLike, option: str) -> Path:
    """``path`` as a Path, after checking a file can be written there (atomically: a temporary file beside it,
    then a rename); the ValueError names ``option`` and what to do."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise ValueError(f"{option} {str(path)!r} is a folder; give a file path (e.g. {path / 'out'}).")
    _check_writable(path, path.parent, option)
    return path


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same path, a link to it, a hard link, another spelling."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one is not there (yet)
        return a.resolve() == b.resolve()


def refuse_overwriting(outputs: Iterable[str | os.PathLike], inputs: Iterable[str | os.PathLike],
                       option: str) -> None:
    """Refuse a command whose ``option`` would write one of the files it reads (``inputs``): writing its output
    would destroy its source. Every file of both sets counts (an export's companions, an import's set)."""
    inputs = [Path(path).expanduser() for path in inputs]
    for output in (Path(path).expanduser() for path in outputs):
        source = next((path for path in inputs if _same_file(output, path)), None)
        if source is not None:
            also = "" if output == source else f" (as {output})"
            raise ValueError(f"{option} would overwrite {source}{also}, which this command reads; choose another "
                             f"{option}.")


def refuse_replacing(outputs: Iterable[str | os.PathLike], option: str, overwrite: bool) -> None:
    """Refuse to replace a file that is there unless ``overwrite`` (``--overwrite``): an index, a codes file or an
    export written over another of another length was lost without a word (a newcomer's probe; ``--to milvus``
    already refused an existing collection)."""
    if overwrite:
        return
    for output in (Path(path).expanduser() for path in outputs):
        if output.exists():
            raise ValueError(f"{option} {output} is already there; pass --overwrite to replace it, or choose another "
                             f"{option}.")


def port_number(text: str) -> int:
    """argparse type of a TCP port: 1..65535, or 0 for a free one chosen when serving."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 1 to 65535 (0: a free one), got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    return _finite_float(text, zero=True)


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """``--executor``, ``--address``, ``--cpus-per-run``, ``--gpus-per-run``: where a grid's runs execute
    (:mod:`shc.executors`; ``--jobs`` stays the local executor's pool size)."""
    from shc.executors import EXECUTORS

    parser.add_argument("--executor", default="local", choices=EXECUTORS.names(),
                        help="local: a process pool on this machine (--jobs); dask or ray: a cluster, one task per "
                             "shared stage folder (stages 0-2), then one per hashing run (docs/scale-out.md)")
    parser.add_argument("--address", default=None,
                        help="cluster to join: tcp://HOST:8786 (dask scheduler) or HOST:6379 / auto (ray); default "
                             "a local cluster of this machine's cores")
    parser.add_argument("--cpus-per-run", type=positive_float, default=1.0,
                        help="CPUs each run's task reserves on a cluster (default 1; every stage computes with one thread "
                             "whatever this says, so results do not depend on it)")
    parser.add_argument("--gpus-per-run", type=non_negative_float, default=0.0,
                        help="GPUs each run's task asks for on a cluster (default 0; 1 on GPU machines)")


def executor_options(args: argparse.Namespace) -> dict:
    """The ``run_grid`` keywords of :func:`add_executor_arguments`'s options."""
    if args.executor == "local" and (args.address or args.gpus_per_run):
        raise ValueError("--address and --gpus-per-run are for a cluster: add --executor dask or --executor ray.")
    return {"executor": args.executor, "address": args.address, "cpus_per_run": args.cpus_per_run,
            "gpus_per_run": args.gpus_per_run}
