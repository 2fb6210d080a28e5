"""A small pool of Thrift connections (happybase or Thrift2), with retries for idempotent calls.

A connection that fails in transport is closed and dropped, never handed out again; the next call opens a
fresh one.  So a gateway restart, or the gateway closing connections idle longer than its
``hbase.thrift.server.socket.read.timeout``, costs one retry, not an outage.

What HBase itself reports is sorted by what it means: an IOError (a region moving, a server restarting) is
retried like a transport error and ends as Unavailable; IllegalArgument and AlreadyExists say the request
is wrong, so a retry would be refused again: they raise Rejected at once.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from thriftpy2.thrift import TApplicationException, TDecodeException, TException
from thriftpy2.transport import TTransportException

from simhash_server import tracing
from simhash_server.index.errors import DeadlineExceeded, Rejected, Unavailable
from simhash_server.metrics import HBASE_CALL_SECONDS

__all__ = ["TRANSPORT_ERRORS", "ConnectionPool", "close_quietly", "is_refusal"]

log = logging.getLogger(__name__)
C = TypeVar("C")
R = TypeVar("R")

TRANSPORT_ERRORS: tuple[type[BaseException], ...] = (
    TTransportException,
    socket.error,
    TimeoutError,
    TApplicationException,
    TDecodeException,
    EOFError,
)


# Thrift1 (happybase's IDL) and Thrift2 name their exceptions IllegalArgument / TIllegalArgument, and so on.
_REFUSALS = ("IllegalArgument", "AlreadyExists")


def is_refusal(exc: TException) -> bool:
    """True for an exception in which HBase refuses the request itself (retrying cannot help)."""
    name = type(exc).__name__
    return name.lstrip("T") in _REFUSALS


class ConnectionPool(Generic[C]):
    def __init__(
        self,
        name: str,
        factory: Callable[[], C],
        close: Callable[[C], None],
        size: int,
        retries: int = 2,
        acquire_timeout: float = 10.0,
    ) -> None:
        if size < 1:
            raise ValueError(f"pool size must be >= 1, got {size}")
        self.name = name
        self._factory, self._close = factory, close
        self._idle: queue.LifoQueue[C] = queue.LifoQueue()
        self._slots = threading.BoundedSemaphore(size)
        self.retries = retries
        self.acquire_timeout = acquire_timeout

    def run(
        self,
        call: Callable[[C], R],
        idempotent: bool = True,
        deadline: float | None = None,
        what: str = "call",
        attributes: Mapping[str, Any] | None = None,
    ) -> R:
        """``call(connection)``, retried on a fresh connection after transport or HBase I/O errors; traced as
        one span, "HBase ``what``", with the gateway and ``attributes`` (the table, how many rows)."""
        if not tracing.on():  # the untraced path builds no span name or attributes
            return self._attempts(call, idempotent, deadline)
        with tracing.span(f"HBase {what}", {"db.system": "hbase", "simhash.gateway": self.name, **(attributes or {})}):
            return self._attempts(call, idempotent, deadline)

    def _attempts(self, call: Callable[[C], R], idempotent: bool, deadline: float | None) -> R:
        attempts = 1 + (self.retries if idempotent else 0)
        last: BaseException | None = None
        fresh = False  # after a transport error: idle connections as old as the broken one may be dead too
        for attempt in range(attempts):
            if deadline is not None and time.monotonic() >= deadline:
                raise DeadlineExceeded(f"{self.name}: the deadline passed") from last
            if not self._slots.acquire(timeout=self.acquire_timeout):
                raise Unavailable(f"{self.name}: no connection free within {self.acquire_timeout:.0f} s")
            conn: C | None = None
            began = time.perf_counter()
            try:
                conn = self._factory() if fresh else self._take()
                result = call(conn)
                HBASE_CALL_SECONDS.labels(self.name).observe(time.perf_counter() - began)
            except TRANSPORT_ERRORS as exc:
                last, fresh = exc, True
                if conn is not None:
                    self._discard(conn)
                    conn = None
                log.warning("%s: transport error (attempt %d/%d): %r", self.name, attempt + 1, attempts, exc)
                if attempt + 1 < attempts:
                    time.sleep(min(0.05 * 2**attempt, 0.5))
                continue
            except TException as exc:  # an error HBase reported (TIOError, TIllegalArgument, ...)
                if is_refusal(exc):
                    raise Rejected(f"{self.name}: HBase refused the request: {exc!r}") from exc
                last = exc
                log.warning("%s: HBase error (attempt %d/%d): %r", self.name, attempt + 1, attempts, exc)
                if attempt + 1 < attempts:
                    time.sleep(min(0.05 * 2**attempt, 0.5))
                continue
            finally:
                if conn is not None:
                    self._idle.put(conn)
                self._slots.release()
            return result
        raise Unavailable(f"{self.name}: HBase did not answer after {attempts} attempt(s): {last!r}") from last

    @contextlib.contextmanager
    def held(self, most: int) -> Iterator[list[C]]:
        """Up to ``most`` connections at once (at least one), for calls pipelined over them.

        Only the first waits for a free slot; the rest are taken only if free, so two callers holding some
        can never wait on each other.  If the block raises, every held connection is discarded: a stream
        may hold a reply nobody read."""
        if not self._slots.acquire(timeout=self.acquire_timeout):
            raise Unavailable(f"{self.name}: no connection free within {self.acquire_timeout:.0f} s")
        slots = 1
        while slots < most and self._slots.acquire(blocking=False):
            slots += 1
        conns: list[C] = []
        try:
            conns.extend(self._take() for _ in range(slots))
            yield conns
        except BaseException:
            for conn in conns:
                self._discard(conn)
            conns = []
            raise
        finally:
            for conn in conns:
                self._idle.put(conn)
            for _ in range(slots):
                self._slots.release()

    def _take(self) -> C:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            return self._factory()

    def _discard(self, conn: C) -> None:
        with contextlib.suppress(Exception):  # it is broken already
            self._close(conn)

    def close(self) -> None:
        while True:
            try:
                self._discard(self._idle.get_nowait())
            except queue.Empty:
                return

    def __repr__(self) -> str:
        return f"ConnectionPool({self.name!r}, idle={self._idle.qsize()})"


def close_quietly(conn: Any) -> None:
    closer = getattr(conn, "close", None)
    if closer is not None:
        closer()
