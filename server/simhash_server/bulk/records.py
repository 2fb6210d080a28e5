"""What reading bulk input yields: a numbered record, or a reject with its reason."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Record", "Reject"]


@dataclass(frozen=True, slots=True)
class Record:
    line: int
    doc_id: str
    simhash: int | None  # exactly one of simhash and text
    text: str | None
    indexed_at_ms: int | None = None  # when first seen (None: when written)
    sketch: bytes = b""  # made elsewhere, beside a simhash (a text brings its own)


@dataclass(frozen=True, slots=True)
class Reject:
    line: int
    reason: str
    raw: str
