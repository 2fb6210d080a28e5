"""Bulk-load input: files (plain, gzip or zstd) or stdin -> numbered records, or rejects with a reason.

Formats (chosen by ``--format``, or by the file name: .tsv, .csv, .jsonl/.ndjson, .bin, before .gz/.zst):

- ``tsv``: ``doc_id<TAB>simhash[<TAB>indexed_at]``; ``csv``: ``doc_id,simhash[,indexed_at]`` (RFC 4180
  quoting, one record per line).
- ``jsonl``: one object per line with ``doc_id`` (or ``id``, as ``simhash-index fingerprint`` writes it) and
  exactly one of ``simhash`` and ``text``; an optional ``fingerprint_version`` must be this build's, an
  optional ``indexed_at`` says when the document was first seen, and beside a ``simhash`` an optional
  ``sketch`` (base64, as ``simhash-index fingerprint --sketch`` writes it) lets the document be verified.
- ``bin``: the 8-byte magic ``SHBULK1\\n``, then records of a big-endian unsigned 64-bit fingerprint, a
  big-endian 16-bit id length and the id in UTF-8; or ``SHBULK2\\n``, whose records also carry a big-endian
  16-bit sketch length after the id's, and the sketch after the id.  A record's "line" is its ordinal number.

A sketch must be whole and of the format the index's recipe stores (index.model.check_sketch).

``indexed_at`` is an RFC 3339 time with its offset (``2026-11-24T08:00:00Z``) or Unix seconds; without it a
document is dated when it is written.  A time ahead of the clock, or older than the index's retention, is
rejected (index.model.check_indexed_at).

A simhash field is 16 hex digits (optionally ``0x``-prefixed) or a decimal number.  Sixteen decimal digits
could be either, so with ``fingerprint_format="auto"`` each file is read in the form of its first
unambiguous field (one with a hex letter, or a decimal of another length); an ambiguous field before that
one is rejected, never guessed, and so is a field of the other form after it.
"""

from __future__ import annotations

import base64
import binascii
import csv
import gzip
import io
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from simhash_server.bulk.binary_format import BINARY_MAGIC, BINARY_SKETCH_MAGIC, binary_records, encode_binary
from simhash_server.bulk.records import Record, Reject
from simhash_server.fingerprint import FINGERPRINT_VERSION
from simhash_server.fingerprint.hexform import from_hex
from simhash_server.index.model import check_doc_id, check_indexed_at, check_sketch

__all__ = [
    "BINARY_MAGIC",
    "BINARY_SKETCH_MAGIC",
    "COMPRESSIONS",
    "FINGERPRINT_FORMATS",
    "FORMATS",
    "InputSource",
    "Record",
    "Reject",
    "encode_binary",
    "parse_simhash",
    "parse_time",
    "simhash_form",
]

FORMATS = ("tsv", "csv", "jsonl", "bin")
COMPRESSIONS = ("none", "gzip", "zstd")
FINGERPRINT_FORMATS = ("auto", "hex", "decimal")
_SUFFIX_FORMATS = {".tsv": "tsv", ".txt": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".bin": "bin"}
_SUFFIX_COMPRESSIONS = {".gz": "gzip", ".zst": "zstd", ".zstd": "zstd"}


def simhash_form(field: str) -> str | None:
    """ "hex" or "decimal" when the field can only be that, None when it could be both (or neither)."""
    value = field.strip()
    if value[:2].lower() == "0x" or (len(value) == 16 and not value.isdigit()):
        return "hex"
    if value.isascii() and value.isdigit() and len(value) != 16:
        return "decimal"
    return None


def parse_simhash(field: str, fingerprint_format: str) -> int:
    """A simhash field's value in the given form ("hex" or "decimal"); ValueError says why it is not one."""
    value = field.strip()
    if not value:
        raise ValueError("simhash is empty")
    if fingerprint_format == "hex":
        return from_hex(value[2:] if value[:2].lower() == "0x" else value)
    if not value.isascii() or not value.isdigit():
        raise ValueError(f"simhash {value!r} is not a decimal number")
    number = int(value)
    if number >= 2**64:
        raise ValueError(f"simhash {value} does not fit in 64 bits")
    return number


class _CountingReader(io.RawIOBase):
    """Counts the bytes read from the file itself (compressed), for progress against its size."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.bytes_read = raw, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)  # type: ignore[attr-defined]
        self.bytes_read += n or 0
        return n or 0


@dataclass
class InputSource:
    """One input: a path, or ``-`` for stdin."""

    path: str
    format: str
    compression: str
    fingerprint_format: str = "auto"
    decided_format: str | None = None  # auto: the form of this file's first unambiguous simhash field
    decided_at: int | None = None  # ... and its line (this run's)
    fingerprint_version: str = FINGERPRINT_VERSION  # the index's: a JSON line naming another is rejected
    retention_seconds: int | None = None  # the index's: a document dated before it would expire at once
    binary_sketches: bool = False  # bin: the file's magic was SHBULK2 (its records carry sketches)

    @classmethod
    def detect(cls, path: str, fmt: str | None, compression: str | None, fingerprint_format: str) -> InputSource:
        name = Path(path.lower())
        suffixes = name.suffixes
        found_compression = _SUFFIX_COMPRESSIONS.get(suffixes[-1]) if suffixes else None
        if found_compression and len(suffixes) > 1:
            suffixes = suffixes[:-1]
        found_format = _SUFFIX_FORMATS.get(suffixes[-1]) if suffixes else None
        fmt = fmt or found_format
        if fmt is None:
            raise ValueError(f"{path}: cannot tell the format from the name; pass --format ({', '.join(FORMATS)})")
        return cls(path, fmt, compression or found_compression or "none", fingerprint_format)

    @property
    def size(self) -> int | None:
        return None if self.path == "-" else os.path.getsize(self.path)

    def identity(self) -> dict[str, Any]:
        """What a checkpoint remembers of this input, to refuse resuming onto another file."""
        if self.path == "-":
            return {"path": "-"}
        st = os.stat(self.path)
        return {"path": os.path.abspath(self.path), "size": st.st_size, "mtime_ns": st.st_mtime_ns}

    def records(self, skip_bytes: int = 0, first_line: int = 1) -> Iterator[tuple[Record | Reject, int, int]]:
        """(record or reject, decompressed offset after it, file bytes read so far), resuming at an offset.

        ``skip_bytes`` is a decompressed offset from an earlier run's checkpoint: plain files seek to it,
        compressed ones and stdin read past it.
        """
        raw: IO[bytes] = sys.stdin.buffer if self.path == "-" else open(self.path, "rb")  # noqa: SIM115
        try:
            counting = _CountingReader(raw)
            stream: IO[bytes]
            if self.compression == "gzip":
                stream = gzip.GzipFile(fileobj=io.BufferedReader(counting, 1 << 20))
            elif self.compression == "zstd":
                import zstandard

                reader = zstandard.ZstdDecompressor().stream_reader(io.BufferedReader(counting, 1 << 20))
                stream = io.BufferedReader(reader, 1 << 20)  # type: ignore[arg-type]  # for readline
            else:
                stream = io.BufferedReader(counting, 1 << 20)
            offset = 0
            head = b""  # a bin file's magic, read on the way past a checkpoint's offset
            if skip_bytes and self.compression == "none" and self.path != "-":
                head = raw.read(len(BINARY_MAGIC))
                raw.seek(skip_bytes)
                counting.bytes_read = offset = skip_bytes
            while offset < skip_bytes:
                chunk = stream.read(min(1 << 20, skip_bytes - offset))
                if not chunk:
                    raise ValueError(f"{self.path}: shorter than the checkpoint's offset {skip_bytes}")
                head = head or chunk[: len(BINARY_MAGIC)]
                offset += len(chunk)
            if skip_bytes:
                self.binary_sketches = head == BINARY_SKETCH_MAGIC
            parse = self._binary_records if self.format == "bin" else self._text_records
            for item, consumed in parse(stream, offset, first_line):
                offset += consumed
                yield item, offset, counting.bytes_read
        finally:
            if raw is not sys.stdin.buffer:
                raw.close()

    def _text_records(self, stream: IO[bytes], offset: int, line: int) -> Iterator[tuple[Record | Reject, int]]:
        parse = {"tsv": self._parse_tsv, "csv": self._parse_csv, "jsonl": self._parse_json}[self.format]
        for raw in stream:
            text = raw.rstrip(b"\r\n")
            try:
                decoded = text.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield Reject(line, f"not UTF-8 (byte {exc.start})", text.decode("utf-8", "replace")), len(raw)
            else:
                try:
                    yield parse(line, decoded), len(raw)
                except ValueError as exc:
                    yield Reject(line, str(exc), decoded), len(raw)
            line += 1

    def _parse_json(self, line: int, text: str) -> Record:
        record = _parse_json(line, text, self.fingerprint_version)
        return self._checked_time(record)

    def _binary_records(self, stream: IO[bytes], offset: int, number: int) -> Iterator[tuple[Record | Reject, int]]:
        """The bin format; the magic (read at offset 0) says whether records carry sketches."""
        if offset == 0:
            magic = stream.read(len(BINARY_MAGIC))
            if magic not in (BINARY_MAGIC, BINARY_SKETCH_MAGIC):
                shown = f"{BINARY_MAGIC!r} or {BINARY_SKETCH_MAGIC!r}"
                yield Reject(0, f"not the bin format: the file starts {magic!r}, not {shown}", ""), len(magic)
                return
            self.binary_sketches = magic == BINARY_SKETCH_MAGIC
            yield from binary_records(stream, number, len(magic), self.binary_sketches, self.fingerprint_version)
        else:  # resumed past the magic: a checkpoint remembers which it was
            yield from binary_records(stream, number, 0, self.binary_sketches, self.fingerprint_version)

    def _checked_time(self, record: Record) -> Record:
        check_indexed_at(record.indexed_at_ms, int(time.time() * 1000), self.retention_seconds)
        return record

    def _parse_tsv(self, line: int, text: str) -> Record:
        return self._columns(line, text.split("\t"), "tab")

    def _parse_csv(self, line: int, text: str) -> Record:
        try:
            fields = next(csv.reader([text], strict=True))
        except (csv.Error, StopIteration) as exc:
            raise ValueError(f"not CSV: {exc}") from None
        return self._columns(line, fields, "comma")

    def _columns(self, line: int, fields: list[str], separator: str) -> Record:
        if len(fields) not in (2, 3):
            raise ValueError(
                f"expected 2 or 3 {separator}-separated columns (doc_id, simhash[, indexed_at]), got {len(fields)}"
            )
        doc_id, field = fields[:2]
        check_doc_id(doc_id)
        seen = parse_time(fields[2]) if len(fields) == 3 else None
        return self._checked_time(Record(line, doc_id, self._simhash(line, field), None, seen))

    def _simhash(self, line: int, field: str) -> int:
        form = self.fingerprint_format
        if form == "auto":
            seen = simhash_form(field)
            if self.decided_format is None and seen is not None:
                self.decided_format = seen
                self.decided_at = line
            form = self.decided_format or ""
            if not form:
                raise ValueError(
                    f"simhash {field.strip()!r} is ambiguous: 16 decimal digits could be hex or decimal, and no "
                    "earlier line of this file tells; pass --fingerprint-format hex or decimal"
                )
            if seen is not None and seen != form:
                raise ValueError(
                    f"simhash {field.strip()!r} is {seen}, but this file's simhash fields are {form} "
                    f"(from line {self.decided_at or 'before the checkpoint'}); pass --fingerprint-format"
                )
        return parse_simhash(field, form)


def _parse_json(line: int, text: str, fingerprint_version: str) -> Record:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    keys = [k for k in ("doc_id", "id") if k in obj]
    if len(keys) != 1:
        raise ValueError('give exactly one of "doc_id" and "id"')
    doc_id = obj[keys[0]]
    if isinstance(doc_id, int) and not isinstance(doc_id, bool):
        doc_id = str(doc_id)
    if not isinstance(doc_id, str):
        raise ValueError(f'"{keys[0]}" must be a string, got {type(doc_id).__name__}')
    check_doc_id(doc_id)
    version = obj.get("fingerprint_version")
    if version is not None and version != fingerprint_version:
        raise ValueError(f"fingerprint_version {version!r} differs from the index's {fingerprint_version!r}")
    has_simhash, has_text = "simhash" in obj, "text" in obj
    if has_simhash == has_text:
        raise ValueError('give exactly one of "simhash" and "text"')
    seen = obj.get("indexed_at")
    if seen is not None and (isinstance(seen, bool) or not isinstance(seen, str | int | float)):
        raise ValueError(f'"indexed_at" must be an RFC 3339 string or Unix seconds, got {type(seen).__name__}')
    seen_ms = None if seen is None else parse_time(str(seen))
    if has_text:
        if "sketch" in obj:
            raise ValueError('give "sketch" only beside "simhash": a text is sketched with the index\'s recipe')
        if not isinstance(obj["text"], str):
            raise ValueError(f'"text" must be a string, got {type(obj["text"]).__name__}')
        return Record(line, doc_id, None, obj["text"], seen_ms)
    sketch = _json_sketch(obj["sketch"], fingerprint_version) if "sketch" in obj else b""
    value = obj["simhash"]
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 2**64:
            raise ValueError(f"simhash {value} is not an unsigned 64-bit integer")
        return Record(line, doc_id, value, None, seen_ms, sketch)
    if not isinstance(value, str):
        raise ValueError(f'"simhash" must be a string or an integer, got {type(value).__name__}')
    form = simhash_form(value) or "hex"  # in JSON, an integer is a number: a string is hex unless it cannot be
    return Record(line, doc_id, parse_simhash(value, form), None, seen_ms, sketch)


def _json_sketch(value: Any, fingerprint_version: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f'"sketch" must be a base64 string, got {type(value).__name__}')
    try:
        raw = base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError('"sketch" is not base64') from None
    return check_sketch(raw, fingerprint_version)


def parse_time(field: str) -> int:
    """An ``indexed_at`` field (RFC 3339 with an offset, or Unix seconds) in milliseconds since the epoch."""
    field = field.strip()
    try:
        return round(float(field) * 1000)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(field[:-1] + "+00:00" if field[-1:] in "Zz" else field)  # 3.10: no Z
    except ValueError:
        raise ValueError(f"indexed_at {field!r} is not RFC 3339 (2026-11-24T08:00:00Z) or Unix seconds") from None
    if when.tzinfo is None:
        raise ValueError(f"indexed_at {field!r} has no UTC offset: add Z or +08:00")
    return round(when.timestamp() * 1000)
