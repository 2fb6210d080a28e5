"""Text -> fingerprint: the whole recipe of a version (versions.py) in one call.

normalize (normalize.py) -> tokens (tokens.py) -> weighted features (features.py) -> SimHash (simhash.py), or
for v3 -> word 3-shingles (features.py) -> 1-bit MinHash (minhash.py), or for v4 -> segments with their tiers
(sentences.py) -> character grams within segments (features.py) -> tiered 1-bit MinHash (minhash.py); with
``sketch=True`` the same tokens also give the verification sketch (sketch.py) in the version's format, and for
a format that carries them (v5, v6) the fingerprints of the text's parts after it (parts.py), and (v6) the
text's repeated words with their contexts (renames.py).
Steps 2-4 run in Rust when the extension is installed (native.py), with identical output; there a v4 text's
parts come from the whole text's one pass where normalising keeps its lines apart (parts.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from simhash_server.fingerprint.features import (
    SHINGLES,
    TIERED_GRAMS,
    features,
    segment_grams,
    token_hashes,
)
from simhash_server.fingerprint.hexform import to_hex
from simhash_server.fingerprint.minhash import shingle_minhash, tiered_minhash_bits
from simhash_server.fingerprint.native import fingerprinter
from simhash_server.fingerprint.normalize import FOLDED, fold_digits_and_phrases, normalize
from simhash_server.fingerprint.parts import line_span, lines_normalize_apart, part_spans, part_texts
from simhash_server.fingerprint.renames import trailer as renames_trailer
from simhash_server.fingerprint.sentences import segments
from simhash_server.fingerprint.simhash import simhash
from simhash_server.fingerprint.sketch import distinct_shingle_count, sketch_of_hashes
from simhash_server.fingerprint.sketch_format import header_of, parts_trailer
from simhash_server.fingerprint.tokens import tokenize
from simhash_server.fingerprint.versions import FINGERPRINT_VERSION, recipe_of

__all__ = ["FINGERPRINT_VERSION", "Fingerprint", "fingerprint", "part_fingerprints"]


@dataclass(frozen=True, slots=True)
class Fingerprint:
    value: int  # unsigned 64-bit, bit 63 most significant
    features: int  # distinct weighted features (v3: distinct shingles); below ~50 the fingerprint says little
    sketch: bytes = b""  # the verification sketch, when asked for
    parts: tuple[int, ...] = ()  # when asked for, or with a v5 sketch: part_fingerprints

    @property
    def hex(self) -> str:
        return to_hex(self.value)


def fingerprint(
    text: str, version: str = FINGERPRINT_VERSION, sketch: bool = False, native: bool = True, parts: bool = False
) -> Fingerprint:
    """The fingerprint of ``text`` by the recipe ``version`` names; with ``parts``, or with the sketch of a
    format that stores them (v5), also the fingerprints of its parts (``part_fingerprints``).
    ``native=False`` forces the Python pipeline (tests and benchmarks)."""
    recipe = recipe_of(version)
    stored = sketch and recipe.sketch.parts
    if not ((parts or stored) and recipe.query_parts):
        return _whole(text, version, sketch, native)
    rust = _rust(version) if native else None
    if rust is None:
        made = _whole(text, version, sketch, native)
        found = part_fingerprints(text, version, made.value, native)
    else:
        # One pass: a part's grams are its lines' grams in the whole text's pass (parts.py).
        normalized = _normalized(text, version, native)
        if lines_normalize_apart(text):
            located: list[tuple[int, int] | str] = [*part_spans(len(text.splitlines()), recipe.query_parts)]
        else:  # markup: each part normalised, and found among the whole's lines where it is there
            alone = (_normalized(part, version, native) for part in part_texts(text, recipe.query_parts))
            located = [line_span(normalized, part) or part for part in alone]
        spans = [where for where in located if isinstance(where, tuple)]
        shape = (recipe.sketch.bins, recipe.sketch.bits) if sketch else None
        value, distinct, packed, of_spans = rust.fingerprint_with_spans(normalized, shape, spans)
        made = Fingerprint(value, distinct, header_of(recipe.sketch, distinct) + packed if sketch else b"")
        next_span = iter(of_spans)
        values = (next(next_span) if isinstance(where, tuple) else rust.fingerprint(where)[0] for where in located)
        found = tuple(dict.fromkeys(v for v in values if v != value))
    trailer = b""
    if stored:
        trailer = parts_trailer(found)
        if recipe.sketch.renames:
            trailer += renames_trailer(_normalized(text, version, native) if rust is None else normalized, native)
    return Fingerprint(made.value, made.features, made.sketch + trailer, found)


def part_fingerprints(text: str, version: str, whole: int, native: bool = True) -> tuple[int, ...]:
    """The distinct fingerprints of the parts of ``text`` that the recipe ``version`` cuts (parts.py), other
    than the whole text's (``whole``), in the recipe's order: none for a recipe without parts.  Each part is
    fingerprinted as a text of its own; ``fingerprint(..., parts=True)`` gives the same, in one pass where
    it can."""
    cuts = recipe_of(version).query_parts
    found: dict[int, None] = {}
    for part in part_texts(text, cuts) if cuts else ():
        value = _whole(part, version, False, native).value
        if value != whole:
            found[value] = None
    return tuple(found)


def _normalized(text: str, version: str, native: bool) -> str:
    return normalize(text, native, recipe_of(version).normalization)


def _rust(version: str) -> Any | None:
    recipe = recipe_of(version)
    return fingerprinter(recipe.features, None if recipe.features != TIERED_GRAMS else recipe.normalization == FOLDED)


def _whole(text: str, version: str, sketch: bool, native: bool) -> Fingerprint:
    recipe = recipe_of(version)
    normalized = _normalized(text, version, native)
    scripts = None if recipe.features != TIERED_GRAMS else recipe.normalization == FOLDED
    rust = _rust(version) if native else None
    if rust is not None:
        shape = (recipe.sketch.bins, recipe.sketch.bits) if sketch else None
        value, distinct, packed = rust.fingerprint(normalized, shape)
        return Fingerprint(value, distinct, header_of(recipe.sketch, distinct) + packed if sketch else b"")
    if recipe.features == TIERED_GRAMS:
        parts = segments(fold_digits_and_phrases(normalized, bool(scripts)))
        hashes = token_hashes([token for tokens, _ in parts for token in tokens])
        distinct = distinct_shingle_count(hashes)
        made = sketch_of_hashes(hashes, recipe.sketch, native=False, distinct=distinct) if sketch else b""
        return Fingerprint(tiered_minhash_bits(*segment_grams(parts)), distinct, made)
    tokens = tokenize(normalized)
    hashes = token_hashes(tokens)
    made = sketch_of_hashes(hashes, recipe.sketch, native=False) if sketch else b""
    if recipe.features == SHINGLES:
        return Fingerprint(*shingle_minhash(hashes), made)
    feats = features(tokens, recipe.features)
    return Fingerprint(simhash(feats), feats.distinct, made)
