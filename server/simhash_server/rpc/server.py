"""The gRPC server: the SimHashIndex service, standard health checking, reflection, metrics, graceful stop.

Setup is split into small `_configure_*` steps.  The server is grpc.aio: a call waiting on HBase is a
suspended coroutine rather than a blocked thread, which serves more queries per core than a thread pool
(docs/decisions.md#a-grpcaio-server-whose-concurrent-calls-share-hbase-calls).  ``serve_forever`` runs it
on the main thread; ``start``/``stop`` run it on a thread of its own, for tests and for embedding.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc
from simhash_server import tracing
from simhash_server.fingerprint import fingerprint
from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.store import IndexStore, StoreConfig
from simhash_server.rpc.event_loop import check_event_loop, new_event_loop
from simhash_server.rpc.interceptors import Admission, Drain, MetricsInterceptor
from simhash_server.rpc.limits import Limits
from simhash_server.rpc.rotation import Rotation
from simhash_server.rpc.security import AuthInterceptor, TLSConfig, Tokens, check_exposure
from simhash_server.rpc.service import SimHashIndexService
from simhash_server.rpc.warmup import warm_up

__all__ = ["ServerConfig", "SimHashServer"]

log = logging.getLogger(__name__)


def traced_calls(provider: Any) -> grpc.aio.ServerInterceptor:
    """opentelemetry-instrumentation-grpc's interceptor: a span per SimHashIndex call the sampler records,
    continuing the caller's traceparent.  Health checks and reflection are left out (a load balancer's
    probes would drown the rest), and so are unsampled calls (tracing.sampled)."""
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    ours = f"/{SERVICE_NAME}/"

    def wanted(call: grpc.HandlerCallDetails) -> bool:
        return call.method.startswith(ours) and tracing.sampled(call.invocation_metadata, call.method)

    return aio_server_interceptor(tracer_provider=provider, filter_=wanted)


def server_version() -> str:
    try:
        return version("simhash-index")
    except PackageNotFoundError:  # run from a source tree, uninstalled
        return "0+unknown"


SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SimHashIndex"].full_name
CLAIM_RETURN_SECONDS = 5.0  # a stopping server's wait for the claims it is giving back


@dataclass(frozen=True)
class ServerConfig:
    address: str = "127.0.0.1:50051"
    metrics_address: str | None = "127.0.0.1:9464"
    grace_seconds: float = 10.0
    health_interval_seconds: float = 2.0
    # A ping unanswered this long turns health NOT_SERVING (a partitioned network answers no ping at all, so
    # the store's own timeout would take 10 s to say so); a ping that fails also refuses calls (UNAVAILABLE).
    health_timeout_seconds: float = 3.0
    limits: Limits = field(default_factory=Limits)
    store: StoreConfig = field(default_factory=StoreConfig)
    tls: TLSConfig | None = None
    tokens: Tokens | None = None
    tokens_file: Path | None = None  # where ``tokens`` came from: reread on SIGHUP or a change (rotation.py)
    credentials_check_seconds: float = 5.0  # how often the TLS and tokens files are checked for a change
    # How often the index's retention (a table setting, from the HMaster) is read again, apart from the
    # health checks: an HMaster away must not make a serving replica look down.
    retention_check_seconds: float = 30.0
    insecure: bool = False  # serve a network address with neither TLS nor tokens
    # Queries asked before the port opens: at least warmup_queries, then (warmup_until_settled) more rounds
    # until their latency stops falling; never past warmup_seconds (warmup.py).
    warmup_queries: int = 0
    warmup_seconds: float = 30.0
    warmup_until_settled: bool = True
    # Whether Deduplicate queries before it takes its claims (a duplicate is then answered without them):
    # "auto" while recent calls found enough duplicates to pay for it (rpc/dedup_order.py), or always, or never.
    dedup_order: str = "auto"
    event_loop: str = "uvloop"  # or "asyncio" (event_loop.py)
    # Trace calls as the standard OTEL_* environment variables say (off when they configure no exporter):
    # `serve` does; a server embedded in a program or a test only when asked (tracing.py).
    tracing: bool = False


class SimHashServer:
    def __init__(self, config: ServerConfig) -> None:
        check_exposure(config.address, config.tls, config.tokens, config.insecure)
        check_event_loop(config.event_loop)
        if config.tracing:
            tracing.wanted(os.environ)  # a bad OTEL_* value fails here, named
        self.config = config
        self._tracer_provider: Any = None
        self.store = IndexStore(config.store)
        self._executor = ThreadPoolExecutor(max_workers=config.limits.workers, thread_name_prefix="work")
        self.index = AsyncIndexStore(self.store, self._executor)
        self.service = SimHashIndexService(self.index, self._executor, config.limits, config.dedup_order)
        self.health = health.aio.HealthServicer()
        self.auth = AuthInterceptor(config.tokens) if config.tokens is not None else None
        self.rotation = Rotation(config.tls, config.tokens_file, self.auth)
        self._rotating: asyncio.Task[None] | None = None
        self.port = 0  # the bound port, once started
        self._server: grpc.aio.Server | None = None
        self._watcher: asyncio.Task[None] | None = None
        self._stopping = False
        self._ping: asyncio.Future[None] | None = None
        self._drain = Drain()
        self._loop: asyncio.AbstractEventLoop | None = None  # set by start(): the loop's own thread
        self._thread: threading.Thread | None = None

    # -- setup (on the event loop) -------------------------------------------------------------------------
    def _configure_server(self) -> grpc.aio.Server:
        limits = self.config.limits
        options = [
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            ("grpc.max_send_message_length", limits.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
        # outermost: counts refusals too, and sees every call a graceful stop waits for
        admission = Admission(limits.max_calls_per_method, limits.retry_after_ms)
        interceptors: list[grpc.aio.ServerInterceptor] = [MetricsInterceptor(self._drain, admission)]
        if self._tracer_provider is not None:  # first: the call's span holds every refusal and step
            interceptors.insert(0, traced_calls(self._tracer_provider))
        if self.auth is not None:
            interceptors.append(self.auth)
        return grpc.aio.server(
            interceptors=interceptors, options=options, maximum_concurrent_rpcs=limits.max_concurrent_calls
        )

    def _configure_port(self, server: grpc.aio.Server) -> int:
        tls = self.config.tls
        try:
            if tls is not None:
                port = server.add_secure_port(self.config.address, self.rotation.server_credentials())
            else:
                port = server.add_insecure_port(self.config.address)
        except RuntimeError as exc:  # grpc's "Failed to bind to address ..."
            raise OSError(f"cannot listen on {self.config.address}: in use, or not an address of this host") from exc
        if port == 0:
            raise OSError(f"cannot listen on {self.config.address}")
        return port

    def _check_address(self) -> None:
        """Fail at once on an address this host cannot listen on: gRPC binds only after the warm-up (a bound
        port accepts connections, and gRPC would hold their calls until the server starts)."""
        host, _, port = self.config.address.rpartition(":")
        if not port.isdigit() or int(port) == 0:
            return  # not a host:port gRPC will take as it stands, or any free port: gRPC says what it finds
        try:
            family, kind, proto, _, where = socket.getaddrinfo(
                host.strip("[]") or None, int(port), type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )[0]
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as gRPC's own socket
                probe.bind(where)
        except OSError as exc:
            raise OSError(f"cannot listen on {self.config.address}: in use, or not an address of this host") from exc

    def _configure_services(self, server: grpc.aio.Server) -> None:
        pb_grpc.add_SimHashIndexServicer_to_server(self.service, server)

    async def _configure_health(self, server: grpc.aio.Server) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)

    def _configure_reflection(self, server: grpc.aio.Server) -> None:
        names = (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, server)

    def _configure_metrics(self) -> None:
        if not self.config.metrics_address:
            return
        from prometheus_client import start_http_server

        host, _, port = self.config.metrics_address.rpartition(":")
        try:
            start_http_server(int(port), addr=host or "127.0.0.1")
        except OSError as exc:
            raise OSError(f"cannot serve metrics on {self.config.metrics_address}: {exc.strerror}") from exc

    # -- health: NOT_SERVING while HBase (or the index) is unreachable ------------------------------------
    async def _set_health(self, status: Any) -> None:
        for name in ("", SERVICE_NAME):
            await self.health.set(name, status)

    async def check_index(self, timeout: float | None = None) -> bool:
        """Ping the index; SERVING if it answers within ``timeout`` (None: the store's own timeouts).  A ping
        still unanswered is waited for again, not doubled: a cut network holds a thread per ping."""
        if self._ping is None or self._ping.done():
            self._ping = asyncio.ensure_future(self.index.ping())
        try:
            await asyncio.wait_for(asyncio.shield(self._ping), timeout)
        except TimeoutError:
            # Slow is not down (a region moving, a region server's regions reassigned): NOT_SERVING, so that
            # balancers prefer other replicas, but calls are still tried; a ping that fails refuses them.
            await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
            return False
        except Exception as exc:  # noqa: BLE001 - any failure means not serving
            self.service.set_open_error(exc)
            await self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
            return False
        self.service.set_open_error(None)
        await self._set_health(health_pb2.HealthCheckResponse.SERVING)
        return True

    async def _watch_index(self) -> None:
        was_up = None
        retention: asyncio.Future[int | None] | None = None
        checked = time.monotonic()
        while True:
            await asyncio.sleep(self.config.health_interval_seconds)
            if (
                retention is None or retention.done()
            ) and time.monotonic() - checked >= self.config.retention_check_seconds:
                checked = time.monotonic()  # not awaited: a slow HMaster holds only this
                retention = asyncio.ensure_future(
                    self.index.read_retention(checked + self.config.retention_check_seconds)
                )
            up = await self.check_index(self.config.health_timeout_seconds)
            if up != was_up:
                (log.info if up else log.warning)(
                    "index %s", "reachable: SERVING" if up else "unreachable: NOT_SERVING"
                )
                was_up = up

    async def _warm_up(self) -> None:
        """Queries before the port opens, so that the first callers do not pay for cold JVMs (warmup.py)."""
        config = self.config
        report = await warm_up(self.index, config.warmup_queries, config.warmup_seconds, config.warmup_until_settled)
        if report.asked:
            log.info("%s", report.describe())

    # -- lifecycle, on the event loop -------------------------------------------------------------------
    async def _start(self) -> None:
        """Configure, warm up, and only then open the port: until the server answers, a caller is refused at
        once (connection refused: UNAVAILABLE, which clients retry) rather than held."""
        if self.config.tracing:
            self._tracer_provider = tracing.start(os.environ, server_version())
        server = self._configure_server()
        self._check_address()
        self._configure_services(server)
        await self._configure_health(server)
        self._configure_reflection(server)
        self._configure_metrics()
        if not await self.check_index():
            log.warning("starting NOT_SERVING: %s", self.service._open_error)
        # load the segmenter's dictionary and the IDF table of the index's recipe before the first call
        version = self.service.index.recipe.version
        await asyncio.get_running_loop().run_in_executor(self._executor, fingerprint, "预热 warm-up", version)
        log.info("fingerprint version %s", version)
        if self.service._open_error is None:
            log.info("warming up before the port opens")
            await self._warm_up()
        self.port = self._configure_port(server)
        await server.start()
        self._server = server
        self._watcher = asyncio.create_task(self._watch_index(), name="health")
        if self.rotation.files:
            self._rotating = asyncio.create_task(self.rotation.watch(self.config.credentials_check_seconds))
        host = self.config.address.rsplit(":", 1)[0]
        metrics = self.config.metrics_address or "off"
        log.info("serving %s on %s:%d (metrics: %s)", SERVICE_NAME, host, self.port, metrics)

    async def _stop(self, grace: float | None) -> None:
        """Refuse new calls (UNAVAILABLE, which clients retry), let in-flight ones finish (up to the grace
        period), then stop gRPC and close the store.

        gRPC's own stop would also cancel calls it has received but not yet handed to a handler (CANCELLED,
        which clients do not retry), so the server refuses calls itself first and stops gRPC once idle."""
        if self._stopping:
            return
        self._stopping = True
        self._drain.close()
        for task in (self._watcher, self._rotating):
            if task is not None:
                task.cancel()
        await self.health.enter_graceful_shutdown()
        grace = self.config.grace_seconds if grace is None else grace
        began = time.monotonic()
        if self._drain.in_flight:
            log.info("waiting for %d call(s) in flight (up to %.0f s)", self._drain.in_flight, grace)
        left = await self._drain.wait(grace)
        if left:
            log.warning("%d call(s) still in flight after %.0f s: cancelled", left, grace)
        if self._server is not None:
            await self._server.stop(max(0.0, grace - (time.monotonic() - began)))
        # Claims are given back after the answers: a store closed under them would leave them to lapse.
        claims = await self.index.given_back(CLAIM_RETURN_SECONDS)
        if claims:
            log.warning("%d deduplication claim(s) not given back: they lapse within a minute", claims)
        self.index.close()
        self._executor.shutdown(wait=False, cancel_futures=True)
        if self._tracer_provider is not None:
            tracing.stop()  # exports the spans still queued
        log.info("stopped")

    async def _serve(self) -> None:
        done = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(signum: int) -> None:
            self._drain.close()  # at once: calls that arrive before _stop runs are refused too
            log.info("signal %d: stopping gracefully", signum)
            done.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, on_signal, sig)
        loop.add_signal_handler(signal.SIGHUP, self.rotation.reload, "SIGHUP")  # credentials, reread
        await self._start()
        await done.wait()
        began = time.monotonic()
        await self._stop(None)
        log.info("graceful stop took %.1f s", time.monotonic() - began)

    # -- lifecycle, from a program's own thread ------------------------------------------------------------
    def serve_forever(self) -> None:
        """Serve on this thread until SIGTERM or Ctrl-C, then stop gracefully."""
        with asyncio.Runner(loop_factory=lambda: new_event_loop(self.config.event_loop)) as runner:
            runner.run(self._serve())

    def start(self) -> None:
        """Serve on an event loop in a thread of its own; returns once serving."""
        loop = new_event_loop(self.config.event_loop)
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="grpc-aio", daemon=True)
        self._thread.start()
        self._on_loop(self._start())

    def stop(self, grace: float | None = None) -> None:
        """Stop what ``start`` started (or, never started, release the store)."""
        if self._loop is None:
            if not self._stopping:
                self._stopping = True
                self.index.close()
                self._executor.shutdown(wait=False)
            return
        try:
            self._on_loop(self._stop(grace))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(10)
            self._loop.close()
            self._loop = None

    def _on_loop(self, work: Any) -> Any:
        assert self._loop is not None
        running: Future[Any] = asyncio.run_coroutine_threadsafe(work, self._loop)
        return running.result()
