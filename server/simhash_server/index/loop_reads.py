"""Queries on serve's event loop: a batch's Thrift2 calls as asyncio I/O, with no thread hand-off.

serve's handlers run on one event loop.  Handing a batch of queries to a thread and its answer back costs
two thread wake-ups and a contended GIL each time.  Here the drawer scans and the fp2docs read are written
to the gateway on this loop's own connections, and their replies decoded as they arrive: the steps are
nearby.py's and scans.py's, only the I/O differs.  At 16 callers 1.01-1.12x the calls/s and 0.85-0.94x
serve's CPU per query of reads in a thread; at one caller the same (docs/decisions.md).

Only the common path runs here.  Whatever is rare (region boundaries a minute old, a scan longer than a
page, any error) goes to IndexStore.near_many in a thread, whose calls retry on fresh connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from concurrent.futures import Executor
from typing import Any

from thriftpy2.thrift import TException

from simhash_server.index.errors import DeadlineExceeded
from simhash_server.index.model import Near, Probe
from simhash_server.index.nearby import count_candidates, near_candidates
from simhash_server.index.pool import TRANSPORT_ERRORS
from simhash_server.index.scans import ScanPlan, read_on, scan_request
from simhash_server.index.store import IndexStore
from simhash_server.index.thrift2_calls import Incomplete, decode_reply, encode_request
from simhash_server.metrics import HBASE_CALL_SECONDS

__all__ = ["LoopReads", "LoopThrift2"]

log = logging.getLogger(__name__)

Request = tuple[str, dict[str, Any]]  # (Thrift2 method, its arguments)


_READ_BYTES = 1 << 16
# How long a reply that may have ended waits for more bytes before it is decoded at a size that has not
# doubled: one tick of the event loop's clock (epoll waits in milliseconds).
_SETTLE_S = 0.001


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def send(self, request: Request) -> None:
        api, arguments = request
        self.writer.write(encode_request(api, **arguments))

    async def reply(self, api: str) -> Any:
        """The reply to the request sent.  Replies carry no length, so the bytes arrived are decoded, and a
        decode that runs out of them is tried again later.  A drawer scan's or a get's reply is a few
        hundred bytes: one read, one decode.  A long one (a fingerprint's thousands of documents) comes in
        many reads, and decoding it afresh after each costs the loop time quadratic in its length (4.2 MB
        in 8 KB reads: 23-33 s, against 0.1 s for one decode; docs/decisions.md).  So it
        is tried again once its bytes have doubled (0.3 s), or when no more come for a moment; and never
        before they end with a struct's stop byte (0), as a whole reply does."""
        data, tried = bytearray(), 0  # tried: the length of the last decode that ran out of bytes
        while True:
            if len(data) > tried and data[-1] == 0:  # may be whole, and not tried at this length
                if len(data) >= 2 * tried or not await self._read(data, within=_SETTLE_S):
                    tried = len(data)
                    with contextlib.suppress(Incomplete):
                        return decode_reply(api, bytes(data))
            else:
                await self._read(data)

    async def _read(self, data: bytearray, within: float | None = None) -> bool:
        """The next bytes, appended to ``data``: True; False if none came within ``within`` seconds."""
        if within is None:  # the common path, spared a timer
            chunk = await self.reader.read(_READ_BYTES)
        else:
            try:
                async with asyncio.timeout(within):
                    chunk = await self.reader.read(_READ_BYTES)
            except TimeoutError:
                return False
        if not chunk:
            raise EOFError("the Thrift2 gateway closed the connection")
        data += chunk
        return True

    def close(self) -> None:
        self.writer.close()


class LoopThrift2:
    """Thrift2 calls on the running event loop, over connections of its own (at most ``size`` kept idle).

    Create and use it on one loop.  A connection that fails, or whose call was abandoned half way, is closed,
    never reused: its stream may hold a reply nobody read.  A failure closes the idle ones too: after a
    gateway restart, or its idle timeout, they are as dead as the one that failed."""

    def __init__(self, host: str, port: int, size: int, timeout_s: float) -> None:
        if size < 1:
            raise ValueError(f"size must be >= 1, got {size}")
        self.host, self.port, self.size, self.timeout_s = host, port, size, timeout_s
        self._idle: list[_Connection] = []
        self._call_seconds = HBASE_CALL_SECONDS.labels("thrift2")

    async def calls(self, requests: Sequence[Request], deadline: float | None) -> list[Any]:
        """Each request's reply, in order: all in flight at once, each on a connection of its own, in waves of
        at most ``size``; within ``timeout_s`` and the deadline (a monotonic time)."""
        wait = self.timeout_s
        if deadline is not None:
            wait = min(wait, deadline - time.monotonic())
            if wait <= 0:
                raise DeadlineExceeded("thrift2: the deadline passed")
        async with asyncio.timeout(wait):
            replies: list[Any] = []
            for lo in range(0, len(requests), self.size):
                replies.extend(await self._wave(requests[lo : lo + self.size]))
            return replies

    async def _wave(self, requests: Sequence[Request]) -> list[Any]:
        conns: list[_Connection] = []
        try:
            while len(conns) < len(requests):
                conns.append(self._idle.pop() if self._idle else await self._open())
            began = time.perf_counter()
            for conn, request in zip(conns, requests, strict=True):
                conn.send(request)
            replies = []
            for conn, (api, _) in zip(conns, requests, strict=True):
                replies.append(await conn.reply(api))
                self._call_seconds.observe(time.perf_counter() - began)
        except BaseException as exc:
            for conn in conns:
                conn.close()
            if isinstance(exc, Exception):  # not a cancellation: idle ones as old as these may be broken too
                self.close()
            raise
        for conn in conns:  # a concurrent batch may have opened more than are kept
            if len(self._idle) < self.size:
                self._idle.append(conn)
            else:
                conn.close()
        return replies

    async def _open(self) -> _Connection:
        return _Connection(*await asyncio.open_connection(self.host, self.port))

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()


class LoopReads:
    """IndexStore.near_many for the event loop: the same answers, read by LoopThrift2."""

    def __init__(self, store: IndexStore, executor: Executor) -> None:
        config = store.config
        self._store, self._executor = store, executor
        self._thrift = LoopThrift2(config.host, config.thrift2_port, config.pool_size, config.timeout_ms / 1000)
        self._fp2docs = store.tables.fp2docs.name.encode()

    async def near_many(self, probes: list[Probe], deadline: float | None) -> list[list[Near]]:
        starts = self._store.scans.cached_region_starts()
        if starts is not None:
            try:
                return await self._near_many(probes, starts, deadline)
            except (*TRANSPORT_ERRORS, TException) as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeadlineExceeded("thrift2: the deadline passed") from exc
                log.warning("thrift2 on the event loop failed, answering in a thread: %r", exc)
        return await self._in_thread(self._store.near_many, probes, deadline)

    async def _near_many(self, probes: list[Probe], starts: list[bytes], deadline: float | None) -> list[list[Near]]:
        plan = ScanPlan([p.fingerprint for p in probes], starts)
        table = self._store.scans.table
        pages = await self._thrift.calls([("getScannerResults", scan_request(table, s)) for s in plan.scans], deadline)
        keys = [row.row for rows in pages for row in rows]
        rest = [more for scan, rows in zip(plan.scans, pages, strict=True) if (more := read_on(scan, rows))]
        if rest:  # a drawer holding more than a page of rows under one prefix: only ever a pathological index
            keys += await self._in_thread(self._store.scans.read_rest, rest, deadline)
        found = plan.found(keys)
        near, read = near_candidates(probes, found)
        answers: list[list[Near]] = [[] for _ in probes]
        if read:
            [reply] = await self._thrift.calls([read.request(self._fp2docs)], deadline)
            answers = read.near(near, reply)
        count_candidates(found)
        return answers

    async def _in_thread(self, call: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, call, *args)

    def close(self) -> None:
        self._thrift.close()
