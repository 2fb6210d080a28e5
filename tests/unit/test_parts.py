"""The parts of a text that a verified query also looks up (fingerprint/parts.py), and how what they find
joins the answer (index/model.py's part_probes and merged, index/in_batch.py)."""

from __future__ import annotations

import dataclasses
import random
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simhash_server.fingerprint import V1, V3, V4, V4_NOFOLD, V5, fingerprint, recipe_of
from simhash_server.fingerprint.codepoints import every_code_point
from simhash_server.fingerprint.native import fingerprinter
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.parts import line_span, lines_normalize_apart, part_texts, parts_work
from simhash_server.fingerprint.pipeline import part_fingerprints
from simhash_server.fingerprint.sketch import similarity
from simhash_server.fingerprint.sketch_format import parts_trailer
from simhash_server.index.in_batch import Item, decide_in_order
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import Near, Probe, merged, part_probes, verified

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from texts import golden_texts


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
    probes = part_probes(Probe.verified(whole, 8, 2, floor=0.75), [part])
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


# What the one-pass parts must match: each part fingerprinted as a text of its own (part_fingerprints).
_PLAIN = [
    "word",
    "Quick brown fox",
    " ",
    "  ",
    "2024-10-02",
    "v1.2",
    ".",
    "!",
    "?",
    ";",
    "。",
    "，",
    "\n",
    "\n",
    "\r\n",
    "\r",
    "\t",
    "ＡＢＣ１２",
    "e\u0301",
    "\u200b",
    "\u00ad",
    "ß",
    "軟體",
    "資訊",
    "网络",
    "電腦程式",
    "我们讨论了相似度",
    "ﬁ",
    "<email>",
    "a < b",
]
_PIECES = [
    *_PLAIN,
    "&& ",
    "<p>",
    "</div>",
    "<span\nclass=x>",
    "&amp;",
    "&",
    "2>&1",
    "&#160;",
    "\u2028",
    "\x0c",
    "\x85",
    "<!--\n-->",
    "<script>x\n</script>",
]


@pytest.mark.parametrize("version", [V4, V4_NOFOLD, V5])
def test_parts_from_one_pass_equal_each_part_fingerprinted_alone(version: str) -> None:
    rng = random.Random(7)
    texts = [*golden_texts().values(), *page_in_template(3)]
    for pieces in [_PLAIN] * 200 + [_PIECES] * 100 + [_PLAIN * 12 + _PIECES] * 100:  # the last: a little markup
        texts.append("".join(rng.choice(pieces) for _ in range(rng.randint(5, 120))))
    one_pass = located = 0
    for text in texts:
        made = fingerprint(text, version, parts=True)
        assert made.parts == part_fingerprints(text, version, made.value), repr(text[:200])
        assert made == dataclasses.replace(fingerprint(text, version), parts=made.parts)
        one_pass += lines_normalize_apart(text) and len(text.splitlines()) > 4
        form = recipe_of(version).normalization
        whole = normalize(text, True, form)
        located += not lines_normalize_apart(text) and any(
            line_span(whole, normalize(part, True, form)) for part in part_texts(text, recipe_of(version).query_parts)
        )
    # Most texts took the one-pass path, and markup's parts were found in the whole text: both were checked.
    assert one_pass > 150 and located > 30


@given(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=60))
def test_parts_from_one_pass_equal_each_part_alone_for_any_text(pieces: list[str]) -> None:
    text = "".join(pieces)
    made = fingerprint(text, V5, sketch=True)
    assert made.parts == part_fingerprints(text, V5, made.value)
    # v5's sketch is v4's (its first byte names the format) and the parts after it.
    assert made.sketch[1:] == fingerprint(text, V4, sketch=True).sketch[1:] + parts_trailer(made.parts)


def test_normalising_keeps_lines_apart_for_every_character_but_markup_and_other_breaks() -> None:
    # The lemma the one-pass parts rest on: line k of a normalised text is line k normalised alone.
    every = every_code_point().translate({ord(c): None for c in "&<\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})
    every = "".join(c for c in every if not "\ud800" <= c <= "\udfff")
    lines = [every[start : start + 97] for start in range(0, len(every), 97)]
    text = "\n".join(lines)
    assert lines_normalize_apart(text)
    for form in {recipe_of(v).normalization for v in (V4, V4_NOFOLD, V5)}:
        assert normalize(text, True, form).split("\n") == [normalize(line, True, form) for line in lines]


def test_markup_and_other_line_breaks_take_the_part_by_part_path() -> None:
    assert lines_normalize_apart("a <email> b\nsee 2>&1, a & b and a && b\r\nline")
    for text in ("a<p>b\nc", "a &amp; b", "x&#160;y", "a<span\nclass=x>b", "a\u2028b", "a\x0cb"):
        assert not lines_normalize_apart(text), text


def test_spans_out_of_the_texts_lines_are_refused() -> None:
    rust = fingerprinter(recipe_of(V4).features, True)
    for spans in ([(2, 1)], [(0, 4)], [(1, 1)]):
        with pytest.raises(ValueError, match="spans"):
            rust.fingerprint_with_spans("a\nb\nc", None, spans)


def test_a_line_span_is_where_a_part_is_whole_lines_of_the_text() -> None:
    text = "a\nb c\nd\nb c\nd e"
    assert line_span(text, "b c\nd") == (1, 3)  # the first of two places
    assert line_span(text, "d e") == (4, 5) and line_span(text, text) == (0, 5)
    assert line_span(text, "c\nd") is None and line_span(text, "b") is None  # not whole lines
    assert line_span("a\n\nb", "") == (1, 2) and line_span("a\nb", "") is None  # an empty line, or none
