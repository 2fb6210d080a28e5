"""Writers of one document id on different replicas, interleaved every way (pure: HBase's cells as a model
with timestamps, delete markers and per-row atomic mutations).

Whatever the interleaving and whichever writers pick the same millisecond, once they have all returned the
document is stored exactly once: its fp2docs column at the fingerprint its record names, and nowhere else."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_server.index.keys import doc_column, drawer_keys, fingerprint_of_row, fingerprint_row
from simhash_server.index.writes import (
    ENTRY_PREFIX,
    FP_COLUMN,
    Record,
    Step,
    delete_steps,
    index_steps,
    read_record,
    settle,
    write_stamp,
)

pytestmark = pytest.mark.unit

DOC = b"doc"


class Cells:
    """HBase's rule for one column's versions: a delete at T hides every version up to T, even one that
    arrives later; of the rest the newest timestamp shows, and of two puts at one timestamp the later."""

    def __init__(self) -> None:
        self.puts: dict[tuple[str, bytes, bytes], list[tuple[int, int, bytes]]] = defaultdict(list)
        self.deleted: dict[tuple[str, bytes, bytes], int] = defaultdict(lambda: -1)
        self.seq = 0

    def put(self, table: str, row: bytes, column: bytes, value: bytes, stamp: int) -> None:
        self.seq += 1
        self.puts[(table, row, column)].append((stamp, self.seq, value))

    def delete(self, table: str, row: bytes, column: bytes, stamp: int) -> None:
        key = (table, row, column)
        self.deleted[key] = max(self.deleted[key], stamp)

    def get(self, table: str, row: bytes, column: bytes) -> tuple[bytes, int] | None:
        key = (table, row, column)
        shown = [v for v in self.puts.get(key, []) if v[0] > self.deleted[key]]
        if not shown:
            return None
        stamp, _, value = max(shown)
        return value, stamp

    def row(self, table: str, row: bytes) -> dict[bytes, tuple[bytes, int]]:
        columns = {c for t, r, c in self.puts if (t, r) == (table, row)}
        found = {c: self.get(table, row, c) for c in columns}
        return {c: v for c, v in found.items() if v is not None}

    def apply(self, step: Step, stamp: int) -> None:
        for row, columns in step.deletes:
            for column in columns or []:
                self.delete(step.table, row, column, stamp)
        for row, data in step.puts:
            for column, value in data.items():
                self.put(step.table, row, column, value, stamp)

    def record(self) -> dict[bytes, Record]:
        return {DOC: read_record(self.row("docs", DOC))}


def writer(cells: Cells, target: int | None, now: int, n: int, late_tail: bool) -> Iterator[None]:
    """IndexStore._guarded for one document, one HBase call per step (``target`` None: a delete).  The steps
    after the docs step go beside the second read, so they may land before it or, ``late_tail``, after the
    settling deletes."""
    entry = ENTRY_PREFIX + bytes([n]) * 8
    before = cells.record()
    yield
    if target is None:
        if before[DOC].fp is None:
            return
        steps = delete_steps(before, entry, now)
    else:
        steps = index_steps({DOC: target}, {DOC: b"sketch-%d" % n}, before, entry, now)
    split = 1 + max(n for n, step in enumerate(steps) if step.table == "docs")
    floor = list(before.values())
    for _ in range(20):
        stamp = write_stamp(floor, now)
        for step in steps[:split] if late_tail else steps:
            cells.apply(step, stamp)
            yield
        after = cells.record()
        yield
        tie, doomed = settle(before, after, entry, stamp)
        for row, column, at in doomed:
            cells.delete("fp2docs", row, column, at)
        yield
        for step in steps[split:] if late_tail else []:
            cells.apply(step, stamp)
            yield
        if not tie:
            return
        floor = list(after.values())
    raise AssertionError("a writer kept tying")


def stored_once(cells: Cells) -> int | None:
    """The document's fingerprint, after checking it is visible there and nowhere else."""
    found = cells.get("docs", DOC, FP_COLUMN)
    fp = fingerprint_of_row(found[0]) if found else None
    columns = {f for f in FPS if cells.get("fp2docs", fingerprint_row(f), doc_column(DOC))}
    assert columns == ({fp} if fp is not None else set()), f"record {fp}, columns at {sorted(columns)}"
    if fp is not None:
        assert all(cells.get("drawers", key, b"d:") for key in drawer_keys(fp))
    return fp


FPS = (0x1111, 0x2222, 0x3333)
writers = st.lists(
    st.tuples(st.sampled_from((*FPS, None)), st.integers(1000, 1001), st.booleans()), min_size=2, max_size=3
)


def run(start: int | None, plan: list[tuple[int | None, int, bool]], schedule: list[int]) -> Cells:
    cells = Cells()
    if start is not None:
        for step in index_steps({DOC: start}, {DOC: b"first"}, {}, ENTRY_PREFIX + b"\0" * 8):
            cells.apply(step, 500)
    running = [writer(cells, target, now, n + 1, late) for n, (target, now, late) in enumerate(plan)]
    picks = iter(schedule)
    while running:
        current = running[next(picks, 0) % len(running)]
        try:
            next(current)
        except StopIteration:
            running.remove(current)
    return cells


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from((None, FPS[0])), writers, st.lists(st.integers(0, 5), max_size=60))
def test_any_interleaving_of_writers_of_one_id_stores_it_once(start, plan, schedule) -> None:
    fp = stored_once(run(start, plan, schedule))
    assert fp in {start, *(target for target, _, _ in plan)}


def test_without_settling_the_later_record_leaves_the_earlier_writers_column_behind() -> None:
    """The race the entries settle: both read the record at 0x1111; the writer to 0x3333 lands first with
    a later timestamp; the writer to 0x2222 lands after it.  Only settling removes 0x2222's column."""
    cells = Cells()
    for step in index_steps({DOC: FPS[0]}, {DOC: b"first"}, {}, ENTRY_PREFIX + b"\0" * 8):
        cells.apply(step, 500)
    before = cells.record()
    early, late = ENTRY_PREFIX + b"\1" * 8, ENTRY_PREFIX + b"\2" * 8
    for step in index_steps({DOC: FPS[2]}, {DOC: b"b"}, before, late, 1001):
        cells.apply(step, 1001)
    for step in index_steps({DOC: FPS[1]}, {DOC: b"a"}, before, early, 1000):
        cells.apply(step, 1000)
    with pytest.raises(AssertionError, match="columns at"):
        stored_once(cells)
    for entry, stamp in ((early, 1000), (late, 1001)):
        tie, doomed = settle(before, cells.record(), entry, stamp)
        assert not tie
        for row, column, at in doomed:
            cells.delete("fp2docs", row, column, at)
    assert stored_once(cells) == FPS[2]
