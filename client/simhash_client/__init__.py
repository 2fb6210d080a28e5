"""Python client for the simhash-index gRPC service (installs without jieba, happybase or numpy)."""

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
from simhash_client.types import DedupResult, FingerprintResult, Hit, IndexOutcome, Stats, parse_simhash, to_hex

__all__ = [
    "AsyncSimHashClient",
    "DataLoss",
    "DeadlineExceeded",
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
    "ResourceExhausted",
    "SimHashClient",
    "SimHashError",
    "Stats",
    "Unauthenticated",
    "Unavailable",
    "parse_simhash",
    "to_hex",
]
