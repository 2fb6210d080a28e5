"""The order claims are taken in (index/claims.py), against a model of the claims table's check-and-put: a
call waits for a row only while it holds no row after it, keeps what comes before, and ends holding every
row; two calls on shared rows both finish and never hold one row at once.  The real table's semantics are
tested on HBase in tests/integration/test_dedup_concurrency.py."""

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
FREE = b""


class ClaimsTable:
    """One cell a row, with the calls claims.py makes; ``on_refusal(row, owner)`` runs at every refusal."""

    def __init__(self, on_refusal: Callable[[bytes, bytes], None] = lambda row, owner: None) -> None:
        self.cells: dict[bytes, bytes] = {}
        self.lock = threading.Lock()
        self.on_refusal = on_refusal

    def checkAndPut(self, table, row, family, qualifier, expected, put) -> bool:
        value = put.columnValues[0].value
        with self.lock:
            if self.cells.get(row, FREE) == expected:
                self.cells[row] = value
                return True
        if value != FREE:
            self.on_refusal(row, value)
        return False

    def get(self, table, tget):
        with self.lock:
            value = self.cells.get(tget.row, FREE)
        return SimpleNamespace(columnValues=[SimpleNamespace(value=value)] if value else [])

    def putMultiple(self, table, puts) -> None:
        with self.lock:
            for put in puts:
                self.cells[put.row] = put.columnValues[0].value

    def run(self, call, *, deadline=None):
        return call(self)

    def held_by(self, owner: bytes) -> set[bytes]:
        with self.lock:
            return {row for row, value in self.cells.items() if value == owner}


def test_a_held_row_is_waited_for_holding_only_the_rows_before_it() -> None:
    fp = 0x0123_4567_89AB_CDEF
    rows = sorted(set(drawer_prefixes(fp)))
    blocked, other, mine = rows[4], new_owner(), new_owner()
    seen: list[set[bytes]] = []

    def on_refusal(row: bytes, owner: bytes) -> None:
        seen.append(table.held_by(owner))
        if len(seen) == 3:  # the other call lets go after three refusals
            table.cells[blocked] = FREE

    table = ClaimsTable(on_refusal)
    table.cells[blocked] = other
    held = claim(table.run, b"claims", fp, mine, None)
    assert held.rows == tuple(rows) and table.held_by(mine) == set(rows)
    # the first refusal is in the try of every row at once (the rows after it then go back); every later
    # one is a wait, holding exactly the rows before the held one
    assert seen[1:] == [set(rows[:4])] * 2
    release(table.run, b"claims", held)
    assert table.held_by(mine) == set()


def test_a_batch_that_meets_another_on_one_row_takes_the_rest_at_once_after_its_wait() -> None:
    fps = [0x1111_2222_3333_4444 * k & (2**64 - 1) for k in range(1, 51)]
    rows = sorted({p for fp in fps for p in drawer_prefixes(fp)})
    blocked, other = rows[len(rows) // 2], new_owner()
    table = ClaimsTable(lambda row, owner: table.cells.__setitem__(blocked, FREE))  # freed at the 1st refusal
    table.cells[blocked] = other
    tries: list[int] = []

    def each(attempt, pending):
        tries.append(len(pending))
        return list(map(attempt, pending))

    held = claim(table.run, b"claims", fps, new_owner(), None, each)
    assert held.rows == tuple(rows) and table.held_by(held.owner) == set(rows)
    assert tries == [len(rows), len(rows) - len(rows) // 2 - 1]  # every row, then every row after the wait


def test_two_calls_on_shared_rows_both_finish_and_never_hold_one_row_together() -> None:
    base = 0x0F0F_0F0F_F0F0_F0F0
    groups = [[base ^ (1 << k) for k in range(start, start + 40)] for start in (0, 10, 20)]
    table = ClaimsTable()
    clashes: list[bytes] = []

    def call(fps: list[int]) -> None:
        with ThreadPoolExecutor(4) as pool:
            for _ in range(20):
                held = claim(table.run, b"claims", fps, new_owner(), time.monotonic() + 60, pool.map)
                mine = table.held_by(held.owner)
                clashes.extend(row for row in held.rows if row not in mine)
                release(table.run, b"claims", held)

    with ThreadPoolExecutor(len(groups)) as callers:
        list(callers.map(call, groups))
    assert clashes == [] and set(table.cells.values()) == {FREE}
