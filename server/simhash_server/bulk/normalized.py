"""A record as the index stores it, and the normalised form hfile-load's jobs read: the step between an
input record (input.py) and the HFiles (the Java jobs).  Light on purpose: the parse tasks on the cluster
import it, and neither the HBase client nor, for fingerprints, the tokenizer is loaded for it."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

from simhash_server.index.model import Document

__all__ = ["NORMALIZED_MAGIC", "iter_normalized", "normalized_record", "stored_document"]

NORMALIZED_MAGIC = b"SHNORM2\n"  # NormalizedInputFormat.java reads what this module writes
_HEADER = struct.Struct(">QQqHH")  # seq, fingerprint, indexed_at ms (-1: undated), id length, sketch length
_UNDATED = -1


def stored_document(
    doc_id: str,
    fp: int | None,
    text: str | None,
    version: str,
    indexed_at_ms: int | None = None,
    sketch: bytes = b"",
) -> Document:
    """A record as stored: a text brings its fingerprint and its verification sketch (by the index's recipe),
    a fingerprint the sketch made beside it, if any (checked by the input layer)."""
    if fp is not None:
        return Document(doc_id, fp, sketch, indexed_at_ms)
    # Imported here: a load of fingerprints, or one whose texts the cluster's tasks fingerprint, starts
    # without jieba's and OpenCC's tables.
    from simhash_server.fingerprint.pipeline import fingerprint

    made = fingerprint(text or "", version, sketch=True)
    return Document(doc_id, made.value, made.sketch, indexed_at_ms)


def normalized_record(seq: int, fp: int, doc_id: bytes, sketch: bytes, indexed_at_ms: int | None = None) -> bytes:
    seen = _UNDATED if indexed_at_ms is None else indexed_at_ms
    return _HEADER.pack(seq, fp, seen, len(doc_id), len(sketch)) + doc_id + sketch


def iter_normalized(path: Path) -> Iterator[tuple[int, int, bytes, bytes, int | None]]:
    """(seq, fingerprint, id, sketch, indexed_at ms or None) of a normalised file: for tests and for looking
    into a staging dir."""
    with open(path, "rb") as f:
        if f.read(len(NORMALIZED_MAGIC)) != NORMALIZED_MAGIC:
            raise ValueError(f"{path} is not a normalised hfile-load input")
        while header := f.read(_HEADER.size):
            seq, fp, seen, id_length, sketch_length = _HEADER.unpack(header)
            yield seq, fp, f.read(id_length), f.read(sketch_length), None if seen == _UNDATED else seen
