"""Text -> fingerprint: the whole recipe in one call, and the version string that names it.

normalize (normalize.py) -> tokens (tokens.py) -> weighted features (features.py) -> SimHash (simhash.py);
with ``sketch=True`` the same tokens also give the verification sketch (sketch.py).  For the default recipe,
steps 2-4 run in Rust when the extension is installed (native.py), with identical output.
A stored fingerprint is only comparable with fingerprints made by the same recipe; FINGERPRINT_VERSION names
every part of it and is stored with the index, which refuses to mix versions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simhash_server.fingerprint.features import DEFAULT_RECIPE, features
from simhash_server.fingerprint.native import fingerprinter
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.simhash import simhash, to_hex
from simhash_server.fingerprint.sketch import sketch as make_sketch
from simhash_server.fingerprint.sketch import sketch_of_hashes
from simhash_server.fingerprint.tokens import tokenize

__all__ = ["FINGERPRINT_VERSION", "Fingerprint", "fingerprint"]

# Bump the trailing revision whenever any part changes output; tests/golden fails the build otherwise.
# Names every part of the recipe.  jieba and rjieba are pinned in pyproject.toml: their dictionary is part of it.
FINGERPRINT_VERSION = f"simhash64/norm=nfkc-casefold/seg=jieba-0.42.1/feat={DEFAULT_RECIPE}/hash=xxh3-64+fmix64/r1"


@dataclass(frozen=True, slots=True)
class Fingerprint:
    value: int  # unsigned 64-bit, bit 63 most significant
    features: int  # distinct weighted features; below ~50 the fingerprint says little (docs/accuracy.md)
    sketch: bytes = b""  # the verification sketch, when asked for

    @property
    def hex(self) -> str:
        return to_hex(self.value)


def fingerprint(text: str, recipe: str = DEFAULT_RECIPE, sketch: bool = False, native: bool = True) -> Fingerprint:
    """The fingerprint of ``text``; ``native=False`` forces the Python pipeline (tests and benchmarks)."""
    normalized = normalize(text, native)
    rust = fingerprinter() if native and recipe == DEFAULT_RECIPE else None
    if rust is not None:
        value, distinct, hashes = rust.fingerprint(normalized, sketch)
        return Fingerprint(value, distinct, sketch_of_hashes(np.frombuffer(hashes, "<u8")) if sketch else b"")
    tokens = tokenize(normalized)
    feats = features(tokens, recipe)
    return Fingerprint(simhash(feats), feats.distinct, make_sketch(tokens) if sketch else b"")
