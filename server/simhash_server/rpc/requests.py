"""A call's message checked, and hits made messages: pure helpers apart from the servicer (service.py).

``Requests.checked`` turns a request's fields into a checked ``Request`` (index/request.py: every bad field
named at once, as INVALID_ARGUMENT); ``document_of`` fingerprints its text with the served index's recipe;
the batch helpers check each item alone, so that a bad item is refused by the path of its field
(``documents[3].text``) and the others go on.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol

from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_schema import VersionMismatch
from simhash_server.fingerprint import Recipe, fingerprint
from simhash_server.index.errors import DeadlineExceeded, InvalidArgument
from simhash_server.index.model import Document, Hit, check_doc_id
from simhash_server.index.request import Request, check_request
from simhash_server.rpc.limits import Limits
from simhash_server.rpc.status import item_status

__all__ = ["REFUSED_ALONE", "Made", "Requests", "check_deadline", "hit_messages", "milliseconds"]

REFUSED_ALONE = (InvalidArgument, VersionMismatch)  # what a batch item is refused for, in its own outcome
_TIMES = ("indexed_at", "max_age")


class Made(NamedTuple):
    """What a request's text (or fingerprint) gives: its fingerprint, features, sketch and parts' fingerprints
    (fingerprint/parts.py; empty unless asked for, and for a fingerprint)."""

    fingerprint: int
    features: int
    sketch: bytes
    parts: tuple[int, ...] = ()


class ServedIndex(Protocol):
    """What the checks read of the index served: its recipe and retention, as it has them now."""

    recipe: Recipe
    retention_seconds: int | None


def milliseconds(value: Any) -> int:
    """A Timestamp or Duration in milliseconds; ValueError if it breaks its type's rules (protobuf checks a
    Timestamp's, not a Duration's)."""
    if value.DESCRIPTOR.full_name == "google.protobuf.Duration":
        seconds, nanos = value.seconds, value.nanos
        if not -999_999_999 <= nanos <= 999_999_999 or abs(seconds) > 315_576_000_000 or seconds * nanos < 0:
            raise ValueError(f"Duration is not valid: {seconds} s and {nanos} ns (same sign, |nanos| < 1e9)")
    return int(value.ToMilliseconds())


def check_deadline(deadline: float | None) -> None:
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlineExceeded("the deadline passed")


class Requests:
    """The checks of one served index's calls: its limits, its recipe and its retention."""

    def __init__(self, limits: Limits, index: ServedIndex) -> None:
        self.limits = limits
        self.index = index

    @property
    def version(self) -> str:
        """The fingerprint version of the index served (what every text is fingerprinted with)."""
        return self.index.recipe.version

    def checked(
        self, request: Any, *, needs_id: bool = False, default_floor: float | None = None, prefix: str = ""
    ) -> Request:
        """The call's fields checked in one pass (index/request.py): every bad field is named at once."""
        fields = {field.name: value for field, value in request.ListFields()}
        unreadable = []
        for name in _TIMES:  # Timestamp and Duration, as index/ takes them: milliseconds
            if name in fields:
                try:
                    fields[name] = milliseconds(fields[name])
                except ValueError as exc:  # nanos out of range, a time past year 9999, mixed signs
                    del fields[name]
                    unreadable.append(InvalidArgument(prefix + name, f"{prefix}{name} is not valid: {exc}"))
        try:
            checked = check_request(
                fields,
                self.limits,
                needs_id=needs_id,
                default_floor=default_floor,
                prefix=prefix,
                retention_seconds=self.index.retention_seconds,
            )
        except InvalidArgument as exc:
            raise InvalidArgument.together([exc, *unreadable]) from None
        if unreadable:
            raise InvalidArgument.together(unreadable)
        return checked

    def text(self, text: str, field: str = "text") -> str:
        size = len(text.encode("utf-8"))
        if size > self.limits.max_text_bytes:
            raise InvalidArgument(
                field, f"{field} is {size} bytes, over the limit of {self.limits.max_text_bytes} (max_text_bytes)"
            )
        return text

    @staticmethod
    def doc_id(doc_id: str, field: str = "doc_id") -> str:
        try:
            check_doc_id(doc_id)
        except InvalidArgument as exc:
            raise exc.renamed(field) from None
        return doc_id

    def document_of(self, request: Request, prefix: str = "", sketch: bool = True, parts: bool = False) -> Made:
        """The fingerprint, features, sketch and parts of a checked request's text, or its fingerprint.

        The sketch is empty for a fingerprint (it cannot be made without the text) and when not asked for;
        the parts (what a verified text query also looks up) are empty unless asked for."""
        if request.text is None:
            version = request.fingerprint_version
            if version and version != self.version:
                raise VersionMismatch(
                    f"{prefix}fingerprint_version {version!r} differs from the index's {self.version!r}; "
                    "fingerprints of different recipes do not compare"
                )
            assert request.fingerprint is not None  # check_request gives exactly one of the two
            return Made(request.fingerprint, 0, b"")
        fp = fingerprint(request.text, self.version, sketch=sketch, parts=parts)
        return Made(fp.value, fp.features, fp.sketch, fp.parts if parts else ())

    def check_batch_size(self, items: Sequence[Any], field: str) -> None:
        if len(items) > self.limits.max_batch:
            raise InvalidArgument(
                field, f"{field} has {len(items)} items, over the limit of {self.limits.max_batch} (max_batch)"
            )

    def checked_items(
        self, items: Sequence[Any], field: str, deadline: float | None, **checks: Any
    ) -> list[tuple[Request, Made] | InvalidArgument | VersionMismatch]:
        """Each batch item checked and fingerprinted (a sketch and parts only where a floor needs them), or why
        it is refused: by the path of its field (``queries[3].text``)."""
        out: list[tuple[Request, Made] | InvalidArgument | VersionMismatch] = []
        for n, item in enumerate(items):
            prefix = f"{field}[{n}]."
            try:
                checked = self.checked(item, prefix=prefix, **checks)
                made = self.document_of(checked, prefix, sketch=checked.verified, parts=checked.looks_up_parts)
                out.append((checked, made))
            except REFUSED_ALONE as exc:
                out.append(exc)
            check_deadline(deadline)
        return out

    def checked_documents(
        self, request: pb.IndexBatchRequest, deadline: float | None
    ) -> tuple[list[pb.IndexOutcome], list[Document]]:
        """Each item's outcome, and the documents to store: a bad item is rejected alone, naming its field."""
        outcomes, good = [], []
        for n, item in enumerate(request.documents):
            try:
                prefix = f"documents[{n}]."
                checked = self.checked(item, needs_id=True, prefix=prefix)
                fp, _, sketch, _ = self.document_of(checked, prefix)
            except InvalidArgument as exc:
                status = item_status(exc)
                outcomes.append(pb.IndexOutcome(doc_id=item.doc_id, code=status.code, error=str(exc), status=status))
                continue
            outcomes.append(pb.IndexOutcome(doc_id=item.doc_id, code=0, simhash=fp, status=item_status()))
            good.append(Document(item.doc_id, fp, sketch, checked.indexed_at_ms))
            check_deadline(deadline)
        return outcomes, good


def hit_messages(hits: list[Hit], verified: bool) -> list[pb.Hit]:
    out = []
    for h in hits:
        hit = pb.Hit(doc_id=h.doc_id, simhash=h.fingerprint, distance=h.distance)
        if h.similarity is not None:
            hit.similarity = h.similarity
            hit.verification = pb.VERIFICATION_VERIFIED
        elif verified:
            hit.verification = pb.VERIFICATION_UNVERIFIED
        out.append(hit)
    return out
