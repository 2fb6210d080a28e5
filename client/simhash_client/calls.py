"""What both clients send and what they make of the answers: each API call as a request message and a
function from the response to the client's types.  SimHashClient and AsyncSimHashClient only carry these
over their channels (one blocking, one asyncio), so the two cannot drift apart."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

import grpc

from simhash_client.errors import SimHashError, status_violations
from simhash_client.types import (
    DedupOutcome,
    DedupResult,
    FingerprintResult,
    Hit,
    IndexOutcome,
    QueryOutcome,
    Stats,
    parse_simhash,
)
from simhash_index.v1 import simhash_index_pb2 as pb

__all__ = [
    "Age",
    "Call",
    "When",
    "backoff",
    "deduplicate",
    "deduplicate_batch",
    "delete",
    "fingerprint",
    "get",
    "index",
    "index_batch",
    "query",
    "query_batch",
    "retryable",
    "stats",
]

T = TypeVar("T")
Age = timedelta | float  # a max_age: a timedelta, or seconds
When = datetime | float  # an indexed_at: an aware datetime, or Unix seconds
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str  # the SimHashIndex method, as the stub names it
    request: Any
    answer: Callable[[Any], T]  # response message -> what the client returns


def retryable(code: grpc.StatusCode) -> bool:
    """Every call is idempotent (``index`` is an upsert; ``deduplicate`` never reports a document as its own
    duplicate), so whatever a server refused as UNAVAILABLE (stopping, or HBase away) or RESOURCE_EXHAUSTED
    (at its limit for the call's method) is safe to send again."""
    return code in _RETRYABLE


def backoff(attempt: int, error: SimHashError | None = None) -> float:
    """Seconds before retry number ``attempt`` + 1: exponential from 0.1 s, capped at 2 s, jittered; never
    shorter than the delay the server asked for (``ResourceExhausted.retry_after``)."""
    asked = getattr(error, "retry_after", None) or 0.0
    return max(min(0.1 * 2**attempt, 2.0) * random.uniform(0.5, 1.0), asked)


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


def _search_options(
    request: Any, max_distance: int | None, min_similarity: float | None, max_age: Age | None = None
) -> None:
    """The optional fields Query and Deduplicate share; unset stays unset (the server's defaults)."""
    if max_distance is not None:
        request.max_distance = max_distance
    if min_similarity is not None:
        request.min_similarity = min_similarity
    if max_age is not None:
        seconds = max_age.total_seconds() if isinstance(max_age, timedelta) else float(max_age)
        if not seconds > 0:
            raise ValueError(f"max_age must be positive, got {max_age!r}")
        request.max_age.FromMilliseconds(round(seconds * 1000))


def _dated(request: Any, indexed_at: When | None) -> None:
    """``indexed_at`` (an aware datetime, or Unix seconds) into the request; unset: the server's now."""
    if indexed_at is None:
        return
    if isinstance(indexed_at, datetime):
        if indexed_at.tzinfo is None:
            raise ValueError("indexed_at must be an aware datetime (say its timezone), or Unix seconds")
        indexed_at = indexed_at.timestamp()
    request.indexed_at.FromMilliseconds(round(float(indexed_at) * 1000))


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


def fingerprint(text: str) -> Call[FingerprintResult]:
    return Call(
        "Fingerprint",
        pb.FingerprintRequest(text=text),
        lambda r: FingerprintResult(r.simhash, r.features, r.fingerprint_version),
    )


def index(
    doc_id: str, text: str | None, simhash: int | str | None, version: str | None, indexed_at: When | None = None
) -> Call[int]:
    request = pb.IndexRequest(doc_id=doc_id)
    _content(request, text, simhash, version)
    _dated(request, indexed_at)
    return Call("Index", request, lambda r: r.simhash)


def index_batch(documents: Iterable[dict[str, Any]]) -> Call[list[IndexOutcome]]:
    request = pb.IndexBatchRequest()
    for doc in documents:
        item = request.documents.add(doc_id=doc["doc_id"])
        _content(item, doc.get("text"), doc.get("simhash"), doc.get("fingerprint_version"))
        _dated(item, doc.get("indexed_at"))
    return Call(
        "IndexBatch",
        request,
        lambda r: [
            IndexOutcome(o.doc_id, o.code == 0, o.simhash if o.code == 0 else None, o.error or None) for o in r.outcomes
        ],
    )


def _search_request(request: Any, item: dict[str, Any]) -> None:
    """A batch item's dict (the keyword arguments of ``query``/``deduplicate``) into its request message."""
    _content(request, item.get("text"), item.get("simhash"), item.get("fingerprint_version"))
    _search_options(request, item.get("max_distance"), item.get("min_similarity"), item.get("max_age"))
    request.limit = item.get("limit", 0)


def _dedup_result(r: pb.DeduplicateResponse) -> DedupResult:
    return DedupResult(r.stored, tuple(_hits(r.hits)), r.simhash, r.below_similarity)


def query_batch(queries: Iterable[dict[str, Any]]) -> Call[list[QueryOutcome]]:
    request = pb.QueryBatchRequest()
    for item in queries:
        _search_request(request.queries.add(), item)

    def answer(r: pb.QueryBatchResponse) -> list[QueryOutcome]:
        return [
            QueryOutcome(True, tuple(_hits(o.response.hits)), o.response.simhash)
            if o.status.code == 0
            else QueryOutcome(False, error=o.status.message, violations=status_violations(o.status))
            for o in r.outcomes
        ]

    return Call("QueryBatch", request, answer)


def deduplicate_batch(documents: Iterable[dict[str, Any]]) -> Call[list[DedupOutcome]]:
    request = pb.DeduplicateBatchRequest()
    for item in documents:
        sent = request.documents.add(doc_id=item["doc_id"])
        _search_request(sent, item)
        _dated(sent, item.get("indexed_at"))

    def answer(r: pb.DeduplicateBatchResponse) -> list[DedupOutcome]:
        return [
            DedupOutcome(sent.doc_id, True, _dedup_result(o.response))
            if o.status.code == 0
            else DedupOutcome(sent.doc_id, False, error=o.status.message, violations=status_violations(o.status))
            for sent, o in zip(request.documents, r.outcomes, strict=True)
        ]

    return Call("DeduplicateBatch", request, answer)


def query(
    text: str | None,
    simhash: int | str | None,
    max_distance: int | None,
    limit: int,
    version: str | None,
    min_similarity: float | None,
    max_age: Age | None = None,
) -> Call[list[Hit]]:
    request = pb.QueryRequest(limit=limit)
    _content(request, text, simhash, version)
    _search_options(request, max_distance, min_similarity, max_age)
    return Call("Query", request, lambda r: _hits(r.hits))


def deduplicate(
    doc_id: str,
    text: str | None,
    simhash: int | str | None,
    max_distance: int | None,
    limit: int,
    version: str | None,
    min_similarity: float | None,
    indexed_at: When | None = None,
    max_age: Age | None = None,
) -> Call[DedupResult]:
    request = pb.DeduplicateRequest(doc_id=doc_id, limit=limit)
    _content(request, text, simhash, version)
    _search_options(request, max_distance, min_similarity, max_age)
    _dated(request, indexed_at)
    return Call("Deduplicate", request, _dedup_result)


def get(doc_id: str) -> Call[int]:
    return Call("Get", pb.GetRequest(doc_id=doc_id), lambda r: r.simhash)


def delete(doc_ids: Iterable[str]) -> Call[int]:
    return Call("Delete", pb.DeleteRequest(doc_ids=list(doc_ids)), lambda r: r.deleted)


def stats() -> Call[Stats]:
    return Call(
        "Stats",
        pb.StatsRequest(),
        _stats,
    )


def _stats(r: pb.StatsResponse) -> Stats:
    return Stats(
        r.documents,
        r.fingerprint_version,
        r.layout,
        tuple(r.tables),
        r.max_distance,
        r.drawer_rows_estimate,
        r.orphan_drawer_rows_estimate,
        r.orphan_sample,
        tuple((f.simhash, f.documents) for f in r.top_fingerprints),
        r.last_gc.ToNanoseconds() / 1e9 if r.HasField("last_gc") else None,
        r.retention.ToSeconds() if r.HasField("retention") else None,
    )
