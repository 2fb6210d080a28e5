"""simhash-index in containers, for your tests: HBase and the server from the simhash-index images, started
with testcontainers, and pytest fixtures that hand your test a connected client.

Needs Docker, ``pip install 'simhash-index[testing]'`` and the images (``make images`` in a checkout builds
them; no registry carries them).  testcontainers is imported only when a container starts.

In your ``conftest.py``::

    pytest_plugins = ["simhash_client.testing"]

and in a test::

    def test_a_copy_is_a_duplicate(simhash_index):  # a SimHashClient, connected
        assert simhash_index.deduplicate("a", text=ARTICLE).stored
        assert not simhash_index.deduplicate("b", text=ARTICLE + " (reposted)").stored

``simhash_index_container`` (one per test session) starts HBase, applies the schema and starts the server,
on a network of their own; ``simhash_index`` is a client of it per test.  Documents stay for the session:
give each test its own document ids.  SIMHASH_HBASE_IMAGE and SIMHASH_SERVER_IMAGE choose other images.
On a machine with no registry, set TESTCONTAINERS_RYUK_DISABLED=true (its reaper image cannot be pulled;
these containers are removed by the fixture either way).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import pytest

from simhash_client.client import SimHashClient
from simhash_client.errors import SimHashError

__all__ = [
    "HBASE_IMAGE",
    "READY_LINE",
    "SERVER_IMAGE",
    "HBaseContainer",
    "SimHashIndexContainer",
    "simhash_index",
    "simhash_index_container",
]


def _version() -> str:
    try:
        return version("simhash-index")
    except PackageNotFoundError:  # pragma: no cover - a source tree without an install
        return "0.1.0"


HBASE_IMAGE = os.environ.get("SIMHASH_HBASE_IMAGE", "simhash-index/hbase:2.6.1")
SERVER_IMAGE = os.environ.get("SIMHASH_SERVER_IMAGE", f"simhash-index/server:{_version()}")
# What the HBase image prints once it answers (simhash_deploy.container.READY_LINE; the client installs
# without the launcher, and tests/unit/test_testing.py holds the two equal).
READY_LINE = "simhash-index hbase: ready"
_STARTUP_SECONDS = 300  # HBase's first start on a busy machine; a warm one takes 15-30 s


class HBaseContainer:
    """Standalone HBase (the simhash-index/hbase image) with its Thrift gateways on published ports."""

    def __init__(self, image: str = HBASE_IMAGE, *, idle_timeout_ms: int | None = None, network: Any = None) -> None:
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.wait_strategies import LogMessageWaitStrategy

        self.idle_timeout_ms = idle_timeout_ms
        self.container = DockerContainer(image).with_exposed_ports(9090, 9091)
        self.container.waiting_for(LogMessageWaitStrategy(READY_LINE).with_startup_timeout(_STARTUP_SECONDS))
        if idle_timeout_ms is not None:
            self.container.with_env("SIMHASH_THRIFT_IDLE_TIMEOUT_MS", str(idle_timeout_ms))
        if network is not None:
            self.container.with_network(network).with_network_aliases("hbase")

    @property
    def host(self) -> str:
        return self.container.get_container_host_ip()

    @property
    def thrift_port(self) -> int:
        return int(self.container.get_exposed_port(9090))

    @property
    def thrift2_port(self) -> int:
        return int(self.container.get_exposed_port(9091))

    def start(self) -> HBaseContainer:
        self.container.start()
        return self

    def stop(self) -> None:
        self.container.stop()

    def __enter__(self) -> HBaseContainer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class SimHashIndexContainer:
    """HBase, the schema applied, and ``simhash-index serve``, on a Docker network of their own; the server's
    gRPC port published to the host (``target``)."""

    def __init__(self, hbase_image: str = HBASE_IMAGE, server_image: str = SERVER_IMAGE) -> None:
        self.hbase_image, self.server_image = hbase_image, server_image
        self._network: Any = None
        self.hbase: HBaseContainer | None = None
        self._server: Any = None

    @property
    def target(self) -> str:
        if self._server is None:
            raise RuntimeError("the containers are not started")
        return f"{self._server.get_container_host_ip()}:{self._server.get_exposed_port(50051)}"

    def client(self, **options: Any) -> SimHashClient:
        """A new client of the server (close it, or use it in a ``with``)."""
        return SimHashClient(self.target, **options)

    def start(self) -> SimHashIndexContainer:
        from testcontainers.core.network import Network

        try:
            self._network = Network().create()
            self.hbase = HBaseContainer(self.hbase_image, network=self._network).start()
            self._apply_schema()
            # reachable only through the port published to this host: no TLS or tokens for a test
            self._server = self._container().with_env("SIMHASH_INSECURE", "true").with_exposed_ports(50051)
            self._server.start()
            self._wait_serving()
        except BaseException:
            self.stop()
            raise
        return self

    def _container(self) -> Any:
        """A container of the server image on the network; its entrypoint is `simhash-index serve`."""
        from testcontainers.core.container import DockerContainer

        return DockerContainer(self.server_image).with_network(self._network)

    def _apply_schema(self) -> None:
        schema = self._container().with_kwargs(entrypoint=["simhash-index", "schema", "apply"])
        schema.start()
        try:
            status = schema.get_wrapped_container().wait(timeout=_STARTUP_SECONDS)["StatusCode"]
            if status != 0:
                out, err = schema.get_logs()
                raise RuntimeError(f"`simhash-index schema apply` exited {status}: {(out + err).decode()[-2000:]}")
        finally:
            schema.stop()

    def _wait_serving(self) -> None:
        deadline = time.monotonic() + _STARTUP_SECONDS
        with self.client(retries=0) as probe:
            while True:
                try:
                    probe.wait_until_serving(timeout=5)
                    return
                except SimHashError:
                    self._server.reload()
                    if self._server.status == "exited" or time.monotonic() > deadline:
                        out, err = self._server.get_logs()
                        raise RuntimeError(f"the server never became SERVING: {(out + err).decode()[-2000:]}") from None

    def stop(self) -> None:
        for part in (self._server, self.hbase):
            if part is not None:
                part.stop()
        self._server = self.hbase = None
        if self._network is not None:
            self._network.remove()
            self._network = None

    def __enter__(self) -> SimHashIndexContainer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@pytest.fixture(scope="session")
def simhash_index_container() -> Iterator[SimHashIndexContainer]:
    """HBase and the simhash-index server, in containers, for the test session."""
    with SimHashIndexContainer() as containers:
        yield containers


@pytest.fixture
def simhash_index(simhash_index_container: SimHashIndexContainer) -> Iterator[SimHashClient]:
    """A SimHashClient connected to the session's simhash-index server."""
    with simhash_index_container.client(timeout=30) as client:
        yield client
