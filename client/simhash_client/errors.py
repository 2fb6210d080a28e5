"""Typed errors: every gRPC status the service answers with maps to one class under SimHashError.

An INVALID_ARGUMENT answer also carries a google.rpc.BadRequest (read with grpcio-status): its field
violations are ``InvalidArgument.violations``, so a caller can tell which field was wrong without parsing text.
"""

from __future__ import annotations

from typing import NamedTuple

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

__all__ = [
    "DataLoss",
    "DeadlineExceeded",
    "FailedPrecondition",
    "FieldViolation",
    "InternalError",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "ResourceExhausted",
    "SimHashError",
    "Unauthenticated",
    "Unavailable",
    "from_rpc_error",
]


class SimHashError(Exception):
    """Base of every error the client raises; ``code`` is the gRPC status code, ``details`` the server's text."""

    code: grpc.StatusCode = grpc.StatusCode.UNKNOWN

    def __init__(self, details: str, code: grpc.StatusCode | None = None) -> None:
        super().__init__(details)
        self.details = details
        if code is not None:
            self.code = code


class FieldViolation(NamedTuple):
    field: str  # the request's field, as a path: "max_distance", "documents[2].doc_id"
    description: str


class InvalidArgument(SimHashError, ValueError):
    code = grpc.StatusCode.INVALID_ARGUMENT

    def __init__(
        self, details: str, code: grpc.StatusCode | None = None, violations: tuple[FieldViolation, ...] = ()
    ) -> None:
        super().__init__(details, code)
        self.violations = violations

    @property
    def fields(self) -> list[str]:
        return [v.field for v in self.violations]


class NotFound(SimHashError, LookupError):
    code = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(SimHashError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Unavailable(SimHashError):
    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(SimHashError, TimeoutError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class ResourceExhausted(SimHashError):
    """The server is at its limit for this kind of call: retried with backoff, waiting at least
    ``retry_after`` seconds (the server's google.rpc.RetryInfo) when it gave one."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED

    def __init__(self, details: str, code: grpc.StatusCode | None = None, retry_after: float | None = None) -> None:
        super().__init__(details, code)
        self.retry_after = retry_after


class Unauthenticated(SimHashError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(SimHashError):
    code = grpc.StatusCode.PERMISSION_DENIED


class InternalError(SimHashError):
    code = grpc.StatusCode.INTERNAL


class DataLoss(SimHashError):
    """The server holds index data it cannot read (a corrupt stored cell): an operator's problem."""

    code = grpc.StatusCode.DATA_LOSS


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgument,
        NotFound,
        FailedPrecondition,
        Unavailable,
        DeadlineExceeded,
        ResourceExhausted,
        Unauthenticated,
        PermissionDenied,
        InternalError,
        DataLoss,
    )
}


def from_rpc_error(error: grpc.RpcError) -> SimHashError:
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    cls = _BY_CODE.get(code, SimHashError)
    if cls is InvalidArgument:
        return InvalidArgument(details, code, _violations(error))
    if cls is ResourceExhausted:
        return ResourceExhausted(details, code, _retry_after(error))
    return cls(details, code)


def _rich_status(error: grpc.RpcError) -> status_pb2.Status | None:
    try:
        return rpc_status.from_call(error)  # type: ignore[arg-type]
    except (AttributeError, ValueError):  # not a call, or details that disagree with the code
        return None


def _violations(error: grpc.RpcError) -> tuple[FieldViolation, ...]:
    """The BadRequest field violations in an error's rich status (none when the server sent none)."""
    status = _rich_status(error)
    return status_violations(status) if status is not None else ()


def _retry_after(error: grpc.RpcError) -> float | None:
    """Seconds from the RetryInfo in an error's rich status (None when the server sent none)."""
    status = _rich_status(error)
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.RetryInfo.DESCRIPTOR):
            info = error_details_pb2.RetryInfo()
            detail.Unpack(info)
            return info.retry_delay.ToMilliseconds() / 1000
    return None


def status_violations(status: status_pb2.Status) -> tuple[FieldViolation, ...]:
    """The BadRequest field violations of a google.rpc.Status: a call's, or a refused batch item's."""
    found: list[FieldViolation] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            found.extend(FieldViolation(v.field, v.description) for v in bad.field_violations)
    return tuple(found)
