"""Step 1 of the pipeline: text -> normalised text.

Unicode NFKC folds compatibility forms: full-width Latin letters, digits and punctuation become their
ASCII forms (ＡＢＣ１２３ -> ABC123), the ideographic space becomes a space, ligatures and circled digits are
unfolded.  Case folding (``str.casefold``) then removes case, including ß -> ss.  NFKC runs again after
case folding because folding can produce sequences that NFKC would compose differently.

With the Rust extension (native.py), each character is first replaced by its NFKD decomposition (from a table
of Python's own Unicode database): NFKC gives the same result on that text, and returns at once from its
quick check when it is already NFKC, as Chinese text with full-width punctuation then is.  3-4x faster.
"""

from __future__ import annotations

import unicodedata

from simhash_server.fingerprint.features import DEFAULT_RECIPE
from simhash_server.fingerprint.native import fingerprinter

__all__ = ["normalize"]


def normalize(text: str, native: bool = True) -> str:
    """NFKC, then case folding, then NFKC again (idempotent: normalize(normalize(t)) == normalize(t))."""
    rust = fingerprinter(DEFAULT_RECIPE) if native else None  # any recipe's extension decomposes alike
    if rust is not None:
        text = rust.decompose(text) or text
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
