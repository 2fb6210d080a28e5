"""Claims: Deduplicate calls on near-duplicate texts take turns, across every server that shares the index.

Two fingerprints within distance 3 share at least one of their 10 drawer prefixes (keys.py).  A Deduplicate
call claims all 10 of its prefixes before it queries, and releases them once it has stored or not: a claim
is a cell of the claims table, written only where it is empty or absent (HBase checkAndPut), and emptied
only by its owner (checkAndPut again).  Of two concurrent calls on near-duplicates, one therefore queries only after the
other has stored, and sees it.  The argument in full, and what the lease adds: docs/dedup.md.

The claims table's TTL is the lease: a claim its server never released (a crash) lapses after
CLAIM_TTL_SECONDS.  A holder stores only if it took its claims less than HOLD_LIMIT_SECONDS ago, so a
claim can never lapse under a holder that is still about to store.
"""

from __future__ import annotations

import contextlib
import logging
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
_FAMILY, _QUALIFIER = b"d", b"o"  # one cell a claim: its owner
_FREE = b""  # the cell of a released claim
_FIRST_PAUSE, _LONGEST_PAUSE = 0.002, 0.05  # waiting for a claim another call holds
_AT_ONCE_ROUNDS = 4  # tries of every row left at once, after a wait; then one by one (bounds the calls)
R = TypeVar("R")
log = logging.getLogger(__name__)


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


def _take(client: Any, table: bytes, row: bytes, owner: bytes) -> bool:
    try:
        # Expecting the empty value matches a row that holds it (released) or no row at all (never taken,
        # or lapsed): HBase's check-and-mutate treats the two alike.
        if client.checkAndPut(table, row, _FAMILY, _QUALIFIER, _FREE, _put(row, owner)):
            return True
        # Taken already: by another call, or by this one when a retried call's first try had got through.
        t = hbase2()
        held = client.get(table, t.TGet(row=row, columns=[t.TColumn(family=_FAMILY, qualifier=_QUALIFIER)]))
    except hbase2().TIOError as exc:
        ns, _, name = table.decode().rpartition(":")
        if not client.tableExists(hbase2().TTableName(ns=ns.encode() or None, qualifier=name.encode())):
            raise SchemaError(f"table {table.decode()} is missing: run `simhash-index schema apply`") from exc
        raise
    return any(c.value == owner for c in held.columnValues or [])


class Run(Protocol):
    """Runs a function on a pooled Thrift2 client, retrying I/O errors, until ``deadline`` if one is given
    (ConnectionPool.run)."""

    def __call__(self, call: Callable[[Any], R], *, deadline: float | None = None) -> R: ...


def claim(
    run: Run,
    table: bytes,
    fp: int | Iterable[int],
    owner: bytes,
    deadline: float | None,
    each: Callable[[Callable[[bytes], bool | Exception], Sequence[bytes]], Iterable[bool | Exception]] = map,
) -> Claim:
    """Take the claims of ``fp``'s 10 drawer prefixes for ``owner`` (of every fingerprint's, for a batch),
    waiting for those other calls hold.

    Rows are taken in one global order (sorted), and a call waits for a row only while it holds no row after
    it, so two calls never wait on each other in a cycle; a call waits with no connection held.  Within that
    order, the rows still to take are tried at once (``each`` maps over them, concurrently if it can): most
    calls meet no other and keep them all.  Where a row is held, the call keeps the rows before it, gives
    back those it took after it, waits for that row, and tries the rest at once again (after _AT_ONCE_ROUNDS
    such waits, one by one).  A batch that meets another on a few rows of its thousand so waits only there.

    Rows are taken before ``deadline``; rows taken on the way go back whatever the deadline: a call that
    fails, or whose deadline passes, must not leave claims behind, or its near duplicates would wait a lease
    (CLAIM_TTL_SECONDS) for them."""
    fps = (fp,) if isinstance(fp, int) else fp
    rows = tuple(sorted({prefix for each in fps for prefix in drawer_prefixes(each)}))

    def attempt(row: bytes) -> bool | Exception:
        try:
            return bool(run(lambda client: _take(client, table, row, owner), deadline=deadline))
        except Exception as exc:  # noqa: BLE001 - raised below, once every row's outcome is known
            return exc

    began: float | None = None  # before the first row kept was taken: the claim's lease runs from then
    pending = list(rows)
    try:
        for _ in range(_AT_ONCE_ROUNDS + 1):
            if not pending:
                break
            tried = time.monotonic()
            outcomes = list(each(attempt, pending))
            failed = [outcome for outcome in outcomes if isinstance(outcome, Exception)]
            if failed:  # below, every row: a call that failed may have taken its row before its answer was lost
                raise failed[0]
            first = next((n for n, outcome in enumerate(outcomes) if outcome is not True), len(pending))
            if first and began is None:
                began = tried
            later = zip(pending[first:], outcomes[first:], strict=True)
            after = tuple(row for row, outcome in later if outcome is True)
            if after:  # just taken, so certainly its own: given back at once
                release(run, table, Claim(owner, after, tried))
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
            release(run, table, Claim(owner, rows, 0.0))  # freeing a row not its own does nothing
        raise
    assert began is not None  # the loop took a row at least
    return Claim(owner, rows, began)


def _wait_for(run: Run, table: bytes, row: bytes, owner: bytes, deadline: float | None) -> float:
    """Take ``row``, waiting while another call holds it; when the attempt that took it began."""
    pause = _FIRST_PAUSE
    while True:
        tried = time.monotonic()
        if run(lambda client: _take(client, table, row, owner), deadline=deadline):
            return tried
        if deadline is not None and time.monotonic() + pause >= deadline:
            raise DeadlineExceeded("the deadline passed waiting for a near-duplicate's deduplication")
        time.sleep(pause * random.uniform(0.5, 1.0))
        pause = min(pause * 2, _LONGEST_PAUSE)


def release(run: Run, table: bytes, held: Claim, each: Callable[..., Iterable[Any]] = map) -> None:
    """Free the rows of ``held`` that are still its own (``each`` as in claim).

    Freeing writes the empty value rather than deleting: a delete's tombstone masks a put of the same
    millisecond, so a claim taken right after a delete could be invisible to the next call, and two calls
    would hold one row (measured: 543 of 1,000 such claims were).  Within the hold limit every row is
    certainly still the holder's (no lease can have lapsed, so no other call can have taken one), and one
    unconditional put frees them all; a put of the same millisecond as a later taker's loses to it, being
    older.  Past the limit, or for rows perhaps not held, each row is freed only if it still names the owner
    (one check-and-put a row: Thrift2 has no batched one)."""
    if held.began and held.held_for() < HOLD_LIMIT_SECONDS:
        try:  # its retries too end at the limit
            run(
                lambda client: client.putMultiple(table, [_put(row, _FREE) for row in held.rows]),
                deadline=held.began + HOLD_LIMIT_SECONDS,
            )
            return
        except Exception:  # noqa: BLE001 - some rows may be free already: the check-and-puts below skip those
            log.warning("freeing %d claim rows at once failed; freeing them one by one", len(held.rows))

    def free(row: bytes) -> None:
        run(lambda client: client.checkAndPut(table, row, _FAMILY, _QUALIFIER, held.owner, _put(row, _FREE)))

    list(each(free, held.rows))


def _put(row: bytes, value: bytes) -> Any:
    t = hbase2()
    return t.TPut(row=row, columnValues=[t.TColumnValue(family=_FAMILY, qualifier=_QUALIFIER, value=value)])
