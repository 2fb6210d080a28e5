"""The index's values and rules, with no HBase: documents, hits, request checks, ranking and verification.

Every field check lives here once: the store and bulk load call them, and request.py runs a whole call's in
one pass for the gRPC service.  A failed check raises InvalidArgument naming the field.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from simhash_server.fingerprint.sketch_format import format_of, readable
from simhash_server.fingerprint.versions import recipe_of
from simhash_server.index.errors import InvalidArgument

__all__ = [
    "MAX_DISTANCE",
    "MAX_DOC_ID_BYTES",
    "VERIFY_DOCUMENTS_PER_HIT",
    "VERIFY_MAX_DISTANCE",
    "Document",
    "Hit",
    "Near",
    "Probe",
    "Query",
    "Verified",
    "check_doc_id",
    "check_fingerprint",
    "check_indexed_at",
    "check_max_age",
    "check_max_distance",
    "check_min_similarity",
    "check_query",
    "check_verified_query",
    "keyed_documents",
    "merged",
    "part_probes",
    "ranked",
    "verified",
]

MAX_DISTANCE = 3  # the 5-segment layout answers exactly up to here
# With a similarity floor, candidates up to here that share a drawer are checked too (docs/accuracy.md): the
# scans return them anyway, and past 8 a random fingerprint sharing 26 bits is too rare to matter.
VERIFY_MAX_DISTANCE = 8
MAX_DOC_ID_BYTES = 512
# A verified query ranks the documents of one fingerprint by similarity, so it compares more of them than it
# returns: up to this many per hit asked for.  Past that, which of a fingerprint's documents above the floor
# come back is decided by id.  Either way a query's cost is bounded by its limit, not by how many documents
# share a fingerprint (a template page, an empty text).
VERIFY_DOCUMENTS_PER_HIT = 4


# A document may be dated this far ahead of the server's clock (another machine's clock); later is refused, as
# a write stamped in the future would push every later write of its id after it (writes.py).
MAX_CLOCK_SKEW_MS = 60_000


class Document(NamedTuple):
    """What ``index_many`` stores; a plain ``(doc_id, fingerprint)`` pair is a document without a sketch.

    ``indexed_at_ms``: when it was first seen, in milliseconds since the epoch (None: when it is written).
    It becomes the HBase timestamp of the document's cells (writes.py), which is what ``max_age`` and the
    index's retention (a TTL) look at."""

    doc_id: str
    fingerprint: int
    sketch: bytes = b""
    indexed_at_ms: int | None = None


class Probe(NamedTuple):
    """One lookup: documents within ``max_distance`` of ``fingerprint``, reading at most ``per_fingerprint``
    documents (the first by id) of each nearby fingerprint (None: all), seen within the last ``max_age_ms``
    milliseconds (None: any time)."""

    fingerprint: int
    max_distance: int
    per_fingerprint: int | None = None
    max_age_ms: int | None = None
    # Its candidates are checked against their sketches at a floor above 0: it may also read the index's part
    # rows (index/keys.py), whose documents can lie far from its fingerprint.  A floor of 0 asks for the
    # fingerprint's own answer, which they are not part of.
    verifying: bool = False

    @classmethod
    def verified(
        cls, fingerprint: int, max_distance: int, limit: int | None, max_age_ms: int | None = None, *, floor: float
    ) -> Probe:
        per_fingerprint = None if limit is None else limit * VERIFY_DOCUMENTS_PER_HIT
        return cls(fingerprint, max_distance, per_fingerprint, max_age_ms, verifying=floor > 0)


class Query(NamedTuple):
    """One query of a batch: as ``query`` asks it, or with ``min_similarity`` (and the text's ``sketch``) as
    ``query_verified`` does.  ``parts``: with ``min_similarity``, the fingerprints of parts of the text
    (fingerprint/parts.py), whose near documents are candidates too."""

    fingerprint: int
    max_distance: int
    limit: int | None = None
    max_age_ms: int | None = None
    min_similarity: float | None = None
    sketch: bytes = b""
    parts: tuple[int, ...] = ()


class Near(NamedTuple):
    """A stored document near a probe, with the sketch stored beside its id (empty without one)."""

    doc_id: str
    fingerprint: int
    distance: int
    sketch: bytes


@dataclass(frozen=True, slots=True)
class Hit:
    doc_id: str
    fingerprint: int
    distance: int
    similarity: float | None = None  # the sketch's estimate, when the query was verified and a sketch exists


@dataclass(frozen=True, slots=True)
class Verified:
    """A verified query's answer: hits reaching the floor (or unverifiable), and how many fell below it."""

    hits: list[Hit]
    below_floor: int


# -- checks ----------------------------------------------------------------------------------------------
def check_doc_id(doc_id: str, field: str = "doc_id") -> bytes:
    """The id's row key (its UTF-8 bytes)."""
    if not isinstance(doc_id, str):
        raise InvalidArgument(field, f"{field} must be a string, got {type(doc_id).__name__}")
    raw = doc_id.encode("utf-8")
    if not raw:
        raise InvalidArgument(field, f"{field} is empty")
    if len(raw) > MAX_DOC_ID_BYTES:
        raise InvalidArgument(field, f"{field} is {len(raw)} bytes, the limit is {MAX_DOC_ID_BYTES}")
    return raw


def check_fingerprint(fp: int, field: str = "simhash") -> int:
    if isinstance(fp, bool) or not isinstance(fp, int) or not 0 <= fp < 2**64:
        raise InvalidArgument(field, f"{field} must be an unsigned 64-bit integer, got {fp!r}")
    return fp


def check_max_distance(distance: int, verified: bool = False) -> int:
    """``max_distance`` within what the index answers: exactly up to MAX_DISTANCE, or up to
    VERIFY_MAX_DISTANCE when a similarity floor checks the candidates."""
    top = VERIFY_MAX_DISTANCE if verified else MAX_DISTANCE
    if isinstance(distance, int) and 0 <= distance <= top:
        return distance
    if verified:
        raise InvalidArgument("max_distance", f"max_distance must be 0..{top} with min_similarity, got {distance}")
    raise InvalidArgument(
        "max_distance",
        f"max_distance must be 0..{top}, got {distance}: the 5-segment drawer index answers exactly only up to "
        f"{top} (up to {VERIFY_MAX_DISTANCE} with min_similarity)",
    )


def check_min_similarity(floor: float) -> float:
    if not (isinstance(floor, int | float) and not math.isnan(floor) and 0.0 <= floor <= 1.0):
        raise InvalidArgument("min_similarity", f"min_similarity must be within 0..1, got {floor}")
    return float(floor)


def check_max_age(max_age_ms: int | None, field: str = "max_age") -> int | None:
    """A window of at least one millisecond (None: no window)."""
    if max_age_ms is None:
        return None
    if isinstance(max_age_ms, bool) or not isinstance(max_age_ms, int) or max_age_ms < 1:
        raise InvalidArgument(field, f"{field} must be a positive duration of at least 1 ms, got {max_age_ms!r} ms")
    return max_age_ms


def check_indexed_at(
    indexed_at_ms: int | None, now_ms: int, retention_seconds: int | None = None, field: str = "indexed_at"
) -> int | None:
    """A time a document was seen: not ahead of ``now_ms`` by more than MAX_CLOCK_SKEW_MS, and not so old that
    the index's retention would expire it at once (it would be acknowledged, then never found)."""
    if indexed_at_ms is None:
        return None
    if isinstance(indexed_at_ms, bool) or not isinstance(indexed_at_ms, int) or indexed_at_ms < 0:
        raise InvalidArgument(field, f"{field} must be a time after 1970-01-01, got {indexed_at_ms!r} ms")
    if indexed_at_ms > now_ms + MAX_CLOCK_SKEW_MS:
        ahead = (indexed_at_ms - now_ms) / 1000
        raise InvalidArgument(
            field, f"{field} is {ahead:.0f} s ahead of the server's clock (at most {MAX_CLOCK_SKEW_MS // 1000} s)"
        )
    if retention_seconds is not None and indexed_at_ms <= now_ms - retention_seconds * 1000:
        raise InvalidArgument(
            field,
            f"{field} is older than the index's retention of {retention_seconds} s: the document would expire at once",
        )
    return indexed_at_ms


def check_sketch(sketch: bytes, version: str, field: str = "sketch") -> bytes:
    """A sketch made elsewhere (``simhash-index fingerprint --sketch``, a user's own job): of the format the
    index's recipe stores, whole.  A sketch of another format could never be compared: its document would be
    stored, then never verified."""
    want = recipe_of(version).sketch
    if not sketch:
        raise InvalidArgument(field, f"{field} is empty")
    found = format_of(sketch)
    if found is None or found.code != want.code:
        code = sketch[0]
        raise InvalidArgument(
            field,
            f"{field} is {len(sketch)} bytes of format {code}; the index's recipe stores format {want.code} "
            f"({want.size} bytes{', then a count byte and 8 bytes a part' if want.parts else ''}"
            f"{', then its repeated words' if want.renames else ''})",
        )
    return sketch


def check_query(fp: int, max_distance: int) -> None:
    check_fingerprint(fp)
    check_max_distance(max_distance)


def check_verified_query(
    fp: int, sketch: bytes, min_similarity: float, max_distance: int, parts: Sequence[int] = ()
) -> None:
    check_fingerprint(fp)
    for part in parts:
        check_fingerprint(part, "parts")
    check_max_distance(max_distance, verified=True)
    check_min_similarity(min_similarity)
    if not readable(sketch):
        raise InvalidArgument("sketch", "the query's sketch is not of this server's sketch format")


def keyed_documents(
    items: Iterable[Document | tuple[str, int]], retention_seconds: int | None = None
) -> list[tuple[bytes, Document]]:
    """Checked documents with their row keys; the last entry wins for a repeated id."""
    final: dict[bytes, Document] = {}
    now_ms = int(time.time() * 1000)
    for item in items:
        doc = Document(*item)
        final[check_doc_id(doc.doc_id)] = doc
        check_fingerprint(doc.fingerprint)
        check_indexed_at(doc.indexed_at_ms, now_ms, retention_seconds)
    return list(final.items())


# -- answers ---------------------------------------------------------------------------------------------
def part_probes(probe: Probe, parts: Sequence[int]) -> list[Probe]:
    """The probe of a text's whole fingerprint, then one like it for each of its parts' fingerprints."""
    return [probe, *(probe._replace(fingerprint=part) for part in parts)]


def merged(fp: int, found: Iterable[Iterable[Near]]) -> list[Near]:
    """What the probes of one text (``part_probes``) found, each document once, at its distance from the
    whole text's fingerprint ``fp``: a hit's distance is always from the fingerprint the answer reports."""
    out: dict[tuple[str, int], Near] = {}
    for near in found:
        for n in near:
            if (n.doc_id, n.fingerprint) not in out:
                out[n.doc_id, n.fingerprint] = n._replace(distance=(n.fingerprint ^ fp).bit_count())
    return list(out.values())


def ranked(near: Iterable[Near], limit: int | None) -> list[Hit]:
    """Hits closest first, then by id."""
    hits = [Hit(doc, candidate, distance) for doc, candidate, distance, _ in near]
    hits.sort(key=lambda h: (h.distance, h.doc_id))
    return hits if limit is None else hits[:limit]


def verified(near: Iterable[Near], sketch: bytes, min_similarity: float, limit: int | None) -> Verified:
    """Candidates checked against their stored sketches.

    A candidate is a hit when its estimated similarity reaches ``min_similarity``.  One without a sketch of
    the query's format (indexed by fingerprint only) cannot be checked: within MAX_DISTANCE it is a hit with
    ``similarity`` None, so nothing the unverified query would answer disappears unexplained; beyond it,
    where only a sketch could vouch for it, it is left out.

    Most similar first, then closest, then by id; the unchecked hits after the checked ones, closest first.
    Similarity ranks before distance because a copy found through a part of the text (parts.py) can lie far
    from the text's fingerprint: ranked by distance, a small ``limit`` would cut it for nearer pages the
    sketch rates lower.
    """
    from simhash_server.fingerprint.sketch import similarity_of  # numpy's: only where a query is verified

    form = format_of(sketch)
    hits, below = [], 0
    for doc, candidate, distance, stored in near:
        if form is None or format_of(stored) != form:  # none stored, or one of another recipe's format
            if distance <= MAX_DISTANCE:
                hits.append(Hit(doc, candidate, distance))
            continue
        estimate = similarity_of(form, sketch, stored)
        if estimate >= min_similarity:
            hits.append(Hit(doc, candidate, distance, estimate))
        else:
            below += 1
    hits.sort(key=lambda h: (h.similarity is None, -(h.similarity or 0.0), h.distance, h.doc_id))
    return Verified(hits if limit is None else hits[:limit], below)
