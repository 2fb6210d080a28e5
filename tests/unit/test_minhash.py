"""Recipe v3's fingerprint (minhash.py): what its bits promise, on fixed inputs (no luck involved)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from simhash_server.fingerprint import V3, fingerprint
from simhash_server.fingerprint.features import shingle_hashes, token_hashes
from simhash_server.fingerprint.minhash import BITS, minhash_bits
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.tokens import tokenize

WORDS = [f"w{n}" for n in range(5000)]


def _shingle_set(text: str) -> set[tuple[str, ...]]:
    tokens = tokenize(normalize(text))
    return {tuple(tokens[i : i + 3]) for i in range(max(len(tokens) - 2, 1))}


def _pairs(count: int, seed: int) -> list[tuple[float, int]]:
    """(Jaccard of word 3-shingles, Hamming distance) of texts and copies with 0-40 words replaced."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        words = rng.choices(WORDS, k=rng.randrange(150, 600))
        copy = list(words)
        for _ in range(n % 41):
            copy[rng.randrange(len(copy))] = rng.choice(WORDS)
        a, b = " ".join(words), " ".join(copy)
        sa, sb = _shingle_set(a), _shingle_set(b)
        distance = (fingerprint(a, V3).value ^ fingerprint(b, V3).value).bit_count()
        out.append((len(sa & sb) / len(sa | sb), distance))
    return out


def test_distance_tracks_the_shingle_jaccard() -> None:
    """Each bit differs with probability (1 - J) / 2: the mean distance follows 32 (1 - J) across J."""
    pairs = _pairs(600, seed=11)
    jaccard = np.array([j for j, _ in pairs])
    distance = np.array([d for _, d in pairs], dtype=float)
    for lo, hi in ((0.6, 0.75), (0.75, 0.85), (0.85, 0.92), (0.92, 1.0)):
        here = (jaccard >= lo) & (jaccard < hi)
        assert here.sum() >= 40, (lo, hi, here.sum())
        expected = 32 * (1 - jaccard[here]).mean()
        spread = np.sqrt((64 * (1 - jaccard[here]) / 2 * (1 + jaccard[here]) / 2).mean() / here.sum())
        assert abs(distance[here].mean() - expected) < 4 * spread + 0.2, (lo, hi, distance[here].mean(), expected)


def test_distance_three_separates_near_duplicates_from_copies_that_changed_more() -> None:
    pairs = _pairs(600, seed=12)
    close = [d <= 3 for j, d in pairs if j >= 0.95]
    far = [d <= 3 for j, d in pairs if j < 0.75]
    assert len(close) >= 40 and len(far) >= 40
    assert np.mean(close) > 0.85  # Binomial(64, <= 0.025): P(d <= 3) >= 0.92
    assert np.mean(far) < 0.12  # Binomial(64, >= 0.125): P(d <= 3) <= 0.04


def test_short_texts_get_independent_bits() -> None:
    """Every hash function sees every shingle: a one-word text still gets 64 independent bits (a one-permutation
    MinHash would copy its one filled bin into all 64 and give only all-zeros or all-ones fingerprints)."""
    values = np.array([fingerprint(word, V3).value for word in WORDS[:2000]], dtype=np.uint64)
    bits = (values[:, None] >> np.arange(BITS, dtype=np.uint64)) & np.uint64(1)
    ones = bits.mean(axis=0)
    assert ones.min() > 0.45 and ones.max() < 0.55, (ones.min(), ones.max())  # 2,000 draws: sd 0.011
    distances = np.bitwise_count(values[:1000] ^ values[1000:])
    assert 31 < distances.mean() < 33 and distances.min() > 8


def test_order_and_repeats_of_shingles_do_not_matter() -> None:
    shingles = shingle_hashes(token_hashes(tokenize(normalize(" ".join(WORDS[:300])))))
    value = minhash_bits(shingles)
    assert minhash_bits(shingles[::-1]) == value
    assert minhash_bits(np.concatenate((shingles, shingles[:50]))) == value
    assert minhash_bits(np.zeros(0, np.uint64)) == 0


@pytest.mark.parametrize("text", ["", "   ", "，。！", "\n\t"])
def test_a_text_without_tokens_is_zero_with_no_features(text: str) -> None:
    made = fingerprint(text, V3)
    assert (made.value, made.features) == (0, 0)


def test_features_count_distinct_shingles() -> None:
    assert fingerprint("alpha", V3).features == 1  # fewer than 3 tokens: one shingle of all of them
    assert fingerprint("a b c d e", V3).features == 3
    assert fingerprint("a b c a b c a b c", V3).features == 3  # abc, bca, cab
