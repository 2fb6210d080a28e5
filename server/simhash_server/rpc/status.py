"""Exceptions -> gRPC status codes, in one table; a field violation also goes out as google.rpc.BadRequest.

A handler raises; ``abort`` ends the call.  The first row whose class the exception is an instance of gives
the code.  Anything not in the table is a bug here: INTERNAL, logged with its traceback, its text kept from
the caller.
"""

from __future__ import annotations

import logging

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2

from simhash_schema import SchemaError, VersionMismatch
from simhash_server.index.errors import (
    CorruptData,
    DeadlineExceeded,
    InvalidArgument,
    Rejected,
    Unavailable,
)

__all__ = ["STATUS_OF", "NotFound", "abort", "item_status", "status_for"]

log = logging.getLogger(__name__)
_DETAILS_KEY = "grpc-status-details-bin"  # where gRPC carries a google.rpc.Status beside the code


class NotFound(LookupError):
    """The request names something the index does not hold (Get of an unknown id)."""


STATUS_OF: tuple[tuple[type[BaseException], grpc.StatusCode], ...] = (
    (InvalidArgument, grpc.StatusCode.INVALID_ARGUMENT),
    (NotFound, grpc.StatusCode.NOT_FOUND),
    (VersionMismatch, grpc.StatusCode.FAILED_PRECONDITION),  # before SchemaError, its base
    (DeadlineExceeded, grpc.StatusCode.DEADLINE_EXCEEDED),
    (Unavailable, grpc.StatusCode.UNAVAILABLE),
    (SchemaError, grpc.StatusCode.UNAVAILABLE),  # tables missing or unreachable: an operator's fix, then retry
    (CorruptData, grpc.StatusCode.DATA_LOSS),
    (Rejected, grpc.StatusCode.INTERNAL),  # HBase refused what this server sent: a bug here
)


def status_for(exc: BaseException) -> grpc.StatusCode:
    for cls, code in STATUS_OF:
        if isinstance(exc, cls):
            return code
    return grpc.StatusCode.INTERNAL


def _bad_request_status(exc: InvalidArgument) -> status_pb2.Status:
    """INVALID_ARGUMENT with a google.rpc.BadRequest naming every bad field (what api-core reads)."""
    violations = [error_details_pb2.BadRequest.FieldViolation(field=f, description=d) for f, d in exc.violations]
    detail = any_pb2.Any()
    detail.Pack(error_details_pb2.BadRequest(field_violations=violations))
    return status_pb2.Status(code=code_pb2.INVALID_ARGUMENT, message=str(exc), details=[detail])


def _bad_request(exc: InvalidArgument) -> tuple[tuple[str, bytes], ...]:
    """Trailing metadata carrying the call's google.rpc.Status beside its code."""
    return ((_DETAILS_KEY, _bad_request_status(exc).SerializeToString()),)


def item_status(exc: InvalidArgument | VersionMismatch | None = None) -> status_pb2.Status:
    """One batch item's status: OK, or what the table gives a refused item (an InvalidArgument with its
    BadRequest), in the item's outcome while the call itself succeeds."""
    if exc is None:
        return status_pb2.Status(code=code_pb2.OK)
    if isinstance(exc, InvalidArgument):
        return _bad_request_status(exc)
    return status_pb2.Status(code=status_for(exc).value[0], message=str(exc))


async def abort(context: grpc.aio.ServicerContext, exc: BaseException, method: str) -> None:
    """End the call with the status the table gives ``exc`` (never returns)."""
    code = status_for(exc)
    if code is grpc.StatusCode.INTERNAL:
        log.error("%s failed", method, exc_info=exc)
        await context.abort(code, f"internal error: {type(exc).__name__}")
    if isinstance(exc, InvalidArgument):
        await context.abort(code, str(exc), trailing_metadata=_bad_request(exc))
    await context.abort(code, str(exc))
