"""The index's values and rules, with no HBase: documents, hits, request checks, ranking and verification.

Every field check lives here once: the store and bulk load call them, and request.py runs a whole call's in
one pass for the gRPC service.  A failed check raises InvalidArgument naming the field.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from simhash_server.fingerprint.sketch import comparable, readable, similarity
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
    "Verified",
    "check_doc_id",
    "check_fingerprint",
    "check_max_distance",
    "check_min_similarity",
    "check_query",
    "check_verified_query",
    "keyed_documents",
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


class Document(NamedTuple):
    """What ``index_many`` stores; a plain ``(doc_id, fingerprint)`` pair is a document without a sketch."""

    doc_id: str
    fingerprint: int
    sketch: bytes = b""


class Probe(NamedTuple):
    """One lookup: documents within ``max_distance`` of ``fingerprint``, reading at most ``per_fingerprint``
    documents (the first by id) of each nearby fingerprint (None: all)."""

    fingerprint: int
    max_distance: int
    per_fingerprint: int | None = None

    @classmethod
    def verified(cls, fingerprint: int, max_distance: int, limit: int | None) -> Probe:
        return cls(fingerprint, max_distance, None if limit is None else limit * VERIFY_DOCUMENTS_PER_HIT)


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


def check_query(fp: int, max_distance: int) -> None:
    check_fingerprint(fp)
    check_max_distance(max_distance)


def check_verified_query(fp: int, sketch: bytes, min_similarity: float, max_distance: int) -> None:
    check_fingerprint(fp)
    check_max_distance(max_distance, verified=True)
    check_min_similarity(min_similarity)
    if not readable(sketch):
        raise InvalidArgument("sketch", "the query's sketch is not of this server's sketch format")


def keyed_documents(items: Iterable[Document | tuple[str, int]]) -> list[tuple[bytes, Document]]:
    """Checked documents with their row keys; the last entry wins for a repeated id."""
    final: dict[bytes, Document] = {}
    for item in items:
        doc = Document(*item)
        final[check_doc_id(doc.doc_id)] = doc
        check_fingerprint(doc.fingerprint)
    return list(final.items())


# -- answers ---------------------------------------------------------------------------------------------
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
    where only a sketch could vouch for it, it is left out.  Closest first, then most similar, then by id.
    """
    hits, below = [], 0
    for doc, candidate, distance, stored in near:
        if not comparable(sketch, stored):  # none stored, or one of another recipe's format
            if distance <= MAX_DISTANCE:
                hits.append(Hit(doc, candidate, distance))
            continue
        estimate = similarity(sketch, stored)
        if estimate >= min_similarity:
            hits.append(Hit(doc, candidate, distance, estimate))
        else:
            below += 1
    hits.sort(key=lambda h: (h.distance, -(h.similarity or 0.0), h.doc_id))
    return Verified(hits if limit is None else hits[:limit], below)
