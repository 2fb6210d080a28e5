"""The write order's invariant, checked on every prefix of every call's steps (pure: the tables as dicts).

Every fp2docs column (fp, doc) must have docs[doc] == fp after any step, whatever was stored before: then a
query never answers a document at a fingerprint its record does not name, and Delete leaves no ghost."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simhash_server.index.keys import doc_of_column, fingerprint_of_row
from simhash_server.index.writes import FP_COLUMN, Record, Step, delete_steps, index_steps

pytestmark = pytest.mark.unit

Tables = dict[str, dict[bytes, dict[bytes, bytes]]]


def _apply(tables: Tables, step: Step) -> None:
    table = tables[step.table]
    for row, columns in step.deletes:
        if columns is None:
            table.pop(row, None)
        else:
            for column in columns:
                table.get(row, {}).pop(column, None)
    for row, data in step.puts:
        table.setdefault(row, {}).update(data)


def _invariant(tables: Tables) -> None:
    for row, columns in tables["fp2docs"].items():
        for column in columns:
            doc = doc_of_column(column).encode()
            record = tables["docs"].get(doc, {}).get(FP_COLUMN)
            assert record is not None and fingerprint_of_row(record) == fingerprint_of_row(row), (doc, row)


def _stored(tables: Tables) -> dict[bytes, int]:
    return {doc: fingerprint_of_row(data[FP_COLUMN]) for doc, data in tables["docs"].items() if FP_COLUMN in data}


def _records(tables: Tables) -> dict[bytes, Record]:
    return {doc: Record(fp) for doc, fp in _stored(tables).items()}


docs = st.sampled_from([b"a", b"b", b"c"])
fps = st.sampled_from([1, 2, 3])
calls = st.lists(
    st.one_of(
        st.dictionaries(docs, fps, min_size=1).map(lambda d: ("index", d)),
        st.sets(docs, min_size=1).map(lambda d: ("delete", d)),
    ),
    max_size=6,
)


@given(calls, st.lists(st.integers(0, 4), min_size=6, max_size=6))
def test_every_prefix_of_every_call_keeps_the_invariant(history, cut_at) -> None:
    tables: Tables = {"drawers": {}, "fp2docs": {}, "docs": {}}
    for (kind, arg), cut in zip(history, cut_at, strict=False):
        old = _records(tables)
        if kind == "index":
            steps = index_steps(arg, {d: b"s" for d in arg}, old)
        else:
            steps = delete_steps({d: old[d] for d in arg if d in old})
        for step in steps[:cut]:  # a writer that dies after `cut` steps (or finishes)
            _apply(tables, step)
            _invariant(tables)


def test_a_completed_index_is_visible_where_its_record_says() -> None:
    tables: Tables = {"drawers": {}, "fp2docs": {}, "docs": {}}
    for step in index_steps({b"a": 5}, {b"a": b"s"}, {}):
        _apply(tables, step)
    for step in index_steps({b"a": 6}, {b"a": b"t"}, _records(tables)):
        _apply(tables, step)
    assert _stored(tables) == {b"a": 6}
    assert {fingerprint_of_row(r): c for r, c in tables["fp2docs"].items() if c} == {6: {b"d:a": b"t"}}
    assert len(tables["drawers"]) == 20  # both fingerprints' rows: the old ones are orphans until gc


def test_an_entry_says_when_it_was_written_and_is_pruned_by_that() -> None:
    """A dated document's cells are older than their write: its entry's column carries the write's time,
    and entries are pruned by it.  Entries of earlier versions (no time in the column) count their timestamp;
    their values, the fingerprint row, are as before, so an earlier server reads the new entries."""
    from simhash_server.index.keys import fingerprint_row
    from simhash_server.index.writes import ENTRY_PREFIX, ENTRY_SECONDS, entry_written, new_entry, read_record

    now = 10**12
    fresh, old, legacy = new_entry(now - 1000), new_entry(now - (ENTRY_SECONDS + 1) * 1000), ENTRY_PREFIX + b"3" * 8
    assert entry_written(fresh, 5) == now - 1000 and entry_written(fresh.partition(b":")[2], 5) == now - 1000
    assert entry_written(legacy, 5) == 5 and new_entry(now) != new_entry(now)
    month_ago = now - 30 * 86_400_000
    cells = {
        fresh: (fingerprint_row(7), month_ago),  # dated a month back, written a second ago
        old: (fingerprint_row(7), month_ago),
        legacy: (b"", month_ago),
        FP_COLUMN: (fingerprint_row(7), month_ago),
    }
    record = read_record(cells)
    assert record.entries == {fresh: (7, month_ago), old: (7, month_ago), legacy: (None, month_ago)}
    assert record.written[fresh] == now - 1000
    steps = index_steps({b"a": 8}, {b"a": b""}, {b"a": record}, new_entry(now), now)
    (docs_step,) = [s for s in steps if s.table == "docs"]
    assert sorted(docs_step.deletes[0][1]) == sorted([old, legacy])


def test_documents_not_dated_share_one_stamp_and_dated_ones_keep_their_own() -> None:
    """Undated documents are written as one group at one timestamp, even when a row holds cells ahead of
    this clock (another replica's); a dated one is written at its date, or just after its row's cells."""
    from simhash_server.index.writes import doc_stamps

    now = 1_000_000
    records = {b"a": Record(1, 0), b"b": Record(2, now + 500), b"c": Record(3, 10), b"d": Record(4, 900)}
    stamps = doc_stamps(records, {b"c": 100, b"d": 100}, now)
    assert stamps == {b"a": now + 501, b"b": now + 501, b"c": 100, b"d": 901}
