"""Thrift2 calls in halves, for the query path: a request written, then its reply read.

Doing the halves apart lets one thread keep calls on several connections in flight at once (the gateway
serves each connection on its own thread), with no thread hand-offs in this process (scans.py); and the same
halves as bytes let an asyncio event loop do its own I/O (loop_reads.py).  thriftpy2's TClient has the
halves as ``_send`` and ``_recv`` but does not make them public, so they are reached only here.  The IDL
itself is simhash_schema's ``hbase2()``.
"""

from __future__ import annotations

from typing import Any

from simhash_schema import hbase2

__all__ = ["Incomplete", "decode_reply", "encode_request", "receive_reply", "send_request"]


def send_request(client: Any, api: str, **arguments: Any) -> None:
    """The first half of ``client.<api>(**arguments)``: the request, written and flushed."""
    client._send(api, **arguments)


def receive_reply(client: Any, api: str) -> Any:
    """The second half: the reply to the request ``send_request`` wrote (or the exception it carries)."""
    return client._recv(api)


# The same halves as bytes, for callers doing their own I/O (an asyncio event loop).  A reply has no length
# prefix (buffered transport), so it is decoded from what has arrived; ``Incomplete`` says wait for more.
class Incomplete(Exception):
    """The bytes given end before the reply does."""


class _Arrived:
    """What has arrived, read once; reading past its end raises Incomplete (through thriftpy2's Cython
    buffered transport, whose own memory buffer would read zeros instead)."""

    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def is_open(self) -> bool:
        return True

    def read(self, size: int) -> bytes:
        if self._at >= len(self._data):
            raise Incomplete
        chunk = self._data[self._at : self._at + size]
        self._at += len(chunk)
        return chunk


def encode_request(api: str, **arguments: Any) -> bytes:
    """The bytes ``send_request(client, api, **arguments)`` writes."""
    from thriftpy2.protocol.cybin import TCyBinaryProtocol
    from thriftpy2.thrift import TClient
    from thriftpy2.transport.memory import TCyMemoryBuffer

    out = TCyMemoryBuffer()
    TClient(hbase2().THBaseService, TCyBinaryProtocol(out))._send(api, **arguments)
    return out.getvalue()


def decode_reply(api: str, data: bytes) -> Any:
    """``receive_reply`` from bytes: the reply's result (or the exception it carries); Incomplete if ``data``
    ends before the reply does."""
    from thriftpy2.protocol.cybin import TCyBinaryProtocol
    from thriftpy2.thrift import TClient
    from thriftpy2.transport.buffered import TCyBufferedTransport

    return TClient(hbase2().THBaseService, TCyBinaryProtocol(TCyBufferedTransport(_Arrived(data))))._recv(api)
