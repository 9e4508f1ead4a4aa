"""Binary codes into the stores users search, and back: FAISS binary indexes, Milvus, usearch, packed ``.npy``.

Every target is a :class:`Store` in :data:`STORES` (the registry idiom of :mod:`shc.registry`): ``export``
writes a :class:`~shc.retrieval.HashIndex`'s codes and ids there, ``search`` answers top-k queries from the
exported store (the round-trip check :func:`round_trip` compares it with ``HashIndex``), and ``load`` (where
the store keeps plain codes) reads them back into a ``HashIndex``.

=========  =========================================================  ==========================================
store      what is written                                            bit order of dimension j (0-based)
=========  =========================================================  ==========================================
faiss      ``faiss.write_index_binary`` of ``IndexBinaryFlat``         byte j // 8, bit j % 8 counted from the
           (``IndexBinaryIDMap`` around it unless ids are 0..N-1);     least significant: FAISS's own order
           d = 8 ceil(q / 8), padding bits 0; exact                    (``faiss.real_to_binary``)
milvus     a collection ``id`` (INT64 primary key) + ``code``:        binary: as ``np.packbits`` (byte j // 8,
           BINARY_VECTOR, BIN_FLAT (exact) or BIN_IVF_FLAT, HAMMING    bit 7 - j % 8), pymilvus's convention;
           on a Milvus server; FLOAT_VECTOR of 0/1, FLAT, L2 on        float: one 0.0/1.0 per dimension
           Milvus Lite (which has no binary vectors; squared L2 of
           0/1 vectors is the Hamming distance, exact)
usearch    ``usearch.index.Index(ndim=8 ceil(q / 8), metric=          as ``np.packbits``, usearch's convention
           "hamming", dtype="b1")``, saved; HNSW: approximate
npy        ``<name>.npy`` (N, ceil(q / 8)) uint8, ``<name>.ids.npy``   as ``np.packbits(codes > 0, axis=1)``
           (N,) int64, ``<name>.json`` (bits, count, bit order, the    (``"bitorder": "big"``), HashIndex's own
           files' names and SHA-256s); written together: each to a
           temporary, then all renamed, the description last
=========  =========================================================  ==========================================

``<name>`` is the name given without a final ``.npy`` (``.ids.npy``, ``.json``): ``codes.bin`` writes
``codes.bin.npy``, ``codes.bin.ids.npy`` and ``codes.bin.json``, and each of those names imports the set. The
import reads the files the description names and checks their SHA-256s, so a set mixed from two exports (a
crash between two renames, a file copied by hand) is refused instead of numbered with another export's ids.

Hamming distances do not depend on the bit order as long as the database and the queries use the same one:
queries sent through :func:`search_store` are packed in each store's order. Ties: ``HashIndex`` orders equal
distances by ascending id; the stores order them their own way (FAISS by insertion order within its heap,
Milvus and usearch unspecified), and at the k-th distance a store may return other ids of that same distance.
:func:`compare_topk` therefore calls two answers equal when their distances are equal and their ids agree
except inside the tie at each query's last distance, where every id returned must lie at that distance
(docs/scale-out.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shc._io import atomic_path, jsonable
from shc.registry import Registry
from shc.retrieval.index import HashIndex, pack_codes

__all__ = ["STORES", "Store", "compare_topk", "export_codes", "export_is_exact", "from_faiss", "from_npy", "load_codes",
           "round_trip", "search_store", "store_files", "to_faiss", "to_milvus", "to_npy", "to_usearch"]

_INSTALL = "pip install -e '.[stores]'"
_REVERSE_BITS = np.array([int(f"{value:08b}"[::-1], 2) for value in range(256)], np.uint8)
"""Byte -> the byte with its bit order reversed: np.packbits order <-> FAISS's order."""
MILVUS_INSERT_ROWS = 50_000
"""Rows per Milvus insert call (a call's message must stay below the server's 64 MiB gRPC limit)."""


def _require(module: str, store: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{module.split('.')[0]} is not installed (needed for the {store} store): "
                          f"{_INSTALL}") from None


def _packed_bytes(index: HashIndex) -> np.ndarray:
    """(N, ceil(q / 8)) uint8 in np.packbits order: the index's codes as stored (HashIndex packs this way)."""
    return np.ascontiguousarray(index._codes.view(np.uint8)[:, :(index.num_bits + 7) // 8])


def _packed_queries(index: HashIndex, queries: Any) -> np.ndarray:
    """Queries (+-1 or packed, :func:`pack_codes`) as (Q, ceil(q / 8)) uint8 in np.packbits order."""
    return np.ascontiguousarray(pack_codes(queries, index.num_bits).view(np.uint8)[:, :(index.num_bits + 7) // 8])


def _checked_index(index: Any) -> HashIndex:
    if not isinstance(index, HashIndex):
        raise TypeError(f"expected a shc.retrieval.HashIndex, got {type(index).__name__}: build one with "
                        "HashIndex(num_bits).add(codes, ids) or HashIndex.load(path).")
    if len(index) == 0:
        raise ValueError("the index is empty: add codes before exporting.")
    return index


# ---------------------------------------------------------------------------------------------
# FAISS
# ---------------------------------------------------------------------------------------------
def to_faiss(index: HashIndex, path: str | os.PathLike) -> Path:
    """Write ``index`` as a FAISS binary flat index file (``faiss.read_index_binary`` reads it).

    Codes are padded to d = 8 ceil(q / 8) bits with zeros and packed in FAISS's bit order (dimension j in bit
    j % 8 of byte j // 8, least significant first). Ids other than 0..N-1 are kept by an ``IndexBinaryIDMap``.
    The file is written atomically.
    """
    faiss = _require("faiss", "faiss")
    index = _checked_index(index)
    flat = faiss.IndexBinaryFlat(8 * ((index.num_bits + 7) // 8))
    data = _REVERSE_BITS[_packed_bytes(index)]
    if np.array_equal(index._ids, np.arange(len(index))):
        flat.add(data)
        stored = flat
    else:
        stored = faiss.IndexBinaryIDMap(flat)
        stored.add_with_ids(data, index._ids)
    with atomic_path(path, suffix=".tmp.faiss") as temporary:
        faiss.write_index_binary(stored, str(temporary))
    return Path(path)


def _read_faiss(path: str | os.PathLike):
    faiss = _require("faiss", "faiss")
    if not Path(path).is_file():
        raise FileNotFoundError(f"no FAISS index file at {path}: write one with `shc export --to faiss --out {path}`.")
    try:
        return faiss.read_index_binary(str(path))
    except RuntimeError as error:
        raise ValueError(f"{path} is not a FAISS binary index file ({str(error).splitlines()[0]}); give a file "
                         "written by faiss.write_index_binary.") from None


def from_faiss(path: str | os.PathLike, num_bits: int | None = None) -> HashIndex:
    """A ``HashIndex`` of the codes of a FAISS binary flat index file (``IndexBinaryFlat``, or an
    ``IndexBinaryIDMap`` around one for its ids).

    Parameters
    ----------
    num_bits : int, optional
        The code length q; default the index's d (FAISS keeps whole bytes: a 12-bit code was stored in 16, and
        the bits after the q-th must then be 0).
    """
    faiss = _require("faiss", "faiss")  # without it: the install command, not a bare ModuleNotFoundError

    stored = _read_faiss(path)
    inner, ids = stored, None
    if isinstance(stored, faiss.IndexBinaryIDMap):
        inner, ids = faiss.downcast_IndexBinary(stored.index), faiss.vector_to_array(stored.id_map).astype(np.int64)
    if not isinstance(inner, faiss.IndexBinaryFlat):
        raise ValueError(f"{path} holds a {type(inner).__name__}; only IndexBinaryFlat (optionally in an "
                         "IndexBinaryIDMap) keeps every code for import: export a flat index from FAISS.")
    bits = inner.d if num_bits is None else num_bits
    if not 1 <= bits <= inner.d or (inner.d + 7) // 8 != (bits + 7) // 8:
        raise ValueError(f"num_bits {bits} does not fit {path}'s {inner.d}-bit FAISS codes; give the code length "
                         f"q with {inner.d - 7} <= q <= {inner.d}.")
    codes = faiss.vector_to_array(inner.xb).reshape(inner.ntotal, inner.code_size)
    return HashIndex(bits).add(_REVERSE_BITS[codes], ids)


def _search_faiss(path: str | os.PathLike, queries: np.ndarray, k: int, **_: Any) -> tuple[np.ndarray, np.ndarray]:
    distances, ids = _read_faiss(path).search(_REVERSE_BITS[queries], k)
    missing = distances == np.iinfo(np.int32).max  # FAISS's empty slot (its id -1 may be a real id)
    return np.where(missing, -1, distances).astype(np.int64), np.where(missing, -1, ids).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Packed .npy
# ---------------------------------------------------------------------------------------------
_NPY_ENDINGS = (".ids.npy", ".npy", ".json")


def _npy_paths(path: str | os.PathLike) -> tuple[Path, Path, Path]:
    """The codes, ids and description files of the npy export named ``path``: ``<name>.npy``, ``<name>.ids.npy``,
    ``<name>.json``, ``<name>`` being the name without a final ``.ids.npy``, ``.npy`` or ``.json``."""
    path = Path(path)
    name = next((path.name[:-len(end)] for end in _NPY_ENDINGS if path.name.endswith(end) and path.name != end),
                path.name)
    return path.with_name(name + ".npy"), path.with_name(name + ".ids.npy"), path.with_name(name + ".json")


def _digest(array: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes (what the npy description records of each file)."""
    header = f"{array.dtype.str}{array.shape}".encode()
    return hashlib.sha256(header + np.ascontiguousarray(array).tobytes()).hexdigest()


def _npy_bytes(array: np.ndarray) -> bytes:
    """``array`` as the bytes of a ``.npy`` file. Written by Python's own ``write``, whose error on a full disk
    carries its errno (numpy's ``np.save`` to a file says only "N requested and M written")."""
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def to_npy(index: HashIndex, path: str | os.PathLike) -> Path:
    """Write ``<name>.npy`` (N, ceil(q / 8)) uint8 codes in ``np.packbits(codes > 0, axis=1)`` order,
    ``<name>.ids.npy`` (N,) int64 and ``<name>.json`` (``num_bits``, ``count``, ``bitorder``: "big", how to
    unpack, the two files' names and SHA-256s). Returns the codes file.

    The three are one transaction: each is written to a temporary beside it, and only when all are written are
    they renamed, the description last; a failure (a full disk, Ctrl-C) leaves the previous set as it was.
    """
    index = _checked_index(index)
    codes_path, ids_path, meta_path = _npy_paths(path)
    packed, ids = _packed_bytes(index), np.asarray(index._ids, np.int64)
    meta = {"num_bits": index.num_bits, "count": len(index), "bitorder": "big", "codes": codes_path.name,
            "ids": ids_path.name, "sha256": {"codes": _digest(packed), "ids": _digest(ids)},
            "unpack": f"np.unpackbits(np.load('{codes_path.name}'), axis=1, count={index.num_bits}) (1 = +1, 0 = -1)"}
    # renamed in the reverse order of entering: codes, ids, then the description that vouches for both
    with atomic_path(meta_path, suffix=".tmp.json") as meta_file, \
            atomic_path(ids_path, suffix=".tmp.npy") as ids_file, \
            atomic_path(codes_path, suffix=".tmp.npy") as codes_file:
        codes_file.write_bytes(_npy_bytes(packed))
        ids_file.write_bytes(_npy_bytes(ids))
        meta_file.write_text(json.dumps(jsonable(meta), indent=1) + "\n", encoding="utf-8")
    return codes_path


_NPY_REMEDY = "export again with `shc export SOURCE --to npy --out FILE`"


def _npy_description(meta_path: Path) -> dict[str, Any]:
    """The description an npy export wrote ({} when there is none: codes packed by other tools)."""
    if not meta_path.is_file():
        return {}
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{meta_path} is damaged ({error}): it is not the description `shc export --to npy` "
                         f"writes; {_NPY_REMEDY}.") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{meta_path} is damaged (not a JSON object): it is not the description `shc export --to "
                         f"npy` writes; {_NPY_REMEDY}.")
    return meta


def _load_described(path: Path, meta_path: Path, meta: dict[str, Any], key: str) -> np.ndarray:
    """One array of an npy set, checked against the SHA-256 its description recorded (when it did)."""
    try:
        array = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise ValueError(f"{path} cannot be read as a .npy array ({error}): it is damaged; {_NPY_REMEDY}.") from None
    expected = (meta.get("sha256") or {}).get(key)
    if expected is not None and _digest(array) != expected:
        raise ValueError(f"{path} is not the one {meta_path} describes (its {key} belong to another export: the set "
                         f"is mixed); {_NPY_REMEDY}.")
    return array


def from_npy(path: str | os.PathLike, num_bits: int | None = None) -> HashIndex:
    """A ``HashIndex`` of packed ``.npy`` codes: ``<name>.npy`` (np.packbits order) with ``<name>.ids.npy``
    and ``<name>.json`` (gives ``num_bits``; else pass ``num_bits``).

    With the description, exactly the files it names are read and checked against its SHA-256s (ids it names
    must be there); without it (codes packed by other tools), ids are ``<name>.ids.npy`` or else 0..N-1.
    """
    codes_path, ids_path, meta_path = _npy_paths(path)
    meta = _npy_description(meta_path)
    # the names the description records, unless the set was renamed together (its SHA-256s still check the files)
    recorded = [meta_path.with_name(Path(str(meta.get(key, given.name))).name)
                for key, given in (("codes", codes_path), ("ids", ids_path))]
    if recorded[0].is_file() or not codes_path.is_file():
        codes_path, ids_path = recorded
    if not codes_path.is_file():
        raise FileNotFoundError(f"no packed codes at {codes_path}: write them with `shc export --to npy`.")
    if "ids" in meta and not ids_path.is_file():
        raise FileNotFoundError(f"{ids_path} is missing, and {meta_path} says the export wrote its ids there; "
                                f"{_NPY_REMEDY}.")
    if meta.get("bitorder", "big") != "big":
        raise ValueError(f"{meta_path} says bitorder {meta['bitorder']!r}; this reader takes np.packbits's "
                         "'big' order: repack with np.packbits(bits, axis=1).")
    bits = num_bits if num_bits is not None else meta.get("num_bits")
    if num_bits is not None and meta.get("num_bits") is not None and int(num_bits) != int(meta["num_bits"]):
        raise ValueError(f"--bits {num_bits} contradicts {meta_path}, which says the codes have {meta['num_bits']} "
                         "bits: leave --bits out (the description gives it) or give the export's own length.")
    codes = _load_described(codes_path, meta_path, meta, "codes")
    if not meta:
        _refuse_a_set_renamed_alone(codes_path, codes)
    if bits is None:
        raise ValueError(f"{meta_path} is missing, so the code length is unknown: pass num_bits (--bits) for codes "
                         f"packed by other tools (their ids are {ids_path.name} if it is there, else 0..N-1).")
    ids = _load_described(ids_path, meta_path, meta, "ids") if ids_path.is_file() else None
    return HashIndex(int(bits)).add(codes, ids)


def _refuse_a_set_renamed_alone(codes_path: Path, codes: np.ndarray) -> None:
    """Refuse codes without a description of their own whose SHA-256 an npy description beside them records: the
    codes file of an ``shc export`` set renamed alone. Read with ``--bits`` they got ids 0..N-1 without a word while
    their ids sat under the old name (a newcomer's probe, 2026-12-03)."""
    digest = _digest(codes)
    for other in sorted(codes_path.parent.glob("*.json")):
        try:
            meta = json.loads(other.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError, OSError):
            continue
        if isinstance(meta, dict) and isinstance(meta.get("sha256"), dict) and meta["sha256"].get("codes") == digest:
            stem = other.name.removesuffix(".json")
            raise ValueError(f"{codes_path} holds the codes {other} describes (export {stem!r}; its SHA-256 "
                             f"matches), renamed without its description and ids: rename {stem}.json and "
                             f"{stem}.ids.npy with it to {codes_path.stem}.json and {codes_path.stem}.ids.npy, or "
                             f"import {stem}.npy.")


def _search_npy(path: str | os.PathLike, queries: np.ndarray, k: int, **_: Any) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k over the codes as read back from the files (:func:`from_npy`)."""
    return from_npy(path).search(queries, k, method="linear")


# ---------------------------------------------------------------------------------------------
# usearch
# ---------------------------------------------------------------------------------------------
def to_usearch(index: HashIndex, path: str | os.PathLike, connectivity: int | None = None) -> Path:
    """Write ``index`` as a usearch index (``Index(ndim=8 ceil(q / 8), metric="hamming", dtype="b1")``, keys =
    ids, vectors in np.packbits order), saved atomically; ``Index.restore(path)`` opens it."""
    usearch = _require("usearch.index", "usearch")
    index = _checked_index(index)
    if index._ids.min() < 0:
        raise ValueError("usearch keys are unsigned: ids must be >= 0 (re-number them before exporting).")
    store = usearch.Index(ndim=8 * ((index.num_bits + 7) // 8), metric="hamming", dtype="b1",
                          connectivity=connectivity)
    store.add(index._ids.astype(np.uint64), _packed_bytes(index))
    with atomic_path(path, suffix=".tmp.usearch") as temporary:
        store.save(str(temporary))
    return Path(path)


def _search_usearch(path: str | os.PathLike, queries: np.ndarray, k: int, exact: bool = False,
                    **_: Any) -> tuple[np.ndarray, np.ndarray]:
    usearch = _require("usearch.index", "usearch")
    if not Path(path).is_file():
        raise FileNotFoundError(f"no usearch index at {path}: write one with `shc export --to usearch --out {path}`.")
    try:
        store = usearch.Index.restore(str(path))
    except (RuntimeError, ValueError) as error:  # usearch's own words ("End of file reached!") name no file
        store, said = None, f" ({error})"
    else:
        said = ""
    if store is None:
        raise ValueError(f"{path} is not a usearch index{said}: it is damaged or another format; write one with "
                         f"`shc export --to usearch --out {path}`.")
    matches = store.search(queries, k, exact=exact)
    keys, distances = np.atleast_2d(matches.keys), np.atleast_2d(matches.distances)
    found = np.arange(keys.shape[1])[None, :] < np.atleast_1d(matches.counts)[:, None]
    return (np.where(found, np.rint(np.where(found, distances, 0.0)), -1).astype(np.int64),
            np.where(found, keys.astype(np.int64), -1))


# ---------------------------------------------------------------------------------------------
# Milvus
# ---------------------------------------------------------------------------------------------
def _is_lite(uri: str) -> bool:
    """Milvus Lite: a local file path as uri (pymilvus then starts the embedded server)."""
    return "://" not in uri


def _milvus_layout(uri: str, layout: str) -> str:
    if layout not in ("auto", "binary", "float"):
        raise ValueError(f"layout must be 'auto', 'binary' or 'float', got {layout!r}.")
    return ("float" if _is_lite(uri) else "binary") if layout == "auto" else layout


#: What to do about a pymilvus error, by what it says: (words in the message, the fix), the first that matches.
_MILVUS_FIXES = (
    ("Fail connecting", "start the server, or correct --uri (a server's address, or a .db file for Milvus Lite)"),
    ("illegal", "give --uri as http://HOST:19530 (a server; also https, tcp, unix) or a local file ending in .db "
                "(Milvus Lite)"),
    ("does not exist", "export to it first: `shc export SOURCE --to milvus --uri URI --collection NAME`"),
)


@contextlib.contextmanager
def _milvus_errors(pymilvus, uri: str, collection: str) -> Iterator[None]:
    """pymilvus's exceptions as one line naming the uri, the collection and what to do; pymilvus's own error log
    (a traceback on stderr for each failed call) is silenced meanwhile, the exception carrying what it said."""
    logger = logging.getLogger("pymilvus")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    except pymilvus.MilvusException as error:
        said = " ".join(str(getattr(error, "message", "") or error).split())
        fix = next((fix for words, fix in _MILVUS_FIXES if words in said),
                   "check --uri and --collection, and the server's log")
        kind = ConnectionError if "Fail connecting" in said else ValueError
        raise kind(f"Milvus at {uri}, collection {collection!r}: {said}; {fix}.") from error
    finally:
        logger.setLevel(level)


def _milvus_files(uri: str | os.PathLike) -> list[Path]:
    """The file Milvus Lite keeps its collections in (none for a server)."""
    return [Path(uri)] if _is_lite(str(uri)) else []


def _milvus_rows(packed: np.ndarray, layout: str) -> list:
    """Vectors in pymilvus's input form: bytes of np.packbits order (binary) or lists of 0.0/1.0 (float)."""
    if layout == "binary":
        return [row.tobytes() for row in packed]
    return np.unpackbits(packed, axis=1).astype(np.float32).tolist()


def to_milvus(index: HashIndex, uri: str, collection: str = "shc_codes", *, layout: str = "auto",
              index_type: str = "BIN_FLAT", nlist: int = 1024, token: str = "", overwrite: bool = False) -> str:
    """Insert ``index``'s ids and codes into a Milvus collection (created; ``overwrite`` drops an existing one).

    Parameters
    ----------
    uri : str
        ``http://host:19530`` (a Milvus server) or a local file such as ``codes.db`` (Milvus Lite, embedded).
    layout : {"auto", "binary", "float"}
        "binary": a BINARY_VECTOR field of d = 8 ceil(q / 8) bits (np.packbits order), HAMMING metric, index
        ``index_type`` BIN_FLAT (exact) or BIN_IVF_FLAT (``nlist`` cells, approximate): the layout for a server.
        "float": a FLOAT_VECTOR of 0/1 values with a FLAT index and the L2 metric, whose squared distance is
        the Hamming distance (exact; 32x the memory): Milvus Lite supports no binary vectors. "auto": binary on
        a server, float on Milvus Lite.

    Returns
    -------
    str
        The collection's name.
    """
    pymilvus = _require("pymilvus", "milvus")
    index = _checked_index(index)
    layout = _milvus_layout(uri, layout)
    if index_type not in ("BIN_FLAT", "BIN_IVF_FLAT"):
        raise ValueError(f"index_type must be 'BIN_FLAT' (exact) or 'BIN_IVF_FLAT', got {index_type!r}.")
    with _milvus_errors(pymilvus, uri, collection):
        _insert_milvus(pymilvus, pymilvus.MilvusClient(uri=uri, token=token), index, collection, layout=layout,
                       index_type=index_type, nlist=nlist, overwrite=overwrite, uri=uri)
    return collection


def _insert_milvus(pymilvus, client, index: HashIndex, collection: str, *, layout: str, index_type: str, nlist: int,
                   overwrite: bool, uri: str) -> None:
    """:func:`to_milvus`'s work on an open client (closed at the end). With ``overwrite``, the new collection is
    built and filled beside the old one (``<name>__shc_new``), which is dropped and replaced only once the new one is
    complete: a failed export (a layout the server refuses, a lost connection) leaves the old collection as it was."""
    try:
        exists = client.has_collection(collection)
        if exists and not overwrite:
            raise ValueError(f"Milvus collection {collection!r} exists at {uri}: choose another --collection or "
                             "pass --overwrite to replace it.")
        target = f"{collection}__shc_new" if exists else collection
        if exists and client.has_collection(target):
            client.drop_collection(target)  # what a failed overwrite before this one left
        try:
            _create_milvus(pymilvus, client, index, target, layout=layout, index_type=index_type, nlist=nlist,
                           uri=uri)
        except BaseException:
            with contextlib.suppress(Exception):
                if exists:
                    client.drop_collection(target)
            raise
        if exists:
            client.drop_collection(collection)
            client.rename_collection(target, collection)
            client.load_collection(collection)
    finally:
        client.close()


def _create_milvus(pymilvus, client, index: HashIndex, collection: str, *, layout: str, index_type: str, nlist: int,
                   uri: str) -> None:
    """Create ``collection`` with the codes and ids of ``index`` (:func:`to_milvus`'s layouts)."""
    schema = pymilvus.MilvusClient.create_schema(auto_id=False, description=f"shc {index.num_bits}-bit codes")
    schema.add_field("id", pymilvus.DataType.INT64, is_primary=True)
    dim = 8 * ((index.num_bits + 7) // 8)
    params = client.prepare_index_params()
    if layout == "binary":
        schema.add_field("code", pymilvus.DataType.BINARY_VECTOR, dim=dim)
        params.add_index(field_name="code", index_type=index_type, metric_type="HAMMING",
                         params={"nlist": nlist} if index_type == "BIN_IVF_FLAT" else {})
    else:
        schema.add_field("code", pymilvus.DataType.FLOAT_VECTOR, dim=dim)
        params.add_index(field_name="code", index_type="FLAT", metric_type="L2")
    try:
        client.create_collection(collection, schema=schema, index_params=params)
    except pymilvus.MilvusException as error:
        if layout == "binary" and "BinaryVector" in str(error):
            raise ValueError(f"this Milvus ({uri}) does not support binary vectors ({error.message}); use a "
                             "Milvus server (--uri http://HOST:19530) or layout='float' (--milvus-layout "
                             "float).") from None
        raise
    packed, ids = _packed_bytes(index), index._ids
    for start in range(0, len(ids), MILVUS_INSERT_ROWS):  # chunks, not codes: one message each
        stop = start + MILVUS_INSERT_ROWS
        client.insert(collection, [{"id": i, "code": v} for i, v in
                                   zip(ids[start:stop].tolist(), _milvus_rows(packed[start:stop], layout))])
    client.flush(collection)


def _search_milvus(uri: str, queries: np.ndarray, k: int, collection: str = "shc_codes", token: str = "",
                   nprobe: int = 16, **_: Any) -> tuple[np.ndarray, np.ndarray]:
    pymilvus = _require("pymilvus", "milvus")
    with _milvus_errors(pymilvus, uri, collection):
        client = pymilvus.MilvusClient(uri=uri, token=token)
        try:
            field = next(f for f in client.describe_collection(collection)["fields"] if f["name"] == "code")
            layout = "binary" if field["type"] == pymilvus.DataType.BINARY_VECTOR else "float"
            client.load_collection(collection)
            params = {"metric_type": "HAMMING", "params": {"nprobe": nprobe}} if layout == "binary" else \
                {"metric_type": "L2"}
            hits = client.search(collection, data=_milvus_rows(queries, layout), limit=k, anns_field="code",
                                 search_params=params)
        finally:
            client.close()
    # pymilvus answers per query (lists of hits): flattened once, then reshaped
    found = np.array([len(row) for row in hits])
    flat_ids = np.array([hit["id"] for row in hits for hit in row], np.int64)
    flat_distances = np.array([hit["distance"] for row in hits for hit in row], np.float64)
    ids = np.full((len(hits), k), -1, np.int64)
    distances = np.full((len(hits), k), -1, np.int64)
    mask = np.arange(k)[None, :] < found[:, None]
    ids[mask], distances[mask] = flat_ids, np.rint(flat_distances)
    return distances, ids


# ---------------------------------------------------------------------------------------------
# The table, the export entry point and the round trip
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Store:
    """An export target: ``export(index, location, **options)``, ``search(location, packed_queries, k,
    **options) -> (distances, ids)`` with queries in np.packbits order, ``load(location, num_bits)`` (None where
    the store is not imported from), whether its search is ``exact``, and the ``files`` at a location."""

    name: str
    export: Callable[..., Any]
    search: Callable[..., tuple[np.ndarray, np.ndarray]]
    load: Callable[..., HashIndex] | None
    exact: bool
    description: str
    files: Callable[[Any], list[Path]] = lambda location: [Path(location)]
    """The files an export to ``location`` writes and its import reads (compared with a command's other files)."""


STORES: Registry[Store] = Registry("export target")
STORES.register("faiss", Store("faiss", to_faiss, _search_faiss, from_faiss, True,
                               "FAISS binary flat index file (faiss.read_index_binary)"))
STORES.register("milvus", Store("milvus", to_milvus, _search_milvus, None, True,
                                "Milvus collection: id + binary vector (HAMMING); --uri a server or a Lite file",
                                _milvus_files))
STORES.register("usearch", Store("usearch", to_usearch, _search_usearch, None, False,
                                 "usearch HNSW index, b1 vectors, Hamming (approximate)"))
STORES.register("npy", Store("npy", to_npy, _search_npy, from_npy, True,
                             "packed .npy codes + .ids.npy + .json (bit order written down)",
                             lambda location: list(_npy_paths(location))))


def export_codes(index: HashIndex, target: str, location: str | os.PathLike, **options: Any) -> Any:
    """Export ``index`` to ``target`` (a name of :data:`STORES`) at ``location`` (a file; Milvus: the uri)."""
    return STORES.get(target).export(index, location, **options)


def store_files(target: str, location: str | os.PathLike) -> list[Path]:
    """The files an export to ``target`` at ``location`` writes, and an import from there reads (a Milvus
    server: none)."""
    return STORES.get(target).files(location)


def load_codes(source: str, location: str | os.PathLike, num_bits: int | None = None) -> HashIndex:
    """Import codes from ``source`` ("faiss" or "npy") at ``location`` into a ``HashIndex``."""
    store = STORES.get(source)
    if store.load is None:
        importable = [name for name, entry in STORES.items() if entry.load is not None]
        raise ValueError(f"codes cannot be imported from {source!r}; import from one of {importable} (export the "
                         "store's codes to a FAISS flat index or packed .npy first).")
    return store.load(location, num_bits)


def search_store(index: HashIndex, target: str, location: str | os.PathLike, queries: Any, k: int,
                 **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """Top-k of ``queries`` (+-1 or packed, as :meth:`HashIndex.search` takes them) from the store ``target``
    that ``index`` was exported to: (Q, k) int64 distances and ids (-1 where the store found fewer)."""
    distances, ids = STORES.get(target).search(location, _packed_queries(index, queries), k, **options)
    missing = k - distances.shape[1]  # a store of fewer than k codes may return fewer columns (npy does)
    if missing > 0:
        pad = np.full((len(distances), missing), -1, dtype=np.int64)
        distances, ids = np.hstack([distances, pad]), np.hstack([ids, pad])
    return distances, ids


def compare_topk(index: HashIndex, queries: Any, reference: tuple[np.ndarray, np.ndarray],
                 candidate: tuple[np.ndarray, np.ndarray]) -> dict[str, Any]:
    """Compare a store's top-k (``candidate``) with ``HashIndex``'s exact top-k (``reference``) of ``queries``.

    Returns ``same``: every query's distances are equal, each returned id lies at the distance reported for it
    (recomputed from ``index``'s codes), no id is returned twice for one query, and the ids agree except inside the tie at the last distance (docs in
    the module); ``recall``: the mean fraction of the reference's ids found, counting ids swapped inside that
    tie as found; and ``queries``, ``k``.
    """
    ref_distances, ref_ids = reference
    distances, ids = (np.asarray(a, np.int64) for a in candidate)
    k = ref_ids.shape[1]
    if distances.shape != ref_distances.shape:
        return {"same": False, "recall": 0.0, "queries": len(ref_ids), "k": k}
    found = distances >= 0  # a store marks an empty slot by distance -1: ids may be negative, -1 among them
    rows = np.minimum(np.searchsorted(index._ids, ids), len(index) - 1)
    known = found & (index._ids[rows] == ids)
    packed = pack_codes(queries, index.num_bits)
    xor = (packed[:, None, :] ^ index._codes[rows]).view(np.uint8)
    true = np.unpackbits(xor, axis=-1).sum(axis=-1, dtype=np.int64)
    order = np.argsort(ids, axis=1, kind="stable")
    repeated_sorted = np.zeros(ids.shape, bool)
    repeated_sorted[:, 1:] = np.diff(np.take_along_axis(ids, order, axis=1), axis=1) == 0
    repeated = np.zeros(ids.shape, bool)
    np.put_along_axis(repeated, order, repeated_sorted, axis=1)  # an id returned twice counts once
    honest = known & (true == distances) & ~repeated
    last = ref_distances[:, -1:]
    # recall: reference ids strictly inside the last distance that the store found, plus the slots at the last
    # distance filled with any (honest) id of that distance
    inside = ref_distances < last
    hit = np.zeros_like(inside)
    for_each = ((ref_ids[:, :, None] == ids[:, None, :]) & honest[:, None, :]).any(axis=2)
    hit[inside] = for_each[inside]
    at_last = np.minimum((ref_distances == last).sum(axis=1), (honest & (true == last)).sum(axis=1))
    recall = float(((hit.sum(axis=1) + at_last) / k).mean())
    ordered = np.lexsort((ids, true), axis=1) if distances.size else distances  # a dishonest row fails anyway
    same_inside = np.where(inside, np.take_along_axis(ids, ordered, axis=1) == ref_ids, True)
    same = bool(np.array_equal(np.sort(distances, axis=1), ref_distances) and honest.all() and same_inside.all())
    return {"same": same, "recall": recall, "queries": len(ref_ids), "k": k}


def round_trip(index: HashIndex, target: str, location: str | os.PathLike, queries: Any, k: int = 10,
               exact: bool | None = None, **options: Any) -> dict[str, Any]:
    """Search the exported store and compare its top-k with ``index.search`` (:func:`compare_topk`); adds
    ``store`` and ``exact`` (whether the store's search is exact, so ``same`` is expected): the store's own
    (:class:`Store`) unless ``exact`` says how this export searches (:func:`export_is_exact`)."""
    k = min(int(k), len(index))
    reference = index.search(queries, k, method="linear")
    candidate = search_store(index, target, location, queries, k, **options)
    store = STORES.get(target)
    exact = store.exact if exact is None else bool(exact)
    return {"store": store.name, "exact": exact, **compare_topk(index, queries, reference, candidate)}


def export_is_exact(target: str, location: str | os.PathLike, layout: str = "auto",
                    index_type: str = "BIN_FLAT") -> bool:
    """Whether an export to ``target`` searches exactly: the store's kind (:class:`Store`), except Milvus's
    inverted-file index (``BIN_IVF_FLAT`` on binary vectors), which searches ``nprobe`` of its lists only."""
    if target == "milvus":
        return _milvus_layout(str(location), layout) == "float" or index_type == "BIN_FLAT"
    return STORES.get(target).exact
