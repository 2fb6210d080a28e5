"""`simhash-index gc`: bring an index back to the invariant of writes.py, beside live traffic.

Three passes, each one scan in key order, resumable from the last row it finished (recorded in the index's
meta table, so a gc run stopped anywhere goes on from there, from any machine):

1. docs: a record whose fingerprint row lacks its column (a writer died between steps) is made whole: its
   drawer rows and an fp2docs column without a sketch are written.  It cannot be verified until it is
   indexed again by text; it keeps the fingerprint its record names, the last one HBase acknowledged.
   Writers' entries (writes.py) older than ENTRY_SECONDS are pruned, so a deleted document's row goes.
2. fp2docs: a column whose document's record names another fingerprint, or none (left by two writers of one
   id at once, or by versions before writes.py's order), is deleted.  Documents per fingerprint are counted
   on the way: the top ones are recorded for Stats.
3. drawers: rows of fingerprints no document has (orphans, left by deletes and re-indexes) are deleted, and
   so are part rows (recipe v7: index/keys.py) whose document fingerprint no document has.

Beside live traffic: only cells older than ``grace_seconds`` are touched (a live writer's steps are
milliseconds apart, and each Thrift call is bounded by its timeout), and a delete removes exactly the version
it saw and older ones, so a writer's newer put of the same cell survives it.  A dated document's cells are
older than their write, so a docs row whose writer's entry (whose column says when it was written) is
within the grace is left alone too, and entries are pruned by when they were written.

``estimate_orphans`` is Stats' cheap view of pass 3: a sample of drawer rows from random start keys.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from simhash_schema import hbase2
from simhash_server.index.errors import Rejected, StoreError, Unavailable
from simhash_server.index.keys import (
    KEY_LENGTH,
    PART_KEY_LENGTH,
    drawer_keys,
    fingerprint_of_row,
    fingerprint_row,
    owner_of_key,
)
from simhash_server.index.scans import row_keys
from simhash_server.index.store import IndexStore
from simhash_server.index.writes import ENTRY_PREFIX, ENTRY_SECONDS, entry_written

__all__ = ["GRACE_SECONDS", "PASSES", "GcReport", "OrphanEstimate", "collect", "estimate_orphans", "last_report"]

PASSES = ("docs", "fp2docs", "drawers")
GRACE_SECONDS = 600
TOP_FINGERPRINTS = 10
_PAGE = 2_000  # rows (or, in wide fp2docs rows, column batches) per Thrift call
_COLUMNS_PER_RESULT = 1_000  # a fingerprint shared by a million documents arrives in pieces of this many
_FAMILY = b"d"
_FP_QUALIFIER = b"fp"
_ENTRY_QUALIFIER = ENTRY_PREFIX.partition(b":")[2]
_GC_ROW = b"gc"
_REOPENS = 3  # a lost scan is opened again this many times in a row before gc gives up (resumable)
log = logging.getLogger(__name__)


@dataclass
class GcReport:
    """What a gc run found and did; also its resume point while it runs."""

    grace_seconds: int = GRACE_SECONDS
    dry_run: bool = False
    started: float = field(default_factory=time.time)
    finished: float | None = None
    phase: str = PASSES[0]
    resume_after: str | None = None  # hex row key: the last row of ``phase`` finished
    docs_scanned: int = 0
    incomplete_made_whole: int = 0
    writer_entries_pruned: int = 0  # docs rows' writer entries (index/writes.py) older than ENTRY_SECONDS
    fp2docs_columns_scanned: int = 0
    ghost_columns_deleted: int = 0
    drawer_rows_scanned: int = 0
    orphan_drawer_rows_deleted: int = 0
    skipped_in_grace: int = 0  # cells that looked wrong but were younger than the grace period
    top_fingerprints: list[tuple[str, int]] = field(default_factory=list)  # (hex fingerprint, documents)


@dataclass(frozen=True)
class OrphanEstimate:
    drawer_rows: int  # estimated rows of the drawer table
    orphan_rows: int  # estimated rows of it no document owns
    sampled: int  # rows the estimate rests on


Progress = Callable[[str, float | None, int], None]  # (phase, fraction of the key space or None, rows)


def collect(
    store: IndexStore,
    grace_seconds: int = GRACE_SECONDS,
    dry_run: bool = False,
    restart: bool = False,
    progress: Progress | None = None,
) -> GcReport:
    """Run (or resume) gc on an open store; returns the final report, also recorded in the meta table.

    What gc deletes stays in the tables as delete markers, which scans step over, until a major compaction
    drops them (HBase runs one every 7 days by default; ``major_compact_commands`` are the shell's lines for
    one now: HBase 2.6's Thrift gateway cannot ask for one, its majorCompact runs a minor compaction)."""
    report = None if restart else _read(store, "running")
    if report is None or report.dry_run != dry_run or report.grace_seconds != grace_seconds:
        report = GcReport(grace_seconds=grace_seconds, dry_run=dry_run)
    run = _Run(store, report, progress or (lambda *_: None))
    for phase in PASSES[PASSES.index(report.phase) :]:
        if report.phase != phase:
            report.phase, report.resume_after = phase, None
        getattr(run, phase)()
    report.finished = time.time()
    _write(store, "last", report)
    _write(store, "running", None)
    return report


def major_compact_commands(store: IndexStore) -> list[str]:
    """HBase shell lines major-compacting the three tables gc deletes from.

    Not asked through Thrift: HBase 2.6.1's gateway implements ``majorCompact`` with Admin.compact (a minor
    compaction, which keeps delete markers and picks no files under hbase.hstore.compaction.min)."""
    return [f"major_compact '{spec.name}'" for spec in (store.tables.drawers, store.tables.fp2docs, store.tables.docs)]


def last_report(store: IndexStore, deadline: float | None = None) -> GcReport | None:
    """The report of the last gc run that finished."""
    return _read(store, "last", deadline)


class _Run:
    def __init__(self, store: IndexStore, report: GcReport, progress: Progress) -> None:
        self.store, self.report, self.progress = store, report, progress
        self.cutoff_ms = int((time.time() - report.grace_seconds) * 1000)
        self.t = hbase2()
        self.names = {name: getattr(store.tables, name).name.encode() for name in ("drawers", "fp2docs", "docs")}
        self.reopened = 0  # scans opened again after a lost gateway (see _pages)

    def _pages(self, table: str, **scan: Any) -> Iterator[list[Any]]:
        """Pages of a scan from the resume point; after each page the caller's work is done, the last row
        before the page's final one is recorded as finished (the final row may go on in the next page).

        A scanner lives in one gateway: if the gateway is lost (restarted, or its connection dropped), the
        scan is opened again from the resume point, up to _REOPENS times in a row; pages after that point
        come again (what gc does is idempotent), and ``self.reopened`` counts up so a pass can forget
        what it was counting of them."""
        name = self.names[table]
        failures = 0
        while True:
            start = bytes.fromhex(self.report.resume_after) + b"\x00" if self.report.resume_after else b""
            tscan = self.t.TScan(startRow=start, **scan)
            scanner = self.store.thrift2.run(lambda c, s=tscan: c.openScanner(name, s))
            try:
                while True:
                    page = self.store.thrift2.run(lambda c, s=scanner: c.getScannerRows(s, _PAGE), idempotent=False)
                    failures = 0
                    if not page:
                        return
                    yield page
                    finished = [r.row for r in page if r.row != page[-1].row]
                    if finished:
                        self.report.resume_after = finished[-1].hex()
                        _write(self.store, "running", self.report)
            except (Unavailable, Rejected) as exc:  # the scanner is gone with its gateway (or expired)
                failures += 1
                if failures > _REOPENS:
                    raise
                log.warning("gc: %s scan lost (%s); opening it again from the last finished row", table, exc)
                self.reopened += 1
            finally:
                with contextlib.suppress(StoreError):
                    self.store.thrift2.run(lambda c, s=scanner: c.closeScanner(s), idempotent=False)

    def _old(self, timestamp: int) -> bool:
        if timestamp < self.cutoff_ms:
            return True
        self.report.skipped_in_grace += 1
        return False

    # -- pass 1 ----------------------------------------------------------------------------------------
    def docs(self) -> None:
        t, fp2docs = self.t, self.names["fp2docs"]
        entries_cutoff = min(self.cutoff_ms, int((time.time() - ENTRY_SECONDS) * 1000))
        for page in self._pages("docs", caching=_PAGE, columns=[t.TColumn(family=_FAMILY)]):
            records = []
            stale = []
            for r in page:
                record = None
                busy = False  # a writer's entry written within the grace: the row may be mid-write
                for cv in r.columnValues:
                    if cv.qualifier == _FP_QUALIFIER:
                        record = cv
                    elif cv.qualifier.startswith(_ENTRY_QUALIFIER):
                        written = entry_written(cv.qualifier, cv.timestamp)
                        busy = busy or written >= self.cutoff_ms
                        if written < entries_cutoff:
                            stale.append(self._delete_up_to(r.row, cv.qualifier, cv.timestamp))
                if record is not None and not busy:
                    records.append((r.row, record))
                elif record is not None:
                    self.report.skipped_in_grace += 1
            gets = [t.TGet(row=cv.value, columns=[t.TColumn(family=_FAMILY, qualifier=doc)]) for doc, cv in records]
            present = self.store.thrift2.run(lambda c, g=gets: c.existsAll(fp2docs, g)) if gets else []
            broken = [
                (doc, fingerprint_of_row(cv.value))
                for (doc, cv), ok in zip(records, present, strict=True)
                if not ok and self._old(cv.timestamp)
            ]
            self.report.docs_scanned += len(records)
            if broken and not self.report.dry_run:
                self._make_whole(broken)
            if stale and not self.report.dry_run:
                self.store.thrift2.run(lambda c, d=stale: c.deleteMultiple(self.names["docs"], d))
            self.report.incomplete_made_whole += len(broken)
            self.report.writer_entries_pruned += len(stale)
            self.progress("docs", None, self.report.docs_scanned)

    def _make_whole(self, broken: list[tuple[bytes, int]]) -> None:
        """Drawer rows and a sketchless column for each (doc, fingerprint); undone where the record changed
        meanwhile (a live writer moved the document), so no column outlives its record."""
        t, stamp = self.t, int(time.time() * 1000)
        drawers = [
            t.TPut(row=key, columnValues=[t.TColumnValue(family=_FAMILY, qualifier=b"", value=b"")])
            for fp in {fp for _, fp in broken}
            for key in drawer_keys(fp)
        ]
        columns = [
            t.TPut(
                row=fingerprint_row(fp),
                columnValues=[t.TColumnValue(family=_FAMILY, qualifier=doc, value=b"", timestamp=stamp)],
            )
            for doc, fp in broken
        ]
        self.store.thrift2.run(lambda c: c.putMultiple(self.names["drawers"], drawers))
        self.store.thrift2.run(lambda c: c.putMultiple(self.names["fp2docs"], columns))
        now = self._records([doc for doc, _ in broken])
        undo = [
            self._delete_up_to(fingerprint_row(fp), doc, stamp)
            for doc, fp in broken
            if now.get(doc, (None, 0))[0] != fp
        ]
        if undo:
            self.store.thrift2.run(lambda c: c.deleteMultiple(self.names["fp2docs"], undo))

    # -- pass 2 ----------------------------------------------------------------------------------------
    def fp2docs(self) -> None:
        counts: dict[int, int] = {}  # documents of the fingerprints seen in the page still going on
        top: list[tuple[int, str]] = [(n, fp) for fp, n in self.report.top_fingerprints]  # a heap
        heapq.heapify(top)
        scan = {"caching": _PAGE, "batchSize": _COLUMNS_PER_RESULT, "filterString": b"KeyOnlyFilter()"}
        reopened = self.reopened
        for page in self._pages("fp2docs", **scan):
            if self.reopened != reopened:  # the scan starts again after the last finished row: recount it
                reopened, counts = self.reopened, {}
            cells = [(r.row, cv.qualifier, cv.timestamp) for r in page for cv in r.columnValues]
            records = self._records(list({doc for _, doc, _ in cells}))
            ghosts = []
            for row, doc, stamp in cells:
                fp = fingerprint_of_row(row)
                if records.get(doc, (None, 0))[0] == fp:
                    counts[fp] = counts.get(fp, 0) + 1
                elif self._old(stamp):
                    ghosts.append(self._delete_up_to(row, doc, stamp))
            if ghosts and not self.report.dry_run:
                self.store.thrift2.run(lambda c, g=ghosts: c.deleteMultiple(self.names["fp2docs"], g))
            self.report.ghost_columns_deleted += len(ghosts)
            self.report.fp2docs_columns_scanned += len(cells)
            going_on = fingerprint_of_row(page[-1].row)
            for fp in [fp for fp in counts if fp != going_on]:
                heapq.heappush(top, (counts.pop(fp), f"{fp:016x}"))
                if len(top) > TOP_FINGERPRINTS:
                    heapq.heappop(top)
            self.report.top_fingerprints = [(fp, n) for n, fp in sorted(top, reverse=True)]
            self.progress("fp2docs", _position(page[-1].row), self.report.fp2docs_columns_scanned)
        for fp, n in counts.items():
            heapq.heappush(top, (n, f"{fp:016x}"))
        self.report.top_fingerprints = [(fp, n) for n, fp in heapq.nlargest(TOP_FINGERPRINTS, top)]

    # -- pass 3 ----------------------------------------------------------------------------------------
    def drawers(self) -> None:
        t, fp2docs = self.t, self.names["fp2docs"]
        for page in self._pages("drawers", caching=_PAGE, filterString=b"KeyOnlyFilter()"):
            rows = [(r.row, owner_of_key(r.row), r.columnValues[0].timestamp) for r in page if r.columnValues]
            fps = sorted({fp for _, fp, _ in rows})
            owned = self.store.thrift2.run(
                lambda c, f=fps: c.existsAll(fp2docs, [t.TGet(row=fingerprint_row(fp)) for fp in f])
            )
            orphans = {fp for fp, ok in zip(fps, owned, strict=True) if not ok}
            doomed = [
                self._delete_up_to(key, b"", stamp) for key, fp, stamp in rows if fp in orphans and self._old(stamp)
            ]
            if doomed and not self.report.dry_run:
                self.store.thrift2.run(lambda c, d=doomed: c.deleteMultiple(self.names["drawers"], d))
            self.report.orphan_drawer_rows_deleted += len(doomed)
            self.report.drawer_rows_scanned += len(rows)
            self.progress("drawers", _position(page[-1].row), self.report.drawer_rows_scanned)

    # -- helpers ---------------------------------------------------------------------------------------
    def _records(self, docs: list[bytes]) -> dict[bytes, tuple[int, int]]:
        """doc -> (fingerprint, timestamp) of each docs record that exists."""
        if not docs:
            return {}
        t = self.t
        gets = [t.TGet(row=doc, columns=[t.TColumn(family=_FAMILY, qualifier=_FP_QUALIFIER)]) for doc in docs]
        results = self.store.thrift2.run(lambda c: c.getMultiple(self.names["docs"], gets))
        return {
            r.row: (fingerprint_of_row(r.columnValues[0].value), r.columnValues[0].timestamp)
            for r in results
            if r.columnValues
        }

    def _delete_up_to(self, row: bytes, qualifier: bytes, stamp: int) -> Any:
        """A delete of one cell's version seen and every older one (an older version would otherwise show
        through), while a newer put of it survives."""
        t = self.t
        return t.TDelete(
            row=row,
            columns=[t.TColumn(family=_FAMILY, qualifier=qualifier, timestamp=stamp)],
            deleteType=t.TDeleteType.DELETE_COLUMNS,
        )


def _position(row: bytes) -> float:
    """Where a uniformly spread row key lies in the key space, 0..1."""
    return int.from_bytes(row[:8].ljust(8, b"\x00"), "big") / 2**64


# -- the record in the meta table ------------------------------------------------------------------------
def _read(store: IndexStore, which: str, deadline: float | None = None) -> GcReport | None:
    t = hbase2()
    meta = store.tables.meta
    get = t.TGet(row=_GC_ROW, columns=[t.TColumn(family=meta.family.name.encode(), qualifier=which.encode())])
    result = store.thrift2.run(lambda c: c.get(meta.name.encode(), get), deadline=deadline)
    value = result.columnValues[0].value if result.columnValues else b""
    if not value:
        return None
    data = json.loads(value)
    data["top_fingerprints"] = [tuple(pair) for pair in data.get("top_fingerprints", [])]
    return GcReport(**data)


def _write(store: IndexStore, which: str, report: GcReport | None) -> None:
    t = hbase2()
    meta = store.tables.meta
    value = json.dumps(asdict(report)).encode() if report else b""  # empty, not deleted: no tombstone to mask
    cell = t.TColumnValue(family=meta.family.name.encode(), qualifier=which.encode(), value=value)
    put = t.TPut(row=_GC_ROW, columnValues=[cell])
    store.thrift2.run(lambda c: c.put(meta.name.encode(), put))


# -- Stats' estimate ---------------------------------------------------------------------------------------
def estimate_orphans(
    store: IndexStore, samples: int = 32, rows: int = 32, seed: int | None = None, deadline: float | None = None
) -> OrphanEstimate:
    """Orphan drawer rows: counted exactly in a table of up to ``samples`` x ``rows`` rows, else estimated from
    ``samples`` short scans at random keys (drawer keys are uniform: rows found / key space covered estimates
    the table's rows; the share of them without documents, its orphans)."""
    rng = random.Random(seed)
    name = store.tables.drawers.name.encode()

    def keys(start: bytes, limit: int) -> list[bytes]:
        found = row_keys(store.thrift2, name, start, b"", limit, deadline)
        return [row for row in found if len(row) in (KEY_LENGTH, PART_KEY_LENGTH)]

    whole = keys(b"", samples * rows + 1)
    if len(whole) <= samples * rows:  # a small table: all of it
        fps = [owner_of_key(key) for key in whole]
        return OrphanEstimate(len(fps), _orphan_share(store, fps, deadline, len(fps)), len(fps))
    found, covered = 0, 0.0
    fps = []
    for _ in range(samples):
        start = rng.getrandbits(64).to_bytes(8, "big")
        page = keys(start, rows)
        found += len(page)
        covered += (_position(page[-1]) if len(page) == rows else 1.0) - _position(start)
        fps.extend(owner_of_key(key) for key in page)
    total = round(found / covered) if covered > 0 else found
    return OrphanEstimate(total, _orphan_share(store, fps, deadline, total), len(fps))


def _orphan_share(store: IndexStore, fps: list[int], deadline: float | None, rows: int) -> int:
    """``rows`` times the share of the drawer rows of ``fps`` (one per row seen) whose fingerprint has no
    documents."""
    if not fps:
        return 0
    t = hbase2()
    distinct = sorted(set(fps))
    gets = [t.TGet(row=fingerprint_row(fp)) for fp in distinct]
    owned = store.thrift2.run(lambda c: c.existsAll(store.tables.fp2docs.name.encode(), gets), deadline=deadline)
    orphans = {fp for fp, ok in zip(distinct, owned, strict=True) if not ok}
    return round(rows * sum(fp in orphans for fp in fps) / len(fps))
