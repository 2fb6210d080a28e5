"""What the client returns: small immutable dataclasses.  Fingerprints are ints; ``.hex`` gives 16 digits."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DedupResult",
    "FingerprintResult",
    "Hit",
    "IndexOutcome",
    "Stats",
    "from_hex",
    "parse_simhash",
    "to_hex",
]

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


# The text form of a fingerprint, defined here once: the server, bulk load and the CLI all use these two.
def to_hex(value: int) -> str:
    """16 lowercase hex digits, most significant first."""
    return f"{value:016x}"


def from_hex(text: str) -> int:
    """Exactly 16 hex digits (either case, nothing else) -> the fingerprint; ValueError names the value."""
    if len(text) != 16 or not _HEX_DIGITS.issuperset(text):
        raise ValueError(f"simhash {text[:40]!r} is not 16 hex digits")
    return int(text, 16)


def parse_simhash(value: int | str) -> int:
    """An unsigned 64-bit fingerprint from an int or 16 hex digits; ValueError names what is wrong."""
    if isinstance(value, str):
        return from_hex(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**64:
        raise ValueError(f"simhash must be an unsigned 64-bit integer, got {value!r}")
    return value


@dataclass(frozen=True)
class Hit:
    doc_id: str
    simhash: int
    distance: int
    # Set when the query was verified (a text's, by default): the sketches' estimated similarity, and whether
    # the stored sketch was checked (False: the document was indexed by fingerprint only, so it could not be).
    similarity: float | None = None
    verified: bool | None = None

    @property
    def hex(self) -> str:
        return to_hex(self.simhash)


@dataclass(frozen=True)
class FingerprintResult:
    simhash: int
    features: int
    fingerprint_version: str

    @property
    def hex(self) -> str:
        return to_hex(self.simhash)


@dataclass(frozen=True)
class IndexOutcome:
    doc_id: str
    ok: bool
    simhash: int | None
    error: str | None


@dataclass(frozen=True)
class DedupResult:
    stored: bool
    hits: tuple[Hit, ...]
    simhash: int
    below_similarity: int = 0  # candidates left out by min_similarity


@dataclass(frozen=True)
class QueryOutcome:
    """One item of ``query_batch``: its hits, or why the server refused the item."""

    ok: bool
    hits: tuple[Hit, ...] = ()
    simhash: int | None = None
    error: str | None = None
    violations: tuple[tuple[str, str], ...] = ()  # (field path, description) of each bad field


@dataclass(frozen=True)
class DedupOutcome:
    """One item of ``deduplicate_batch``: what ``deduplicate`` would have said, or why it was refused."""

    doc_id: str
    ok: bool
    result: DedupResult | None = None
    error: str | None = None
    violations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Stats:
    documents: int
    fingerprint_version: str
    layout: str
    tables: tuple[str, ...]
    max_distance: int
    drawer_rows_estimate: int = 0
    orphan_drawer_rows_estimate: int = 0  # drawer rows no document owns, until `simhash-index gc`
    orphan_sample: int = 0  # drawer rows the two estimates rest on
    top_fingerprints: tuple[tuple[int, int], ...] = ()  # (simhash, documents), most first, as of last_gc
    last_gc: float | None = None  # when the last gc run finished (Unix seconds); None: never
    retention: int | None = None  # seconds documents are kept after their indexed_at; None: for good
