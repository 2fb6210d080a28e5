"""Steps 6 and 7: drawer keys -> HBase rows -> hits.  Every read and write of the index goes through here.

Writes go through happybase (Thrift1 ``mutateRows``, one call per table per batch); queries through lookup.py
(drawer scans over Thrift2, scans.py).  Concurrent queries, and concurrent writes, share their HBase calls
(coalesce.py): under load, one scan per region answers many queries (docs/decisions.md has the figures).

Tables (see simhash_schema.tables, row codecs in keys.py): drawers (13-byte keys, empty value), fp2docs
(fingerprint -> one column per document id, whose value is the document's verification sketch, empty for a
document indexed by fingerprint only), docs (document id -> fingerprint, the commit record of an index
operation).  Keeping the sketch beside the id means a verified query reads no more rows than an unverified one.

Writes follow the order of writes.py, which keeps every answer right when a writer dies between steps; drawer
rows whose fingerprint has no documents left are orphans that queries skip, until ``simhash-index gc``
(gc.py) deletes them.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import happybase

from simhash_schema import (
    IndexMeta,
    IndexTables,
    SchemaError,
    VersionMismatch,
    connect,
    index_tables,
)
from simhash_server import tracing
from simhash_server.fingerprint import FINGERPRINT_VERSION, Recipe, recipe_of
from simhash_server.index.batches import delete_cells, send_plan
from simhash_server.index.claims import Claim, claim, new_owner, release
from simhash_server.index.coalesce import Coalescer
from simhash_server.index.config import StoreConfig
from simhash_server.index.errors import StoreError, Unavailable
from simhash_server.index.keys import fingerprint_of_row, fingerprint_row
from simhash_server.index.lookup import NearLookup
from simhash_server.index.meta import check_meta, meta_record, missing_tables, retention_of
from simhash_server.index.model import (
    MAX_DISTANCE,
    VERIFY_MAX_DISTANCE,
    Document,
    Hit,
    Near,
    Probe,
    Verified,
    check_doc_id,
    check_fingerprint,
    check_max_age,
    check_query,
    check_verified_query,
    keyed_documents,
    ranked,
    verified,
)
from simhash_server.index.pool import ConnectionPool, close_quietly
from simhash_server.index.scans import DrawerScans, count_rows, row_keys
from simhash_server.index.writes import (
    FP_COLUMN,
    Record,
    Step,
    delete_steps,
    doc_stamps,
    index_steps,
    new_entry,
    plan_steps,
    read_record,
    settle,
)
from simhash_server.metrics import BATCH_CALLS

__all__ = ["IndexStore", "StoreConfig", "check_meta"]  # check_meta: index/meta.py's, as before

log = logging.getLogger(__name__)


C = TypeVar("C")
R = TypeVar("R")
_TIE_RETRIES = 5  # writes again at a later timestamp when another writer of an id picked the same one


class IndexStore:
    """One index in HBase.  Thread-safe; open it once per process and share it."""

    def __init__(self, config: StoreConfig | None = None, tables: IndexTables | None = None) -> None:
        self.config = config = config or StoreConfig()
        self.tables = tables or index_tables(config.table_prefix)
        self._names = {
            "drawers": self.tables.drawers.name.encode(),
            "fp2docs": self.tables.fp2docs.name.encode(),
            "docs": self.tables.docs.name.encode(),
            "claims": self.tables.claims.name.encode(),
        }
        self.thrift1: ConnectionPool[happybase.Connection] = ConnectionPool(
            "thrift1",
            lambda: happybase.Connection(config.host, config.thrift_port, timeout=config.timeout_ms),
            close_quietly,
            config.pool_size,
            config.retries,
        )
        self.thrift2: ConnectionPool[Any] = ConnectionPool(
            "thrift2",
            lambda: connect(config.host, config.thrift2_port, config.timeout_ms),
            close_quietly,
            config.pool_size,
            config.retries,
        )
        self.scans = DrawerScans(self.thrift2, self._names["drawers"])
        self.lookup = NearLookup(self.scans, self.thrift2, self._names["fp2docs"])
        self._settling = ThreadPoolExecutor(8, thread_name_prefix="writes")  # a write's last step beside its check
        self._nearby: Coalescer[Probe, list[Near]]
        self._writes: Coalescer[list[tuple[bytes, Document]], int]
        self._deletes: Coalescer[list[bytes], int]
        self._nearby, self._writes, self._deletes = self.coalescers(Coalescer)
        self.meta: IndexMeta | None = None
        self.retention_seconds: int | None = None  # read by open() and ping()
        self.recipe: Recipe = recipe_of(config.fingerprint_version or FINGERPRINT_VERSION)  # until open() reads it
        self.lookup.part_rows = self.recipe.part_rows

    def coalescers(self, kind: Callable[..., C]) -> tuple[C, C, C]:
        """The query, write and delete coalescers over this store's batch calls, of ``kind`` (Coalescer for
        threads, AsyncCoalescer for an event loop), sized by the config."""
        config, near_many = self.config, self.lookup.near_many
        return (
            kind(near_many, config.batch_queries, config.query_lanes, BATCH_CALLS.labels("queries").observe),
            kind(self.write_many, config.batch_documents, config.write_lanes, BATCH_CALLS.labels("writes").observe),
            kind(self.delete_many, config.batch_documents, config.write_lanes, BATCH_CALLS.labels("deletes").observe),
        )

    # -- lifecycle ------------------------------------------------------------------------------------
    def open(self) -> IndexMeta:
        """Check the tables exist; adopt the fingerprint version the index records (a new index records the
        configured one, or the newest)."""

        def check(client: Any) -> IndexMeta:
            missing = missing_tables(client, self.tables)
            if missing:
                raise SchemaError(f"tables missing: {', '.join(missing)}; run `simhash-index schema apply`")
            return self._meta_record(client)

        meta = self._adopt(self.thrift2.run(check))
        self.read_retention()
        return meta

    def read_retention(self, deadline: float | None = None) -> int | None:
        """Learn the index's retention (meta.retention_of).  A table's settings come from the HMaster, which
        queries and writes do not need: while it cannot answer, the last retention learnt stays, and serving
        goes on (a warning says so)."""
        try:
            self.retention_seconds = self.thrift2.run(lambda c: retention_of(c, self.tables), deadline=deadline)
        except StoreError as exc:
            log.warning("cannot read the index's retention, keeping %s: %s", self.retention_seconds, exc)
        return self.retention_seconds

    def _meta_record(self, client: Any) -> IndexMeta:
        return meta_record(client, self.tables, self.config.fingerprint_version or FINGERPRINT_VERSION)

    def _adopt(self, meta: IndexMeta) -> IndexMeta:
        if self.meta is not None and meta != self.meta:
            raise VersionMismatch(f"the index's meta record changed from {self.meta} to {meta}: restart the server")
        self.recipe = check_meta(meta, self.config.fingerprint_version)
        self.lookup.part_rows = self.recipe.part_rows
        self.meta = meta
        return meta

    def close(self) -> None:
        self._settling.shutdown(wait=False, cancel_futures=True)
        self.thrift1.close()
        self.thrift2.close()

    def __enter__(self) -> IndexStore:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------------------------------
    def index(self, doc_id: str, fp: int) -> None:
        self.index_many([(doc_id, fp)])

    def index_many(self, items: Iterable[Document | tuple[str, int]], deadline: float | None = None) -> int:
        """Upsert documents; the last entry wins for a repeated id.  Returns the number of documents.

        A document given without a sketch replaces any sketch stored for it: it can no longer be verified.
        Concurrent calls are written together (one batch of HBase calls); each returns once its own
        documents are stored."""
        documents = keyed_documents(items, self.retention_seconds)
        if not documents:
            return 0
        self._writes.submit(documents, len(documents), deadline)
        return len(documents)

    def write_many(self, calls: list[list[tuple[bytes, Document]]], deadline: float | None) -> list[int]:
        """One batch of writes for the (row key, document) pairs of several calls (later calls win for a
        repeated id); callers reach it through a coalescer."""
        final: dict[bytes, int] = {}
        sketches: dict[bytes, bytes] = {}
        seen: dict[bytes, int | None] = {}
        for documents in calls:
            for key, doc in documents:
                final[key] = doc.fingerprint
                sketches[key] = doc.sketch
                seen[key] = doc.indexed_at_ms

        def steps(old: dict[bytes, Record], entry: bytes, now: int) -> list[Step]:
            return index_steps({doc: final[doc] for doc in old}, sketches, old, entry, now, self.recipe.part_rows)

        self._guarded(list(final), steps, deadline, seen=seen)
        return [len(documents) for documents in calls]

    def delete(self, doc_ids: Sequence[str], deadline: float | None = None) -> int:
        """Remove documents; returns how many existed.  Unknown ids are not an error.  Concurrent calls are
        written together, as index_many's are."""
        docs = list(dict.fromkeys(check_doc_id(d) for d in doc_ids))
        return self._deletes.submit(docs, len(docs), deadline) if docs else 0

    def delete_many(self, calls: list[list[bytes]], deadline: float | None) -> list[int]:
        """One batch of deletes for the doc keys of several calls; each call counts the documents that existed
        of its own, a document in two calls counting for the first.  Callers reach it through a coalescer."""
        docs = list(dict.fromkeys(doc for keys in calls for doc in keys))
        old = self._records(docs, deadline)
        live = {doc: record for doc, record in old.items() if record.fp is not None}
        if live:
            self._guarded(list(live), lambda records, entry, now: delete_steps(records, entry, now), deadline, old)
        counted: set[bytes] = set()
        existed = []
        for keys in calls:
            mine = {doc for doc in keys if doc in live} - counted
            counted |= mine
            existed.append(len(mine))
        return existed

    def _guarded(
        self,
        docs: list[bytes],
        steps: Callable[[dict[bytes, Record], bytes, int], list[Step]],
        deadline: float | None,
        old: dict[bytes, Record] | None = None,
        seen: dict[bytes, int | None] | None = None,
    ) -> None:
        """Write ``steps`` for the docs rows ``docs``, each document's cells at its time (``seen``, default:
        now), so that concurrent writers of the same ids, here or on another replica, leave one consistent
        document each (writes.py: timestamps, entries, settle).

        The docs rows are read again once their step is written, beside the steps after it."""
        before = self._records(docs, deadline) if old is None else old
        before = {doc: before[doc] for doc in docs}
        entry = new_entry(int(time.time() * 1000))
        seen = dict(seen or {})
        floor = before
        for attempt in range(_TIE_RETRIES):
            now = int(time.time() * 1000)
            stamps = doc_stamps(floor, seen, now, spread=8 * attempt)
            plan = plan_steps(steps, before, entry, stamps, now)
            split = 1 + max(n for n, (_, step) in enumerate(plan) if step.table == "docs")
            self.write_plan(plan[:split], deadline)
            rest = self._settling.submit(self.write_plan, plan[split:], deadline) if plan[split:] else None
            try:
                after = self._records(docs, deadline)
            finally:
                if rest is not None:
                    rest.result()
            settled = settle(before, after, entry, stamps)
            if settled.doomed:
                self._delete_cells("fp2docs", settled.doomed, deadline)
            if not settled.tie and not settled.masked:
                return
            seen.update(dict.fromkeys(settled.masked))  # hidden by a later delete: written at the present
            floor = after
        raise Unavailable(f"{len(docs)} documents' writes kept colliding with other writers of the same ids; retry")

    def write_steps(self, steps: Sequence[Step], deadline: float | None, stamp: int | None = None) -> None:
        """Send the steps in order, every cell at ``stamp`` (None: HBase's clock).  Tests send part of a call's
        steps, as a writer killed between them would have."""
        self.write_plan([(stamp, step) for step in steps], deadline)

    def write_plan(self, plan: Sequence[tuple[int | None, Step]], deadline: float | None) -> None:
        """Send the steps in order (writes.py says why the order matters), each at its timestamp (None: HBase's
        clock); a retry repeats them all."""
        self.thrift1.run(
            lambda conn: send_plan(conn, self._names, plan, self.config.wal),
            deadline=deadline,
            what="write",
            attributes={"simhash.steps": len(plan)},
        )

    def _delete_cells(self, table: str, cells: list[tuple[bytes, bytes, int]], deadline: float | None) -> None:
        self.thrift1.run(
            lambda conn: delete_cells(conn, self._names[table], cells, self.config.wal),
            deadline=deadline,
            what=f"delete {table}",
            attributes={"simhash.rows": len(cells)},
        )

    # -- reads ----------------------------------------------------------------------------------------
    def claim(self, fp: int | Sequence[int], deadline: float | None = None) -> Claim:
        """Wait for, then hold, the deduplication claims of ``fp``'s drawers, or of every fingerprint's of a
        batch (claims.py)."""
        with tracing.span("claim", {"simhash.fingerprints": 1 if isinstance(fp, int) else len(fp)}):
            return claim(self._claims_call, self._names["claims"], fp, new_owner(), deadline)

    def release(self, held: Claim) -> None:
        with tracing.span("release claim", {"simhash.rows": len(held.rows)}):
            release(self._claims_call, self._names["claims"], held)

    def _claims_call(self, call: Callable[[Any], R], *, deadline: float | None = None) -> R:
        return self.thrift2.run(
            call, deadline=deadline, what="claims", attributes={"hbase.table": self._names["claims"].decode()}
        )

    def get(self, doc_id: str, deadline: float | None = None) -> int | None:
        doc = check_doc_id(doc_id)
        return self._stored_fingerprints([doc], deadline).get(doc)

    def _records(self, docs: list[bytes], deadline: float | None) -> dict[bytes, Record]:
        """The docs rows' records, with every cell's timestamp (writes.py)."""

        def read(conn: happybase.Connection) -> list[tuple[bytes, dict[bytes, tuple[bytes, int]]]]:
            return conn.table(self._names["docs"]).rows(docs, columns=[b"d"], include_timestamp=True)

        rows = self.thrift1.run(read, deadline=deadline, what="rows docs", attributes={"simhash.rows": len(docs)})
        found = {key: read_record(cells) for key, cells in rows}
        return {doc: found.get(doc, Record()) for doc in docs}

    def _stored_fingerprints(self, docs: list[bytes], deadline: float | None) -> dict[bytes, int]:
        def read(conn: happybase.Connection) -> list[tuple[bytes, dict[bytes, bytes]]]:
            return conn.table(self._names["docs"]).rows(docs, columns=[FP_COLUMN])

        rows = self.thrift1.run(read, deadline=deadline, what="rows docs", attributes={"simhash.rows": len(docs)})
        return {key: fingerprint_of_row(data[FP_COLUMN]) for key, data in rows if FP_COLUMN in data}

    def ping(self) -> None:
        """Raise unless HBase answers and the index's meta record still names what it was opened with (the
        health check; a server started while HBase was down adopts the index's version here).  A region
        server's read only: the HMaster may be away (``read_retention`` asks it, apart)."""
        self._adopt(self.thrift2.run(self._meta_record))

    def count_documents(self, deadline: float | None = None) -> int:
        """Docs rows holding a record (a deleted document's row keeps only writers' entries for a while), by a
        keys-only scan: O(documents), so callers cache it."""
        return count_rows(self.thrift2, self._names["docs"], deadline, FP_COLUMN)

    def sample_fingerprints(self, count: int, seed: int | None = None, deadline: float | None = None) -> list[int]:
        """Up to ``count`` stored fingerprints, in key order from a random one on, wrapping round
        to the first: fp2docs row keys, read by at most two keys-only scans."""
        if count < 1:
            return []  # a scan's limit of 0 would mean no limit
        start = fingerprint_row(random.Random(seed).getrandbits(64))
        rows = row_keys(self.thrift2, self._names["fp2docs"], start, b"", count, deadline)
        if len(rows) < count:
            rows += row_keys(self.thrift2, self._names["fp2docs"], b"", start, count - len(rows), deadline)
        return [fingerprint_of_row(row) for row in rows]

    def candidates(self, fp: int, deadline: float | None = None) -> set[int]:
        """Every stored fingerprint sharing a drawer with ``fp``."""
        return self.scans.candidates([check_fingerprint(fp)], deadline)[0]

    def _near_documents(self, probe: Probe, deadline: float | None) -> list[Near]:
        """Every document whose fingerprint shares a drawer with the probe's and is within its distance.

        Concurrent lookups are answered together: one set of drawer scans and one fp2docs read for all."""
        return self._nearby.submit(probe, deadline=deadline)

    def query(
        self,
        fp: int,
        max_distance: int = MAX_DISTANCE,
        limit: int | None = None,
        deadline: float | None = None,
        max_age_ms: int | None = None,
    ) -> list[Hit]:
        """Documents whose fingerprint is within ``max_distance`` of ``fp`` (seen within ``max_age_ms``, if
        given), closest first, then by id."""
        check_query(fp, max_distance)
        check_max_age(max_age_ms)
        return ranked(self._near_documents(Probe(fp, max_distance, limit, max_age_ms), deadline), limit)

    def query_verified(
        self,
        fp: int,
        sketch: bytes,
        min_similarity: float,
        max_distance: int = VERIFY_MAX_DISTANCE,
        limit: int | None = None,
        deadline: float | None = None,
        max_age_ms: int | None = None,
    ) -> Verified:
        """Candidates within ``max_distance`` (up to VERIFY_MAX_DISTANCE) that share a drawer with ``fp``,
        checked against their stored sketches (the rule: model.verified)."""
        check_verified_query(fp, sketch, min_similarity, max_distance)
        check_max_age(max_age_ms)
        probe = Probe.verified(fp, max_distance, limit, max_age_ms, floor=min_similarity)
        near = self._near_documents(probe, deadline)
        return verified(near, sketch, min_similarity, limit)
