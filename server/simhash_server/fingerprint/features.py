"""Step 3: tokens -> weighted features.

A feature is identified by a 64-bit hash and carries a positive integer weight.  Features are listed once
per occurrence: SimHash's per-bit sums are linear, so a feature seen n times with weight w counts the same
as one feature of weight n * w (term frequency comes for free, and no counting pass is needed).

- A unigram's hash is XXH3-64 (seed 0) of the token's UTF-8 bytes.
- A bigram (tokens i, i+1) hashes to ``fmix64((h_i * 0x9E3779B97F4A7C15) ^ h_i+1)`` and a skip-bigram
  (tokens i, i+2) to ``fmix64((h_i * 0x9E3779B97F4A7C15) ^ h_i+2 ^ 0xD6E8FEB86659FD93)``: MurmurHash3's
  64-bit finaliser over the unigram hashes, wrapping unsigned arithmetic; order-sensitive and vectorised.
- IDF is jieba's IDF table x 100, rounded to an integer (the median for unknown tokens).  A pair weighs the
  smaller IDF of its two tokens: it is as informative as its commoner word.

Recipes (compared by ``benchmarks/eval_accuracy.py``; numbers in docs/accuracy.md):
``unigram-tf`` (weight 100 each), ``unigram-tfidf``, ``bigram-tf``, ``blend-tfidf`` (recipe v1) and
``blend-tfidf-321`` (recipe v2).  The blends weigh unigrams, bigrams and skip-bigrams by a multiple of IDF:
2 / 3 / 2 in v1, 3 / 2 / 1 in v2.  Unigrams alone find edited copies but also pages that share a vocabulary;
bigrams add word order, which tells pages that share a template from real copies; skip-bigrams keep that
order signal when one word of a pair was edited.  v2 leans on unigrams: on whole pages (not the 4,000-
character chunks v1 was chosen on) it keeps more edited copies within distance 3 and within the drawers a
verified query reads, for a little precision that verification restores (docs/accuracy.md).

Recipe v3 is not a SimHash: its features are the word 3-shingles themselves (``shingle_hashes``, SHINGLES),
each counted once, and minhash.py turns them into bits.  Recipe v4's are the character grams within each
segment of the text (sentences.py), each with its segment's tier (``segment_grams``, TIERED_GRAMS).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib import resources

import numpy as np
import xxhash

from simhash_server.fingerprint.names import SHINGLES, TIERED_GRAMS

__all__ = [
    "BLEND_WEIGHTS",
    "DEFAULT_RECIPE",
    "GRAM_WIDTH",
    "IDF_SCALE",
    "RECIPES",
    "SHINGLES",
    "TIERED_GRAMS",
    "WIDE_FROM",
    "Features",
    "character_grams",
    "features",
    "fmix64",
    "segment_grams",
    "segment_text",
    "shingle_hashes",
    "token_hashes",
]

IDF_SCALE = 100
_CACHE_LIMIT = 1 << 20  # tokens remembered with their hash and IDF; cleared when full
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SKIP = np.uint64(0xD6E8FEB86659FD93)
_M1, _M2, _S33 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53), np.uint64(33)


@dataclass(frozen=True, slots=True)
class Features:
    hashes: np.ndarray  # uint64, one per occurrence
    weights: np.ndarray  # float64 holding integers (see simhash.py for why float64 is exact here)

    @property
    def distinct(self) -> int:
        return int(np.unique(self.hashes).size)


_idf_lock = threading.Lock()


def _idf_table() -> tuple[dict[str, int], int]:
    """jieba's IDF table as integers (IDF x 100), and the median for tokens it does not list.

    Loaded once under a lock: 32 server threads meeting an empty cache at once must not each parse it."""
    with _idf_lock:
        return _load_idf_table()


@cache
def _load_idf_table() -> tuple[dict[str, int], int]:
    # The file, not the package: importing jieba.analyse loads its part-of-speech tables (1.7 s).
    text = resources.files("jieba").joinpath("analyse", "idf.txt").read_text(encoding="utf-8")
    table: dict[str, int] = {}
    for line in text.splitlines():
        word, _, value = line.rpartition(" ")
        if word:
            table[word] = round(float(value) * IDF_SCALE)
    ordered = sorted(table.values())
    return table, ordered[len(ordered) // 2]


_token_cache: dict[str, tuple[int, int]] = {}


def _hash_and_idf(tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    lookup = _token_cache.get
    pairs = [lookup(t) for t in tokens]
    if None in pairs:
        idf, median = _idf_table()
        if len(_token_cache) > _CACHE_LIMIT:
            _token_cache.clear()
        for i, pair in enumerate(pairs):
            if pair is None:
                token = tokens[i]
                pairs[i] = _token_cache[token] = (
                    xxhash.xxh3_64_intdigest(token.encode("utf-8")),
                    idf.get(token, median),
                )
    if not pairs:
        return np.zeros(0, np.uint64), np.zeros(0, np.float64)
    hashes, idfs = zip(*pairs, strict=True)
    return np.array(hashes, dtype=np.uint64), np.array(idfs, dtype=np.float64)


def token_hashes(tokens: list[str]) -> np.ndarray:
    """XXH3-64 (seed 0) of each token's UTF-8 bytes, as uint64 (shared with the verification sketch)."""
    return _hash_and_idf(tokens)[0]


def fmix64(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, element-wise (unsigned arithmetic wraps modulo 2**64)."""
    x = x ^ (x >> _S33)
    x = x * _M1
    x = x ^ (x >> _S33)
    x = x * _M2
    return x ^ (x >> _S33)


def _bigram_hashes(hashes: np.ndarray) -> np.ndarray:
    return fmix64((hashes[:-1] * _GOLDEN) ^ hashes[1:])  # empty for fewer than 2 tokens


def shingle_hashes(hashes: np.ndarray) -> np.ndarray:
    """Word 3-shingle hashes of token hashes: one per run of 3 tokens, ``fmix64((fmix64((h_i * GOLDEN) ^
    h_i+1) * GOLDEN) ^ h_i+2)``; a text of fewer than 3 tokens is one shingle of all of them (its token count
    folded in first).  Recipe v3's features (minhash.py) and every sketch's (sketch.py)."""
    if hashes.size < 3:
        combined = np.array([hashes.size], dtype=np.uint64)  # arrays, not scalars: numpy wraps arrays silently
        for value in hashes:
            combined = fmix64((combined * _GOLDEN) ^ value)
        return combined
    return fmix64((fmix64((hashes[:-2] * _GOLDEN) ^ hashes[1:-1]) * _GOLDEN) ^ hashes[2:])


WIDE_FROM = 0x2E80  # code points from here on (CJK radicals, kana, Hangul, Han...) are wide
WIDE_WEIGHT, NARROW_WEIGHT = 2, 1
GRAM_WIDTH = 4  # a gram: 2 wide characters, 4 narrow ones, or a mix weighing 4


def segment_text(tokens: list[str]) -> str:
    """A segment's tokens as one string: a space between two tokens, except between two wide characters
    (Chinese is written without spaces, and jieba's word boundaries should not move a gram)."""
    out: list[str] = []
    for token in tokens:
        if out and not (ord(out[-1][-1]) >= WIDE_FROM and ord(token[0]) >= WIDE_FROM):
            out.append(" ")
        out.append(token)
    return "".join(out)


def character_grams(text: str) -> set[str]:
    """The distinct character grams of one segment's text: from each position, the shortest run of
    characters weighing at least GRAM_WIDTH (a wide character 2, any other 1), until a gram has reached the
    text's end; a run cut short by the end is a gram too, so every character is in one."""
    weights = [WIDE_WEIGHT if ord(ch) >= WIDE_FROM else NARROW_WEIGHT for ch in text]
    grams, end, weight = set(), 0, 0
    for start in range(len(text)):
        if start > 0 and end == len(text) and weight < GRAM_WIDTH:
            break  # the last gram already reached the end
        while end < len(text) and weight < GRAM_WIDTH:
            weight += weights[end]
            end += 1
        grams.add(text[start:end])
        weight -= weights[start]
    return grams


def segment_grams(segments: list[tuple[list[str], int]]) -> tuple[np.ndarray, np.ndarray]:
    """Recipe v4's features: (gram hashes, tiers), each distinct gram once with the lowest tier it has.

    A gram's hash is XXH3-64 (seed 0) of its UTF-8 bytes.  Grams never span two segments, so a sentence
    keeps its grams wherever it is moved or whatever surrounds it.  Character grams, not word shingles: a
    typo changes 4 grams of a line's many, where it changes 2 of a line's few word pairs
    (docs/decisions.md#recipe-v4-folded-text-character-grams-weighed-by-sentence-containment-to-verify)."""
    hashes, tiers = [], []
    for tokens, tier in segments:
        made = np.fromiter(
            (xxhash.xxh3_64_intdigest(g.encode()) for g in character_grams(segment_text(tokens))), np.uint64
        )
        hashes.append(made)
        tiers.append(np.full(made.size, tier, dtype=np.uint8))
    if not hashes:
        return np.zeros(0, np.uint64), np.zeros(0, np.uint8)
    every, every_tier = np.concatenate(hashes), np.concatenate(tiers)
    order = np.lexsort((every_tier, every))  # by hash, then tier: the first of each hash has its lowest tier
    every, every_tier = every[order], every_tier[order]
    first = np.ones(every.size, dtype=bool)
    first[1:] = every[1:] != every[:-1]
    return every[first], every_tier[first]


def _unigram_tf(tokens: list[str]) -> Features:
    hashes, _ = _hash_and_idf(tokens)
    return Features(hashes, np.full(hashes.size, float(IDF_SCALE)))


def _unigram_tfidf(tokens: list[str]) -> Features:
    return Features(*_hash_and_idf(tokens))


def _bigram_tf(tokens: list[str]) -> Features:
    hashes, _ = _hash_and_idf(tokens)
    if hashes.size < 2:
        return Features(hashes, np.full(hashes.size, float(IDF_SCALE)))
    bigrams = _bigram_hashes(hashes)
    return Features(bigrams, np.full(bigrams.size, float(IDF_SCALE)))


# (unigram, bigram, skip-bigram) multiples of IDF, per blend recipe; the Rust path takes the same numbers.
BLEND_WEIGHTS: dict[str, tuple[int, int, int]] = {"blend-tfidf": (2, 3, 2), "blend-tfidf-321": (3, 2, 1)}


def _blend(weights: tuple[int, int, int]) -> Callable[[list[str]], Features]:
    unigram, bigram, skip = weights

    def build(tokens: list[str]) -> Features:
        hashes, idfs = _hash_and_idf(tokens)
        pair_idf = np.minimum(idfs[:-1], idfs[1:])
        skip_idf = np.minimum(idfs[:-2], idfs[2:])
        skips = fmix64((hashes[:-2] * _GOLDEN) ^ hashes[2:] ^ _SKIP)
        return Features(
            np.concatenate((hashes, _bigram_hashes(hashes), skips)),
            np.concatenate((unigram * idfs, bigram * pair_idf, skip * skip_idf)),
        )

    return build


RECIPES: dict[str, Callable[[list[str]], Features]] = {
    "unigram-tf": _unigram_tf,
    "unigram-tfidf": _unigram_tfidf,
    "bigram-tf": _bigram_tf,
    **{name: _blend(weights) for name, weights in BLEND_WEIGHTS.items()},
}
DEFAULT_RECIPE = "blend-tfidf-321"  # recipe v2's features


def features(tokens: list[str], recipe: str = DEFAULT_RECIPE) -> Features:
    """Weighted features of a token list under ``recipe`` (one of RECIPES)."""
    try:
        build = RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown feature recipe {recipe!r}; choose one of {sorted(RECIPES)}") from None
    return build(tokens)
