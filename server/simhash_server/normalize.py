"""Step 1 of the pipeline: text -> normalised text.

Unicode NFKC folds compatibility forms: full-width Latin letters, digits and punctuation become their
ASCII forms (ＡＢＣ１２３ -> ABC123), the ideographic space becomes a space, ligatures and circled digits are
unfolded.  Case folding (``str.casefold``) then removes case, including ß -> ss.  NFKC runs again after
case folding because folding can produce sequences that NFKC would compose differently.
"""

from __future__ import annotations

import unicodedata

__all__ = ["normalize"]


def normalize(text: str) -> str:
    """NFKC, then case folding, then NFKC again (idempotent: normalize(normalize(t)) == normalize(t))."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
