"""Recipe v6's renamed neighbours (fingerprint/renames.py): what a page keeps of its repeated words, the
extension's bytes against Python's, the trailer after a format 5 sketch, and the pages it tells apart."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_server.fingerprint import V5, V6, fingerprint, recipe_of
from simhash_server.fingerprint.native import native_function
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.renames import (
    CONTEXTS,
    WORDS,
    length,
    parse,
    renamed,
    renamed_trailers,
    renames,
    trailer,
)
from simhash_server.fingerprint.sketch import similarity
from simhash_server.fingerprint.sketch_format import format_of, parts_end, stored_parts

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from texts import golden_texts, manual_page

FLOOR = recipe_of(V6).dedup_floor


def test_two_pages_of_one_family_under_their_own_names_are_renamed_neighbours() -> None:
    a = manual_page("logname", "print the name of the current user")
    b = manual_page("hostid", "print the numeric identifier of the current host")
    sa, sb = (fingerprint(t, V6, sketch=True).sketch for t in (a, b))
    v5 = similarity(*(fingerprint(t, V5, sketch=True).sketch for t in (a, b)))
    assert v5 >= FLOOR  # what v5 calls a copy
    assert renamed(renames(normalize(a)), renames(normalize(b)))
    assert similarity(sa, sb) == similarity(sa, sb, native=False) == 0.0


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace("current", "curent", 1),  # a typo
        lambda t: t.replace("2023", "2024"),  # a changed date, however often
        lambda t: "Home | Docs | Blog | Tags\n" + t + "\nAbout us | Contact | Privacy\n",  # a template
        lambda t: t.replace("input", "data"),  # a word changed throughout, in one context only
    ],
)
def test_a_copy_is_not_renamed(edit) -> None:
    page = manual_page("logname", "print the name of the current user")
    copy = edit(page)
    sa, sb = (fingerprint(t, V6, sketch=True).sketch for t in (page, copy))
    v5 = similarity(*(fingerprint(t, V5, sketch=True).sketch for t in (page, copy)))
    assert similarity(sa, sb) == similarity(sa, sb, native=False) == v5 >= FLOOR


def test_chinese_words_are_left_out_and_latin_ones_in_chinese_text_kept() -> None:
    zh = "文件".join(["打开", "保存", "关闭", "复制"]) + "。"
    assert renames(normalize(zh * 3)) == {}
    page = "\n".join(f"{k}用 svnadmin {k}令管理仓库" for k in "一二三四")
    other = page.replace("svnadmin", "svnlook")
    assert renamed(renames(normalize(page)), renames(normalize(other)))


def test_a_page_keeps_its_most_repeated_words_each_with_its_first_contexts() -> None:
    words = [f"w{chr(97 + i)}" for i in range(WORDS + 4)]
    text = " ".join(f"{w} x{k}y" for i, w in enumerate(words) for k in range(3 + (i == 0) * 40))
    kept = renames(text)
    assert len(kept) == WORDS
    assert max(len(c) for c in kept.values()) == CONTEXTS  # the first word stands in 43 contexts, CONTEXTS kept
    assert renames("alpha alpha beta") == {}  # seen twice: not repeated enough


def test_the_trailer_reads_back_and_its_length_is_checked() -> None:
    text = normalize(manual_page("logname", "print the name of the current user"))
    made = trailer(text, native=False)
    assert length(made, 0) == len(made)
    assert parse(made, 0) == renames(text)
    assert length(made[:-1], 0) is None
    assert length(made + b"\x00", 0) == len(made)  # what follows is the caller's to refuse


def test_a_format_5_sketch_carries_its_parts_then_its_renames() -> None:
    text = manual_page("logname", "print the name of the current user")
    made = fingerprint(text, V6, sketch=True)
    form = format_of(made.sketch)
    assert form is not None and form.code == 5
    assert stored_parts(made.sketch) == made.parts
    assert parse(made.sketch, parts_end(made.sketch, form)) == renames(normalize(text))
    assert format_of(made.sketch[:-1]) is None
    assert format_of(made.sketch + b"\x00") is None


@pytest.mark.skipif(native_function("renames_trailer") is None, reason="the extension is not installed")
def test_the_extension_gives_pythons_bytes() -> None:
    texts = [normalize(t) for t in golden_texts().values()]
    texts += [normalize(manual_page(n, "print something")) for n in ("ls", "sha256sum", "b2sum")]
    rng = random.Random(20261207)
    alphabet = "ab0 19\t\n中文[]x\u3000\u2028\x1c_-.Aé𠀀\u0085\u1680"
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(3000)]
    assert [trailer(t, native=True) for t in texts] == [trailer(t, native=False) for t in texts]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_the_extension_gives_pythons_bytes_for_any_text(text: str) -> None:
    if native_function("renames_trailer") is None:
        pytest.skip("the extension is not installed")
    assert trailer(text, native=True) == trailer(text, native=False)


def _trailer_bytes(words: list[tuple[int, list[int]]]) -> bytes:
    out = bytearray([len(words)])
    for word, around in words:
        out += word.to_bytes(4, "big") + bytes([len(around)]) + b"".join(c.to_bytes(4, "big") for c in around)
    return bytes(out)


# Few distinct words and contexts, so that trailers share them; contexts in any order, repeated, and words given
# twice, as no trailer this code writes is but a stored one might be.
_TRAILERS = st.lists(st.tuples(st.integers(0, 5), st.lists(st.integers(0, 12), max_size=8)), max_size=6).map(
    _trailer_bytes
)


@settings(max_examples=500, deadline=None)
@given(_TRAILERS, _TRAILERS)
def test_the_extension_judges_any_two_trailers_as_python_does(a: bytes, b: bytes) -> None:
    if native_function("renamed") is None:
        pytest.skip("the extension is not installed")
    assert renamed_trailers(a, b, native=True) == renamed_trailers(a, b, native=False)


def test_the_extension_refuses_bytes_that_are_no_trailer() -> None:
    rust = native_function("renamed")
    if rust is None:
        pytest.skip("the extension is not installed")
    whole = _trailer_bytes([(1, [2, 3, 4])])
    for cut in (whole[:0], whole[:3], whole[:-1]):
        with pytest.raises(ValueError, match="not a renames trailer"):
            rust(cut, whole, 3)
