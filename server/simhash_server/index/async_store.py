"""The index for asyncio callers (the gRPC server): IndexStore's operations, awaited.

Concurrent queries, and concurrent writes, share one batch of HBase calls, as in IndexStore.  Thrift calls
block, so they run in threads: a batch of queries or writes in its coalescer's lane threads, everything else
in the executor the caller gives
(docs/decisions.md#a-grpcaio-server-whose-concurrent-calls-share-hbase-calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from concurrent.futures import Executor
from typing import TypeVar

from simhash_schema import IndexMeta, IndexTables
from simhash_server import tracing
from simhash_server.fingerprint import Recipe
from simhash_server.index.claims import Claim
from simhash_server.index.coalesce import AsyncCoalescer
from simhash_server.index.errors import InvalidArgument
from simhash_server.index.gc import GcReport, OrphanEstimate, estimate_orphans, last_report
from simhash_server.index.model import (
    MAX_DISTANCE,
    VERIFY_MAX_DISTANCE,
    Document,
    Hit,
    Near,
    Probe,
    Query,
    Verified,
    check_doc_id,
    check_max_age,
    check_query,
    check_verified_query,
    keyed_documents,
    merged,
    part_probes,
    ranked,
    verified,
)
from simhash_server.index.store import IndexStore

__all__ = ["AsyncIndexStore"]

R = TypeVar("R")
log = logging.getLogger(__name__)


class AsyncIndexStore:
    """Awaitable reads and writes of one IndexStore; create and use it on one event loop."""

    def __init__(self, store: IndexStore, executor: Executor) -> None:
        self.store = store
        self._executor = executor
        self._nearby: AsyncCoalescer[Probe, list[Near]]
        self._writes: AsyncCoalescer[list[tuple[bytes, Document]], int]
        self._deletes: AsyncCoalescer[list[bytes], int]
        self._nearby, self._writes, self._deletes = store.coalescers(AsyncCoalescer)
        self._giving_back: set[asyncio.Future[object]] = set()  # claims being released, or taken to be

    @property
    def meta(self) -> IndexMeta | None:
        return self.store.meta

    @property
    def recipe(self) -> Recipe:
        return self.store.recipe

    @property
    def retention_seconds(self) -> int | None:
        return self.store.retention_seconds

    @property
    def tables(self) -> IndexTables:
        return self.store.tables

    def _in_thread(self, call: Callable[..., R], *args: object) -> asyncio.Future[R]:
        return asyncio.get_running_loop().run_in_executor(self._executor, tracing.bound(call), *args)

    async def _blocking(self, call: Callable[..., R], *args: object) -> R:
        return await self._in_thread(call, *args)

    # -- reads ----------------------------------------------------------------------------------------
    async def query(
        self,
        fp: int,
        max_distance: int = MAX_DISTANCE,
        limit: int | None = None,
        deadline: float | None = None,
        max_age_ms: int | None = None,
    ) -> list[Hit]:
        return (await self.query_each([Query(fp, max_distance, limit, max_age_ms)], deadline))[0].hits

    async def query_verified(
        self,
        fp: int,
        sketch: bytes,
        min_similarity: float,
        max_distance: int = VERIFY_MAX_DISTANCE,
        limit: int | None = None,
        deadline: float | None = None,
        max_age_ms: int | None = None,
    ) -> Verified:
        query = Query(fp, max_distance, limit, max_age_ms, min_similarity, sketch)
        return (await self.query_each([query], deadline))[0]

    async def near_each(self, probes: list[Probe], deadline: float | None = None) -> list[list[Near]]:
        """The stored documents near each probe, unranked and unverified (DeduplicateBatch decides itself), all
        in one batch call (one set of drawer scans, one fp2docs read) rather than spread over the batches of
        other callers."""
        return await self._nearby.submit_each(probes, deadline)

    async def near_with_parts(
        self, probes: list[Probe], parts: Sequence[tuple[int, ...]], deadline: float | None = None
    ) -> list[list[Near]]:
        """``near_each``, where each probe also looks up the fingerprints of its text's parts (the same probe at
        each): each document once, at its distance from the probe's own fingerprint (model.merged)."""
        if not any(parts):  # most calls: nothing to merge
            return await self.near_each(probes, deadline)
        each = iter(
            await self.near_each(
                [p for probe, ps in zip(probes, parts, strict=True) for p in part_probes(probe, ps)], deadline
            )
        )
        return [
            merged(probe.fingerprint, [next(each) for _ in range(1 + len(ps))]) if ps else next(each)
            for probe, ps in zip(probes, parts, strict=True)
        ]

    async def query_each(self, queries: Sequence[Query], deadline: float | None = None) -> list[Verified]:
        """The answer of each query (below_floor 0 without a floor), all in one batch call: one query, or a
        QueryBatch's."""
        probes: list[Probe] = []
        for q in queries:
            check_max_age(q.max_age_ms)
            if q.min_similarity is None:
                check_query(q.fingerprint, q.max_distance)
                if q.parts:
                    raise InvalidArgument("parts", "a query's parts are looked up only with min_similarity")
                probes.append(Probe(q.fingerprint, q.max_distance, q.limit, q.max_age_ms))
            else:
                check_verified_query(q.fingerprint, q.sketch, q.min_similarity, q.max_distance, q.parts)
                probes.append(
                    Probe.verified(q.fingerprint, q.max_distance, q.limit, q.max_age_ms, floor=q.min_similarity)
                )
        found = await self.near_with_parts(probes, [q.parts for q in queries], deadline)
        verifying: contextlib.AbstractContextManager[object] = contextlib.nullcontext()
        if tracing.on() and any(q.min_similarity is not None for q in queries):
            checked = sum(len(near) for q, near in zip(queries, found, strict=True) if q.min_similarity is not None)
            verifying = tracing.span("verify sketches", {"simhash.candidates": checked})
        with verifying:
            return [
                Verified(ranked(near, q.limit), 0)
                if q.min_similarity is None
                else verified(near, q.sketch, q.min_similarity, q.limit)
                for q, near in zip(queries, found, strict=True)
            ]

    async def get(self, doc_id: str, deadline: float | None = None) -> int | None:
        return await self._blocking(self.store.get, doc_id, deadline)

    async def sample_fingerprints(self, count: int, deadline: float | None = None) -> list[int]:
        return await self._blocking(functools.partial(self.store.sample_fingerprints, count, deadline=deadline))

    async def count_documents(self, deadline: float | None = None) -> int:
        return await self._blocking(self.store.count_documents, deadline)

    async def orphans(self, deadline: float | None = None) -> OrphanEstimate:
        return await self._blocking(functools.partial(estimate_orphans, self.store, deadline=deadline))

    async def last_gc(self, deadline: float | None = None) -> GcReport | None:
        return await self._blocking(last_report, self.store, deadline)

    async def ping(self) -> None:
        await self._blocking(self.store.ping)

    async def read_retention(self, deadline: float | None = None) -> int | None:
        return await self._blocking(self.store.read_retention, deadline)

    # -- writes ---------------------------------------------------------------------------------------
    async def index_many(self, items: Iterable[Document | tuple[str, int]], deadline: float | None = None) -> int:
        documents = keyed_documents(items, self.store.retention_seconds)
        if documents:
            await self._writes.submit(documents, len(documents), deadline)
        return len(documents)

    async def delete(self, doc_ids: Sequence[str], deadline: float | None = None) -> int:
        docs = list(dict.fromkeys(check_doc_id(d) for d in doc_ids))
        return await self._deletes.submit(docs, len(docs), deadline) if docs else 0

    @contextlib.asynccontextmanager
    async def claimed(self, fp: int | Sequence[int], deadline: float | None = None) -> AsyncIterator[Claim]:
        """Deduplicate's turn among calls on near-duplicates, on every server (claims.py): held inside."""
        taking = self._in_thread(self.store.claim, fp, deadline)
        try:
            held = await asyncio.shield(taking)
        except asyncio.CancelledError:  # the caller left; the claim is still being taken: give it back after
            self._note(taking)
            taking.add_done_callback(self._release_when_taken)
            raise
        try:
            yield held
        finally:
            # Not awaited: the answer need not wait for it (what it guards is stored by now); near-duplicate
            # calls elsewhere wait until it is done.  A release lost to a crash lapses with the claims' TTL.
            self._give_back(held)

    def _release_when_taken(self, taking: asyncio.Future[Claim]) -> None:
        if not taking.cancelled() and taking.exception() is None:
            self._give_back(taking.result())

    def _give_back(self, held: Claim) -> None:
        self._note(self._in_thread(self.store.release, held))

    def _note(self, future: asyncio.Future) -> None:
        self._giving_back.add(future)
        future.add_done_callback(self._given)

    def _given(self, future: asyncio.Future) -> None:
        self._giving_back.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.warning("a deduplication claim was not given back (it lapses with the lease): %r", future.exception())

    async def given_back(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for the claims still being given back, those of callers that left
        while theirs were taken included, so that a server that stops leaves no claim to lapse (its near
        duplicates elsewhere would wait out the lease); how many are still out."""
        end = time.monotonic() + timeout
        while (out := {f for f in self._giving_back if not f.done()}) and (left := end - time.monotonic()) > 0:
            await asyncio.wait(out, timeout=left)
        return sum(not f.done() for f in self._giving_back)

    def close(self) -> None:
        self._nearby.close()
        self._writes.close()
        self._deletes.close()
        self.store.close()
