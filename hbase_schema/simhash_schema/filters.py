"""HBase scan filters the Thrift filter language cannot express, as the serialized protobuf that Thrift2's
``TScan.filterBytes`` carries (HBase's Filter.proto; encoded by hand: five small messages).

The filter language has no MultiRowRangeFilter; a query needs it to read several drawer prefixes that fall
in one region with one scan instead of one scan each.  Every query encodes one per region it reads, so the
constant parts (field tags, class names, flags) are encoded once, here, and a range costs a join.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["key_only_multi_range"]

_FILTERS = "org.apache.hadoop.hbase.filter."
_MUST_PASS_ALL = 1


def _varint(value: int) -> bytes:
    if value < 0x80:  # every length and flag a query sends: one byte
        return bytes((value,))
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _tag(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _tag(number, 2) + _varint(len(payload)) + payload


def _varint_field(number: int, value: int) -> bytes:
    return _tag(number, 0) + _varint(value)


def _filter(class_name: str, serialized: bytes) -> bytes:
    """message Filter { required string name = 1; optional bytes serialized_filter = 2; }"""
    return _bytes_field(1, (_FILTERS + class_name).encode()) + _bytes_field(2, serialized)


# message RowRange { start_row = 1; start_row_inclusive = 2; stop_row = 3; stop_row_inclusive = 4; }, as
# [start, stop): everything but the two rows and their lengths is the same in every range.
_START = _tag(1, 2)
_START_INCLUSIVE_THEN_STOP = _varint_field(2, 1) + _tag(3, 2)
_STOP_EXCLUSIVE = _varint_field(4, 0)
_RANGE = _tag(1, 2)  # MultiRowRangeFilter.row_range_list, repeated
_KEY_ONLY = _bytes_field(2, _filter("KeyOnlyFilter", _varint_field(1, 0)))  # len_as_val = false


def _row_range(start: bytes, stop: bytes) -> bytes:
    body = b"".join(
        (_START, _varint(len(start)), start, _START_INCLUSIVE_THEN_STOP, _varint(len(stop)), stop, _STOP_EXCLUSIVE)
    )
    return b"".join((_RANGE, _varint(len(body)), body))


def key_only_multi_range(ranges: Sequence[tuple[bytes, bytes]]) -> bytes:
    """FilterList(MUST_PASS_ALL, [MultiRowRangeFilter([start, stop) ...), KeyOnlyFilter(len_as_val=false)])."""
    multi = b"".join([_row_range(start, stop) for start, stop in ranges])
    filters = _bytes_field(2, _filter("MultiRowRangeFilter", multi)) + _KEY_ONLY
    return _filter("FilterList", _varint_field(1, _MUST_PASS_ALL) + filters)
