"""The launcher's promises on a real HBase: start is idempotent, status tells the truth, stop leaves nothing."""

from __future__ import annotations

import shutil
import time

import pytest

from simhash_deploy import LocalHBase, Ports


def _require_local(hbase) -> LocalHBase:
    if hbase.local is None:
        pytest.skip("the suite runs against an external HBase")
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


def test_second_instance_starts_and_stop_leaves_no_java_process(hbase, tmp_path) -> None:
    local = _require_local(hbase)
    other = LocalHBase(
        home=local.home, var_dir=tmp_path / "hbase", ports=Ports.free(), master_heap_mb=768, thrift_heap_mb=256
    )
    try:
        assert other.start() is True
        assert len(list(other.java_pids())) == 3
        # A pid file that names a dead process is stale: status drops it, start replaces it.
        thrift = other.processes()[1]
        pid_file = other.run_dir / "thrift.pid"
        assert other.stop() == ["thrift2", "thrift", "master"]
        pid_file.write_text("999999\n")
        assert other.status()["thrift"]["running"] is False
        assert not pid_file.exists()
        assert thrift.port == other.ports.thrift
    finally:
        other.stop()
    assert list(other.java_pids()) == []
    assert other.stop() == []
    shutil.rmtree(tmp_path / "hbase", ignore_errors=True)
