"""The time window without HBase: what the reads ask for (HBase time ranges), how a batch's windows group,
an earlier batch item outside a later one's window, the client's and the command line's times, and the
retention's table settings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from simhash_client import calls
from simhash_client.times import parse_duration, parse_instant
from simhash_schema import index_tables
from simhash_server.index.in_batch import Item, decide_in_order
from simhash_server.index.model import Probe
from simhash_server.index.nearby import near_candidates, windows
from simhash_server.index.scans import ScanPlan, since

LATEST = 2**63 - 1


def test_a_window_becomes_a_time_range_on_the_drawer_scans_and_the_fp2docs_read() -> None:
    plan = ScanPlan([0x0123456789ABCDEF], [], min_stamp_ms=1_000)
    assert {(s["timeRange"].minStamp, s["timeRange"].maxStamp) for s in plan.scans} == {(1_000, LATEST)}
    assert all("timeRange" not in s for s in ScanPlan([0x0123456789ABCDEF], []).scans)
    probe = Probe(5, 3)
    _, read = near_candidates([probe], [{5, 7}], min_stamp_ms=2_000)
    _, arguments = read.request(b"t")
    assert [(g.timeRange.minStamp, g.timeRange.maxStamp) for g in arguments["tgets"]] == [(2_000, LATEST)] * 2
    _, unbounded = near_candidates([probe], [{5}])
    assert unbounded.request(b"t")[1]["tget"].timeRange is None


def test_a_batch_is_read_once_per_window() -> None:
    probes = [Probe(1, 3), Probe(2, 3, None, 60_000), Probe(3, 3), Probe(4, 3, None, 60_000), Probe(5, 3, None, 1)]
    assert windows(probes) == {None: [0, 2], 60_000: [1, 3], 1: [4]}


def test_an_earlier_batch_item_dated_outside_a_later_ones_window_is_not_its_duplicate() -> None:
    now = 10_000_000
    old = Item("old", 0xFF, b"", 3, None, indexed_at_ms=now - 7_200_000)  # seen two hours ago
    fresh = Item("fresh", 0xFF, b"", 3, None)  # stored with the batch's time
    recent = Item("recent", 0xFF, b"", 3, None, max_age_ms=3_600_000)  # the last hour only
    decisions = decide_in_order([old, recent], [[], []], now)
    assert [d.stored for d in decisions] == [True, True]
    decisions = decide_in_order([fresh, recent], [[], []], now)
    assert [d.stored for d in decisions] == [True, False] and decisions[1].hits[0].doc_id == "fresh"


def test_the_client_sends_times_in_milliseconds() -> None:
    when = datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
    request = calls.deduplicate("a", None, 1, None, 0, None, None, indexed_at=when, max_age=timedelta(hours=72)).request
    assert request.indexed_at.ToMilliseconds() == 1795507200000
    assert request.max_age.ToMilliseconds() == 72 * 3600 * 1000
    assert calls.query(None, 1, None, 0, None, None, max_age=1.5).request.max_age.ToMilliseconds() == 1500
    assert calls.index("a", None, 1, None, indexed_at=1795507200.25).request.indexed_at.ToMilliseconds() == (
        1795507200250
    )
    batch = calls.index_batch([{"doc_id": "a", "simhash": 1, "indexed_at": when}]).request
    assert batch.documents[0].indexed_at.ToMilliseconds() == 1795507200000
    assert not calls.query(None, 1, None, 0, None, None).request.HasField("max_age")
    with pytest.raises(ValueError, match="aware datetime"):
        calls.index("a", None, 1, None, indexed_at=datetime(2026, 11, 24))
    with pytest.raises(ValueError, match="max_age must be positive"):
        calls.query(None, 1, None, 0, None, None, max_age=timedelta(0))


def test_durations_and_instants_as_typed() -> None:
    assert parse_duration("72h") == timedelta(hours=72)
    assert parse_duration("30d") == timedelta(days=30)
    assert parse_duration("1.5m") == timedelta(seconds=90)
    assert parse_duration("250ms") == timedelta(milliseconds=250)
    for bad in ("72", "h", "-3h", "0s", "3 weeks"):
        with pytest.raises(ValueError):
            parse_duration(bad)
    assert parse_instant("2026-11-24T16:00:00+08:00") == datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
    assert parse_instant("1795507200") == datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
    assert parse_instant("2026-11-24T08:00:00Z").tzinfo is not None
    with pytest.raises(ValueError, match="no UTC offset"):
        parse_instant("2026-11-24T08:00:00")
    with pytest.raises(ValueError, match="not a time"):
        parse_instant("yesterday")
    assert parse_instant("2026-11-24T16:00:00+08:00").utcoffset() == timezone(timedelta(hours=8)).utcoffset(None)


def test_the_retention_is_a_ttl_on_the_tables_a_document_lives_in() -> None:
    tables = index_tables("t", retention_seconds=30 * 86400)
    assert [t.family.ttl_seconds for t in tables.documents()] == [30 * 86400] * 3
    assert tables.meta.family.ttl_seconds is None and tables.claims.family.ttl_seconds == 60
    assert all(t.family.ttl_seconds is None for t in index_tables("t").documents())
    with pytest.raises(ValueError, match="at least 3600 s"):
        index_tables("t", retention_seconds=600)


def test_the_command_line_names_a_bad_time_before_calling_anyone() -> None:
    from click.testing import CliRunner

    from simhash_client.cli import _document_line
    from simhash_server.cli import main

    runner = CliRunner()
    bad_age = runner.invoke(main, ["query", "--simhash", "00000000000000ff", "--max-age", "soon"])
    assert bad_age.exit_code == 2 and "--max-age" in bad_age.output and "not a duration" in bad_age.output
    bad_time = runner.invoke(main, ["index", "a", "--simhash", "00000000000000ff", "--indexed-at", "2026-11-24"])
    assert bad_time.exit_code == 2 and "--indexed-at" in bad_time.output and "no UTC offset" in bad_time.output
    both = runner.invoke(main, ["dedup", "--input", "-", "--indexed-at", "1795507200"], input="")
    assert both.exit_code == 2 and "a line's own" in both.output
    line = _document_line('{"id": "a", "simhash": "00000000000000ff", "indexed_at": "2026-11-24T08:00:00Z"}')
    assert line["indexed_at"] == datetime(2026, 11, 24, 8, 0, tzinfo=UTC)
    with pytest.raises(ValueError, match=r'"indexed_at": .* is not a time'):
        _document_line('{"id": "a", "simhash": "00000000000000ff", "indexed_at": "monday"}')


def test_a_window_reaching_back_before_1970_reads_every_cell() -> None:
    # HBase refuses a time range starting below 0; a max_age longer than the epoch's age is "any time".
    assert since(None) == since(0) == since(-1_796_585_622_000) == {}
    assert since(5).get("timeRange").minStamp == 5
