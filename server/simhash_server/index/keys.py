"""Step 5: fingerprint -> drawer row keys, and the codecs of every row key and column (pure code, no HBase).

The 64-bit fingerprint (bit 63 most significant) is cut into 5 segments, most significant first, of
13, 13, 13, 13 and 12 bits.  Two fingerprints within Hamming distance 3 differ in at most 3 segments, so
(pigeonhole) they agree on at least 2 of the 5, hence on at least one of the 10 pairs of segments.

Each pair (i, j), i < j, in lexicographic order, is a "drawer" with a 1-byte flag equal to its position:

    flag 0: (0,1)  1: (0,2)  2: (0,3)  3: (0,4)  4: (1,2)  5: (1,3)  6: (1,4)  7: (2,3)  8: (2,4)  9: (3,4)

The drawer value is segment i's bits followed by segment j's (26 bits, or 25 with segment 4), left-aligned
in 4 bytes so the key's first byte is spread evenly over 0..255 (pre-split regions all get work).

Row key (13 bytes, big-endian, unsigned) = drawer value (4) + flag (1) + fingerprint (8).  A query scans
the 10 five-byte prefixes (drawer value + flag) of its own fingerprint.

Part rows (recipe v7 on): a stored document's first stored part (the text without its first and last tenth
of lines, usually: fingerprint/parts.py) also has 10 rows, keyed drawer value + (flag + 10) + the part's
fingerprint (8) + the document's fingerprint (8), 21 bytes.  A verified text query also scans the part
prefixes (flags 10-19) of its fingerprints, and reads the documents of each row's last 8 bytes: a page
stored inside a template that moved its fingerprint is met by its part's.  Ordinary scans (flags 0-9) never
see them.

The other tables: fp2docs rows are keyed by the fingerprint (8 bytes, big-endian) with one column
``d:<doc id>`` per document; docs rows by the document id's UTF-8 bytes.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np

from simhash_server.index.errors import CorruptData

__all__ = [
    "KEY_LENGTH",
    "LAYOUT",
    "PAIRS",
    "PART_FLAGS",
    "PART_KEY_LENGTH",
    "PREFIX_LENGTH",
    "SEGMENTS",
    "decode_key",
    "doc_column",
    "doc_of_column",
    "doc_of_qualifier",
    "drawer_keys",
    "drawer_prefixes",
    "drawer_prefixes_array",
    "fingerprint_of_row",
    "fingerprint_row",
    "owner_of_key",
    "part_prefixes",
    "part_row_keys",
    "split_key",
    "split_part_key",
]

SEGMENTS: tuple[int, ...] = (13, 13, 13, 13, 12)
PAIRS: tuple[tuple[int, int], ...] = tuple(combinations(range(len(SEGMENTS)), 2))
LAYOUT = "segments=13,13,13,13,12;pairs=lexicographic;key=drawer32+flag8+fp64"
PREFIX_LENGTH = 5
KEY_LENGTH = 13
PART_FLAGS = 10  # a part row's flag is its drawer's flag + PART_FLAGS
PART_KEY_LENGTH = KEY_LENGTH + 8

_SHIFTS = tuple(64 - sum(SEGMENTS[: i + 1]) for i in range(len(SEGMENTS)))  # low bit of each segment
_MASKS = tuple((1 << w) - 1 for w in SEGMENTS)
assert sum(SEGMENTS) == 64 and len(PAIRS) == 10


def _segments(fp: int) -> list[int]:
    return [(fp >> shift) & mask for shift, mask in zip(_SHIFTS, _MASKS, strict=True)]


def drawer_prefixes(fp: int) -> list[bytes]:
    """The 10 five-byte prefixes (drawer value + flag) of a fingerprint, in flag order."""
    seg = _segments(fp)
    out = []
    for flag, (i, j) in enumerate(PAIRS):
        width = SEGMENTS[i] + SEGMENTS[j]
        value = ((seg[i] << SEGMENTS[j]) | seg[j]) << (32 - width)
        out.append(value.to_bytes(4, "big") + bytes((flag,)))
    return out


def part_prefixes(fp: int) -> list[bytes]:
    """The 10 five-byte prefixes of the part rows of a part fingerprint ``fp`` (flags 10-19)."""
    return [prefix[:4] + bytes((prefix[4] + PART_FLAGS,)) for prefix in drawer_prefixes(fp)]


def part_row_keys(part: int, whole: int) -> list[bytes]:
    """The 10 row keys leading from a stored document's part fingerprint ``part`` to its fingerprint ``whole``."""
    tail = part.to_bytes(8, "big") + whole.to_bytes(8, "big")
    return [prefix + tail for prefix in part_prefixes(part)]


def split_part_key(key: bytes) -> tuple[bytes, int, int]:
    """(prefix, part fingerprint, document fingerprint) of a part row key; CorruptData if it is not one."""
    if len(key) != PART_KEY_LENGTH or key[4] < PART_FLAGS:
        raise CorruptData(f"a part row key is {PART_KEY_LENGTH} bytes with a flag >= {PART_FLAGS}, got {key[:32]!r}")
    return key[:PREFIX_LENGTH], int.from_bytes(key[5:13], "big"), int.from_bytes(key[13:], "big")


def owner_of_key(key: bytes) -> int:
    """The fingerprint whose documents a drawer table row leads to: a drawer row's own, a part row's document
    fingerprint; CorruptData for a row this code does not write."""
    if len(key) == PART_KEY_LENGTH:
        return split_part_key(key)[2]
    return split_key(key)[1]


def drawer_keys(fp: int) -> list[bytes]:
    """The 10 row keys of a fingerprint."""
    tail = fp.to_bytes(8, "big")
    return [prefix + tail for prefix in drawer_prefixes(fp)]


def decode_key(key: bytes) -> tuple[int, int, int]:
    """(drawer value, flag, fingerprint) of a row key; ValueError if it is not one."""
    if len(key) != KEY_LENGTH or key[4] >= len(PAIRS):
        raise ValueError(f"not a drawer row key: {key!r}")
    return int.from_bytes(key[:4], "big"), key[4], int.from_bytes(key[5:], "big")


def split_key(key: bytes) -> tuple[bytes, int]:
    """(prefix, fingerprint) of a drawer row key, as a scan returns it; CorruptData if it is not one."""
    if len(key) != KEY_LENGTH:
        raise CorruptData(f"a drawer row key is {KEY_LENGTH} bytes, got {len(key)}: {key[:32]!r}")
    return key[:PREFIX_LENGTH], int.from_bytes(key[PREFIX_LENGTH:], "big")


def fingerprint_row(fp: int) -> bytes:
    """The fp2docs row key of a fingerprint."""
    return fp.to_bytes(8, "big")


def fingerprint_of_row(row: bytes) -> int:
    if len(row) != 8:
        raise CorruptData(f"a fingerprint row key or cell is 8 bytes, got {len(row)}: {row[:32]!r}")
    return int.from_bytes(row, "big")


_DOC_FAMILY = b"d:"


def doc_column(doc_key: bytes) -> bytes:
    """The fp2docs column of a document (its id's UTF-8 bytes after the family)."""
    return _DOC_FAMILY + doc_key


def doc_of_column(column: bytes) -> str:
    """The document id of an fp2docs column; CorruptData for a column this code does not write."""
    if not column.startswith(_DOC_FAMILY):
        raise CorruptData(f"fp2docs column {column[:64]!r} is not in family d")
    return doc_of_qualifier(column[len(_DOC_FAMILY) :])


def doc_of_qualifier(qualifier: bytes) -> str:
    """The document id of an fp2docs column's qualifier (the column without its family)."""
    try:
        return qualifier.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptData(f"fp2docs column d:{qualifier[:64]!r} is not a UTF-8 document id") from exc


def drawer_prefixes_array(fps: np.ndarray) -> np.ndarray:
    """Vectorised drawer_prefixes: uint64 fingerprints (n,) -> drawer values (n, 10) as uint32 (flags implied)."""
    fps = fps.astype(np.uint64, copy=False)
    seg = [(fps >> np.uint64(s)) & np.uint64(m) for s, m in zip(_SHIFTS, _MASKS, strict=True)]
    cols = []
    for i, j in PAIRS:
        width = SEGMENTS[i] + SEGMENTS[j]
        cols.append(((seg[i] << np.uint64(SEGMENTS[j])) | seg[j]) << np.uint64(32 - width))
    return np.stack(cols, axis=1).astype(np.uint32)
