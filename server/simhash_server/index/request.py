"""A call's fields checked in one pass: a validated Request back, or every field violation at once.

The gRPC service hands over the fields a call carries (by their proto names) and gets back a value it can
act on; a caller with three wrong fields hears of all three in one INVALID_ARGUMENT.  No gRPC here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from simhash_server.index.errors import InvalidArgument
from simhash_server.index.model import (
    MAX_DISTANCE,
    VERIFY_MAX_DISTANCE,
    check_doc_id,
    check_indexed_at,
    check_max_age,
    check_max_distance,
    check_min_similarity,
)

__all__ = ["Bounds", "Request", "check_request"]

T = TypeVar("T")


class Bounds(Protocol):
    """The server's limits a request is held to (rpc/limits.py's Limits has them)."""

    max_text_bytes: int
    default_limit: int
    max_limit: int


@dataclass(frozen=True, slots=True)
class Request:
    """A checked call: exactly one of ``text`` and ``fingerprint``; the reach and the floor resolved."""

    doc_id: str | None
    text: str | None
    fingerprint: int | None
    fingerprint_version: str  # what the caller says ``fingerprint`` was made with ("" when it does not say)
    max_distance: int
    limit: int
    min_similarity: float | None  # None: unverified
    indexed_at_ms: int | None = None  # when the document was seen (None: when stored)
    max_age_ms: int | None = None  # only documents seen within this long before now (None: any)

    @property
    def verified(self) -> bool:
        return self.min_similarity is not None

    @property
    def looks_up_parts(self) -> bool:
        """Whether the text's parts add candidates (fingerprint/parts.py): only where a floor above 0 checks
        them; a floor of 0 asks for the fingerprint's own answer."""
        return self.text is not None and bool(self.min_similarity)


def check_request(
    fields: Mapping[str, Any],
    bounds: Bounds,
    *,
    needs_id: bool = False,
    default_floor: float | None = None,
    prefix: str = "",
    retention_seconds: int | None = None,
) -> Request:
    """Check ``fields`` (the fields a call sets, by proto name: ``doc_id``, ``text``, ``simhash``, ...;
    ``indexed_at`` and ``max_age`` in milliseconds).

    ``default_floor`` verifies a text that names no ``min_similarity`` (the recipe's floor for Deduplicate,
    and for Query on v4); a ``min_similarity`` of 0 reaches distance 3 unless ``max_distance`` says more;
    ``prefix`` is the request's path in a batch (``documents[3].``), put before every field it names;
    ``retention_seconds``: the index's, which ``indexed_at`` must be within.
    """
    problems: list[InvalidArgument] = []

    def checked(check: Callable[..., T], *args: Any) -> T | None:
        try:
            return check(*args)
        except InvalidArgument as exc:
            problems.append(exc.renamed(prefix + exc.field) if prefix else exc)
            return None

    doc_id = fields.get("doc_id", "")
    if needs_id:
        checked(check_doc_id, doc_id)
    text, fp = fields.get("text"), fields.get("simhash")
    if text is not None and fp is not None:
        problems.append(InvalidArgument(prefix + "text", f"give either {prefix}text or {prefix}simhash, not both"))
    elif text is None and fp is None:
        problems.append(InvalidArgument(prefix + "text", f"{prefix}text or {prefix}simhash is required"))
    elif text is not None and (size := len(text.encode("utf-8"))) > bounds.max_text_bytes:
        problems.append(
            InvalidArgument(
                prefix + "text",
                f"{prefix}text is {size} bytes, over the limit of {bounds.max_text_bytes} (max_text_bytes)",
            )
        )
    floor = checked(check_min_similarity, fields["min_similarity"]) if "min_similarity" in fields else None
    if "min_similarity" in fields and fp is not None and text is None:
        problems.append(
            InvalidArgument(
                prefix + "min_similarity",
                f"{prefix}min_similarity needs text: a query by simhash has no sketch to verify candidates "
                "against; send the text, or leave min_similarity unset",
            )
        )
    if floor is None and "min_similarity" not in fields and text is not None:
        floor = default_floor
    verified = floor is not None or "min_similarity" in fields
    # A floor of 0 keeps every candidate: the fingerprint's own answer, so by default its own reach too.
    distance = VERIFY_MAX_DISTANCE if verified and floor != 0 else MAX_DISTANCE
    if "max_distance" in fields:
        distance = checked(check_max_distance, fields["max_distance"], verified) or 0
    limit = fields.get("limit") or bounds.default_limit
    if limit > bounds.max_limit:
        problems.append(
            InvalidArgument(
                prefix + "limit", f"{prefix}limit is {limit}, over the maximum of {bounds.max_limit} (max_limit)"
            )
        )
    now_ms = int(time.time() * 1000)
    indexed_at = checked(check_indexed_at, fields.get("indexed_at"), now_ms, retention_seconds)
    max_age = checked(check_max_age, fields.get("max_age"))
    if problems:
        raise InvalidArgument.together(problems)
    return Request(
        doc_id=doc_id if needs_id else None,
        text=text,
        fingerprint=fp,
        fingerprint_version=fields.get("fingerprint_version", ""),
        max_distance=distance,
        limit=limit,
        min_similarity=floor,
        indexed_at_ms=indexed_at,
        max_age_ms=max_age,
    )
