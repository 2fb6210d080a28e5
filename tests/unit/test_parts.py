"""The parts of a text that a verified query also looks up (fingerprint/parts.py), and how what they find
joins the answer (index/model.py's part_probes and merged, index/in_batch.py)."""

from __future__ import annotations

import dataclasses
import random

import pytest

from simhash_server.fingerprint import V1, V3, V4, V4_NOFOLD, fingerprint, recipe_of
from simhash_server.fingerprint.parts import part_texts, parts_work
from simhash_server.fingerprint.pipeline import part_fingerprints
from simhash_server.fingerprint.sketch import similarity
from simhash_server.index.in_batch import Item, decide_in_order
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import Near, Probe, merged, part_probes, verified


def _sentence(rng: random.Random, base: int) -> str:
    return "".join(chr(base + rng.randrange(3000)) for _ in range(rng.randint(18, 30))) + "。"


def _reaches(a: int, b: int) -> bool:
    """What a verified query's drawer scans return: within 8, sharing a drawer."""
    return (a ^ b).bit_count() <= 8 and bool(set(drawer_prefixes(a)) & set(drawer_prefixes(b)))


def page_in_template(seed: int) -> tuple[str, str]:
    """A page of 40 sentence lines, and the same page between 6 lines of another site's sentences each side."""
    rng = random.Random(seed)
    page = "\n".join(_sentence(rng, 0x4E00) for _ in range(40))
    header = "\n".join(_sentence(rng, 0x5E00) for _ in range(6))
    footer = "\n".join(_sentence(rng, 0x5E00) for _ in range(6))
    return page, f"{header}\n{page}\n{footer}"


def test_parts_drop_whole_lines_from_either_end() -> None:
    text = "\n".join(f"line {n}" for n in range(10))
    assert part_texts(text, [(0.1, 0.1), (0.2, 0.2), (0.0, 0.4)]) == [
        "\n".join(f"line {n}" for n in range(1, 9)),
        "\n".join(f"line {n}" for n in range(2, 8)),
        "\n".join(f"line {n}" for n in range(6)),
    ]
    # A cut that drops no whole line gives no part: a one-line text has none.
    assert part_texts("one line only", [(0.1, 0.1), (0.0, 0.4)]) == []
    assert part_texts("a\nb\nc", [(0.1, 0.1)]) == []


@pytest.mark.parametrize("cut", [(0.5, 0.5), (-0.1, 0.0), (0.0, 1.0), (1.0, 0.0)])
def test_a_cut_that_leaves_nothing_or_is_no_share_is_refused(cut: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="cuts"):
        part_texts("a\nb", [cut])


def test_only_recipes_with_parts_have_part_fingerprints() -> None:
    _page, copy = page_in_template(5)
    assert recipe_of(V4).query_parts and recipe_of(V4_NOFOLD).query_parts
    assert parts_work(V4) == pytest.approx(2.0) and parts_work(V1) == parts_work(V3) == 0  # texts' worth
    for version in (V1, V3):
        assert part_fingerprints(copy, version, fingerprint(copy, version).value) == ()
    whole = fingerprint(copy, V4).value
    parts = part_fingerprints(copy, V4, whole)
    assert whole not in parts and len(set(parts)) == len(parts) > 0
    assert parts == tuple(dict.fromkeys(fingerprint(p, V4).value for p in part_texts(copy, recipe_of(V4).query_parts)))


def test_a_page_in_a_template_is_reached_through_a_part_of_the_copy() -> None:
    page, copy = page_in_template(5)
    p, c = fingerprint(page, V4, sketch=True), fingerprint(copy, V4, sketch=True)
    assert similarity(p.sketch, c.sketch) >= recipe_of(V4).query_floor  # a copy by its sketch
    assert not _reaches(p.value, c.value)  # that the whole text's drawers do not read
    assert any(_reaches(p.value, part) for part in part_fingerprints(copy, V4, c.value))


def test_what_the_parts_find_is_merged_at_its_distance_from_the_whole_text() -> None:
    whole, part = 0xFFFF_0000_0000_0000, 0x0000_0000_0000_00FF
    probes = part_probes(Probe.verified(whole, 8, 2), [part])
    assert [p.fingerprint for p in probes] == [whole, part] and {
        (p.max_distance, p.per_fingerprint) for p in probes
    } == {(8, 8)}
    stored = Near("d", part ^ 1, 1, b"s")
    both = Near("e", whole ^ 3, 2, b"t")
    found = merged(whole, [[both], [stored, both._replace(distance=30)]])
    assert found == [both._replace(distance=2), stored._replace(distance=(whole ^ part ^ 1).bit_count())]


def test_a_batch_item_names_an_earlier_page_its_parts_reach() -> None:
    page, copy = page_in_template(5)
    p, c = fingerprint(page, V4, sketch=True), fingerprint(copy, V4, sketch=True)
    first = Item("page", p.value, p.sketch, 8, 0.75)
    alone = Item("copy", c.value, c.sketch, 8, 0.75)
    with_parts = dataclasses.replace(alone, parts=part_fingerprints(copy, V4, c.value))
    assert [d.stored for d in decide_in_order([first, alone], [[], []])] == [True, True]
    decisions = decide_in_order([first, with_parts], [[], []])
    assert [d.stored for d in decisions] == [True, False]
    (hit,) = decisions[1].hits
    assert hit.doc_id == "page" and hit.distance == (p.value ^ c.value).bit_count() and hit.similarity is not None


def test_a_copy_a_part_found_far_away_comes_before_nearer_pages_the_sketch_rates_lower() -> None:
    page, copy = page_in_template(5)
    rng = random.Random(9)
    other = "\n".join(_sentence(rng, 0x4E00) for _ in range(40))
    neighbour = "\n".join(page.splitlines()[:24] + other.splitlines()[24:])  # shares 60% of the page's lines
    sent = fingerprint(copy, V4, sketch=True)
    far = fingerprint(page, V4, sketch=True)
    near = fingerprint(neighbour, V4, sketch=True)
    candidates = [
        Near("unchecked", sent.value ^ 1, 1, b""),
        Near("neighbour", sent.value ^ 3, 2, near.sketch),
        Near("page", far.value, (far.value ^ sent.value).bit_count(), far.sketch),
    ]
    rates = {n.doc_id: similarity(sent.sketch, n.sketch) for n in candidates[1:]}
    assert rates["page"] > rates["neighbour"] >= 0.3 and candidates[2].distance > 3  # the case this is about
    answer = verified(candidates, sent.sketch, 0.3, None)
    assert [h.doc_id for h in answer.hits] == ["page", "neighbour", "unchecked"]
    assert [h.doc_id for h in verified(candidates, sent.sketch, 0.3, 1).hits] == ["page"]
