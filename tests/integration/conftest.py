"""Fresh indexes on the session's real HBase: each gets its own table prefix and is dropped afterwards."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from thriftpy2.transport import TTransportException

from simhash_client import SimHashClient, SimHashError
from simhash_deploy import Ports
from simhash_schema import IndexTables, apply_schema, connect, index_tables
from simhash_server.index.store import IndexStore, StoreConfig


def drop_tables(hbase, tables: IndexTables) -> None:
    conn = hbase.connection()
    try:
        existing = set(conn.tables())
        for spec in tables.all():
            if spec.name.encode() in existing:  # disabled already, where an earlier try was cut off
                conn.delete_table(spec.name, disable=conn.is_table_enabled(spec.name))
    finally:
        conn.close()


UNREACHABLE_SECONDS = 300  # the longest a test keeps the session's HBase or a gateway away


class Dropper:
    """Drops finished tests' tables on two threads of its own: a disable waits for every region to close (a
    flush each), about half a second a table, and the suite drops several hundred.  Each index has a prefix
    of its own, so nothing a later test reads is touched; the session waits for the last drop, and a drop
    that failed fails it (one that found HBase away is tried again until it answers)."""

    def __init__(self, hbase) -> None:
        self._hbase = hbase
        # Two at a time: the master runs their procedures side by side, so fewer drops are still pending
        # when the last test ends (about 35 s of them with one).
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="drop-tables")
        self._pending: list[Future] = []

    def __call__(self, tables: IndexTables) -> None:
        self._pending.append(self._pool.submit(self._drop, tables))

    def _drop(self, tables: IndexTables) -> None:
        """Some tests stop a gateway, or HBase, for a while: a drop waits for them to answer again."""
        deadline = time.monotonic() + UNREACHABLE_SECONDS
        while True:
            try:
                return drop_tables(self._hbase, tables)
            except (TTransportException, OSError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)  # between tries of the gateway

    def finish(self) -> None:
        self._pool.shutdown(wait=True)
        for future in self._pending:
            future.result()  # raises the first failed drop


@pytest.fixture(scope="session")
def dropper(hbase) -> Iterator[Dropper]:
    tables = Dropper(hbase)
    yield tables
    tables.finish()


@pytest.fixture(scope="module")
def drop(dropper: Dropper) -> Callable[[IndexTables], None]:
    return dropper


@pytest.fixture(scope="module")
def make_index(hbase, dropper: Dropper) -> Iterator[Callable[..., IndexStore]]:
    """Create an index (schema applied, store opened); all are dropped when the module ends."""
    made: list[tuple[IndexStore, IndexTables]] = []

    def make(regions: int = 4, **config: object) -> IndexStore:
        prefix = f"t{uuid.uuid4().hex[:10]}"
        tables = index_tables(prefix, drawer_regions=regions)
        # The first schema of a session waits on the regions of an HBase just started: on a busy machine (the
        # YARN cluster starting beside it) its tableExists took over the client's default 10 s.
        client = connect(hbase.host, hbase.thrift2_port, timeout_ms=60_000)
        try:
            apply_schema(client, tables)
        finally:
            client.close()
        store = IndexStore(
            StoreConfig(
                host=hbase.host,
                thrift_port=hbase.thrift_port,
                thrift2_port=hbase.thrift2_port,
                table_prefix=prefix,
                **config,
            ),  # type: ignore[arg-type]
            tables,
        )
        store.open()
        made.append((store, tables))
        return store

    yield make
    for store, tables in made:
        store.close()
        dropper(tables)


CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture(scope="module")
def spawn_server(hbase) -> Iterator[Callable[..., tuple[subprocess.Popen, str]]]:
    """Start `simhash-index serve` processes on an index of the session's HBase; each is SERVING when
    returned (with its target), and stopped, if still running, when the module ends."""
    started: list[subprocess.Popen] = []

    def spawn(prefix: str, *options: str, env: dict[str, str] | None = None, **popen: object):
        port = Ports.free().thrift
        environment = {
            **os.environ,
            "SIMHASH_HBASE_HOST": hbase.host,
            "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
            "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
            "SIMHASH_TABLE_PREFIX": prefix,
            **(env or {}),
        }
        popen = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, **popen}
        proc = subprocess.Popen([CLI, "serve", "--address", f"127.0.0.1:{port}", *options], env=environment, **popen)
        started.append(proc)
        target = f"127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        with SimHashClient(target, retries=0) as probe:
            while True:
                try:
                    probe.wait_until_serving(timeout=5)
                    return proc, target
                except SimHashError:
                    assert proc.poll() is None, f"the server exited during start-up ({proc.returncode})"
                    assert time.monotonic() < deadline, "the server never became SERVING"

    yield spawn
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
    for proc in started:
        proc.wait(60)


@pytest.fixture(scope="module")
def index(make_index) -> IndexStore:
    """One index per test module: tests keep apart by fingerprint (see `base`) and document ids."""
    return make_index()


@pytest.fixture
def base() -> int:
    """A random fingerprint: the neighbourhood of one test, away from every other test's."""
    import random

    return random.getrandbits(64)


@pytest.fixture
def ids() -> str:
    """A prefix of document ids no other test uses."""
    return uuid.uuid4().hex[:8] + "-"


@pytest.fixture(scope="module")
def server(make_index):
    """A real SimHashServer on a free port, over a fresh index, with small limits the tests can reach."""
    from simhash_deploy import Ports
    from simhash_server.rpc.limits import Limits
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    store = make_index()
    config = ServerConfig(
        address="127.0.0.1:0",
        metrics_address=f"127.0.0.1:{Ports.free().zookeeper}",
        health_interval_seconds=0.5,
        retention_check_seconds=0.5,
        limits=Limits(max_text_bytes=100_000, max_batch=50, max_limit=500),
        store=store.config,
    )
    srv = SimHashServer(config)
    srv.start()
    yield srv
    srv.stop(grace=1)


class OnLoop:
    """AsyncSimHashClient behind blocking calls: each coroutine runs to its end on a loop of its own thread,
    so one test case drives both clients (results and raised errors come through unchanged)."""

    def __init__(self, target: str, **options: object) -> None:
        import asyncio
        import threading

        from simhash_client import AsyncSimHashClient

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="async-client", daemon=True)
        self._thread.start()

        async def make() -> AsyncSimHashClient:  # a grpc.aio channel belongs to the loop it is made in
            return AsyncSimHashClient(target, **options)

        self.client = self._wait(make())

    def _wait(self, coroutine):
        import asyncio

        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def __getattr__(self, name: str):
        import inspect

        found = getattr(self.client, name)
        if not inspect.iscoroutinefunction(found):
            return found
        return lambda *args, **kwargs: self._wait(found(*args, **kwargs))

    def close(self) -> None:
        self._wait(self.client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


@pytest.fixture(params=["blocking", "asyncio"])
def client(server, request):
    """The Python client, connected to the module's server: SimHashClient, then AsyncSimHashClient."""
    from simhash_client import SimHashClient

    target = f"127.0.0.1:{server.port}"
    if request.param == "blocking":
        with SimHashClient(target, timeout=20, retries=2) as c:
            yield c
    else:
        c = OnLoop(target, timeout=20, retries=2)
        try:
            yield c
        finally:
            c.close()


def every_thread_stopped(pid: int) -> bool:
    """Whether each thread of ``pid`` is stopped.  SIGSTOP wakes one thread, which then stops the others: until
    they are, a thread that a request has already woken (a Thrift worker) can still answer it."""
    for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue  # the thread has ended
        if state not in ("T", "t", "Z", "X"):
            return False
    return True


@pytest.fixture
def pause_gateways(hbase, until):
    """``with pause_gateways():`` SIGSTOPs the launcher's Thrift gateways and enters once every thread of
    theirs has stopped: a call that reaches HBase waits until the block ends, whatever the machine's speed."""
    import contextlib
    import signal

    if hbase.local is None:
        pytest.skip("pauses the local launcher's Thrift gateways")

    @contextlib.contextmanager
    def paused():
        pids = [hbase.local.status()[name]["pid"] for name in ("thrift", "thrift2")]
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        try:
            for pid in pids:
                until(lambda pid=pid: every_thread_stopped(pid), seconds=30)
            yield
        finally:
            for pid in pids:
                os.kill(pid, signal.SIGCONT)

    return paused


@pytest.fixture
def serve_in_process(make_index) -> Iterator[Callable[..., str]]:
    """``serve_in_process(**config)``: a real SimHashServer on a free port over a fresh index, with those
    ServerConfig fields (metrics off); its target.  Stopped when the test ends."""
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    started: list[SimHashServer] = []

    def serve(**config: object) -> str:
        store = make_index()
        srv = SimHashServer(ServerConfig(address="127.0.0.1:0", metrics_address=None, store=store.config, **config))
        srv.start()
        started.append(srv)
        return f"127.0.0.1:{srv.port}"

    yield serve
    for srv in started:
        srv.stop(grace=1)


@pytest.fixture
def until() -> Callable[..., None]:
    """``until(condition, seconds=60)``: wait for a state the test brought about (not a race it hopes to win)."""

    def wait(condition: Callable[[], bool], seconds: float = 60.0) -> None:
        deadline = time.monotonic() + seconds
        while not condition():
            assert time.monotonic() < deadline, "the condition never held"
            time.sleep(0.01)

    return wait
