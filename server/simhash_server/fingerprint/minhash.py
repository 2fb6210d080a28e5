"""Step 4, recipes v3 and v4: shingles or grams -> 64-bit fingerprint (1-bit MinHash).

Bit j of the fingerprint is the lowest bit of the smallest value any of the text's word 3-shingles takes
under hash function j (64 independent functions; b-bit minwise hashing with b = 1, Li & König 2010).  Two
texts whose shingle sets have Jaccard similarity J share that minimum with probability J, and otherwise agree
on the bit by chance, so each bit differs with probability (1 - J) / 2 and the Hamming distance of two
fingerprints is Binomial(64, (1 - J) / 2): about 3.2 at J = 0.9, 6.4 at J = 0.8.

Why not SimHash here: a SimHash bit differs with probability arccos(cosine) / pi, which near identity grows
with the square root of what changed; the fixed cut "distance <= 3" then separates J = 0.9 from J = 0.8 less
sharply, and how much a change moves a SimHash depends on the weighting, not on the change alone
(docs/accuracy.md measures both).  A MinHash bit tracks the shingle Jaccard itself, the measure users (and
the verification sketch) mean by near-duplicate.

Hash function j of a shingle hash x (64 bits, already mixed: features.shingle_hashes) is multiply-add-shift
(Dietzfelbinger 1996): ((x mod 2^32) * A_j + (x div 2^32) * B_j + C_j) mod 2^64, top 32 bits.  A_j, B_j and
C_j are fixed forever (part of the version): fmix64 of (j + 1) * GOLDEN xor a seed per constant.  Every
function sees every shingle (k permutations, not one permutation's bins), so a text of one shingle still
gets 64 independent bits rather than one bit repeated.  A text without tokens gets 0.

Recipe v4 hashes its grams (features.segment_grams) by rounds of one-permutation hashing instead, after
Dahlgaard, Knudsen and Thorup's fast similarity sketching (FOCS 2017): in round r every gram x that takes
part gets y = fmix64(x xor fmix64((r + 1) * GOLDEN)); its top 6 bits name one of the 64 bits of the
fingerprint, its low 58 bits are its value.  A bit is settled by the first round in which any gram lands on
it, with the smallest value that round; bit j is the lowest bit of that value.  Two texts agree on a bit
with probability at least their grams' Jaccard similarity, as with 64 functions, at a cost of about one
hash per gram instead of 64.  From round 256 on, a round's grams all land on bit (r - 256) mod 64, so a
text of one gram is settled too.

The rounds weigh a text's tiers (sentences.py): tier 0 takes part from round 0, tier 1 from round 8 and
tier 2 from round 18.  A bit then comes from the article's sentences whenever the text has a handful of
them (n grams of tier 0 leave a bit unsettled for 8 rounds with probability about e^(-n/8)), and from its
other lines only where it has none: the template around an article rarely takes a bit, while a page
without sentences still gets 64 bits of its own.
"""

from __future__ import annotations

import numpy as np

from simhash_server.fingerprint.features import fmix64, shingle_hashes

__all__ = ["BITS", "FORCED_FROM", "MULTIPLIERS", "TIER_ENTRY", "minhash_bits", "shingle_minhash", "tiered_minhash_bits"]

BITS = 64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SEEDS = (np.uint64(0x243F6A8885A308D3), np.uint64(0x13198A2E03707344), np.uint64(0xA4093822299F31D0))
_J = np.arange(1, BITS + 1, dtype=np.uint64) * _GOLDEN
MULTIPLIERS: tuple[np.ndarray, np.ndarray, np.ndarray] = tuple(fmix64(_J ^ seed) for seed in _SEEDS)  # A, B, C
_LOW32, _S32 = np.uint64(0xFFFFFFFF), np.uint64(32)
_CHUNK = 1 << 14  # shingles per block: bounds the (64 x block) temporary for megabyte texts
_POWERS = np.left_shift(np.uint64(1), np.arange(BITS, dtype=np.uint64))
TIER_ENTRY = (0, 8, 18)  # tier -> the first round its grams take part in (recipe v4)
FORCED_FROM = 256  # recipe v4: from this round on, a round's grams all land on one bit
_S58, _VALUE = np.uint64(58), np.uint64((1 << 58) - 1)


def minhash_bits(shingles: np.ndarray) -> int:
    """The 64-bit 1-bit MinHash of shingle hashes (uint64; repeats do not matter); 0 for none."""
    if shingles.size == 0:
        return 0
    a, b, c = (m[:, None] for m in MULTIPLIERS)
    minima = np.full(BITS, np.iinfo(np.uint64).max, dtype=np.uint64)
    for start in range(0, shingles.size, _CHUNK):
        block = shingles[start : start + _CHUNK]
        values = ((block & _LOW32) * a + (block >> _S32) * b + c) >> _S32
        np.minimum(minima, values.min(axis=1), out=minima)
    return int(_POWERS[(minima & np.uint64(1)).astype(bool)].sum())


def shingle_minhash(token_hashes: np.ndarray) -> tuple[int, int]:
    """(fingerprint, distinct shingles) of a text's token hashes under recipe v3; (0, 0) without tokens."""
    if token_hashes.size == 0:
        return 0, 0
    shingles = shingle_hashes(token_hashes)
    return minhash_bits(shingles), int(np.unique(shingles).size)


def tiered_minhash_bits(grams: np.ndarray, tiers: np.ndarray) -> int:
    """Recipe v4's 64-bit fingerprint of distinct gram hashes and their tiers (0, 1, 2); 0 for none."""
    if grams.size == 0:
        return 0
    entry = np.asarray(TIER_ENTRY, dtype=np.int64)[tiers]
    settled = np.zeros(BITS, dtype=bool)
    values = np.zeros(BITS, dtype=np.uint64)
    empty = np.iinfo(np.uint64).max
    r = int(entry.min())
    while not settled.all():
        taking = grams[entry <= r]
        y = fmix64(taking ^ fmix64(np.array([r + 1], dtype=np.uint64) * _GOLDEN))
        if r < FORCED_FROM:
            where = (y >> _S58).astype(np.int64)
        else:
            where = np.full(y.size, (r - FORCED_FROM) % BITS, dtype=np.int64)
        lowest = np.full(BITS, empty, dtype=np.uint64)
        np.minimum.at(lowest, where, y & _VALUE)
        new = ~settled & (lowest != empty)
        values[new] = lowest[new]
        settled |= new
        r += 1
    return int(_POWERS[(values & np.uint64(1)).astype(bool)].sum())
