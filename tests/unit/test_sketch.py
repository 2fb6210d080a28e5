"""The verification sketch: its stored form, and how well it estimates word 3-shingle Jaccard similarity."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_server.fingerprint.sketch import bin_minima, similarity
from simhash_server.fingerprint.sketch import sketch as sketch_in
from simhash_server.fingerprint.sketch_format import FORMATS, SKETCH_BYTES, SketchError, readable


def sketch(tokens: list[str], code: int = 1) -> bytes:
    """A sketch of format ``code``: 1 (recipe v1's) or 2 (v2's and v3's), whose Jaccard estimates the tests
    parametrized by ``code`` check alike; format 3's containment has tests of its own."""
    return sketch_in(tokens, FORMATS[code])


def standard_error(j: float, code: int) -> float:
    """Of a b-bit minwise estimate over k bins: bins agree with P = C + (1 - C) J, C = 2^-b the chance."""
    form = FORMATS[code]
    chance = 2.0**-form.bits
    agree = chance + (1 - chance) * j
    return (max(agree * (1 - agree), 0.01) / form.bins) ** 0.5 / (1 - chance)


JACCARD_FORMATS = pytest.mark.parametrize("code", [1, 2])


VOCABULARY = [f"w{i}" for i in range(50_000)]


def shingle_jaccard(a: list[str], b: list[str]) -> float:
    sa, sb = ({tuple(t[i : i + 3]) for i in range(max(len(t) - 2, 1))} for t in (a, b))
    return len(sa & sb) / len(sa | sb)


def words(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(VOCABULARY) for _ in range(n)]


def test_stored_form() -> None:
    value = sketch(["一", "个", "文档", "的", "词"])
    assert len(value) == SKETCH_BYTES == 257
    assert value[0] == 1 and readable(value)
    assert not readable(value[:-1]) and not readable(b"\x02" + value[1:]) and not readable(b"")


@JACCARD_FORMATS
def test_the_same_tokens_give_the_same_sketch_and_similarity_one(code: int) -> None:
    tokens = words(random.Random(1), 500)
    assert sketch(tokens, code) == sketch(list(tokens), code)
    assert similarity(sketch(tokens, code), sketch(tokens, code)) == 1.0


@JACCARD_FORMATS
def test_word_order_matters_as_it_does_for_shingles(code: int) -> None:
    tokens = words(random.Random(2), 400)
    assert similarity(sketch(tokens, code), sketch(tokens[::-1], code)) < 4 * standard_error(0.0, code)


@JACCARD_FORMATS
@pytest.mark.parametrize("replaced", [0.0, 0.01, 0.03, 0.1, 0.3])
def test_estimate_is_within_four_standard_errors_of_the_exact_jaccard(replaced: float, code: int) -> None:
    rng = random.Random(int(replaced * 1000))
    base = words(rng, 3000)
    edited = [rng.choice(VOCABULARY) if rng.random() < replaced else t for t in base]
    exact = shingle_jaccard(base, edited)
    estimate = similarity(sketch(base, code), sketch(edited, code))
    assert abs(estimate - exact) <= 4 * standard_error(exact, code)


@JACCARD_FORMATS
def test_unrelated_texts_estimate_near_zero(code: int) -> None:
    rng = random.Random(3)
    estimates = [similarity(sketch(words(rng, 800), code), sketch(words(rng, 800), code)) for _ in range(20)]
    assert max(estimates) < 4 * standard_error(0.0, code)


@JACCARD_FORMATS
def test_a_near_copy_scores_high_and_an_unrelated_text_low(code: int) -> None:
    rng = random.Random(4)
    base = words(rng, 2000)
    copy = [*base[:700], "广告", "插入", "一句", *base[700:]]
    assert similarity(sketch(base, code), sketch(copy, code)) > 0.95
    assert similarity(sketch(base, code), sketch(words(rng, 2000), code)) < 4 * standard_error(0.0, code)


@JACCARD_FORMATS
@pytest.mark.parametrize("length", [0, 1, 2, 3, 5, 40])
def test_short_texts_fill_every_bin(length: int, code: int) -> None:
    tokens = words(random.Random(length), length)
    minima = bin_minima(tokens, FORMATS[code].bins)
    assert minima.size == FORMATS[code].bins
    assert (minima < 2**56).all()  # every bin holds a real minimum, none is left empty
    assert similarity(sketch(tokens, code), sketch(tokens, code)) == 1.0


def test_short_texts_that_differ_do_not_look_alike() -> None:
    assert similarity(sketch(["a"]), sketch(["b"])) < 0.05
    assert similarity(sketch([]), sketch(["a", "b"])) < 0.05
    assert similarity(sketch(["a", "b", "c", "d"]), sketch(["a", "b", "c", "e"])) < 0.6


def test_format_2_cannot_tell_texts_of_one_shingle_apart_so_the_fingerprint_does() -> None:
    # With one shingle every bin holds the same minimum, and 2 bits of it agree by chance one time in four:
    # the sketch then says 1.0.  Such texts never reach verification: their fingerprints lie far apart.
    from simhash_server.fingerprint import V3, fingerprint
    from simhash_server.index.model import VERIFY_MAX_DISTANCE

    pairs = list(itertools.pairwise(f"w{i}" for i in range(200)))
    agree = sum(similarity(sketch([a], 2), sketch([b], 2)) == 1.0 for a, b in pairs)
    assert 20 < agree < 80  # about a quarter of 199 pairs
    far = [(fingerprint(a, V3).value ^ fingerprint(b, V3).value).bit_count() for a, b in pairs]
    assert min(far) > VERIFY_MAX_DISTANCE


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(VOCABULARY[:300]), max_size=60), st.lists(st.sampled_from(VOCABULARY[:300]), max_size=60)
)
def test_similarity_is_symmetric_and_bounded(a: list[str], b: list[str]) -> None:
    for code in (1, 2):
        sa, sb = sketch(a, code), sketch(b, code)
        assert similarity(sa, sb) == similarity(sb, sa)
        assert 0.0 <= similarity(sa, sb) <= 1.0


def test_a_sketch_of_another_format_is_refused_by_name() -> None:
    good = sketch(["x", "y", "z"])
    with pytest.raises(SketchError, match="second sketch is not of format 1"):
        similarity(good, b"\x02" + good[1:])
    with pytest.raises(SketchError, match="first sketch"):
        similarity(b"", good)


@pytest.mark.parametrize("bins", [0, 3, 100, 1 << 17])
def test_bins_must_be_a_power_of_two(bins: int) -> None:
    with pytest.raises(ValueError, match="bins must be a power of two"):
        bin_minima(["a", "b", "c"], bins)


def test_format_2_packs_2048_two_bit_bins_and_estimates_like_its_minima() -> None:
    from simhash_server.fingerprint.sketch import sketch_of_hashes
    from simhash_server.fingerprint.sketch_format import FORMATS, comparable, format_of

    v2 = FORMATS[2]
    words = [f"w{i}" for i in range(3000)]
    a, b = words, words[:2700] + [f"x{i}" for i in range(300)]
    sa, sb = sketch_in(a, v2), sketch_in(b, v2)
    assert len(sa) == v2.size == 513 and sa[0] == 2 and format_of(sa) == v2
    low_a, low_b = (bin_minima(t, 2048) & np.uint64(3) for t in (a, b))
    agree = np.count_nonzero(low_a == low_b) / 2048
    assert similarity(sa, sb) == pytest.approx(max(0.0, (agree - 0.25) / 0.75))
    true = len(set(zip(a, a[1:], a[2:], strict=False)) & set(zip(b, b[1:], b[2:], strict=False))) / len(
        set(zip(a, a[1:], a[2:], strict=False)) | set(zip(b, b[1:], b[2:], strict=False))
    )
    assert abs(similarity(sa, sb) - true) < 0.05
    assert similarity(sa, sa) == 1.0
    assert not comparable(sa, sketch(a)) and comparable(sa, sb)
    with pytest.raises(SketchError, match="second sketch is not of format 2"):
        similarity(sa, sketch(a))
    assert sketch_of_hashes(np.zeros(0, np.uint64), v2)[0] == 2


def shingle_sets(*texts: list[str]) -> list[set[tuple[str, ...]]]:
    return [set(zip(t, t[1:], t[2:], strict=False)) for t in texts]


def test_format_3_counts_its_shingles_and_scores_containment() -> None:
    from simhash_server.fingerprint.sketch import jaccard
    from simhash_server.fingerprint.sketch_format import distinct_shingles, format_of

    v3 = FORMATS[3]
    article = [f"w{i}" for i in range(3000)]
    template = [f"t{i}" for i in range(800)]  # 21% of the copy
    copy = template[:300] + article + template[300:]
    sa, sc = sketch_in(article, v3), sketch_in(copy, v3)
    assert len(sa) == v3.size == 517 and sa[0] == 3 and format_of(sa) == v3
    a, c = shingle_sets(article, copy)
    assert distinct_shingles(sa) == len(a) and distinct_shingles(sc) == len(c)
    exact_j = len(a & c) / len(a | c)
    assert abs(jaccard(sa, sc) - exact_j) < 0.05 and exact_j < 0.8
    # The whole article is in the copy: containment near 1 where Jaccard is under 0.8.
    assert similarity(sa, sc) > 0.95
    assert similarity(sa, sc) == pytest.approx(similarity(sc, sa))
    assert distinct_shingles(sketch_in(article, FORMATS[2])) is None


def test_format_3_scores_a_small_page_inside_a_large_one_low() -> None:
    from simhash_server.fingerprint.sketch import containment

    small = [f"s{i}" for i in range(400)]
    large = [f"w{i}" for i in range(3000)] + small  # the small page is all in it, at 12% of its size
    score = similarity(sketch_in(small, FORMATS[3]), sketch_in(large, FORMATS[3]))
    assert 0.15 < score < 0.4  # 2 x (400 / 3400) scales the full containment down
    assert containment(1.0, 10, 10) == 1.0 and containment(0.0, 10, 10) == 0.0
    assert containment(0.5, 100, 50) == pytest.approx(1.0)  # 50 shared: all of the smaller, which is half
    assert containment(0.0, 0, 0) == 1.0 and containment(0.0, 0, 5) == 0.0


def test_formats_3_and_2_do_not_compare() -> None:
    tokens = [f"w{i}" for i in range(50)]
    with pytest.raises(SketchError, match="second sketch is not of format 3"):
        similarity(sketch_in(tokens, FORMATS[3]), sketch_in(tokens, FORMATS[2]))


@pytest.mark.parametrize("code", sorted(FORMATS))
def test_the_extension_counts_agreeing_bins_as_numpy_does(code: int) -> None:
    from simhash_server.fingerprint.native import native_function
    from simhash_server.fingerprint.sketch import jaccard

    if native_function("agreeing_bins") is None:
        pytest.skip("the extension is not installed")
    form = FORMATS[code]
    rng = random.Random(code)
    base = [rng.getrandbits(8) for _ in range(form.size - form.header)]
    # Trailers of formats with parts or renames: none (a count byte of 0 each); the bins are what is compared.
    tail = bytes(int(form.parts) + int(form.renames))
    header = bytes([code]) + (rng.getrandbits(32).to_bytes(4, "big") if form.counted else b"")
    for changed in (0, 1, 7, 100, len(base)):
        other = list(base)
        for at in rng.sample(range(len(base)), changed):
            other[at] = rng.getrandbits(8)
        a, b = header + bytes(base) + tail, header + bytes(other) + tail
        assert jaccard(a, b, native=True) == jaccard(a, b, native=False)
        assert similarity(a, b, native=True) == similarity(a, b, native=False)


def test_the_extensions_bin_count_names_a_bad_argument() -> None:
    from simhash_server.fingerprint.native import native_function

    rust = native_function("agreeing_bins")
    if rust is None:
        pytest.skip("the extension is not installed")
    assert rust(b"\x00\x0f", b"\x00\x0e", 0, 2, 2) == 7  # one of eight 2-bit bins differs
    assert rust(b"\x00\x0f", b"\x00\x0e", 0, 2, 8) == 1
    with pytest.raises(ValueError, match="bits: 1, 2, 4 or 8, got 3"):
        rust(b"\x00", b"\x00", 0, 1, 3)
    with pytest.raises(ValueError, match=r"start, end: 0\.\.2 is not a range of both sketches"):
        rust(b"\x00\x00", b"\x00", 0, 2, 2)


def test_a_verified_query_scores_only_stored_sketches_of_its_own_format() -> None:
    from simhash_server.fingerprint import V5, V6, fingerprint
    from simhash_server.index.model import Near, verified

    text = "\n".join(f"line {i} of a page that is long enough to be sketched" for i in range(40))
    mine, older = fingerprint(text, V6, sketch=True), fingerprint(text, V5, sketch=True)
    other = fingerprint(text.replace("line", "row").replace("page", "list"), V6, sketch=True)
    near = [
        Near("same", mine.value, 0, mine.sketch),
        Near("older, close", mine.value ^ 1, 1, older.sketch),  # v5's format: not compared, within 3: kept
        Near("older, far", mine.value ^ 0x1F, 5, older.sketch),  # beyond 3 only a sketch could vouch for it
        Near("none", mine.value ^ 3, 2, b""),
        Near("other", mine.value ^ 7, 3, other.sketch),  # of the format, scored, below the floor
    ]
    answer = verified(near, mine.sketch, 0.75, None)
    assert [(h.doc_id, h.similarity) for h in answer.hits] == [("same", 1.0), ("older, close", None), ("none", None)]
    assert answer.below_floor == 1
    unreadable = verified(near, b"\x09", 0.75, None)  # the query's own sketch of no known format
    assert [(h.doc_id, h.similarity) for h in unreadable.hits] == [
        ("same", None),
        ("older, close", None),
        ("none", None),
        ("other", None),
    ]
    assert unreadable.below_floor == 0
