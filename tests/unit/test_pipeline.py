"""Normalisation, tokens, features and the SimHash itself, without HBase."""

from __future__ import annotations

import jieba
import numpy as np
import pytest
import xxhash
from hypothesis import given
from hypothesis import strategies as st

from simhash_server.fingerprint import fingerprint
from simhash_server.fingerprint.features import RECIPES, Features, features, fmix64
from simhash_server.fingerprint.hexform import from_hex, to_hex
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.simhash import simhash
from simhash_server.fingerprint.tokens import segment_cjk, tokenize

jieba.setLogLevel(60)


def test_normalize_folds_width_case_and_compatibility_forms() -> None:
    assert normalize("ＡＢＣ１２３，ｘ") == "abc123,x"
    assert normalize("Straße ǅ ﬁ ①") == "strasse dž fi 1"
    assert normalize("\u3000") == " "


@given(st.text())
def test_normalize_is_idempotent(text: str) -> None:
    once = normalize(text)
    assert normalize(once) == once


def test_tokens_split_runs_by_script() -> None:
    assert tokenize(normalize("使用ＨＢａｓｅ存储64位指纹, fine!")) == [
        "使用",
        "hbase",
        "存储",
        "64",
        "位",
        "指纹",
        "fine",
    ]
    assert tokenize("㐀是") == ["㐀", "是"]  # outside jieba's Han range: a token of its own
    assert tokenize("!!! 😀 ...") == []


HAN_TEXTS = [
    "我们今天在北京大学的计算机实验室里讨论了海量数据的相似度问题",
    "据新华社报道今年全国粮食总产量达到六亿九千万吨比上年增长百分之一点三",
    "床前明月光疑是地上霜举头望明月低头思故乡",
    "结婚的和尚未结婚的都来了",
    "他说的确实在理",
    "南京市长江大桥",
    "工信处女干事每月经过下属科室都要亲口交代二十四口交换机等技术性器件的安装工作",
]


@pytest.mark.parametrize("text", HAN_TEXTS)
def test_segmenter_matches_jieba_on_han_runs(text: str) -> None:
    assert segment_cjk(text) == jieba.lcut(text, HMM=True)


@given(st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FD5), min_size=1, max_size=60))
def test_segmenter_matches_jieba_on_random_han(text: str) -> None:
    assert segment_cjk(text) == jieba.lcut(text, HMM=True)


def test_simhash_bit_order_follows_the_hash_bits() -> None:
    # One feature: the fingerprint is its hash, bit for bit (bit 63 most significant).
    h = 0x8000_0000_0000_0001
    assert simhash(Features(np.array([h], np.uint64), np.array([100.0]))) == h
    # Two opposing features: the heavier one wins every bit.
    two = Features(np.array([h, ~h & (2**64 - 1)], np.uint64), np.array([100.0, 300.0]))
    assert simhash(two) == ~h & (2**64 - 1)
    # A tie gives 0.
    assert simhash(Features(np.array([h, ~h & (2**64 - 1)], np.uint64), np.array([5.0, 5.0]))) == 0


def test_weights_are_linear_so_repeats_add_up() -> None:
    a, b = xxhash.xxh3_64_intdigest(b"a"), xxhash.xxh3_64_intdigest(b"b")
    repeated = Features(np.array([a, a, a, b], np.uint64), np.array([1.0, 1.0, 1.0, 2.0]))
    merged = Features(np.array([a, b], np.uint64), np.array([3.0, 2.0]))
    assert simhash(repeated) == simhash(merged)


def test_fmix64_is_murmur3_finaliser() -> None:
    # Reference values computed with Python integers.
    def ref(x: int) -> int:
        m = 2**64 - 1
        x ^= x >> 33
        x = (x * 0xFF51AFD7ED558CCD) & m
        x ^= x >> 33
        x = (x * 0xC4CEB9FE1A85EC53) & m
        return x ^ (x >> 33)

    xs = [0, 1, 2**63, 2**64 - 1, 0x0123456789ABCDEF]
    assert [int(v) for v in fmix64(np.array(xs, np.uint64))] == [ref(x) for x in xs]


def test_megabyte_texts_are_chunked_not_refused() -> None:
    text = "近似重复检测。" * 150_000
    fp = fingerprint(text)
    assert fp.features > 0 and fp.value != 0


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_recipe_handles_short_inputs(recipe: str) -> None:
    assert simhash(features([], recipe)) == 0  # no features: every bit's sum is zero
    # One token has one feature (no pairs yet): SimHash of a single feature is that feature's hash.
    assert simhash(features(["一"], recipe)) == xxhash.xxh3_64_intdigest("一".encode())
    for tokens in (["一", "二"], ["一", "二", "三"]):
        feats = features(tokens, recipe)
        assert feats.hashes.size == feats.weights.size > 0
        assert 0 <= simhash(feats) < 2**64


def test_unknown_recipe_is_named() -> None:
    with pytest.raises(ValueError, match="unknown feature recipe 'nope'"):
        features(["a"], "nope")


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_hex_round_trip(value: int) -> None:
    text = to_hex(value)
    assert len(text) == 16 and text == text.lower()
    assert from_hex(text) == value
    assert from_hex(text.upper()) == value


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "123",
        "0x00000000000001",
        "+000000000000001",
        "g000000000000000",
        "0000_00000000000",
        " 000000000000000",
        "00000000000000000",
    ],
)
def test_hex_parsing_refuses_anything_but_16_digits(bad: str) -> None:
    with pytest.raises(ValueError, match="16 hex digits"):
        from_hex(bad)
