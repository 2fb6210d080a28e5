"""Steps 2-4 in Rust (``server/native``, the ``simhash_native`` extension), when it is installed.

The extension computes the default recipe's fingerprint from a normalised text with the same rules as
tokens.py, features.py and simhash.py; tests/unit/test_native.py holds the two paths to identical output.
What lives in Python's Unicode database comes from here: each code point's class under tokens.py's own
regular expression, each character's NFKD (normalize.py has the extension decompose first), and jieba's
IDF table.  Without the extension (a build without Rust) ``fingerprinter()`` is None and Python does all.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from typing import Any

from simhash_server.fingerprint.features import _idf_table
from simhash_server.fingerprint.tokens import _HAN, _OTHER_IDEOGRAPH

__all__ = ["character_classes", "decompositions", "fingerprinter"]

_CLASSES = ((1, rf"[{_HAN}]"), (2, rf"[{_OTHER_IDEOGRAPH}]"), (3, rf"[^\W_{_HAN}{_OTHER_IDEOGRAPH}]"))


def character_classes() -> bytes:
    """One byte per code point: 0 separator, 1 Han (segmented), 2 other ideograph (a token each), 3 a word
    character (runs of them are tokens): the classes of tokens.py's ``_RUNS``, from Python's own ``re``."""
    every = "".join(map(chr, range(0x110000)))
    table = bytearray(0x110000)
    for value, pattern in _CLASSES:
        for match in re.finditer(pattern + "+", every):
            table[match.start() : match.end()] = bytes([value]) * (match.end() - match.start())
    return bytes(table)


def decompositions() -> dict[str, str]:
    """NFKD of every code point whose NFKD differs from it, by Python's own Unicode database."""
    table = {}
    for cp in (*range(0xD800), *range(0xE000, 0x110000)):
        ch = chr(cp)
        decomposed = unicodedata.normalize("NFKD", ch)
        if decomposed != ch:
            table[ch] = decomposed
    return table


_lock = threading.Lock()
_instance: list[Any] = []


def fingerprinter() -> Any | None:
    """The shared ``simhash_native.Fingerprinter``, built on first use; None without the extension."""
    if not _instance:
        with _lock:
            if not _instance:
                try:
                    import simhash_native
                except ImportError:
                    _instance.append(None)
                else:
                    idf, median = _idf_table()
                    _instance.append(simhash_native.Fingerprinter(character_classes(), idf, median, decompositions()))
    return _instance[0]
