"""Verification: tokens -> a compact similarity sketch, and sketches -> an estimated Jaccard similarity.

A fingerprint within Hamming distance 3 is only a candidate.  The sketch estimates what a reader means by
"near-duplicate": the Jaccard similarity of the two documents' word 3-shingle sets (the measure the
evaluation in docs/accuracy.md uses as ground truth).

Recipe (one-permutation b-bit MinHash, Li et al. 2012 and Li & König 2010):

- Shingles: every run of 3 consecutive tokens (a text of fewer than 3 tokens is one shingle of all of them).
  A shingle's hash combines its tokens' XXH3-64 hashes with MurmurHash3's finaliser, order-sensitively.
- One permutation: the hash's top 8 bits choose one of 256 bins; each bin keeps the smallest remaining
  56 bits.  One hash per shingle, where classic MinHash needs 256: sketching costs about as much as
  fingerprinting does.
- Empty bins (texts of under some 1,000 shingles leave some) borrow a non-empty bin's value by the fixed probe
  sequence of "optimal densification" (Shrivastava 2017), so two sketches still compare bin by bin.
- b-bit: only the lowest 8 bits of each bin are stored.  Unrelated bins then agree by chance with probability
  1/256, which the estimator removes: J = (agreeing - 1/256) / (1 - 1/256).

Stored form: 1 format byte (SKETCH_FORMAT) + 256 bytes.  A sketch of another format is not compared (its
document counts as unverified), so the recipe can change later without misreading stored sketches.
The standard error of the estimate is sqrt(J(1-J)/256): 0.019 at J = 0.9.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from simhash_server.fingerprint.features import fmix64, token_hashes

__all__ = [
    "SKETCH_BINS",
    "SKETCH_BYTES",
    "SKETCH_FORMAT",
    "SketchError",
    "bin_minima",
    "readable",
    "similarity",
    "sketch",
]

SKETCH_FORMAT = 1
SKETCH_BINS = 256
SKETCH_BYTES = 1 + SKETCH_BINS
_EMPTY = np.iinfo(np.uint64).max
_CHANCE = 1 / 256  # two unrelated 8-bit values agree this often
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SEED = np.uint64(0x5DEECE66DA3B2C17)
_PROBES = 64  # densification attempts before the fallback (only texts of a handful of shingles get there)


class SketchError(ValueError):
    """A stored sketch is not of a form this code reads."""


@cache
def _probe_table(bins: int) -> np.ndarray:
    """probe[a, i]: the bin that empty bin i looks at on attempt a; fixed forever (part of the format)."""
    attempts = np.arange(1, _PROBES + 1, dtype=np.uint64)[:, None]
    ids = np.arange(bins, dtype=np.uint64)[None, :]
    return (fmix64((ids * _GOLDEN) ^ (attempts + _SEED)) % np.uint64(bins)).astype(np.intp)


def _shingles(h: np.ndarray) -> np.ndarray:
    if h.size < 3:
        combined = np.array([h.size], dtype=np.uint64)  # arrays, not scalars: numpy wraps arrays silently
        for value in h:
            combined = fmix64((combined * _GOLDEN) ^ value)
        return combined
    return fmix64((fmix64((h[:-2] * _GOLDEN) ^ h[1:-1]) * _GOLDEN) ^ h[2:])


def bin_minima(tokens: list[str], bins: int = SKETCH_BINS) -> np.ndarray:
    """The densified one-permutation MinHash of a tokenised text: ``bins`` uint64 minima.

    ``bins`` is a power of two; the stored sketch uses SKETCH_BINS (the evaluation tries others)."""
    return _bin_minima(token_hashes(tokens), bins)


def _bin_minima(token_hashes: np.ndarray, bins: int) -> np.ndarray:
    if not 2 <= bins <= 1 << 16 or bins & (bins - 1):
        raise ValueError(f"bins must be a power of two from 2 to 65536, got {bins}")
    bin_bits = bins.bit_length() - 1
    hashed = fmix64(_shingles(token_hashes) ^ _SEED)
    which = (hashed >> np.uint64(64 - bin_bits)).astype(np.intp)
    mins = np.full(bins, _EMPTY, dtype=np.uint64)
    np.minimum.at(mins, which, hashed & np.uint64((1 << (64 - bin_bits)) - 1))
    empty = mins == _EMPTY
    if not empty.any():
        return mins
    filled = ~empty
    # Each empty bin takes the first bin along its probe sequence that is filled: all attempts at once.
    table = _probe_table(bins)
    hits = filled[table]
    first = hits.argmax(axis=0)
    columns = np.arange(bins)
    borrowed = np.where(hits[first, columns], table[first, columns], -1)
    source = np.where(filled, columns, borrowed)
    if (source < 0).any():  # after _PROBES misses (a text of a few shingles): the next filled bin, circularly
        order = np.flatnonzero(filled)
        for i in np.flatnonzero(source < 0):
            source[i] = order[np.searchsorted(order, i) % order.size]
    return mins[source]


def sketch(tokens: list[str]) -> bytes:
    """The stored sketch (SKETCH_BYTES bytes) of a tokenised text."""
    return sketch_of_hashes(token_hashes(tokens))


def sketch_of_hashes(token_hashes: np.ndarray) -> bytes:
    """The stored sketch from the tokens' XXH3-64 hashes (as features.token_hashes gives them)."""
    low_bits = _bin_minima(token_hashes, SKETCH_BINS) & np.uint64(0xFF)
    return bytes([SKETCH_FORMAT]) + low_bits.astype(np.uint8).tobytes()


def similarity(a: bytes, b: bytes) -> float:
    """Estimated Jaccard similarity (0..1) of the documents behind two stored sketches."""
    for name, value in (("first", a), ("second", b)):
        if len(value) != SKETCH_BYTES or value[0] != SKETCH_FORMAT:
            raise SketchError(f"the {name} sketch is not of format {SKETCH_FORMAT} ({SKETCH_BYTES} bytes)")
    agree = np.count_nonzero(np.frombuffer(a, np.uint8, offset=1) == np.frombuffer(b, np.uint8, offset=1))
    return max(0.0, (agree / SKETCH_BINS - _CHANCE) / (1 - _CHANCE))


def readable(value: bytes) -> bool:
    """Whether a stored sketch is of the format this code compares."""
    return len(value) == SKETCH_BYTES and value[0] == SKETCH_FORMAT
