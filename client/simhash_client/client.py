"""SimHashClient: the Python face of the SimHashIndex gRPC API."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import grpc

from simhash_client.errors import SimHashError, from_rpc_error
from simhash_client.types import DedupResult, FingerprintResult, Hit, IndexOutcome, Stats, parse_simhash
from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc

__all__ = ["SimHashClient"]

T = TypeVar("T")
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE}


class SimHashClient:
    """A connection to a simhash-index server.

    >>> with SimHashClient("127.0.0.1:50051") as client:
    ...     result = client.deduplicate("doc-1", text="...")

    Every call is idempotent (``index`` is an upsert; ``deduplicate`` never reports a document as its own
    duplicate), so every call is retried on UNAVAILABLE, ``retries`` times with jittered exponential backoff.
    Errors raise subclasses of ``simhash_client.errors.SimHashError``.

    Security: ``tls=True`` (or any of ``root_certificates``, ``client_certificate``/``client_key``, all PEM
    bytes) makes a TLS channel; ``token`` is sent as a bearer token, as call credentials over TLS (and, for
    a plaintext channel, which gRPC never gives call credentials, as the same ``authorization`` header).
    """

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
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, got {timeout}")
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        if (client_certificate is None) != (client_key is None):
            raise ValueError("client_certificate and client_key go together")
        self.target, self.timeout, self.retries = target, timeout, retries
        self._metadata: tuple[tuple[str, str], ...] = ()
        if credentials is None and (tls or root_certificates or client_certificate):
            credentials = grpc.ssl_channel_credentials(root_certificates, client_key, client_certificate)
        if token is not None:
            if not token or any(c.isspace() for c in token):
                raise ValueError("token must be non-empty, without whitespace")
            if credentials is not None:
                credentials = grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(token))
            else:
                self._metadata = (("authorization", f"Bearer {token}"),)
        opts = [("grpc.max_receive_message_length", 64 * 1024 * 1024), *options]
        self._channel = (
            grpc.secure_channel(target, credentials, opts)
            if credentials is not None
            else grpc.insecure_channel(target, opts)
        )
        self._stub = pb_grpc.SimHashIndexStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> SimHashClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ----------------------------------------------------------------------------------------
    def _call(self, method: Callable[..., T], request: Any, timeout: float | None) -> T:
        deadline = time.monotonic() + (timeout or self.timeout)
        for attempt in range(self.retries + 1):
            try:
                return method(request, timeout=max(deadline - time.monotonic(), 0.001), metadata=self._metadata)
            except grpc.RpcError as exc:
                error = from_rpc_error(exc)
                backoff = min(0.1 * 2**attempt, 2.0) * random.uniform(0.5, 1.0)
                if error.code not in _RETRYABLE or attempt == self.retries or time.monotonic() + backoff >= deadline:
                    raise error from None
                time.sleep(backoff)
        raise SimHashError("unreachable")  # pragma: no cover

    @staticmethod
    def _content(request: Any, text: str | None, simhash: int | str | None, version: str | None) -> None:
        if text is not None and simhash is not None:
            raise ValueError("give either text= or simhash=, not both")
        if text is None and simhash is None:
            raise ValueError("text= or simhash= is required")
        if text is not None:
            request.text = text
        else:
            request.simhash = parse_simhash(simhash)  # type: ignore[arg-type]
            if version:
                request.fingerprint_version = version

    @staticmethod
    def _search_options(request: Any, max_distance: int | None, min_similarity: float | None) -> None:
        """The optional fields Query and Deduplicate share; unset stays unset (the server's defaults)."""
        if max_distance is not None:
            request.max_distance = max_distance
        if min_similarity is not None:
            request.min_similarity = min_similarity

    @staticmethod
    def _hits(hits: Iterable[pb.Hit]) -> list[Hit]:
        verified = {pb.VERIFICATION_VERIFIED: True, pb.VERIFICATION_UNVERIFIED: False}
        return [
            Hit(
                h.doc_id,
                h.simhash,
                h.distance,
                h.similarity if h.HasField("similarity") else None,
                verified.get(h.verification),
            )
            for h in hits
        ]

    # -- the API -------------------------------------------------------------------------------------------
    def fingerprint(self, text: str, *, timeout: float | None = None) -> FingerprintResult:
        r = self._call(self._stub.Fingerprint, pb.FingerprintRequest(text=text), timeout)
        return FingerprintResult(r.simhash, r.features, r.fingerprint_version)

    def index(
        self,
        doc_id: str,
        *,
        text: str | None = None,
        simhash: int | str | None = None,
        fingerprint_version: str | None = None,
        timeout: float | None = None,
    ) -> int:
        """Upsert one document; returns its fingerprint."""
        request = pb.IndexRequest(doc_id=doc_id)
        self._content(request, text, simhash, fingerprint_version)
        return self._call(self._stub.Index, request, timeout).simhash

    def index_batch(self, documents: Iterable[dict[str, Any]], *, timeout: float | None = None) -> list[IndexOutcome]:
        """Upsert many: each item a dict with doc_id and text or simhash.  Outcomes in input order."""
        request = pb.IndexBatchRequest()
        for doc in documents:
            item = request.documents.add(doc_id=doc["doc_id"])
            self._content(item, doc.get("text"), doc.get("simhash"), doc.get("fingerprint_version"))
        r = self._call(self._stub.IndexBatch, request, timeout)
        return [
            IndexOutcome(o.doc_id, o.code == 0, o.simhash if o.code == 0 else None, o.error or None) for o in r.outcomes
        ]

    def query(
        self,
        *,
        text: str | None = None,
        simhash: int | str | None = None,
        max_distance: int | None = None,
        limit: int = 0,
        fingerprint_version: str | None = None,
        min_similarity: float | None = None,
        timeout: float | None = None,
    ) -> list[Hit]:
        """Stored documents within max_distance (0..3, default 3), closest first.

        With ``min_similarity`` (text only) each candidate is checked against its stored sketch and kept if
        its estimated Jaccard similarity reaches the floor (max_distance then 0..8, default 8)."""
        request = pb.QueryRequest(limit=limit)
        self._content(request, text, simhash, fingerprint_version)
        self._search_options(request, max_distance, min_similarity)
        return self._hits(self._call(self._stub.Query, request, timeout).hits)

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
        timeout: float | None = None,
    ) -> DedupResult:
        """Index the document unless a near-duplicate is stored; says which happened.  ``min_similarity`` as
        in ``query``; a candidate that cannot be verified still counts as a near-duplicate."""
        request = pb.DeduplicateRequest(doc_id=doc_id, limit=limit)
        self._content(request, text, simhash, fingerprint_version)
        self._search_options(request, max_distance, min_similarity)
        r = self._call(self._stub.Deduplicate, request, timeout)
        return DedupResult(r.stored, tuple(self._hits(r.hits)), r.simhash, r.below_similarity)

    def get(self, doc_id: str, *, timeout: float | None = None) -> int:
        """The stored fingerprint of doc_id; raises NotFound if there is none."""
        return self._call(self._stub.Get, pb.GetRequest(doc_id=doc_id), timeout).simhash

    def delete(self, doc_ids: Iterable[str], *, timeout: float | None = None) -> int:
        """Remove documents; returns how many existed."""
        return self._call(self._stub.Delete, pb.DeleteRequest(doc_ids=list(doc_ids)), timeout).deleted

    def stats(self, *, timeout: float | None = None) -> Stats:
        r = self._call(self._stub.Stats, pb.StatsRequest(), timeout)
        return Stats(r.documents, r.fingerprint_version, r.layout, tuple(r.tables), r.max_distance)
