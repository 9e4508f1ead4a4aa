"""HashIndex against brute-force references: exact top-k with ties by id, range search, MIH, files."""

from __future__ import annotations

import numpy as np
import pytest

from shc.metrics import mean_average_precision
from shc.retrieval import HashIndex, pack_codes


def _codes(rng, n, q):
    return rng.choice(np.array([-1, 1], np.int8), size=(n, q))


def _brute_force(database, ids, queries, k):
    """Full distance matrix, then a lexsort by (distance, id): the independent reference."""
    q = database.shape[1]
    distances = (q - queries.astype(np.int64) @ database.astype(np.int64).T) // 2
    order = np.array([np.lexsort((ids, row))[:k] for row in distances])
    return np.take_along_axis(distances, order, axis=1), ids[order]


def _assert_exact(index, database, ids, queries, ks, method="linear"):
    """``index.search`` equals the brute force, distances and ids, for every k in ``ks``."""
    for k in ks:
        expected = _brute_force(database, ids, queries, k)
        distances, found = index.search(queries, k, method=method)
        np.testing.assert_array_equal(distances, expected[0], err_msg=f"{method} k={k}")
        np.testing.assert_array_equal(found, expected[1], err_msg=f"{method} k={k}")


@pytest.mark.parametrize("q", [8, 13, 64, 96, 128, 200])  # one, two and four 64-bit words (each kernel path)
@pytest.mark.parametrize("seed", [0, 1])
def test_search_equals_lexsort_by_distance_then_id_with_many_ties(q, seed):
    rng = np.random.default_rng(seed)
    database, queries = _codes(rng, 700, q), _codes(rng, 23, q)
    ids = rng.choice(np.arange(-(2**62), 2**62, 2**50), size=700, replace=False)  # arbitrary int64, unsorted
    index = HashIndex(q).add(database, ids)
    for method in ("linear", "mih"):
        _assert_exact(index, database, ids, queries, (1, 7, 100, 699, 700), method)


def test_duplicate_codes_tie_by_id_not_by_insertion_order():
    code = np.ones((1, 8), np.int8)
    index = HashIndex(8).add(np.repeat(code, 3, axis=0), ids=[30, 10, 20]).add(code, ids=[5])
    distances, ids = index.search(code, 3)
    assert ids.tolist() == [[5, 10, 20]] and distances.tolist() == [[0, 0, 0]]


def test_k_beyond_the_index_returns_every_code_without_padding():
    rng = np.random.default_rng(3)
    index = HashIndex(16).add(_codes(rng, 5, 16))
    distances, ids = index.search(_codes(rng, 2, 16), 50)
    assert distances.shape == ids.shape == (2, 5)
    assert sorted(ids[0].tolist()) == [0, 1, 2, 3, 4]


def test_packed_and_sign_inputs_give_the_same_index():
    rng = np.random.default_rng(4)
    database, queries = _codes(rng, 300, 20), _codes(rng, 9, 20)
    by_sign = HashIndex(20).add(database.astype(np.float32)).search(queries, 10)
    packed = HashIndex(20).add(np.packbits(database > 0, axis=1)).search(np.packbits(queries > 0, axis=1), 10)
    np.testing.assert_array_equal(by_sign[0], packed[0])
    np.testing.assert_array_equal(by_sign[1], packed[1])


def test_inputs_are_validated():
    index = HashIndex(16).add(np.ones((2, 16), np.int8))
    with pytest.raises(ValueError, match="duplicate ids \\[1\\]"):
        index.add(np.ones((1, 16), np.int8), ids=[1])
    assert len(index) == 2  # nothing was added
    with pytest.raises(ValueError, match="-1/\\+1"):
        index.add(np.zeros((1, 16)))
    with pytest.raises(ValueError, match="non-zero bits after bit 12"):
        pack_codes(np.full((1, 2), 255, np.uint8), 12)
    with pytest.raises(ValueError, match="columns"):
        index.search(np.ones((1, 32), np.int8), 1)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        index.search(np.ones((1, 16), np.int8), 0)
    with pytest.raises(ValueError, match="empty"):
        HashIndex(16).search(np.ones((1, 16), np.int8), 1)


@pytest.mark.parametrize("radius", [0, 2, 5, 13])
def test_range_search_equals_brute_force(radius):
    rng = np.random.default_rng(radius)
    database, queries = _codes(rng, 400, 13), _codes(rng, 11, 13)
    ids = rng.permutation(10_000)[:400]
    result = HashIndex(13).add(database, ids).range_search(queries, radius)
    reference = _brute_force(database, ids, queries, len(database))
    assert len(result) == len(queries)
    for i in range(len(queries)):
        inside = reference[0][i] <= radius
        np.testing.assert_array_equal(result[i][0], reference[0][i][inside])
        np.testing.assert_array_equal(result[i][1], reference[1][i][inside])


def test_range_search_and_search_take_zero_queries_alike():
    index = HashIndex(16).add(_codes(np.random.default_rng(0), 30, 16))
    result = index.range_search(np.ones((0, 16), np.int8), 3)
    assert len(result) == 0 and result.lims.tolist() == [0] and result.distances.size == result.ids.size == 0
    assert index.search(np.ones((0, 16), np.int8), 3)[0].shape == (0, 3)


def test_ids_that_would_leave_int64_are_refused_by_name():
    index = HashIndex(16).add(np.ones((1, 16), np.int8), [np.iinfo(np.int64).max])
    with pytest.raises(ValueError, match="leave int64; pass ids="):
        index.add(np.ones((1, 16), np.int8))


def test_mih_equals_linear_scan_on_clustered_codes():
    """Codes near a few centers (like trained hash codes): many exact ties, small search radii."""
    rng = np.random.default_rng(5)
    centers = _codes(rng, 20, 64)
    flips = np.where(rng.random((30_000, 64)) < 0.08, -1, 1).astype(np.int8)
    database = centers[rng.integers(0, 20, 30_000)] * flips
    queries = centers[rng.integers(0, 20, 40)] * np.where(rng.random((40, 64)) < 0.08, -1, 1).astype(np.int8)
    index = HashIndex(64).add(database)
    for m in (3, 4, 7):
        for k in (1, 100, 1000):
            linear = index.search(queries, k, method="linear")
            mih = index.search(queries, k, method="mih", substrings=m)
            np.testing.assert_array_equal(linear[0], mih[0])
            np.testing.assert_array_equal(linear[1], mih[1])


@pytest.mark.parametrize("k", [10, 300])
def test_mih_equals_linear_scan_when_more_codes_tie_than_its_first_buffer_holds(k):
    """Hash-center codes: thousands of items on a few codes, so a query's candidates within the k-th distance
    outgrow MIH's first buffer (max(4k, 1024)). Its growth inside numba's parallel loop once returned row 0 ten
    times for ten identical codes, and out-of-range rows for queries far from the clusters (an audit's find)."""
    rng = np.random.default_rng(7)
    centers = _codes(rng, 4, 32)
    database = np.concatenate([np.repeat(centers, 1500, axis=0),  # 1,500 copies of each center
                               centers[rng.integers(0, 4, 2000)] * np.where(rng.random((2000, 32)) < 0.05, -1, 1)])
    queries = np.concatenate([centers, _codes(rng, 20, 32)]).astype(np.int8)  # on the clusters and far from them
    index = HashIndex(32).add(database.astype(np.int8))
    linear = index.search(queries, k, method="linear")
    mih = index.search(queries, k, method="mih")
    np.testing.assert_array_equal(linear[0], mih[0])
    np.testing.assert_array_equal(linear[1], mih[1])


def test_ranking_is_the_one_shc_metrics_evaluates():
    """mAP@K recomputed from HashIndex's top K (AP = mean precision at the relevant ranks) equals shc.metrics."""
    rng = np.random.default_rng(6)
    database, queries = _codes(rng, 500, 12), _codes(rng, 30, 12)
    db_labels, query_labels = rng.integers(0, 4, 500), rng.integers(0, 4, 30)
    k = 60
    _, ids = HashIndex(12).add(database).search(queries, k)
    relevant = db_labels[ids] == query_labels[:, None]
    precision_at = np.cumsum(relevant, axis=1) / np.arange(1, k + 1)
    ap = np.where(relevant.any(axis=1), (precision_at * relevant).sum(axis=1) / np.maximum(relevant.sum(axis=1), 1), 0)
    assert ap.mean() == pytest.approx(mean_average_precision(queries, query_labels, database, db_labels, topk=k))


def test_save_load_round_trip_and_refusals(tmp_path):
    rng = np.random.default_rng(7)
    database, queries = _codes(rng, 200, 40), _codes(rng, 5, 40)
    index = HashIndex(40).add(database, ids=rng.choice(10**9, 200, replace=False) - 5 * 10**8)
    index.metadata = {"paths": ["a.png"] * 200}
    path = index.save(tmp_path / "sub" / "db.shcidx")
    assert [p.name for p in path.parent.iterdir()] == ["db.shcidx"]  # no temporary file left behind
    loaded = HashIndex.load(path, num_bits=40)
    assert len(loaded) == 200 and loaded.metadata == index.metadata
    np.testing.assert_array_equal(loaded.ids, index.ids)
    for a, b in zip(loaded.search(queries, 17), index.search(queries, 17), strict=True):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="40-bit codes but 64-bit"):
        HashIndex.load(path, num_bits=64)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    (tmp_path / "flipped").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="checksum"):
        HashIndex.load(tmp_path / "flipped")
    (tmp_path / "short").write_bytes(path.read_bytes()[:-8])
    with pytest.raises(ValueError, match="truncated"):
        HashIndex.load(tmp_path / "short")
    (tmp_path / "other").write_bytes(b"PK\x03\x04 a zip file")
    with pytest.raises(ValueError, match="not a valid shc index"):
        HashIndex.load(tmp_path / "other")
    with pytest.raises(FileNotFoundError, match="shc index"):
        HashIndex.load(tmp_path / "missing")


def test_a_damaged_byte_anywhere_in_a_saved_index_is_detected(tmp_path):
    """Every byte is covered by a checksum: the header (metadata: the file paths searches print) as well as the
    codes. Format 1 checked only the payload, so a damaged path or bit count in the header loaded silently."""
    index = HashIndex(12).add(_codes(np.random.default_rng(3), 4, 12))
    index.metadata = {"paths": ["cat/1.png", "dog/2.png", "cat/3.png", "dog/4.png"], "root": "/images"}
    good = index.save(tmp_path / "db.shcidx").read_bytes()
    damaged = tmp_path / "damaged.shcidx"
    for position in range(len(good)):
        for flip in (0x01, 0x80):
            data = bytearray(good)
            data[position] ^= flip
            damaged.write_bytes(bytes(data))
            with pytest.raises(ValueError, match="shc index|format version"):
                HashIndex.load(damaged)


def test_format_1_files_still_load(tmp_path):
    """An index saved by an earlier shc (format 1: magic ending in 0, no header checksum) is read as before."""
    import json
    import zlib

    codes = _codes(np.random.default_rng(4), 5, 20)
    packed = pack_codes(codes, 20).astype("<u8").tobytes()
    ids = np.arange(5, dtype="<i8").tobytes()
    header = json.dumps({"format_version": 1, "num_bits": 20, "count": 5, "words": 1,
                         "crc32": zlib.crc32(ids, zlib.crc32(packed)), "metadata": {"root": "/x"}}).encode()
    path = tmp_path / "old.shcidx"
    path.write_bytes(b"SHCHIDX\x00" + len(header).to_bytes(4, "little") + header + packed + ids)
    loaded = HashIndex.load(path, num_bits=20)
    assert loaded.metadata == {"root": "/x"}
    _assert_exact(loaded, codes, np.arange(5), codes, [5])


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_approximate_modes_find_most_true_neighbours(kind):
    rng = np.random.default_rng(8)
    centers = _codes(rng, 50, 64)
    database = centers[rng.integers(0, 50, 5000)] * np.where(rng.random((5000, 64)) < 0.1, -1, 1).astype(np.int8)
    queries = database[:50] * np.where(rng.random((50, 64)) < 0.05, -1, 1).astype(np.int8)
    index = HashIndex(64).add(database, ids=np.arange(5000) * 3)
    exact_d, _ = index.search(queries, 20)
    approx_d, approx_ids = index.search(queries, 20, method=kind)
    assert np.isin(approx_ids, index.ids).all()
    # ids are correct: their stored codes are at the reported distances
    codes = database[approx_ids // 3]
    np.testing.assert_array_equal(approx_d, (64 - np.einsum("qkb,qb->qk", codes.astype(int), queries.astype(int))) // 2)
    # recall by distance: the k-th distance found is close to the exact one
    assert np.mean(approx_d[:, -1] <= exact_d[:, -1] + 1) > 0.8


@pytest.mark.parametrize("q", [64, 128, 256])
def test_linear_scan_skips_chunks_without_losing_late_close_codes(q):
    """20,000 far codes with a few near ones planted late and across chunk boundaries, many at equal
    distance: the chunked scan (64 rows per chunk, chunks beyond the k-th distance skipped) still returns
    exactly the brute-force (distance, id) order."""
    rng = np.random.default_rng(q)
    database = _codes(rng, 20_000, q)
    queries = _codes(rng, 5, q)
    for position in (63, 64, 127, 5_000, 19_999):  # chunk edges and the very end
        for query in range(5):
            near = queries[query].copy()
            near[rng.choice(q, size=2, replace=False)] *= -1
            database[position - query] = near
    ids = np.arange(20_000, dtype=np.int64)[::-1].copy()  # descending ids: ties must follow id, not row
    _assert_exact(HashIndex(q).add(database, ids), database, ids, queries, (1, 3, 10, 150))


@pytest.mark.parametrize("q", [64, 128])
def test_linear_scan_when_the_top_k_fills_at_distance_zero(q):
    """More than k exact copies of each query, the first ones early: after them the bound is negative (no code
    can enter), and the later copies must lose their ties to the earlier ids."""
    rng = np.random.default_rng(q + 1)
    database = _codes(rng, 6_000, q)
    queries = _codes(rng, 3, q)
    for query in range(3):
        database[[10 + query, 700 + query, 2_000 + query, 5_990 + query]] = queries[query]
    ids = rng.permutation(6_000).astype(np.int64)
    _assert_exact(HashIndex(q).add(database, ids), database, ids, queries, (1, 2, 4, 5))


@pytest.mark.parametrize("mih_seconds, chosen", [(5.0, "linear"), (0.5, "mih")])
def test_auto_search_probes_both_methods_and_keeps_the_exact_answer(monkeypatch, mih_seconds, chosen):
    """Automatic search on a large batch times MIH and the linear scan on the first queries (a fake clock makes
    either one the faster here), answers the rest with the faster, and reuses the probe's answers: the result
    is the brute force's either way."""
    import shc.retrieval.index as index_module

    monkeypatch.setattr(index_module, "MIH_MIN_SIZE", 100)
    monkeypatch.setattr(index_module, "PROBE_QUERIES", 4)
    rng = np.random.default_rng(8)
    database, queries = _codes(rng, 3_000, 64), _codes(rng, 11, 64)
    ids = rng.permutation(3_000).astype(np.int64)
    index = HashIndex(64).add(database, ids)
    assert index.choose_method(10) == "mih"  # no batch given: no probe
    assert index.choose_method(10, queries[:7]) == "mih"  # fewer than 2 x PROBE_QUERIES: no probe

    def fake_clock(ticks):
        values = iter(ticks)
        return lambda: next(values)

    monkeypatch.setattr(index_module.time, "perf_counter", fake_clock([0.0, mih_seconds, 10.0, 11.0]))
    assert index.choose_method(10, queries) == chosen
    monkeypatch.setattr(index_module.time, "perf_counter", fake_clock([0.0, mih_seconds, 10.0, 11.0]))
    _assert_exact(index, database, ids, queries, (10,), method="auto")
