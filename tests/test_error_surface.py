"""Every command line's error surface, and every write atomic (issue 24).

- Every file the package writes goes through ``shc._io`` (a temporary file, then ``os.replace``): an AST scan of
  ``shc/`` enumerates the write sites and fails on any that writes a final path directly.
- A table of bad paths and damaged files drives each command line (``shc``, ``python -m shc.data``,
  ``shc.pipeline``, ``shc.reports``, ``shc.results``): exit status 2, one line naming the file or option, no
  traceback, and a good output that was there before is byte-identical afterwards.
- A full disk (a file-size limit, the same ``EFBIG`` / ``ENOSPC`` path in the writer) in the middle of a write
  leaves the previous file intact.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import shc
from shc import cli, pipeline, results
from shc.cli_common import describe_error, run_cli
from shc.data.__main__ import main as data_main
from shc.pipeline import RunConfig, run, stage_directories
from shc.reports import cli as reports_cli

PACKAGE = Path(shc.__file__).resolve().parent
OPTIONS = {"num_classes": 4, "train_per_class": 10, "val_per_class": 3, "query_per_class": 2, "database_per_class": 5}


# --------------------------------------------------------------------------------------------
# Write sites
# --------------------------------------------------------------------------------------------
#: call name -> position of the path it writes (None: the receiver, ``path.write_text(...)``)
_WRITERS = {"write_text": None, "write_bytes": None, "touch": None, "symlink_to": None, "hardlink_to": None,
            "savefig": 0, "to_csv": 0, "to_parquet": 0, "to_pickle": 0, "to_excel": 0, "tofile": 0, "save": 0,
            "savez": 0, "savez_compressed": 0, "savetxt": 0, "execute_notebook": 1, "copyfile": 1, "copy2": 1,
            "copytree": 1, "move": 1}
_RECEIVERS = {"copyfile": "shutil", "copy2": "shutil", "copytree": "shutil", "move": "shutil"}
_WRITE_MODES = set("wax+")
#: Calls of the package's own writers, which are atomic themselves (their bodies are scanned like any other).
DELEGATES = {("cli.py", "index.save(out)"), ("retrieval/cli.py", "index.save(out)"),
             ("stages/base.py", "self.save(outputs, directory)")}  # each Stage's save: scanned in its own module


_MODULE_OPENERS = {"io", "gzip", "bz2", "lzma", "codecs", "Image", "tarfile"}  # name.open(path, mode)


def _call_name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _open_target(call: ast.Call) -> ast.AST | None:
    """The file an ``open`` call writes (``open(p, "w")``, ``gzip.open(p, "wb")``, ``path.open("a")``), else None."""
    func = call.func
    module_style = isinstance(func, ast.Name) or (isinstance(func.value, ast.Name) and func.value.id in _MODULE_OPENERS)
    position, target = (1, call.args[0] if call.args else func) if module_style else (0, func.value)
    mode = call.args[position] if len(call.args) > position else next(
        (k.value for k in call.keywords if k.arg == "mode"), ast.Constant("r"))
    if isinstance(mode, ast.Constant) and not _WRITE_MODES & set(str(mode.value)):
        return None
    return target  # a write mode, or one the scan cannot read: both must write an atomic temporary


def _target(call: ast.Call) -> ast.AST | None:
    """The expression naming the file a call writes, or None when the call writes nothing."""
    func, name = call.func, _call_name(call.func)
    if name in ("NamedTemporaryFile", "mkstemp", "mkdtemp") or (
            name == "open" and isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "os"):
        return func  # never atomic: always reported
    if name == "open":
        return _open_target(call)
    if name not in _WRITERS or not isinstance(func, ast.Attribute):
        return None
    receiver = _RECEIVERS.get(name)
    if receiver and getattr(func.value, "id", "") != receiver:
        return None
    position = 1 if name == "save" and getattr(func.value, "id", "") == "torch" else _WRITERS[name]
    if position is None:
        return func.value
    if len(call.args) > position:
        return call.args[position]
    keyword = next((k.value for k in call.keywords if k.arg in ("path_or_buf", "path", "fname", "file")), None)
    if keyword is None and name.startswith("to_"):
        return None  # pandas without a path returns the text: nothing is written
    return keyword if keyword is not None else func


def _unwrap(node: ast.AST) -> ast.AST:
    """``str(x)`` / ``os.fspath(x)`` -> ``x``."""
    while isinstance(node, ast.Call) and len(node.args) == 1 and _call_name(node.func) in ("str", "fspath"):
        node = node.args[0]
    return node


def write_sites_outside_the_atomic_writer(source: str, name: str) -> list[str]:
    """The calls in ``source`` that write a file other than a temporary of ``shc._io.atomic_path``."""
    tree = ast.parse(source)
    problems = []
    for function in [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]:
        atomic: set[str] = set()  # temporaries of atomic_path, handles opened on them, in-memory buffers
        for node in ast.walk(function):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and _call_name(node.value.func) in ("BytesIO", "StringIO")):
                atomic |= {target.id for target in node.targets if isinstance(target, ast.Name)}
            for item in node.items if isinstance(node, (ast.With, ast.AsyncWith)) else ():
                opened, bound = item.context_expr, item.optional_vars
                if not (isinstance(opened, ast.Call) and isinstance(bound, ast.Name)):
                    continue
                if _call_name(opened.func) == "atomic_path" or (
                        _call_name(opened.func) == "open" and getattr(_unwrap(_open_target(opened) or opened), "id",
                                                                      None) in atomic):
                    atomic.add(bound.id)
        for call in [node for node in ast.walk(function) if isinstance(node, ast.Call)]:
            target = _target(call)
            if target is None:
                continue
            target = _unwrap(target)
            if isinstance(target, ast.Name) and target.id in atomic:
                continue
            text = ast.unparse(call)
            if (name, text) not in DELEGATES:
                problems.append(f"{name}:{call.lineno}: {text}")
    return sorted(set(problems))


def test_every_write_of_the_package_goes_through_the_atomic_writer():
    found, delegates = [], set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name == "_io.py":  # the atomic writer itself
            continue
        source = path.read_text(encoding="utf-8")
        found += write_sites_outside_the_atomic_writer(source, name)
        delegates |= {(name, text) for name_, text in DELEGATES if name_ == name and text in source}
    assert found == [], "write these through shc._io (atomic_path, write_text, save_npz, ...):\n" + "\n".join(found)
    assert delegates == DELEGATES, f"stale DELEGATES entries: {DELEGATES - delegates}"


@pytest.mark.parametrize("snippet", [
    "def f(out, page):\n    Path(out).write_text(page)",
    "def f(out, np, data):\n    with open(out, 'wb') as handle:\n        np.savez_compressed(handle, **data)",
    "def f(image, target):\n    image.save(target)",
    "def f(torch, state, path):\n    torch.save(state, path)",
    "def f(fig, path, atomic_path):\n    with atomic_path(path) as temporary:\n        fig.savefig(path)",
    "def f(shutil, a, b):\n    shutil.copyfile(a, b)",
    "def f(path):\n    path.open('a').write('x')",
    "def f(table, out):\n    table.to_csv(path_or_buf=out)",
])
def test_the_write_site_scan_finds_direct_writes(snippet):
    """The scan is not vacuous: each direct write (the two the issue found among them) is reported."""
    assert write_sites_outside_the_atomic_writer(snippet, "snippet.py")


def test_the_write_site_scan_accepts_writes_to_an_atomic_temporary():
    snippet = ("def f(path, fig, np, atomic_path):\n    with atomic_path(path, suffix='.tmp.png') as temporary:\n"
               "        fig.savefig(temporary)\n    with atomic_path(path) as t, open(t, 'wb') as h:\n"
               "        np.save(h, 1)\n    with open(path) as h:\n        return h.read()")
    assert write_sites_outside_the_atomic_writer(snippet, "snippet.py") == []


def test_the_write_site_scan_accepts_in_memory_buffers_only():
    memory = "def f(io, image):\n    out = io.BytesIO()\n    image.save(out, format='PNG')\n    return out.getvalue()"
    assert write_sites_outside_the_atomic_writer(memory, "snippet.py") == []
    disk = "def f(io, image, path):\n    out = io.BytesIO()\n    image.save(path, format='PNG')"
    assert write_sites_outside_the_atomic_writer(disk, "snippet.py")


# --------------------------------------------------------------------------------------------
# One error line
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("code, words", [
    (errno.ENOSPC, ["disk is full"]), (errno.EROFS, ["read-only"]), (errno.EACCES, ["permission"]),
    (errno.ENOTDIR, ["is a file, not a folder"]), (errno.EISDIR, ["is a folder"]), (errno.EFBIG, ["write elsewhere"]),
])
def test_os_errors_are_one_line_naming_the_file_and_the_fix(code, words):
    message = describe_error(OSError(code, os.strerror(code), "/data/out.npz"))
    assert message.startswith("/data/out.npz: " + os.strerror(code)) and "\n" not in message
    assert all(word in message for word in words)


def test_multi_line_messages_are_folded_into_one():
    assert describe_error(ValueError("first\n  second\n\n third")) == "first second third"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A finished tiny run, its database images, good outputs of every kind, and damaged inputs."""
    root = tmp_path_factory.mktemp("surface")
    config = RunConfig(method="csq", bits=16, epochs=1, eval_every=1, dataset_options=OPTIONS,
                       run_dir=str(root / "runs"))
    run(config)
    stage3 = stage_directories(config)["stage3"]
    images = root / "images"
    options = [item for key, value in OPTIONS.items() for item in ("--option", f"{key}={value}")]
    assert data_main(["export-images", "digits-composite", "--out", str(images), *options]) == 0
    good = root / "good"
    good.mkdir()
    assert cli.main(["encode", "--run", str(stage3), "--images", str(images), "--out", str(good / "codes.npz"),
                     "--quiet"]) == 0
    assert cli.main(["index", str(good / "codes.npz"), "--out", str(good / "db.shcidx")]) == 0
    query = next(images.rglob("*.png"))
    assert cli.main(["search", "--index", str(good / "db.shcidx"), "--run", str(stage3), "--image", str(query),
                     "--html", str(good / "gallery.html")]) == 0
    bad = root / "bad"
    bad.mkdir()
    (bad / "file").write_text("a plain file")
    (bad / "folder").mkdir()
    np.save(bad / "codes.npy", np.ones((3, 16), np.int8))
    (bad / "truncated.npz").write_bytes((good / "codes.npz").read_bytes()[:300])
    (bad / "noise.npz").write_bytes(os.urandom(500))
    with np.load(good / "codes.npz") as archive:  # a codes file of no image, as an encode of unreadable files
        np.savez(bad / "no-codes.npz", **{key: archive[key][:0] if key in ("codes", "paths") else archive[key]
                                          for key in archive.files})
    np.savez(bad / "codes-1d.npz", database_codes=np.ones(16, np.int8))  # a run's codes.npz with one flat code
    damaged_index = bytearray((good / "db.shcidx").read_bytes())
    damaged_index[30] ^= 0x01
    (bad / "damaged.shcidx").write_bytes(bytes(damaged_index))
    for name, damage in (("truncated-weights", "best.pt"), ("damaged-record", "encoder.json")):
        copy = bad / name
        shutil.copytree(stage3, copy)
        target = copy / "train" / "best.pt" if damage == "best.pt" else copy / "encoder.json"
        target.write_bytes(target.read_bytes()[: len(target.read_bytes()) // 2])
    return {"run": str(stage3), "images": str(images), "good": good, "bad": bad, "query": str(query),
            "run_dir": config.run_dir, "options": options}


def _shc(*argv: str) -> Callable[[dict], int]:
    return lambda w: cli.main([a.format(**w, good_=w["good"], bad_=w["bad"]) for a in argv])


def _with(main: Callable, *argv: str) -> Callable[[dict], int]:
    return lambda w: main([a.format(**w, good_=w["good"], bad_=w["bad"]) for a in argv]
                          + (w["options"] if main is data_main else []))


#: (case, command, words the error line must hold, the good output that must stay byte-identical)
CASES = [
    ("encode --out is a folder", _shc("encode", "--run", "{run}", "--images", "{images}", "--out", "{bad_}/folder"),
     ["--out", "is a folder"], "codes.npz"),
    ("encode --out under a file", _shc("encode", "--run", "{run}", "--images", "{images}", "--out",
                                       "{bad_}/file/codes.npz"), ["--out", "is a file, not a folder"], "codes.npz"),
    ("encode with a truncated best.pt", _shc("encode", "--run", "{bad_}/truncated-weights", "--images", "{images}",
                                             "--out", "{good_}/codes.npz"), ["best.pt", "cannot be read"], "codes.npz"),
    ("encode with a damaged encoder.json", _shc("encode", "--run", "{bad_}/damaged-record", "--images", "{images}",
                                                "--out", "{good_}/codes.npz"), ["encoder.json", "damaged"], "codes.npz"),
    ("encode --images is a file", _shc("encode", "--run", "{run}", "--images", "{bad_}/file", "--out",
                                       "{good_}/codes.npz"), ["--images", "not a folder"], "codes.npz"),
    ("encode --run does not exist", _shc("encode", "--run", "{bad_}/nothing", "--images", "{images}", "--out",
                                         "{good_}/codes.npz"), ["nothing does not exist"], "codes.npz"),
    # an output that is there is replaced only with --overwrite (a newcomer replaced a 32-bit codes file silently)
    ("encode over an existing --out", _shc("encode", "--run", "{run}", "--images", "{images}", "--out",
                                           "{good_}/codes.npz", "--quiet"), ["codes.npz", "already there", "--overwrite"],
     "codes.npz"),
    ("index over an existing --out", _shc("index", "{good_}/codes.npz", "--out", "{good_}/db.shcidx"),
     ["db.shcidx", "already there", "--overwrite"], "db.shcidx"),
    ("index of a .npy", _shc("index", "{bad_}/codes.npy", "--out", "{good_}/db.shcidx"), [".npy", "shc encode"],
     "db.shcidx"),
    ("index of a truncated .npz", _shc("index", "{bad_}/truncated.npz", "--out", "{good_}/db.shcidx"),
     ["truncated.npz", "shc encode", "--out", "truncated-encoded.npz"], "db.shcidx"),  # not the file it reads
    ("index of random bytes", _shc("index", "{bad_}/noise.npz", "--out", "{good_}/db.shcidx"),
     ["noise.npz", "shc encode"], "db.shcidx"),
    ("index of a folder", _shc("index", "{bad_}/folder", "--out", "{good_}/db.shcidx"), ["is a folder"], "db.shcidx"),
    ("index of no codes", _shc("index", "{bad_}/no-codes.npz", "--out", "{good_}/db.shcidx"),
     ["no-codes.npz", "holds no codes", "shc encode"], "db.shcidx"),
    ("export of 1-D codes", _shc("export", "{bad_}/codes-1d.npz", "--to", "npy", "--out", "{bad_}/x.npy"),
     ["codes-1d.npz", "(N, q)", "shape (16,)"], "codes.npz"),
    ("index --out is a folder", _shc("index", "{good_}/codes.npz", "--out", "{bad_}/folder"),
     ["--out", "is a folder"], "db.shcidx"),
    ("search a damaged index", _shc("search", "--index", "{bad_}/damaged.shcidx", "--run", "{run}", "--image",
                                    "{query}", "--html", "{good_}/gallery.html"), ["damaged.shcidx", "checksum"],
     "gallery.html"),
    ("search --index is a folder", _shc("search", "--index", "{bad_}/folder", "--run", "{run}", "--image", "{query}",
                                        "--html", "{good_}/gallery.html"), ["folder", "shc index"], "gallery.html"),
    ("search --image missing", _shc("search", "--index", "{good_}/db.shcidx", "--run", "{run}", "--image",
                                    "{bad_}/nothing.png", "--html", "{good_}/gallery.html"), ["--image"],
     "gallery.html"),
    ("search --image not an image", _shc("search", "--index", "{good_}/db.shcidx", "--run", "{run}", "--image",
                                         "{bad_}/file", "--html", "{good_}/gallery.html"), ["--image", "cannot read"],
     "gallery.html"),
    ("search --html under a file", _shc("search", "--index", "{good_}/db.shcidx", "--run", "{run}", "--image",
                                        "{query}", "--html", "{bad_}/file/g.html"), ["--html", "is a file"],
     "gallery.html"),
    ("export-images unknown dataset", _with(data_main, "export-images", "nosuch", "--out", "{bad_}/export"),
     ["dataset", "nosuch"], "codes.npz"),
    ("export-images unknown option", _with(data_main, "export-images", "digits-composite", "--out", "{bad_}/export",
                                           "--option", "colour=1"), ["colour", "options are"], "codes.npz"),
    ("export-images --out is a file", _with(data_main, "export-images", "digits-composite", "--out", "{bad_}/file"),
     ["--out", "is a file, not a folder"], "codes.npz"),
    ("export-images --out under a file", _with(data_main, "export-images", "digits-composite", "--out",
                                               "{bad_}/file/x"), ["--out", "is a file, not a folder"], "codes.npz"),
    ("pipeline --run-dir is a file", _with(pipeline.main, "--preset", "tiny", "--run-dir", "{bad_}/file", "--quiet"),
     ["--run-dir", "is a file, not a folder"], "codes.npz"),
    ("pipeline --run-dir under a file", _with(pipeline.main, "--preset", "tiny", "--run-dir", "{bad_}/file/runs",
                                              "--quiet"), ["--run-dir", "is a file, not a folder"], "codes.npz"),
    ("reports --output under a file", _with(reports_cli.main, "--preset", "tiny", "--output", "{bad_}/file/r",
                                            "--no-compute"), ["--output", "is a file, not a folder"], "codes.npz"),
    ("reports --runs is a file", _with(reports_cli.main, "--preset", "tiny", "--runs", "{bad_}/file",
                                       "--output", "{bad_}/reports", "--no-compute"), ["--runs", "is a file"],
     "codes.npz"),
    ("results of an empty run folder", _with(results.main, "--preset", "tiny", "--run-dir", "{bad_}/folder"),
     ["missing", "python -m shc.pipeline --preset tiny"], "codes.npz"),
    ("results --reference unknown", _with(results.main, "--preset", "tiny", "--run-dir", "{run_dir}",
                                          "--reference", "nosuch"), ["--reference", "nosuch"], "codes.npz"),
]


@pytest.mark.parametrize("case, command, words, kept", CASES, ids=[case[0] for case in CASES])
def test_every_command_line_answers_bad_paths_and_damaged_files_with_one_line(world, capsys, case, command, words,
                                                                               kept):
    before = (world["good"] / kept).read_bytes()
    capsys.readouterr()
    status = command(world)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    assert all(word in lines[0] for word in words), lines[0]
    assert (world["good"] / kept).read_bytes() == before


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_a_read_only_output_folder_is_named_with_the_option(world, tmp_path, capsys, monkeypatch):
    from shc import cli_common

    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    if os.geteuid() == 0:  # root may write anywhere (CI runs as root): the folder answers as it does to a user
        real_access = os.access
        monkeypatch.setattr(cli_common.os, "access", lambda path, mode: (
            Path(path) != locked or not mode & os.W_OK) and real_access(path, mode))
    try:
        assert cli.main(["index", str(world["good"] / "codes.npz"), "--out", str(locked / "db.shcidx")]) == 2
    finally:
        locked.chmod(0o755)
    err = capsys.readouterr().err
    assert f"--out {str(locked / 'db.shcidx')!r} cannot be written ({locked} is read-only" in err, err
    assert not (locked / "db.shcidx").exists()


def test_unknown_devices_are_refused_by_name(world, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["search", "--index", str(world["good"] / "db.shcidx"), "--run", world["run"], "--image",
                  world["query"], "--device", "tpu"])
    assert exit_.value.code == 2 and "--device must be 'auto', 'cpu', 'cuda' or 'cuda:N'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # the grid's command line: argparse, before any config is built
        pipeline.main(["--preset", "tiny", "--device", "tpu", "--list"])
    assert exit_.value.code == 2 and "argument --device: --device must be" in capsys.readouterr().err
    from shc.retrieval import load_encoder

    with pytest.raises(ValueError, match="device must be .* got 'tpu'"):
        load_encoder(world["run"], device="tpu")


def test_ctrl_c_in_shc_encode_exits_130_without_a_traceback(world, tmp_path, monkeypatch, capsys):
    from shc.retrieval import encoder

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(encoder, "encode_images", interrupted)
    out = tmp_path / "codes.npz"
    assert cli.main(["encode", "--run", world["run"], "--images", world["images"], "--out", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err and not out.exists()


def test_debug_shows_the_traceback(world):
    with pytest.raises(ValueError, match="holds a single array"):
        run_cli(cli._main, ["index", str(world["bad"] / "codes.npy"), "--out", "x.shcidx", "--debug"])


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_generate_centers_names_a_bad_seed(seed):
    from shc.centers import generate_centers

    with pytest.raises(ValueError, match="seed must be a non-negative integer"):
        generate_centers("random", 4, 16, seed=seed)


# --------------------------------------------------------------------------------------------
# A full disk in the middle of a write
# --------------------------------------------------------------------------------------------
_FULL_DISK = ("import resource, runpy, sys; limit = int(sys.argv.pop(1)); "
              "resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)); "
              "runpy.run_module('shc', run_name='__main__', alter_sys=True)")


def _shc_on_a_full_disk(limit: int, argv: list[str]) -> list[str]:
    """``python -m shc *argv`` in a child whose writes past ``limit`` bytes fail with EFBIG (Python ignores SIGXFSZ).

    The child sets the limit itself rather than through ``preexec_fn``: a ``preexec_fn`` forces a plain fork of the
    test worker, whose fork handlers (gRPC's, once a Milvus test of the same worker has loaded it) then write to the
    child's stderr before it starts, an extra line this test would read as the command's."""
    return [sys.executable, "-c", _FULL_DISK, str(limit), *argv]


def test_a_kernel_whose_disk_cache_cannot_be_saved_still_runs(monkeypatch):
    """numba alone ends the call when its cache save fails (a full disk): ``shc search`` died naming no file.
    ``cached_njit`` drops the save and runs the kernel."""
    import numba
    from numba.core.caching import Cache

    from shc._jit import cached_njit

    def full_disk(self, sig, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Cache, "_save_overload", full_disk)
    monkeypatch.setattr(Cache, "load_overload", lambda self, sig, target_context: None)  # compile, never load

    def add(a, b):
        return a + b

    with pytest.raises(OSError, match="No space left"):
        numba.njit(cache=True)(add)(1, 2)
    assert cached_njit()(add)(2, 3) == 5


@pytest.mark.parametrize("command, kept", [
    (["encode", "--run", "{run}", "--images", "{images}", "--out", "{good_}/codes.npz", "--quiet", "--overwrite"], "codes.npz"),
    (["search", "--index", "{good_}/db.shcidx", "--run", "{run}", "--image", "{query}", "--html",
      "{good_}/gallery.html"], "gallery.html"),
    (["index", "{good_}/codes.npz", "--out", "{good_}/db.shcidx", "--overwrite"], "db.shcidx"),
], ids=["encode --out", "search --html", "index --out"])
def test_a_full_disk_mid_write_keeps_the_previous_file_whole(world, command, kept, tmp_path):
    """The issue's losses: on a full disk ``shc encode --out`` left a 4 KB partial archive in place of the good
    codes file and ``shc search --html`` a truncated page; now the write fails on a temporary file beside it."""
    target = world["good"] / kept
    before = target.read_bytes()
    assert len(before) > 1024
    argv = [a.format(**world, good_=world["good"], bad_=world["bad"]) for a in command]
    # an empty numba cache: the command compiles its kernels and numba's cache saves fail too, as on a full disk
    # (with a warm cache the test would depend on which test ran first)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    result = subprocess.run(_shc_on_a_full_disk(1024, argv), capture_output=True, text=True, env=env,
                            cwd=world["good"])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and str(target) in lines[0] and "write elsewhere" in lines[0], result.stderr
    assert target.read_bytes() == before
    assert sorted(p.name for p in world["good"].iterdir()) == ["codes.npz", "db.shcidx", "gallery.html"]


# --------------------------------------------------------------------------------------------
# Stores, Milvus and ports (issue 39 item 6): one line naming the input and the fix, never a traceback
# --------------------------------------------------------------------------------------------
def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def _needs_modules(*modules: str) -> None:
    import importlib.util

    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install -e '.[stores]' (CI installs it)")


#: (case, argv after `shc export SOURCE --to`, words the error line must hold, modules it needs); the source's
#: ids are 0..19, or -10..9 for a case naming negative ids
STORE_CASES = [
    ("--uri of another scheme", ["milvus", "--uri", "ftp://host/x"], ["--uri", "ftp://host/x", "http://HOST:19530"],
     ()),
    ("--uri neither a server nor a .db file", ["milvus", "--uri", "{tmp}/codes"], ["--uri", ".db"], ()),
    ("--uri under a file", ["milvus", "--uri", "{tmp}/file/x.db"], ["--uri", "is a file, not a folder"], ()),
    ("--uri a server that is not there", ["milvus", "--uri", "http://127.0.0.1:1"],
     ["http://127.0.0.1:1", "start the server"], ("pymilvus",)),
    ("--collection an existing one", ["milvus", "--uri", "{tmp}/taken.db", "--collection", "taken"],
     ["'taken' exists", "--overwrite"], ("pymilvus", "milvus_lite")),
    ("usearch of negative ids", ["usearch", "--out", "{tmp}/neg.usearch"], ["ids must be >= 0"], ("usearch",)),
]


def _small_index(negative: bool = False):
    from shc.retrieval import HashIndex

    return HashIndex(16).add(np.where(np.eye(20, 16) > 0, 1, -1), np.arange(20) - (10 if negative else 0))


@pytest.mark.parametrize("case, argv, words, modules", STORE_CASES, ids=[case[0] for case in STORE_CASES])
def test_every_store_error_is_one_line_naming_the_input_and_the_fix(tmp_path, capsys, case, argv, words, modules):
    """The issue's tracebacks: ``--uri`` was not validated like ``--out`` and pymilvus's exceptions (with its own
    logged traceback) went past the error surface."""
    _needs_modules(*modules)
    (tmp_path / "file").write_text("a plain file")
    argv = ["export", str(tmp_path / "a.shcidx"), "--to", *(a.format(tmp=tmp_path) for a in argv)]
    _small_index(negative="negative" in case).save(tmp_path / "a.shcidx")
    if "existing" in case:
        assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main(argv) == 2
    line = _one_line(capsys)
    assert all(word in line for word in words), line


def test_a_missing_milvus_collection_is_named_with_the_fix(tmp_path):
    _needs_modules("pymilvus", "milvus_lite")
    from shc.retrieval.stores import export_codes, search_store

    index = _small_index()
    export_codes(index, "milvus", str(tmp_path / "c.db"), collection="there")
    with pytest.raises(ValueError, match=r"c\.db, collection 'nosuch'.*does not exist.*--collection"):
        search_store(index, "milvus", str(tmp_path / "c.db"), np.ones((2, 16), np.int8), 1, collection="nosuch")


def test_a_full_disk_mid_npy_export_keeps_the_previous_set_whole(tmp_path):
    """The issue's mixed set: the codes of a new export were renamed in, its ids failed on a full disk, and the
    import then numbered the new codes with the previous export's ids. Now the three files are renamed together
    only once all are written."""
    from shc.retrieval import HashIndex

    rng = np.random.default_rng(0)
    for name, ids in (("old", np.arange(2000) * 3), ("new", np.arange(2000) * 7 + 1)):
        HashIndex(16).add(np.where(rng.random((2000, 16)) < 0.5, -1, 1), ids).save(tmp_path / f"{name}.shcidx")
    assert cli.main(["export", str(tmp_path / "old.shcidx"), "--to", "npy", "--out", str(tmp_path / "x.npy")]) == 0
    before = {path.name: path.read_bytes() for path in tmp_path.glob("x.*")}
    assert sorted(before) == ["x.ids.npy", "x.json", "x.npy"]
    # codes (2000 x 2 bytes) fit under the limit, ids (2000 x 8 bytes) do not
    result = subprocess.run(_shc_on_a_full_disk(8000, ["export", str(tmp_path / "new.shcidx"), "--to", "npy",
                                                     "--out", str(tmp_path / "x.npy"), "--overwrite"]),
                            capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "write elsewhere" in lines[0], result.stderr
    assert {path.name: path.read_bytes() for path in tmp_path.glob("x.*")} == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["new.shcidx", "old.shcidx", *sorted(before)]


def test_the_codes_of_an_npy_set_renamed_alone_are_refused_not_renumbered(tmp_path, capsys):
    """A newcomer's probe: ``mv c.npy renamed.npy``, then the error's own advice (``--bits``) imported the codes with
    ids 0..N-1 while their ids (not 0..N-1) sat in ``c.ids.npy``. Now the import names the set they belong to; codes
    packed by other tools (no description matches them) still import with --bits."""
    from shc.retrieval import HashIndex

    rng = np.random.default_rng(0)
    codes = np.where(rng.random((300, 12)) < 0.5, -1, 1)
    HashIndex(12).add(codes, np.arange(300) * 7 + 5).save(tmp_path / "h.shcidx")
    assert cli.main(["export", str(tmp_path / "h.shcidx"), "--to", "npy", "--out", str(tmp_path / "c.npy")]) == 0
    (tmp_path / "c.npy").rename(tmp_path / "renamed.npy")
    capsys.readouterr()
    argv = ["import", str(tmp_path / "renamed.npy"), "--from", "npy", "--bits", "12", "--out", str(tmp_path / "r.shcidx")]
    assert cli.main(argv) == 2
    line = _one_line(capsys)
    assert "c.json" in line and "renamed.json" in line and "renamed.ids.npy" in line, line
    assert not (tmp_path / "r.shcidx").exists()
    (tmp_path / "c.json").unlink()  # no description names them: codes packed elsewhere, numbered 0..N-1
    assert cli.main(argv) == 0
    assert np.array_equal(HashIndex.load(tmp_path / "r.shcidx").search(codes[:3], 1)[1][:, 0], [0, 1, 2])


def test_export_and_import_replace_files_only_with_overwrite(tmp_path, capsys):
    """``shc export --to npy`` and ``shc import`` replaced an earlier set or index without a word, while ``--to
    milvus`` refused an existing collection: every output now needs --overwrite to be replaced."""
    from shc.retrieval import HashIndex

    rng = np.random.default_rng(1)
    for name, bits in (("a", 16), ("b", 32)):
        HashIndex(bits).add(np.where(rng.random((50, bits)) < 0.5, -1, 1)).save(tmp_path / f"{name}.shcidx")
    export = ["export", str(tmp_path / "a.shcidx"), "--to", "npy", "--out", str(tmp_path / "x.npy")]
    assert cli.main(export) == 0
    before = {path.name: path.read_bytes() for path in tmp_path.glob("x.*")}
    export[1] = str(tmp_path / "b.shcidx")
    capsys.readouterr()
    assert cli.main(export) == 2 and "already there; pass --overwrite" in _one_line(capsys)
    assert {path.name: path.read_bytes() for path in tmp_path.glob("x.*")} == before
    assert cli.main([*export, "--overwrite"]) == 0 and json.loads((tmp_path / "x.json").read_text())["num_bits"] == 32
    imported = ["import", str(tmp_path / "x.npy"), "--from", "npy", "--out", str(tmp_path / "a.shcidx")]
    capsys.readouterr()
    assert cli.main(imported) == 2 and "a.shcidx is already there" in _one_line(capsys)
    assert HashIndex.load(tmp_path / "a.shcidx").num_bits == 16
    assert cli.main([*imported, "--overwrite"]) == 0 and HashIndex.load(tmp_path / "a.shcidx").num_bits == 32


def test_shc_encode_refuses_the_folder_of_an_interrupted_export_images(world, tmp_path, monkeypatch, capsys):
    """The issue's case: Ctrl-C in ``export-images`` left a partial folder with nothing to tell, and ``shc encode``
    encoded it as if it were the split. The export now records its completion in the folder."""
    from PIL import Image

    real, calls = Image.fromarray, []

    def interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) > 5:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    out, codes = tmp_path / "export", tmp_path / "codes.npz"
    export = ["export-images", "digits-composite", "--out", str(out), *world["options"]]
    monkeypatch.setattr(Image, "fromarray", interrupted)
    assert data_main(export) == 130
    monkeypatch.undo()
    assert len(list(out.rglob("*.png"))) == 5
    for images in (out, next(out.iterdir())):  # the folder, and a class folder inside it
        capsys.readouterr()
        assert cli.main(["encode", "--run", world["run"], "--images", str(images), "--out", str(codes)]) == 2
        line = _one_line(capsys)
        assert "unfinished" in line and "export-images" in line and str(out) in line, line
        assert not codes.exists()
    assert data_main(export) == 0  # the rerun finishes the folder, and it is encoded
    assert cli.main(["encode", "--run", world["run"], "--images", str(out), "--out", str(codes), "--quiet"]) == 0


def test_export_images_refuses_a_folder_of_other_files(world, tmp_path, capsys):
    """A second export of another split into the same folder mixed the two splits' images, and shc encode then
    encoded both as one; a folder of other files was written into the same way."""
    out = tmp_path / "export"
    database = ["export-images", "digits-composite", "--out", str(out), *world["options"]]
    assert data_main(database) == 0
    before = sorted(path.relative_to(out) for path in out.rglob("*.png"))
    capsys.readouterr()
    assert data_main([*database, "--split", "query"]) == 2
    line = _one_line(capsys)
    assert "another export" in line and "'database'" in line and "new or empty --out" in line, line
    assert sorted(path.relative_to(out) for path in out.rglob("*.png")) == before  # nothing added, nothing lost
    assert data_main(database) == 0  # the same export again rewrites its own files
    other = tmp_path / "holiday"
    other.mkdir()
    (other / "photo.png").write_bytes(b"not an export")
    assert data_main(["export-images", "digits-composite", "--out", str(other), *world["options"]]) == 2
    assert "files of its own" in _one_line(capsys)
    assert [path.name for path in other.iterdir()] == ["photo.png"]


# --------------------------------------------------------------------------------------------
# The explorer's port (issue 39 items 4, 6)
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_the_explorer_refuses_a_port_out_of_range_by_name(port, capsys):
    from shc import explore

    with pytest.raises(SystemExit) as exit_:
        explore.main([f"--port={port}"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--port" in err and "1 to 65535" in err and "Traceback" not in err, err
    with pytest.raises(ValueError, match="port must be .*1 to 65535"):
        explore.serve(int(port) if port != "http" else port)


def test_the_explorer_refuses_a_busy_port_instead_of_serving_on_another(capsys):
    """The issue's case: with the port taken, Voila served on the next one while the command announced the
    taken one."""
    pytest.importorskip("voila", reason="the explore extra is not installed: pip install -e '.[explore]'")
    import socket

    from shc import explore

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert explore.main([f"--port={port}"]) == 2
    line = _one_line(capsys)
    assert f"--port {port}" in line and "in use" in line and "--port 0" in line, line


def test_the_explorer_announces_the_port_it_serves(tmp_path):
    """``--port 0``: a free port is chosen, and the line printed names it once the server answers there. Stopped
    by SIGTERM, it says so (not a pipeline's "a rerun resumes") and leaves no temporary app page behind."""
    pytest.importorskip("voila", reason="the explore extra is not installed: pip install -e '.[explore]'")
    import os
    import re
    import socket

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "shc.explore", "--port=0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env={**os.environ, "TMPDIR": str(temporary)})
    try:
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match and int(match.group(1)) > 0, line
        socket.create_connection(("127.0.0.1", int(match.group(1))), timeout=10).close()  # listening already
        assert [p.name.startswith("shc-explorer-") for p in temporary.iterdir()].count(True) == 1
    finally:
        process.terminate()
        try:
            _, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert "explorer stopped." in err and "rerun resumes" not in err
    assert not [p for p in temporary.iterdir() if p.name.startswith("shc-explorer-")]


# --------------------------------------------------------------------------------------------
# The report maintenance tools and the paper extractor: the same one-line surface
# --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("module, argv, words", [
    ("shc.reports.refresh", ["{missing}"], "is not a report folder"),
    ("shc.reports.corrections", ["{missing}"], "is not a report folder"),
    ("shc.reports.bundle", ["{missing}"], "is not a built report folder"),
    ("shc.reports.browser", ["{missing}"], "is not a report folder"),
    ("shc.paper", ["--extract", "{missing}"], "is not a file"),
])
def test_the_maintenance_tools_answer_a_missing_folder_with_one_line(tmp_path, capsys, module, argv, words):
    import importlib

    main = importlib.import_module(module).main
    code = main([argument.format(missing=tmp_path / "missing") for argument in argv])
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err, err


@pytest.mark.parametrize("module", ["shc.reports.check", "shc.reports.bundle", "shc.reports.refresh"])
def test_running_a_report_module_does_not_import_it_twice(module, tmp_path):
    """``python -m shc.reports.check`` (the docs' checker command): runpy warned that the package had imported
    the module before it ran, so it ran a second copy; the package now imports its submodules lazily."""
    result = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--help"],
                            capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0 and "RuntimeWarning" not in result.stderr, result.stderr
