"""The names recipes give the variants of their steps (features.py and normalize.py compute what they name):
apart, so that versions.py names its recipes without loading the tables that compute them."""

from __future__ import annotations

__all__ = ["FOLDED", "NFKC_CASEFOLD", "NORMALIZATIONS", "SHINGLES", "TIERED_GRAMS", "UNFOLDED"]

SHINGLES = "word-3-shingles"  # recipe v3's features: the shingle set, unweighted, hashed by minhash.py
TIERED_GRAMS = "segment-char-grams-tiered"  # recipe v4's: character grams within segments, weighted by tier

NFKC_CASEFOLD = "nfkc-casefold"  # v1-v3
FOLDED = "markup+invisible+script+nfkc-casefold+digits"  # v4
UNFOLDED = "markup+invisible+nfkc-casefold+digits"  # v4 with the scripts kept apart
NORMALIZATIONS = (NFKC_CASEFOLD, FOLDED, UNFOLDED)
