"""Test wiring: the `unit`/`integration` marks by folder, and one real HBase for the whole session.

The HBase is the one named by HBASE_THRIFT_HOST/HBASE_THRIFT_PORT (and HBASE_THRIFT2_PORT) when set;
otherwise the project's launcher starts a private one in var/test-hbase on free ports, so `make test`
runs beside `make run`, and stops it at the end.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings
from slow_marks import LIMIT_SECONDS, reason_of, require_reasons, unexplained

ROOT = Path(__file__).resolve().parents[1]
# Hypothesis fails an example slower than 200 ms by default: on a shared, busy machine that fails a correct
# test now and then.  No test here depends on elapsed time, so neither do the property tests.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
THRIFT_IDLE_TIMEOUT_MS = 6_000


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _REASONS.update({item.nodeid: reason_of(item) for item in items})
    require_reasons(_REASONS)
    for item in items:
        kind = Path(str(item.fspath)).relative_to(ROOT / "tests").parts[0]
        if kind in ("unit", "integration"):
            item.add_marker(getattr(pytest.mark, kind))


_USED: list[str] = []
_REASONS: dict[str, str | None] = {}  # test id -> the reason its slow mark gives
_CALL_SECONDS: dict[str, float] = {}  # test id -> its call's time


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _CALL_SECONDS[report.nodeid] = report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _USED:
        terminalreporter.write_line(f"integration tests ran against a real HBase: {line}")
    slow = unexplained(_CALL_SECONDS, _REASONS)
    if slow:  # a report, not a failure: how long a test takes here depends on what else the machine runs
        terminalreporter.section(f"over {LIMIT_SECONDS:.0f} s with no reason given (@pytest.mark.slow)")
        for test, took in slow:
            terminalreporter.write_line(f"{took:6.1f} s  {test}")


@dataclass(frozen=True)
class HBaseEndpoint:
    host: str
    thrift_port: int
    thrift2_port: int | None
    local: object | None  # the LocalHBase we started, if any
    idle_timeout_ms: int | None = None  # the gateways' idle timeout, where known

    def connection(self, timeout_ms: int = 30_000):  # -> happybase.Connection
        import happybase

        return happybase.Connection(self.host, self.thrift_port, timeout=timeout_ms)


@pytest.fixture(scope="session")
def hbase() -> Iterator[HBaseEndpoint]:
    host = os.environ.get("HBASE_THRIFT_HOST")
    if host:
        thrift2 = os.environ.get("HBASE_THRIFT2_PORT")
        endpoint = HBaseEndpoint(
            host, int(os.environ.get("HBASE_THRIFT_PORT", "9090")), int(thrift2) if thrift2 else None, None
        )
        _USED.append(f"external HBase at {host}:{endpoint.thrift_port}")
        yield endpoint
        return

    if os.environ.get("SIMHASH_TEST_HBASE") == "container":  # `make test-containers`: the HBase image
        yield from _hbase_container()
        return

    from simhash_deploy import LocalHBase, Ports

    var_dir = ROOT / "var" / f"test-hbase-{os.getpid()}"
    shutil.rmtree(var_dir, ignore_errors=True)
    # A short Thrift idle timeout, so tests can show that pooled connections the gateway dropped recover.
    local = LocalHBase(
        home=ROOT,
        var_dir=var_dir,
        ports=Ports.free(),
        master_heap_mb=1536,
        thrift_idle_timeout_ms=THRIFT_IDLE_TIMEOUT_MS,
    )
    began = time.monotonic()
    try:
        local.start()
        _USED.append(
            f"local launcher ({local.hbase_version()}), started in {time.monotonic() - began:.1f} s, "
            f"Thrift1 127.0.0.1:{local.ports.thrift}, Thrift2 127.0.0.1:{local.ports.thrift2}"
        )
    except Exception:
        local.stop()
        raise
    try:
        yield HBaseEndpoint("127.0.0.1", local.ports.thrift, local.ports.thrift2, local, THRIFT_IDLE_TIMEOUT_MS)
    finally:
        local.stop()
        shutil.rmtree(var_dir, ignore_errors=True)


def _hbase_container() -> Iterator[HBaseEndpoint]:
    """The simhash-index/hbase image through testcontainers: the fixture users get (simhash_client.testing)."""
    from simhash_client.testing import HBaseContainer

    container = HBaseContainer(idle_timeout_ms=THRIFT_IDLE_TIMEOUT_MS)
    began = time.monotonic()
    container.start()
    try:
        _USED.append(
            f"the {container.container.image} container, started in {time.monotonic() - began:.1f} s, "
            f"Thrift1 {container.host}:{container.thrift_port}, Thrift2 {container.host}:{container.thrift2_port}"
        )
        yield HBaseEndpoint(container.host, container.thrift_port, container.thrift2_port, None, THRIFT_IDLE_TIMEOUT_MS)
    finally:
        container.stop()
