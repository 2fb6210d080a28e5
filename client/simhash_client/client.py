"""SimHashClient: the Python face of the SimHashIndex gRPC API, blocking (AsyncSimHashClient: asyncio)."""

from __future__ import annotations

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

__all__ = ["SimHashClient"]

T = TypeVar("T")


class SimHashClient(Connection):
    """A connection to a simhash-index server.

    >>> with SimHashClient("127.0.0.1:50051") as client:
    ...     result = client.deduplicate("doc-1", text="...")

    Every call is idempotent (``index`` is an upsert; ``deduplicate`` never reports a document as its own
    duplicate), so every call is retried on UNAVAILABLE and RESOURCE_EXHAUSTED, ``retries`` times with jittered
    exponential backoff (never sooner than a refusal's RetryInfo asks).
    Errors raise subclasses of ``simhash_client.errors.SimHashError``.

    Security: ``tls=True`` (or any of ``root_certificates``, ``client_certificate``/``client_key``, all PEM
    bytes) makes a TLS channel; ``token`` is sent as a bearer token, as call credentials over TLS (and, for
    a plaintext channel, which gRPC never gives call credentials, as the same ``authorization`` header).
    """

    @staticmethod
    def _open(settings: ChannelSettings) -> grpc.Channel:
        if settings.credentials is not None:
            return grpc.secure_channel(settings.target, settings.credentials, settings.options)
        return grpc.insecure_channel(settings.target, settings.options)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> SimHashClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------------------------------------
    def _run(self, call: calls.Call[T], timeout: float | None) -> T:
        method = getattr(self._stub, call.method)
        deadline = time.monotonic() + (timeout or self.timeout)
        for attempt in range(self.retries + 1):
            try:
                remaining = max(deadline - time.monotonic(), 0.001)
                return call.answer(
                    method(call.request, timeout=remaining, metadata=with_trace_context(self.settings.metadata))
                )
            except grpc.RpcError as exc:
                error = from_rpc_error(exc)
                pause = calls.backoff(attempt, error)
                if not calls.retryable(error.code) or attempt == self.retries or time.monotonic() + pause >= deadline:
                    raise error from None
                time.sleep(pause)
        raise SimHashError("unreachable")  # pragma: no cover

    # -- the API -------------------------------------------------------------------------------------------
    def health(self, *, timeout: float | None = None) -> bool:
        """Whether the server says SERVING (gRPC health checking): it is up and reaches its index."""
        request = health_pb2.HealthCheckRequest()
        try:
            answer = self._health.Check(request, timeout=timeout or self.timeout, metadata=self.settings.metadata)
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        return answer.status == health_pb2.HealthCheckResponse.SERVING

    def wait_until_serving(self, timeout: float = 60.0) -> None:
        """Return once the server says SERVING; DeadlineExceeded if it has not within ``timeout`` seconds.

        Waits on the health service's Watch stream, which waits for the server to be reachable at all, so
        it serves a server still starting, or one whose index is still unreachable."""
        watch = self._health.Watch(
            health_pb2.HealthCheckRequest(), timeout=timeout, metadata=self.settings.metadata, wait_for_ready=True
        )
        try:
            for answer in watch:
                if answer.status == health_pb2.HealthCheckResponse.SERVING:
                    return
        except grpc.RpcError as exc:
            raise from_rpc_error(exc) from None
        finally:
            watch.cancel()
        raise Unavailable("the server ended its health stream without saying SERVING")

    def fingerprint(self, text: str, *, timeout: float | None = None) -> FingerprintResult:
        return self._run(calls.fingerprint(text), timeout)

    def index(
        self,
        doc_id: str,
        *,
        text: str | None = None,
        simhash: int | str | None = None,
        fingerprint_version: str | None = None,
        indexed_at: When | None = None,
        timeout: float | None = None,
    ) -> int:
        """Upsert one document; returns its fingerprint.  ``indexed_at`` (an aware datetime, or Unix seconds):
        when it was first seen (default: now), the time ``max_age`` and the index's retention look at."""
        return self._run(calls.index(doc_id, text, simhash, fingerprint_version, indexed_at), timeout)

    def index_batch(self, documents: Iterable[dict[str, Any]], *, timeout: float | None = None) -> list[IndexOutcome]:
        """Upsert many: each item a dict with doc_id and text or simhash (and optionally indexed_at).  Outcomes
        in input order."""
        return self._run(calls.index_batch(documents), timeout)

    def query(
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
        """Stored near-duplicates of a text or fingerprint: verified, the most similar first; else the closest.

        A text's candidates are checked against their stored sketches and kept if the estimated similarity
        reaches ``min_similarity``, by default the index's floor (v4: 0.75; a v1-v3 index answers with the
        fingerprint alone); max_distance is then 0..8, default 8.  ``min_similarity=0`` gives the
        fingerprint's own answer: every document within max_distance (default 3).  A fingerprint's query
        finds those within max_distance (0..3, default 3).  With ``max_age`` (a timedelta, or seconds) only
        documents seen within it are hits."""
        return self._run(
            calls.query(text, simhash, max_distance, limit, fingerprint_version, min_similarity, max_age), timeout
        )

    def deduplicate(
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
        """Index the document unless a near-duplicate is stored; says which happened.  ``min_similarity`` and
        ``max_age`` as in ``query``, ``indexed_at`` as in ``index``; a candidate that cannot be verified still
        counts as a near-duplicate."""
        call = calls.deduplicate(
            doc_id, text, simhash, max_distance, limit, fingerprint_version, min_similarity, indexed_at, max_age
        )
        return self._run(call, timeout)

    def query_batch(self, queries: Iterable[dict[str, Any]], *, timeout: float | None = None) -> list[QueryOutcome]:
        """Many queries in one call: each item a dict of ``query``'s keyword arguments (text or simhash,
        max_distance, limit, fingerprint_version, min_similarity).  Outcomes in input order; a bad item is
        refused alone (``ok`` False, its ``violations`` naming the fields)."""
        return self._run(calls.query_batch(queries), timeout)

    def deduplicate_batch(
        self, documents: Iterable[dict[str, Any]], *, timeout: float | None = None
    ) -> list[DedupOutcome]:
        """Many ``deduplicate`` calls in one, decided in input order: each item a dict with doc_id and
        ``deduplicate``'s keyword arguments.  A document near an earlier one of the batch is not stored and
        names it, as if the items had been sent one by one.  Safe to retry."""
        return self._run(calls.deduplicate_batch(documents), timeout)

    def get(self, doc_id: str, *, timeout: float | None = None) -> int:
        """The stored fingerprint of doc_id; raises NotFound if there is none."""
        return self._run(calls.get(doc_id), timeout)

    def delete(self, doc_ids: Iterable[str], *, timeout: float | None = None) -> int:
        """Remove documents; returns how many existed."""
        return self._run(calls.delete(doc_ids), timeout)

    def stats(self, *, timeout: float | None = None) -> Stats:
        return self._run(calls.stats(), timeout)
