"""Python client for the simhash-index gRPC service (installs without jieba, happybase or numpy).

Names load on first use (PEP 562), so ``import simhash_client.types`` loads no gRPC.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "AsyncSimHashClient": "async_client",
    "SimHashClient": "client",
    **dict.fromkeys(
        (
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
        ),
        "errors",
    ),
    **dict.fromkeys(
        (
            "DedupOutcome",
            "DedupResult",
            "FingerprintResult",
            "Hit",
            "IndexOutcome",
            "QueryOutcome",
            "Stats",
            "parse_simhash",
            "to_hex",
        ),
        "types",
    ),
}
__all__ = [
    "AsyncSimHashClient",
    "DataLoss",
    "DeadlineExceeded",
    "DedupOutcome",
    "DedupResult",
    "FailedPrecondition",
    "FieldViolation",
    "FingerprintResult",
    "Hit",
    "IndexOutcome",
    "InternalError",
    "InvalidArgument",
    "NotFound",
    "PermissionDenied",
    "QueryOutcome",
    "ResourceExhausted",
    "SimHashClient",
    "SimHashError",
    "Stats",
    "Unauthenticated",
    "Unavailable",
    "parse_simhash",
    "to_hex",
]

if TYPE_CHECKING:
    from simhash_client.async_client import AsyncSimHashClient
    from simhash_client.client import SimHashClient
    from simhash_client.errors import (
        DataLoss,
        DeadlineExceeded,
        FailedPrecondition,
        FieldViolation,
        InternalError,
        InvalidArgument,
        NotFound,
        PermissionDenied,
        ResourceExhausted,
        SimHashError,
        Unauthenticated,
        Unavailable,
    )
    from simhash_client.types import (
        DedupOutcome,
        DedupResult,
        FingerprintResult,
        Hit,
        IndexOutcome,
        QueryOutcome,
        Stats,
        parse_simhash,
        to_hex,
    )


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'simhash_client' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"simhash_client.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
