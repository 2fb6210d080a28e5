"""Thrift2 calls as bytes (for the event loop): requests the gateway reads, replies decoded only when whole.

Written and read here with thriftpy2's pure-Python binary protocol, the gateway's side of the wire, so the
codec is checked against another implementation than the Cython one it uses."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.transport import TMemoryBuffer

from simhash_schema import hbase2
from simhash_server.index import loop_reads
from simhash_server.index.thrift2_calls import Incomplete, decode_reply, encode_request


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


# -- the event loop's reader of a reply (loop_reads._Connection) -------------------------------------------
class _Pieces:
    """A stream reader handing out ``pieces`` in turn, then waiting for ever (or ending, if ``then_eof``)."""

    def __init__(self, pieces: list[bytes], then_eof: bool = False) -> None:
        self.pieces, self.then_eof = list(pieces), then_eof

    async def read(self, size: int) -> bytes:
        if self.pieces:
            return self.pieces.pop(0)
        if self.then_eof:
            return b""
        await asyncio.Event().wait()  # the gateway sends nothing more
        raise AssertionError("unreachable")


def _read_reply(reader: _Pieces, api: str, monkeypatch) -> tuple[Any, list[int]]:
    """The reply ``loop_reads`` decodes from ``reader``, and the length of every decode it tried."""
    tried: list[int] = []

    def counted(api: str, data: bytes) -> Any:
        tried.append(len(data))
        return decode_reply(api, data)

    monkeypatch.setattr(loop_reads, "decode_reply", counted)
    connection = loop_reads._Connection(reader, None)  # type: ignore[arg-type]
    return asyncio.run(asyncio.wait_for(connection.reply(api), 60)), tried


def _documents(count: int) -> Any:
    t = hbase2()
    columns = [t.TColumnValue(family=b"d", qualifier=f"doc-{i:07d}".encode(), value=b"sketch!!") for i in range(count)]
    return t.TResult(row=b"\x00" * 8, columnValues=columns)


def _split(data: bytes, size: int) -> list[bytes]:
    return [data[at : at + size] for at in range(0, len(data), size)]


def test_a_reply_in_one_read_is_decoded_once(monkeypatch) -> None:
    rows = _rows(5, random.Random(5))
    data = _reply_bytes("getScannerResults", success=rows)
    assert _read_reply(_Pieces([data]), "getScannerResults", monkeypatch) == (rows, [len(data)])


@pytest.mark.parametrize("piece", [1000, 8192, 65536])
def test_a_long_reply_is_decoded_a_logarithmic_number_of_times(piece: int, monkeypatch) -> None:
    # 20,000 documents of one fingerprint (about 1 MB): decoding afresh at every piece would take hundreds of
    # decodes, and time quadratic in the reply's length.
    found = _documents(20_000)
    data = _reply_bytes("get", success=found)
    pieces = _split(data, piece)
    answer, tried = _read_reply(_Pieces(pieces), "get", monkeypatch)
    assert answer == found
    assert tried[-1] == len(data)
    assert len(tried) <= (len(data) // piece).bit_length() + 2
    assert sum(tried) <= 3 * len(data)


def test_a_reply_ending_between_doublings_is_decoded_once_nothing_more_comes(monkeypatch) -> None:
    found = _documents(300)
    data = _reply_bytes("get", success=found)
    cut = len(data) * 2 // 3  # the first decode runs out at 2/3; the rest never doubles it
    while data[cut - 1] != 0:  # a piece ending in a stop byte, or none is tried there at all
        cut += 1
    assert cut < len(data)
    answer, tried = _read_reply(_Pieces([data[:cut], data[cut:]]), "get", monkeypatch)
    assert answer == found
    assert tried == [cut, len(data)]


def test_bytes_not_ending_in_a_stop_byte_are_never_decoded(monkeypatch) -> None:
    data = _reply_bytes("get", success=_documents(50))
    pieces = [data[at : at + 1] for at in range(len(data))]  # a byte at a time
    answer, tried = _read_reply(_Pieces(pieces), "get", monkeypatch)
    assert answer == _documents(50)
    assert all(data[length - 1] == 0 for length in tried)


def test_an_error_reply_in_pieces_is_raised(monkeypatch) -> None:
    t = hbase2()
    data = _reply_bytes("get", io=t.TIOError(message="region moved", canRetry=True))
    with pytest.raises(t.TIOError, match="region moved"):
        _read_reply(_Pieces(_split(data, 7)), "get", monkeypatch)
    with pytest.raises(TApplicationException, match="boom"):
        _read_reply(_Pieces(_split(_reply_bytes("get", TMessageType.EXCEPTION), 5)), "get", monkeypatch)


def test_a_connection_closed_mid_reply_is_an_error(monkeypatch) -> None:
    data = _reply_bytes("get", success=_documents(10))
    with pytest.raises(EOFError):
        _read_reply(_Pieces([data[:-3]], then_eof=True), "get", monkeypatch)
