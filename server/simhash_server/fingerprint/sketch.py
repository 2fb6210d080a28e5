"""Verification: tokens -> a compact similarity sketch, and sketches -> an estimated Jaccard similarity.

A fingerprint within Hamming distance 3 is only a candidate.  The sketch estimates what a reader means by
"near-duplicate": the Jaccard similarity of the two documents' word 3-shingle sets (the measure the
evaluation in docs/accuracy.md uses as ground truth).

Recipe (one-permutation b-bit MinHash, Li et al. 2012 and Li & König 2010):

- Shingles: every run of 3 consecutive tokens (features.shingle_hashes; a text of fewer than 3 tokens is one
  shingle of all of them).
- One permutation: the hash's top 8 bits choose one of 256 bins; each bin keeps the smallest remaining
  56 bits.  One hash per shingle, where classic MinHash needs 256: sketching costs about as much as
  fingerprinting does.
- Empty bins (texts of under some 1,000 shingles leave some) borrow a non-empty bin's value by the fixed probe
  sequence of "optimal densification" (Shrivastava 2017), so two sketches still compare bin by bin.
- b-bit: only the lowest b bits of each bin are stored.  Unrelated bins then agree by chance with probability
  2^-b, which the estimator removes: J = (agreeing - 2^-b) / (1 - 2^-b).

Formats (SketchFormat, one per fingerprint recipe; stored form: 1 format byte [+ 4 count bytes] + bins x bits
/ 8 bytes):
- 1: 256 bins x 8 bits (257 bytes); standard error 0.019 at J = 0.9 (recipe v1);
- 2: 2048 bins x 2 bits (513 bytes); standard error about 0.009 at J = 0.9 (recipe v2).  More bins of fewer
  bits estimate better per byte (docs/accuracy.md, "Sketch size and floor"); doubling the bytes was what it
  took for precision 0.97 and recall 0.95 at one floor.
- 3: format 2's bins after the number of distinct shingles (4 bytes, big-endian), 517 bytes (recipe v4).  With
  both counts the estimated Jaccard J gives the shared shingles, J (a + b) / (1 + J), hence containment: the
  share of the smaller document found in the larger.  Format 3's similarity is that containment, scaled
  down by twice the ratio of the two sizes where the smaller is under half the larger: the same article
  inside another site's template (7-28% more text) stays near 1, while a page that quotes a small part of
  another, or a small page inside a large one, does not (docs/accuracy.md).
- 4: format 3, then the fingerprints of the text's parts (recipe v5): a count byte and 8 bytes each
  (parts.py's cuts, those that differ from the whole text's).  They are compared as format 3 is; the
  `clusters` job reads the parts to meet each document's parts with the other documents' fingerprints.
- 5: format 4, then the text's repeated words with their contexts (recipe v6, renames.py): compared as
  format 4 is, but two pages that are one text with one name put for another score 0.
Two sketches compare only when they are of one format; a stored sketch of another format is not compared
(its document counts as unverified), so a recipe can change without misreading stored sketches.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from simhash_server.fingerprint.features import fmix64, shingle_hashes, token_hashes
from simhash_server.fingerprint.native import native_function, sketch_function
from simhash_server.fingerprint.renames import renamed_trailers
from simhash_server.fingerprint.sketch_format import (
    FORMATS,
    SKETCH_BINS,
    SketchError,
    SketchFormat,
    counted_shingles,
    format_of,
    header_of,
    parts_end,
)

__all__ = [
    "bin_minima",
    "containment",
    "distinct_shingle_count",
    "jaccard",
    "similarity",
    "similarity_of",
    "sketch",
    "sketch_of_hashes",
]


_EMPTY = np.iinfo(np.uint64).max
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_SEED = np.uint64(0x5DEECE66DA3B2C17)
_PROBES = 64  # densification attempts before the fallback (only texts of a handful of shingles get there)
_PROBE_STEP = 8  # attempts tried at once


@cache
def _probe_rows(bins: int) -> np.ndarray:
    """The probe table transposed: row i is empty bin i's sequence of attempts."""
    return np.ascontiguousarray(_probe_table(bins).T)


@cache
def _probe_table(bins: int) -> np.ndarray:
    """probe[a, i]: the bin that empty bin i looks at on attempt a; fixed forever (part of the format)."""
    attempts = np.arange(1, _PROBES + 1, dtype=np.uint64)[:, None]
    ids = np.arange(bins, dtype=np.uint64)[None, :]
    return (fmix64((ids * _GOLDEN) ^ (attempts + _SEED)) % np.uint64(bins)).astype(np.intp)


def bin_minima(tokens: list[str], bins: int = SKETCH_BINS) -> np.ndarray:
    """The densified one-permutation MinHash of a tokenised text: ``bins`` uint64 minima.

    ``bins`` is a power of two; the stored sketch uses SKETCH_BINS (the evaluation tries others)."""
    return _bin_minima(token_hashes(tokens), bins)


def _bin_minima(token_hashes: np.ndarray, bins: int) -> np.ndarray:
    if not 2 <= bins <= 1 << 16 or bins & (bins - 1):
        raise ValueError(f"bins must be a power of two from 2 to 65536, got {bins}")
    bin_bits = bins.bit_length() - 1
    hashed = fmix64(shingle_hashes(token_hashes) ^ _SEED)
    which = (hashed >> np.uint64(64 - bin_bits)).astype(np.intp)
    mins = np.full(bins, _EMPTY, dtype=np.uint64)
    np.minimum.at(mins, which, hashed & np.uint64((1 << (64 - bin_bits)) - 1))
    empty = mins == _EMPTY
    if not empty.any():
        return mins
    filled = ~empty
    # Each empty bin takes the first bin along its probe sequence that is filled.  Probes are tried a few at
    # a time for the bins still unresolved: most resolve within the first few, so a sparse 2048-bin sketch
    # does not pay for all 64 attempts of every bin.  The result is the same as trying all at once.
    table = _probe_rows(bins)  # (bins, _PROBES): bin i's probe sequence, contiguous
    source = np.arange(bins)
    pending = np.flatnonzero(empty)
    for start in range(0, _PROBES, _PROBE_STEP):
        if pending.size == 0:
            break
        probes = table[pending, start : start + _PROBE_STEP]
        hits = filled[probes]
        found = hits.any(axis=1)
        first = hits.argmax(axis=1)
        source[pending[found]] = probes[found, first[found]]
        pending = pending[~found]
    if pending.size:  # after _PROBES misses (a text of a few shingles): the next filled bin, circularly
        order = np.flatnonzero(filled)
        source[pending] = order[np.searchsorted(order, pending) % order.size]
    return mins[source]


def sketch(tokens: list[str], form: SketchFormat, native: bool = True) -> bytes:
    """The stored sketch (``form.size`` bytes) of a tokenised text, in the format of the recipe that made the
    tokens (``recipe_of(version).sketch``)."""
    return sketch_of_hashes(token_hashes(tokens), form, native)


def distinct_shingle_count(token_hashes: np.ndarray) -> int:
    """How many distinct word 3-shingles the tokens make (0 without tokens): a counted sketch's count."""
    return int(np.unique(shingle_hashes(token_hashes)).size) if token_hashes.size else 0


def sketch_of_hashes(
    token_hashes: np.ndarray, form: SketchFormat, native: bool = True, distinct: int | None = None
) -> bytes:
    """The stored sketch from the tokens' XXH3-64 hashes (as features.token_hashes gives them); the bins in
    Rust when the extension is installed (the same numbers, without numpy's per-call overhead).
    ``distinct``: the tokens' distinct_shingle_count, when the caller has it (counted formats)."""
    if form.counted and distinct is None:
        distinct = distinct_shingle_count(token_hashes)
    rust = sketch_function() if native else None
    if rust is not None:
        packed = rust(token_hashes.astype("<u8", copy=False).tobytes(), form.bins, form.bits)
        return header_of(form, distinct or 0) + packed
    low = (_bin_minima(token_hashes, form.bins) & np.uint64((1 << form.bits) - 1)).astype(np.uint8)
    per_byte = 8 // form.bits
    packed = np.zeros(form.bins // per_byte, dtype=np.uint8)
    for k in range(per_byte):  # bin i goes to byte i // per_byte, lowest bits first
        packed |= low[k::per_byte] << np.uint8(k * form.bits)
    return header_of(form, distinct or 0) + packed.tobytes()


def _values(value: bytes, form: SketchFormat) -> np.ndarray:
    packed = np.frombuffer(value, np.uint8, count=form.size - form.header, offset=form.header)
    per_byte = 8 // form.bits
    if per_byte == 1:
        return packed
    mask = np.uint8((1 << form.bits) - 1)
    return np.stack([(packed >> np.uint8(k * form.bits)) & mask for k in range(per_byte)], axis=1).ravel()


def jaccard(a: bytes, b: bytes, native: bool = True) -> float:
    """Estimated Jaccard similarity (0..1) of the documents behind two stored sketches of one format; the
    bins are compared in Rust where the extension is installed."""
    return _jaccard(a, b, _one_format(a, b), native)


def _one_format(a: bytes, b: bytes) -> SketchFormat:
    form = format_of(a)
    if form is None:
        raise SketchError(f"the first sketch is of no known format ({', '.join(map(str, FORMATS))})")
    if format_of(b) != form:
        raise SketchError(f"the second sketch is not of format {form.code} ({form.size} bytes)")
    return form


@cache
def _agreeing_bins() -> Callable[[bytes, bytes, int, int, int], int] | None:
    return native_function("agreeing_bins")


def _jaccard(a: bytes, b: bytes, form: SketchFormat, native: bool) -> float:
    rust = _agreeing_bins() if native else None
    if rust is not None:
        agree = rust(a, b, form.header, form.size, form.bits)
    else:
        agree = int(np.count_nonzero(_values(a, form) == _values(b, form)))
    chance = 2.0**-form.bits  # two unrelated b-bit values agree this often
    return max(0.0, (agree / form.bins - chance) / (1 - chance))


def containment(j: float, a: int, b: int) -> float:
    """Of two shingle sets of sizes ``a`` and ``b`` with Jaccard ``j``: the share of the smaller found in the
    larger, scaled down by 2 x (smaller / larger) where the smaller is under half the larger (format 3)."""
    small, large = min(a, b), max(a, b)
    if small == 0:
        return 1.0 if large == 0 else 0.0
    shared = j * (a + b) / (1 + j)
    return min(1.0, shared / small) * min(1.0, 2 * small / large)


def similarity(a: bytes, b: bytes, native: bool = True) -> float:
    """The similarity a verified query compares with its floor: the estimated Jaccard for formats 1 and 2,
    containment (``containment``) for counted formats 3 and 4, and for format 5 the same but 0 for renamed
    neighbours (renames.py)."""
    return similarity_of(_one_format(a, b), a, b, native)


def similarity_of(form: SketchFormat, a: bytes, b: bytes, native: bool = True) -> float:
    """``similarity`` of two sketches whose format the caller has read (``format_of``) and found ``form`` for
    both: a verified query reads its own sketch's once, not once per candidate.  The bins and the renames
    are compared in Rust where the extension is installed."""
    j = _jaccard(a, b, form, native)
    if not form.counted:
        return j
    if form.renames and renamed_trailers(a[parts_end(a, form) :], b[parts_end(b, form) :], native):
        return 0.0
    return containment(j, counted_shingles(a), counted_shingles(b))
