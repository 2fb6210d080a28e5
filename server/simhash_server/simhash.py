"""Step 4: weighted features -> 64-bit fingerprint (Charikar's SimHash).

Each feature is hashed to 64 bits with XXH3-64 (seed 0) over its UTF-8 bytes.  For every bit position the
feature adds its weight where its hash has a 1 and subtracts it where it has a 0; the fingerprint has a 1
exactly where the sum is positive (a sum of zero, as for a text without features, gives 0).

Bit order: the fingerprint is an unsigned 64-bit integer; bit i of it comes from bit i of the feature hashes
(bit 63 is the most significant).  Its text form is 16 lowercase hex digits, most significant first.
"""

from __future__ import annotations

import re

import numpy as np
import xxhash

__all__ = ["from_hex", "simhash", "to_hex"]

_HEX16 = re.compile(r"[0-9a-fA-F]{16}")
_BITS = np.arange(64, dtype=np.uint64)
_POWERS = np.left_shift(np.uint64(1), _BITS)


def simhash(weighted: dict[str, int]) -> int:
    """The SimHash of integer-weighted features."""
    if not weighted:
        return 0
    hash64 = xxhash.xxh3_64_intdigest
    hashes = np.fromiter((hash64(f.encode("utf-8")) for f in weighted), dtype=np.uint64, count=len(weighted))
    weights = np.fromiter(weighted.values(), dtype=np.int64, count=len(weighted))
    bits = ((hashes[:, None] >> _BITS) & np.uint64(1)).astype(np.int64)  # (features, 64), bit i in column i
    # sum(+w where bit=1, -w where bit=0) = 2 * (w @ bits) - sum(w); integer arithmetic, exact.
    votes = 2 * (weights @ bits) - weights.sum()
    return int(_POWERS[votes > 0].sum())


def to_hex(fingerprint: int) -> str:
    return f"{fingerprint:016x}"


def from_hex(text: str) -> int:
    """Parse 16 hex digits (case-insensitive); ValueError names what is wrong."""
    if not _HEX16.fullmatch(text):
        raise ValueError(f"a fingerprint is 16 hex digits, got {text[:40]!r}")
    return int(text, 16)
