"""Export of codes to FAISS, Milvus, usearch and packed .npy, and import back: each checked by a round trip
against a brute-force Hamming ranking computed here from the +-1 codes (not by HashIndex itself)."""

from __future__ import annotations

import importlib.util
import json
import warnings

import numpy as np
import pytest

from shc.retrieval import HashIndex
from shc.retrieval.stores import STORES, compare_topk, export_codes, load_codes, round_trip, search_store


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed: pip install -e '.[stores]' (CI installs it)")


def _clustered(n: int, bits: int, seed: int = 0) -> np.ndarray:
    """+-1 codes near 8 centers: many equal distances, so ties are exercised."""
    rng = np.random.default_rng(seed)
    centers = np.where(rng.random((8, bits)) < 0.5, -1, 1).astype(np.int8)
    codes = centers[rng.integers(0, 8, n)]
    flips = rng.random((n, bits)) < 0.08
    return np.where(flips, -codes, codes).astype(np.int8)


@pytest.fixture(scope="module", params=[16, 12, 70], ids=lambda q: f"{q}bit")
def codes_and_ids(request):
    bits = request.param
    codes = _clustered(400, bits, seed=bits)
    ids = np.random.default_rng(1).permutation(10_000)[:400].astype(np.int64) * 3 + 5  # not 0..N-1, unsorted
    return codes, ids


def _brute_force(codes: np.ndarray, ids: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(Q, N) Hamming distances from the +-1 codes: (q - <a, b>) / 2."""
    return (codes.shape[1] - queries.astype(np.int64) @ codes.astype(np.int64).T) // 2


def _assert_exact(codes, ids, queries, distances, ids_found, k):
    """The store's top-k equals the brute-force ranking: the k smallest distances, each id at its distance,
    and every id strictly closer than the k-th distance present (ties at the k-th may be any of that tie)."""
    full = _brute_force(codes, ids, queries)
    kth = np.sort(full, axis=1)[:, :k]
    np.testing.assert_array_equal(np.sort(distances, axis=1), kth)
    position = {int(i): p for p, i in enumerate(ids)}
    rows = np.vectorize(position.__getitem__)(ids_found)
    np.testing.assert_array_equal(np.take_along_axis(full, rows, axis=1), distances)
    closer = full < kth[:, -1:]
    assert (closer.sum(axis=1) <= k).all()
    found = np.zeros_like(closer)
    np.put_along_axis(found, rows, True, axis=1)
    assert not (closer & ~found).any()


@pytest.mark.parametrize("target", ["faiss", "npy", "usearch"])
def test_a_store_of_fewer_codes_than_k_pads_every_row_to_k(target, tmp_path):
    _needs({"faiss": "faiss", "usearch": "usearch"}.get(target, "numpy"))
    codes = np.random.default_rng(1).choice(np.array([-1, 1], np.int8), (12, 16))
    index = HashIndex(16).add(codes)
    export_codes(index, target, tmp_path / f"c.{target}")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # usearch's empty slots once warned in rint
        distances, ids = search_store(index, target, tmp_path / f"c.{target}", codes[:3], 20)
    assert distances.shape == ids.shape == (3, 20)
    assert (distances[:, 12:] == -1).all() and (ids[:, 12:] == -1).all()
    np.testing.assert_array_equal(np.sort(distances[:, :12], axis=1), np.sort(_brute_force(codes, np.arange(12),
                                                                                            codes[:3]), axis=1))


def test_a_faiss_client_packs_queries_little_endian_as_docs_scale_out_says(tmp_path):
    _needs("faiss")
    import faiss

    codes = np.random.default_rng(2).choice(np.array([-1, 1], np.int8), (50, 16))
    export_codes(HashIndex(16).add(codes), "faiss", tmp_path / "c.faiss")
    store = faiss.read_index_binary(str(tmp_path / "c.faiss"))
    little, _ = store.search(np.packbits(codes > 0, axis=1, bitorder="little"), 1)
    default, _ = store.search(np.packbits(codes > 0, axis=1), 1)
    assert (little[:, 0] == 0).all()  # each code finds itself
    assert (default[:, 0] > 0).mean() > 0.5  # the default (big-endian) packing: most codes do not


@pytest.mark.parametrize("target", ["faiss", "npy"])
def test_file_exports_round_trip_exactly_and_import_back(codes_and_ids, target, tmp_path):
    if target == "faiss":
        _needs("faiss")
    codes, ids = codes_and_ids
    index = HashIndex(codes.shape[1]).add(codes, ids)
    path = tmp_path / f"codes.{target}"
    export_codes(index, target, path)
    queries = codes[::37]
    distances, found = search_store(index, target, path, queries, 10)
    _assert_exact(codes, ids, queries, distances, found, 10)
    report = round_trip(index, target, path, queries, k=10)
    assert report["same"] and report["recall"] == 1.0 and report["exact"]
    back = load_codes(target, path, num_bits=codes.shape[1])
    assert back.num_bits == codes.shape[1]
    np.testing.assert_array_equal(back.ids, np.sort(ids))
    d1, i1 = back.search(queries, 25)
    d2, i2 = index.search(queries, 25)
    np.testing.assert_array_equal(d1, d2)
    np.testing.assert_array_equal(i1, i2)


def test_faiss_file_uses_faiss_bit_order_and_is_read_by_faiss(tmp_path):
    """Dimension j of the code is bit j % 8 (least significant first) of byte j // 8, as faiss.real_to_binary
    packs a real vector: FAISS's own tools find the exported codes."""
    _needs("faiss")
    import faiss

    bits = 16
    codes = _clustered(50, bits)
    index = HashIndex(bits).add(codes)
    export_codes(index, "faiss", tmp_path / "a.faiss")
    stored = faiss.read_index_binary(str(tmp_path / "a.faiss"))
    assert stored.ntotal == 50 and stored.d == 16
    real = (codes > 0).astype(np.float32)
    packed = np.zeros((len(real), 2), np.uint8)
    faiss.real_to_binary(real.size, faiss.swig_ptr(real.ravel()), faiss.swig_ptr(packed))
    distances, found = stored.search(packed[:5], 1)
    assert (distances[:, 0] == 0).all()
    np.testing.assert_array_equal(_brute_force(codes, None, codes[:5])[np.arange(5), found[:, 0]], 0)


def test_npy_export_writes_the_bit_order_down(tmp_path):
    codes = _clustered(30, 12)
    index = HashIndex(12).add(codes, np.arange(30) * 2)
    export_codes(index, "npy", tmp_path / "c.npy")
    meta = json.loads((tmp_path / "c.json").read_text())
    assert meta["bitorder"] == "big" and meta["num_bits"] == 12 and meta["count"] == 30
    packed = np.load(tmp_path / "c.npy")
    np.testing.assert_array_equal(np.unpackbits(packed, axis=1, count=12), (codes > 0).astype(np.uint8))
    np.testing.assert_array_equal(np.load(tmp_path / "c.ids.npy"), np.arange(30) * 2)


def test_usearch_export_recall_and_exact_mode(codes_and_ids, tmp_path):
    _needs("usearch")
    codes, ids = codes_and_ids
    index = HashIndex(codes.shape[1]).add(codes, ids)
    export_codes(index, "usearch", tmp_path / "c.usearch")
    queries = codes[::41]
    distances, found = search_store(index, "usearch", tmp_path / "c.usearch", queries, 10, exact=True)
    _assert_exact(codes, ids, queries, distances, found, 10)
    report = round_trip(index, "usearch", tmp_path / "c.usearch", queries, k=10)
    assert not report["exact"] and 0.5 <= report["recall"] <= 1.0  # HNSW on 400 codes: near 1


def _milvus_client_or_skip(tmp_path):
    _needs("pymilvus")
    _needs("milvus_lite")
    return str(tmp_path / "milvus.db")


def test_milvus_lite_export_round_trips_exactly_with_the_float_layout(codes_and_ids, tmp_path):
    uri = _milvus_client_or_skip(tmp_path)
    codes, ids = codes_and_ids
    index = HashIndex(codes.shape[1]).add(codes, ids)
    export_codes(index, "milvus", uri, collection="codes")  # Lite: layout "auto" -> float
    queries = codes[::53]
    distances, found = search_store(index, "milvus", uri, queries, 10, collection="codes")
    _assert_exact(codes, ids, queries, distances, found, 10)
    assert round_trip(index, "milvus", uri, queries, k=10, collection="codes")["same"]
    with pytest.raises(ValueError, match="exists at .*--overwrite"):
        export_codes(index, "milvus", uri, collection="codes")


def test_milvus_binary_vectors(tmp_path):
    """The BINARY_VECTOR / HAMMING layout: run against a server with SHC_MILVUS_URI=http://HOST:19530; on Milvus
    Lite it is skipped when Lite refuses binary vectors (milvus-lite 3.2.2 does)."""
    import os

    uri = os.environ.get("SHC_MILVUS_URI") or _milvus_client_or_skip(tmp_path)
    codes = _clustered(300, 32)
    index = HashIndex(32).add(codes)
    try:
        export_codes(index, "milvus", uri, collection="shc_test_binary", layout="binary", overwrite=True)
    except ValueError as error:
        if "does not support binary vectors" not in str(error):
            raise
        pytest.skip(f"Milvus Lite has no binary vectors: {error}")
    queries = codes[::29]
    distances, found = search_store(index, "milvus", uri, queries, 10, collection="shc_test_binary")
    _assert_exact(codes, np.arange(300), queries, distances, found, 10)


def test_compare_topk_accepts_other_ids_inside_the_last_tie_only():
    codes = np.array([[1, 1, 1, 1], [1, 1, 1, -1], [1, 1, -1, 1], [-1, -1, -1, -1]], np.int8)
    index = HashIndex(4).add(codes)
    reference = index.search(codes[:1], 2)  # distances 0, 1 (ids 0, then 1 of the tie {1, 2})
    swapped = (np.array([[1, 0]]), np.array([[2, 0]]))  # other id of the last tie, other order
    assert compare_topk(index, codes[:1], reference, swapped)["same"]
    wrong_distance = (np.array([[0, 1]]), np.array([[0, 3]]))  # id 3 is at distance 4, not 1
    result = compare_topk(index, codes[:1], reference, wrong_distance)
    assert not result["same"] and result["recall"] == 0.5
    missing_inside = (np.array([[1, 1]]), np.array([[1, 2]]))  # id 0 (distance 0) lost
    assert not compare_topk(index, codes[:1], reference, missing_inside)["same"]


def test_unknown_targets_and_non_importable_stores_are_named():
    index = HashIndex(8).add(np.ones((2, 8), np.int8))
    with pytest.raises(ValueError, match="did you mean 'faiss'"):
        export_codes(index, "fiass", "x")
    with pytest.raises(ValueError, match="cannot be imported from 'usearch'.*faiss"):
        load_codes("usearch", "x")
    assert set(STORES.names()) == {"faiss", "milvus", "usearch", "npy"}
    with pytest.raises(ValueError, match="empty"):
        export_codes(HashIndex(8), "npy", "x")


def test_export_and_import_command_lines_round_trip(tmp_path, capsys):
    _needs("faiss")
    from shc.cli import main

    codes = _clustered(300, 24)
    HashIndex(24).add(codes, np.arange(300) + 1000).save(tmp_path / "codes.shcidx")
    assert main(["export", str(tmp_path / "codes.shcidx"), "--to", "faiss", "--out", str(tmp_path / "c.faiss")]) == 0
    assert "top-10 from faiss identical to HashIndex" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "c.faiss"), "--from", "faiss", "--bits", "24",
                 "--out", str(tmp_path / "back.shcidx")]) == 0
    back = HashIndex.load(tmp_path / "back.shcidx")
    np.testing.assert_array_equal(back.ids, np.arange(300) + 1000)
    np.testing.assert_array_equal(back.search(codes[:7], 300)[0], np.sort(_brute_force(codes, None, codes[:7]), axis=1))
    assert main(["export", str(tmp_path / "codes.shcidx"), "--to", "milvus"]) == 2
    assert "--to milvus needs --uri" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Exports are transactions (issue 39 item 3): ids as written, odd names, never onto the source
# --------------------------------------------------------------------------------------------
_INT64 = np.iinfo(np.int64)
ID_SETS = {  # name -> (N,) distinct int64 ids, unsorted
    "negative": lambda n: np.random.default_rng(2).permutation(np.r_[_INT64.min, np.arange(1 - n // 2, n - n // 2)]),
    "sparse": lambda n: np.random.default_rng(3).choice(10**12, n, replace=False).astype(np.int64),
    "large": lambda n: np.random.default_rng(4).permutation(_INT64.max - np.arange(n, dtype=np.int64) * 2**40),
}
#: (store, ids, the name written: odd ones, with spaces, several dots, no or another extension, non-ASCII)
ODD_EXPORTS = [(store, ids, name) for store, names in (
    ("faiss", ("codes", "two words.v2.faiss", "ünï cödes.bin")),
    ("npy", ("codes", "two words.v2.npy", "ünï cödes.bin")),
    ("usearch", ("codes", "two words.v2.usearch", "ünï cödes.bin")),
    ("milvus", ("codes.db", "two words.v2.db", "ünï cödes.db")),
) for ids, name in zip(ID_SETS, names)]


def _store_needs(store: str) -> None:
    for module in {"faiss": ["faiss"], "usearch": ["usearch"], "milvus": ["pymilvus", "milvus_lite"]}.get(store, []):
        _needs(module)


@pytest.mark.parametrize("store, ids_kind, name", ODD_EXPORTS, ids=[f"{s}-{i}-{n}" for s, i, n in ODD_EXPORTS])
def test_every_store_round_trips_negative_sparse_and_large_ids_under_odd_names(store, ids_kind, name, tmp_path,
                                                                                capsys):
    """The issue's cases: an index with negative ids exported exactly but was called DIFFERENT (exit 1); an npy
    export named other than ``*.npy`` wrote an ids file that the import of its codes file ignored (0..N-1)."""
    _store_needs(store)
    from shc.cli import main

    codes, ids = _clustered(120, 20, seed=7), ID_SETS[ids_kind](120)
    HashIndex(20).add(codes, ids).save(tmp_path / "source.shcidx")
    out = tmp_path / name
    where = ["--uri", str(out)] if store == "milvus" else ["--out", str(out)]
    status = main(["export", str(tmp_path / "source.shcidx"), "--to", store, *where])
    captured = capsys.readouterr()
    if store == "usearch" and ids_kind == "negative":  # usearch keys are unsigned: refused, by name, nothing written
        assert status == 2 and "ids must be >= 0" in captured.err and not out.exists()
        return
    assert status == 0, captured.err
    assert ("approximate" if store == "usearch" else "identical to HashIndex") in captured.out, captured.out
    if STORES.get(store).load is None:
        return
    written = out if store == "faiss" else tmp_path / json.loads(next(tmp_path.glob("*.json")).read_text())["codes"]
    for given in {out, written}:  # the name exported to, and the codes file it wrote
        assert main(["import", str(given), "--from", store, "--bits", "20", "--out", str(tmp_path / "back"), "--overwrite"]) == 0
        back = HashIndex.load(tmp_path / "back")
        np.testing.assert_array_equal(back.ids, np.sort(ids))
        distances, found = back.search(codes[::11], 10)
        _assert_exact(codes, ids, codes[::11], distances, found, 10)


def test_round_trip_is_same_for_a_store_answering_negative_ids_exactly():
    codes = np.array([[1, 1, 1, 1], [1, 1, 1, -1], [-1, -1, 1, 1], [-1, -1, -1, -1]], np.int8)
    index = HashIndex(4).add(codes, [-1, -7, 5, -(2**40)])
    reference = index.search(codes, 3)
    assert compare_topk(index, codes, reference, reference) == {"same": True, "recall": 1.0, "queries": 4, "k": 3}
    missing = (np.where(np.arange(3) == 2, -1, reference[0]), np.where(np.arange(3) == 2, -1, reference[1]))
    assert not compare_topk(index, codes, reference, missing)["same"]  # a slot the store left empty still counts


@pytest.mark.parametrize("case", ["faiss onto itself", "usearch onto a link to it", "npy onto its companion",
                                  "milvus lite onto it", "import faiss onto it", "import npy onto a companion"])
def test_an_export_or_import_onto_a_file_it_reads_is_refused_and_the_file_kept(case, tmp_path, capsys):
    """The issue's loss: ``shc export a.shcidx --to faiss --out a.shcidx`` replaced the index with a bare FAISS
    file and exited 0. Now every file of the source set is compared with every file the command writes."""
    store = case.split()[1] if case.startswith("import") else case.split()[0]
    _store_needs(store)
    from shc.cli import main

    source = tmp_path / ("s.db" if store == "milvus" else "c.json" if case.startswith("npy") else "a.shcidx")
    HashIndex(16).add(_clustered(40, 16), np.arange(40) * 3).save(source)
    if case.startswith("import"):
        assert main(["export", str(source), "--to", store, "--out", str(tmp_path / f"x.{store}")]) == 0
        source = tmp_path / (f"x.{store}" if store == "faiss" else "x.ids.npy")
        argv = ["import", str(tmp_path / f"x.{store}"), "--from", store, "--out", str(source)]
    elif store == "usearch":
        (tmp_path / "link").symlink_to(source)
        argv = ["export", str(source), "--to", store, "--out", str(tmp_path / "link")]
    else:
        where = ["--uri", str(source)] if store == "milvus" else ["--out", str(source.with_suffix(".npy"))
                                                                     if store == "npy" else str(source)]
        argv = ["export", str(source), "--to", store, *where]
    before = source.read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "reads" in lines[0] and str(source.name) in lines[0], lines
    assert source.read_bytes() == before


def test_an_import_refuses_codes_and_ids_of_two_different_exports(tmp_path):
    """A set mixed by hand or by a crash between two renames: the description records what it described."""
    codes = _clustered(30, 12)
    export_codes(HashIndex(12).add(codes, np.arange(30) * 2), "npy", tmp_path / "a.npy")
    export_codes(HashIndex(12).add(-codes, np.arange(30) * 5), "npy", tmp_path / "b.npy")
    (tmp_path / "a.ids.npy").write_bytes((tmp_path / "b.ids.npy").read_bytes())
    with pytest.raises(ValueError, match=r"a\.ids\.npy .*not the one .*a\.json.*export"):
        load_codes("npy", tmp_path / "a.npy")
    (tmp_path / "a.ids.npy").unlink()
    with pytest.raises(FileNotFoundError, match=r"a\.ids\.npy.*a\.json.*export"):
        load_codes("npy", tmp_path / "a.npy")


@pytest.mark.parametrize("damage", ["json", "codes"])
def test_a_damaged_npy_set_is_named_with_the_fix(tmp_path, damage):
    export_codes(HashIndex(12).add(_clustered(30, 12)), "npy", tmp_path / "a.npy")
    (tmp_path / ("a.json" if damage == "json" else "a.npy")).write_bytes(b"\x93NUMPY garbage {")
    with pytest.raises(ValueError, match=rf"a\.{'json' if damage == 'json' else 'npy'} .*(damaged|cannot be read).*"
                                         "shc export"):
        load_codes("npy", tmp_path / "a.npy")


def test_a_damaged_usearch_file_is_named_with_the_fix(tmp_path):
    """usearch's ``Index.restore`` answers None for a file it cannot read: that was an AttributeError traceback."""
    _needs("usearch")
    index = HashIndex(16).add(_clustered(20, 16))
    (tmp_path / "c.usearch").write_bytes(b"not an index")
    with pytest.raises(ValueError, match=r"c\.usearch is not a usearch index.*shc export --to usearch"):
        search_store(index, "usearch", tmp_path / "c.usearch", _clustered(2, 16), 3)


class _FakeMilvusServer:
    """What a Milvus server does with a binary collection, in memory, for :func:`test_milvus_binary_layout_...`:
    it keeps the schema, index parameters and rows it is given and answers a HAMMING search by brute force over
    the stored bytes (ties in insertion order). Milvus Lite has no binary vectors and CI has no server."""

    collections: dict = {}

    def __init__(self, uri: str, token: str = "") -> None:
        self.uri = uri

    def has_collection(self, name):
        return name in self.collections

    def drop_collection(self, name):
        del self.collections[name]

    def create_collection(self, name, schema, index_params):
        self.collections[name] = {"schema": schema, "index": [param.to_dict() for param in index_params], "rows": []}

    def insert(self, name, rows):
        self.collections[name]["rows"].extend(rows)

    def flush(self, name):
        pass

    def close(self):
        pass

    def load_collection(self, name):
        pass

    def describe_collection(self, name):
        fields = self.collections[name]["schema"].fields
        return {"fields": [{"name": field.name, "type": field.dtype} for field in fields]}

    def search(self, name, data, limit, anns_field, search_params):
        assert anns_field == "code" and search_params["metric_type"] == "HAMMING"
        rows = self.collections[name]["rows"]
        packed = np.frombuffer(b"".join(row["code"] for row in rows), np.uint8).reshape(len(rows), -1)
        stored = np.unpackbits(packed, axis=1)
        hits = []
        for query in data:
            bits = np.unpackbits(np.frombuffer(query, np.uint8))
            distances = (stored != bits).sum(axis=1)
            order = np.argsort(distances, kind="stable")[:limit]
            hits.append([{"id": rows[i]["id"], "distance": float(distances[i])} for i in order])
        return hits


def test_milvus_binary_layout_stores_packed_bytes_with_hamming_and_searches_exactly(codes_and_ids, monkeypatch):
    """The server layout, without a server: a BINARY_VECTOR field of 8 ceil(q / 8) bits, a HAMMING BIN_FLAT index,
    each code's bytes in np.packbits order of its +1 bits, and the top-k read back exactly."""
    pymilvus = pytest.importorskip("pymilvus")

    class Client(_FakeMilvusServer):
        create_schema = pymilvus.MilvusClient.create_schema
        prepare_index_params = pymilvus.MilvusClient.prepare_index_params
        collections = {}

    monkeypatch.setattr(pymilvus, "MilvusClient", Client)
    codes, ids = codes_and_ids
    bits = codes.shape[1]
    index = HashIndex(bits).add(codes, ids)
    export_codes(index, "milvus", "http://milvus.invalid:19530", collection="binary", layout="binary")
    stored = Client.collections["binary"]
    code_field = next(field for field in stored["schema"].fields if field.name == "code")
    assert code_field.dtype == pymilvus.DataType.BINARY_VECTOR and code_field.params["dim"] == 8 * -(-bits // 8)
    assert stored["index"] == [{"field_name": "code", "index_type": "BIN_FLAT", "index_name": "",
                                "metric_type": "HAMMING"}]
    expected = dict(zip(ids.tolist(), (row.tobytes() for row in np.packbits(codes > 0, axis=1))))
    assert len(stored["rows"]) == len(ids) and {row["id"]: row["code"] for row in stored["rows"]} == expected
    queries = codes[::37]
    distances, found = search_store(index, "milvus", "http://milvus.invalid:19530", queries, 10, collection="binary")
    _assert_exact(codes, ids, queries, distances, found, 10)
    with pytest.raises(ValueError, match="exists at .*--overwrite"):
        export_codes(index, "milvus", "http://milvus.invalid:19530", collection="binary", layout="binary")


def test_a_failed_milvus_overwrite_keeps_the_old_collection(tmp_path):
    """--overwrite dropped the collection before creating the new one, so an export that then failed (Lite refuses
    binary vectors; a lost connection) lost it (an audit, 2026-12-02). Now the new one is built beside it and swapped
    in only when complete."""
    uri = _milvus_client_or_skip(tmp_path)
    codes = _clustered(200, 16)
    index = HashIndex(16).add(codes)
    export_codes(index, "milvus", uri, collection="kept")  # float layout on Lite
    queries = codes[::41]
    before = search_store(index, "milvus", uri, queries, 5, collection="kept")
    try:
        export_codes(HashIndex(16).add(-codes), "milvus", uri, collection="kept", layout="binary", overwrite=True)
    except ValueError as error:
        assert "does not support binary vectors" in str(error)
    else:
        pytest.skip("this Milvus takes binary vectors: the overwrite succeeded")
    after = search_store(index, "milvus", uri, queries, 5, collection="kept")
    np.testing.assert_array_equal(after[0], before[0])
    import pymilvus

    assert pymilvus.MilvusClient(uri=uri).list_collections() == ["kept"]  # no staging collection left
    export_codes(HashIndex(16).add(-codes), "milvus", uri, collection="kept", overwrite=True)  # a good one replaces it
    assert round_trip(HashIndex(16).add(-codes), "milvus", uri, -codes[::41], k=5, collection="kept")["same"]


def test_an_overwrite_on_a_server_builds_beside_the_old_collection_and_renames(codes_and_ids, monkeypatch):
    pymilvus = pytest.importorskip("pymilvus")
    calls = []

    class Client(_FakeMilvusServer):
        create_schema = pymilvus.MilvusClient.create_schema
        prepare_index_params = pymilvus.MilvusClient.prepare_index_params
        collections = {}

        def rename_collection(self, old, new):
            calls.append(("rename", old, new))
            self.collections[new] = self.collections.pop(old)

        def insert(self, name, rows):
            if name == "c__shc_new" and rows[0]["id"] == -1:
                raise ConnectionError("lost the server")
            super().insert(name, rows)

    monkeypatch.setattr(pymilvus, "MilvusClient", Client)
    codes, ids = codes_and_ids
    uri = "http://milvus.invalid:19530"
    export_codes(HashIndex(codes.shape[1]).add(codes, ids), "milvus", uri, collection="c", layout="binary")
    with pytest.raises(ConnectionError):  # the connection lost while filling: the old collection stays
        export_codes(HashIndex(codes.shape[1]).add(codes, np.arange(len(ids)) - 1), "milvus", uri, collection="c",
                     layout="binary", overwrite=True)
    assert set(Client.collections) == {"c"} and {row["id"] for row in Client.collections["c"]["rows"]} == set(ids)
    export_codes(HashIndex(codes.shape[1]).add(-codes, ids), "milvus", uri, collection="c", layout="binary",
                 overwrite=True)
    assert calls == [("rename", "c__shc_new", "c")] and set(Client.collections) == {"c"}


def test_an_inverted_file_milvus_export_is_approximate_not_a_failed_exact_one():
    from shc.retrieval.stores import export_is_exact

    server = "http://milvus.invalid:19530"
    assert export_is_exact("milvus", server, "binary", "BIN_FLAT")
    assert not export_is_exact("milvus", server, "binary", "BIN_IVF_FLAT")  # searches nprobe lists only
    assert export_is_exact("milvus", server, "float", "BIN_IVF_FLAT")  # the float layout is always FLAT
    assert export_is_exact("npy", "x.npy") and not export_is_exact("usearch", "x.usearch")


def test_compare_topk_does_not_count_an_id_returned_twice():
    codes = np.array([[1, 1, 1, 1], [1, 1, 1, -1], [1, 1, -1, 1], [-1, -1, -1, -1]], np.int8)
    index = HashIndex(4).add(codes)
    reference = index.search(codes[:1], 3)  # distances 0, 1, 1: ids 0, then the tie {1, 2}
    twice = (np.array([[0, 1, 1]]), np.array([[0, 1, 1]]))  # id 1 for both slots of the tie
    result = compare_topk(index, codes[:1], reference, twice)
    assert not result["same"] and result["recall"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("content, words", [
    (b"PK\x03\x04 cut short", "cannot be read as a codes archive"),
    (b"\x00garbage bytes", "cannot be read as a codes archive"),
    ("npy", "holds a single array"),
])
def test_a_damaged_or_wrong_npz_source_is_named_with_the_fix(tmp_path, capsys, content, words):
    from shc.cli import main

    source = tmp_path / "codes.npz"
    if content == "npy":
        np.save(tmp_path / "a.npy", np.ones((3, 8)))
        (tmp_path / "a.npy").rename(source)
    else:
        source.write_bytes(content)
    assert main(["export", str(source), "--to", "npy", "--out", str(tmp_path / "o.npy")]) == 2
    err = capsys.readouterr().err
    assert words in err and str(source) in err and "Traceback (most recent" not in err and "allow_pickle" not in err


def test_an_npy_set_renamed_together_imports_and_a_contradicting_bits_is_refused(tmp_path):
    codes = _clustered(50, 12)
    index = HashIndex(12).add(codes, np.arange(50) * 7)
    export_codes(index, "npy", tmp_path / "o1.npy")
    moved = tmp_path / "moved"
    moved.mkdir()
    for suffix in (".npy", ".ids.npy", ".json"):
        (tmp_path / f"o1{suffix}").rename(moved / f"r9{suffix}")
    back = load_codes("npy", moved / "r9.npy")  # the description names o1.*: the set's own names are read
    np.testing.assert_array_equal(back.ids, index.ids)
    with pytest.raises(ValueError, match="--bits 16 contradicts .*12 bits"):
        load_codes("npy", moved / "r9.npy", num_bits=16)
