"""DeduplicateBatch without I/O: a batch's items decided in request order, as if each were sent alone.

Under the batch's claim (claims.py) every item's query has read what HBase holds.  Item i is then stored
unless a near-duplicate other than itself is stored: one the query found, or one an earlier item of the batch
stored.  An earlier item stored under an id replaces what HBase held under that id, as its own Deduplicate
would have by the time item i was sent.  "Near" is the single call's rule: within the item's distance of, and
sharing a drawer (what the drawer scans can return) with, its fingerprint or one of its parts' (a verified
item's), then verified against the sketch when the item has a floor (model.verified), unverified otherwise
(model.ranked).

An item whose query, asked before the claim, finds a near-duplicate stored under an id no item of the batch
writes is refused whatever the batch stores (``refused_by_stored``): it is decided without the claim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simhash_server.fingerprint.sketch_format import stored_parts
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import Hit, Near, ranked, verified

__all__ = ["Decision", "Item", "decide_in_order", "refused_by_stored"]


@dataclass(frozen=True, slots=True)
class Item:
    doc_id: str
    fingerprint: int
    sketch: bytes
    max_distance: int
    floor: float | None  # None: unverified (a fingerprint without min_similarity)
    indexed_at_ms: int | None = None  # the time it is stored with (None: the batch's)
    max_age_ms: int | None = None  # only documents seen within this long count (None: any)
    parts: tuple[int, ...] = ()  # with a floor: the fingerprints of the text's parts (fingerprint/parts.py)


@dataclass(frozen=True, slots=True)
class Decision:
    hits: list[Hit]  # near-duplicates in the answer's order (model.ranked, model.verified); never the item's own id
    below_floor: int  # candidates the sketch put below the floor
    stored: bool


def _near_earlier(item: Item, earlier: Item, now_ms: int, part_rows: bool) -> Near | None:
    if (
        item.max_age_ms is not None
        and (now_ms if earlier.indexed_at_ms is None else earlier.indexed_at_ms) < now_ms - item.max_age_ms
    ):
        return None  # stored with a time outside the item's window: its query would not have read it
    looked_up = (item.fingerprint, *item.parts)  # what its query looks up: the text, then its parts
    # What leads to the earlier item: its fingerprint's drawer rows, and with part rows its first part's.
    leads = [earlier.fingerprint]
    if part_rows and item.floor:  # a floor above 0: a floor of 0 is the fingerprint's own answer
        leads += stored_parts(earlier.sketch)[:1]
    for lead in leads:
        drawers = set(drawer_prefixes(lead))
        for fp in looked_up:
            if (fp ^ lead).bit_count() <= item.max_distance and drawers & set(drawer_prefixes(fp)):
                distance = (item.fingerprint ^ earlier.fingerprint).bit_count()
                return Near(earlier.doc_id, earlier.fingerprint, distance, earlier.sketch)
    return None  # no drawer scan of the item would have returned it


def decide_in_order(
    items: Sequence[Item], found: Sequence[Sequence[Near]], now_ms: int = 0, part_rows: bool = False
) -> list[Decision]:
    """Each item's decision; ``found[i]``: the stored documents item i's query read (before the batch, within
    its window); ``now_ms``: the time the windows end (the batch's); ``part_rows``: whether the index keeps
    part rows (recipe v7), which a verified item's query also reads."""
    stored: dict[str, Item] = {}  # id -> what the batch stored under it last
    decisions = []
    for item, near in zip(items, found, strict=True):
        candidates = [n for n in near if n.doc_id not in stored]  # rewritten by the batch: its own version counts
        earlier = (_near_earlier(item, each, now_ms, part_rows) for each in stored.values())
        candidates += [n for n in earlier if n is not None]
        if item.floor is None:
            hits, below = ranked(candidates, None), 0
        else:
            answer = verified(candidates, item.sketch, item.floor, None)
            hits, below = answer.hits, answer.below_floor
        hits = [h for h in hits if h.doc_id != item.doc_id]
        if not hits:
            stored[item.doc_id] = item
        decisions.append(Decision(hits, below, not hits))
    return decisions


def refused_by_stored(
    items: Sequence[Item], found: Sequence[Sequence[Near]], now_ms: int = 0, part_rows: bool = False
) -> list[bool]:
    """Which items are near-duplicates of a stored document that the batch leaves as it is (an id of no item):
    ``decide_in_order`` refuses each of them, whatever it stores before it and whatever the other items'
    queries read, so long as ``found[i]`` is what item i's query read."""
    ids = {item.doc_id for item in items}
    return [
        not decide_in_order([item], [[n for n in near if n.doc_id not in ids]], now_ms, part_rows)[0].stored
        for item, near in zip(items, found, strict=True)
    ]
