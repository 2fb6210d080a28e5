"""Request limits, with their defaults.  Exceeding one is INVALID_ARGUMENT (or RESOURCE_EXHAUSTED for
concurrency) naming the limit; none of them can take the server down."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Limits"]


@dataclass(frozen=True)
class Limits:
    max_text_bytes: int = 2 * 1024 * 1024  # UTF-8 bytes of one text
    max_message_bytes: int = 16 * 1024 * 1024  # one gRPC message, either way
    max_batch: int = 1000  # documents per IndexBatch, ids per Delete
    default_limit: int = 100  # hits returned when a request gives no limit
    max_limit: int = 10_000  # hits a request may ask for
    max_concurrent_calls: int = 256  # beyond: RESOURCE_EXHAUSTED (gRPC's own cap, every method together)
    # Calls of one method admitted at once (running, or queued for a shared HBase batch): beyond, the call is
    # refused at once with RESOURCE_EXHAUSTED and a RetryInfo, instead of queueing past its caller's deadline.
    max_calls_per_method: int = 64
    retry_after_ms: int = 50  # the RetryInfo delay a refused caller is asked to wait, at least
    workers: int = 16  # threads for Get, Delete, Stats and long texts (calls themselves are coroutines)

    def __post_init__(self) -> None:
        for name, value in self.__dict__.items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"limit {name} must be a positive integer, got {value!r}")
        if self.default_limit > self.max_limit:
            raise ValueError("default_limit must not exceed max_limit")
