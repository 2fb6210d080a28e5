"""Text -> 64-bit fingerprint: normalize -> tokens -> weighted features -> SimHash (v1, v2), or word 3-shingles
-> 1-bit MinHash (v3), or segments -> tiered character grams -> 1-bit MinHash (v4); and the verification sketch.

Pure computation: nothing here touches HBase or the network.
"""

from simhash_server.fingerprint.hexform import from_hex, to_hex
from simhash_server.fingerprint.pipeline import Fingerprint, fingerprint
from simhash_server.fingerprint.versions import (
    FINGERPRINT_VERSION,
    NAMES,
    V1,
    V2,
    V3,
    V4,
    V4_NOFOLD,
    VERSIONS,
    Recipe,
    recipe_of,
    short_name,
)

__all__ = [
    "FINGERPRINT_VERSION",
    "NAMES",
    "V1",
    "V2",
    "V3",
    "V4",
    "V4_NOFOLD",
    "VERSIONS",
    "Fingerprint",
    "Recipe",
    "fingerprint",
    "from_hex",
    "recipe_of",
    "short_name",
    "to_hex",
]
