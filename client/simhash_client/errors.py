"""Typed errors: every gRPC status the service answers with maps to one class under SimHashError."""

from __future__ import annotations

import grpc

__all__ = [
    "DeadlineExceeded",
    "FailedPrecondition",
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


class InvalidArgument(SimHashError, ValueError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class NotFound(SimHashError, LookupError):
    code = grpc.StatusCode.NOT_FOUND


class FailedPrecondition(SimHashError):
    code = grpc.StatusCode.FAILED_PRECONDITION


class Unavailable(SimHashError):
    code = grpc.StatusCode.UNAVAILABLE


class DeadlineExceeded(SimHashError, TimeoutError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class ResourceExhausted(SimHashError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Unauthenticated(SimHashError):
    code = grpc.StatusCode.UNAUTHENTICATED


class PermissionDenied(SimHashError):
    code = grpc.StatusCode.PERMISSION_DENIED


class InternalError(SimHashError):
    code = grpc.StatusCode.INTERNAL


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
    )
}


def from_rpc_error(error: grpc.RpcError) -> SimHashError:
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    cls = _BY_CODE.get(code, SimHashError)
    return cls(details, code)
