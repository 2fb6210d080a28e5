"""Step 4: weighted features -> 64-bit fingerprint (Charikar's SimHash).

For every bit position each feature adds its weight where its hash has a 1 and subtracts it where it has
a 0; the fingerprint has a 1 exactly where the sum is positive (a sum of zero, as for a text without
features, gives 0).

Exactness: weights are integers and every partial sum stays far below 2**53, so float64 arithmetic (which
lets numpy use BLAS) is exact in any summation order, on any machine.

Bit order: the fingerprint is an unsigned 64-bit integer; bit i of it comes from bit i of the feature
hashes; bit 63 is the most significant.  Its text form is 16 lowercase hex digits, most significant first.
"""

from __future__ import annotations

import numpy as np

from simhash_server.fingerprint.features import Features

__all__ = ["simhash"]

_CHUNK = 1 << 16  # features per block: bounds memory for megabyte texts
_POWERS = np.left_shift(np.uint64(1), np.arange(64, dtype=np.uint64))
_MAX_EXACT = 2.0**53


def simhash(feats: Features) -> int:
    """The SimHash of weighted features."""
    hashes, weights = feats.hashes, feats.weights
    if hashes.size == 0:
        return 0
    ones = np.zeros(64)
    for start in range(0, hashes.size, _CHUNK):
        block = hashes[start : start + _CHUNK]
        # Little-endian bytes, bits unpacked least significant first: column i is bit i of the hash.
        bits = np.unpackbits(block.astype("<u8").view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        ones += weights[start : start + _CHUNK] @ bits
    total = weights.sum()
    if total >= _MAX_EXACT:  # pragma: no cover - would take a text of billions of tokens
        raise ValueError("feature weights too large to sum exactly")
    return int(_POWERS[2 * ones - total > 0].sum())
