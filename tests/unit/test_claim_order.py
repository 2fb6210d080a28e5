"""The order claims are taken in (index/claims.py), against a model of the claims table (each row applied
atomically, rows one after another, as HBase applies a putMultiple or a getMultiple): a call waits for a row
only while it holds no row after it, keeps what comes before, and ends holding every row; calls on shared
rows all finish and never hold one row at once.  The real table's semantics are tested on HBase in
tests/integration/test_dedup_concurrency.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from types import SimpleNamespace

import pytest

from simhash_server.index.claims import claim, new_owner, release
from simhash_server.index.keys import drawer_prefixes

pytestmark = pytest.mark.unit
MARK, HOLDING, UNMARKED, EARLIER = b"i", b"\x01", b"", b"o"


class ClaimsTable:
    """The claims table's cells (row -> qualifier -> value), with the calls claims.py makes.
    ``on_refusal(row)`` runs whenever a read finds more than one call's mark on a row."""

    def __init__(self, on_refusal: Callable[[bytes], None] = lambda row: None) -> None:
        self.cells: dict[bytes, dict[bytes, bytes]] = {}
        self.lock = threading.Lock()
        self.on_refusal = on_refusal
        self.calls: list[tuple[str, int]] = []  # (call, rows) of every call

    def putMultiple(self, table, puts) -> None:
        self.calls.append(("putMultiple", len(puts)))
        for put in puts:
            with self.lock:
                for cell in put.columnValues:
                    self.cells.setdefault(put.row, {})[cell.qualifier] = cell.value

    def getMultiple(self, table, gets):
        self.calls.append(("getMultiple", len(gets)))
        results = []
        for get in gets:
            with self.lock:
                cells = dict(self.cells.get(get.row, {}))
            if sum(1 for value in cells.values() if value) > 1:
                self.on_refusal(get.row)
            columns = [SimpleNamespace(qualifier=q, value=v) for q, v in cells.items()]
            results.append(SimpleNamespace(row=get.row, columnValues=columns))
        return results

    def run(self, call, *, deadline=None):
        return call(self)

    def mark(self, row: bytes, owner: bytes, value: bytes = HOLDING) -> None:
        with self.lock:
            self.cells.setdefault(row, {})[MARK + owner] = value

    def marked_by(self, owner: bytes) -> set[bytes]:
        with self.lock:
            return {row for row, cells in self.cells.items() if cells.get(MARK + owner) == HOLDING}


def test_a_held_row_is_waited_for_holding_only_the_rows_before_it() -> None:
    fp = 0x0123_4567_89AB_CDEF
    rows = sorted(set(drawer_prefixes(fp)))
    blocked, other, mine = rows[4], new_owner(), new_owner()
    seen: list[set[bytes]] = []

    def on_refusal(row: bytes) -> None:
        seen.append(table.marked_by(mine) - {row})
        if len(seen) == 3:  # the other call lets go after three refusals
            table.mark(blocked, other, UNMARKED)

    table = ClaimsTable(on_refusal)
    table.mark(blocked, other)
    held = claim(table.run, b"claims", fp, mine, None)
    assert held.rows == tuple(rows) and table.marked_by(mine) == set(rows)
    # the first refusal is in the try of every row at once (the rows from the held one on are then unmarked);
    # every later one is a wait, holding exactly the rows before the held one
    assert seen[0] == set(rows) - {blocked}
    assert seen[1:] == [set(rows[:4])] * 2
    release(table.run, b"claims", held)
    assert table.marked_by(mine) == set()


def test_a_batch_that_meets_another_on_one_row_takes_the_rest_at_once_after_its_wait() -> None:
    fps = [0x1111_2222_3333_4444 * k & (2**64 - 1) for k in range(1, 51)]
    rows = sorted({p for fp in fps for p in drawer_prefixes(fp)})
    blocked, other = rows[len(rows) // 2], new_owner()
    table = ClaimsTable(lambda row: table.mark(blocked, other, UNMARKED))  # let go at the first refusal
    table.mark(blocked, other)
    held = claim(table.run, b"claims", fps, new_owner(), None)
    assert held.rows == tuple(rows) and table.marked_by(held.owner) == set(rows)
    after = len(rows) - len(rows) // 2 - 1
    assert table.calls == [
        ("putMultiple", len(rows)),  # every row marked at once,
        ("getMultiple", len(rows)),  # and read: one is another's
        ("putMultiple", after + 1),  # that one and the rows after it unmarked
        ("putMultiple", 1),  # the wait: the row marked again,
        ("getMultiple", 1),  # now its own
        ("putMultiple", after),  # then every row after it at once
        ("getMultiple", after),
    ]


def test_calls_on_shared_rows_all_finish_and_never_hold_one_row_together() -> None:
    base = 0x0F0F_0F0F_F0F0_F0F0
    groups = [[base ^ (1 << k) for k in range(start, start + 40)] for start in (0, 10, 20)] + [[base], [base ^ 1]]
    table = ClaimsTable()
    holders: dict[bytes, bytes] = {}
    lock = threading.Lock()
    clashes: list[bytes] = []

    def call(fps: list[int]) -> None:
        for _ in range(20):
            held = claim(table.run, b"claims", fps, new_owner(), time.monotonic() + 60)
            with lock:
                clashes.extend(row for row in held.rows if row in holders)
                holders.update(dict.fromkeys(held.rows, held.owner))
            time.sleep(0.001)  # the holder's work: others run meanwhile
            with lock:
                for row in held.rows:
                    del holders[row]
            release(table.run, b"claims", held)

    with ThreadPoolExecutor(len(groups)) as callers:
        list(callers.map(call, groups))
    assert clashes == []
    assert all(not value for cells in table.cells.values() for value in cells.values())  # every mark taken back


def test_a_release_writes_only_its_own_cells_so_a_row_taken_over_stays_taken() -> None:
    """Past the hold limit a lease may have lapsed and another call taken a row: releasing leaves it alone."""
    fp = 0x0123_4567_89AB_CDEF
    table = ClaimsTable()
    held = claim(table.run, b"claims", fp, new_owner(), None)
    other, lost = new_owner(), held.rows[3]
    table.mark(lost, other)  # as if held's lease there had lapsed and another call had marked it
    table.calls.clear()
    release(table.run, b"claims", held)
    assert table.calls == [("putMultiple", 10)]
    assert table.marked_by(held.owner) == set() and table.marked_by(other) == {lost}


def test_an_earlier_versions_claim_is_waited_for_and_its_released_cell_is_not() -> None:
    """A server of an earlier version claims a row by one cell naming its holder, emptied on release."""
    fp = 0x0123_4567_89AB_CDEF
    rows = sorted(set(drawer_prefixes(fp)))
    released, holding = rows[2], rows[6]
    refused: list[bytes] = []

    def on_refusal(row: bytes) -> None:
        refused.append(row)
        table.cells[holding][EARLIER] = UNMARKED  # its holder lets go once seen

    table = ClaimsTable(on_refusal)
    table.cells[released] = {EARLIER: UNMARKED}
    table.cells[holding] = {EARLIER: new_owner()}
    held = claim(table.run, b"claims", fp, new_owner(), None)
    assert refused == [holding] and table.marked_by(held.owner) == set(rows)
