"""The Rust path (server/native) gives exactly what the Python pipeline gives: tokens, hashes, fingerprints,
feature counts and sketches.  `make install` builds the extension, so its absence is a failure here."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "golden"))
from texts import golden_texts

from simhash_server.fingerprint import V1, V2, V3, VERSIONS, fingerprint, short_name
from simhash_server.fingerprint.features import DEFAULT_RECIPE, SHINGLES, token_hashes
from simhash_server.fingerprint.native import character_classes, decompositions, fingerprinter
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.tokens import _RUNS, tokenize

TEXTS = golden_texts()


@pytest.fixture(scope="module")
def native():
    found = fingerprinter(DEFAULT_RECIPE)
    assert found is not None, "simhash_native is not installed: `make install` builds it from server/native"
    return found


def test_character_classes_follow_the_tokenizers_expression() -> None:
    table = character_classes()
    assert len(table) == 0x110000
    rng = np.random.default_rng(3)
    for cp in [*range(0x3000), *range(0x3400, 0xA000, 7), *rng.integers(0, 0x110000, 20_000).tolist()]:
        ch = chr(cp)
        match = _RUNS.fullmatch(ch)
        expected = 0 if match is None else 1 + [g is not None and g != "" for g in match.groups()].index(True)
        assert table[cp] == expected, (hex(cp), table[cp], expected)


@pytest.mark.parametrize("version", list(VERSIONS), ids=short_name)
@pytest.mark.parametrize("name", sorted(TEXTS))
def test_golden_texts_give_the_same_everything(native, name: str, version: str) -> None:
    text = TEXTS[name]
    normalized = normalize(text)
    assert native.tokenize(normalized) == tokenize(normalized)
    fast, slow = fingerprint(text, version, sketch=True), fingerprint(text, version, sketch=True, native=False)
    assert (fast.value, fast.features, fast.sketch) == (slow.value, slow.features, slow.sketch)


def test_the_decomposition_table_is_every_code_point_s_own_nfkd() -> None:
    """decompositions() skips the blocks NFKD leaves alone: the same table as asking each code point."""
    import unicodedata

    each = {}
    for cp in (*range(0xD800), *range(0xE000, 0x110000)):
        decomposed = unicodedata.normalize("NFKD", chr(cp))
        if decomposed != chr(cp):
            each[chr(cp)] = decomposed
    assert decompositions() == each


def test_the_invisible_characters_are_every_format_and_control_character_but_whitespace() -> None:
    import unicodedata

    from simhash_server.fingerprint.markup import INVISIBLE

    each = [chr(cp) for cp in range(0x110000) if unicodedata.category(chr(cp)) in ("Cf", "Cc")]
    assert "".join(ch for ch in each if ch not in "\t\n\r") == INVISIBLE
    assert "\u200b" in INVISIBLE and "\x00" in INVISIBLE and "\n" not in INVISIBLE


def test_decomposing_first_never_changes_the_normal_form(native) -> None:
    table = decompositions()
    assert table["，"] == "," and table["ﬁ"] == "fi" and "中" not in table
    every_decomposable = "".join(table)  # next to each other, so composition across them is exercised too
    assert normalize(every_decomposable) == normalize(every_decomposable, native=False)
    for ch, decomposed in table.items():
        assert native.decompose(ch) == decomposed
        assert normalize("a" + ch + "\u0301") == normalize("a" + ch + "\u0301", native=False), ch
    assert native.decompose("中文 only") is None


@pytest.mark.parametrize("shape", [(256, 8), (2048, 2)])
def test_the_sketch_from_the_fingerprint_call_is_the_python_tokens_sketch(native, shape) -> None:
    from simhash_server.fingerprint.sketch import sketch_of_hashes
    from simhash_server.fingerprint.sketch_format import SketchFormat

    normalized = normalize(TEXTS["zh-seed0-article"])
    _, _, packed = native.fingerprint(normalized, shape)
    expected = sketch_of_hashes(token_hashes(tokenize(normalized)), SketchFormat(0, *shape), native=False)
    assert packed == expected[1:]
    assert native.fingerprint(normalized)[2] is None
    with pytest.raises(ValueError, match="unsupported sketch shape: 100 bins of 2 bits"):
        native.fingerprint(normalized, (100, 2))


_PIECES = st.sampled_from(
    [
        "&nbsp;",
        "&amp;lt;",
        "<p>",
        "</div>",
        "\r\n",
        "\u200b",
        "\ufeff",
        "軟體",
        "頭髮乾淨",
        "2024-05-12",
        ". ",
        "!",
        "\n",
        "今天",
        "天气",
        "很好",
        "我们",
        "中华人民共和国",
        "的",
        "了",
        "，",
        "。",
        "㐀",
        "𠀀",
        "豈",
        "Hello",
        "WORLD",
        "123",
        "٣",
        "é",
        "e\u0301",
        "ß",
        "ﬁ",
        "Ａ",
        "１",
        "_",
        " ",
        "\n",
        "-",
        "😀",
        "\u200d",
        "ǅ",
        "Ⅻ",
        "²",
        "a_b",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=8)), max_size=40).map("".join))
def test_any_text_gives_the_same_fingerprint(text: str) -> None:
    native = fingerprinter(DEFAULT_RECIPE)
    normalized = normalize(text)
    assert normalized == normalize(text, native=False)
    assert native.tokenize(normalized) == tokenize(normalized)
    for version in VERSIONS:
        fast, slow = fingerprint(text, version, sketch=True), fingerprint(text, version, sketch=True, native=False)
        assert (fast.value, fast.features, fast.sketch) == (slow.value, slow.features, slow.sketch)


def test_each_recipe_has_its_own_extension_and_evaluation_recipes_none() -> None:
    made = [fingerprinter("blend-tfidf"), fingerprinter("blend-tfidf-321"), fingerprinter(SHINGLES)]
    assert None not in made and len({id(m) for m in made}) == 3
    assert fingerprinter("unigram-tf") is None  # evaluation-only recipes run in Python
    text = TEXTS["zh-seed0-article"]
    assert len({fingerprint(text, v).value for v in (V1, V2, V3)}) == 3


@pytest.mark.parametrize(
    ("classes", "message"), [(b"\x00" * 10, "one byte per code point"), (b"\x07" * 0x110000, "unknown character")]
)
def test_the_extension_checks_its_tables(classes: bytes, message: str) -> None:
    import simhash_native

    with pytest.raises(ValueError, match=message):
        simhash_native.Fingerprinter(classes, {}, 0, {}, (3, 2, 1))


def test_surrogates_and_the_last_code_point_are_separators() -> None:
    table = character_classes()
    assert table[0xD800] == table[0xDFFF] == 0 and table[0x10FFFF] == 0
    assert re.fullmatch(r"\w", "\U0010ffff") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=400), st.sampled_from([(8, 1), (256, 8), (1024, 4), (2048, 2)]))
def test_the_sketch_bins_in_rust_are_numpys(hashes: list[int], shape: tuple[int, int]) -> None:
    from simhash_server.fingerprint.sketch import sketch_of_hashes
    from simhash_server.fingerprint.sketch_format import SketchFormat

    form = SketchFormat(9, *shape)
    values = np.array(hashes, dtype=np.uint64)
    assert sketch_of_hashes(values, form) == sketch_of_hashes(values, form, native=False)
