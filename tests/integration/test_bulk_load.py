"""`simhash-index bulk-load` on the real HBase: rejects, version refusal, texts, --no-wal, kill and resume."""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simhash_schema import IndexMeta, connect, ensure_meta
from simhash_server.fingerprint import V1, V2, V3, fingerprint
from simhash_server.index.keys import LAYOUT, drawer_keys
from simhash_server.index.store import IndexStore

CLI = str(Path(sys.executable).with_name("simhash-index"))


def bulk_load(store: IndexStore, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "bulk-load", *args], env=_env(store), capture_output=True, text=True, timeout=300)


def _env(store: IndexStore) -> dict[str, str]:
    return {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(store.config.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(store.config.thrift2_port),
        "SIMHASH_TABLE_PREFIX": store.config.table_prefix,
    }


def stored(store: IndexStore, hbase) -> tuple[dict[str, int], set[tuple[int, str]], set[bytes]]:
    """Everything in the index's three tables: docs, fp2docs pairs, drawer keys."""
    conn = hbase.connection(120_000)
    try:
        docs = {
            k.decode(): int.from_bytes(v[b"d:fp"], "big")
            for k, v in conn.table(store.tables.docs.name).scan(batch_size=5000)
        }
        pairs = {
            (int.from_bytes(k, "big"), column[2:].decode())
            for k, v in conn.table(store.tables.fp2docs.name).scan(batch_size=5000)
            for column in v
        }
        keys = {k for k, _ in conn.table(store.tables.drawers.name).scan(filter=b"KeyOnlyFilter()", batch_size=5000)}
    finally:
        conn.close()
    return docs, pairs, keys


def assert_index_holds(store: IndexStore, hbase, lines: list[tuple[str, int]]) -> None:
    """The index equals the input exactly: the last line of each id wins, and no row is extra or missing."""
    final = dict(lines)
    docs, pairs, keys = stored(store, hbase)
    assert docs == final
    assert pairs == {(fp, doc) for doc, fp in final.items()}
    assert keys == {key for fp in {fp for _, fp in lines} for key in drawer_keys(fp)}


def hex_lines(n: int, seed: int, prefix: str = "d") -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"{prefix}{i}", rng.getrandbits(64) | (0xA << 60)) for i in range(n)]  # an 'a': hex beyond doubt


def write_tsv(path: Path, lines: list[tuple[str, int]]) -> None:
    path.write_text("".join(f"{doc}\t{fp:016x}\n" for doc, fp in lines))


def test_rejects_go_to_the_reject_file_and_the_exit_status_says_so(make_index, hbase, tmp_path: Path) -> None:
    store = make_index(regions=2)
    good = hex_lines(50, seed=1)
    path = tmp_path / "in.tsv"
    rows = [f"{d}\t{fp:016x}" for d, fp in good]
    rows[10:10] = ["no-tab-here", "x\tnot-hex", "\taaaaaaaaaaaaaaaa"]
    path.write_text("\n".join(rows) + "\n")
    result = bulk_load(store, str(path))
    assert result.returncode == 3, result.stderr
    assert "lines read 53; documents loaded 50; rejected 3" in result.stdout
    assert "3 lines rejected" in result.stderr
    rejects = (tmp_path / "in.tsv.rejects.tsv").read_text().splitlines()
    assert [r.split("\t")[1:3] for r in rejects] == [
        ["11", "expected 2 or 3 tab-separated columns (doc_id, simhash[, indexed_at]), got 1"],
        ["12", "simhash 'not-hex' is not 16 hex digits"],
        ["13", "doc_id is empty"],
    ]
    assert all(r.startswith(f"{path}\t") for r in rejects)
    assert_index_holds(store, hbase, good)


def test_max_rejects_stops_and_a_resume_on_gzip_input_writes_each_reject_once(
    make_index, hbase, tmp_path: Path
) -> None:
    store = make_index(regions=2)
    good = hex_lines(3000, seed=2)
    rows = [f"{d}\t{fp:016x}" for d, fp in good]
    for at in (2900, 2000, 1500, 100):  # four bad lines
        rows.insert(at, f"bad{at}")
    path = tmp_path / "in.tsv.gz"
    path.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    args = [str(path), "--batch-size", "100", "--workers", "2"]

    stopped = bulk_load(store, *args, "--max-rejects", "2")
    assert stopped.returncode == 1
    assert "over --max-rejects 2" in stopped.stderr and "--resume" in stopped.stderr
    again = bulk_load(store, *args)
    assert again.returncode == 1 and "pass --resume to continue it" in again.stderr

    resumed = bulk_load(store, *args, "--resume")
    assert resumed.returncode == 3, resumed.stderr
    assert "rejected 4" in resumed.stdout and "(resumed at line" in resumed.stdout
    rejects = (tmp_path / "in.tsv.gz.rejects.tsv").read_text().splitlines()
    assert [int(r.split("\t")[1]) for r in rejects] == [101, 1502, 2003, 2904]
    assert_index_holds(store, hbase, good)


def test_another_fingerprint_version_is_refused(make_index, hbase, tmp_path: Path) -> None:
    from simhash_schema import apply_schema, index_tables

    tables = index_tables(f"tv{random.getrandbits(32):x}", drawer_regions=1)
    client = connect(hbase.host, hbase.thrift2_port)
    try:
        apply_schema(client, tables)
        ensure_meta(client, tables.meta, IndexMeta("simhash64/old/r0", LAYOUT))
    finally:
        client.close()
    store = make_index(regions=1)
    path = tmp_path / "in.tsv"
    write_tsv(path, hex_lines(3, seed=3))
    env = {**_env(store), "SIMHASH_TABLE_PREFIX": tables.meta.name.removesuffix("_meta")}
    result = subprocess.run([CLI, "bulk-load", str(path)], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert "refusing to mix them" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("version", [V3, V2, V1], ids=["v3", "v2", "v1"])
def test_texts_are_fingerprinted_with_the_index_recipe(make_index, hbase, tmp_path: Path, version: str) -> None:
    store = make_index(regions=1, fingerprint_version=version)
    texts = {f"t{i}": f"第{i}篇文章：近似重复检测用 SimHash 指纹，海量文本去重。" * (i + 3) for i in range(40)}
    path = tmp_path / "texts.jsonl"
    path.write_text("".join(json.dumps({"doc_id": d, "text": t}, ensure_ascii=False) + "\n" for d, t in texts.items()))
    result = bulk_load(store, str(path), "--workers", "2", "--batch-size", "7")
    assert result.returncode == 0, result.stderr
    assert_index_holds(store, hbase, [(d, fingerprint(t, version).value) for d, t in texts.items()])
    hits = store.query(fingerprint(texts["t5"], version).value, 0)
    assert "t5" in {h.doc_id for h in hits}
    # Texts bring their verification sketches, of the index's format; fingerprints cannot.
    t5 = fingerprint(texts["t5"], version, sketch=True)
    verified = store.query_verified(t5.value, t5.sketch, 1.0, max_distance=0).hits
    assert ("t5", 1.0) in {(h.doc_id, h.similarity) for h in verified}
    path.write_text(json.dumps({"doc_id": "t5", "simhash": t5.hex}) + "\n")
    assert bulk_load(store, str(path), "--workers", "1").returncode == 0
    assert [(h.doc_id, h.similarity) for h in store.query_verified(t5.value, t5.sketch, 1.0, 0).hits] == [("t5", None)]


def test_no_wal_ends_with_a_flush_of_the_local_hbase_only(make_index, hbase, tmp_path: Path) -> None:
    if hbase.local is None:
        pytest.skip("--no-wal flushes the project's local HBase")
    store = make_index(regions=2)
    lines = hex_lines(2000, seed=4)
    path = tmp_path / "in.tsv"
    write_tsv(path, lines)
    refused = bulk_load(store, str(path), "--no-wal", "--hbase-var-dir", str(tmp_path / "no-hbase-here"))
    assert refused.returncode == 1 and "Load with the WAL on" in refused.stderr
    result = bulk_load(store, str(path), "--no-wal", "--hbase-var-dir", str(hbase.local.var_dir))
    assert result.returncode == 0, result.stderr
    assert_index_holds(store, hbase, lines)


@pytest.mark.slow("40,000 lines loaded by a loader killed three times at random points and resumed")
def test_killed_loads_resume_to_exactly_the_input(make_index, hbase, tmp_path: Path) -> None:
    """SIGKILL the loader and its workers at random points of the input, three times; resume; nothing lost, nothing
    extra."""
    store = make_index(regions=4)
    first = hex_lines(36_000, seed=5)
    moved = hex_lines(4_000, seed=6)  # ids d0..d3999 again, with new fingerprints: the later line wins
    lines = first[:20_000] + moved + first[20_000:]
    path = tmp_path / "in.tsv"
    write_tsv(path, lines)
    checkpoint = tmp_path / "in.tsv.checkpoint"
    args = [CLI, "bulk-load", str(path), "--workers", "2", "--batch-size", "400", "--resume", "--quiet"]
    # Each run is killed once its checkpoint has passed a random line: a point in the input, not a moment, so
    # the kill lands mid-load however fast this machine writes (16,000 lines stay after the last target).
    targets = sorted(random.Random().sample(range(1_000, 24_000, 500), 3))
    seen_line = 0
    for target in targets:
        proc = subprocess.Popen(args, env=_env(store), start_new_session=True, stdout=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            line = json.loads(checkpoint.read_text())["line"] if checkpoint.exists() else 0
            if line >= max(target, seen_line + 1) or proc.poll() is not None:  # past the target, and moved
                break
            time.sleep(0.02)  # a poll interval, not a wait for an outcome: the loop ends on the checkpoint
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        state = json.loads(checkpoint.read_text())
        assert not state["complete"], "the load finished before it was killed: make the input larger"
        assert state["line"] > seen_line or state["source"] > 0
        seen_line = state["line"]
    final = subprocess.run(args, env=_env(store), capture_output=True, text=True, timeout=300)
    assert final.returncode == 0, final.stderr
    assert f"lines read {len(lines):,}" in final.stdout
    assert json.loads(checkpoint.read_text())["complete"]
    assert_index_holds(store, hbase, lines)
