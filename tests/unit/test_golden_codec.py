"""The row-key codec and the sketch comparison against the golden files the Java jobs' JUnit tests read too
(server/mapreduce/src/test): both languages are held to one definition."""

from __future__ import annotations

from pathlib import Path

import pytest

from simhash_server.fingerprint.renames import renamed_trailers
from simhash_server.fingerprint.sketch import similarity
from simhash_server.fingerprint.sketch_format import FORMATS, comparable, format_of, stored_parts
from simhash_server.index.keys import decode_key, drawer_keys, owner_of_key, part_row_keys, split_part_key

pytestmark = pytest.mark.unit

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def _rows(name: str) -> list[list[str]]:
    lines = (GOLDEN / name).read_text().splitlines()
    return [line.split("\t") for line in lines if line and not line.startswith("#")]


def test_drawer_keys_are_the_golden_ones() -> None:
    rows = _rows("drawer-keys.tsv")
    assert len(rows) > 50
    for fp_hex, keys in rows:
        fp = int(fp_hex, 16)
        assert [k.hex() for k in drawer_keys(fp)] == keys.split(","), fp_hex
        assert [decode_key(bytes.fromhex(k))[1:] for k in keys.split(",")] == [(flag, fp) for flag in range(10)]


def test_part_row_keys_are_the_golden_ones() -> None:
    rows = _rows("part-row-keys.tsv")
    assert len(rows) > 50
    for part_hex, whole_hex, keys in rows:
        part, whole = int(part_hex, 16), int(whole_hex, 16)
        assert [k.hex() for k in part_row_keys(part, whole)] == keys.split(","), part_hex
        for flag, key in enumerate(bytes.fromhex(k) for k in keys.split(",")):
            assert split_part_key(key)[1:] == (part, whole) and key[4] == 10 + flag
            assert key[:4] == drawer_keys(part)[flag][:4] and owner_of_key(key) == whole


def test_sketch_similarities_are_the_golden_ones() -> None:
    rows = _rows("sketch-pairs.tsv")
    assert {version for version, *_ in rows} == {"v1", "v2", "v3", "v4", "v4-nofold", "v5", "v6"}
    assert any(float(s) == 1.0 for *_, s in rows) and any(0.5 < float(s) < 1.0 for *_, s in rows)
    for version, a, b, expected in rows:
        sa, sb = bytes.fromhex(a), bytes.fromhex(b)
        assert comparable(sa, sb), version
        assert float(similarity(sa, sb)) == float(expected), (version, expected)


def test_the_parts_after_a_sketch_are_the_golden_ones() -> None:
    rows = _rows("sketch-parts.tsv")
    assert {version for version, *_ in rows} == {"v5", "v6"} and sum(1 for *_, parts in rows if parts) >= 5
    for version, sketch, parts in rows:
        value = bytes.fromhex(sketch)
        assert format_of(value) == FORMATS[{"v5": 4, "v6": 5}[version]], version
        assert stored_parts(value) == tuple(int(p, 16) for p in parts.split(",") if p)
        assert format_of(value + b"\0") is None and format_of(value[:-1]) is None  # the count bytes say the length


def test_renamed_trailers_are_judged_as_the_golden_file_says_on_both_paths() -> None:
    """Made-up trailers (words and contexts given twice among them), which Java's Sketches judges too."""
    rows = _rows("renamed-trailers.tsv")
    assert len(rows) > 100 and sum(1 for *_, want in rows if want == "true") > 10
    for a, b, want in rows:
        for native in (True, False):
            assert renamed_trailers(bytes.fromhex(a), bytes.fromhex(b), native) == (want == "true"), (a, b)
