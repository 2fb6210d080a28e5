"""Text -> 64-bit fingerprint: normalize -> tokens -> weighted features -> SimHash (v1, v2), or word 3-shingles
-> 1-bit MinHash (v3), or segments -> tiered character grams -> 1-bit MinHash (v4); and the verification sketch.

Pure computation: nothing here touches HBase or the network.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from simhash_server.fingerprint.hexform import from_hex, to_hex
from simhash_server.fingerprint.versions import (
    FINGERPRINT_VERSION,
    NAMES,
    V1,
    V2,
    V3,
    V4,
    V4_NOFOLD,
    V5,
    V6,
    V7,
    VERSIONS,
    Recipe,
    recipe_of,
    short_name,
)

if TYPE_CHECKING:
    from simhash_server.fingerprint.pipeline import Fingerprint, fingerprint


def __getattr__(name: str) -> Any:
    # The pipeline (jieba's, OpenCC's and the native tables) loads on first use, not with the package: a
    # command that only names a recipe, or reads a module beside it, starts without them.
    if name in ("Fingerprint", "fingerprint"):
        from simhash_server.fingerprint import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
    "Fingerprint",
    "Recipe",
    "fingerprint",
    "from_hex",
    "recipe_of",
    "short_name",
    "to_hex",
]
