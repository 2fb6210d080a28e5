"""Part rows (recipe v7, index/keys.py) without HBase: their keys, who writes them, what the scans make of
them, and the in-batch rule that mirrors them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from simhash_server.fingerprint import V6, V7, fingerprint, recipe_of
from simhash_server.fingerprint.sketch_format import stored_parts
from simhash_server.index.errors import CorruptData
from simhash_server.index.in_batch import Item, decide_in_order
from simhash_server.index.keys import (
    PART_KEY_LENGTH,
    drawer_keys,
    drawer_prefixes,
    owner_of_key,
    part_prefixes,
    part_row_keys,
    split_part_key,
)
from simhash_server.index.model import Probe
from simhash_server.index.nearby import near_candidates
from simhash_server.index.scans import ScanPlan
from simhash_server.index.writes import Record, index_steps

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from texts import page_in_template

STORED, SENT = page_in_template(0)


def test_a_part_row_key_is_the_part_drawer_key_with_flag_plus_ten_then_the_document_fingerprint() -> None:
    part, whole = 0x0123456789ABCDEF, 0xFEDCBA9876543210
    keys = part_row_keys(part, whole)
    assert [k[:4] for k in keys] == [k[:4] for k in drawer_keys(part)]
    assert [k[4] for k in keys] == list(range(10, 20)) and all(len(k) == PART_KEY_LENGTH for k in keys)
    assert [k[:5] for k in keys] == part_prefixes(part)
    assert {split_part_key(k)[1:] for k in keys} == {(part, whole)} and {owner_of_key(k) for k in keys} == {whole}
    assert owner_of_key(drawer_keys(part)[3]) == part
    # Part prefixes never meet drawer prefixes: ordinary scans (flags 0-9) do not see part rows.
    assert not set(part_prefixes(part)) & set(drawer_prefixes(part))


@pytest.mark.parametrize("bad", [b"\x00" * 13, b"\x00" * 20, b"\x00\x00\x00\x00\x0a" + b"\x00" * 15])
def test_a_row_that_is_not_a_part_row_is_refused_by_name(bad: bytes) -> None:
    with pytest.raises(CorruptData, match="part row key"):
        split_part_key(bad)


def test_only_a_v7_index_writes_part_rows_and_only_for_a_sketch_that_stores_a_part() -> None:
    made = fingerprint(STORED, V7, sketch=True)
    first = stored_parts(made.sketch)[0]
    final = {b"page": made.value, b"bare": 0x42}
    sketches = {b"page": made.sketch, b"bare": b""}
    old = {doc: Record() for doc in final}

    def drawer_puts(part_rows: bool) -> set[bytes]:
        steps = index_steps(final, sketches, old, part_rows=part_rows)
        return {key for step in steps if step.table == "drawers" for key, _ in step.puts}

    plain = set(drawer_keys(made.value)) | set(drawer_keys(0x42))
    assert drawer_puts(False) == plain
    assert drawer_puts(True) == plain | set(part_row_keys(first, made.value))
    assert recipe_of(V7).part_rows and not recipe_of(V6).part_rows
    # v7 stores v6's fingerprint and sketch: only the index's rows differ.
    assert fingerprint(STORED, V6, sketch=True) == made


def test_a_verifying_probe_reads_the_part_rows_and_meets_the_document_at_its_own_distance() -> None:
    stored = fingerprint(STORED, V7, sketch=True)
    first = stored_parts(stored.sketch)[0]
    sent = fingerprint(SENT, V7).value
    assert (sent ^ stored.value).bit_count() > 8  # the template moved the page's fingerprint out of reach
    plan = ScanPlan([sent, sent], [], part_rows=[True, False])
    assert len(plan.scans) == 1  # no region boundaries given: one scan of every prefix
    assert set(plan.owners) == set(drawer_prefixes(sent)) | set(part_prefixes(sent))
    assert all(plan.owners[p] == [0] for p in part_prefixes(sent))  # the unverified probe asked for none
    keys = [*part_row_keys(first, stored.value), *drawer_keys(sent ^ 1)]
    owned = [k for k in keys if k[:5] in plan.owners]
    found, via_parts = plan.found_with_parts(owned)
    assert found == [{sent ^ 1}, {sent ^ 1}] and via_parts == [{(first, stored.value)}, set()]
    probes = [Probe.verified(sent, 8, None, floor=0.75), Probe(sent, 3)]
    near, read = near_candidates(probes, found, None, via_parts)
    assert near[0] == {sent ^ 1: 1, stored.value: (sent ^ stored.value).bit_count()}
    assert near[1] == {sent ^ 1: 1} and read.fps == sorted({sent ^ 1, stored.value})
    # A part beyond the probe's distance leads nowhere.
    far = [{(first ^ 0x1FF, stored.value)}, set()]
    assert near_candidates(probes, found, None, far)[0][0] == {sent ^ 1: 1}


def test_in_a_batch_an_earlier_page_is_met_by_its_first_part_only_with_part_rows() -> None:
    def item(doc_id: str, text: str) -> Item:
        made = fingerprint(text, V7, sketch=True, parts=True)
        return Item(doc_id, made.value, made.sketch, 8, 0.75, parts=made.parts)

    page, article = item("page", STORED), item("article", SENT)
    without = decide_in_order([page, article], [[], []])
    assert [d.stored for d in without] == [True, True]
    with_rows = decide_in_order([page, article], [[], []], part_rows=True)
    assert [d.stored for d in with_rows] == [True, False]
    (hit,) = with_rows[1].hits
    assert hit.doc_id == "page" and hit.similarity is not None and hit.similarity >= 0.75
    # An unverified item (no floor), or one asking for the fingerprint's own answer (floor 0), reads none.
    bare = Item("bare", article.fingerprint, b"", 3, None)
    assert decide_in_order([page, bare], [[], []], part_rows=True)[1].stored
    zero = Item("zero", article.fingerprint, article.sketch, 8, 0.0, parts=article.parts)
    assert decide_in_order([page, zero], [[], []], part_rows=True)[1].stored


def test_only_a_probe_verifying_at_a_floor_above_0_reads_part_rows() -> None:
    assert Probe.verified(1, 8, None, floor=0.75).verifying
    assert not Probe.verified(1, 8, None, floor=0.0).verifying and not Probe(1, 3).verifying
