"""The order of the index's writes, as data: why a writer killed at any point leaves no wrong answer.

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
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from simhash_server.index.keys import doc_column, drawer_keys, fingerprint_row

__all__ = ["DRAWER_CELL", "FP_COLUMN", "Step", "delete_steps", "index_steps"]

FP_COLUMN = b"d:fp"  # the docs record's one column: the fingerprint row key
DRAWER_CELL = {b"d:": b""}  # drawer rows carry their meaning in the key


class Step(NamedTuple):
    """Mutations of one table, sent as one batch (one Thrift call)."""

    table: str  # "drawers", "fp2docs" or "docs"
    puts: Sequence[tuple[bytes, dict[bytes, bytes]]] = ()
    deletes: Sequence[tuple[bytes, list[bytes] | None]] = ()  # (row, columns); None: the whole row


def index_steps(final: dict[bytes, int], sketches: dict[bytes, bytes], old: dict[bytes, int]) -> list[Step]:
    """The steps storing documents ``final`` (doc key -> fingerprint, with ``sketches``), given the
    fingerprints ``old`` they are stored under now."""
    moved = [(doc, old[doc]) for doc, fp in final.items() if doc in old and old[doc] != fp]
    steps = []
    if moved:
        steps.append(Step("fp2docs", deletes=[(fingerprint_row(fp), [doc_column(doc)]) for doc, fp in moved]))
    steps.append(Step("drawers", puts=[(key, DRAWER_CELL) for fp in set(final.values()) for key in drawer_keys(fp)]))
    steps.append(Step("docs", puts=[(doc, {FP_COLUMN: fingerprint_row(fp)}) for doc, fp in final.items()]))
    steps.append(
        Step("fp2docs", puts=[(fingerprint_row(fp), {doc_column(doc): sketches[doc]}) for doc, fp in final.items()])
    )
    return steps


def delete_steps(old: dict[bytes, int]) -> list[Step]:
    """The steps removing documents stored under the fingerprints ``old`` (doc key -> fingerprint)."""
    return [
        Step("fp2docs", deletes=[(fingerprint_row(fp), [doc_column(doc)]) for doc, fp in old.items()]),
        Step("docs", deletes=[(doc, None) for doc in old]),
    ]
