"""Health follows HBase: NOT_SERVING as soon as a ping goes unanswered for the health timeout (a cut network
answers nothing, so waiting out the store's own timeout would hide it for 10 s), while calls are still tried,
since slow is not down; SERVING again, the same process, once HBase answers."""

from __future__ import annotations

import pytest

from simhash_client import DeadlineExceeded, SimHashClient


@pytest.fixture
def quick_health_server(serve_in_process) -> str:
    return serve_in_process(health_interval_seconds=0.2, health_timeout_seconds=0.5)


def test_an_hbase_that_stops_answering_turns_health_not_serving_while_calls_are_still_tried(
    quick_health_server, pause_gateways, until
) -> None:
    with SimHashClient(quick_health_server, retries=0) as client:
        assert client.health()
        with pause_gateways():  # the gateways hold every call: pings go unanswered, nothing fails
            until(lambda: not client.health(timeout=5))
            with pytest.raises(DeadlineExceeded):  # tried, and waited for: not refused as unreachable
                client.query(simhash=1, max_distance=0, timeout=1)
        client.wait_until_serving(timeout=60)
        assert client.query(simhash=1, max_distance=0) == []
