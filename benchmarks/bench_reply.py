"""Decoding a long Thrift2 reply on serve's event loop: afresh after every read, or as loop_reads does it.

A reply carries no length, so the event loop decodes what has arrived and tries again when a decode runs
out of bytes.  A get of a fingerprint shared by many documents is long, and comes in many reads (8 KB at
first from the gateway here, then up to 64 KB).  For each reply size and read size, the same bytes are fed
to both readers from memory, and the time until the reply is decoded is the best of three; beside them, one
decode of the whole reply.  No HBase: this is the reader's own cost.

    .venv/bin/python benchmarks/bench_reply.py        # or: make bench-reply
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from thriftpy2.protocol.cybin import TCyBinaryProtocol
from thriftpy2.thrift import TMessageType
from thriftpy2.transport.memory import TCyMemoryBuffer

from simhash_schema import Incomplete, decode_reply, hbase2
from simhash_server.index.loop_reads import _Connection


class Pieces:
    """A stream reader handing out the pieces in turn, then waiting (the gateway sends nothing more)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.pieces = [data[at : at + size] for at in range(0, len(data), size)]

    async def read(self, size: int) -> bytes:
        if self.pieces:
            return self.pieces.pop(0)
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def get_reply(documents: int) -> bytes:
    """A get's reply as the gateway writes it: one fingerprint's documents (id and sketch each)."""
    t = hbase2()
    columns = [t.TColumnValue(family=b"d", qualifier=f"doc-{i:07d}".encode(), value=b"s" * 8) for i in range(documents)]
    out = TCyMemoryBuffer()
    protocol = TCyBinaryProtocol(out)
    protocol.write_message_begin("get", TMessageType.REPLY, 0)
    protocol.write_struct(t.THBaseService.get_result(success=t.TResult(row=b"\0" * 8, columnValues=columns)))
    protocol.write_message_end()
    return out.getvalue()


async def every_read(reader: Pieces) -> Any:
    """The rule before: decode afresh after every read."""
    data = b""
    while True:
        data += await reader.read(1 << 16)
        with contextlib.suppress(Incomplete):
            return decode_reply("get", data)


async def loop_reads(reader: Pieces) -> Any:
    """The rule now (loop_reads)."""
    return await _Connection(reader, None).reply("get")  # type: ignore[arg-type]


async def best_ms(read: Callable[[Pieces], Awaitable[Any]], data: bytes, size: int) -> float:
    times = []
    for _ in range(3):
        reader = Pieces(data, size)
        began = time.perf_counter()
        await read(reader)
        times.append(1000 * (time.perf_counter() - began))
    return min(times)


async def main() -> None:
    print("| documents | reply MB | read KB | decode after every read, ms | loop_reads, ms | one decode, ms |")
    print("|---|---|---|---|---|---|")
    for documents in (1_000, 10_000, 100_000):
        data = get_reply(documents)
        once = await best_ms(every_read, data, len(data))  # the whole reply in one read: one decode
        for size in (8192, 65536):
            before, now = await best_ms(every_read, data, size), await best_ms(loop_reads, data, size)
            row = (f"{documents:,}", f"{len(data) / 1e6:.2f}", f"{size // 1024}", f"{before:,.1f}", f"{now:,.1f}")
            print("| " + " | ".join(row) + f" | {once:,.1f} |")


if __name__ == "__main__":
    asyncio.run(main())
