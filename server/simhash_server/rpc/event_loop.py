"""The event loop the gRPC server's calls run on: asyncio's own, or uvloop's (libuv).

gRPC's asyncio server takes each new call from its core on a turn of the loop, so the cost of a turn bounds
both the calls a server answers per second and how soon a call waiting in the core is taken
(docs/decisions.md, "uvloop under the gRPC server")."""

from __future__ import annotations

import asyncio

EVENT_LOOPS = ("uvloop", "asyncio")


def check_event_loop(kind: str) -> None:
    if kind not in EVENT_LOOPS:
        raise ValueError(f"event_loop must be one of {', '.join(EVENT_LOOPS)}, got {kind!r}")


def new_event_loop(kind: str) -> asyncio.AbstractEventLoop:
    """A new loop of ``kind``: "uvloop" or "asyncio"."""
    check_event_loop(kind)
    if kind == "uvloop":
        try:
            import uvloop
        except ImportError as exc:  # no wheel for the platform (Windows): asyncio's loop serves the same calls
            raise ValueError("event_loop uvloop: the uvloop package is not installed; use asyncio") from exc
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()
