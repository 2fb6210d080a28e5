"""The write order (writes.py) and gc (index/gc.py) on real HBase: a writer killed between any two steps leaves
no wrong answer, and gc makes the index whole again; churn's orphans go, and the drawer table and the query's
candidates come back to what the live documents need."""

from __future__ import annotations

import random
import time

import pytest

from simhash_server.index.gc import collect, estimate_orphans, last_report
from simhash_server.index.keys import doc_column, drawer_keys, fingerprint_row
from simhash_server.index.model import Document
from simhash_server.index.nearby import Fp2docsRead
from simhash_server.index.scans import count_rows
from simhash_server.index.writes import Record, delete_steps, index_steps, new_entry


def _drawer_rows(store) -> int:
    return count_rows(store.thrift2, store.tables.drawers.name.encode(), None)


class _conn:
    def __init__(self, store) -> None:
        self.store = store

    def __enter__(self):
        import happybase

        config = self.store.config
        self.conn = happybase.Connection(config.host, config.thrift_port)
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.close()


def _drawers_present(store, fp: int) -> int:
    with _conn(store) as conn:
        return len(conn.table(store.tables.drawers.name).rows(drawer_keys(fp)))


def _consistent(store, doc: str, fps: list[int]) -> None:
    """The invariant: a query returns ``doc`` only at the fingerprint Get names; a Delete leaves no trace."""
    recorded = store.get(doc)
    for fp in fps:
        hits = [h for h in store.query(fp, max_distance=0) if h.doc_id == doc]
        assert not hits or recorded == fp, f"{doc} answered at {fp:016x}, its record says {recorded}"


SCENARIOS = ["new", "moved", "same fingerprint", "deleted"]


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_a_writer_killed_after_any_step_leaves_no_wrong_answer_and_gc_makes_it_whole(make_index, scenario) -> None:
    store = make_index(regions=2)
    rng = random.Random(scenario)
    a, b = rng.getrandbits(64), rng.getrandbits(64)
    sketch = b"\x02" + bytes(range(256)) * 2
    doc, key = f"doc-{scenario}", f"doc-{scenario}".encode()
    stored = {key: Record(a)}
    before = {"new": {}, "moved": stored, "same fingerprint": stored, "deleted": stored}[scenario]
    target = {"new": b, "moved": b, "same fingerprint": a}.get(scenario)
    steps = delete_steps(stored) if scenario == "deleted" else index_steps({key: target}, {key: sketch}, before)
    for killed_after in range(len(steps) + 1):
        name = f"{doc}-{killed_after}"
        nkey = name.encode()
        if before:  # the acknowledged state the interrupted call starts from
            store.index_many([Document(name, a, sketch)])
        renamed = [step._replace(**_renamed(step, key, nkey)) for step in steps]
        store.write_steps(renamed[:killed_after], None)  # the writer dies here
        _consistent(store, name, [a, b])
        report = collect(store, grace_seconds=0)
        _consistent(store, name, [a, b])
        recorded = store.get(name)
        if recorded is not None:  # whole: found at its fingerprint, with all 10 drawer rows
            assert [h.doc_id for h in store.query(recorded, max_distance=0) if h.doc_id == name] == [name]
            assert _drawers_present(store, recorded) == 10
        if killed_after == len(steps):  # the call completed: exactly what it asked for
            assert recorded == target
            assert report.incomplete_made_whole == 0
        store.delete([name])
        assert all(h.doc_id != name for fp in (a, b) for h in store.query(fp, max_distance=0))
        assert store.get(name) is None


def _renamed(step, key: bytes, new: bytes) -> dict:
    column, new_column = doc_column(key), doc_column(new)

    def row(r: bytes) -> bytes:
        return new if r == key else r

    return {
        "puts": [(row(r), {(new_column if c == column else c): v for c, v in data.items()}) for r, data in step.puts],
        "deletes": [(row(r), cols and [new_column if c == column else c for c in cols]) for r, cols in step.deletes],
    }


def test_churn_orphans_are_collected_and_the_index_returns_to_its_baseline(make_index) -> None:
    store = make_index(regions=4)
    rng = random.Random(19)
    docs = [f"churn-{n:04d}" for n in range(300)]
    live = {d: rng.getrandbits(64) for d in docs}
    store.index_many(list(live.items()))
    baseline_rows = _drawer_rows(store)
    assert baseline_rows == 10 * len(set(live.values()))
    probes = [fp ^ (1 << rng.randrange(64)) for fp in list(live.values())[:50]]
    baseline = [store.candidates(p) for p in probes]

    for _ in range(10):  # delete, re-index elsewhere
        store.delete(docs[:150])
        for d in docs:
            live[d] = rng.getrandbits(64)
        store.index_many(list(live.items()))
    # A fingerprint written twice holds two versions of its drawer cells: removing the newest must not
    # let the older one show through.
    twice = rng.getrandbits(64)
    store.index_many([("twice", twice)])
    store.index_many([("twice", twice)])
    store.index_many([("twice", rng.getrandbits(64))])
    store.delete(["twice"])
    churned_rows = _drawer_rows(store)
    assert churned_rows == 10 * (len(docs) + 10 * len(docs) + 2)  # every fingerprint ever written keeps its rows

    estimate = estimate_orphans(store, seed=1)
    assert 0.8 < estimate.orphan_rows / estimate.drawer_rows <= 1.0  # 10 of every 11 rows are orphans
    assert 0.7 * churned_rows < estimate.drawer_rows < 1.3 * churned_rows

    untouched = collect(store, grace_seconds=3600, dry_run=True)  # everything is younger than the grace
    assert untouched.orphan_drawer_rows_deleted == 0 and untouched.skipped_in_grace > 0
    dry = collect(store, grace_seconds=0, dry_run=True)
    assert dry.orphan_drawer_rows_deleted == churned_rows - 10 * len(docs)
    assert _drawers_present(store, twice) == 10
    assert _drawer_rows(store) == churned_rows  # a dry run changes nothing

    class Interrupted(Exception):
        pass

    def interrupt(phase: str, fraction: float | None, rows: int) -> None:
        if phase == "drawers" and rows >= 4_000:
            raise Interrupted

    with pytest.raises(Interrupted):
        collect(store, grace_seconds=0, progress=interrupt)
    assert 10 * len(docs) < _drawer_rows(store) < churned_rows  # part done
    report = collect(store, grace_seconds=0)  # resumes in the drawers pass
    assert report.phase == "drawers" and report.drawer_rows_scanned < churned_rows

    assert _drawer_rows(store) == 10 * len(set(live.values()))
    assert _drawers_present(store, twice) == 0
    assert estimate_orphans(store, seed=1).orphan_rows == 0
    current = set(live.values())
    # The probes' candidates: only live fingerprints remain, and every live one that shares a drawer.
    for probe, before in zip(probes, baseline, strict=True):
        now = store.candidates(probe)
        assert now <= current
        assert {c for c in before if c in current} <= now
    assert sum(len(store.candidates(p)) for p in probes) <= sum(len(b) for b in baseline) + len(probes)
    for d, fp in list(live.items())[:20]:
        assert [h.doc_id for h in store.query(fp, max_distance=0) if h.doc_id == d] == [d]
    assert last_report(store) is not None and last_report(store).finished is not None


def test_gc_deletes_ghost_columns_and_counts_the_top_fingerprints(make_index) -> None:
    store = make_index(regions=2)
    rng = random.Random(7)
    hot, warm = rng.getrandbits(64), rng.getrandbits(64)
    store.index_many([(f"hot-{n:03d}", hot) for n in range(120)] + [(f"warm-{n}", warm) for n in range(7)])
    ghost_fp = rng.getrandbits(64)
    with _conn(store) as conn:  # a column without its record: what a writer before writes.py's order could leave
        conn.table(store.tables.fp2docs.name).put(fingerprint_row(ghost_fp), {doc_column(b"ghost"): b""})
        for key in drawer_keys(ghost_fp):
            conn.table(store.tables.drawers.name).put(key, {b"d:": b""})
        conn.table(store.tables.fp2docs.name).put(fingerprint_row(hot), {doc_column(b"warm-1"): b""})  # moved
    assert {h.doc_id for h in store.query(ghost_fp, max_distance=0)} == {"ghost"}

    report = collect(store, grace_seconds=0)
    assert report.ghost_columns_deleted == 2
    assert report.top_fingerprints[:2] == [(f"{hot:016x}", 120), (f"{warm:016x}", 7)]
    assert store.query(ghost_fp, max_distance=0) == []
    assert _drawers_present(store, ghost_fp) == 0  # orphaned by the ghost's removal, then removed
    assert report.orphan_drawer_rows_deleted == 10
    assert _drawers_present(store, hot) == 10
    assert "warm-1" not in {h.doc_id for h in store.query(hot, max_distance=0)}
    assert store.get("warm-1") == warm


def test_stats_reports_orphans_and_the_last_gc_top_fingerprints(make_index) -> None:
    from simhash_client import SimHashClient
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    store = make_index(regions=2)
    rng = random.Random(11)
    hot = rng.getrandbits(64)
    store.index_many([(f"s-{n}", hot) for n in range(30)] + [(f"t-{n}", rng.getrandbits(64)) for n in range(40)])
    store.delete([f"t-{n}" for n in range(20)])  # 200 orphan drawer rows of 410 (41 fingerprints)
    server = SimHashServer(ServerConfig(address="127.0.0.1:0", metrics_address=None, store=store.config))
    server.start()
    try:
        with SimHashClient(f"127.0.0.1:{server.port}") as client:
            before = client.stats()
        assert before.last_gc is None and before.top_fingerprints == ()
        counted = (before.drawer_rows_estimate, before.orphan_drawer_rows_estimate, before.orphan_sample)
        assert counted == (410, 200, 410)  # a table this small is counted, not sampled
        collect(store, grace_seconds=0)
        server.stop(grace=1)
        server = SimHashServer(ServerConfig(address="127.0.0.1:0", metrics_address=None, store=store.config))
        server.start()  # a fresh Stats cache
        with SimHashClient(f"127.0.0.1:{server.port}") as client:
            after = client.stats()
    finally:
        server.stop(grace=1)
    assert after.documents == 50
    assert after.top_fingerprints[0] == (hot, 30) and len(after.top_fingerprints) == 10
    assert after.last_gc is not None and after.orphan_drawer_rows_estimate == 0
    assert after.drawer_rows_estimate > 0


def test_a_fingerprint_shared_by_thousands_costs_a_query_only_its_limit(make_index, monkeypatch) -> None:
    """Hits rank by distance, then id, and HBase keeps a row's columns sorted: a query of limit n reads the
    first n documents of each nearby fingerprint, and answers exactly as if it had read them all."""
    store = make_index(regions=2)
    rng = random.Random(5)
    hot = rng.getrandbits(64)
    near = hot ^ 0b101  # distance 2
    ids = [f"h{rng.getrandbits(40):010x}" for _ in range(5_000)]
    for n in range(0, len(ids), 1_000):
        store.index_many([(d, hot) for d in ids[n : n + 1_000]])
    store.index_many([("near-b", near), ("near-a", near)])
    read: list[int] = []  # documents each fp2docs read returned
    documents_of = Fp2docsRead.documents

    def counted(self, reply):
        found = documents_of(self, reply)
        read.append(sum(len(docs) for docs in found.values()))
        return found

    monkeypatch.setattr(Fp2docsRead, "documents", counted)
    hits = store.query(hot, limit=10)
    assert [h.doc_id for h in hits] == sorted(ids)[:10]
    assert read == [12]  # 10 of the hot fingerprint (not 5,000) and the 2 of the near one
    hits = store.query(near, limit=3)
    assert [(h.doc_id, h.distance) for h in hits] == [("near-a", 0), ("near-b", 0), (sorted(ids)[0], 2)]
    from simhash_server.fingerprint import fingerprint

    sketch = fingerprint("a verified query of the hot fingerprint", sketch=True).sketch
    verified = store.query_verified(hot, sketch, 0.9, max_distance=3, limit=5)
    assert [h.doc_id for h in verified.hits] == sorted(ids)[:5]  # unverifiable (no sketches): kept, by id
    assert read[-1] == 20 + 2  # 4 per hit asked for, of the hot fingerprint, and the near one's 2
    every = store.query(hot, limit=None)
    assert len(every) == 5_002 and [h.doc_id for h in every[:10]] == sorted(ids)[:10] and read[-1] == 5_002


def test_the_gc_command_reports_json_and_refuses_an_unreachable_hbase_cleanly(make_index) -> None:
    import json
    import subprocess
    import sys
    from pathlib import Path

    store = make_index(regions=2)
    store.index_many([("cli-1", 1), ("cli-2", 2)])
    store.delete(["cli-2"])
    cli = str(Path(sys.executable).with_name("simhash-index"))
    config = store.config
    options = ["--thrift-port", str(config.thrift_port), "--thrift2-port", str(config.thrift2_port)]
    options += ["--table-prefix", config.table_prefix, "--grace", "0"]
    done = subprocess.run([cli, "gc", *options, "--compact"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["orphan_drawer_rows_deleted"] == 10 and report["finished"] is not None
    assert store.get("cli-1") == 1
    # --compact names the shell's major compactions (HBase 2.6's Thrift gateway would run minor ones)
    tables = store.tables
    wanted = [f"major_compact '{t.name}'" for t in (tables.drawers, tables.fp2docs, tables.docs)]
    assert [line.strip() for line in done.stderr.splitlines() if "major_compact '" in line] == wanted

    from simhash_deploy import Ports

    nowhere = ["--thrift-port", str(Ports.free().thrift), "--thrift2-port", str(Ports.free().thrift2)]
    failed = subprocess.run([cli, "gc", *nowhere, "--hbase-timeout-ms", "500"], capture_output=True, text=True)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    last = failed.stderr.strip().splitlines()[-1]
    assert last.startswith("Error: thrift2: HBase did not answer") and last.endswith("(run gc again to resume)")


def test_gc_beside_live_writers_removes_only_the_old_debris(make_index) -> None:
    """Debris planted an hour old (orphan drawer rows, a ghost column, an incomplete document) is fixed while
    two writers index, move and delete documents throughout the run; every document a writer left stored
    is whole afterwards, with nothing of theirs touched (their cells are younger than the grace)."""
    import threading

    from simhash_schema import hbase2

    store = make_index(regions=4)
    rng = random.Random(31)
    t, hour_ago = hbase2(), int((time.time() - 3600) * 1000)
    orphans = [rng.getrandbits(64) for _ in range(300)]
    ghost_fp, lost_fp = rng.getrandbits(64), rng.getrandbits(64)

    def put(table, row: bytes, qualifier: bytes, value: bytes) -> None:
        cell = t.TColumnValue(family=b"d", qualifier=qualifier, value=value, timestamp=hour_ago)
        store.thrift2.run(lambda c: c.put(table.name.encode(), t.TPut(row=row, columnValues=[cell])))

    for fp in [*orphans, ghost_fp]:
        for key in drawer_keys(fp):
            put(store.tables.drawers, key, b"", b"")
    put(store.tables.fp2docs, fingerprint_row(ghost_fp), b"ghost", b"")  # no record
    put(store.tables.docs, b"incomplete", b"fp", fingerprint_row(lost_fp))  # no column, no drawers

    stored: dict[str, int | None] = {}
    stop = threading.Event()
    failures: list[BaseException] = []

    def writer(n: int) -> None:
        wrng = random.Random(n)
        try:
            while not stop.is_set():
                doc = f"live-{n}-{wrng.randrange(50)}"
                if wrng.random() < 0.2:
                    store.delete([doc])
                    stored[doc] = None
                else:
                    fp = wrng.getrandbits(64)
                    store.index_many([(doc, fp)])
                    stored[doc] = fp
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    writers = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
    for thread in writers:
        thread.start()
    try:
        report = collect(store)  # the default grace: 600 s
    finally:
        stop.set()
        for thread in writers:
            thread.join(60)
    assert failures == []
    assert report.orphan_drawer_rows_deleted == 10 * (len(orphans) + 1)  # the ghost's too, once it was gone
    assert report.ghost_columns_deleted == 1 and report.incomplete_made_whole == 1
    assert all(_drawers_present(store, fp) == 0 for fp in [*orphans[:20], ghost_fp])
    assert [h.doc_id for h in store.query(lost_fp, max_distance=0)] == ["incomplete"]
    for doc, fp in stored.items():
        assert store.get(doc) == fp
        if fp is not None:
            assert doc in {h.doc_id for h in store.query(fp, max_distance=0)} and _drawers_present(store, fp) == 10


@pytest.mark.slow("the Thrift2 gateway, a JVM, restarted in the middle of gc's scan")
def test_gc_goes_on_when_the_thrift2_gateway_restarts_mid_scan(make_index, hbase) -> None:
    """The drawer scan's scanner lives in the gateway: restarted mid-pass, gc opens the scan again from the
    last finished row and ends with the same result, in the same run."""
    if hbase.local is None:
        pytest.skip("restarts a gateway of the local launcher")
    store = make_index(regions=2)
    rng = random.Random(41)
    live = {f"r-{n}": rng.getrandbits(64) for n in range(250)}
    store.index_many(list(live.items()))
    store.index_many([(d, rng.getrandbits(64)) for d in live])  # 2,500 orphan drawer rows
    restarted = []

    def restart_once(phase: str, fraction: float | None, rows: int) -> None:
        if phase == "drawers" and not restarted:
            hbase.local.stop_process("thrift2")
            hbase.local.start()
            restarted.append(rows)

    report = collect(store, grace_seconds=0, progress=restart_once)
    assert restarted, "the drawers pass never reported progress"
    assert report.orphan_drawer_rows_deleted == 2_500
    assert _drawer_rows(store) == 2_500  # the 250 live fingerprints' rows


def test_gc_leaves_a_dated_document_in_the_middle_of_its_write_alone(make_index) -> None:
    """A document dated a month back has cells a month old the moment they are written; its writer's entry
    says when it wrote them.  Caught between its docs step and its fp2docs step, it is not "incomplete" to
    gc, while one whose writer wrote a month ago and died is made whole."""
    store = make_index(regions=2)
    rng = random.Random(41)
    now, month_ago = int(time.time() * 1000), int((time.time() - 30 * 86400) * 1000)
    fps = {"in-flight": rng.getrandbits(64), "abandoned": rng.getrandbits(64)}
    tails = {}
    for name, written in (("in-flight", now), ("abandoned", month_ago)):
        key = name.encode()
        steps = index_steps({key: fps[name]}, {key: b""}, {}, new_entry(written), written)
        # As IndexStore writes them: the drawer rows when written, the document's cells at its date; the
        # writer stops before its fp2docs step.
        store.write_plan([(written if s.table == "drawers" else month_ago, s) for s in steps[:-1]], None)
        tails[name] = steps[-1:]
    report = collect(store)  # the default grace: 600 s
    assert report.incomplete_made_whole == 1 and report.skipped_in_grace >= 1
    assert [h.doc_id for h in store.query(fps["abandoned"], max_distance=0)] == ["abandoned"]
    assert store.query(fps["in-flight"], max_distance=0) == []
    store.write_steps(tails["in-flight"], None, month_ago)  # the writer goes on
    assert [h.doc_id for h in store.query(fps["in-flight"], max_distance=0)] == ["in-flight"]
    assert store.query(fps["in-flight"], max_distance=0, max_age_ms=86400_000) == []  # still dated a month back
