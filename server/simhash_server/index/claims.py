"""Claims: Deduplicate calls on near-duplicate texts take turns, across every server that shares the index.

Two fingerprints within distance 3 share at least one of their 10 drawer prefixes (keys.py).  A Deduplicate
call claims all 10 of its prefixes before it queries, and releases them once it has stored or not.  A claim
is a row of the claims table per prefix, and on it a cell of the call's own (``i`` + its owner token).  To
take rows, a call marks its cell on all of them (one putMultiple), then reads them (one getMultiple): it
holds each row where no other call's mark is live.  Of two calls that mark one row, the second to read it
sees the first's mark, so at least one of them sees the other; a call that sees another's mark unmarks the
row and tries again later, so a row has at most one holder, and a call holding it saw every mark made before
its read.  Of two concurrent calls on near-duplicates, one therefore queries only after the other has
stored, and sees it.  The argument in full, and what the lease adds: docs/dedup.md.

Marks and reads are batched: Thrift2 has no batched check-and-mutate, so the check-and-put claims of earlier
versions cost one call a row.  Their cell (``o``, naming its holder) is still read as another call's mark.

The claims table's TTL is the lease: a mark its server never released (a crash) lapses after
CLAIM_TTL_SECONDS.  A holder stores only if it took its claims less than HOLD_LIMIT_SECONDS ago, so a
claim can never lapse under a holder that is still about to store.
"""

from __future__ import annotations

import contextlib
import random
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from simhash_schema import CLAIM_TTL_SECONDS, SchemaError, hbase2
from simhash_server.index.errors import DeadlineExceeded, Unavailable
from simhash_server.index.keys import drawer_prefixes

__all__ = ["CLAIM_TTL_SECONDS", "HOLD_LIMIT_SECONDS", "Claim", "claim", "new_owner", "release"]

HOLD_LIMIT_SECONDS = CLAIM_TTL_SECONDS / 3  # a margin for a region server clock that runs fast
_FAMILY = b"d"
_MARK = b"i"  # + the owner token: a call's own cell on a claim row
_HOLDING, _UNMARKED = b"\x01", b""
_FIRST_PAUSE, _LONGEST_PAUSE = 0.002, 0.05  # waiting for a claim another call holds
_AT_ONCE_ROUNDS = 4  # tries of every row left at once, after a wait; then one by one (bounds the calls)
R = TypeVar("R")


@dataclass(frozen=True)
class Claim:
    owner: bytes
    rows: tuple[bytes, ...]
    began: float  # time.monotonic() before the first of its rows was taken; 0.0 for rows perhaps not held

    def held_for(self) -> float:
        """Seconds since the oldest of its rows may have been taken: their lease runs from then."""
        return time.monotonic() - self.began

    def check_held(self) -> None:
        """Raise unless the claim is certainly still held: a holder past the limit stores nothing."""
        held = self.held_for()
        if held >= HOLD_LIMIT_SECONDS:
            raise Unavailable(f"held the deduplication claim {held:.0f} s, past the {HOLD_LIMIT_SECONDS:.0f} s limit")


def new_owner() -> bytes:
    """A call's token: made once per call, so a retried attempt recognises rows it took already."""
    return uuid.uuid4().bytes


def _mark(client: Any, table: bytes, rows: Sequence[bytes], owner: bytes, value: bytes) -> None:
    """Write ``owner``'s cell on every row.  Unmarking writes the empty value rather than deleting: a delete's
    tombstone would hide the call's next mark on the row if made in the same millisecond."""
    t = hbase2()
    column = t.TColumnValue(family=_FAMILY, qualifier=_MARK + owner, value=value)
    client.putMultiple(table, [t.TPut(row=row, columnValues=[column]) for row in rows])


def _alone(result: Any, owner: bytes) -> bool:
    """Whether a claim row's cells show ``owner``'s mark and no other live cell: another call's mark, or an
    earlier version's claim (its one cell ``d:o`` naming its holder, empty once released)."""
    mine = False
    for cell in result.columnValues or ():
        if cell.qualifier == _MARK + owner:
            mine = cell.value == _HOLDING
        elif cell.value:
            return False
    return mine


def _take(client: Any, table: bytes, rows: Sequence[bytes], owner: bytes) -> list[bool]:
    """Mark every row for ``owner``, then read them: for each, whether ``owner`` now holds it."""
    t = hbase2()
    try:
        _mark(client, table, rows, owner, _HOLDING)
        results = client.getMultiple(table, [t.TGet(row=row, columns=[t.TColumn(family=_FAMILY)]) for row in rows])
    except t.TIOError as exc:
        ns, _, name = table.decode().rpartition(":")
        if not client.tableExists(t.TTableName(ns=ns.encode() or None, qualifier=name.encode())):
            raise SchemaError(f"table {table.decode()} is missing: run `simhash-index schema apply`") from exc
        raise
    return [_alone(result, owner) for result in results]


class Run(Protocol):
    """Runs a function on a pooled Thrift2 client, retrying I/O errors, until ``deadline`` if one is given
    (ConnectionPool.run)."""

    def __call__(self, call: Callable[[Any], R], *, deadline: float | None = None) -> R: ...


def claim(run: Run, table: bytes, fp: int | Iterable[int], owner: bytes, deadline: float | None) -> Claim:
    """Take the claims of ``fp``'s 10 drawer prefixes for ``owner`` (of every fingerprint's, for a batch),
    waiting for those other calls hold.

    Rows are taken in one global order (sorted), and a call waits for a row only while it holds no row after
    it, so two calls never wait on each other in a cycle; a call waits with no connection held.  Within that
    order, the rows still to take are marked and read at once: most calls meet no other and keep them all.
    Where a row is not its own, the call keeps the rows before it, unmarks it and those after it, waits for
    that row, and tries the rest at once again (after _AT_ONCE_ROUNDS such waits, one by one).  A batch that
    meets another on a few rows of its thousand so waits only there.

    Rows are taken before ``deadline``; marks made on the way are taken back whatever the deadline: a call
    that fails, or whose deadline passes, must not leave marks behind, or its near duplicates would wait a
    lease (CLAIM_TTL_SECONDS) for them."""
    fps = (fp,) if isinstance(fp, int) else fp
    rows = tuple(sorted({prefix for each in fps for prefix in drawer_prefixes(each)}))
    began: float | None = None  # before the first row kept was taken: the claim's lease runs from then
    pending = list(rows)
    try:
        for _ in range(_AT_ONCE_ROUNDS + 1):
            tried = time.monotonic()
            trying = tuple(pending)
            held = run(lambda client, these=trying: _take(client, table, these, owner), deadline=deadline)
            first = next((n for n, mine in enumerate(held) if not mine), len(trying))
            if first and began is None:
                began = tried
            if first < len(trying):  # not bound by the deadline: see the docstring
                run(lambda client, these=trying[first:]: _mark(client, table, these, owner, _UNMARKED))
            del pending[:first]
            if not pending:
                break
            waited = _wait_for(run, table, pending.pop(0), owner, deadline)
            began = waited if began is None else began
        for row in pending:
            waited = _wait_for(run, table, row, owner, deadline)
            began = waited if began is None else began
    except BaseException:
        with contextlib.suppress(Exception):  # best effort: HBase may be what failed; the TTL remains
            release(run, table, Claim(owner, rows, 0.0))
        raise
    assert began is not None  # the loop took a row at least
    return Claim(owner, rows, began)


def _wait_for(run: Run, table: bytes, row: bytes, owner: bytes, deadline: float | None) -> float:
    """Take ``row``, waiting while another call holds it; when the attempt that took it began.  Two calls
    that each see the other's mark both unmark it, so each waits a random pause before it marks again."""
    pause = _FIRST_PAUSE
    while True:
        tried = time.monotonic()
        if run(lambda client: _take(client, table, (row,), owner), deadline=deadline)[0]:
            return tried
        run(lambda client: _mark(client, table, (row,), owner, _UNMARKED))
        if deadline is not None and time.monotonic() + pause >= deadline:
            raise DeadlineExceeded("the deadline passed waiting for a near-duplicate's deduplication")
        time.sleep(pause * random.uniform(0.5, 1.0))
        pause = min(pause * 2, _LONGEST_PAUSE)


def release(run: Run, table: bytes, held: Claim) -> None:
    """Unmark the rows of ``held``, by one putMultiple.  A call writes only its own cells, so this never frees
    a row another call holds, even past the hold limit, when a lapsed lease may have let another call take
    one of them."""
    run(lambda client: _mark(client, table, held.rows, held.owner, _UNMARKED))
