"""The ``bin`` bulk-input format (input.py reads it): the 8-byte magic ``SHBULK1\\n``, then records of a
big-endian unsigned 64-bit fingerprint, a big-endian 16-bit id length and the id in UTF-8; or ``SHBULK2\\n``,
whose records also carry a big-endian 16-bit sketch length after the id's, and the sketch after the id."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import IO

from simhash_server.bulk.records import Record, Reject
from simhash_server.index.model import check_doc_id, check_sketch

__all__ = ["BINARY_MAGIC", "BINARY_SKETCH_MAGIC", "binary_records", "encode_binary"]

BINARY_MAGIC = b"SHBULK1\n"
BINARY_SKETCH_MAGIC = b"SHBULK2\n"  # records carry a sketch
_BIN_HEADER = struct.Struct(">QH")
_BIN_SKETCH_HEADER = struct.Struct(">QHH")


def encode_binary(records: list[tuple[str, int]] | list[tuple[str, int, bytes]]) -> bytes:
    """The ``bin`` format of (doc_id, simhash) pairs, or of (doc_id, simhash, sketch) triples (``SHBULK2``),
    header included (for tools and tests)."""
    with_sketch = any(len(r) == 3 for r in records)
    out = [BINARY_SKETCH_MAGIC if with_sketch else BINARY_MAGIC]
    for doc_id, fp, *rest in records:
        raw = doc_id.encode("utf-8")
        if with_sketch:
            sketch = rest[0] if rest else b""
            out.append(_BIN_SKETCH_HEADER.pack(fp, len(raw), len(sketch)) + raw + sketch)
        else:
            out.append(_BIN_HEADER.pack(fp, len(raw)) + raw)
    return b"".join(out)


def binary_records(
    stream: IO[bytes], number: int, carry: int, sketches: bool, fingerprint_version: str
) -> Iterator[tuple[Record | Reject, int]]:
    """The records after the magic: each with the bytes it took (``carry``: bytes already read, counted
    with the first); a truncated or invalid record is a Reject, and truncation ends the input."""
    header = _BIN_SKETCH_HEADER if sketches else _BIN_HEADER
    while True:
        head = stream.read(header.size)
        if not head:
            return
        if len(head) < header.size:
            yield Reject(number, "truncated record header at the end of the input", head.hex()), carry + len(head)
            return
        fp, length, *rest = header.unpack(head)
        sketch_length = rest[0] if rest else 0
        raw = stream.read(length)
        sketch = stream.read(sketch_length) if sketch_length else b""
        consumed, carry = carry + len(head) + len(raw) + len(sketch), 0
        if len(raw) < length or len(sketch) < sketch_length:
            reason = f"truncated record: id of {length} bytes, {len(raw)} left"
            if sketches:
                reason = f"truncated record: id of {length} and sketch of {sketch_length} bytes"
            yield Reject(number, reason, raw.hex()), consumed
            return
        try:
            doc_id = raw.decode("utf-8")
            check_doc_id(doc_id)
            if sketch_length:
                check_sketch(sketch, fingerprint_version)
        except (UnicodeDecodeError, ValueError) as exc:
            reason = "doc_id is not UTF-8" if isinstance(exc, UnicodeDecodeError) else str(exc)
            yield Reject(number, reason, raw.hex()), consumed
        else:
            yield Record(number, doc_id, fp, None, None, sketch), consumed
        number += 1
