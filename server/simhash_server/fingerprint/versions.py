"""The fingerprint recipes, by the version string an index stores: what each one computes, kept forever.

A stored fingerprint is only comparable with fingerprints made by the same recipe.  An index records the
version it was created with (simhash_schema's meta record) and is served with that version's recipe, so an
index made before an upgrade keeps its answers.  New indexes get FINGERPRINT_VERSION.  Golden vectors pin
every version (tests/golden/vectors-*.json); bump a version's revision only by adding a new version.
"""

from __future__ import annotations

from dataclasses import dataclass

from simhash_server.fingerprint.names import FOLDED, NFKC_CASEFOLD, SHINGLES, TIERED_GRAMS, UNFOLDED
from simhash_server.fingerprint.sketch_format import FORMATS, SketchFormat

__all__ = [
    "FINGERPRINT_VERSION",
    "NAMES",
    "V1",
    "V2",
    "V3",
    "V4",
    "V4_NOFOLD",
    "V5",
    "V6",
    "V7",
    "VERSIONS",
    "Recipe",
    "recipe_of",
    "short_name",
]

_PREFIX = "simhash64/norm=nfkc-casefold/seg=jieba-0.42.1"  # jieba and rjieba are pinned: their dictionary is part
V1 = f"{_PREFIX}/feat=blend-tfidf/hash=xxh3-64+fmix64/r1"
V2 = f"{_PREFIX}/feat=blend-tfidf-321/hash=xxh3-64+fmix64/sketch=2048x2/r2"
# v3 is not a SimHash: 64 one-bit MinHashes of the word 3-shingle set (minhash.py), same tokens and sketch as v2.
V3 = (
    "minhash64/norm=nfkc-casefold/seg=jieba-0.42.1/feat=word-3-shingles"
    "/hash=xxh3-64+fmix64+multiply-add-shift/sketch=2048x2/r3"
)
# v4 is what a reader calls the same article: markup, invisible characters, scripts and numbers folded, and a
# 1-bit MinHash of the character grams within segments, sentences weighing most (sentences.py, minhash.py); its
# sketch counts its shingles, so verification measures containment (sketch.py).  v4-nofold keeps traditional
# and simplified Chinese apart.  The tables that fold are OpenCC's, from opencc-purepy 1.5.0 (pinned).
_V4 = (
    "minhash64/norm={}/opencc=opencc-purepy-1.5.0/seg=jieba-0.42.1/feat=segment-char-4-grams-tiered-10-4"
    "/hash=xxh3-64+fmix64+rounds-0-8-18/sketch=2048x2+count/r4"
)
V4 = _V4.format(FOLDED)
V4_NOFOLD = _V4.format(UNFOLDED)
# v5 is v4 (the same fingerprint, sketch and floors) whose stored sketch also carries the fingerprints of the
# text's parts (sketch format 4), so the `clusters` job meets each document's parts with the others'
# fingerprints: a page stored with more around it, or whole beside its truncated copy, joins its copy's cluster.
V5 = V4.replace("/sketch=2048x2+count/r4", "/sketch=2048x2+count+parts=lines-10-10,20-20,0-40/r5")
# v6 is v5 whose stored sketch also carries the text's repeated words with their contexts (sketch format 5,
# renames.py), so two pages that are one text with one name put for another (`logname` and `readlink`) are no
# longer each other's copies.
V6 = V5.replace("/r5", "+renames=words-16-contexts-16-least-3/r6")
# v7 is v6 (the same fingerprint, sketch and floors) whose index also keeps each document's first stored part
# under its fingerprint (part rows: index/keys.py): a page stored inside a template, whose fingerprint the
# template moved, is met by its part's when the page is sent alone.
V7 = V6.replace("/r6", "/rows=whole+first-part/r7")


@dataclass(frozen=True)
class Recipe:
    version: str
    features: str  # a key of features.RECIPES (SimHash over those features), SHINGLES (v3), TIERED_GRAMS (v4)
    sketch: SketchFormat
    # The min_similarity a text Deduplicate uses when the caller gives none: chosen on the tuning half of
    # the evaluation (docs/accuracy.md) as the floor where precision and recall against Jaccard >= 0.9
    # balance for this recipe's fingerprints and sketch.
    dedup_floor: float
    normalization: str = NFKC_CASEFOLD  # one of normalize.NORMALIZATIONS
    # The min_similarity a text Query uses when the caller gives none (None: the fingerprint's answer).  v4's
    # is its Deduplicate floor, so both calls give one answer.  v1-v3 answer with the fingerprint: within
    # distance 3 their precision is already 1.000 on the evaluation (docs/accuracy.md), so a floor could only
    # drop copies.
    query_floor: float | None = None
    # The parts of its text a verified text query also looks up (parts.py): (share of lines dropped from the
    # start, share dropped from the end).  v4's were chosen on the tuning half: a template dropped (a tenth or
    # a fifth each side) and a truncated copy (the first 60%).
    query_parts: tuple[tuple[float, float], ...] = ()
    # Whether the index keeps part rows (index/keys.py): each stored document's first stored part, a
    # verified text query's candidates too.
    part_rows: bool = False


_V4_PARTS = ((0.1, 0.1), (0.2, 0.2), (0.0, 0.4))
VERSIONS: dict[str, Recipe] = {
    V1: Recipe(V1, "blend-tfidf", FORMATS[1], 0.9),
    V2: Recipe(V2, "blend-tfidf-321", FORMATS[2], 0.896),
    V3: Recipe(V3, SHINGLES, FORMATS[2], 0.9),
    V4_NOFOLD: Recipe(V4_NOFOLD, TIERED_GRAMS, FORMATS[3], 0.75, UNFOLDED, query_floor=0.75, query_parts=_V4_PARTS),
    V4: Recipe(V4, TIERED_GRAMS, FORMATS[3], 0.75, FOLDED, query_floor=0.75, query_parts=_V4_PARTS),
    V5: Recipe(V5, TIERED_GRAMS, FORMATS[4], 0.75, FOLDED, query_floor=0.75, query_parts=_V4_PARTS),
    V6: Recipe(V6, TIERED_GRAMS, FORMATS[5], 0.75, FOLDED, query_floor=0.75, query_parts=_V4_PARTS),
    V7: Recipe(V7, TIERED_GRAMS, FORMATS[5], 0.75, FOLDED, query_floor=0.75, query_parts=_V4_PARTS, part_rows=True),
}
FINGERPRINT_VERSION = V7  # what new indexes are created with
# What the command line and the docs call them.
NAMES: dict[str, str] = {"v1": V1, "v2": V2, "v3": V3, "v4": V4, "v4-nofold": V4_NOFOLD, "v5": V5, "v6": V6, "v7": V7}


def short_name(version: str) -> str:
    return next(name for name, full in NAMES.items() if full == version)


def recipe_of(version: str) -> Recipe:
    """The recipe a version string names; ValueError naming the known ones otherwise."""
    try:
        return VERSIONS[version]
    except KeyError:
        known = ", ".join(repr(v) for v in VERSIONS)
        raise ValueError(f"unknown fingerprint version {version!r}; this build knows {known}") from None
