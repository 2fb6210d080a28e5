"""The SimHashIndex gRPC service: validate the request, fingerprint the text, ask the store, answer.

Handlers raise; status.py maps what they raise to a status code, in one table: a bad field is
INVALID_ARGUMENT naming it (also as a BadRequest field violation); an unknown id NOT_FOUND; an index or
fingerprint of another recipe FAILED_PRECONDITION; HBase failing UNAVAILABLE (never an empty hit list); a
passed deadline DEADLINE_EXCEEDED; unreadable stored data DATA_LOSS.

Handlers are coroutines on the server's event loop.  HBase work runs in threads (AsyncIndexStore); so does
fingerprinting a long text, which would otherwise hold the loop (and every other call) for milliseconds.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Executor
from typing import Any, TypeVar

import grpc

from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc
from simhash_schema import VersionMismatch
from simhash_server import metrics, tracing
from simhash_server.fingerprint import fingerprint, recipe_of, short_name
from simhash_server.fingerprint.parts import parts_work
from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.errors import DeadlineExceeded, InvalidArgument, Unavailable
from simhash_server.index.gc import GcReport, OrphanEstimate
from simhash_server.index.in_batch import Decision, Item, decide_in_order, refused_by_stored
from simhash_server.index.model import (
    MAX_DISTANCE,
    Document,
    Hit,
    Near,
    Probe,
    Query,
)
from simhash_server.index.request import Request
from simhash_server.rpc.dedup_order import DedupOrder
from simhash_server.rpc.limits import Limits
from simhash_server.rpc.requests import Made, Requests, check_deadline, hit_messages
from simhash_server.rpc.status import NotFound, abort, item_status

__all__ = ["SimHashIndexService"]


R = TypeVar("R")
# Texts up to this many characters are fingerprinted on the event loop (a fraction of a millisecond); longer ones in a
# worker thread, so that one long text does not stall every other call.
INLINE_TEXT_CHARS = 8_192


def _rpc(method: Callable[[Any, Any, float | None], Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """Run a handler with the caller's deadline; turn exceptions into status codes."""

    @functools.wraps(method)
    async def handler(self: SimHashIndexService, request: Any, context: grpc.aio.ServicerContext) -> R:
        remaining = context.time_remaining()
        deadline = None if remaining is None else time.monotonic() + remaining
        try:
            if remaining is not None and remaining <= 0:
                raise DeadlineExceeded("the deadline passed before the call started")
            if tracing.on():
                tracing.annotate(fingerprint_version=short_name(self.requests.version))
            return await method(self, request, deadline)
        except Exception as exc:  # every error ends the call with the status its class gets
            await abort(context, exc, method.__name__)
            raise  # abort() raises; this line is never reached

    return handler


class SimHashIndexService(pb_grpc.SimHashIndexServicer):
    def __init__(
        self, index: AsyncIndexStore, executor: Executor, limits: Limits | None = None, dedup_order: str = "auto"
    ) -> None:
        self.index = index
        self._executor = executor  # for long texts
        self.limits = limits or Limits()
        self.requests = Requests(self.limits, index)
        self.dedup_order = DedupOrder(dedup_order)  # whether Deduplicate asks before it claims
        self._open_error: Exception | None = None
        self._stats_cache: tuple[float, int, OrphanEstimate, GcReport | None] | None = None
        self._stats_lock = asyncio.Lock()

    # -- the index's state, kept by the health checker ---------------------------------------------------
    def set_open_error(self, error: Exception | None) -> None:
        self._open_error = error

    def _require_index(self) -> None:
        if isinstance(self._open_error, VersionMismatch):
            raise self._open_error
        if self._open_error is not None:
            raise Unavailable(f"the index is not reachable: {self._open_error}")

    @property
    def _stores_parts(self) -> bool:
        """Whether the index's recipe makes a text's parts with every sketch (v5)."""
        return recipe_of(self.requests.version).sketch.parts

    async def _off_loop_if_long(self, chars: int, work: Callable[..., R], *args: object, parts: bool = False) -> R:
        """``work(*args)``, which fingerprints ``chars`` characters (and, with ``parts``, the parts of those
        texts that verified queries look up: fingerprint/parts.py): in a worker thread when that is more than
        INLINE_TEXT_CHARS' worth, and in a span of its own while tracing."""
        weight = 1 + parts_work(self.requests.version) if parts else 1
        if not chars or not tracing.on():
            return await self._fingerprinting(round(chars * weight), work, *args)
        attributes = {"simhash.chars": chars, "simhash.fingerprint_version": short_name(self.requests.version)}
        with tracing.span("fingerprint", attributes):
            return await self._fingerprinting(round(chars * weight), work, *args)

    async def _fingerprinting(self, work_chars: int, work: Callable[..., R], *args: object) -> R:
        if work_chars <= INLINE_TEXT_CHARS:
            return work(*args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, tracing.bound(work), *args)

    async def _fingerprinted(self, request: Request, sketch: bool = True, parts: bool = False) -> Made:
        chars = len(request.text) if request.text is not None else 0
        # v5 fingerprints a text's parts for every sketch it makes, whether or not a query looks them up.
        made = parts or (sketch and self._stores_parts)
        return await self._off_loop_if_long(chars, self.requests.document_of, request, "", sketch, parts, parts=made)

    async def _query(
        self,
        fp: int,
        distance: int,
        limit: int | None,
        deadline: float | None,
        sketch: bytes,
        floor: float | None,
        max_age_ms: int | None = None,
        parts: tuple[int, ...] = (),
    ) -> tuple[list[Hit], int]:
        """Hits, and how many candidates fell below the floor (0 without one)."""
        self._require_index()
        query = Query(fp, distance, limit, max_age_ms, floor, sketch, parts)
        answer = (await self.index.query_each([query], deadline))[0]
        self._observe_answer(answer.hits, answer.below_floor, floor is not None)
        tracing.annotate(hits=len(answer.hits), below_similarity=answer.below_floor, verified=floor is not None)
        return answer.hits, answer.below_floor

    @staticmethod
    def _observe_answer(hits: list[Hit], below: int, verified: bool) -> None:
        if verified:
            metrics.BELOW_SIMILARITY.observe(below)
        metrics.QUERY_HITS.observe(len(hits))

    # -- RPCs ----------------------------------------------------------------------------------------------
    @_rpc
    async def Fingerprint(self, request: pb.FingerprintRequest, deadline: float | None):
        text = self.requests.text(request.text)
        version = self.requests.version
        fp = await self._off_loop_if_long(len(text), fingerprint, text, version)
        return pb.FingerprintResponse(simhash=fp.value, features=fp.features, fingerprint_version=version)

    @_rpc
    async def Index(self, request: pb.IndexRequest, deadline: float | None):
        checked = self.requests.checked(request, needs_id=True)
        fp, features, sketch, _ = await self._fingerprinted(checked)
        check_deadline(deadline)
        self._require_index()
        await self.index.index_many([Document(request.doc_id, fp, sketch, checked.indexed_at_ms)], deadline)
        return pb.IndexResponse(doc_id=request.doc_id, simhash=fp, features=features)

    @_rpc
    async def IndexBatch(self, request: pb.IndexBatchRequest, deadline: float | None):
        self.requests.check_batch_size(request.documents, "documents")
        tracing.annotate(batch_size=len(request.documents))
        chars = sum(len(item.text) for item in request.documents)
        outcomes, good = await self._off_loop_if_long(
            chars, self.requests.checked_documents, request, deadline, parts=self._stores_parts
        )
        if good:
            self._require_index()
            await self.index.index_many(good, deadline)
        return pb.IndexBatchResponse(outcomes=outcomes, indexed=len(good), rejected=len(outcomes) - len(good))

    @_rpc
    async def Query(self, request: pb.QueryRequest, deadline: float | None):
        checked = self.requests.checked(request, default_floor=self.index.recipe.query_floor)
        # Only a floor needs the sketch, and the parts whose candidates it checks (fingerprint/parts.py).
        fp, features, sketch, parts = await self._fingerprinted(checked, checked.verified, checked.looks_up_parts)
        check_deadline(deadline)
        floor, max_age = checked.min_similarity, checked.max_age_ms
        hits, below = await self._query(
            fp, checked.max_distance, checked.limit, deadline, sketch, floor, max_age, parts
        )
        return pb.QueryResponse(
            hits=hit_messages(hits, checked.verified), simhash=fp, features=features, below_similarity=below
        )

    @_rpc
    async def QueryBatch(self, request: pb.QueryBatchRequest, deadline: float | None):
        self.requests.check_batch_size(request.queries, "queries")
        tracing.annotate(batch_size=len(request.queries))
        chars = sum(len(item.text) for item in request.queries)
        check = functools.partial(self.requests.checked_items, default_floor=self.index.recipe.query_floor)
        # Verified text items are fingerprinted with their parts: counted as if every item were.
        items = await self._off_loop_if_long(chars, check, request.queries, "queries", deadline, parts=True)
        good = [item for item in items if not isinstance(item, Exception)]
        self._require_index()
        # The batch's queries are answered together (index/nearby.py): one set of drawer scans for all.
        queries = [
            Query(m.fingerprint, c.max_distance, c.limit, c.max_age_ms, c.min_similarity, m.sketch, m.parts)
            for c, m in good
        ]
        answers = iter(await self.index.query_each(queries, deadline) if queries else [])
        outcomes = []
        for item in items:
            if isinstance(item, Exception):
                outcomes.append(pb.QueryOutcome(status=item_status(item)))
                continue
            checked, (fp, features, _, _) = item
            answer = next(answers)
            hits, below = answer.hits, answer.below_floor
            self._observe_answer(hits, below, checked.verified)
            response = pb.QueryResponse(
                hits=hit_messages(hits, checked.verified), simhash=fp, features=features, below_similarity=below
            )
            outcomes.append(pb.QueryOutcome(status=item_status(), response=response))
        return pb.QueryBatchResponse(outcomes=outcomes)

    @_rpc
    async def DeduplicateBatch(self, request: pb.DeduplicateBatchRequest, deadline: float | None):
        self.requests.check_batch_size(request.documents, "documents")
        tracing.annotate(batch_size=len(request.documents))
        chars = sum(len(item.text) for item in request.documents)
        floor = self.index.recipe.dedup_floor
        check = functools.partial(self.requests.checked_items, needs_id=True, default_floor=floor)
        # Verified text items are fingerprinted with their parts: counted as if every item were.
        checked_items = await self._off_loop_if_long(chars, check, request.documents, "documents", deadline, parts=True)
        outcomes = [pb.DeduplicateOutcome() for _ in checked_items]
        good: list[tuple[int, Item, int | None, int]] = []  # (position, item, limit, features)
        for n, checked_item in enumerate(checked_items):
            if isinstance(checked_item, Exception):
                outcomes[n].status.CopyFrom(item_status(checked_item))
                continue
            checked, made = checked_item
            item = Item(
                request.documents[n].doc_id,
                made.fingerprint,
                made.sketch,
                checked.max_distance,
                checked.min_similarity,
                checked.indexed_at_ms,
                checked.max_age_ms,
                made.parts,
            )
            good.append((n, item, checked.limit, made.features))
        decisions = await self._decide_in_order([item for _, item, _, _ in good], deadline) if good else []
        for (n, item, limit, features), decision in zip(good, decisions, strict=True):
            response = pb.DeduplicateResponse(
                hits=hit_messages(decision.hits[:limit], item.floor is not None),
                stored=decision.stored,
                simhash=item.fingerprint,
                features=features,
                below_similarity=decision.below_floor,
            )
            outcomes[n] = pb.DeduplicateOutcome(status=item_status(), response=response)
        stored = sum(d.stored for d in decisions)
        return pb.DeduplicateBatchResponse(
            outcomes=outcomes, stored=stored, duplicates=len(good) - stored, rejected=len(outcomes) - len(good)
        )

    async def _near_items(self, items: list[Item], deadline: float | None) -> list[list[Near]]:
        """The stored documents near each item: its fingerprint's, and its parts' (with a floor only)."""
        probes = [
            Probe(i.fingerprint, i.max_distance, None, i.max_age_ms)
            if i.floor is None
            else Probe.verified(i.fingerprint, i.max_distance, None, i.max_age_ms, floor=i.floor)
            for i in items
        ]
        return await self.index.near_with_parts(probes, [i.parts for i in items], deadline)

    async def _decide_in_order(self, items: list[Item], deadline: float | None) -> list[Decision]:
        """Each item stored or not, in order, as if sent alone (index/in_batch.py).  Items that duplicate a
        stored document are refused on a first query; the others are asked again and stored under one claim
        on all their drawers (index/claims.py): a near-duplicate of any of them, sent to any server, waits
        until the batch has stored."""
        self._require_index()
        now_ms = int(time.time() * 1000)
        found: list[list[Near]] = [[] for _ in items]
        undecided = list(range(len(items)))
        if self.dedup_order.ask_first():  # items refused by what HBase holds need no claim (refused_by_stored)
            found = await self._near_items(items, deadline)
            refused = refused_by_stored(items, found, now_ms, self.index.recipe.part_rows)
            undecided = [n for n in undecided if not refused[n]]
        if not undecided:
            decisions = decide_in_order(items, found, now_ms, self.index.recipe.part_rows)
            self.dedup_order.record(len(items), len(items))
            return decisions
        # The claim covers the drawers of every fingerprint an item looks up, its parts' too: a near-duplicate
        # that one of them reaches shares a drawer with it, so they take turns (index/claims.py).
        claimed = [fp for n in undecided for fp in (items[n].fingerprint, *items[n].parts)]
        async with self.index.claimed(claimed, deadline) as held:
            asked = await self._near_items([items[n] for n in undecided], deadline)
            for n, near in zip(undecided, asked, strict=True):
                found[n] = near
            decisions = decide_in_order(items, found, now_ms, self.index.recipe.part_rows)
            keep = [
                Document(i.doc_id, i.fingerprint, i.sketch, i.indexed_at_ms)
                for i, d in zip(items, decisions, strict=True)
                if d.stored
            ]
            if keep:
                held.check_held()
                await self.index.index_many(keep, deadline)
        self.dedup_order.record(len(items) - len(keep), len(items))
        return decisions

    @_rpc
    async def Deduplicate(self, request: pb.DeduplicateRequest, deadline: float | None):
        # A text is a duplicate only when verified: at the floor the evaluation chose for this recipe.
        checked = self.requests.checked(request, needs_id=True, default_floor=self.index.recipe.dedup_floor)
        doc_id, floor, limit = request.doc_id, checked.min_similarity, checked.limit
        fp, features, sketch, parts = await self._fingerprinted(checked, parts=checked.looks_up_parts)
        check_deadline(deadline)

        # The document itself is not its own duplicate: a retry after a stored first attempt stores again
        # (an idempotent upsert) instead of reporting itself.  An unverified candidate (no sketch) counts as a
        # duplicate: nothing shows it is not one.
        async def ask() -> tuple[list[Hit], int]:
            found, below = await self._query(
                fp, checked.max_distance, None, deadline, sketch, floor, checked.max_age_ms, parts
            )
            return [h for h in found if h.doc_id != doc_id], below

        # A duplicate of a stored document is one whatever other calls do: answered without the claims.  A
        # document with none stored asks again and stores under the drawers' claim, so that of near-duplicates
        # arriving at once, on any server, exactly one is stored (index/claims.py, docs/dedup.md).  The claim
        # covers the parts' drawers too: a document one of them reaches shares a drawer with it.
        hits, below = await ask() if self.dedup_order.ask_first() else ([], 0)
        stored = False
        if not hits:
            async with self.index.claimed([fp, *parts], deadline) as held:
                hits, below = await ask()
                stored = not hits
                if stored:
                    held.check_held()
                    await self.index.index_many([Document(doc_id, fp, sketch, checked.indexed_at_ms)], deadline)
        self.dedup_order.record(0 if stored else 1, 1)
        return pb.DeduplicateResponse(
            hits=hit_messages(hits[:limit], floor is not None),
            stored=stored,
            simhash=fp,
            features=features,
            below_similarity=below,
        )

    @_rpc
    async def Get(self, request: pb.GetRequest, deadline: float | None):
        doc_id = self.requests.doc_id(request.doc_id)
        self._require_index()
        fp = await self.index.get(doc_id, deadline)
        if fp is None:
            raise NotFound(f"no document with doc_id {doc_id!r}")
        return pb.GetResponse(doc_id=doc_id, simhash=fp)

    @_rpc
    async def Delete(self, request: pb.DeleteRequest, deadline: float | None):
        if len(request.doc_ids) > self.limits.max_batch:
            raise InvalidArgument(
                "doc_ids",
                f"doc_ids has {len(request.doc_ids)} items, over the limit of {self.limits.max_batch} (max_batch)",
            )
        ids = [self.requests.doc_id(d, f"doc_ids[{n}]") for n, d in enumerate(request.doc_ids)]
        self._require_index()
        return pb.DeleteResponse(deleted=await self.index.delete(ids, deadline) if ids else 0)

    @_rpc
    async def Stats(self, request: pb.StatsRequest, deadline: float | None):
        self._require_index()
        async with self._stats_lock:  # one count at a time; others reuse it for 30 s
            if self._stats_cache is None or time.monotonic() - self._stats_cache[0] > 30:
                documents = await self.index.count_documents(deadline)
                orphans = await self.index.orphans(deadline)
                last_gc = await self.index.last_gc(deadline)
                self._stats_cache = (time.monotonic(), documents, orphans, last_gc)
            _, documents, orphans, last_gc = self._stats_cache
        meta = self.index.meta
        answer = pb.StatsResponse(
            documents=documents,
            fingerprint_version=meta.fingerprint_version if meta else self.requests.version,
            layout=meta.layout if meta else "",
            tables=[t.name for t in self.index.tables.all()],
            max_distance=MAX_DISTANCE,
            drawer_rows_estimate=orphans.drawer_rows,
            orphan_drawer_rows_estimate=orphans.orphan_rows,
            orphan_sample=orphans.sampled,
        )
        if last_gc is not None and last_gc.finished is not None:
            answer.top_fingerprints.extend(
                pb.FingerprintCount(simhash=int(fp, 16), documents=n) for fp, n in last_gc.top_fingerprints
            )
            answer.last_gc.FromNanoseconds(int(last_gc.finished * 1e9))
        if self.index.retention_seconds is not None:
            answer.retention.FromSeconds(self.index.retention_seconds)
        return answer
