"""Text -> fingerprint: the whole recipe of a version (versions.py) in one call.

normalize (normalize.py) -> tokens (tokens.py) -> weighted features (features.py) -> SimHash (simhash.py), or
for v3 -> word 3-shingles (features.py) -> 1-bit MinHash (minhash.py), or for v4 -> segments with their tiers
(sentences.py) -> character grams within segments (features.py) -> tiered 1-bit MinHash (minhash.py); with
``sketch=True`` the same tokens also give the verification sketch (sketch.py) in the version's format, and for
a format that carries them (v5) the fingerprints of the text's parts after it (parts.py).
Steps 2-4 run in Rust when the extension is installed (native.py), with identical output.
"""

from __future__ import annotations

from dataclasses import dataclass

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
from simhash_server.fingerprint.parts import part_texts
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
    parts: tuple[int, ...] = ()  # with the sketch of a format that stores them (v5): part_fingerprints

    @property
    def hex(self) -> str:
        return to_hex(self.value)


def fingerprint(
    text: str, version: str = FINGERPRINT_VERSION, sketch: bool = False, native: bool = True
) -> Fingerprint:
    """The fingerprint of ``text`` by the recipe ``version`` names; ``native=False`` forces the Python
    pipeline (tests and benchmarks)."""
    made = _whole(text, version, sketch, native)
    if not (sketch and recipe_of(version).sketch.parts):
        return made
    parts = part_fingerprints(text, version, made.value, native)
    return Fingerprint(made.value, made.features, made.sketch + parts_trailer(parts), parts)


def part_fingerprints(text: str, version: str, whole: int, native: bool = True) -> tuple[int, ...]:
    """The distinct fingerprints of the parts of ``text`` that the recipe ``version`` cuts (parts.py), other
    than the whole text's (``whole``), in the recipe's order: none for a recipe without parts."""
    cuts = recipe_of(version).query_parts
    found: dict[int, None] = {}
    for part in part_texts(text, cuts) if cuts else ():
        value = _whole(part, version, False, native).value
        if value != whole:
            found[value] = None
    return tuple(found)


def _whole(text: str, version: str, sketch: bool, native: bool) -> Fingerprint:
    recipe = recipe_of(version)
    normalized = normalize(text, native, recipe.normalization)
    scripts = None if recipe.features != TIERED_GRAMS else recipe.normalization == FOLDED
    rust = fingerprinter(recipe.features, scripts) if native else None
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
