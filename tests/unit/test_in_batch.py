"""DeduplicateBatch's order rule without HBase: each item decided as if the earlier ones had been sent alone,
and which items it may refuse before it takes the claims."""

from __future__ import annotations

import random

from simhash_server.fingerprint import V4, fingerprint
from simhash_server.index.in_batch import Item, decide_in_order, refused_by_stored
from simhash_server.index.keys import drawer_prefixes
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


def test_only_a_stored_duplicate_the_batch_leaves_alone_refuses_before_the_claim() -> None:
    article, copy = text_item("a", ARTICLE), text_item("b", COPY)
    held = [Near("x", article.fingerprint, 0, article.sketch)]  # HBase holds the article under id x
    assert refused_by_stored([copy], [held]) == [True]
    assert refused_by_stored([copy], [[]]) == [False]  # nothing stored near it
    # x is rewritten by the batch (another text under id x, decided first): HBase's x may no longer count.
    rewritten = Item("x", article.fingerprint ^ (2**64 - 1), b"", 3, None)
    assert refused_by_stored([rewritten, copy], [[], held]) == [False, False]
    # A document is never its own duplicate: a retry of a stored item is decided under the claim.
    again = text_item("x", ARTICLE)
    assert refused_by_stored([again], [held]) == [False]


def _flipped(rng: random.Random, fp: int) -> int:
    return fp ^ sum(1 << b for b in rng.sample(range(64), rng.randint(0, 5)))


def _read(item: Item, stored: list[Near]) -> list[Near]:
    """What the item's drawer scans return of ``stored``: within its distance, sharing a drawer."""
    return [
        n._replace(distance=d)
        for n in stored
        if (d := (n.fingerprint ^ item.fingerprint).bit_count()) <= item.max_distance
        and set(drawer_prefixes(n.fingerprint)) & set(drawer_prefixes(item.fingerprint))
    ]


def test_an_item_refused_before_the_claim_is_refused_whatever_the_others_read() -> None:
    rng = random.Random(7)
    refusals = 0
    for _ in range(300):
        base = rng.getrandbits(64)
        items = [Item(rng.choice("abcdefg"), _flipped(rng, base), b"", 3, None) for _ in range(rng.randint(1, 6))]
        stored = [Near(rng.choice("abcxyz"), _flipped(rng, base), 0, b"") for _ in range(3)]
        first = [_read(item, stored) for item in items]
        refused = refused_by_stored(items, first)
        refusals += sum(refused)
        # Under the claim the other items' queries may read more (a writer elsewhere stored meanwhile) or
        # less: an item refused before it is refused all the same.
        later = [near if refused[n] else near + stored[:1] for n, near in enumerate(first)]
        for found in (first, later, [near if refused[n] else [] for n, near in enumerate(first)]):
            decisions = decide_in_order(items, found)
            assert all(not d.stored for d, r in zip(decisions, refused, strict=True) if r)
    assert refusals > 100  # the case is met, not only its absence
