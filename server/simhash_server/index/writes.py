"""The order of the index's writes, as data: why a writer killed at any point, or two writers of one document
id on two replicas at once, leave no wrong answer.

HBase makes one row's mutation atomic, not several rows'.  A document lives in three tables: its docs row
(the record: document -> fingerprint), a column of its fingerprint's fp2docs row (what queries return), and
the fingerprint's 10 drawer rows (how queries find it).  The invariant every order below keeps, after each
step:

    every fp2docs column (fp, doc) has docs[doc] == fp

so a query (which reads drawers, then fp2docs) returns a document only at the fingerprint Get reports, and
Delete (which reads docs, then removes that column) never leaves a ghost behind.  Steps:

- index: remove the document's column at its old fingerprint (only when it moves), write the new
  fingerprint's drawer rows, the docs record, and last the fp2docs column: the document becomes visible
  only once its record names the fingerprint it is visible at.
- delete: remove the column, then the record.

A writer killed between steps leaves at worst a docs record without its column (an "incomplete" document:
queries miss it, Get still names it) and drawer rows no document owns (orphans: queries skip them).
``simhash-index gc`` finds both: it makes incomplete documents whole again and deletes orphans
(simhash_server.index.gc).  Every step is a put or a delete, so a retried call repeats them harmlessly.

**Writers of one id on different replicas.**  Each reads the record, then writes: two that read the same
record would each remove only the old column, and the one whose record loses would leave its column behind
(a ghost).  So every call writes all its cells at one timestamp later than anything in the rows it read
(``doc_stamps``: HBase orders a cell's versions by timestamp, and a delete at T hides every version up to T
even if it arrives later), and signs the docs row with an *entry* of its own, ``d:w<writer>``, naming the
fingerprint it wrote.  After writing it reads the rows again (``settle``): every entry it had not seen before
whose fingerprint is not the record's loses its column, deleted at that entry's timestamp, so the loser's
put is hidden whichever lands last.  Of any two writers, the later to read again sees the other's entry.
Two calls that pick the same millisecond cannot be told apart by HBase, so the one that notices writes again,
later.  An entry's column also says when it was written (``new_entry``; a server of an earlier version reads
the column as any entry); entries written more than ENTRY_SECONDS ago are pruned by the next write and by gc.

**A document's time.**  Its docs and fp2docs cells carry the time it was seen (``indexed_at``, default: when
written) as their timestamp: ``max_age`` reads by an HBase time range, and the index's retention is a TTL
(``doc_stamps``).  A time later than every cell of the row keeps the order above, so a document can be dated
back only to just after its id's last write.  Delete markers are invisible, though: an id deleted at T and
indexed again dated before T would be hidden by the markers.  ``settle`` sees that (the record is older than
the call's own entry) and the call writes again at the present.  Every fp2docs marker of an id is at a
time some docs cell or marker of the id also holds, so the docs row is where that shows.  Drawer rows belong
to a fingerprint, not a document, and are written at the present: a drawer row is never older than the
documents it leads to, so a time range on the drawer scans drops only fingerprints with no document in it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from simhash_server.fingerprint.sketch_format import stored_parts
from simhash_server.index.keys import doc_column, drawer_keys, fingerprint_of_row, fingerprint_row, part_row_keys

__all__ = [
    "DRAWER_CELL",
    "ENTRY_PREFIX",
    "ENTRY_SECONDS",
    "FP_COLUMN",
    "Record",
    "Settled",
    "Step",
    "delete_steps",
    "doc_stamps",
    "entry_written",
    "index_steps",
    "new_entry",
    "part_keys",
    "plan_steps",
    "read_record",
    "settle",
]

FP_COLUMN = b"d:fp"  # the docs record's column: the fingerprint row key
ENTRY_PREFIX = b"d:w"  # + a writer's 8 random bytes + when (8 bytes, ms): the fingerprint row it wrote (b"": deleted)
_ENTRY_LENGTH = len(ENTRY_PREFIX) + 16  # earlier versions' entries lack the time: their timestamp stands for it
ENTRY_SECONDS = 300  # entries older than this are pruned: far longer than any call's HBase writes take
DRAWER_CELL = {b"d:": b""}  # drawer rows carry their meaning in the key


class Step(NamedTuple):
    """Mutations of one table, sent as one batch (one Thrift call)."""

    table: str  # "drawers", "fp2docs" or "docs"
    puts: Sequence[tuple[bytes, dict[bytes, bytes]]] = ()
    deletes: Sequence[tuple[bytes, list[bytes] | None]] = ()  # (row, columns); None: the whole row


class Record(NamedTuple):
    """What one docs row says: the document's fingerprint (None: no document), the newest timestamp of any of
    its cells (0: no row), its writers' entries (column -> (fingerprint or None for a delete, timestamp)),
    the timestamp of the fingerprint's cell (0: none), and when each entry was written (its timestamp, for
    an entry of a version that did not say)."""

    fp: int | None = None
    stamp: int = 0
    entries: Mapping[bytes, tuple[int | None, int]] = {}
    fp_stamp: int = 0
    written: Mapping[bytes, int] = {}


def new_entry(now_ms: int) -> bytes:
    """A writer's entry column: its own, and saying when it was written (a dated document's cells are older)."""
    return ENTRY_PREFIX + os.urandom(8) + now_ms.to_bytes(8, "big")


def entry_written(column: bytes, stamp: int) -> int:
    """When the entry ``column`` (``d:w...``, or its qualifier ``w...``) was written; ``stamp``, its cell's
    timestamp, for an entry of an earlier version."""
    return int.from_bytes(column[-8:], "big") if len(column) in (_ENTRY_LENGTH, _ENTRY_LENGTH - 2) else stamp


def read_record(cells: Mapping[bytes, tuple[bytes, int]]) -> Record:
    """The Record of a docs row's cells (column -> (value, timestamp))."""
    fp = fingerprint_of_row(cells[FP_COLUMN][0]) if FP_COLUMN in cells else None
    entries = {}
    written = {}
    for column, (value, stamp) in cells.items():
        if column.startswith(ENTRY_PREFIX):
            entries[column] = (fingerprint_of_row(value) if value else None, stamp)
            written[column] = entry_written(column, stamp)
    fp_stamp = cells[FP_COLUMN][1] if FP_COLUMN in cells else 0
    return Record(fp, max((stamp for _, stamp in cells.values()), default=0), entries, fp_stamp, written)


def doc_stamps(
    records: Mapping[bytes, Record], seen_ms: Mapping[bytes, int | None], now_ms: int, spread: int = 0
) -> dict[bytes, int]:
    """Each document's timestamp: later than every cell of its row, and else when it was seen (``seen_ms``)
    or, for every document not dated, one stamp: now, or later than all their rows (one group of writes,
    however far ahead of this clock another writer's was).  ``spread`` adds up to that many milliseconds
    past the rows' cells, so that two writers that tied once (same row, same time) part on their next try."""
    jitter = random.randrange(spread + 1) if spread else 0

    def floor(record: Record) -> int:
        return record.stamp + 1 + jitter if record.stamp else 0

    undated = [floor(r) for doc, r in records.items() if seen_ms.get(doc) is None]
    common = max([now_ms, *undated])
    stamps = {}
    for doc, record in records.items():
        seen = seen_ms.get(doc)
        stamps[doc] = common if seen is None else max(seen, floor(record))
    return stamps


def _stale(records: Mapping[bytes, Record], now_ms: int) -> dict[bytes, list[bytes]]:
    cutoff = now_ms - ENTRY_SECONDS * 1000
    return {doc: [c for c, (_, t) in r.entries.items() if r.written.get(c, t) < cutoff] for doc, r in records.items()}


def index_steps(
    final: dict[bytes, int],
    sketches: dict[bytes, bytes],
    old: Mapping[bytes, Record],
    entry: bytes = ENTRY_PREFIX,
    now_ms: int = 0,
    part_rows: bool = False,
) -> list[Step]:
    """The steps storing documents ``final`` (doc key -> fingerprint, with ``sketches``), given the records
    ``old`` of their docs rows now, signed with the writer's ``entry`` column; with ``part_rows`` (recipe v7),
    each sketch's first stored part also gets its part rows (``part_keys``)."""
    stale = _stale(old, now_ms)
    moved = [(doc, old[doc].fp) for doc, fp in final.items() if doc in old and old[doc].fp not in (None, fp)]
    steps = []
    if moved:
        steps.append(Step("fp2docs", deletes=[(fingerprint_row(fp), [doc_column(doc)]) for doc, fp in moved]))
    keys = {key for fp in set(final.values()) for key in drawer_keys(fp)}
    if part_rows:
        keys.update(part_keys(final, sketches))
    steps.append(Step("drawers", puts=[(key, DRAWER_CELL) for key in sorted(keys)]))
    steps.append(
        Step(
            "docs",
            puts=[(doc, {FP_COLUMN: fingerprint_row(fp), entry: fingerprint_row(fp)}) for doc, fp in final.items()],
            deletes=[(doc, columns) for doc, columns in stale.items() if columns and doc in final],
        )
    )
    steps.append(
        Step("fp2docs", puts=[(fingerprint_row(fp), {doc_column(doc): sketches[doc]}) for doc, fp in final.items()])
    )
    return steps


def part_keys(final: Mapping[bytes, int], sketches: Mapping[bytes, bytes]) -> set[bytes]:
    """The part rows (index/keys.py) of documents ``final`` (doc key -> fingerprint): each one's sketch's first
    stored part, if it stores one (a document without a sketch, or a short one, has none).  Like drawer rows,
    they belong to fingerprints, not documents: written before the documents' records, and gc deletes those
    whose document fingerprint no document has."""
    keys: set[bytes] = set()
    for doc, fp in final.items():
        first = stored_parts(sketches.get(doc, b""))[:1]
        for part in first:
            keys.update(part_row_keys(part, fp))
    return keys


def delete_steps(old: Mapping[bytes, Record], entry: bytes = ENTRY_PREFIX, now_ms: int = 0) -> list[Step]:
    """The steps removing the documents whose docs rows hold the records ``old`` (those without a document
    are left alone), signed with the writer's ``entry`` column."""
    live = {doc: r.fp for doc, r in old.items() if r.fp is not None}
    stale = _stale(old, now_ms)
    return [
        Step("fp2docs", deletes=[(fingerprint_row(fp), [doc_column(doc)]) for doc, fp in live.items()]),
        Step(
            "docs",
            puts=[(doc, {entry: b""}) for doc in live],
            deletes=[(doc, [FP_COLUMN, *stale[doc]]) for doc in live],
        ),
    ]


def plan_steps(
    steps: Callable[[dict[bytes, Record], bytes, int], list[Step]],
    before: dict[bytes, Record],
    entry: bytes,
    stamps: dict[bytes, int],
    now: int,
) -> list[tuple[int, Step]]:
    """The steps of the documents sharing each timestamp, at it (one group, one stamp, but for dated
    documents); drawer rows at the present, or later than every document's stamp."""
    groups: dict[int, dict[bytes, Record]] = {}
    for doc, stamp in stamps.items():
        groups.setdefault(stamp, {})[doc] = before[doc]
    drawer_stamp = max(now, *stamps.values())
    return [
        (drawer_stamp if step.table == "drawers" else stamp, step)
        for stamp, records in sorted(groups.items())
        for step in steps(records, entry, now)
    ]


class Settled(NamedTuple):
    """What a call's second read of its rows found."""

    tie: bool  # another writer picked the same timestamp for one of the rows: write again, later
    doomed: list[tuple[bytes, bytes, int]]  # fp2docs cells to delete, as (row, column, timestamp)
    masked: list[bytes]  # rows whose record the call wrote is hidden by older delete markers: write again, now


def settle(
    before: Mapping[bytes, Record], after: Mapping[bytes, Record], entry: bytes, stamps: int | Mapping[bytes, int]
) -> Settled:
    """After a call wrote its rows, each at its timestamp in ``stamps`` (an int: all at one): ties, the
    fp2docs cells of each entry new since ``before``, or the call's own, whose fingerprint is not the
    record's, and the rows whose record a delete marker hides."""
    tie = False
    doomed = []
    masked = []
    for doc, record in after.items():
        stamp = stamps if isinstance(stamps, int) else stamps[doc]
        seen = before.get(doc, Record()).entries
        later = False
        for column, (fp, at) in record.entries.items():
            later = later or (column != entry and at >= stamp)
            if column != entry and seen.get(column) == (fp, at):
                continue
            tie = tie or (column != entry and at == stamp)
            if fp is not None and fp != record.fp:
                doomed.append((fingerprint_row(fp), doc_column(doc), at))
        mine = record.entries.get(entry)
        if mine is not None and mine[0] is not None and mine[1] == stamp and record.fp_stamp < stamp and not later:
            masked.append(doc)
    return Settled(tie, doomed, masked)
