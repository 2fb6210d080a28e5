"""The launcher's promises on a real HBase: start is idempotent, status tells the truth, flush and compaction
keep every row.  A second instance started and stopped, leaving no process:
tests/integration/test_installed_package.py."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

import pytest

from simhash_deploy import LocalHBase
from simhash_deploy.site import COMPACTION_BOUNDS


def _require_local(hbase) -> LocalHBase:
    if hbase.local is None:
        pytest.skip("the suite's HBase is not the launcher's (an external one, or the container)")
    return hbase.local


def test_start_on_running_hbase_is_a_no_op(hbase) -> None:
    local = _require_local(hbase)
    pids = {name: entry["pid"] for name, entry in local.status().items()}
    began = time.monotonic()
    assert local.start() is False
    assert time.monotonic() - began < 30
    assert {name: entry["pid"] for name, entry in local.status().items()} == pids


def test_status_reports_every_process_listening(hbase) -> None:
    local = _require_local(hbase)
    report = local.status()
    assert set(report) == {"master", "thrift", "thrift2"}
    assert all(entry["running"] and entry["listening"] for entry in report.values())
    assert report["thrift"]["port"] == hbase.thrift_port


def test_every_jvm_runs_the_default_collector_and_logs_it(hbase) -> None:
    local = _require_local(hbase)
    for name in ("master", "thrift", "thrift2"):
        # Written as the JVM starts; pauses follow in the same file (their format: tests/unit, bench-live).
        assert "] Using G1\n" in local.gc_log(name).read_text(), name


def _store_files(local: LocalHBase, table: str) -> dict[str, int]:
    base = local.var_dir / "data" / "data" / "default" / table
    return {p.name: p.stat().st_size for p in base.glob("*/f/*") if p.is_file()}


@contextlib.contextmanager
def _scratch_table(hbase, prefix: str) -> Iterator[str]:
    name = f"{prefix}_{time.time_ns()}"
    conn = hbase.connection()
    conn.create_table(name, {"f": {}})
    conn.close()
    try:
        yield name
    finally:
        conn = hbase.connection()
        conn.delete_table(name, disable=True)
        conn.close()


@pytest.mark.slow("two flushes and a major compaction, each waited for through a JVM the launcher starts")
def test_flush_with_compact_merges_store_files_and_keeps_every_row(hbase) -> None:
    local = _require_local(hbase)
    with _scratch_table(hbase, "compact") as name:
        for start in (0, 100):  # two flushes: two store files
            # a connection per batch: a flush can outlast the tests' short Thrift idle timeout
            conn = hbase.connection()
            with conn.table(name).batch() as batch:
                for i in range(start, start + 100):
                    batch.put(f"row{i:03d}".encode(), {b"f:v": str(i).encode()})
            conn.close()
            local.flush([name])
        flushed = _store_files(local, name)
        assert len(flushed) == 2

        local.flush([name], compact=True)

        # One store file left: the compaction's output (flush waits until HBase archived the flushed ones).
        ((file, merged),) = _store_files(local, name).items()
        assert file not in flushed and merged > max(flushed.values())
        conn = hbase.connection()
        assert {int(v[b"f:v"]) for _, v in conn.table(name).scan()} == set(range(200))
        # The compaction ran without the launcher's throughput limit, which the region server took back after.
        log = (local.log_dir / "master.log").read_text().splitlines()
        bounds = [line.split("higher bound: ")[1].split(",")[0] for line in log if "throughput configurations" in line]
        assert bounds[-2:] == ["unlimited", f"{local.compaction_mib_per_s:.2f} MB/second"]


def _log_lines(local: LocalHBase) -> list[str]:
    return (local.log_dir / "master.log").read_text(errors="replace").splitlines()


@pytest.mark.slow("compactions throttled to 1 MiB/s so that flush asks while one runs: 3 store files of 8-24 MiB")
def test_flush_with_compact_asks_again_a_region_that_was_compacting(hbase) -> None:
    # HBase drops a major compaction request for a store that is compacting (a major compaction takes all its
    # files); flush(compact=True) once waited forever for such a region (bench-scale at 10^8, 2026-11-26).
    local = _require_local(hbase)
    with _scratch_table(hbase, "busy") as name:
        base = local.var_dir / "data" / "data" / "default" / name
        (region,) = [p.name for p in base.iterdir() if len(p.name) == 32]
        # 1 MiB/s for compactions that start now, the minor one below kept to it to its end.  flush() asks for
        # the major one after a jshell starts, as this reload does: the minor lasts 4 such starts (24-72 s), so
        # that a machine slow to start a JVM still asks while it runs.
        began = time.monotonic()
        local.reload_config(dict.fromkeys(COMPACTION_BOUNDS, str(1 << 20)))
        per_file = min(96, max(32, round(16 / 3 * (time.monotonic() - began))))  # 256 KiB rows: 4 a second, 3 files
        try:
            rows = {}
            for batch_no in range(4):
                conn = hbase.connection()
                with conn.table(name).batch(batch_size=16) as batch:
                    # The fourth, a few rows: the major compaction it leads to is throttled too.
                    for i in range(per_file if batch_no < 3 else 4):
                        row, value = f"b{batch_no}-{i:04d}".encode(), os.urandom(256 << 10)
                        batch.put(row, {b"f:v": value})
                        rows[row] = value
                conn.close()
                if batch_no < 3:  # three store files; the fourth batch waits in the memstore
                    local.flush([name])
            conn = hbase.connection()
            conn.compact_table(name)  # a minor compaction of the three (Thrift's compact)
            conn.close()
            started = f"Starting compaction of {region}/f "
            deadline = time.monotonic() + 120
            while not any(started in line for line in _log_lines(local)):
                assert time.monotonic() < deadline, "the minor compaction asked for did not start"
                time.sleep(0.2)

            local.flush([name], compact=True, timeout=240)  # flushes the fourth file, then asks for a major one

            assert len(_store_files(local, name)) == 1
            conn = hbase.connection()
            assert dict(conn.table(name).scan()) == {row: {b"f:v": value} for row, value in rows.items()}
        finally:
            local.reload_config()
        log = _log_lines(local)
        minor_began = next(i for i, line in enumerate(log) if started in line)
        asked = next(
            i for i in range(minor_began, len(log)) if "RSRpcServices: Compacting " in log[i] and f"{region}." in log[i]
        )
        minor_ended = next(
            i for i, line in enumerate(log) if f"Completed compaction of 3 (all) file(s) in {region}/" in line
        )
        if asked > minor_ended:  # only a machine whose flush took 4 times as long as the reload gets here
            pytest.skip(
                "flush's major compaction request came after the minor compaction ended: the case was not reached"
            )
