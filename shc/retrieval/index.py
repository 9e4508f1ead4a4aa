"""``HashIndex``: exact Hamming search over packed binary codes (linear counting selection or multi-index
hashing), Hamming-ball lookups, an approximate FAISS mode, and a small checked file format."""

from __future__ import annotations

import json
import math
import os
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from shc._io import atomic_path

__all__ = ["FORMAT_VERSION", "HashIndex", "RangeResult", "pack_codes"]

FORMAT_VERSION = 2
_MAGIC = b"SHCHIDX\x02"
"""The file's first 8 bytes; the last one is the layout (format 1 wrote 0 there and had no header checksum)."""
_QUERY_CHUNK = 1 << 15
"""Queries per kernel call: bounds the (chunk, q + 1) histograms to a few tens of MiB."""
MIH_MIN_SIZE = 2_000_000
"""Automatic search uses multi-index hashing from this many codes on (below it the linear scan wins)."""
MIH_MAX_K = 1000
"""... and for k up to this (a large k needs a large radius, where the linear scan wins again)."""
PROBE_QUERIES = 32
"""Where MIH is a candidate and a batch holds at least twice this many queries, automatic search times MIH and
the linear scan on the first PROBE_QUERIES queries and answers the rest with the faster (MIH's speed depends on
the data: 8x the linear scan on 10M clustered codes, slower on uniformly random ones; docs/retrieval.md)."""
METHODS = ("auto", "linear", "mih", "hnsw", "ivf")


def _words(num_bits: int) -> int:
    return (num_bits + 63) // 64


def pack_codes(codes: Any, num_bits: int) -> np.ndarray:
    """+-1 codes ``(n, q)`` (any numeric dtype) or packed bits ``(n, ceil(q / 8))`` uint8 to ``(n, w)`` uint64.

    Packed bits follow ``np.packbits(codes > 0, axis=1)`` (bit 1 for +1, first dimension in the high bit of the
    first byte); the bits after the q-th must be 0. The Hamming distance of two packed codes is the popcount of
    their XOR, ``(q - <b_i, b_j>) / 2`` of the +-1 codes (paper Eq. 17).

    Raises
    ------
    ValueError
        Wrong shape, values other than -1/+1, or non-zero padding bits.
    """
    if hasattr(codes, "detach"):  # torch tensor
        codes = codes.detach().cpu().numpy()
    codes = np.asarray(codes)
    n_bytes = (num_bits + 7) // 8
    if codes.ndim != 2:
        raise ValueError(f"codes must be a 2-D array (n, {num_bits}) of +-1 or (n, {n_bytes}) packed uint8, "
                         f"got shape {codes.shape}.")
    if codes.dtype == np.uint8 and codes.shape[1] == n_bytes:
        packed = codes
        spare = 8 * n_bytes - num_bits
        if spare and np.any(packed[:, -1] & np.uint8((1 << spare) - 1)):
            raise ValueError(f"packed codes have non-zero bits after bit {num_bits}: pack them with "
                             "np.packbits(codes > 0, axis=1) from (n, q) +-1 codes.")
    elif codes.shape[1] == num_bits:
        if codes.dtype == np.bool_ or not np.all((codes == 1) | (codes == -1)):
            raise ValueError(f"codes of shape (n, {num_bits}) must hold -1/+1 values (e.g. int8 sign codes); "
                             f"for packed bits give (n, {n_bytes}) uint8 from np.packbits(codes > 0, axis=1).")
        packed = np.packbits(codes > 0, axis=1)
    else:
        raise ValueError(f"codes have {codes.shape[1]} columns; an index of {num_bits} bits takes (n, {num_bits}) "
                         f"+-1 codes or (n, {n_bytes}) packed uint8 bits.")
    words = _words(num_bits)
    padded = np.zeros((len(packed), 8 * words), np.uint8)
    padded[:, :n_bytes] = packed
    return padded.view("<u8").astype(np.uint64, copy=False)


@dataclass(frozen=True)
class RangeResult:
    """Hamming-ball lookup of :meth:`HashIndex.range_search`, in FAISS's flat layout.

    Query ``i``'s results are ``ids[lims[i]:lims[i + 1]]`` at ``distances[lims[i]:lims[i + 1]]``, sorted by
    (distance, id).
    """

    lims: np.ndarray  #: (Q + 1,) int64
    distances: np.ndarray  #: (total,) int64
    ids: np.ndarray  #: (total,) int64

    def __len__(self) -> int:
        return len(self.lims) - 1

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """``(distances, ids)`` of query ``i``."""
        lo, hi = self.lims[i], self.lims[i + 1]
        return self.distances[lo:hi], self.ids[lo:hi]


class HashIndex:
    """Binary codes of ``num_bits`` bits with exact Hamming search, ties broken by ascending id.

    Codes are kept packed, ``ceil(q / 64)`` uint64 words each, sorted by id, plus their int64 ids: memory is
    ``N (8 ceil(q / 64) + 8)`` bytes (16 bytes a code at q <= 64). Multi-index hashing, used for large N, adds
    ``m (8 ceil(q / 64) + 8)`` bytes a code for its m tables, built on its first use.

    Parameters
    ----------
    num_bits : int
        Code length q (1 to 1024).

    Examples
    --------
    >>> index = HashIndex(64)
    >>> index.add(database_codes)                  # +-1 int8 (N, 64), ids 0..N-1
    >>> distances, ids = index.search(query_codes, k=100)
    """

    def __init__(self, num_bits: int) -> None:
        if isinstance(num_bits, bool) or not isinstance(num_bits, (int, np.integer)) or not 1 <= num_bits <= 1024:
            raise ValueError(f"num_bits must be an integer in [1, 1024], got {num_bits!r}.")
        self.num_bits = int(num_bits)
        self._codes = np.zeros((0, _words(self.num_bits)), np.uint64)
        self._ids = np.zeros(0, np.int64)
        self._cache: dict[str, Any] = {}  # derived structures (MIH tables, FAISS indexes), reset by add
        self.metadata: dict[str, Any] = {}  #: JSON-able extras kept by save / load (``shc index``: file paths)

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"HashIndex(num_bits={self.num_bits}, size={len(self)})"

    @property
    def ids(self) -> np.ndarray:
        """The ids, ascending (read-only view)."""
        view = self._ids.view()
        view.flags.writeable = False
        return view

    @property
    def nbytes(self) -> int:
        """Bytes held by codes and ids (not counting the MIH tables or FAISS indexes)."""
        return self._codes.nbytes + self._ids.nbytes

    # ---------------------------------------------------------------------------------------------
    # Building
    # ---------------------------------------------------------------------------------------------
    def add(self, codes: Any, ids: Any = None) -> HashIndex:
        """Add codes (see :func:`pack_codes` for the accepted forms) with their ids.

        Parameters
        ----------
        codes : (n, q) +-1 array or (n, ceil(q / 8)) packed uint8
        ids : (n,) integers, optional
            Any int64 values, unique across the index; default the n ids after the largest one held (0, 1, ... for
            an empty index).

        Returns
        -------
        HashIndex
            ``self``.
        """
        packed = pack_codes(codes, self.num_bits)
        if ids is None:
            start = int(self._ids[-1]) + 1 if len(self) else 0
            if start + len(packed) - 1 > np.iinfo(np.int64).max:
                raise ValueError(f"the next ids after {start - 1} leave int64; pass ids= for the new codes.")
            new_ids = np.arange(start, start + len(packed), dtype=np.int64)
        else:
            raw = np.asarray(ids)
            if raw.shape != (len(packed),) or not (np.issubdtype(raw.dtype, np.integer) or raw.size == 0):
                raise ValueError(f"ids must be ({len(packed)},) integers (one per code), got {raw.dtype} {raw.shape}.")
            if raw.dtype == np.uint64 and raw.size and raw.max() > np.iinfo(np.int64).max:
                raise ValueError("ids must fit in int64.")
            new_ids = raw.astype(np.int64)
        if len(new_ids) == 0:
            return self
        if len(self) and new_ids.min() > self._ids[-1] and np.all(np.diff(new_ids) > 0):
            codes_all, ids_all = np.concatenate([self._codes, packed]), np.concatenate([self._ids, new_ids])
        else:
            ids_all = np.concatenate([self._ids, new_ids])
            order = np.argsort(ids_all, kind="stable")
            ids_all = ids_all[order]
            repeated = ids_all[1:][ids_all[1:] == ids_all[:-1]]
            if repeated.size:
                raise ValueError(f"duplicate ids {np.unique(repeated)[:10].tolist()}: ids must be unique across the "
                                 "index (nothing was added).")
            codes_all = np.concatenate([self._codes, packed])[order]
        self._codes, self._ids = np.ascontiguousarray(codes_all), ids_all
        self._cache.clear()
        return self

    # ---------------------------------------------------------------------------------------------
    # Search
    # ---------------------------------------------------------------------------------------------
    def _queries(self, queries: Any) -> np.ndarray:
        array = queries.detach().cpu().numpy() if hasattr(queries, "detach") else np.asarray(queries)
        if array.ndim == 1:
            raise ValueError(f"queries must be 2-D (Q, {self.num_bits}); for one query pass codes[None] (shape "
                             f"{(1, *array.shape)}).")
        return pack_codes(array, self.num_bits)

    def _check_k(self, k: Any) -> int:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}.")
        if len(self) == 0:
            raise ValueError("the index is empty: add codes before searching.")
        return int(min(k, len(self)))

    def choose_method(self, k: int, queries: Any = None) -> str:
        """The exact method :meth:`search` uses for ``method="auto"``.

        "linear" below MIH_MIN_SIZE codes or for k > MIH_MAX_K (where MIH's radius grows large). Otherwise
        "mih", unless ``queries`` (the batch to be searched) holds at least ``2 * PROBE_QUERIES`` queries: then
        both methods are timed on its first PROBE_QUERIES queries and the faster is returned. MIH's cost depends
        on how the codes cluster (trained codes sit near their hash centers and MIH stops at a small radius;
        uniformly random codes need a large one), while the linear scan's does not, and it amortises each read
        of the codes over a block of queries: on a large batch of uniform codes it wins. A lone query is not
        probed: MIH answers it without reading the whole index.
        """
        return self._auto(k, None if queries is None else self._queries(queries))[0]

    def _auto(self, k: int, packed: np.ndarray | None) -> tuple[str, tuple[np.ndarray, np.ndarray] | None]:
        """``(method, probe answer)``: the choice of :meth:`choose_method` and, when it timed a probe, the chosen
        method's (rows, distances) for the probe queries (the batch's first PROBE_QUERIES), reused by search."""
        if len(self) < MIH_MIN_SIZE or k > MIH_MAX_K:
            return "linear", None
        if packed is None or len(packed) < 2 * PROBE_QUERIES:
            return "mih", None
        probe = packed[:PROBE_QUERIES]
        started = time.perf_counter()
        by_mih = self._mih_topk(probe, k)
        mih_seconds = time.perf_counter() - started
        started = time.perf_counter()
        by_linear = self._linear_topk(probe, k)
        linear_seconds = time.perf_counter() - started
        return ("mih", by_mih) if mih_seconds <= linear_seconds else ("linear", by_linear)

    def search(self, queries: Any, k: int, method: str = "auto", **options: Any) -> tuple[np.ndarray, np.ndarray]:
        """The k nearest codes of each query in Hamming distance.

        Parameters
        ----------
        queries : (Q, q) +-1 array or (Q, ceil(q / 8)) packed uint8
        k : int
            Results per query. A k larger than the index gives all ``len(self)`` codes: the arrays then have
            ``len(self)`` columns (no padding value: every int64 is a valid id).
        method : {"auto", "linear", "mih", "hnsw", "ivf"}
            Exact: "linear" (counting selection, :meth:`_linear_topk`), "mih" (multi-index hashing) or "auto"
            (:meth:`choose_method`); both give the same answer. Approximate (FAISS): "hnsw"
            (``IndexBinaryHNSW``) or "ivf" (``IndexBinaryIVF``), see :meth:`approximate_search`.
        **options
            "mih": ``substrings`` (m); "hnsw" / "ivf": see :meth:`approximate_search`.

        Returns
        -------
        distances, ids : (Q, min(k, len(self))) int64
            Exact methods: sorted by (distance, id): the same ranking as :mod:`shc.metrics` when ids are
            database positions.
        """
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
        k = self._check_k(k)
        packed = self._queries(queries)
        if method in ("hnsw", "ivf"):
            return self.approximate_search(packed, k, kind=method, **options)
        done = 0
        if method == "auto":
            method, probed = self._auto(k, None if options else packed)  # options (MIH's m): no probe
            if probed is not None:
                done = len(probed[0])
        if options and method != "mih":
            raise ValueError(f"the linear scan takes no options, got {sorted(options)}.")
        topk = self._mih_topk if method == "mih" else self._linear_topk
        rows, distances = topk(packed[done:], k, **options)
        if done:
            rows, distances = np.concatenate([probed[0], rows]), np.concatenate([probed[1], distances])
        return distances, self._ids[rows]

    def _linear_topk(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k by one pass over the codes in row (= id) order, a counting selection rather than a heap:
        see :func:`shc.retrieval._kernels.topk_select`."""
        from shc.retrieval import _kernels

        rows = np.empty((len(queries), k), np.int64)
        distances = np.empty((len(queries), k), np.int64)
        _kernels.topk_select(self._codes, queries, k, rows, distances)
        return rows, distances

    def range_search(self, queries: Any, radius: int) -> RangeResult:
        """Every code within Hamming distance ``radius`` of each query (the Hamming-ball lookup of hashing
        papers), sorted by (distance, id); two passes of the counting kernels, no distance matrix."""
        from shc.retrieval import _kernels

        if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 0:
            raise ValueError(f"radius must be a non-negative integer, got {radius!r}.")
        packed = self._queries(queries)
        radius = min(int(radius), 64 * _words(self.num_bits))
        lims = [np.zeros(1, np.int64)]
        distances, ids = [np.empty(0, np.int64)], [np.empty(0, self._ids.dtype)]  # stay empty for zero queries
        for lo in range(0, len(packed), _QUERY_CHUNK):
            chunk = packed[lo:lo + _QUERY_CHUNK]
            hist = _kernels.distance_histograms(self._codes, chunk) if len(self) else \
                np.zeros((len(chunk), 64 * _words(self.num_bits) + 1), np.int64)
            hist[:, radius + 1:] = 0
            counts = hist.sum(axis=1)
            offsets = np.concatenate([[0], np.cumsum(counts)])
            starts = np.cumsum(hist, axis=1) - hist + offsets[:-1, None]
            rows = np.empty(offsets[-1], np.int64)
            dist = np.empty(offsets[-1], np.int64)
            if len(self):
                _kernels.place(self._codes, chunk, np.full(len(chunk), radius), hist[:, radius].copy(), starts,
                               rows, dist)
            lims.append(offsets[1:] + lims[-1][-1])
            distances.append(dist)
            ids.append(self._ids[rows])
        return RangeResult(np.concatenate(lims), np.concatenate(distances), np.concatenate(ids))

    # ---------------------------------------------------------------------------------------------
    # Multi-index hashing
    # ---------------------------------------------------------------------------------------------
    def default_substrings(self) -> int:
        """m of multi-index hashing: substrings of about log2(N) - 7 bits, so about 2^7 codes share a bucket
        (Norouzi et al. suggest log2(N) bits, one code a bucket; with buckets read contiguously, fewer and
        fuller buckets measured faster here: at 10M x 64 bits m = 4 beat m = 3), at least 2, at most 24 bits.
        """
        bits = 8 * ((self.num_bits + 7) // 8)
        m = round(bits / max(math.log2(max(len(self), 2)) - 7, 8.0))
        return int(min(max(m, 2, math.ceil(bits / 24)), bits))

    def _mih_tables(self, substrings: int) -> dict[str, np.ndarray]:
        from shc.retrieval import _kernels

        key = f"mih{substrings}"
        if key not in self._cache:
            bits = 8 * ((self.num_bits + 7) // 8)  # padding bits inside the last byte are 0 everywhere: harmless
            lengths = np.full(substrings, bits // substrings, np.int64)
            lengths[: bits % substrings] += 1
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            n = len(self)
            rows = np.empty((substrings, n), np.int64)
            codes = np.empty((substrings, n, self._codes.shape[1]), np.uint64)
            offsets = np.zeros((substrings, (1 << int(lengths.max())) + 1), np.int64)
            for j in range(substrings):
                values = _kernels.substring_values(self._codes, starts[j], lengths[j])
                order = np.argsort(values, kind="stable")
                rows[j], codes[j] = order, self._codes[order]
                counts = np.bincount(values, minlength=1 << int(lengths[j]))
                offsets[j, 1: len(counts) + 1] = np.cumsum(counts)
                offsets[j, len(counts) + 1:] = n
            self._cache[key] = dict(codes=codes, rows=rows, offsets=offsets, starts=starts, lengths=lengths)
        return self._cache[key]

    def _mih_topk(self, queries: np.ndarray, k: int, substrings: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k by multi-index hashing (Norouzi, Punjani & Fleet, CVPR 2012); see
        :func:`shc.retrieval._kernels.mih_search`. Same answer as the linear scan."""
        from shc.retrieval import _kernels

        bits = 8 * ((self.num_bits + 7) // 8)
        m = self.default_substrings() if substrings is None else substrings
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not (math.ceil(bits / 24) <= m <= bits):
            raise ValueError(f"substrings must be an integer in [{math.ceil(bits / 24)}, {bits}] (substrings of at "
                             f"most 24 bits), got {m!r}.")
        tables = self._mih_tables(int(m))
        rows = np.empty((len(queries), k), np.int64)
        distances = np.empty((len(queries), k), np.int64)
        _kernels.mih_search(queries, k, tables["codes"], tables["rows"], tables["offsets"], tables["starts"],
                            tables["lengths"], rows, distances)
        return rows, distances

    # ---------------------------------------------------------------------------------------------
    # Approximate search (FAISS)
    # ---------------------------------------------------------------------------------------------
    def _faiss_index(self, kind: str, hnsw_m: int, nlist: int | None):
        import faiss

        key = f"{kind}-{hnsw_m}-{nlist}"
        if key not in self._cache:
            dim = 64 * self._codes.shape[1]
            data = self._codes.view(np.uint8)
            if kind == "hnsw":
                index = faiss.IndexBinaryHNSW(dim, hnsw_m)
            else:
                nlist = nlist or max(1, int(4 * math.sqrt(len(self))))
                quantizer = faiss.IndexBinaryFlat(dim)
                index = faiss.IndexBinaryIVF(quantizer, dim, min(nlist, len(self)))
                index.referenced_quantizer = quantizer  # FAISS does not own it: keep it alive with the index
                index.train(data)
            index.add(data)
            self._cache[key] = index
        return self._cache[key]

    def approximate_search(self, queries: Any, k: int, kind: str = "hnsw", *, hnsw_m: int = 32,
                           ef_search: int = 256, nlist: int | None = None, nprobe: int = 16
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Approximate top-k with a FAISS binary index (built on first use, kept until the next :meth:`add`).

        Faster than exact search on very large N at the price of recall (``benchmarks/bench_retrieval.py``
        prints recall@100 against the exact answer); ties are not ordered by id.

        Parameters
        ----------
        kind : {"hnsw", "ivf"}
            ``faiss.IndexBinaryHNSW`` (graph, ``hnsw_m`` links a node, ``ef_search`` candidates a search) or
            ``faiss.IndexBinaryIVF`` (``nlist`` Hamming k-means cells, default 4 sqrt(N); ``nprobe`` visited).

        Returns
        -------
        distances, ids : (Q, min(k, len(self))) int64
            Id -1 (distance -1) where FAISS found fewer than k codes.
        """
        if kind not in ("hnsw", "ivf"):
            raise ValueError(f"kind must be 'hnsw' or 'ivf', got {kind!r}.")
        k = self._check_k(k)
        packed = queries if isinstance(queries, np.ndarray) and queries.dtype == np.uint64 else self._queries(queries)
        index = self._faiss_index(kind, hnsw_m, nlist)
        if kind == "hnsw":
            index.hnsw.efSearch = max(ef_search, k)
        else:
            index.nprobe = nprobe
        distances, rows = index.search(packed.view(np.uint8), k)
        missing = rows < 0
        ids = np.where(missing, -1, self._ids[np.where(missing, 0, rows)])
        return np.where(missing, -1, distances).astype(np.int64), ids.astype(np.int64)

    # ---------------------------------------------------------------------------------------------
    # Files
    # ---------------------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike) -> Path:
        """Write the index to ``path`` atomically (temporary file + rename).

        Layout (format 2): 8 magic bytes ``SHCHIDX\\x02`` (the last byte is the layout version), a 4-byte
        little-endian header length, a 4-byte little-endian CRC-32 of everything before the payload except
        itself (magic, length, header), a JSON header (``format_version``, ``num_bits``, ``count``, ``words``,
        ``crc32`` of the payload, ``metadata``), then the payload: codes (count x words little-endian uint64)
        and ids (count little-endian int64). Every byte of the file is covered by a checksum.
        """
        codes = self._codes.astype("<u8", copy=False).tobytes()
        ids = self._ids.astype("<i8", copy=False).tobytes()
        crc = zlib.crc32(ids, zlib.crc32(codes))
        header = json.dumps({"format_version": FORMAT_VERSION, "num_bits": self.num_bits, "count": len(self),
                             "words": int(self._codes.shape[1]), "crc32": crc,
                             "metadata": self.metadata}).encode()
        length = len(header).to_bytes(4, "little")
        header_crc = zlib.crc32(header, zlib.crc32(_MAGIC + length)).to_bytes(4, "little")
        with atomic_path(path) as temporary, open(temporary, "wb") as handle:  # streamed: no copy of the codes
            for part in (_MAGIC, length, header_crc, header, codes, ids):
                handle.write(part)
        return Path(path)

    @classmethod
    def load(cls, path: str | os.PathLike, num_bits: int | None = None) -> HashIndex:
        """Read an index written by :meth:`save` (format 2, or the format 1 of earlier versions, whose header
        carried no checksum).

        Parameters
        ----------
        num_bits : int, optional
            The code length the caller expects; a different one in the file is refused.

        Raises
        ------
        FileNotFoundError, ValueError
            Missing file; not an index file, newer format, damaged header, truncated or corrupt payload, or
            mismatched bits.
        """
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder; give the index file (.shcidx) that `shc index` wrote.")
        if not path.is_file():
            raise FileNotFoundError(f"no index file at {path}: build one with `shc index codes.npz --out {path}`.")
        data = path.read_bytes()
        corrupt = f"{path} is not a valid shc index file"
        rebuild = "rebuild it with `shc index`"
        if data[:2] == b"PK":  # a zip: the .npz of `shc encode` or of a pipeline run
            raise ValueError(f"{corrupt}: it is a zip archive, as the codes file (.npz) of `shc encode` is; index such "
                             f"a file first, `shc index {path} --out {path.with_suffix('.shcidx').name}`.")
        if data[:7] != _MAGIC[:7] or len(data) < 12:
            raise ValueError(f"{corrupt} (it does not start with the index's signature SHCHIDX); {rebuild}.")
        layout = data[7]
        if layout > _MAGIC[7]:
            raise ValueError(f"{path} has format version {layout}; this shc reads up to {FORMAT_VERSION}: upgrade shc.")
        if layout not in (0, _MAGIC[7]):
            raise ValueError(f"{corrupt} (unknown layout byte {layout}); {rebuild}.")
        length = int.from_bytes(data[8:12], "little")
        start = 12 if layout == 0 else 16  # format 1 (layout byte 0) has no header checksum
        raw_header = data[start:start + length]
        if layout and (len(data) < 16 or zlib.crc32(raw_header, zlib.crc32(data[:12]))
                       != int.from_bytes(data[12:16], "little")):
            raise ValueError(f"{corrupt}: header checksum mismatch (the file is damaged); {rebuild}.")
        try:
            header = json.loads(raw_header)
            version, bits, count, words = (int(header[key]) for key in ("format_version", "num_bits", "count", "words"))
        except (ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{corrupt}: unreadable header ({error}); {rebuild}.") from None
        if version > FORMAT_VERSION:
            raise ValueError(f"{path} has format version {version}; this shc reads up to {FORMAT_VERSION}: "
                             "upgrade shc.")
        if num_bits is not None and bits != num_bits:
            raise ValueError(f"{path} holds {bits}-bit codes but {num_bits}-bit codes were expected: use an index "
                             f"built from the same model's codes.")
        payload = memoryview(data)[start + length:]
        if not 1 <= bits <= 1024 or words != _words(bits) or count < 0 or len(payload) != count * (8 * words + 8):
            raise ValueError(f"{corrupt}: {len(payload)} payload bytes where {count} codes of {bits} bits need "
                             f"{count * (8 * words + 8)} (truncated?); {rebuild}.")
        if zlib.crc32(payload) != header.get("crc32"):
            raise ValueError(f"{corrupt}: checksum mismatch (the file is corrupt); {rebuild}.")
        index = cls(bits)
        split = count * 8 * words
        index._codes = np.frombuffer(payload[:split], "<u8").astype(np.uint64).reshape(count, words)
        index._ids = np.frombuffer(payload[split:], "<i8").astype(np.int64)
        index.metadata = dict(header.get("metadata") or {})
        return index
