"""Steps 6 and 7: drawer keys -> HBase rows -> hits.  Every read and write of the index goes through here.

Writes go through happybase (Thrift1 ``mutateRows``, one call per table per batch).  Drawer scans go through
Thrift2's ``getScannerResults``, which opens, reads and closes a scan in one call (happybase needs about
four); the 10 drawer prefixes of a query are grouped by region, one scan per region, in parallel.  Concurrent
queries, and concurrent writes, share their HBase calls (simhash_server.index.coalesce): under load, one scan per
region answers many queries.  docs/benchmarks.md has the measurements behind these choices.

Tables (see simhash_schema.tables): drawers (13-byte keys, empty value), fp2docs (fingerprint -> one column
per document id, whose value is the document's verification sketch, empty for a document indexed by
fingerprint only), docs (document id -> fingerprint, the commit record of an index operation).  Keeping the
sketch beside the id means a verified query reads no more rows than an unverified one.

Index order, safe to retry at any point: read the document's current fingerprint; remove the document from
its old fingerprint's row; write the 10 drawer rows and the new fp2docs column; write docs last.  Drawer rows
are never deleted: one whose fingerprint has no documents left is an orphan that queries skip.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import happybase

from simhash_schema import (
    IndexMeta,
    IndexTables,
    SchemaError,
    connect,
    ensure_meta,
    hbase2,
    index_tables,
    key_only_multi_range,
    table_exists,
)
from simhash_server.fingerprint import FINGERPRINT_VERSION
from simhash_server.fingerprint.sketch import readable, similarity
from simhash_server.index.coalesce import Coalescer
from simhash_server.index.keys import LAYOUT, drawer_keys, drawer_prefixes
from simhash_server.index.pool import ConnectionPool, StoreError, close_quietly
from simhash_server.metrics import BATCH_CALLS, CANDIDATES

__all__ = [
    "MAX_DISTANCE",
    "MAX_DOC_ID_BYTES",
    "VERIFY_MAX_DISTANCE",
    "Document",
    "Hit",
    "IndexStore",
    "StoreConfig",
    "StoreError",
    "Verified",
]

MAX_DISTANCE = 3  # the 5-segment layout answers exactly up to here
# With a similarity floor, candidates up to here that share a drawer are checked too (docs/accuracy.md): the
# scans return them anyway, and past 8 a random fingerprint sharing 26 bits is too rare to matter.
VERIFY_MAX_DISTANCE = 8
MAX_DOC_ID_BYTES = 512
_FP_COLUMN = b"d:fp"
_DRAWER_CELL = {b"d:": b""}
_SCAN_PAGE = 10_000
_REGION_CACHE_SECONDS = 60.0
EXPECTED_META = IndexMeta(FINGERPRINT_VERSION, LAYOUT)  # what this server writes and accepts


class Document(NamedTuple):
    """What ``index_many`` stores; a plain ``(doc_id, simhash)`` pair is a document without a sketch."""

    doc_id: str
    simhash: int
    sketch: bytes = b""


class Near(NamedTuple):
    """A stored document near a probe, with the sketch stored beside its id (empty without one)."""

    doc_id: str
    simhash: int
    distance: int
    sketch: bytes


@dataclass(frozen=True, slots=True)
class Hit:
    doc_id: str
    simhash: int
    distance: int
    similarity: float | None = None  # the sketch's estimate, when the query was verified and a sketch exists


@dataclass(frozen=True, slots=True)
class Verified:
    """A verified query's answer: hits reaching the floor (or unverifiable), and how many fell below it."""

    hits: list[Hit]
    below_floor: int


@dataclass(frozen=True)
class StoreConfig:
    host: str = "127.0.0.1"
    thrift_port: int = 9090
    thrift2_port: int = 9091
    table_prefix: str = "simhash"
    pool_size: int = 16
    timeout_ms: int = 10_000
    retries: int = 2
    wal: bool = True
    # Concurrent calls share HBase calls (simhash_server.index.coalesce): at most this many batches at once, of
    # at most this many queries or documents each.  One query lane makes bigger batches, so fewer scans per
    # query; two write lanes keep the region server busy with large batches.  docs/benchmarks.md (gRPC).
    query_lanes: int = 1
    write_lanes: int = 2
    batch_queries: int = 32
    batch_documents: int = 1_000


def check_doc_id(doc_id: str) -> bytes:
    if not isinstance(doc_id, str):
        raise ValueError(f"doc_id must be a string, got {type(doc_id).__name__}")
    raw = doc_id.encode("utf-8")
    if not raw:
        raise ValueError("doc_id is empty")
    if len(raw) > MAX_DOC_ID_BYTES:
        raise ValueError(f"doc_id is {len(raw)} bytes, the limit is {MAX_DOC_ID_BYTES}")
    return raw


def check_fingerprint(fp: int) -> int:
    if not isinstance(fp, int) or not 0 <= fp < 2**64:
        raise ValueError(f"simhash must be an unsigned 64-bit integer, got {fp!r}")
    return fp


def _fp_bytes(fp: int) -> bytes:
    return fp.to_bytes(8, "big")


# -- the parts of a call that need no HBase, shared with AsyncIndexStore --------------------------------------
def keyed_documents(items: Iterable[Document | tuple[str, int]]) -> list[tuple[bytes, Document]]:
    """Checked documents with their row keys; the last entry wins for a repeated id."""
    final: dict[bytes, Document] = {}
    for item in items:
        doc = Document(*item)
        final[check_doc_id(doc.doc_id)] = doc
        check_fingerprint(doc.simhash)
    return list(final.items())


def check_query(fp: int, max_distance: int) -> None:
    check_fingerprint(fp)
    if not 0 <= max_distance <= MAX_DISTANCE:
        raise ValueError(
            f"max_distance must be 0..{MAX_DISTANCE}: the 5-segment drawer index answers exactly only up to "
            f"{MAX_DISTANCE}, got {max_distance}"
        )


def check_verified_query(fp: int, sketch: bytes, min_similarity: float, max_distance: int) -> None:
    check_fingerprint(fp)
    if not 0 <= max_distance <= VERIFY_MAX_DISTANCE:
        raise ValueError(f"max_distance must be 0..{VERIFY_MAX_DISTANCE} with a similarity floor, got {max_distance}")
    if not 0.0 <= min_similarity <= 1.0:
        raise ValueError(f"min_similarity must be within 0..1, got {min_similarity}")
    if not readable(sketch):
        raise ValueError("the query's sketch is not of this server's sketch format")


def ranked(near: Iterable[Near], limit: int | None) -> list[Hit]:
    """Hits closest first, then by id."""
    hits = [Hit(doc, candidate, distance) for doc, candidate, distance, _ in near]
    hits.sort(key=lambda h: (h.distance, h.doc_id))
    return hits if limit is None else hits[:limit]


def verified(near: Iterable[Near], sketch: bytes, min_similarity: float, limit: int | None) -> Verified:
    """Candidates checked against their stored sketches (see IndexStore.query_verified)."""
    hits, below = [], 0
    for doc, candidate, distance, stored in near:
        if not readable(stored):
            if distance <= MAX_DISTANCE:
                hits.append(Hit(doc, candidate, distance))
            continue
        estimate = similarity(sketch, stored)
        if estimate >= min_similarity:
            hits.append(Hit(doc, candidate, distance, estimate))
        else:
            below += 1
    hits.sort(key=lambda h: (h.distance, -(h.similarity or 0.0), h.doc_id))
    return Verified(hits if limit is None else hits[:limit], below)


class IndexStore:
    """One index in HBase.  Thread-safe; open it once per process and share it."""

    def __init__(self, config: StoreConfig | None = None, tables: IndexTables | None = None) -> None:
        self.config = config = config or StoreConfig()
        self.tables = tables or index_tables(config.table_prefix)
        self._names = {
            "drawers": self.tables.drawers.name.encode(),
            "fp2docs": self.tables.fp2docs.name.encode(),
            "docs": self.tables.docs.name.encode(),
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
        self._scans = ThreadPoolExecutor(max_workers=config.pool_size, thread_name_prefix="drawer-scan")
        self._nearby: Coalescer[tuple[int, int], list[Near]] = Coalescer(
            self.near_many, config.batch_queries, config.query_lanes, BATCH_CALLS.labels("queries").observe
        )
        self._writes: Coalescer[list[tuple[bytes, Document]], int] = Coalescer(
            self.write_many, config.batch_documents, config.write_lanes, BATCH_CALLS.labels("writes").observe
        )
        self.meta: IndexMeta | None = None
        self._regions: tuple[float, list[bytes]] | None = None

    # -- lifecycle ------------------------------------------------------------------------------------
    def open(self) -> IndexMeta:
        """Check the tables exist and were written with this server's fingerprint version and layout."""

        def check(client: Any) -> IndexMeta:
            missing = [s.name for s in self.tables.all() if not table_exists(client, s.name)]
            if missing:
                raise SchemaError(f"tables missing: {', '.join(missing)}; run `simhash-index schema apply`")
            return ensure_meta(client, self.tables.meta, EXPECTED_META)

        self.meta = self.thrift2.run(check)
        return self.meta

    def close(self) -> None:
        self._scans.shutdown(wait=False, cancel_futures=True)
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
        documents = keyed_documents(items)
        if not documents:
            return 0
        self._writes.submit(documents, len(documents), deadline)
        return len(documents)

    def write_many(self, calls: list[list[tuple[bytes, Document]]], deadline: float | None) -> list[int]:
        """One batch of writes for the (row key, document) pairs of several calls (later calls win for a
        repeated id); callers reach it through a coalescer."""
        final: dict[bytes, int] = {}
        sketches: dict[bytes, bytes] = {}
        for documents in calls:
            for key, doc in documents:
                final[key] = doc.simhash
                sketches[key] = doc.sketch
        old = self._stored_fingerprints(list(final), deadline)
        moved = {doc: old[doc] for doc, fp in final.items() if doc in old and old[doc] != fp}
        wal = self.config.wal

        def write(conn: happybase.Connection) -> None:
            if moved:
                with conn.table(self._names["fp2docs"]).batch(wal=wal) as batch:
                    for doc, old_fp in moved.items():
                        batch.delete(_fp_bytes(old_fp), columns=[b"d:" + doc])
            with conn.table(self._names["drawers"]).batch(wal=wal) as batch:
                for fp in set(final.values()):
                    for key in drawer_keys(fp):
                        batch.put(key, _DRAWER_CELL)
            with conn.table(self._names["fp2docs"]).batch(wal=wal) as batch:
                for doc, fp in final.items():
                    batch.put(_fp_bytes(fp), {b"d:" + doc: sketches[doc]})
            with conn.table(self._names["docs"]).batch(wal=wal) as batch:  # the commit record, last
                for doc, fp in final.items():
                    batch.put(doc, {_FP_COLUMN: _fp_bytes(fp)})

        self.thrift1.run(write, deadline=deadline)
        return [len(documents) for documents in calls]

    def delete(self, doc_ids: Sequence[str], deadline: float | None = None) -> int:
        """Remove documents; returns how many existed.  Unknown ids are not an error."""
        docs = [check_doc_id(d) for d in doc_ids]
        old = self._stored_fingerprints(docs, deadline)
        if not old:
            return 0
        wal = self.config.wal

        def write(conn: happybase.Connection) -> None:
            with conn.table(self._names["fp2docs"]).batch(wal=wal) as batch:
                for doc, fp in old.items():
                    batch.delete(_fp_bytes(fp), columns=[b"d:" + doc])
            with conn.table(self._names["docs"]).batch(wal=wal) as batch:
                for doc in old:
                    batch.delete(doc)

        self.thrift1.run(write, deadline=deadline)
        return len(old)

    # -- reads ----------------------------------------------------------------------------------------
    def get(self, doc_id: str, deadline: float | None = None) -> int | None:
        doc = check_doc_id(doc_id)
        return self._stored_fingerprints([doc], deadline).get(doc)

    def _stored_fingerprints(self, docs: list[bytes], deadline: float | None) -> dict[bytes, int]:
        def read(conn: happybase.Connection) -> list[tuple[bytes, dict[bytes, bytes]]]:
            return conn.table(self._names["docs"]).rows(docs, columns=[_FP_COLUMN])

        rows = self.thrift1.run(read, deadline=deadline)
        return {key: int.from_bytes(data[_FP_COLUMN], "big") for key, data in rows if _FP_COLUMN in data}

    def ping(self) -> None:
        """Raise unless HBase answers and the index's meta record still matches (the health check)."""
        self.meta = self.thrift2.run(lambda client: ensure_meta(client, self.tables.meta, EXPECTED_META))

    def count_documents(self, deadline: float | None = None) -> int:
        """Rows of the docs table, by a keys-only scan: O(documents), so callers cache it."""
        t = hbase2()
        table = self._names["docs"]
        total, start = 0, b""
        while True:
            scan = t.TScan(
                startRow=start,
                filterString=b"FirstKeyOnlyFilter() AND KeyOnlyFilter()",
                caching=_SCAN_PAGE,
                limit=_SCAN_PAGE,
            )
            results = self.thrift2.run(lambda c, s=scan: c.getScannerResults(table, s, _SCAN_PAGE), deadline=deadline)
            total += len(results)
            if len(results) < _SCAN_PAGE:
                return total
            start = results[-1].row + b"\x00"

    def candidates(self, fp: int, deadline: float | None = None) -> set[int]:
        """Every stored fingerprint sharing a drawer with ``fp``."""
        return self._candidates_many([check_fingerprint(fp)], deadline)[0]

    def _candidates_many(self, fps: Sequence[int], deadline: float | None) -> list[set[int]]:
        """For each fingerprint, every stored fingerprint sharing a drawer with it.

        The drawer prefixes of all of them are grouped by the region holding them, and each group is read by
        one scan (a MultiRowRangeFilter over its prefixes), the groups in parallel: as many Thrift calls as
        regions touched, however many fingerprints.  Region boundaries are only a hint: a stale one costs
        speed, never a row.
        """
        owners: dict[bytes, list[int]] = {}
        for n, fp in enumerate(fps):
            for prefix in drawer_prefixes(fp):
                owners.setdefault(prefix, []).append(n)
        groups: dict[int, list[bytes]] = {}
        starts = self._region_starts(deadline)
        for prefix in sorted(owners):
            groups.setdefault(bisect.bisect_right(starts, prefix), []).append(prefix)
        *others, last = groups.values()
        futures = [self._scans.submit(self._scan_prefixes, group, deadline) for group in others]
        keys = self._scan_prefixes(last, deadline)  # the last group in this thread: one hand-off fewer
        for future in futures:
            keys.extend(future.result())
        found: list[set[int]] = [set() for _ in fps]
        for key in keys:
            candidate = int.from_bytes(key[5:], "big")
            for n in owners[key[:5]]:
                found[n].add(candidate)
        return found

    def _region_starts(self, deadline: float | None) -> list[bytes]:
        """Start keys of the drawer table's regions (cached for a minute; regions split rarely)."""
        cached = self._regions
        if cached is not None and time.monotonic() - cached[0] < _REGION_CACHE_SECONDS:
            return cached[1]
        table = self._names["drawers"]
        locations = self.thrift2.run(lambda c: c.getAllRegionLocations(table), deadline=deadline)
        starts = sorted(loc.regionInfo.startKey or b"" for loc in locations)[1:]  # the first starts at b""
        self._regions = (time.monotonic(), starts)
        return starts

    def _scan_prefixes(self, prefixes: list[bytes], deadline: float | None) -> list[bytes]:
        """Drawer row keys under sorted 5-byte prefixes, keys only, one Thrift2 call per 10,000 rows."""
        t = hbase2()
        table = self._names["drawers"]
        # stop = prefix + ff*9 sorts after every 13-byte key under the prefix and shares its 5 bytes, so the
        # ROWPREFIX_FIXED_LENGTH(5) bloom filter can skip store files without the prefix.
        ranges = [(p, p + b"\xff" * 9) for p in prefixes]
        if len(ranges) == 1:
            filters = {"filterString": b"KeyOnlyFilter()"}
        else:
            filters = {"filterBytes": key_only_multi_range(ranges)}
        out: list[bytes] = []
        start, stop = ranges[0][0], ranges[-1][1]
        while True:
            # PREAD: positional reads suit short scans.
            scan = t.TScan(
                startRow=start,
                stopRow=stop,
                caching=_SCAN_PAGE,
                readType=t.TReadType.PREAD,
                limit=_SCAN_PAGE,
                **filters,
            )
            results = self.thrift2.run(lambda c, s=scan: c.getScannerResults(table, s, _SCAN_PAGE), deadline=deadline)
            out.extend(r.row for r in results)
            if len(results) < _SCAN_PAGE:
                return out
            start = results[-1].row + b"\x00"

    def _near_documents(self, fp: int, max_distance: int, deadline: float | None) -> list[Near]:
        """Every document whose fingerprint shares a drawer with ``fp`` and is within ``max_distance`` of it.

        Concurrent lookups are answered together: one set of drawer scans and one fp2docs read for all."""
        return self._nearby.submit((fp, max_distance), deadline=deadline)

    def near_many(self, probes: list[tuple[int, int]], deadline: float | None) -> list[list[Near]]:
        """For each (fingerprint, max_distance), the documents near it: one batch; callers reach it through a
        coalescer."""
        found = self._candidates_many([fp for fp, _ in probes], deadline)
        near: list[dict[int, int]] = []
        for (fp, max_distance), candidates in zip(probes, found, strict=True):
            CANDIDATES.observe(len(candidates))
            near.append({c: d for c in candidates if (d := (c ^ fp).bit_count()) <= max_distance})
        wanted = sorted({c for each in near for c in each})
        if not wanted:
            return [[] for _ in probes]

        def read(conn: happybase.Connection) -> list[tuple[bytes, dict[bytes, bytes]]]:
            return conn.table(self._names["fp2docs"]).rows([_fp_bytes(c) for c in wanted])

        documents = {  # orphans (no documents left) come back empty: skipped
            int.from_bytes(row, "big"): columns for row, columns in self.thrift1.run(read, deadline=deadline)
        }
        return [
            [
                Near(column[2:].decode("utf-8"), candidate, distance, sketch)
                for candidate, distance in each.items()
                for column, sketch in documents.get(candidate, {}).items()
            ]
            for each in near
        ]

    def query(
        self, fp: int, max_distance: int = MAX_DISTANCE, limit: int | None = None, deadline: float | None = None
    ) -> list[Hit]:
        """Documents whose fingerprint is within ``max_distance`` of ``fp``, closest first, then by id."""
        check_query(fp, max_distance)
        return ranked(self._near_documents(fp, max_distance, deadline), limit)

    def query_verified(
        self,
        fp: int,
        sketch: bytes,
        min_similarity: float,
        max_distance: int = VERIFY_MAX_DISTANCE,
        limit: int | None = None,
        deadline: float | None = None,
    ) -> Verified:
        """Candidates checked against their stored sketches.

        Candidates are the documents within ``max_distance`` (up to VERIFY_MAX_DISTANCE) that share a drawer
        with ``fp``: all of them up to MAX_DISTANCE, and beyond it those the drawer scans return anyway.  A
        candidate is a hit when its estimated similarity reaches ``min_similarity``.  One without a readable
        sketch (indexed by fingerprint only) cannot be checked: within MAX_DISTANCE it is a hit with
        ``similarity`` None, so nothing the unverified query would answer disappears unexplained; beyond it,
        where only a sketch could vouch for it, it is left out.  Closest first, then most similar, then by id.
        """
        check_verified_query(fp, sketch, min_similarity, max_distance)
        return verified(self._near_documents(fp, max_distance, deadline), sketch, min_similarity, limit)
