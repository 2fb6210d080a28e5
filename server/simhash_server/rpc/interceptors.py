"""The server's edge: every unary call counted by method and status code, and timed; a request that is not a
protobuf message of its method's type refused as INVALID_ARGUMENT (gRPC's own answer would be UNKNOWN, with
an error logged per call); the calls in flight tracked (Drain), so that a stopping server refuses new
calls as UNAVAILABLE, which clients retry elsewhere, while those it has begun finish; and admission: at most
``max_calls_per_method`` calls of one method in flight, the next refused at once as RESOURCE_EXHAUSTED with
a google.rpc.RetryInfo, so an overloaded server answers "not now" instead of queueing calls past their
deadlines (docs/api.md)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import DecodeError
from google.rpc import code_pb2, error_details_pb2, status_pb2

from simhash_server.metrics import RPC_CALLS, RPC_IN_FLIGHT, RPC_SECONDS

__all__ = ["Admission", "Drain", "MetricsInterceptor"]

_ALWAYS_ADMITTED = "/grpc.health.v1.Health/"  # a stopping server still answers NOT_SERVING to its balancer


class Drain:
    """The unary calls in flight, and whether new ones are admitted: what a graceful stop waits on.

    Used from the event loop only.  Closing is for good: a server stops once."""

    def __init__(self) -> None:
        self.admitting = True
        self.in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def close(self) -> None:
        self.admitting = False

    def enter(self) -> None:
        self.in_flight += 1
        self._idle.clear()

    def leave(self) -> None:
        self.in_flight -= 1
        if self.in_flight == 0:
            self._idle.set()

    async def wait(self, timeout: float) -> int:
        """Wait until no call is in flight, or ``timeout`` seconds; the calls still in flight."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)
        return self.in_flight


class Admission:
    """How many calls of each method are in flight, and whether one more may start (event loop only)."""

    def __init__(self, per_method: int = 64, retry_after_ms: int = 50) -> None:
        if per_method < 1:
            raise ValueError(f"per_method must be at least 1, got {per_method}")
        self.per_method = per_method
        self.retry_after_ms = retry_after_ms
        self.in_flight: dict[str, int] = {}
        self._refusals: dict[str, tuple[str, tuple[tuple[str, bytes], ...]]] = {}

    def enter(self, method: str) -> bool:
        """Admit one call of ``method`` (True), or refuse it (False): it is at its limit."""
        held = self.in_flight.get(method, 0)
        if held >= self.per_method:
            return False
        self.in_flight[method] = held + 1
        return True

    def leave(self, method: str) -> None:
        self.in_flight[method] -= 1

    def refusal(self, method: str) -> tuple[str, tuple[tuple[str, bytes], ...]]:
        """The details and trailing metadata (a google.rpc.Status with RetryInfo) of a refused call."""
        made = self._refusals.get(method)
        if made is None:
            message = f"{self.per_method} {method} calls are in flight already (max_calls_per_method): retry later"
            made = self._refusals[method] = (message, _refusal(message, self.retry_after_ms))
        return made


def _refusal(message: str, retry_after_ms: int) -> tuple[tuple[str, bytes], ...]:
    """The rich status of a refusal; its message must equal the call's details, or clients discard it."""
    delay = duration_pb2.Duration()
    delay.FromMilliseconds(retry_after_ms)
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.RetryInfo(retry_delay=delay))
    status = status_pb2.Status(code=code_pb2.RESOURCE_EXHAUSTED, message=message, details=[detail])
    return (("grpc-status-details-bin", status.SerializeToString()),)


class _Undecodable:
    """What the request deserializer gives for bytes that are no message of the expected type."""

    __slots__ = ("error",)

    def __init__(self, error: DecodeError) -> None:
        self.error = error


def _tolerant(deserializer: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    if deserializer is None:
        return None

    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except DecodeError as exc:
            return _Undecodable(exc)

    return deserialize


class MetricsInterceptor(grpc.aio.ServerInterceptor):
    def __init__(self, drain: Drain | None = None, admission: Admission | None = None) -> None:
        self._drain = drain if drain is not None else Drain()
        self._admission = admission
        # method -> (the handler it wrapped, the wrapper): a call reuses its method's wrapper
        self._wrapped: dict[str, tuple[Any, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming (reflection, health watch): not measured
        cached = self._wrapped.get(details.method)
        if cached is not None and cached[0] is handler:
            return cached[1]
        drained = not details.method.startswith(_ALWAYS_ADMITTED)
        name = details.method.rsplit("/", 1)[-1]
        wrapped = self._wrap(name, handler, self._drain if drained else None, self._admission if drained else None)
        if len(self._wrapped) < 256:  # fixed handlers repeat; an auth refusal is new each call
            self._wrapped[details.method] = (handler, wrapped)
        return wrapped

    @staticmethod
    def _wrap(
        method: str, handler: grpc.RpcMethodHandler, drain: Drain | None, admission: Admission | None
    ) -> grpc.RpcMethodHandler:
        behaviour = handler.unary_unary
        calls, seconds, in_flight = RPC_CALLS, RPC_SECONDS.labels(method), RPC_IN_FLIGHT.labels(method)

        async def measured(request: Any, context: grpc.aio.ServicerContext) -> Any:
            began = time.perf_counter()
            code = grpc.StatusCode.OK
            admitted = drain is None or drain.admitting
            room = admission is None or not admitted or admission.enter(method)
            if admitted and drain is not None:
                drain.enter()
            in_flight.inc()
            try:
                if not admitted:
                    await context.abort(grpc.StatusCode.UNAVAILABLE, "the server is stopping; retry the call")
                if not room:
                    assert admission is not None
                    message, trailer = admission.refusal(method)
                    await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, message, trailing_metadata=trailer)
                if isinstance(request, _Undecodable):
                    await context.abort(
                        grpc.StatusCode.INVALID_ARGUMENT, f"the request is not a valid message: {request.error}"
                    )
                return await behaviour(request, context)
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED  # the caller went away, or its deadline passed
                raise
            except Exception:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
                in_flight.dec()
                if admitted and drain is not None:
                    drain.leave()
                if admitted and room and admission is not None:
                    admission.leave(method)
                seconds.observe(time.perf_counter() - began)
                calls.labels(method, code.name).inc()

        return grpc.unary_unary_rpc_method_handler(
            measured,
            request_deserializer=_tolerant(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )
