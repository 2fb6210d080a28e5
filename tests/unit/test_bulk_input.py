"""Bulk-load input parsing: formats, compressions, rejects with reasons, resuming at an offset (no HBase)."""

from __future__ import annotations

import gzip
import json
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from simhash_server.bulk.input import InputSource, Record, Reject, encode_binary, parse_simhash
from simhash_server.fingerprint import FINGERPRINT_VERSION


def read_all(path: Path, fmt: str | None = None, **kw: object) -> list[Record | Reject]:
    source = InputSource.detect(str(path), fmt, None, "auto")
    return [item for item, _, _ in source.records(**kw)]  # type: ignore[arg-type]


def test_tsv_records_and_rejects_name_line_and_reason(tmp_path: Path) -> None:
    path = tmp_path / "in.tsv"
    path.write_text(
        "a\t00000000000000ff\n"
        "b\t0x00000000000000FF\n"
        "only-one-column\n"
        "c\tnot-a-number\n"
        "\t00000000000000ff\n"
        "d\t18446744073709551616\n"
        "e\t1\t2\t3\n"
        "\n"
        "f\t0000000000000001\n"  # all digits, but the file is hex (line 1 decided)
    )
    items = read_all(path)
    assert items[:2] == [Record(1, "a", 255, None), Record(2, "b", 255, None)]
    rejects = {i.line: i.reason for i in items if isinstance(i, Reject)}
    assert rejects == {
        3: "expected 2 or 3 tab-separated columns (doc_id, simhash[, indexed_at]), got 1",
        4: "simhash 'not-a-number' is not 16 hex digits",
        5: "doc_id is empty",
        6: "simhash '18446744073709551616' is decimal, but this file's simhash fields are hex (from line 1); "
        "pass --fingerprint-format",
        7: "expected 2 or 3 tab-separated columns (doc_id, simhash[, indexed_at]), got 4",
        8: "expected 2 or 3 tab-separated columns (doc_id, simhash[, indexed_at]), got 1",
    }
    assert items[-1] == Record(9, "f", 1, None)


def test_decimal_files_and_the_ambiguous_first_line(tmp_path: Path) -> None:
    path = tmp_path / "in.tsv"
    path.write_text("a\t1234567890123456\nb\t18446744073709551615\nc\t1234567890123456\n")
    items = read_all(path)
    assert isinstance(items[0], Reject) and "ambiguous" in items[0].reason and "--fingerprint-format" in items[0].reason
    assert items[1:] == [Record(2, "b", 2**64 - 1, None), Record(3, "c", 1234567890123456, None)]
    explicit = InputSource.detect(str(path), None, None, "decimal")
    assert next(i for i, _, _ in explicit.records()) == Record(1, "a", 1234567890123456, None)


def test_csv_quoting(tmp_path: Path) -> None:
    path = tmp_path / "in.csv"
    path.write_text('"id, with comma",00000000000000aa\nplain,00000000000000bb\n"unclosed,00000000000000cc\n')
    items = read_all(path)
    assert items[0] == Record(1, "id, with comma", 0xAA, None)
    assert items[1] == Record(2, "plain", 0xBB, None)
    assert isinstance(items[2], Reject)


def test_jsonl_simhash_text_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "in.jsonl"
    lines = [
        {"doc_id": "a", "simhash": "00000000000000ff"},
        {"id": 7, "simhash": 255},
        {"doc_id": "t", "text": "近似重复"},
        {"doc_id": "both", "simhash": 1, "text": "x"},
        {"doc_id": "old", "simhash": 1, "fingerprint_version": "simhash64/old/r0"},
        {"doc_id": "ok", "simhash": 1, "fingerprint_version": FINGERPRINT_VERSION},
        [1, 2],
        {"doc_id": None, "simhash": 1},
        {"doc_id": "neg", "simhash": -1},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n{not json\n")
    items = read_all(path)
    assert items[0] == Record(1, "a", 255, None)
    assert items[1] == Record(2, "7", 255, None)
    assert items[2] == Record(3, "t", None, "近似重复")
    assert items[5] == Record(6, "ok", 1, None)
    reasons = {i.line: i.reason for i in items if isinstance(i, Reject)}
    assert reasons[4] == 'give exactly one of "simhash" and "text"'
    assert "fingerprint_version 'simhash64/old/r0' differs" in reasons[5]
    assert reasons[7] == "expected a JSON object, got list"
    assert reasons[8] == '"doc_id" must be a string, got NoneType'
    assert reasons[9] == "simhash -1 is not an unsigned 64-bit integer"
    assert reasons[10].startswith("not JSON:")


def test_invalid_utf8_is_rejected_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "in.tsv"
    path.write_bytes(b"a\t00000000000000ff\n\xff\xfe\t00000000000000ff\n")
    items = read_all(path)
    assert isinstance(items[1], Reject) and items[1].reason == "not UTF-8 (byte 0)"


@pytest.mark.parametrize("suffix", ["", ".gz", ".zst"])
def test_compressed_inputs_read_the_same_and_resume_at_an_offset(tmp_path: Path, suffix: str) -> None:
    fps = [((i + 1) * 0x9E3779B97F4A7C15) % 2**64 for i in range(5000)]  # a hex letter in line 1: hex file
    body = "".join(f"d{i}\t{fp:016x}\n" for i, fp in enumerate(fps)).encode()
    path = tmp_path / f"in.tsv{suffix}"
    raw = {"": body, ".gz": gzip.compress(body), ".zst": zstandard.ZstdCompressor().compress(body)}[suffix]
    path.write_bytes(raw)
    source = InputSource.detect(str(path), None, None, "auto")
    assert source.compression == {"": "none", ".gz": "gzip", ".zst": "zstd"}[suffix]
    items = list(source.records())
    assert [i.doc_id for i, _, _ in items] == [f"d{i}" for i in range(5000)]  # type: ignore[union-attr]
    assert items[-1][1] == len(body)  # decompressed offset
    assert items[-1][2] == len(raw)  # file bytes read, for progress
    _, offset, _ = items[2999]
    resumed = [i for i, _, _ in source.records(skip_bytes=offset, first_line=3001)]
    assert resumed[0] == Record(3001, "d3000", fps[3000], None)
    assert len(resumed) == 2000


def test_binary_format_round_trip_and_truncation(tmp_path: Path) -> None:
    records = [("a", 1), ("文档", 2**64 - 1), ("c" * 300, 0)]
    path = tmp_path / "in.bin"
    path.write_bytes(encode_binary(records) + b"\x00\x00\x00\x00\x00\x00\x00\x05\x00\x09abc")
    items = read_all(path)
    assert items[:3] == [Record(i + 1, d, fp, None) for i, (d, fp) in enumerate(records)]
    assert isinstance(items[3], Reject) and items[3].reason == "truncated record: id of 9 bytes, 3 left"
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"not the magic")
    (item,) = read_all(bad)
    assert isinstance(item, Reject) and item.reason.startswith("not the bin format")


def test_format_must_be_known(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot tell the format"):
        InputSource.detect(str(tmp_path / "data.dat"), None, None, "auto")


@given(st.integers(0, 2**64 - 1))
def test_parse_simhash_round_trips_hex_and_decimal(value: int) -> None:
    assert parse_simhash(f"{value:016x}", "hex") == value
    assert parse_simhash(f"0x{value:016X}", "hex") == value
    assert parse_simhash(str(value), "decimal") == value


def test_indexed_at_in_every_text_format_and_its_rejects(tmp_path: Path) -> None:
    """RFC 3339 with an offset or Unix seconds, in milliseconds; a time with no offset, ahead of the clock, or
    (given the index's retention) too old to keep is rejected by line."""
    hour_ago = int(time.time()) - 3600
    tsv = tmp_path / "in.tsv"
    tsv.write_text(
        "a\t00000000000000ff\t2026-11-24T08:00:00Z\n"
        f"b\t00000000000000ff\t{hour_ago}\n"
        "c\t00000000000000ff\t2026-11-24T08:00:00\n"
        f"d\t00000000000000ff\t{int(time.time()) + 3600}\n"
        "e\t00000000000000ff\tyesterday\n"
    )
    items = read_all(tsv)
    assert items[0] == Record(1, "a", 255, None, 1795507200000)
    assert items[1] == Record(2, "b", 255, None, hour_ago * 1000)
    reasons = [i.reason for i in items[2:]]  # type: ignore[union-attr]
    assert reasons[0] == "indexed_at '2026-11-24T08:00:00' has no UTC offset: add Z or +08:00"
    assert reasons[1].startswith("indexed_at is 3") and "s ahead of the server's clock (at most 60 s)" in reasons[1]
    assert reasons[2] == "indexed_at 'yesterday' is not RFC 3339 (2026-11-24T08:00:00Z) or Unix seconds"
    jsonl = tmp_path / "in.jsonl"
    recent = datetime.fromtimestamp(hour_ago + 3000, timezone(timedelta(hours=8)))  # 10 minutes ago
    lines = [
        {"id": "t", "text": "x", "indexed_at": recent.isoformat()},
        {"id": "s", "simhash": 5, "indexed_at": hour_ago},
        {"id": "n", "simhash": 5, "indexed_at": True},
    ]
    jsonl.write_text("".join(json.dumps(line) + "\n" for line in lines))
    source = InputSource.detect(str(jsonl), None, None, "auto")
    source.retention_seconds = 1800  # half an hour: a document seen an hour ago would expire at once
    items = [item for item, _, _ in source.records()]
    assert items[0] == Record(1, "t", None, "x", (hour_ago + 3000) * 1000)
    assert "older than the index's retention of 1800 s" in items[1].reason  # type: ignore[union-attr]
    assert "must be an RFC 3339 string or Unix seconds, got bool" in items[2].reason  # type: ignore[union-attr]


def _sketch(text: str = "a text of a few words to sketch, long enough for shingles") -> bytes:
    from simhash_server.fingerprint import fingerprint

    return fingerprint(text, FINGERPRINT_VERSION, sketch=True).sketch


def test_a_sketch_beside_a_simhash_is_taken_and_a_bad_one_is_a_reject(tmp_path: Path) -> None:
    import base64

    good = _sketch()
    short = good[:100]
    other_format = bytes([2]) + good[5:518]  # a v1-v3 sketch's format (514 bytes), under a v6 index
    lines = [
        {"doc_id": "good", "simhash": "00000000000000ff", "sketch": base64.b64encode(good).decode()},
        {"doc_id": "short", "simhash": "00000000000000ff", "sketch": base64.b64encode(short).decode()},
        {"doc_id": "v3", "simhash": "00000000000000ff", "sketch": base64.b64encode(other_format).decode()},
        {"doc_id": "b64", "simhash": "00000000000000ff", "sketch": "not base64!"},
        {"doc_id": "num", "simhash": "00000000000000ff", "sketch": 5},
        {"doc_id": "text", "text": "words", "sketch": base64.b64encode(good).decode()},
        {"doc_id": "empty", "simhash": "00000000000000ff", "sketch": ""},
    ]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    items = read_all(path)
    assert items[0] == Record(1, "good", 255, None, None, good)
    reasons = {i.line: i.reason for i in items if isinstance(i, Reject)}
    assert reasons == {
        2: "sketch is 100 bytes of format 5; the index's recipe stores format 5 (517 bytes, then a count byte and 8 "
        "bytes a part, then its repeated words)",
        3: "sketch is 514 bytes of format 2; the index's recipe stores format 5 (517 bytes, then a count byte and 8 "
        "bytes a part, then its repeated words)",
        4: '"sketch" is not base64',
        5: '"sketch" must be a base64 string, got int',
        6: 'give "sketch" only beside "simhash": a text is sketched with the index\'s recipe',
        7: "sketch is empty",
    }


def test_the_bin_format_with_sketches_round_trips_resumes_and_rejects_a_bad_sketch(tmp_path: Path) -> None:
    good = _sketch()
    records = [("a", 1, good), ("文档", 2**64 - 1, b""), ("bad", 3, good[:7]), ("d", 4, good)]
    path = tmp_path / "in.bin"
    path.write_bytes(encode_binary(records))
    assert path.read_bytes()[:8] == b"SHBULK2\n"
    items = read_all(path)
    assert items[0] == Record(1, "a", 1, None, None, good)
    assert items[1] == Record(2, "文档", 2**64 - 1, None)
    assert isinstance(items[2], Reject) and items[2].line == 3 and "sketch is 7 bytes" in items[2].reason
    assert items[3] == Record(4, "d", 4, None, None, good)
    source = InputSource.detect(str(path), None, None, "auto")
    offsets = [offset for _, offset, _ in source.records()]
    resumed = InputSource.detect(str(path), None, None, "auto")  # a new run, resumed past its first records
    assert [i for i, _, _ in resumed.records(skip_bytes=offsets[1], first_line=3)][1] == items[3]
