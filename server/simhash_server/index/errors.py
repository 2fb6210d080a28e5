"""What can go wrong with the index: one small family of exceptions, each answered by one gRPC status.

rpc/status.py holds the table from these classes to status codes; nothing else decides a status.
"""

from __future__ import annotations

__all__ = ["CorruptData", "DeadlineExceeded", "InvalidArgument", "Rejected", "StoreError", "Unavailable"]


class StoreError(Exception):
    """Base of every error the index raises."""


class Unavailable(StoreError):
    """HBase did not answer (after retries).  Never to be read as "no near-duplicates"."""


class DeadlineExceeded(StoreError, TimeoutError):
    """The caller's deadline passed while its work waited or ran; the work was abandoned."""


class CorruptData(StoreError):
    """A stored cell is not what this code writes: the index holds data it cannot read."""


class Rejected(StoreError):
    """HBase refused the request itself (IllegalArgument, AlreadyExists): not transient, not the caller's fault."""


class InvalidArgument(StoreError, ValueError):
    """A field of a request is wrong.  ``field`` names it; the message says what is wrong and names it too.

    ``violations`` holds every (field, description) of the request when more than one field is wrong.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.description = message
        self.violations: tuple[tuple[str, str], ...] = ((field, message),)

    @classmethod
    def together(cls, problems: list[InvalidArgument]) -> InvalidArgument:
        """One error carrying every violation of ``problems`` (named after the first)."""
        if len(problems) == 1:
            return problems[0]
        joined = cls(problems[0].field, "; ".join(p.description for p in problems))
        joined.violations = tuple(v for p in problems for v in p.violations)
        return joined

    def renamed(self, field: str) -> InvalidArgument:
        """The same violation reported for the field at a request's path (``documents[3].doc_id``)."""
        return InvalidArgument(field, f"{field}: {self.description}")
