"""Downloads with a timeout and an error that says how to get the file by hand.

torchvision's dataset downloads and ``torch.hub.load_state_dict_from_url`` open their connections without
a timeout, so on a machine whose firewall drops (rather than refuses) packets they hang forever. Every
download in shc goes through :func:`download_file`, which gives up after ``timeout`` seconds without
progress and raises :class:`DownloadError` with the caller's instructions for a manual install.
"""

from __future__ import annotations

import hashlib
import http.client
import math
import os
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from shc._io import atomic_path

__all__ = ["DOWNLOAD_TIMEOUT", "DownloadError", "download_file", "download_timeout"]

DOWNLOAD_TIMEOUT = 30.0
"""Default seconds a download may wait for a connection or for the next chunk (``$SHC_DOWNLOAD_TIMEOUT``
overrides it)."""
_CHUNK = 1 << 16  # bytes that must arrive within the timeout: slower than 64 KiB in 30 s is a stalled link


class DownloadError(RuntimeError):
    """A download failed or timed out; the message names the file, the URLs tried and the manual way."""


def download_timeout() -> float:
    """``$SHC_DOWNLOAD_TIMEOUT`` (seconds, > 0) if set, else :data:`DOWNLOAD_TIMEOUT`."""
    value = os.environ.get("SHC_DOWNLOAD_TIMEOUT")
    if value is None:
        return DOWNLOAD_TIMEOUT
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(f"SHC_DOWNLOAD_TIMEOUT must be a finite number of seconds > 0, got {value!r}")
    return seconds


def _digest(path: Path, algorithm: str) -> str:
    hasher = hashlib.new(algorithm)
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            hasher.update(chunk)
    return hasher.hexdigest()


class _BadFile(ValueError):
    """A download that arrived but is not the file: cut short, or with another checksum."""


def _copy(response, handle, timeout: float) -> None:
    """Copy ``response`` into ``handle``, each :data:`_CHUNK` of it within ``timeout`` seconds: the socket's own
    timeout bounds one read only, so a server trickling a byte a second would never time out."""
    pending, started = 0, time.monotonic()
    while piece := response.read1(_CHUNK - pending):
        handle.write(piece)
        pending += len(piece)
        if pending >= _CHUNK:
            pending, started = 0, time.monotonic()
        elif time.monotonic() - started > timeout:
            raise TimeoutError(f"{pending} bytes in {time.monotonic() - started:.0f} s: a chunk of "
                               f"{_CHUNK >> 10} KiB did not arrive within the timeout of {timeout:g} s")


def _fetch(url: str, destination: Path, timeout: float, checksum: tuple[str, str] | None) -> None:
    """Stream ``url`` into a temporary file next to ``destination``; only a whole file (as many bytes as the
    server announced) with the right ``checksum`` replaces it: a failed download never leaves half a file, and
    never removes the file that was there before."""
    request = urllib.request.Request(url, headers={"User-Agent": "shc"})
    with urllib.request.urlopen(request, timeout=timeout) as response, \
            atomic_path(destination, suffix=".part") as partial:
        with open(partial, "wb") as handle:
            _copy(response, handle, timeout)
        announced, received = response.headers.get("Content-Length"), partial.stat().st_size
        if announced is not None and announced.isdigit() and int(announced) != received:
            raise _BadFile(f"the connection ended after {received} of {announced} bytes")
        if checksum is not None:
            algorithm, expected = checksum
            actual = _digest(partial, algorithm)
            if not actual.startswith(expected.lower()):
                raise _BadFile(f"{algorithm} {actual} does not start with the expected {expected}")


def download_file(
    urls: str | Sequence[str],
    destination: str | os.PathLike,
    *,
    instructions: str,
    checksum: tuple[str, str] | None = None,
    timeout: float | None = None,
) -> Path:
    """Download the first of ``urls`` that works to ``destination`` (atomically), with a timeout.

    Parameters
    ----------
    urls : str or sequence of str
        Mirrors of one file, tried in order.
    destination : path
        Where the file goes; its folder is created.
    instructions : str
        How to get the file without this download (appended to the error message), e.g. a package
        to install or the folder to copy the file into.
    checksum : (algorithm, hex prefix), optional
        ``("md5", "8d4f...")`` or ``("sha256", "f37072fd")``: the file's digest must start with the prefix
        (torch hub file names carry the first 8 hex digits of the SHA-256); a mismatch counts as a failure.
        Checked before the file takes its place, as is its length where the server announces one: a bad
        download keeps whatever ``destination`` held.
    timeout : float, optional
        Seconds to wait for the connection and for each chunk; default :func:`download_timeout`.

    Returns
    -------
    Path
        ``destination``.

    Raises
    ------
    DownloadError
        No mirror delivered a file with the right checksum; the message lists each mirror's error and
        ends with ``instructions``.
    """
    urls = [urls] if isinstance(urls, str) else list(urls)
    if not urls:
        raise ValueError("urls is empty: give at least one URL to download from")
    timeout = download_timeout() if timeout is None else float(timeout)
    if not (timeout > 0 and math.isfinite(timeout)):
        raise ValueError(f"timeout must be a finite number of seconds > 0, got {timeout!r}")
    destination = Path(destination).expanduser()
    destination.parent.mkdir(parents=True, exist_ok=True)
    failures = []
    for url in urls:
        try:
            _fetch(url, destination, timeout, checksum)
        except _BadFile as error:
            failures.append(f"{url}: {error}")
        except (OSError, urllib.error.URLError, http.client.HTTPException, ValueError) as error:
            failures.append(f"{url}: {error!r}")  # timeouts are OSErrors; a garbled or cut reply, HTTPException
        else:
            return destination
    raise DownloadError(
        f"could not download {destination.name} (timeout {timeout:g} s per connection and chunk; set "
        f"$SHC_DOWNLOAD_TIMEOUT to change it). Tried: {'; '.join(failures)}. {instructions}"
    )
