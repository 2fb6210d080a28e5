"""`simhash-index hfile-load` on the real HBase, with HBase's own MapReduce tooling in local mode: it stores
exactly what `bulk-load` stores, cell for cell, for new ids, repeated ids, shared fingerprints, texts and ids
already stored (moved, unchanged, deleted earlier)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
from truth import cell_stamps, digest, mixed_input

from simhash_client import SimHashClient
from simhash_schema import connect, index_tables, set_retention
from simhash_server.index.keys import PART_KEY_LENGTH
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore
from simhash_server.index.writes import ENTRY_PREFIX

CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture(autouse=True)
def _launcher_only(hbase) -> None:
    if hbase.local is None:  # the job's HBase client needs ZooKeeper and region servers the host can reach
        pytest.skip("the HFile job reaches the local launcher's ZooKeeper")


def _env(store: IndexStore, hbase) -> dict[str, str]:
    return {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(store.config.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(store.config.thrift2_port),
        "SIMHASH_TABLE_PREFIX": store.config.table_prefix,
        "SIMHASH_ZOOKEEPER": f"127.0.0.1:{hbase.local.ports.zookeeper}",
    }


def cli(store: IndexStore, hbase, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, command, *args, "--quiet"], env=_env(store, hbase), capture_output=True, text=True, timeout=600
    )


def cells(store: IndexStore, hbase) -> dict[str, list[tuple[bytes, bytes, bytes]]]:
    """Every cell (row, column, value) of the three tables, in scan order; not the docs rows' writer entries,
    which only live writers leave (index/writes.py: they settle writers of one id, and say nothing of it)."""
    conn = hbase.connection(120_000)
    try:
        return {
            name: [
                (row, column, value)
                for row, data in conn.table(spec.name).scan(batch_size=5000)
                for column, value in sorted(data.items())
                if name != "docs" or not column.startswith(ENTRY_PREFIX)
            ]
            for name, spec in (
                ("drawers", store.tables.drawers),
                ("fp2docs", store.tables.fp2docs),
                ("docs", store.tables.docs),
            )
        }
    finally:
        conn.close()


def assert_same_tables(a: IndexStore, b: IndexStore, hbase) -> dict[str, int]:
    left, right = cells(a, hbase), cells(b, hbase)
    for name in left:
        if digest(left[name]) != digest(right[name]):
            extra = sorted(set(right[name]) - set(left[name]))[:5]
            missing = sorted(set(left[name]) - set(right[name]))[:5]
            raise AssertionError(f"{name} differs: hfile-load has extra {extra}, lacks {missing}")
    return {name: len(table) for name, table in left.items()}


@pytest.mark.slow(
    "8,000 documents and records loaded twice, once by HBase's MapReduce jobs (local runner) and once through Thrift"
)
def test_hfile_load_stores_what_bulk_load_stores_and_the_service_answers_alike(
    make_index, hbase, spawn_server, tmp_path: Path
) -> None:
    thrift, hfiles = make_index(regions=4), make_index(regions=4)
    source = tmp_path / "mixed.jsonl"
    mixed_input(source, seed=7, docs=3000, records=5000, shared=1200)

    by_thrift = cli(thrift, hbase, "bulk-load", str(source), "--rejects", str(tmp_path / "a.rejects"))
    assert by_thrift.returncode == 3, by_thrift.stderr
    staging = tmp_path / "staging"
    by_hfiles = cli(
        hfiles, hbase, "hfile-load", str(source), "--staging", str(staging), "--rejects", str(tmp_path / "b.rejects")
    )
    assert by_hfiles.returncode == 3, by_hfiles.stderr
    assert "lines read 5,001; records 5,000" in by_hfiles.stdout and "rejected 1" in by_hfiles.stdout
    assert (tmp_path / "a.rejects").read_text().split("\t")[1:] == (tmp_path / "b.rejects").read_text().split("\t")[1:]
    assert not staging.exists()  # removed once loaded

    counts = assert_same_tables(thrift, hfiles, hbase)
    assert counts["docs"] < 5000 and counts["drawers"] < 10 * counts["docs"]  # repeats and sharing did occur
    assert any(value for _, _, value in cells(hfiles, hbase)["fp2docs"])  # texts brought their sketches
    assert hfiles.recipe.part_rows  # a new index is v7: pages' first parts have rows too, alike both ways
    assert any(len(row) == PART_KEY_LENGTH for row, _, _ in cells(hfiles, hbase)["drawers"])

    _, target = spawn_server(hfiles.config.table_prefix)
    rng = random.Random(8)
    probes = [fp ^ (1 << rng.randrange(64)) for _, _, fp in _sample_docs(thrift, hbase, rng, 40)]
    with SimHashClient(target) as client:
        for probe in probes:
            expected = [(h.doc_id, h.fingerprint, h.distance) for h in thrift.query(probe, limit=50)]
            assert expected  # each probe is one bit from a stored fingerprint
            assert [(h.doc_id, h.simhash, h.distance) for h in client.query(simhash=probe, limit=50)] == expected


def _sample_docs(store: IndexStore, hbase, rng: random.Random, n: int) -> list[tuple[bytes, bytes, int]]:
    docs = cells(store, hbase)["docs"]
    return [(row, column, int.from_bytes(value, "big")) for row, column, value in rng.sample(docs, n)]


@pytest.mark.slow("the HFile job chain (parse, drawers, docs, fp2docs, load) in local MapReduce, beside a Thrift load")
def test_ids_already_stored_are_moved_kept_or_revived_as_bulk_load_does(make_index, hbase, tmp_path: Path) -> None:
    thrift, hfiles = make_index(regions=2), make_index(regions=2)
    rng = random.Random(11)
    before = [Document(f"id-{n}", rng.getrandbits(64)) for n in range(600)]
    for store in (thrift, hfiles):
        store.index_many(before)
        store.delete([f"id-{n}" for n in range(500, 600)])  # deleted before the load: the load brings them back
    moved = {f"id-{n}": rng.getrandbits(64) for n in range(0, 200)}
    kept = {d.doc_id: d.fingerprint for d in before[200:300]}
    revived = {f"id-{n}": rng.getrandbits(64) for n in range(500, 600)}
    new = {f"new-{n}": rng.getrandbits(64) for n in range(300)}
    source = tmp_path / "second.tsv"
    source.write_text("".join(f"{d}\t{fp:016x}\n" for part in (moved, kept, revived, new) for d, fp in part.items()))

    assert cli(thrift, hbase, "bulk-load", str(source)).returncode == 0
    loaded = cli(hfiles, hbase, "hfile-load", str(source), "--staging", str(tmp_path / "st"))
    assert loaded.returncode == 0, loaded.stderr
    assert "already stored 100, moved 200" in loaded.stdout
    assert_same_tables(thrift, hfiles, hbase)
    for doc, fp in moved.items():
        assert hfiles.get(doc) == fp
        assert [h.doc_id for h in hfiles.query(fp, max_distance=0)] == [doc]


@pytest.mark.slow("an hfile-load (its local MapReduce job chain), then gc over every table")
def test_new_ids_only_trusts_the_caller_and_gc_removes_what_a_broken_promise_leaves(
    make_index, hbase, tmp_path: Path
) -> None:
    store = make_index(regions=2)
    old, new = 0x1234_5678_9ABC_DEF0, 0x0FED_CBA9_8765_4321
    store.index_many([Document("promised-new", old)])
    source = tmp_path / "one.tsv"
    source.write_text(f"promised-new\t{new:016x}\n")
    loaded = cli(store, hbase, "hfile-load", str(source), "--new-ids-only", "--staging", str(tmp_path / "st"))
    assert loaded.returncode == 0, loaded.stderr
    assert store.get("promised-new") == new
    assert [h.doc_id for h in store.query(old, max_distance=0)] == ["promised-new"]  # the ghost the help warns of
    swept = cli(store, hbase, "gc", "--grace", "0")
    assert swept.returncode == 0, swept.stderr
    assert store.query(old, max_distance=0) == []
    assert [h.doc_id for h in store.query(new, max_distance=0)] == ["promised-new"]


@pytest.mark.slow("three hfile-load runs: generate only, load only, and one refused")
def test_generate_only_then_load_only_and_a_staging_dir_of_another_load_is_refused(
    make_index, hbase, tmp_path: Path
) -> None:
    store = make_index(regions=2)
    rng = random.Random(5)
    lines = {f"g-{n}": rng.getrandbits(64) for n in range(400)}
    source = tmp_path / "in.tsv"
    source.write_text("".join(f"{d}\t{fp:016x}\n" for d, fp in lines.items()))
    staging = tmp_path / "st"

    generated = cli(store, hbase, "hfile-load", str(source), "--staging", str(staging), "--generate-only")
    assert generated.returncode == 0, generated.stderr
    assert f"HFiles generated in {staging}" in generated.stdout
    assert all(store.get(d) is None for d in list(lines)[:20])  # nothing handed over yet

    other = tmp_path / "other.tsv"
    other.write_text("x\taaaaaaaaaaaaaaaa\n")
    refused = cli(store, hbase, "hfile-load", str(other), "--staging", str(staging), "--load-only")
    assert refused.returncode == 1 and "belongs to another load" in refused.stderr

    loaded = cli(store, hbase, "hfile-load", str(source), "--staging", str(staging), "--load-only")
    assert loaded.returncode == 0, loaded.stderr
    assert "loaded" in loaded.stdout and not staging.exists()
    assert {d: store.get(d) for d in lines} == lines


def test_a_relative_input_path_with_its_default_staging_loads(make_index, hbase, tmp_path: Path) -> None:
    """As a user types it, in the input's directory.  The job runs in the staging directory, so every path it is
    handed must lead where it did: a relative one once sent the job to ZooKeeper's default port."""
    store = make_index(regions=1)
    rng = random.Random(9)
    lines = {f"r-{n}": rng.getrandbits(64) for n in range(60)}
    (tmp_path / "in.tsv").write_text("".join(f"{d}\t{fp:016x}\n" for d, fp in lines.items()))
    result = subprocess.run(
        [CLI, "hfile-load", "in.tsv", "--quiet"],
        env=_env(store, hbase),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert {d: store.get(d) for d in lines} == lines
    assert not (tmp_path / "in.tsv.hfile-staging").exists()


def test_a_missing_schema_is_refused_before_any_job_runs(make_index, hbase, tmp_path: Path) -> None:
    store = make_index(regions=1)
    source = tmp_path / "in.tsv"
    source.write_text("a\taaaaaaaaaaaaaaaa\n")
    env = _env(store, hbase) | {"SIMHASH_TABLE_PREFIX": "no_such_index"}
    result = subprocess.run(
        [CLI, "hfile-load", str(source), "--staging", str(tmp_path / "st"), "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "schema apply" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "st" / "job.log").exists()


def test_dated_lines_keep_their_dates_and_no_earlier_write_or_delete_hides_them(
    make_index, hbase, tmp_path: Path
) -> None:
    """A back-filled history through HFiles: each dated document's cells carry its indexed_at, so max_age
    reads it as the service would; an id written or deleted after that date is stored just after its row's
    newest cell or delete marker (the job reads the docs rows raw), never hidden by them.  A line dated
    before the index's retention is a reject, as bulk-load makes it: stored, it would expire at once."""
    store = make_index(regions=2)
    client = connect(hbase.host, hbase.thrift2_port)
    try:
        set_retention(client, index_tables(store.config.table_prefix, retention_seconds=365 * 86400))
    finally:
        client.close()
    rng = random.Random(13)
    fps = {name: rng.getrandbits(64) for name in ("old", "recent", "undated", "rewritten", "deleted")}
    store.index_many([Document("rewritten", rng.getrandbits(64)), Document("deleted", fps["deleted"])])
    written, _ = cell_stamps(store, "rewritten", store.get("rewritten") or 0)
    deleting = int(time.time() * 1000)
    assert store.delete(["deleted"]) == 1
    month_ago_s, hour_ago_s = int(time.time()) - 30 * 86400, int(time.time()) - 3600
    source = tmp_path / "history.jsonl"
    source.write_text(
        f'{{"doc_id": "old", "simhash": "{fps["old"]:016x}", "indexed_at": {month_ago_s}}}\n'
        f'{{"doc_id": "recent", "simhash": "{fps["recent"]:016x}", "indexed_at": {hour_ago_s}}}\n'
        f'{{"doc_id": "undated", "simhash": "{fps["undated"]:016x}"}}\n'
        f'{{"doc_id": "rewritten", "simhash": "{fps["rewritten"]:016x}", "indexed_at": {month_ago_s}}}\n'
        f'{{"doc_id": "deleted", "simhash": "{fps["deleted"]:016x}", "indexed_at": {month_ago_s}}}\n'
        f'{{"doc_id": "expired", "simhash": "{rng.getrandbits(64):016x}", "indexed_at": {month_ago_s - 365 * 86400}}}\n'
    )
    started = int(time.time() * 1000)
    rejects = tmp_path / "history.rejects"
    loaded = cli(store, hbase, "hfile-load", str(source), "--staging", str(tmp_path / "st"), "--rejects", str(rejects))
    assert loaded.returncode == 3, loaded.stderr
    [(line, reason)] = [tuple(row.split("\t")[1:3]) for row in rejects.read_text().splitlines()]
    assert line == "6" and "older than the index's retention of 31536000 s" in reason, reason
    assert store.get("expired") is None

    assert cell_stamps(store, "old", fps["old"]) == (month_ago_s * 1000, month_ago_s * 1000)
    assert cell_stamps(store, "recent", fps["recent"]) == (hour_ago_s * 1000, hour_ago_s * 1000)
    undated, column = cell_stamps(store, "undated", fps["undated"])
    assert undated is not None and undated == column and started <= undated <= int(time.time() * 1000)
    assert written is not None and cell_stamps(store, "rewritten", fps["rewritten"]) == (written + 1, written + 1)
    record, column = cell_stamps(store, "deleted", fps["deleted"])
    assert record is not None and record == column and deleting < record <= undated
    assert {d: store.get(d) for d in fps} == fps  # every one visible: none hidden by what its row held

    week_ms = 7 * 86400_000
    for name, fp in fps.items():
        expected = [] if name == "old" else [name]
        assert [h.doc_id for h in store.query(fp, max_distance=0, max_age_ms=week_ms)] == expected, name
        assert [h.doc_id for h in store.query(fp, max_distance=0)] == [name]
