"""Steps 2-4 in Rust (``server/native``, the ``simhash_native`` extension), when it is installed.

The extension computes a version's fingerprint from a normalised text with the same rules as tokens.py,
features.py and simhash.py (minhash.py for v3); tests/unit/test_native.py holds the two paths to identical output.
What lives in Python's Unicode database comes from here: each code point's class under tokens.py's own
regular expression, each character's NFKD (normalize.py has the extension decompose first), and jieba's
IDF table.  Without the extension (a build without Rust) ``fingerprinter(recipe)`` is None and Python does all.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import cache
from typing import Any

from simhash_server.fingerprint.codepoints import every_code_point
from simhash_server.fingerprint.features import BLEND_WEIGHTS, SHINGLES, TIERED_GRAMS, _idf_table
from simhash_server.fingerprint.script import character_folding
from simhash_server.fingerprint.tokens import _HAN, _OTHER_IDEOGRAPH

__all__ = [
    "character_classes",
    "decompositions",
    "fingerprinter",
    "native_function",
    "sketch_function",
]

_CLASSES = ((1, rf"[{_HAN}]"), (2, rf"[{_OTHER_IDEOGRAPH}]"), (3, rf"[^\W_{_HAN}{_OTHER_IDEOGRAPH}]"))


def character_classes() -> bytes:
    """One byte per code point: 0 separator, 1 Han (segmented), 2 other ideograph (a token each), 3 a word
    character (runs of them are tokens): the classes of tokens.py's ``_RUNS``, from Python's own ``re``."""
    every = every_code_point()
    table = bytearray(len(every))
    for value, pattern in _CLASSES:
        for match in re.finditer(pattern + "+", every):
            table[match.start() : match.end()] = bytes([value]) * (match.end() - match.start())
    return bytes(table)


def decompositions() -> dict[str, str]:
    """NFKD of every code point whose NFKD differs from it, by Python's own Unicode database."""
    every = every_code_point()
    table = {}
    for start in range(0, len(every), _BLOCK):
        block = every[start : start + _BLOCK]
        # NFKD of a string is each character's NFKD, marks then reordered: a block NFKD leaves as it is holds
        # no character it changes.  Most of the code space is such blocks, skipped in C.
        if unicodedata.is_normalized("NFKD", block):
            continue
        for ch in block:
            decomposed = unicodedata.normalize("NFKD", ch)
            if decomposed != ch and not "\ud800" <= ch <= "\udfff":
                table[ch] = decomposed
    return table


_BLOCK = 256


_lock = threading.Lock()
_instances: dict[tuple[str, bool | None], Any] = {}


def fingerprinter(recipe: str, scripts: bool | None = None) -> Any | None:
    """The shared ``simhash_native.Fingerprinter`` of a blend feature recipe, of SHINGLES (recipe v3) or of
    TIERED_GRAMS (recipe v4), built on first use; None without the extension, or for a recipe the extension
    does not compute (the unblended ones).  ``scripts`` (v4 only): its ``decompose`` also applies v4's
    character folding, with (True) or without (False) the Chinese scripts folded."""
    key = (recipe, scripts)
    if key not in _instances:
        with _lock:
            if key not in _instances:
                _instances[key] = _build(recipe, scripts)
    return _instances[key]


def _build(recipe: str, scripts: bool | None) -> Any | None:
    weights = BLEND_WEIGHTS.get(recipe)
    if weights is None and recipe not in (SHINGLES, TIERED_GRAMS):
        return None
    try:
        import simhash_native
    except ImportError:
        return None
    # Only the blend recipes weigh tokens by IDF: the others skip loading jieba's table (a map task's start-up).
    idf, median = _idf_table() if weights is not None else ({}, 0)
    table = _tables()[1] if scripts is None else folded_decompositions(scripts)
    phrases = None
    if scripts:
        from simhash_server.fingerprint.normalize import phrase_folding  # normalize imports this module

        phrases = phrase_folding()
    return simhash_native.Fingerprinter(_tables()[0], idf, median, table, weights, recipe == TIERED_GRAMS, phrases)


@cache
def folded_decompositions(scripts: bool) -> dict[str, str]:
    """The decomposition table with v4's character folding in front: a folded character is replaced by the
    NFKD of what it folds to (nothing, for an invisible one)."""
    table = dict(_tables()[1])
    for ch, target in character_folding(scripts).items():
        table[ch] = unicodedata.normalize("NFKD", target)
    return table


@cache
def _tables() -> tuple[bytes, dict[str, str]]:
    """The Unicode tables every Fingerprinter shares (built once: a few seconds of Python)."""
    return character_classes(), decompositions()


@cache
def native_function(name: str) -> Any | None:
    """The extension's function ``name``, or None without the extension."""
    try:
        import simhash_native
    except ImportError:
        return None
    return getattr(simhash_native, name)


def sketch_function() -> Any | None:
    """``simhash_native.packed_sketch`` (a sketch's packed bins in Rust, the same bytes as sketch.py's numpy),
    or None without the extension."""
    return native_function("packed_sketch")
