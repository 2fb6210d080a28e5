"""The time window on a real HBase: documents dated by ``indexed_at`` (their cells' timestamps), read by
``max_age`` through HBase time ranges, and a retention (a TTL) that expires them from every table at once.
Every time is given in the past: nothing waits for a clock."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from truth import cell_stamps

from simhash_schema import connect, describe, hbase2, index_tables, set_retention
from simhash_server.index.errors import InvalidArgument
from simhash_server.index.model import Document
from simhash_server.index.writes import ENTRY_PREFIX

HOUR_MS = 3_600_000
CLI = str(Path(sys.executable).with_name("simhash-index"))


def now_ms() -> int:
    return int(time.time() * 1000)


def test_a_dated_document_carries_its_time_and_max_age_reads_only_its_window(index, base, ids) -> None:
    seen = now_ms() - 2 * HOUR_MS
    index.index_many([Document(ids + "old", base, b"", seen), Document(ids + "new", base ^ 1)])
    assert cell_stamps(index, ids + "old", base) == (seen, seen)
    assert {h.doc_id for h in index.query(base)} == {ids + "old", ids + "new"}
    assert [h.doc_id for h in index.query(base, max_age_ms=HOUR_MS)] == [ids + "new"]
    assert {h.doc_id for h in index.query(base, max_age_ms=3 * HOUR_MS)} == {ids + "old", ids + "new"}
    # A fingerprint whose only document is old is not even a candidate: its drawers are read by a time
    # range too, and the fp2docs read never asks for it.
    alone = base ^ (0xFFFF << 40)
    index.index_many([Document(ids + "alone", alone, b"", seen)])
    assert index.query(alone, max_age_ms=HOUR_MS) == []
    assert [h.doc_id for h in index.query(alone)] == [ids + "alone"]


def test_a_document_is_never_dated_before_its_ids_last_write(index, base, ids) -> None:
    doc = ids + "a"
    index.index(doc, base)
    written, _ = cell_stamps(index, doc, base)
    index.index_many([Document(doc, base, b"", now_ms() - 2 * HOUR_MS)])  # older than the record: just after it
    assert cell_stamps(index, doc, base) == (written + 1, written + 1)

    # Deleted, with its delete's entry pruned (as gc prunes it): only HBase's delete markers remain, which
    # would hide a record dated before them.  The write notices and stores the document at the present.
    assert index.delete([doc]) == 1
    deleted_at = now_ms()
    t = hbase2()
    (row,) = index._records([doc.encode()], None).values()
    prune = [
        t.TDelete(
            row=doc.encode(),
            columns=[t.TColumn(family=b"d", qualifier=column.partition(b":")[2], timestamp=at)],
            deleteType=t.TDeleteType.DELETE_COLUMNS,
        )
        for column, (_, at) in row.entries.items()
        if column.startswith(ENTRY_PREFIX)
    ]
    index.thrift2.run(lambda c: c.deleteMultiple(index._names["docs"], prune))
    assert index._records([doc.encode()], None)[doc.encode()].stamp == 0  # nothing of the row shows
    index.index_many([Document(doc, base, b"", now_ms() - 2 * HOUR_MS)])
    record, column = cell_stamps(index, doc, base)
    assert record is not None and record == column and record >= deleted_at - 1000
    assert index.get(doc) == base and [h.doc_id for h in index.query(base)] == [doc]


def test_retention_expires_documents_from_every_table_at_once(make_index, hbase, base, ids) -> None:
    store = make_index()
    store.index_many([Document(ids + "old", base, b"", now_ms() - 90 * 60_000), Document(ids + "new", base ^ 1)])
    assert store.count_documents() == 2 and store.retention_seconds is None
    client = connect(hbase.host, hbase.thrift2_port)
    try:
        tables = index_tables(store.config.table_prefix, retention_seconds=3600)
        assert set_retention(client, tables) == [t.name for t in tables.documents()]
        assert set_retention(client, tables) == []  # idempotent
        for spec in store.tables.all():
            ttl = describe(client, spec.name)[spec.family.name]["ttl_seconds"]
            assert ttl == {"drawers": 3600, "fp2docs": 3600, "docs": 3600, "claims": 60}.get(spec.name.split("_")[-1])
    finally:
        client.close()
    # A server learns the retention at start, then every 30 s (ServerConfig.retention_check_seconds), apart
    # from its health checks: a table's settings come from the HMaster, which queries do not need.
    assert store.read_retention() == 3600 and store.retention_seconds == 3600
    assert [h.doc_id for h in store.query(base)] == [ids + "new"]
    assert store.get(ids + "old") is None and store.get(ids + "new") == base ^ 1
    assert store.count_documents() == 1
    assert cell_stamps(store, ids + "old", base) == (None, None)
    with pytest.raises(InvalidArgument, match="older than the index's retention of 3600 s") as refused:
        store.index_many([Document(ids + "late", base, b"", now_ms() - 2 * HOUR_MS)])
    assert refused.value.field == "indexed_at"


def test_schema_apply_sets_keeps_and_removes_the_retention(hbase, drop) -> None:
    prefix = f"r{uuid.uuid4().hex[:10]}"
    env = {
        **os.environ,
        "SIMHASH_HBASE_HOST": hbase.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
        "SIMHASH_TABLE_PREFIX": prefix,
    }

    def apply(*options: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLI, "schema", "apply", *options], env=env, capture_output=True, text=True, timeout=120)

    def ttls() -> list[int | None]:
        client = connect(hbase.host, hbase.thrift2_port)
        try:
            return [describe(client, t.name)["d"]["ttl_seconds"] for t in index_tables(prefix).documents()]
        finally:
            client.close()

    try:
        made = apply("--retention", "30d")
        assert made.returncode == 0, made.stderr
        assert "retention: 2592000 s" in made.stdout and ttls() == [2592000] * 3
        kept = apply()  # not named: the index keeps its own, and nothing differs from the spec
        assert kept.returncode == 0 and "differs" not in kept.stderr and ttls() == [2592000] * 3
        changed = apply("--retention", "72h")
        assert changed.stdout.count("retention changed") == 3 and ttls() == [259200] * 3
        assert apply("--retention", "forever").returncode == 0 and ttls() == [None] * 3
        refused = apply("--retention", "10m")
        assert refused.returncode == 2 and "at least 3600 s" in refused.stderr
        assert apply("--retention", "soon").returncode == 2
    finally:
        drop(index_tables(prefix))


def article(seed: str) -> str:
    rng = random.Random(seed)
    return "。".join("".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(20)) for _ in range(40)) + "。"


def test_the_service_dates_documents_and_reads_windows(client, ids) -> None:
    a, b = article("window-a" + ids), article("window-b" + ids)
    four_hours_ago = time.time() - 4 * 3600
    client.index(ids + "a", text=a, indexed_at=four_hours_ago)
    copy = a + "（本文转载自技术博客）"
    fresh = client.deduplicate(ids + "copy", text=copy, max_age=timedelta(hours=1))
    assert fresh.stored and fresh.hits == ()  # the original is older than the window
    again = client.deduplicate(ids + "copy2", text=copy)
    assert not again.stored and {h.doc_id for h in again.hits} == {ids + "a", ids + "copy"}
    assert [h.doc_id for h in client.query(text=a, min_similarity=0.5, max_age=3600)] == [ids + "copy"]
    outcomes = client.query_batch(
        [{"text": a, "min_similarity": 0.5, "max_age": 3600}, {"text": a, "min_similarity": 0.5}]
    )
    assert [sorted(h.doc_id for h in o.hits) for o in outcomes] == [[ids + "copy"], [ids + "a", ids + "copy"]]
    decided = client.deduplicate_batch(
        [
            {"doc_id": ids + "b", "text": b, "indexed_at": time.time() - 7200},
            {"doc_id": ids + "b-copy", "text": b + "（转载）", "max_age": timedelta(hours=1)},
            {"doc_id": ids + "b-copy2", "text": b + "（转载）"},
            {"doc_id": ids + "late", "text": b, "indexed_at": time.time() + 3600},
        ]
    )
    assert [o.result.stored if o.ok else None for o in decided] == [True, True, False, None]
    assert decided[3].violations[0].field == "documents[3].indexed_at"
    assert client.stats().retention is None


def test_stats_reports_the_retention_and_the_service_refuses_what_it_would_expire(server, hbase, until) -> None:
    from simhash_client import InvalidArgument as Refused
    from simhash_client import SimHashClient

    prefix = server.index.store.config.table_prefix
    client = connect(hbase.host, hbase.thrift2_port)
    try:
        with SimHashClient(f"127.0.0.1:{server.port}", timeout=20) as api:
            set_retention(client, index_tables(prefix, retention_seconds=3600))
            try:
                until(lambda: api.stats(timeout=20).retention == 3600)  # read again every 0.5 s here
                with pytest.raises(Refused) as refused:
                    api.index("late", simhash=1, indexed_at=time.time() - 7200)
                assert refused.value.fields == ["indexed_at"]
                assert api.index("recent", simhash=1, indexed_at=time.time() - 600) == 1
            finally:
                set_retention(client, index_tables(prefix))
            until(lambda: api.stats(timeout=20).retention is None)
    finally:
        client.close()


def test_bulk_load_keeps_a_back_filled_historys_dates(make_index, tmp_path: Path) -> None:
    store = make_index()
    month_ago_s = int(time.time()) - 30 * 86400
    path = tmp_path / "history.jsonl"
    path.write_text(
        f'{{"doc_id": "old", "simhash": "00000000000000ff", "indexed_at": {month_ago_s}}}\n'
        '{"doc_id": "now", "simhash": "00000000000000fe"}\n'
        '{"doc_id": "bad", "simhash": "00000000000000fd", "indexed_at": "last week"}\n'
    )
    env = {
        **os.environ,
        "SIMHASH_HBASE_HOST": store.config.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(store.config.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(store.config.thrift2_port),
        "SIMHASH_TABLE_PREFIX": store.config.table_prefix,
    }
    load = [CLI, "bulk-load", str(path), "--rejects", str(tmp_path / "rejects.tsv")]
    result = subprocess.run(load, env=env, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 3, result.stderr  # finished, with a reject
    assert "last week" in (tmp_path / "rejects.tsv").read_text()
    assert cell_stamps(store, "old", 0xFF) == (month_ago_s * 1000, month_ago_s * 1000)
    assert [h.doc_id for h in store.query(0xFF, max_age_ms=7 * 86400_000)] == ["now"]
    assert sorted(h.doc_id for h in store.query(0xFF)) == ["now", "old"]
