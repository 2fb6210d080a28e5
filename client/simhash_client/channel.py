"""What both clients share below the API: their settings, checked once (target, timeout, retries, TLS, token),
and the stubs over the channel each opens (blocking or asyncio)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from grpc_health.v1 import health_pb2_grpc

from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc

try:  # a caller that traces with OpenTelemetry has its API installed; the client needs none
    from opentelemetry import propagate, trace
except ImportError:  # pragma: no cover - without OpenTelemetry there is no context to carry
    propagate = trace = None  # type: ignore[assignment]

__all__ = ["ChannelSettings", "Connection", "with_trace_context"]

_MAX_RECEIVE = 64 * 1024 * 1024  # a query's answer of many hits, or a big batch's outcomes


@dataclass(frozen=True)
class ChannelSettings:
    target: str
    timeout: float
    retries: int
    credentials: grpc.ChannelCredentials | None  # None: plaintext
    options: tuple[tuple[str, Any], ...]
    metadata: tuple[tuple[str, str], ...]  # sent with every call

    @classmethod
    def of(
        cls,
        target: str,
        *,
        timeout: float,
        retries: int,
        credentials: grpc.ChannelCredentials | None,
        options: Sequence[tuple[str, Any]],
        tls: bool,
        root_certificates: bytes | None,
        client_certificate: bytes | None,
        client_key: bytes | None,
        token: str | None,
    ) -> ChannelSettings:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if (client_certificate is None) != (client_key is None):
            raise ValueError("client_certificate and client_key go together")
        metadata: tuple[tuple[str, str], ...] = ()
        if credentials is None and (tls or root_certificates or client_certificate):
            credentials = grpc.ssl_channel_credentials(root_certificates, client_key, client_certificate)
        if token is not None:
            if not token or any(c.isspace() for c in token):
                raise ValueError("token must be non-empty, without whitespace")
            if credentials is not None:
                credentials = grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(token))
            else:  # gRPC gives a plaintext channel no call credentials: the same header, by hand
                metadata = (("authorization", f"Bearer {token}"),)
        opts = (("grpc.max_receive_message_length", _MAX_RECEIVE), *options)
        return cls(target, timeout, retries, credentials, opts, metadata)


def with_trace_context(metadata: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``metadata`` and the caller's current trace context (W3C ``traceparent``, or whatever propagators the
    caller's OpenTelemetry configured), so that the server's span of the call continues the caller's trace."""
    if propagate is None or not trace.get_current_span().get_span_context().is_valid:
        return metadata
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return (*metadata, *carrier.items())


class Connection:
    """A channel to a simhash-index server with its stubs; subclasses choose the kind of channel."""

    def __init__(
        self,
        target: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        credentials: grpc.ChannelCredentials | None = None,
        options: Sequence[tuple[str, Any]] = (),
        tls: bool = False,
        root_certificates: bytes | None = None,
        client_certificate: bytes | None = None,
        client_key: bytes | None = None,
        token: str | None = None,
    ) -> None:
        self.settings = ChannelSettings.of(
            target,
            timeout=timeout,
            retries=retries,
            credentials=credentials,
            options=options,
            tls=tls,
            root_certificates=root_certificates,
            client_certificate=client_certificate,
            client_key=client_key,
            token=token,
        )
        self.target, self.timeout, self.retries = target, timeout, retries
        self._channel = self._open(self.settings)
        self._stub = pb_grpc.SimHashIndexStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)

    def _open(self, settings: ChannelSettings) -> Any:
        raise NotImplementedError
