"""Writers of one document id on different replicas, interleaved every way (pure: HBase's cells as a model
with timestamps, delete markers and per-row atomic mutations).

Whatever the interleaving, whichever writers pick the same millisecond, and whatever time the documents are
dated (``indexed_at``, even before the id's last delete), once they have all returned the document is stored
exactly once: its fp2docs column at the fingerprint its record names, and nowhere else."""

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
    doc_stamps,
    index_steps,
    read_record,
    settle,
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


def writer(
    cells: Cells, target: int | None, now: int, n: int, late_tail: bool, seen: int | None = None
) -> Iterator[None]:
    """IndexStore._guarded for one document, one HBase call per step (``target`` None: a delete), dated
    ``seen`` (None: now).  The steps after the docs step go beside the second read, so they may land before it
    or, ``late_tail``, after the settling deletes."""
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
    floor = before
    dated: dict[bytes, int | None] = {DOC: seen if target is not None else None}
    for attempt in range(20):
        stamp = doc_stamps(floor, dated, now, spread=8 * attempt)[DOC]
        for step in steps[:split] if late_tail else steps:
            cells.apply(step, max(now, stamp) if step.table == "drawers" else stamp)
            yield
        after = cells.record()
        yield
        settled = settle(before, after, entry, {DOC: stamp})
        for row, column, at in settled.doomed:
            cells.delete("fp2docs", row, column, at)
        yield
        for step in steps[split:] if late_tail else []:
            cells.apply(step, stamp)
            yield
        if not settled.tie and not settled.masked:
            return
        if settled.masked:
            dated = {DOC: None}
        floor = after
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
    st.tuples(
        st.sampled_from((*FPS, None)), st.integers(1000, 1001), st.booleans(), st.sampled_from((None, 300, 1000))
    ),
    min_size=2,
    max_size=3,
)
DELETED = -1  # a start: indexed at 500, deleted at 600, its delete's entry pruned at 700 (gc): only markers left


def start_cells(start: int | None) -> Cells:
    cells = Cells()
    if start is not None:
        for step in index_steps({DOC: FPS[0] if start == DELETED else start}, {DOC: b"first"}, {}, ENTRY_PREFIX):
            cells.apply(step, 500)
    if start == DELETED:
        gone = ENTRY_PREFIX + b"\x09" * 8
        for step in delete_steps(cells.record(), gone, 600):
            cells.apply(step, 600)
        cells.delete("docs", DOC, gone, 700)
        cells.delete("docs", DOC, ENTRY_PREFIX, 700)
    return cells


def run(start: int | None, plan: list[tuple[int | None, int, bool, int | None]], schedule: list[int]) -> Cells:
    cells = start_cells(start)
    running = [writer(cells, target, now, n + 1, late, seen) for n, (target, now, late, seen) in enumerate(plan)]
    picks = iter(schedule)
    while running:
        current = running[next(picks, 0) % len(running)]
        try:
            next(current)
        except StopIteration:
            running.remove(current)
    return cells


@settings(max_examples=3000, deadline=None)
@given(st.sampled_from((None, FPS[0], DELETED)), writers, st.lists(st.integers(0, 5), max_size=60))
def test_any_interleaving_of_writers_of_one_id_stores_it_once(start, plan, schedule) -> None:
    fp = stored_once(run(start, plan, schedule))
    assert fp in {start, *(target for target, _, _, _ in plan)}
    if all(target is not None for target, _, _, _ in plan):
        assert fp is not None, "every writer indexed, yet no record shows"


@pytest.mark.parametrize("start", [None, FPS[0], DELETED])
def test_a_dated_document_keeps_its_date_unless_its_row_is_newer(start) -> None:
    """Dated 300: stored at 300 on a fresh id; after the row's cells of 500, at 501; after a delete at 600
    whose entry is gone, its record would hide under the delete's markers, so it is written again at now."""
    cells = start_cells(start)
    for _ in writer(cells, FPS[1], 1000, 1, False, seen=300):
        pass
    assert stored_once(cells) == FPS[1]
    stamp = cells.get("docs", DOC, FP_COLUMN)[1]
    column = cells.get("fp2docs", fingerprint_row(FPS[1]), doc_column(DOC))
    assert (stamp, column[1]) == {None: (300, 300), FPS[0]: (501, 501), DELETED: (1000, 1000)}[start]


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
        tie, doomed, masked = settle(before, cells.record(), entry, stamp)
        assert not tie and not masked
        for row, column, at in doomed:
            cells.delete("fp2docs", row, column, at)
    assert stored_once(cells) == FPS[2]
