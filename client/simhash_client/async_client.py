"""AsyncSimHashClient: SimHashClient for asyncio (grpc.aio), with the same methods, arguments, errors and
retries; requests and answers are made by the same code (calls.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2

from simhash_client import calls
from simhash_client.calls import Age, When
from simhash_client.channel import ChannelSettings, Connection, with_trace_context
from simhash_client.errors import SimHashError, Unavailable, from_rpc_error
from simhash_client.types import DedupOutcome, DedupResult, FingerprintResult, Hit, IndexOutcome, QueryOutcome, Stats

__all__ = ["AsyncSimHashClient"]

T = TypeVar("T")


class AsyncSimHashClient(Connection):
    """A connection to a simhash-index server, for asyncio.

    >>> async with AsyncSimHashClient("127.0.0.1:50051") as client:
    ...     result = await client.deduplicate("doc-1", text="...")

    Arguments, retries and errors as SimHashClient's.  Make it inside the event loop that uses it.
    """

    @staticmethod
    def _open(settings: ChannelSettings) -> grpc.aio.Channel:
        if settings.credentials is not None:
            return grpc.aio.secure_channel(settings.target, settings.credentials, settings.options)
        return grpc.aio.insecure_channel(settings.target, settings.options)

    async def close(self) -> None:
        await self._channel.close()

    async def __aenter__(self) -> AsyncSimHashClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _run(self, call: calls.Call[T], timeout: float | None) -> T:
        method = getattr(self._stub, call.method)
        deadline = time.monotonic() + (timeout or self.timeout)
        for attempt in range(self.retries + 1):
            try:
                remaining = max(deadline - time.monotonic(), 0.001)
                return call.answer(
                    await method(call.request, timeout=remaining, metadata=with_trace_context(self.settings.metadata))
                )
            except grpc.RpcError as exc:
                error = from_rpc_error(exc)
                pause = calls.backoff(attempt, error)
                if not calls.retryable(error.code) or attempt == self.retries or time.monotonic() + pause >= deadline:
                    raise error from None
                await asyncio.sleep(pause)
        raise SimHashError("unreachable")  # pragma: no cover

    # -- the API: as SimHashClient's ---------------------------------------------------------------------
    async def health(self, *, timeout: float | None = None) -> bool:
        request = health_pb2.HealthCheckRequest()
        try:
            answer = await self._health.Check(request, timeout=timeout or self.timeout, metadata=self.settings.metadata)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        return answer.status == health_pb2.HealthCheckResponse.SERVING

    async def wait_until_serving(self, timeout: float = 60.0) -> None:
        watch = self._health.Watch(
            health_pb2.HealthCheckRequest(), timeout=timeout, metadata=self.settings.metadata, wait_for_ready=True
        )
        try:
            async for answer in watch:
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            watch.cancel()
        raise Unavailable("the server ended its health stream without saying SERVING")

    async def fingerprint(self, text: str, *, timeout: float | None = None) -> FingerprintResult:
        return await self._run(calls.fingerprint(text), timeout)

    async def index(
        self,
        doc_id: str,
        *,
        text: str | None = None,
        simhash: int | str | None = None,
        fingerprint_version: str | None = None,
        indexed_at: When | None = None,
        timeout: float | None = None,
    ) -> int:
        return await self._run(calls.index(doc_id, text, simhash, fingerprint_version, indexed_at), timeout)

    async def index_batch(
        self, documents: Iterable[dict[str, Any]], *, timeout: float | None = None
    ) -> list[IndexOutcome]:
        return await self._run(calls.index_batch(documents), timeout)

    async def query(
        self,
        *,
        text: str | None = None,
        simhash: int | str | None = None,
        max_distance: int | None = None,
        limit: int = 0,
        fingerprint_version: str | None = None,
        min_similarity: float | None = None,
        max_age: Age | None = None,
        timeout: float | None = None,
    ) -> list[Hit]:
        """As SimHashClient.query: a text's hits verified at the index's floor unless ``min_similarity`` says
        otherwise (0: the fingerprint's own answer)."""
        call = calls.query(text, simhash, max_distance, limit, fingerprint_version, min_similarity, max_age)
        return await self._run(call, timeout)

    async def deduplicate(
        self,
        doc_id: str,
        *,
        text: str | None = None,
        simhash: int | str | None = None,
        max_distance: int | None = None,
        limit: int = 0,
        fingerprint_version: str | None = None,
        min_similarity: float | None = None,
        indexed_at: When | None = None,
        max_age: Age | None = None,
        timeout: float | None = None,
    ) -> DedupResult:
        call = calls.deduplicate(
            doc_id, text, simhash, max_distance, limit, fingerprint_version, min_similarity, indexed_at, max_age
        )
        return await self._run(call, timeout)

    async def query_batch(
        self, queries: Iterable[dict[str, Any]], *, timeout: float | None = None
    ) -> list[QueryOutcome]:
        return await self._run(calls.query_batch(queries), timeout)

    async def deduplicate_batch(
        self, documents: Iterable[dict[str, Any]], *, timeout: float | None = None
    ) -> list[DedupOutcome]:
        return await self._run(calls.deduplicate_batch(documents), timeout)

    async def get(self, doc_id: str, *, timeout: float | None = None) -> int:
        return await self._run(calls.get(doc_id), timeout)

    async def delete(self, doc_ids: Iterable[str], *, timeout: float | None = None) -> int:
        return await self._run(calls.delete(doc_ids), timeout)

    async def stats(self, *, timeout: float | None = None) -> Stats:
        return await self._run(calls.stats(), timeout)
