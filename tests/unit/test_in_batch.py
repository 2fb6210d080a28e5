"""DeduplicateBatch's order rule without HBase: each item decided as if the earlier ones had been sent alone."""

from __future__ import annotations

from simhash_server.fingerprint import V4, fingerprint
from simhash_server.index.in_batch import Item, decide_in_order
from simhash_server.index.model import Near

ARTICLE = "。".join("".join(chr(0x4E00 + (i * 7 + j * 13) % 20000) for j in range(20)) for i in range(40)) + "。"
COPY = ARTICLE + "（本文转载自技术博客）"


def text_item(doc_id: str, text: str, floor: float = 0.75) -> Item:
    fp = fingerprint(text, V4, sketch=True)
    return Item(doc_id, fp.value, fp.sketch, 8, floor)


def test_a_near_duplicate_of_an_earlier_item_names_it_and_is_not_stored() -> None:
    first, copy = text_item("a", ARTICLE), text_item("b", COPY)
    decisions = decide_in_order([first, copy], [[], []])
    assert [d.stored for d in decisions] == [True, False]
    assert [h.doc_id for h in decisions[1].hits] == ["a"] and decisions[1].hits[0].similarity is not None


def test_an_item_is_never_its_own_duplicate_and_replaces_what_its_id_held() -> None:
    old = text_item("a", ARTICLE)
    stored = [Near("a", old.fingerprint, 0, old.sketch)]  # what HBase held under id a
    far = Item("a", old.fingerprint ^ (2**64 - 1), b"", 3, None)  # id a again, a fingerprint nowhere near
    probe = Item("c", old.fingerprint, b"", 3, None)
    decisions = decide_in_order([far, probe], [stored, stored])
    # "a" is rewritten by the batch before "c" is decided: HBase's old "a" no longer counts.
    assert [d.stored for d in decisions] == [True, True] and decisions[1].hits == []


def test_unverified_items_take_what_is_within_their_distance_and_shares_a_drawer() -> None:
    base = 0x0123456789ABCDEF
    items = [
        Item("1", base, b"", 3, None),
        Item("2", base ^ 0b111, b"", 3, None),  # distance 3 from "1": a duplicate
        Item("3", base ^ 0b1111, b"", 3, None),  # 4 from "1", 1 from "2" (not stored): new
        Item("4", base ^ (0b1 << 60) ^ (0b1 << 47) ^ (0b1 << 34) ^ (0b1 << 21) ^ 1, b"", 8, None),
    ]
    decisions = decide_in_order(items, [[], [], [], []])
    assert [d.stored for d in decisions] == [True, False, True, True]
    assert [(h.doc_id, h.distance) for h in decisions[1].hits] == [("1", 3)]
    # "4" is within 8 of "1" and "3" but a bit in every segment: no drawer scan of it reads them.
    assert decisions[3].hits == []


def test_a_stored_candidate_below_the_floor_is_counted_not_a_hit() -> None:
    first = text_item("a", ARTICLE)
    other = "。".join("".join(chr(0x6000 + (i * 11 + j * 5) % 9000) for j in range(20)) for i in range(40))
    unlike = text_item("b", other)
    near = [Near("a", first.fingerprint, (first.fingerprint ^ unlike.fingerprint).bit_count(), first.sketch)]
    (decision,) = decide_in_order([unlike], [near])
    assert decision.stored and decision.hits == [] and decision.below_floor == 1
