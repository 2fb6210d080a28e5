"""Thrift2 calls as bytes (for the event loop): requests the gateway reads, replies decoded only when whole.

Written and read here with thriftpy2's pure-Python binary protocol, the gateway's side of the wire, so the
codec is checked against another implementation than the Cython one it uses."""

from __future__ import annotations

import random
from typing import Any

import pytest
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.transport import TMemoryBuffer

from simhash_schema import Incomplete, decode_reply, encode_request, hbase2


def _reply_bytes(api: str, message_type: int = TMessageType.REPLY, **result: Any) -> bytes:
    """A reply as the gateway writes it."""
    out = TMemoryBuffer()
    protocol = TBinaryProtocol(out)
    protocol.write_message_begin(api, message_type, 0)
    if message_type == TMessageType.EXCEPTION:
        protocol.write_struct(TApplicationException(TApplicationException.INTERNAL_ERROR, "boom"))
    else:
        protocol.write_struct(getattr(hbase2().THBaseService, f"{api}_result")(**result))
    protocol.write_message_end()
    return out.getvalue()


def _rows(count: int, rng: random.Random) -> list[Any]:
    t = hbase2()
    return [
        t.TResult(
            row=rng.randbytes(13),
            columnValues=[t.TColumnValue(family=b"d", qualifier=b"", value=b"", timestamp=rng.getrandbits(40))],
        )
        for _ in range(count)
    ]


@pytest.mark.parametrize("count", [0, 1, 3, 40])
def test_a_reply_decodes_only_when_whole(count: int) -> None:
    rows = _rows(count, random.Random(count))
    data = _reply_bytes("getScannerResults", success=rows)
    assert decode_reply("getScannerResults", data) == rows
    for cut in range(len(data)):  # every shorter prefix: wait for more, never a partial answer
        with pytest.raises(Incomplete):
            decode_reply("getScannerResults", data[:cut])


def test_a_get_reply_with_columns_and_an_empty_one() -> None:
    t = hbase2()
    found = t.TResult(row=b"\x00" * 8, columnValues=[t.TColumnValue(family=b"d", qualifier=b"doc-1", value=b"sk")])
    assert decode_reply("get", _reply_bytes("get", success=found)) == found
    assert decode_reply("get", _reply_bytes("get", success=t.TResult())) == t.TResult()


def test_an_error_hbase_reports_is_raised_once_whole() -> None:
    t = hbase2()
    data = _reply_bytes("get", io=t.TIOError(message="region moved", canRetry=True))
    with pytest.raises(t.TIOError, match="region moved"):
        decode_reply("get", data)
    with pytest.raises(Incomplete):
        decode_reply("get", data[:-1])


def test_an_application_exception_is_raised() -> None:
    with pytest.raises(TApplicationException, match="boom"):
        decode_reply("get", _reply_bytes("get", TMessageType.EXCEPTION))


def test_a_request_is_what_the_gateway_reads() -> None:
    t = hbase2()
    tscan = t.TScan(startRow=b"\x01" * 5, stopRow=b"\x02" * 5, caching=7, limit=7, readType=t.TReadType.PREAD)
    protocol = TBinaryProtocol(
        TMemoryBuffer(encode_request("getScannerResults", table=b"x_drawers", tscan=tscan, numRows=7))
    )
    assert protocol.read_message_begin()[:2] == ("getScannerResults", TMessageType.CALL)
    arguments = t.THBaseService.getScannerResults_args()
    protocol.read_struct(arguments)
    assert (arguments.table, arguments.tscan, arguments.numRows) == (b"x_drawers", tscan, 7)
