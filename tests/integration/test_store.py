"""Store operations on real HBase: upsert, move, delete, orphans, query order and limits, failures.

The tests share one index; each works in the neighbourhood of its own random fingerprint `base`.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace

import pytest

from simhash_deploy import Ports
from simhash_server.index.errors import Unavailable
from simhash_server.index.keys import drawer_keys, drawer_prefixes
from simhash_server.index.model import Hit
from simhash_server.index.store import IndexStore


def flip(fp: int, *bits: int) -> int:
    for b in bits:
        fp ^= 1 << b
    return fp


def test_index_get_and_query_closest_first(index, base, ids) -> None:
    index.index_many(
        [
            (ids + "exact", base),
            (ids + "one", flip(base, 0)),
            (ids + "three", flip(base, 1, 30, 63)),
            (ids + "four", flip(base, 2, 20, 40, 60)),
            (ids + "twin", base),
        ]
    )
    assert index.get(ids + "exact") == base and index.get(ids + "nobody") is None
    assert index.query(base) == [
        Hit(ids + "exact", base, 0),
        Hit(ids + "twin", base, 0),
        Hit(ids + "one", flip(base, 0), 1),
        Hit(ids + "three", flip(base, 1, 30, 63), 3),
    ]
    assert [h.doc_id for h in index.query(base, max_distance=0)] == [ids + "exact", ids + "twin"]
    assert [h.doc_id for h in index.query(base, limit=3)] == [ids + "exact", ids + "twin", ids + "one"]
    # one fingerprint to read (a single get, not a multi-get), its documents cut by the limit
    assert index.query(base, max_distance=0, limit=1) == [Hit(ids + "exact", base, 0)]
    assert index.query(flip(base, 1, 30, 63), max_distance=0) == [Hit(ids + "three", flip(base, 1, 30, 63), 0)]


def test_reindexing_an_id_moves_it_and_leaves_no_stale_mapping(index, hbase, base, ids) -> None:
    index.index(ids + "doc", base)
    moved = flip(base, *range(0, 64, 4))  # far away
    index.index(ids + "doc", moved)
    assert index.get(ids + "doc") == moved
    assert index.query(base) == []
    assert index.query(moved) == [Hit(ids + "doc", moved, 0)]
    conn = hbase.connection()
    try:
        assert conn.table(index.tables.fp2docs.name).row(base.to_bytes(8, "big")) == {}
    finally:
        conn.close()


def test_retried_writes_are_harmless(index, hbase, base, ids) -> None:
    for _ in range(3):
        index.index_many([(ids + "a", base), (ids + "b", flip(base, 5))])
    assert [h.doc_id for h in index.query(base)] == [ids + "a", ids + "b"]
    conn = hbase.connection()
    try:
        table = conn.table(index.tables.drawers.name)
        for fp in (base, flip(base, 5)):
            rows = table.rows(drawer_keys(fp))
            assert [k for k, _ in rows] == drawer_keys(fp)  # exactly one row per drawer, once
            assert all(v == {b"d:": b""} for _, v in rows)
        assert conn.table(index.tables.fp2docs.name).row(base.to_bytes(8, "big")) == {b"d:" + (ids + "a").encode(): b""}
    finally:
        conn.close()


def test_delete_leaves_orphan_drawers_that_queries_skip(index, base, ids) -> None:
    index.index_many([(ids + "a", base), (ids + "b", base), (ids + "c", flip(base, 9))])
    assert index.delete([ids + "a", ids + "c", ids + "never-indexed"]) == 2
    assert index.get(ids + "a") is None
    assert index.query(base) == [Hit(ids + "b", base, 0)]
    assert index.delete([ids + "b"]) == 1
    assert index.query(base) == []  # base's drawer rows remain, with no documents: skipped
    assert base in index.candidates(base)


def test_repeated_id_in_one_batch_keeps_the_last(index, base, ids) -> None:
    index.index_many([(ids + "x", base), (ids + "x", flip(base, 1)), (ids + "x", flip(base, 2))])
    assert index.get(ids + "x") == flip(base, 2)
    assert [h.fingerprint for h in index.query(base)] == [flip(base, 2)]


def test_unicode_ids_round_trip(index, base, ids) -> None:
    index.index_many([(ids + "文档/一", base), (ids + "emoji-😀", base)])
    assert {h.doc_id for h in index.query(base)} == {ids + "文档/一", ids + "emoji-😀"}


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.query(0, max_distance=4), "max_distance must be 0..3, got 4: the 5-segment drawer index"),
        (lambda s: s.query(2**64), "unsigned 64-bit"),
        (lambda s: s.index("", 0), "doc_id is empty"),
        (lambda s: s.index("x" * 513, 0), "doc_id is 513 bytes, the limit is 512"),
        (lambda s: s.index("ok", -1), "unsigned 64-bit"),
    ],
)
def test_bad_arguments_are_named(index, call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call(index)


def test_storage_failure_is_an_error_never_an_empty_answer(index, base) -> None:
    closed = Ports.free()  # nothing listens there
    dead = IndexStore(
        replace(index.config, thrift_port=closed.thrift, thrift2_port=closed.thrift2, retries=1), index.tables
    )
    try:
        for call in (
            lambda: dead.query(base),
            lambda: dead.index("a", base),
            lambda: dead.get("a"),
            lambda: dead.delete(["a"]),
        ):
            with pytest.raises(Unavailable, match="did not answer after 2 attempt"):
                call()
    finally:
        dead.close()


def test_pooled_connections_survive_the_gateways_idle_timeout(index, hbase, base, ids, caplog) -> None:
    if hbase.idle_timeout_ms is None:
        pytest.skip("the external HBase's Thrift idle timeout is unknown")
    index.index(ids + "kept", base)
    assert index.query(base) == [Hit(ids + "kept", base, 0)]  # both pools now hold open connections
    time.sleep(hbase.idle_timeout_ms / 1000 + 3)  # the gateways close them meanwhile
    with caplog.at_level("WARNING", logger="simhash_server.index"):
        assert index.query(base) == [Hit(ids + "kept", base, 0)]
    # a dropped connection was met, discarded and replaced: by the pool, or by the pipelined drawer scans
    assert "transport error" in caplog.text or "pipelined drawer scans failed" in caplog.text
    index.index(ids + "later", flip(base, 1))
    assert index.get(ids + "later") == flip(base, 1)


def test_a_drawer_holding_more_rows_than_one_scan_page_is_read_whole(index, base, ids) -> None:
    """12,000 fingerprints share base's drawer (0,1) (its top 26 bits): one scan reads them in two pages."""
    rng = random.Random(base)
    top = base >> 38 << 38
    shared = {top | rng.getrandbits(38) for _ in range(12_000)}
    index.index_many([(f"{ids}page-{n}", fp) for n, fp in enumerate(sorted(shared))])
    found = index.candidates(base)
    assert shared <= found
    mine = set(drawer_prefixes(base))
    assert all(mine & set(drawer_prefixes(fp)) for fp in found)  # and nothing that shares no drawer


def test_sampled_fingerprints_are_stored_ones_and_wrap_round_to_the_first(make_index, ids) -> None:
    store = make_index()
    assert store.sample_fingerprints(10, seed=1) == []
    stored = {random.getrandbits(64) for _ in range(30)}
    store.index_many([(f"{ids}{n}", fp) for n, fp in enumerate(stored)])
    for seed in range(5):
        some = store.sample_fingerprints(10, seed=seed)
        assert len(some) == len(set(some)) == 10 and set(some) <= stored
    # more than are stored: every one once, whichever key the sample began at
    assert sorted(store.sample_fingerprints(100, seed=7)) == sorted(stored)
    assert store.sample_fingerprints(0) == []
