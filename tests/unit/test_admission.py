"""Admission's bookkeeping and the client's answer to a refusal, without a server."""

from __future__ import annotations

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from simhash_client import calls
from simhash_client.errors import ResourceExhausted, Unavailable
from simhash_server.rpc.interceptors import Admission


def test_each_method_admits_up_to_its_limit_and_a_leaving_call_makes_room() -> None:
    admission = Admission(per_method=2)
    assert [admission.enter("Query") for _ in range(3)] == [True, True, False]
    assert admission.enter("Index")  # another method has its own room
    admission.leave("Query")
    assert admission.enter("Query") and not admission.enter("Query")
    with pytest.raises(ValueError, match="per_method"):
        Admission(per_method=0)


def test_a_refusal_carries_a_retry_info_with_the_configured_delay() -> None:
    message, ((key, value),) = Admission(per_method=3, retry_after_ms=120).refusal("Query")
    assert "3 Query calls" in message and key == "grpc-status-details-bin"
    # gRPC clients discard a rich status whose message is not the call's details
    status = status_pb2.Status.FromString(value)
    info = error_details_pb2.RetryInfo()
    assert status.code == grpc.StatusCode.RESOURCE_EXHAUSTED.value[0] and status.details[0].Unpack(info)
    assert info.retry_delay.ToMilliseconds() == 120 and status.message == message


def test_the_client_retries_a_refusal_no_sooner_than_the_server_asked() -> None:
    assert calls.retryable(grpc.StatusCode.RESOURCE_EXHAUSTED) and calls.retryable(grpc.StatusCode.UNAVAILABLE)
    assert not calls.retryable(grpc.StatusCode.INVALID_ARGUMENT)
    asked = ResourceExhausted("at the limit", retry_after=1.5)
    assert all(calls.backoff(0, asked) >= 1.5 for _ in range(100))
    assert all(calls.backoff(0, Unavailable("down")) <= 0.1 for _ in range(100))
