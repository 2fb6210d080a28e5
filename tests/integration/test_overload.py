"""Admission: a server at its per-method limit refuses the next call of that method at once, with a delay to
retry after, and keeps answering other methods; the client waits that long and gets through once it can."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from simhash_client import ResourceExhausted, SimHashClient
from simhash_server.metrics import RPC_IN_FLIGHT


@pytest.fixture
def small_server(serve_in_process) -> str:
    """A real server whose Query admits 2 calls at once."""
    from simhash_server.rpc.limits import Limits

    return serve_in_process(
        health_interval_seconds=60,  # no health probe of the paused gateways while the test holds them
        limits=Limits(max_calls_per_method=2, retry_after_ms=250),
    )


def test_a_call_over_the_method_limit_is_refused_at_once_with_a_retry_delay(
    small_server, pause_gateways, base, until
) -> None:
    in_flight = RPC_IN_FLIGHT.labels("Query")
    with (
        SimHashClient(small_server, timeout=60, retries=0) as holding,
        SimHashClient(small_server, timeout=60, retries=0) as refused_client,
        SimHashClient(small_server, timeout=60, retries=20) as patient,
        ThreadPoolExecutor(3) as pool,
    ):
        already = in_flight._value.get()
        with pause_gateways():  # HBase cannot answer: the two queries stay in flight until the block ends
            held = [pool.submit(holding.query, simhash=base ^ n) for n in range(2)]
            until(lambda: in_flight._value.get() >= already + 2)
            # Refused while HBase still cannot answer: a call held in a queue could only end after the block.
            with pytest.raises(ResourceExhausted, match="max_calls_per_method") as refused:
                refused_client.query(simhash=base)
            assert refused.value.retry_after == 0.25
            assert refused_client.fingerprint("其他方法照常回答").simhash  # another method is still admitted
            waiting = pool.submit(patient.query, simhash=base ^ 7)  # retries after each refusal's delay
        assert [f.result(timeout=60) for f in held] == [[], []]
        assert waiting.result(timeout=60) == []
