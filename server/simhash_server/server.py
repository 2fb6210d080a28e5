"""The gRPC server: the SimHashIndex service, standard health checking, reflection, metrics, graceful stop.

Setup is split into small `_configure_*` steps.  The sync gRPC server was chosen over grpc.aio by
measurement (docs/benchmarks.md); HBase calls block anyway, and the store is thread-safe.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc
from simhash_server.fingerprint import fingerprint
from simhash_server.interceptors import MetricsInterceptor
from simhash_server.limits import Limits
from simhash_server.security import AuthInterceptor, TLSConfig, Tokens, check_exposure
from simhash_server.service import SimHashIndexService
from simhash_server.store import IndexStore, StoreConfig

__all__ = ["ServerConfig", "SimHashServer"]

log = logging.getLogger(__name__)
SERVICE_NAME = pb.DESCRIPTOR.services_by_name["SimHashIndex"].full_name


@dataclass(frozen=True)
class ServerConfig:
    address: str = "127.0.0.1:50051"
    metrics_address: str | None = "127.0.0.1:9464"
    grace_seconds: float = 10.0
    health_interval_seconds: float = 2.0
    limits: Limits = field(default_factory=Limits)
    store: StoreConfig = field(default_factory=StoreConfig)
    tls: TLSConfig | None = None
    tokens: Tokens | None = None
    insecure: bool = False  # serve a network address with neither TLS nor tokens


class SimHashServer:
    def __init__(self, config: ServerConfig) -> None:
        check_exposure(config.address, config.tls, config.tokens, config.insecure)
        self.config = config
        self.store = IndexStore(config.store)
        self.service = SimHashIndexService(self.store, config.limits)
        self.health = health.HealthServicer()
        self._stopping = threading.Event()
        self.server = self._configure_server()
        self.port = self._configure_port()
        self._configure_services()
        self._configure_health()
        self._configure_reflection()

    # -- setup ---------------------------------------------------------------------------------------------
    def _configure_server(self) -> grpc.Server:
        limits = self.config.limits
        options = [
            ("grpc.max_receive_message_length", limits.max_message_bytes),
            ("grpc.max_send_message_length", limits.max_message_bytes),
            ("grpc.so_reuseport", 0),
        ]
        interceptors: list[grpc.ServerInterceptor] = [MetricsInterceptor()]  # outermost: counts refusals too
        if self.config.tokens is not None:
            interceptors.append(AuthInterceptor(self.config.tokens))
        return grpc.server(
            futures.ThreadPoolExecutor(max_workers=limits.workers, thread_name_prefix="rpc"),
            interceptors=interceptors,
            options=options,
            maximum_concurrent_rpcs=limits.max_concurrent_calls,
        )

    def _configure_port(self) -> int:
        tls = self.config.tls
        if tls is not None:
            port = self.server.add_secure_port(self.config.address, tls.server_credentials())
        else:
            port = self.server.add_insecure_port(self.config.address)
        if port == 0:
            raise OSError(f"cannot listen on {self.config.address}")
        return port

    def _configure_services(self) -> None:
        pb_grpc.add_SimHashIndexServicer_to_server(self.service, self.server)

    def _configure_health(self) -> None:
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)

    def _configure_reflection(self) -> None:
        names = (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME)
        reflection.enable_server_reflection(names, self.server)

    def _configure_metrics(self) -> None:
        if not self.config.metrics_address:
            return
        from prometheus_client import start_http_server

        host, _, port = self.config.metrics_address.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1")

    # -- health: NOT_SERVING while HBase (or the index) is unreachable ------------------------------------
    def _set_health(self, status: Any) -> None:
        for name in ("", SERVICE_NAME):
            self.health.set(name, status)

    def check_index(self) -> bool:
        try:
            self.store.ping()
        except Exception as exc:  # noqa: BLE001 - any failure means not serving
            self.service.set_open_error(exc)
            self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
            return False
        self.service.set_open_error(None)
        self._set_health(health_pb2.HealthCheckResponse.SERVING)
        return True

    def _watch_index(self) -> None:
        was_up = None
        while not self._stopping.wait(self.config.health_interval_seconds):
            up = self.check_index()
            if up != was_up:
                (log.info if up else log.warning)(
                    "index %s", "reachable: SERVING" if up else "unreachable: NOT_SERVING"
                )
                was_up = up

    # -- lifecycle -----------------------------------------------------------------------------------------
    def start(self) -> None:
        self._configure_metrics()
        fingerprint("预热 warm-up")  # load the segmenter's dictionary and the IDF table before the first call
        if not self.check_index():
            log.warning("starting NOT_SERVING: %s", self.service._open_error)
        self.server.start()
        threading.Thread(target=self._watch_index, name="health", daemon=True).start()
        log.info("serving %s on port %d", SERVICE_NAME, self.port)

    def stop(self, grace: float | None = None) -> None:
        """Refuse new calls, let in-flight ones finish (up to the grace period), then close the store."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self.health.enter_graceful_shutdown()
        self.server.stop(self.config.grace_seconds if grace is None else grace).wait()
        self.store.close()
        log.info("stopped")

    def serve_forever(self) -> None:
        """Start, then stop gracefully on SIGTERM or Ctrl-C."""
        done = threading.Event()

        def on_signal(signum: int, _frame: object) -> None:
            log.info("signal %d: stopping gracefully", signum)
            done.set()

        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, on_signal)
        self.start()
        while not done.wait(3600):
            pass
        began = time.monotonic()
        self.stop()
        log.info("graceful stop took %.1f s", time.monotonic() - began)
