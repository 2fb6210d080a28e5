"""HBase's Thrift2 API through thriftpy2.

The IDL is HBase 2.6.1's ``org/apache/hadoop/hbase/thrift2/hbase.thrift`` (Apache-2.0, from the
``hbase-thrift`` jar on Maven Central), shipped in this package as ``hbase2.thrift`` the way happybase ships
Thrift1's, so an installed package needs no checkout and no jars.  tests/unit/test_thrift2_idl.py holds it
equal to the jar's.  To speak another HBase's Thrift2, point ``$SIMHASH_HBASE_THRIFT2_IDL`` at its
hbase.thrift or its hbase-thrift jar, or set ``$HBASE_HOME``.
"""

from __future__ import annotations

import io
import os
import zipfile
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "PACKAGED_IDL",
    "Incomplete",
    "SchemaError",
    "connect",
    "decode_reply",
    "encode_request",
    "hbase2",
    "read_idl",
    "receive_reply",
    "send_request",
]

IDL_IN_JAR = "org/apache/hadoop/hbase/thrift2/hbase.thrift"


class SchemaError(RuntimeError):
    """The index's tables or meta record are missing, different, or cannot be reached."""


PACKAGED_IDL = Path(__file__).with_name("hbase2.thrift")


def _candidates() -> list[Path]:
    found: list[Path] = []
    if env := os.environ.get("SIMHASH_HBASE_THRIFT2_IDL"):
        found.append(Path(env))
    if home := os.environ.get("HBASE_HOME"):
        found.extend(sorted(Path(home, "lib").glob("hbase-thrift-*.jar")))
    found.append(PACKAGED_IDL)
    return found


def read_idl(path: Path) -> str:
    """The Thrift2 IDL text in a .thrift file, or inside an hbase-thrift jar."""
    if path.suffix == ".jar":
        with zipfile.ZipFile(path) as jar:
            return jar.read(IDL_IN_JAR).decode("utf-8")
    return path.read_text(encoding="utf-8")


@cache
def hbase2() -> ModuleType:
    """The Thrift2 IDL as a thriftpy2 module (THBaseService, TScan, TColumnFamilyDescriptor, ...)."""
    import thriftpy2

    for path in _candidates():
        if path.is_file():
            return thriftpy2.load_fp(io.StringIO(read_idl(path)), module_name="hbase2_thrift")
    raise SchemaError(  # only when an explicit location is wrong and the packaged copy is gone
        f"cannot find HBase's Thrift2 IDL (looked at {', '.join(map(str, _candidates()))}): set "
        "SIMHASH_HBASE_THRIFT2_IDL to an hbase.thrift or an hbase-thrift jar, or reinstall simhash-index"
    )


def connect(host: str, port: int, timeout_ms: int = 10_000) -> Any:
    """A Thrift2 client (binary protocol, buffered transport: the gateway's -threadpool defaults)."""
    from thriftpy2.protocol import TBinaryProtocolFactory
    from thriftpy2.rpc import make_client
    from thriftpy2.transport import TBufferedTransportFactory

    return make_client(
        hbase2().THBaseService,
        host,
        port,
        timeout=timeout_ms,
        trans_factory=TBufferedTransportFactory(),
        proto_factory=TBinaryProtocolFactory(),
    )


# A call is a request written, then a reply read.  Doing the halves apart lets one thread keep calls on
# several connections in flight at once (the gateway serves each connection on its own thread), with no
# thread hand-offs in this process.  thriftpy2's TClient has the halves as _send and _recv but does not make
# them public, so they are reached only here.
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
