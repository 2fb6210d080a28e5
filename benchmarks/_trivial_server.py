"""A gRPC asyncio server whose one method does nothing (the health service's Check), with the interceptor
bench_tracing.py --interceptor names: none, a pass-through one, or OpenTelemetry's with its span unsampled or
sampled (no exporter).  What the interceptor costs a call, apart from anything the service does."""

from __future__ import annotations

import asyncio
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


class Serving(health_pb2_grpc.HealthServicer):
    async def Check(self, request, context):
        return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)


class PassThrough(grpc.aio.ServerInterceptor):
    async def intercept_service(self, continuation, details):
        return await continuation(details)


def interceptors(kind: str) -> list[grpc.aio.ServerInterceptor]:
    if kind == "none":
        return []
    if kind == "pass-through":
        return [PassThrough()]
    from opentelemetry.instrumentation.grpc import aio_server_interceptor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON

    provider = TracerProvider(sampler=ALWAYS_ON if kind == "opentelemetry, sampled" else ALWAYS_OFF)
    return [PassThrough(), aio_server_interceptor(tracer_provider=provider)]


async def main(kind: str, port: int) -> None:
    server = grpc.aio.server(interceptors=interceptors(kind))
    health_pb2_grpc.add_HealthServicer_to_server(Serving(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
