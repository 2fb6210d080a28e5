"""Server interceptors: every call counted by method and status code, and timed."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import grpc

from simhash_server.metrics import RPC_CALLS, RPC_SECONDS

__all__ = ["MetricsInterceptor"]


class MetricsInterceptor(grpc.ServerInterceptor):
    def intercept_service(self, continuation: Callable[[Any], Any], details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(details)
        if handler is None or handler.unary_unary is None:
            return handler  # streaming (reflection, health watch): not measured
        method = details.method.rsplit("/", 1)[-1]
        behaviour = handler.unary_unary

        def measured(request: Any, context: grpc.ServicerContext) -> Any:
            began = time.perf_counter()
            code = grpc.StatusCode.OK
            try:
                return behaviour(request, context)
            except Exception:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            finally:
                RPC_SECONDS.labels(method).observe(time.perf_counter() - began)
                RPC_CALLS.labels(method, code.name).inc()

        return grpc.unary_unary_rpc_method_handler(
            measured,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
