"""``shc export`` / ``shc import`` (also ``python -m shc.retrieval export|import ...``): codes into the stores
users search (:mod:`shc.retrieval.stores`) and back.

::

    shc export SOURCE --to faiss|usearch|npy --out FILE            [-k 10] [--queries 100]
    shc export SOURCE --to milvus --uri codes.db|http://HOST:19530 [--collection NAME] [--overwrite]
    shc import FILE --from faiss|npy --out index.shcidx [--bits Q]

``SOURCE`` is an index file (``shc index``), a codes file (``shc encode``) or a pipeline run's ``codes.npz``
(its database codes). Every export is checked by a round trip: ``--queries`` of the exported codes are searched
in the store and the top-k compared with ``HashIndex``'s (exact stores: the same up to the order inside a tie;
approximate stores: recall@k).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from shc.cli_common import output_file, output_folder, positive_int, refuse_overwriting, refuse_replacing, run_cli
from shc.retrieval.index import HashIndex
from shc.retrieval.stores import STORES, export_codes, export_is_exact, load_codes, round_trip, store_files

__all__ = ["add_commands", "main", "read_source"]


def read_source(path: str | Path) -> HashIndex:
    """A ``HashIndex`` from an index file, an ``shc encode`` codes file or a pipeline run's ``codes.npz``."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise FileNotFoundError(f"{path} is not a file; give an index (.shcidx from `shc index`), a codes file "
                                "(`shc encode`) or a run's codes.npz.")
    if file.suffix != ".npz":
        return HashIndex.load(file)
    import zipfile
    import zlib

    damaged = (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error)
    remedy = ("it is damaged or not such a file; write it again (`shc encode --out`, or rerun the pipeline, which "
              "moves a damaged run aside and recomputes it)")
    try:
        archive = np.load(file, allow_pickle=False)
    except damaged as error:
        raise ValueError(f"{path} cannot be read as a codes archive ({type(error).__name__}); {remedy}.") from None
    if not isinstance(archive, np.lib.npyio.NpzFile):
        raise ValueError(f"{path} holds a single array (.npy renamed .npz?), not the archive `shc encode` or a run "
                         "writes; give a codes file, a run's codes.npz or an index (.shcidx).")
    with archive:
        key = "codes" if "codes" in archive.files else "database_codes" if "database_codes" in archive.files else None
        if key is None:
            raise ValueError(f"{path} holds neither 'codes' (`shc encode`) nor 'database_codes' (a run's codes.npz); "
                             "give one of those files.")
        try:
            codes = archive[key]
            bits = int(archive["bits"]) if "bits" in archive.files else codes.shape[-1]
        except damaged as error:
            raise ValueError(f"{path} is damaged ({type(error).__name__}); {remedy}.") from None
    if codes.ndim != 2 or len(codes) == 0:
        raise ValueError(f"{path}: {key!r} must hold at least one code, an (N, q) array, got shape {codes.shape}; "
                         f"{remedy}.")
    return HashIndex(bits).add(codes)


def _queries(index: HashIndex, count: int) -> np.ndarray:
    """``count`` of the index's own codes, evenly spaced, as packed uint8 (queries of the round trip)."""
    rows = np.unique(np.linspace(0, len(index) - 1, num=min(count, len(index))).astype(np.int64))
    return np.ascontiguousarray(index._codes[rows].view(np.uint8)[:, :(index.num_bits + 7) // 8])


#: Schemes of a Milvus server's address (pymilvus's list); anything else with "://" is refused.
_MILVUS_SCHEMES = ("http", "https", "tcp", "unix")


def _milvus_uri(uri: str | None) -> str:
    """``--uri`` checked like ``--out``: a server's address (``http://HOST:19530``, also https, tcp, unix) or a
    Milvus Lite database ending in ``.db`` that can be written (a file or folder there, or a writable folder)."""
    from urllib.parse import urlsplit

    what = "give a Milvus Lite file (codes.db) or a server (http://HOST:19530)"
    if not uri:
        raise ValueError(f"--to milvus needs --uri: {what}.")
    if "://" in uri:
        parts = urlsplit(uri)
        if parts.scheme not in _MILVUS_SCHEMES or not (parts.netloc or parts.path):
            raise ValueError(f"--uri {uri!r} is not a Milvus server address; {what}.")
        return uri
    if not uri.endswith(".db"):
        raise ValueError(f"--uri {uri!r} is neither a server address nor a Milvus Lite file (their names end in .db); "
                         f"{what}.")
    path = Path(uri).expanduser()  # Milvus Lite keeps a folder there (earlier versions a file)
    return str(output_folder(path, "--uri") if path.is_dir() else output_file(path, "--uri"))


def _destination(args: argparse.Namespace) -> tuple[str, Any, dict[str, Any], dict[str, Any]]:
    """(option, location, export options, search options) of ``shc export``, checked before anything is read."""
    if args.to == "milvus":
        return ("--uri", _milvus_uri(args.uri), {"collection": args.collection, "overwrite": args.overwrite,
                "layout": args.milvus_layout, "index_type": args.milvus_index}, {"collection": args.collection})
    if not args.out:
        raise ValueError(f"--to {args.to} needs --out FILE.")
    return "--out", output_file(args.out, "--out"), {}, {}


def _export(args: argparse.Namespace) -> int:
    option, location, export_options, options = _destination(args)
    refuse_overwriting(store_files(args.to, location), [args.source], option)
    index = read_source(args.source)
    if args.to != "milvus":  # Milvus refuses an existing collection itself, after connecting
        refuse_replacing(store_files(args.to, location), option, args.overwrite)
    export_codes(index, args.to, location, **export_options)
    where = f"Milvus collection {args.collection!r} at {location}" if args.to == "milvus" else \
        ", ".join(map(str, store_files(args.to, location)))
    print(f"exported {len(index)} codes of {index.num_bits} bits to {args.to}: {where}")
    exact = export_is_exact(args.to, location, **({"layout": args.milvus_layout, "index_type": args.milvus_index}
                                                  if args.to == "milvus" else {}))
    report = round_trip(index, args.to, location, _queries(index, args.queries), k=args.k, exact=exact, **options)
    if report["exact"]:
        verdict = "identical to HashIndex (up to the order inside a tie)" if report["same"] else \
            f"DIFFERENT from HashIndex (recall@{report['k']} {report['recall']:.4f})"
    else:
        verdict = f"approximate: recall@{report['k']} {report['recall']:.4f} against HashIndex's exact top-k"
    print(f"round trip: {report['queries']} queries, top-{report['k']} from {args.to} {verdict}")
    return 0 if report["same"] or not report["exact"] else 1


def _import(args: argparse.Namespace) -> int:
    out = output_file(args.out, "--out")
    refuse_overwriting([out], [args.file, *store_files(args.source_kind, args.file)], "--out")
    index = load_codes(args.source_kind, args.file, num_bits=args.bits)
    refuse_replacing([out], "--out", args.overwrite)
    index.save(out)
    print(f"imported {len(index)} codes of {index.num_bits} bits from {args.source_kind} {args.file}: {out}")
    return 0


def add_commands(commands) -> None:
    """The ``export`` and ``import`` subcommands, on an ``add_subparsers()`` object."""
    export = commands.add_parser("export", help="export codes to FAISS, Milvus, usearch or packed .npy "
                                 "(checked by a round trip)")
    export.add_argument("source", help="index file (shc index), codes file (shc encode) or a run's codes.npz")
    export.add_argument("--to", required=True, choices=STORES.names(),
                        help="; ".join(f"{name}: {store.description}" for name, store in STORES.items()))
    export.add_argument("--out", help="file to write (faiss, usearch, npy)")
    export.add_argument("--uri", help="milvus: a Milvus Lite file (codes.db) or a server (http://HOST:19530)")
    export.add_argument("--collection", default="shc_codes", help="milvus: collection name (default shc_codes)")
    export.add_argument("--overwrite", action="store_true",
                        help="replace the files of --out, or (milvus) the collection, if they are there")
    export.add_argument("--milvus-layout", default="auto", choices=("auto", "binary", "float"),
                        help="milvus: binary vectors + HAMMING (servers), 0/1 floats + L2 (Milvus Lite); auto picks")
    export.add_argument("--milvus-index", default="BIN_FLAT", choices=("BIN_FLAT", "BIN_IVF_FLAT"),
                        help="milvus binary layout: BIN_FLAT (exact, default) or BIN_IVF_FLAT (approximate)")
    export.add_argument("-k", type=positive_int, default=10, help="round trip: results per query (default 10)")
    export.add_argument("--queries", type=positive_int, default=100,
                        help="round trip: how many of the codes are searched (default 100)")
    export.set_defaults(handler=_export)

    load = commands.add_parser("import", help="read codes of a FAISS binary flat index or packed .npy into an "
                               "index file")
    load.add_argument("file", help="FAISS index file or packed .npy codes (with .ids.npy / .json beside it)")
    importable = [name for name, store in STORES.items() if store.load is not None]
    load.add_argument("--from", dest="source_kind", required=True, choices=importable)
    load.add_argument("--out", required=True, help="index file to write (.shcidx)")
    load.add_argument("--bits", type=positive_int, default=None,
                      help="code length q (default: from the .json, or FAISS's d)")
    load.add_argument("--overwrite", action="store_true", help="replace --out if it is there")
    load.set_defaults(handler=_import)


def _main(argv: Sequence[str] | None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shc.retrieval",
                                     description="Export codes to the stores users search, and import them back.")
    add_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(_main, argv)
