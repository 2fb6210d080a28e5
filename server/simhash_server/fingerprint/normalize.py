"""Step 1 of the pipeline: text -> normalised text.

Every recipe: Unicode NFKC folds compatibility forms: full-width Latin letters, digits and punctuation become
their ASCII forms (ＡＢＣ１２３ -> ABC123), the ideographic space becomes a space, ligatures and circled digits
are unfolded.  Case folding (``str.casefold``) then removes case, including ß -> ss.  NFKC runs again after
case folding because folding can produce sequences that NFKC would compose differently.

Recipe v4 (``FOLDED`` and ``UNFOLDED``) first takes out what web pages leave in plain text (markup.py:
character references, HTML tags, CRs), then deletes invisible characters and folds traditional and simplified
Chinese characters to one form (script.py; ``UNFOLDED`` keeps the scripts apart).  The fingerprint step then
writes every run of ASCII digits (full-width ones are ASCII after NFKC) as one ``0``, so a changed number or
date is no longer a changed word, and for ``FOLDED`` replaces Taiwan's phrases by the mainland's
(``fold_digits_and_phrases``; in Rust, inside the fingerprint step).

With the Rust extension (native.py), each character is first replaced by its NFKD decomposition (from a table
of Python's own Unicode database; for v4, of the folded character): NFKC gives the same result on that text,
and returns at once from its quick check when it is already NFKC, as Chinese text with full-width punctuation
then is, so NFKC does not decompose and recompose the whole text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache

from simhash_server.fingerprint.features import DEFAULT_RECIPE
from simhash_server.fingerprint.markup import strip_markup
from simhash_server.fingerprint.names import FOLDED, NFKC_CASEFOLD, NORMALIZATIONS, TIERED_GRAMS, UNFOLDED
from simhash_server.fingerprint.native import fingerprinter
from simhash_server.fingerprint.script import character_folding, regional_phrases

__all__ = [
    "FOLDED",
    "NFKC_CASEFOLD",
    "NORMALIZATIONS",
    "UNFOLDED",
    "fold_digits_and_phrases",
    "normalize",
    "phrase_folding",
]

_DIGITS = re.compile(r"[0-9]+")


@cache
def _translation(scripts: bool) -> dict[int, str]:
    return {ord(k): v for k, v in character_folding(scripts).items()}


def normalize(text: str, native: bool = True, form: str = NFKC_CASEFOLD) -> str:
    """``text`` normalised by ``form`` (one of NORMALIZATIONS); idempotent for NFKC_CASEFOLD."""
    if form == NFKC_CASEFOLD:
        rust = fingerprinter(DEFAULT_RECIPE) if native else None  # any recipe's extension decomposes alike
        if rust is not None:
            text = rust.decompose(text) or text
        return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())
    if form not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {form!r}; choose one of {', '.join(NORMALIZATIONS)}")
    scripts = form == FOLDED
    text = strip_markup(text)
    rust = fingerprinter(TIERED_GRAMS, scripts) if native else None
    text = (rust.decompose(text) or text) if rust is not None else text.translate(_translation(scripts))
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


@cache
def phrase_folding() -> dict[str, str]:
    """Taiwan phrase -> mainland phrase, both as FOLDED normalises them (pairs that normalise alike dropped)."""

    def norm(phrase: str) -> str:
        folded = phrase.translate(_translation(True))
        return _DIGITS.sub("0", unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", folded).casefold()))

    table: dict[str, str] = {}
    for taiwan, mainland in regional_phrases():
        key, value = norm(taiwan), norm(mainland)
        if key and key != value:
            table.setdefault(key, value)
    return table


@cache
def _phrases() -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(phrase_folding(), key=lambda k: (-len(k), k)))))


def fold_digits_and_phrases(normalized: str, phrases: bool) -> str:
    """Recipe v4's last folding, of a normalised text: every run of ASCII digits as ``0``, then (``phrases``,
    for FOLDED) every Taiwan phrase replaced by the mainland's, leftmost and longest first.  The reference:
    the extension does the same in its fingerprint step, the phrases with an Aho-Corasick automaton."""
    text = _DIGITS.sub("0", normalized)
    if not phrases:
        return text
    table = phrase_folding()
    return _phrases().sub(lambda m: table[m.group()], text)
