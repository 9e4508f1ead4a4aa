"""What every command line of the package shares: user errors as one clear line, tracebacks only for bugs.

A user error (a bad option value, a missing file, a run that is not computed yet, a busy run folder) is
printed as ``error: <message>`` with exit status 2; ``--debug`` (or ``SHC_DEBUG=1``) shows the traceback
instead. Ctrl-C exits with status 130 after saying what was kept. Any other exception is a bug and keeps
its traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

__all__ = ["USER_ERRORS", "non_negative_int", "positive_float", "positive_int", "run_cli"]

#: Exceptions that describe a problem with the user's input or environment, not a bug.
USER_ERRORS: tuple[type[BaseException], ...] = (ValueError, FileNotFoundError, PermissionError, IsADirectoryError,
                                                NotADirectoryError, RuntimeError, TypeError)


def _terminate(signum, frame):  # SIGTERM (e.g. a batch scheduler, `kill`) unwinds like Ctrl-C
    raise KeyboardInterrupt(f"signal {signum}")


def run_cli(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None = None) -> int:
    """Run a command-line ``main(argv)``: user errors as one line (exit 2), interrupts cleanly (exit 130).

    SIGTERM is turned into the same clean unwinding as Ctrl-C, so temporary files and building folders
    are removed and every finished artifact stays.
    """
    import signal
    import threading

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _run(main, argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _run(main: Callable[[Sequence[str] | None], int], argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv or os.environ.get("SHC_DEBUG") == "1"
    argv = [argument for argument in argv if argument != "--debug"]
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("\ninterrupted: every finished artifact is kept and a rerun resumes where this one stopped.",
              file=sys.stderr)
        return 130
    except USER_ERRORS as error:
        if debug:
            raise
        print(f"error: {error}\n(rerun with --debug for the traceback)", file=sys.stderr)
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


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value
