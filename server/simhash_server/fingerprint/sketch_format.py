"""What a stored sketch is, without computing one: its formats, its header and the checks a reader of stored
bytes makes (sketch.py makes and compares sketches; this module needs neither numpy nor the tokenizer, so a
command that only names a recipe or checks a loaded sketch starts without them)."""

from __future__ import annotations

from dataclasses import dataclass

from simhash_server.fingerprint.renames import length as renames_length

__all__ = [
    "FORMATS",
    "SKETCH_BINS",
    "SKETCH_BYTES",
    "SKETCH_FORMAT",
    "SketchError",
    "SketchFormat",
    "comparable",
    "counted_shingles",
    "distinct_shingles",
    "format_of",
    "header_of",
    "parts_end",
    "parts_trailer",
    "readable",
    "stored_parts",
]


@dataclass(frozen=True)
class SketchFormat:
    code: int  # the stored first byte
    bins: int
    bits: int
    counted: bool = False  # the distinct shingles' count follows the code byte (4 bytes, big-endian)
    # The fingerprints of the text's parts follow the bins: a count byte, then 8 bytes each (big-endian).
    parts: bool = False
    # After the parts, the text's repeated words with their contexts (renames.py).
    renames: bool = False

    @property
    def header(self) -> int:
        return 5 if self.counted else 1

    @property
    def size(self) -> int:
        """The sketch's own bytes: the header and the bins (a format with parts stores them after these)."""
        return self.header + self.bins * self.bits // 8


FORMATS: dict[int, SketchFormat] = {
    1: SketchFormat(1, 256, 8),
    2: SketchFormat(2, 2048, 2),
    3: SketchFormat(3, 2048, 2, counted=True),
    4: SketchFormat(4, 2048, 2, counted=True, parts=True),
    5: SketchFormat(5, 2048, 2, counted=True, parts=True, renames=True),
}
MAX_PARTS = 255  # what the count byte can say
SKETCH_FORMAT = 1  # format 1's constants, as the evaluation and older callers name them
SKETCH_BINS = FORMATS[1].bins
SKETCH_BYTES = FORMATS[1].size


class SketchError(ValueError):
    """A stored sketch is not of a form this code reads."""


def header_of(form: SketchFormat, distinct_shingles: int) -> bytes:
    """The bytes before the bins: the format code, then (counted formats) the distinct shingles."""
    if not form.counted:
        return bytes([form.code])
    return bytes([form.code]) + min(distinct_shingles, 0xFFFFFFFF).to_bytes(4, "big")


def format_of(value: bytes) -> SketchFormat | None:
    """The format of a stored sketch, or None when it is of no format this code reads."""
    form = FORMATS.get(value[0]) if value else None
    if form is None:
        return None
    if not form.parts:
        return form if len(value) == form.size else None
    end = parts_end(value, form)
    if not form.renames:
        return form if end == len(value) else None
    return form if end < len(value) and end + (renames_length(value, end) or -1) == len(value) else None


def parts_end(value: bytes, form: SketchFormat) -> int:
    """Where a sketch of a format with parts ends its parts (its length, unless its renames follow)."""
    return form.size + 1 + 8 * value[form.size] if len(value) > form.size else len(value) + 1


def parts_trailer(parts: tuple[int, ...]) -> bytes:
    """What follows the bins of a format with parts: their count, then each fingerprint (8 bytes, big-endian)."""
    if len(parts) > MAX_PARTS:
        raise ValueError(f"parts: at most {MAX_PARTS} fingerprints follow a sketch, got {len(parts)}")
    return bytes([len(parts)]) + b"".join(p.to_bytes(8, "big") for p in parts)


def stored_parts(value: bytes) -> tuple[int, ...]:
    """The part fingerprints a stored sketch carries (formats with parts), in the recipe's order; () for
    another format or an unreadable sketch."""
    form = format_of(value)
    if form is None or not form.parts:
        return ()
    start = form.size + 1
    return tuple(int.from_bytes(value[i : i + 8], "big") for i in range(start, parts_end(value, form), 8))


def distinct_shingles(value: bytes) -> int | None:
    """The distinct shingles a counted sketch was made of; None for a format that does not count them."""
    form = format_of(value)
    return counted_shingles(value) if form is not None and form.counted else None


def counted_shingles(value: bytes) -> int:
    """``distinct_shingles`` of a sketch the caller knows to be of a counted format (its bytes after the code)."""
    return int.from_bytes(value[1:5], "big")


def readable(value: bytes) -> bool:
    """Whether a stored sketch is of a format this code compares."""
    return format_of(value) is not None


def comparable(a: bytes, b: bytes) -> bool:
    """Whether two sketches can be compared (both readable, of one format)."""
    form = format_of(a)
    return form is not None and format_of(b) == form
