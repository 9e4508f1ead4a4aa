"""Downloads with a timeout (shc._download) and the Fashion-MNIST / MNIST install path of shc.data.

No test touches the internet: files are served with ``file://`` URLs, failures come from a port on
127.0.0.1 that was just closed (refused at once) or from a listening socket that never answers (the
timeout), and the idx files are tiny ones written here in the official format.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import socket
import time
from pathlib import Path

import numpy as np
import pytest

import shc.data.composites as composites
from shc._download import DownloadError, download_file, download_timeout
from shc.data import load_dataset

SMALL = dict(train_per_class=2, val_per_class=1, query_per_class=1, database_per_class=2)


def closed_port_url(path: str) -> str:
    """A URL on 127.0.0.1 whose port was just freed: the connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/{path}"


def idx_bytes(array: np.ndarray) -> bytes:
    """The official idx encoding: 0, 0, dtype 0x08 (ubyte), ndim, big-endian int32 sizes, then the data."""
    header = bytes([0, 0, 0x08, array.ndim]) + np.asarray(array.shape, dtype=">i4").tobytes()
    return header + array.astype(np.uint8).tobytes()


def write_tiny_fashion(folder: Path, per_class: int = 6) -> dict[str, str]:
    """The four gzipped idx files with ``per_class`` train and test images per item; returns their md5s."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(10, dtype=np.uint8), per_class)
    arrays = {
        "train-images-idx3-ubyte.gz": rng.integers(0, 256, (len(labels), 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte.gz": labels,
        "t10k-images-idx3-ubyte.gz": rng.integers(0, 256, (len(labels), 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte.gz": labels,
    }
    md5 = {}
    for name, array in arrays.items():
        with gzip.open(folder / name, "wb") as handle:
            handle.write(idx_bytes(array))
        md5[name] = hashlib.md5((folder / name).read_bytes()).hexdigest()
    return md5


@pytest.fixture
def no_debian(monkeypatch, tmp_path):
    """Hide Debian's /usr/share/datasets/fashion-mnist (installed on the CI machine)."""
    monkeypatch.setattr(composites, "DEBIAN_FASHION_MNIST", tmp_path / "no-debian-package")


# ----------------------------------------------------------------------------------------------
# download_file
# ----------------------------------------------------------------------------------------------


def test_download_copies_the_first_working_mirror_and_checks_the_md5(tmp_path):
    source = tmp_path / "source.bin"
    source.write_bytes(b"hashing" * 1000)
    md5 = hashlib.md5(source.read_bytes()).hexdigest()
    target = tmp_path / "deep" / "folder" / "copy.bin"
    result = download_file([closed_port_url("x.bin"), source.as_uri()], target, instructions="(manual)",
                           checksum=("md5", md5), timeout=5)
    assert result == target and target.read_bytes() == source.read_bytes()
    assert [p.name for p in target.parent.iterdir()] == ["copy.bin"]  # no temporary file left


def test_download_with_a_wrong_checksum_fails_and_keeps_nothing(tmp_path):
    source = tmp_path / "source.bin"
    source.write_bytes(b"abc")
    sha256 = hashlib.sha256(b"abc").hexdigest()  # ba7816bf...
    target = tmp_path / "out" / "abc.bin"
    assert download_file(source.as_uri(), target, instructions="", checksum=("sha256", sha256[:8])) == target
    target.unlink()
    with pytest.raises(DownloadError, match="md5 900150983cd24fb0d6963f7d28e17f72 does not start with"):
        download_file(source.as_uri(), target, instructions="", checksum=("md5", "ffff"))
    assert not target.exists()


class RawServer:
    """A one-connection HTTP server on 127.0.0.1 that sends ``reply`` (raw bytes) and hangs up: a reply cut short
    or garbled, as a proxy or a dropped connection gives one."""

    def __init__(self, reply: bytes) -> None:
        import threading

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(1)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/file.bin"
        self.thread = threading.Thread(target=self._serve, args=(reply,), daemon=True)
        self.thread.start()

    def _serve(self, reply: bytes) -> None:
        with contextlib.suppress(OSError):
            connection, _ = self.socket.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(reply)

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc) -> None:
        self.socket.close()
        self.thread.join(5)


def test_a_reply_cut_short_or_garbled_fails_over_to_the_next_mirror(tmp_path):
    good = tmp_path / "good.bin"
    good.write_bytes(b"the whole file")
    for reply, said in ((b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\nhello", "after 5 of 100 bytes"),
                        (b"garbage, not HTTP\r\n\r\n", "BadStatusLine")):
        target = tmp_path / "out" / "file.bin"
        with RawServer(reply) as server:
            assert download_file([server.url, good.as_uri()], target, instructions="", timeout=5) == target
        assert target.read_bytes() == b"the whole file"
        target.unlink()
        with RawServer(reply) as server, pytest.raises(DownloadError, match=said):
            download_file(server.url, target, instructions="", timeout=5)
        assert not target.exists() and not list(target.parent.iterdir())  # nothing half-written left


def test_a_bad_download_keeps_the_file_that_was_there(tmp_path):
    source = tmp_path / "source.bin"
    source.write_bytes(b"a new file with another checksum")
    target = tmp_path / "kept.bin"
    target.write_bytes(b"GOOD OLD FILE")
    with pytest.raises(DownloadError, match="does not start with the expected ffff"):
        download_file(source.as_uri(), target, instructions="", checksum=("md5", "ffff"))
    assert target.read_bytes() == b"GOOD OLD FILE"


def test_refused_connection_fails_fast_with_the_instructions(tmp_path):
    url = closed_port_url("file.gz")
    started = time.perf_counter()
    with pytest.raises(DownloadError) as raised:
        download_file(url, tmp_path / "file.gz", instructions="Copy file.gz into /somewhere.", timeout=5)
    assert time.perf_counter() - started < 5
    message = str(raised.value)
    assert url in message and "file.gz" in message and message.endswith("Copy file.gz into /somewhere.")
    assert "SHC_DOWNLOAD_TIMEOUT" in message


def test_a_server_that_never_answers_times_out(tmp_path):
    with socket.socket() as silent:  # accepts connections (backlog) but never sends a byte
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/file.gz"
        started = time.perf_counter()
        with pytest.raises(DownloadError, match="timeout 0.3 s"):
            download_file(url, tmp_path / "file.gz", instructions="", timeout=0.3)
        assert time.perf_counter() - started < 3
    assert list(tmp_path.iterdir()) == []  # neither the file nor a partial .part file is left


def test_download_timeout_reads_the_environment(monkeypatch):
    monkeypatch.delenv("SHC_DOWNLOAD_TIMEOUT", raising=False)
    assert download_timeout() == 30.0
    monkeypatch.setenv("SHC_DOWNLOAD_TIMEOUT", "2.5")
    assert download_timeout() == 2.5
    monkeypatch.setenv("SHC_DOWNLOAD_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="SHC_DOWNLOAD_TIMEOUT must be a finite number of seconds > 0, got 'soon'"):
        download_timeout()
    monkeypatch.setenv("SHC_DOWNLOAD_TIMEOUT", "inf")  # passed, then crashed in the socket (an audit)
    with pytest.raises(ValueError, match="finite number of seconds > 0, got 'inf'"):
        download_timeout()


def test_download_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="urls is empty"):
        download_file([], tmp_path / "x", instructions="")
    for timeout in (0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="timeout must be"):
            download_file("file:///x", tmp_path / "x", instructions="", timeout=timeout)


def test_a_server_that_trickles_bytes_times_out(tmp_path):
    """An audit: the socket's timeout bounds one read, so a server sending a byte every 0.05 s never timed out;
    each chunk must now arrive within the timeout."""
    import threading

    with socket.socket() as trickler:
        trickler.bind(("127.0.0.1", 0))
        trickler.listen(1)
        stop = threading.Event()

        def trickle():
            with contextlib.suppress(OSError):
                connection, _ = trickler.accept()
                with connection:
                    connection.recv(65536)
                    connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 1000000\r\n\r\n")
                    while not stop.wait(0.05):
                        connection.sendall(b"x")

        thread = threading.Thread(target=trickle, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{trickler.getsockname()[1]}/file.gz"
        started = time.perf_counter()
        try:
            with pytest.raises(DownloadError, match="did not arrive within the timeout of 0.5 s"):
                download_file(url, tmp_path / "file.gz", instructions="", timeout=0.5)
        finally:
            stop.set()
        assert time.perf_counter() - started < 5
        thread.join(5)
    assert not (tmp_path / "file.gz").exists()


# ----------------------------------------------------------------------------------------------
# Fashion-MNIST install path: data root, Debian folder, download, clear error
# ----------------------------------------------------------------------------------------------


def test_fashion_files_in_the_debian_folder_are_used(monkeypatch, tmp_path):
    write_tiny_fashion(tmp_path / "debian")
    monkeypatch.setattr(composites, "DEBIAN_FASHION_MNIST", tmp_path / "debian")
    splits = load_dataset("fashion-composite", root=tmp_path / "empty-root", num_classes=10, **SMALL)
    assert len(splits.train) == 20 and "120 Fashion-MNIST 28x28 images" in splits.protocol


def test_fashion_files_in_the_data_root_come_before_the_debian_folder(monkeypatch, tmp_path):
    write_tiny_fashion(tmp_path / "debian", per_class=6)
    write_tiny_fashion(tmp_path / "root", per_class=8)
    monkeypatch.setattr(composites, "DEBIAN_FASHION_MNIST", tmp_path / "debian")
    splits = load_dataset("fashion-composite", root=tmp_path / "root", num_classes=10, **SMALL)
    assert "160 Fashion-MNIST" in splits.protocol


def test_fashion_download_fetches_the_four_files_with_their_md5(monkeypatch, tmp_path, no_debian):
    md5 = write_tiny_fashion(tmp_path / "mirror")
    monkeypatch.setitem(composites.IDX_MIRRORS, "fashion",
                        (closed_port_url("dead/"), (tmp_path / "mirror").as_uri() + "/"))
    monkeypatch.setitem(composites.IDX_MD5, "fashion", tuple(md5.items()))
    splits = load_dataset("fashion-composite", root=tmp_path / "data", num_classes=10, download=True, **SMALL)
    raw = tmp_path / "data" / "FashionMNIST" / "raw"
    assert sorted(p.name for p in raw.iterdir()) == sorted(md5)
    assert len(splits.query) == 10
    splits_offline = load_dataset("fashion-composite", root=tmp_path / "data", num_classes=10, **SMALL)
    np.testing.assert_array_equal(splits_offline.train.source_ids, splits.train.source_ids)


def test_failed_fashion_download_says_how_to_install(monkeypatch, tmp_path, no_debian):
    monkeypatch.setitem(composites.IDX_MIRRORS, "fashion", (closed_port_url("fashion/"),))
    with pytest.raises(DownloadError) as raised:
        load_dataset("fashion-composite", root=tmp_path / "data", download=True, **SMALL)
    message = str(raised.value)
    assert "train-images-idx3-ubyte.gz" in message and "127.0.0.1" in message
    assert "apt-get install dataset-fashion-mnist" in message
    assert str(tmp_path / "data" / "FashionMNIST" / "raw") in message


def test_missing_fashion_without_download_names_every_way(tmp_path, no_debian):
    with pytest.raises(FileNotFoundError) as raised:
        load_dataset("fashion-composite", root=tmp_path / "data")
    message = str(raised.value)
    for text in ("apt-get install dataset-fashion-mnist", "download=True", "t10k-labels-idx1-ubyte",
                 str(tmp_path / "data"), str(composites.DEBIAN_FASHION_MNIST)):
        assert text in message, text


def write_official_size_idx(folder: Path, train_counts: np.ndarray) -> None:
    """The four idx files at the official sizes (60,000 + 10,000 blank 28x28 images; they compress to little),
    with ``train_counts`` training labels of each class."""
    folder.mkdir(parents=True, exist_ok=True)
    arrays = {"train-images-idx3-ubyte.gz": np.zeros((60_000, 28, 28), np.uint8),
              "train-labels-idx1-ubyte.gz": np.repeat(np.arange(10, dtype=np.uint8), train_counts),
              "t10k-images-idx3-ubyte.gz": np.zeros((10_000, 28, 28), np.uint8),
              "t10k-labels-idx1-ubyte.gz": np.repeat(np.arange(10, dtype=np.uint8), 1_000)}
    for name, array in arrays.items():
        with gzip.open(folder / name, "wb", compresslevel=1) as handle:
            handle.write(idx_bytes(array))


MNIST_TRAIN_COUNTS = np.array([5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949])  # the real ones


def test_mnist_files_where_fashion_mnist_is_looked_for_are_refused_not_read(tmp_path, no_debian):
    """Both datasets name their files alike and both are looked for in the data root itself: MNIST's training
    labels (unbalanced) under the Fashion-MNIST loader, or Fashion-MNIST's (6,000 of each) under MNIST's, are named
    with the fix; the right files load."""
    assert MNIST_TRAIN_COUNTS.sum() == 60_000
    write_official_size_idx(tmp_path / "mnist-here", MNIST_TRAIN_COUNTS)
    with pytest.raises(ValueError, match=r"holds MNIST's training labels .* not Fashion-MNIST's.*FashionMNIST/raw"):
        composites._idx_base("fashion", tmp_path / "mnist-here", download=False)
    assert len(composites._idx_base("mnist", tmp_path / "mnist-here", download=False).labels) == 70_000
    write_official_size_idx(tmp_path / "fashion-here", np.full(10, 6_000))
    with pytest.raises(ValueError, match=r"holds Fashion-MNIST's training labels .* not MNIST's.*MNIST/raw"):
        composites._idx_base("mnist", tmp_path / "fashion-here", download=False)
    assert len(composites._idx_base("fashion", tmp_path / "fashion-here", download=False).labels) == 70_000
