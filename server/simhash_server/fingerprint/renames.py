"""Recipe v6's check for renamed neighbours: two pages of one family (`logname` and `readlink`, `bg` and `fg`,
a dialog's "add to" and "subtract from" pages) that are one text with one word standing for another.

Such pages contain each other as much as one article in two sites' templates does, so no floor on the
sketches' containment tells them apart (docs/decisions.md).  What a reader sees is the name: a word the page
repeats, standing where the other page has its own name, with the same words on either side, again and
again.  A copy has no such word: its edits (a typo, a changed date) are each made once, and a template's
lines do not line up with the other template's.

Each text keeps its most repeated words (runs of ASCII letters and digits, every digit run read as 0, seen
at least REPEATED times), up to WORDS of them, each with the first CONTEXTS distinct (previous unit, next
unit) pairs it stands between; a unit is such a run or any other character but white space (a Chinese
character, a bracket).  Two texts are renamed neighbours when some word x of one and another word y of the
other share at least LEAST contexts that neither text has for the other's word.  Words of Chinese characters
are left out: there a repeated substitution is as often a regional term (文件 and 文档) that folding cannot
settle.  The extension (server/native) computes the same bytes; tests/unit/test_renames.py holds the two
alike.

Stored after a format 5 sketch's parts (sketch_format.py): a count byte, then per word its 4-byte hash, a
count byte and 4 bytes per context (the low 32 bits of XXH3-64, big-endian).
"""

from __future__ import annotations

import re
from collections import Counter

import xxhash

__all__ = [
    "CONTEXTS",
    "LEAST",
    "REPEATED",
    "WORDS",
    "Renames",
    "length",
    "parse",
    "renamed",
    "renamed_trailers",
    "renames",
    "trailer",
]

WORDS = 16
CONTEXTS = 16
REPEATED = 3
LEAST = 3

Renames = dict[int, frozenset[int]]  # word hash -> its context hashes

# Python's str.isspace(), spelled out so that the extension's test is the same one.
_SPACE = " \t\n\r\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_UNITS = re.compile(rf"[a-z0-9]+|[^{_SPACE}]")
_DIGITS = re.compile(r"[0-9]+")
_WORD_START = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _hash(text: str) -> int:
    return xxhash.xxh3_64_intdigest(text.encode()) & 0xFFFFFFFF


def renames(normalized: str) -> Renames:
    """The repeated words of a normalised text with their contexts (see the module)."""
    units = _UNITS.findall(_DIGITS.sub("0", normalized))
    counts = Counter(u for u in units if u[0] in _WORD_START and u != "0")
    words = [w for w, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if n >= REPEATED][:WORDS]
    contexts: dict[str, dict[int, None]] = {w: {} for w in words}
    last = len(units) - 1
    for i, unit in enumerate(units):
        if unit in contexts and len(contexts[unit]) < CONTEXTS:
            around = (units[i - 1] if i else "") + "\x00" + (units[i + 1] if i < last else "")
            contexts[unit][_hash(around)] = None
    return {_hash(w): frozenset(contexts[w]) for w in words}


def trailer(normalized: str, native: bool = True) -> bytes:
    """The bytes a format 5 sketch stores after its parts; in Rust where the extension is installed."""
    # Imported here: sketch_format.py reads stored renames (``length``) without the tokenizer native.py loads.
    from simhash_server.fingerprint.native import native_function

    rust = native_function("renames_trailer") if native else None
    if rust is not None:
        return bytes(rust(normalized, WORDS, CONTEXTS, REPEATED))
    found = renames(normalized)
    out = bytearray([len(found)])
    for word, around in found.items():
        out += word.to_bytes(4, "big") + bytes([len(around)])
        out += b"".join(c.to_bytes(4, "big") for c in sorted(around))
    return bytes(out)


def length(value: bytes, start: int) -> int | None:
    """The length of the trailer at ``value[start:]``, or None when the bytes there are not one."""
    if start >= len(value):
        return None
    at = start + 1
    for _ in range(value[start]):
        if at + 5 > len(value):
            return None
        at += 5 + 4 * value[at + 4]
    return at - start if at <= len(value) else None


def parse(value: bytes, start: int) -> Renames:
    """The words and contexts of the trailer at ``value[start:]`` (``length`` vouched for it)."""
    out: Renames = {}
    at = start + 1
    for _ in range(value[start]):
        word, n = int.from_bytes(value[at : at + 4], "big"), value[at + 4]
        at += 5
        out[word] = frozenset(int.from_bytes(value[k : k + 4], "big") for k in range(at, at + 4 * n, 4))
        at += 4 * n
    return out


def renamed(a: Renames, b: Renames) -> bool:
    """Whether a word of ``a`` and another word of ``b`` stand in LEAST contexts that neither text has for the
    other's word: one text with one name put for another."""
    none: frozenset[int] = frozenset()
    for x, around_x in a.items():
        x_in_b = b.get(x, none)
        for y, around_y in b.items():
            if y != x and len((around_x & around_y) - a.get(y, none) - x_in_b) >= LEAST:
                return True
    return False


def renamed_trailers(a: bytes, b: bytes, native: bool = True) -> bool:
    """``renamed`` of two trailers (the bytes after two format 5 sketches' parts); in Rust where the extension
    is installed, since a verified query compares its text's with every candidate's."""
    from simhash_server.fingerprint.native import native_function

    rust = native_function("renamed") if native else None
    if rust is not None:
        return bool(rust(a, b, LEAST))
    return renamed(parse(a, 0), parse(b, 0))
