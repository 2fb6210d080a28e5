"""Every RPC driven with random and malformed requests (hypothesis): each answer is a documented status code,
and the server keeps serving."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from grpc_health.v1 import health_pb2, health_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simhash_index.v1 import simhash_index_pb2 as pb

SERVICE = pb.DESCRIPTOR.services_by_name["SimHashIndex"]
# README "Errors": what a request can get back.  Bytes that are no protobuf message of the method's type are
# INVALID_ARGUMENT too (the server's own check, naming the type); INTERNAL would be a bug.
DOCUMENTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
_INTS = {
    FieldDescriptor.TYPE_UINT64: st.integers(0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: st.integers(0, 2**64 - 1),
    FieldDescriptor.TYPE_UINT32: st.integers(0, 2**32 - 1),
    FieldDescriptor.TYPE_INT32: st.integers(-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: st.integers(-(2**63), 2**63 - 1),
}
_TEXT = st.one_of(
    st.text(st.characters(exclude_categories=("Cs",)), max_size=300),
    st.sampled_from(["", " ", "\x00", "0123456789abcdef", "x" * 600, "近似重复" * 50]),
)


def messages(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    """Random values for any subset of a message's fields, built from its descriptor."""
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for field in descriptor.fields:
        if field.type == FieldDescriptor.TYPE_STRING:
            value: st.SearchStrategy[Any] = _TEXT
        elif field.type in _INTS:
            value = _INTS[field.type]
        elif field.type == FieldDescriptor.TYPE_BOOL:
            value = st.booleans()
        elif field.type in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
            value = st.floats(allow_nan=True, allow_infinity=True, width=32)
        elif field.type == FieldDescriptor.TYPE_MESSAGE and depth < 1:
            value = messages(field.message_type, depth + 1)
        else:
            continue
        is_repeated = getattr(field, "is_repeated", None)
        repeated = is_repeated if is_repeated is not None else field.label == FieldDescriptor.LABEL_REPEATED
        fields[field.name] = st.lists(value, max_size=60) if repeated else value
    return st.fixed_dictionaries({}, optional=fields)


def _call(channel: grpc.Channel, method: str, payload: bytes) -> grpc.StatusCode:
    call = channel.unary_unary(f"/{SERVICE.full_name}/{method}")  # raw bytes in and out
    try:
        call(payload, timeout=30)
        return grpc.StatusCode.OK
    except grpc.RpcError as exc:
        return exc.code()


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as ch:
        yield ch


@pytest.mark.parametrize("method", [m.name for m in SERVICE.methods])
def test_random_requests_get_documented_answers(channel, method: str) -> None:
    descriptor = SERVICE.methods_by_name[method].input_type
    cls = getattr(pb, descriptor.name)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(messages(descriptor))
    def check(values: dict[str, Any]) -> None:
        payload = _build(cls, values)
        code = _call(channel, method, payload)
        assert code in DOCUMENTED, f"{method}({values!r}) -> {code}"

    check()


@pytest.mark.parametrize("method", [m.name for m in SERVICE.methods])
def test_bytes_that_are_no_message_are_refused_and_the_server_serves_on(channel, server, method: str) -> None:
    @settings(max_examples=40, deadline=None)
    @given(st.binary(max_size=200))
    def check(payload: bytes) -> None:
        code = _call(channel, method, payload)
        assert code in DOCUMENTED, f"{method}({payload!r}) -> {code}"

    check()
    health = health_pb2_grpc.HealthStub(channel)
    assert health.Check(health_pb2.HealthCheckRequest(), timeout=10).status == health_pb2.HealthCheckResponse.SERVING


def test_bytes_that_are_no_message_are_invalid_argument_naming_the_message_type(channel) -> None:
    call = channel.unary_unary(f"/{SERVICE.full_name}/Query")
    with pytest.raises(grpc.RpcError) as refused:
        call(b"\x00", timeout=30)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not a valid message" in refused.value.details()
    assert "simhash_index.v1.QueryRequest" in refused.value.details()


def _build(cls: type, values: dict[str, Any]) -> bytes:
    message = cls()
    for name, value in values.items():
        field = message.DESCRIPTOR.fields_by_name[name]
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            sub_cls = type(getattr(message, name).add() if isinstance(value, list) else getattr(message, name))
            if isinstance(value, list):
                del getattr(message, name)[:]
                getattr(message, name).extend(
                    [sub_cls.FromString(_build(sub_cls, v)) for v in value]  # type: ignore[attr-defined]
                )
            else:
                getattr(message, name).CopyFrom(sub_cls.FromString(_build(sub_cls, value)))  # type: ignore[attr-defined]
        elif isinstance(value, list):
            getattr(message, name).extend(value)
        else:
            setattr(message, name, value)
    return message.SerializeToString()
