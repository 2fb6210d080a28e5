"""Nothing acknowledged is lost when HBase's region server dies: SIGKILL of the HBase JVM mid-stream of Index
calls, a restart, and every acknowledged document is whole (its 10 drawer rows and both mappings); the server
answers again without a restart of its own."""

from __future__ import annotations

import os
import random
import shutil
import signal
import threading
import time

import happybase
import pytest

from simhash_client import SimHashClient, SimHashError
from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.keys import doc_column, drawer_keys, fingerprint_row
from simhash_server.index.store import StoreConfig
from simhash_server.rpc.server import ServerConfig, SimHashServer

WRITERS, BEFORE_KILL = 4, 400


@pytest.fixture
def own_hbase(hbase, tmp_path):
    """An HBase of this test's own: the test kills it."""
    if hbase.local is None:
        pytest.skip("kills and restarts an HBase of the local launcher")
    local = LocalHBase(
        home=hbase.local.home, var_dir=tmp_path / "hbase", ports=Ports.free(), master_heap_mb=768, thrift_heap_mb=256
    )
    try:
        local.start()
        yield local
    finally:
        local.stop()
        shutil.rmtree(tmp_path / "hbase", ignore_errors=True)


@pytest.mark.slow("an HBase of its own, killed with SIGKILL under writes and started again to replay its WAL")
def test_every_acknowledged_index_survives_a_sigkill_of_hbase(own_hbase) -> None:
    local = own_hbase
    tables = index_tables("crash")
    # Its first calls wait on the regions of an HBase just started; on a busy machine that took over 10 s.
    client = connect("127.0.0.1", local.ports.thrift2, timeout_ms=60_000)
    try:
        apply_schema(client, tables)
    finally:
        client.close()
    store = StoreConfig(
        host="127.0.0.1", thrift_port=local.ports.thrift, thrift2_port=local.ports.thrift2, table_prefix="crash"
    )
    server = SimHashServer(ServerConfig(address="127.0.0.1:0", metrics_address=None, store=store))
    server.start()
    acknowledged: dict[str, int] = {}
    lock = threading.Lock()
    enough = threading.Event()

    def writer(n: int) -> None:
        rng = random.Random(n)
        with SimHashClient(f"127.0.0.1:{server.port}", timeout=20, retries=0) as c:
            for i in range(100_000):
                doc_id, fp = f"w{n}-{i}", rng.getrandbits(64)
                try:
                    c.index(doc_id, simhash=fp)
                except SimHashError:
                    return  # HBase is gone: this call was not acknowledged, and the stream ends
                with lock:
                    acknowledged[doc_id] = fp
                    if len(acknowledged) >= BEFORE_KILL:
                        enough.set()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    try:
        for thread in threads:
            thread.start()
        assert enough.wait(300), "the writers never got going"
        # ZooKeeper, the master and the region server, mid-stream, with no chance to flush anything
        os.kill(local.status()["master"]["pid"], signal.SIGKILL)
        for thread in threads:
            thread.join(300)
        assert not any(thread.is_alive() for thread in threads), "a writer never heard that HBase died"
        killed_at = len(acknowledged)
        began = time.monotonic()
        local.start()  # the WAL of the dead region server is split and replayed
        recovery = time.monotonic() - began

        with SimHashClient(f"127.0.0.1:{server.port}", timeout=60, retries=10) as c:
            some = random.Random(0).sample(sorted(acknowledged), 20)
            assert {d: c.get(d) for d in some} == {d: acknowledged[d] for d in some}  # no server restart

        conn = happybase.Connection("127.0.0.1", local.ports.thrift, timeout=60_000)
        try:
            docs = dict(conn.table(tables.docs.name).rows([d.encode() for d in acknowledged]))
            fp_rows = dict(conn.table(tables.fp2docs.name).rows([fingerprint_row(fp) for fp in acknowledged.values()]))
            keys = [key for fp in acknowledged.values() for key in drawer_keys(fp)]
            drawers = {key for key, _ in conn.table(tables.drawers.name).rows(keys)}
        finally:
            conn.close()
        lost = [d for d, fp in acknowledged.items() if docs.get(d.encode(), {}).get(b"d:fp") != fp.to_bytes(8, "big")]
        unmapped = [
            d for d, fp in acknowledged.items() if doc_column(d.encode()) not in fp_rows.get(fingerprint_row(fp), {})
        ]
        missing_drawers = [key for key in keys if key not in drawers]
        print(f"{killed_at} acknowledged before the kill; HBase back in {recovery:.0f} s")
        assert (lost, unmapped, missing_drawers) == ([], [], []), f"of {len(acknowledged)} acknowledged"
    finally:
        server.stop(grace=1)


@pytest.mark.slow("server processes killed mid-batch and started again, then gc over every table")
def test_a_server_killed_mid_index_batch_leaves_no_wrong_answer_and_gc_makes_every_document_whole(
    make_index, spawn_server
) -> None:
    """SIGKILL of a `simhash-index serve` process while 4 callers re-index documents in batches (so documents
    move between fingerprints mid-write).  Wherever the kill lands: each document's record is its last
    acknowledged fingerprint or the one in flight, no query answers it at another, and after gc each
    document with a record is whole."""
    from simhash_server.index.gc import collect

    store = make_index(regions=4)
    proc, target = spawn_server(store.config.table_prefix, "--metrics-address", "")
    ids = [f"m{n:04d}" for n in range(400)]
    acknowledged: dict[str, int] = {}
    attempted: dict[str, set[int]] = {d: set() for d in ids}
    lock = threading.Lock()
    enough = threading.Event()
    batches = [0]

    def writer(n: int) -> None:
        rng = random.Random(n)
        mine = ids[n::WRITERS]
        with SimHashClient(target, timeout=20, retries=0) as c:
            while True:
                batch = {d: rng.getrandbits(64) for d in rng.sample(mine, 50)}
                with lock:
                    for d, fp in batch.items():
                        attempted[d].add(fp)
                try:
                    c.index_batch([{"doc_id": d, "simhash": fp} for d, fp in batch.items()])
                except SimHashError:
                    return  # the server is gone: this batch was not acknowledged
                with lock:
                    acknowledged.update(batch)
                    batches[0] += 1
                    if batches[0] >= 40:
                        enough.set()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(WRITERS)]
    for thread in threads:
        thread.start()
    assert enough.wait(300), "the writers never got going"
    proc.kill()
    for thread in threads:
        thread.join(120)
    assert not any(thread.is_alive() for thread in threads)

    def check() -> dict[str, int | None]:
        records = {d: store.get(d) for d in ids}
        for d in ids:
            allowed = attempted[d] | ({acknowledged[d]} if d in acknowledged else {None})
            assert records[d] in allowed, f"{d}: record {records[d]} was never written"
            assert d not in acknowledged or records[d] is not None, f"{d}: acknowledged, now without a record"
        for fp in set().union(*attempted.values()):
            for hit in store.query(fp, max_distance=0):
                assert records[hit.doc_id] == fp, (
                    f"{hit.doc_id} answered at {fp:016x}, recorded at {records[hit.doc_id]}"
                )
        return records

    check()
    collect(store, grace_seconds=0)
    records = check()
    for d, fp in records.items():
        if fp is not None:
            assert d in {h.doc_id for h in store.query(fp, max_distance=0)}, f"{d} is not whole after gc"
