"""The hand-encoded HBase filter bytes equal what the protobuf runtime makes from Filter.proto's messages."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from hypothesis import given
from hypothesis import strategies as st

from simhash_schema.filters import key_only_multi_range

F = descriptor_pb2.FieldDescriptorProto


def _classes() -> dict[str, type]:
    """Filter.proto's five messages (the fields we use), built at run time: an independent encoder."""
    file = descriptor_pb2.FileDescriptorProto(name="test_filter.proto", package="t", syntax="proto2")

    def message(name: str, *fields: tuple[str, int, int, int, str | None]) -> None:
        msg = file.message_type.add(name=name)
        for field_name, number, ftype, label, type_name in fields:
            f = msg.field.add(name=field_name, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name

    opt, req, rep = F.LABEL_OPTIONAL, F.LABEL_REQUIRED, F.LABEL_REPEATED
    message("Filter", ("name", 1, F.TYPE_STRING, req, None), ("serialized_filter", 2, F.TYPE_BYTES, opt, None))
    message("FilterList", ("operator", 1, F.TYPE_INT32, req, None), ("filters", 2, F.TYPE_MESSAGE, rep, ".t.Filter"))
    message(
        "RowRange",
        ("start_row", 1, F.TYPE_BYTES, opt, None),
        ("start_row_inclusive", 2, F.TYPE_BOOL, opt, None),
        ("stop_row", 3, F.TYPE_BYTES, opt, None),
        ("stop_row_inclusive", 4, F.TYPE_BOOL, opt, None),
    )
    message("MultiRowRangeFilter", ("row_range_list", 1, F.TYPE_MESSAGE, rep, ".t.RowRange"))
    message("KeyOnlyFilter", ("len_as_val", 1, F.TYPE_BOOL, req, None))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"t.{name}"))
        for name in ("Filter", "FilterList", "RowRange", "MultiRowRangeFilter", "KeyOnlyFilter")
    }


def _expected(ranges: list[tuple[bytes, bytes]]) -> bytes:
    c = _CLASSES
    multi = c["MultiRowRangeFilter"](
        row_range_list=[
            c["RowRange"](start_row=a, start_row_inclusive=True, stop_row=b, stop_row_inclusive=False)
            for a, b in ranges
        ]
    )
    prefix = "org.apache.hadoop.hbase.filter."
    expected = c["Filter"](
        name=prefix + "FilterList",
        serialized_filter=c["FilterList"](
            operator=1,
            filters=[
                c["Filter"](name=prefix + "MultiRowRangeFilter", serialized_filter=multi.SerializeToString()),
                c["Filter"](
                    name=prefix + "KeyOnlyFilter",
                    serialized_filter=c["KeyOnlyFilter"](len_as_val=False).SerializeToString(),
                ),
            ],
        ).SerializeToString(),
    )
    return expected.SerializeToString()


_CLASSES = _classes()


@pytest.mark.parametrize("copies", [1, 100])  # 100: lengths past 127 bytes take multi-byte varints
def test_multi_range_key_only_filter_matches_the_protobuf_runtime(copies: int) -> None:
    ranges = copies * [
        (b"\x00\x01\x02\x03\x04", b"\x00\x01\x02\x03\x04" + b"\xff" * 9),
        (b"\x80'\x00\x00\x07", b"\x80'\x00\x00\x07" + b"\xff" * 9),
    ]
    assert key_only_multi_range(ranges) == _expected(ranges)


@given(st.lists(st.tuples(st.binary(max_size=300), st.binary(max_size=300)), min_size=1, max_size=6))
def test_any_ranges_encode_as_the_protobuf_runtime_does(ranges: list[tuple[bytes, bytes]]) -> None:
    """Rows of any length, including empty ones and those whose lengths need two-byte varints."""
    assert key_only_multi_range(ranges) == _expected(ranges)
