"""Health follows HBase: NOT_SERVING as soon as a ping goes unanswered for the health timeout (a cut network
answers nothing, so waiting out the store's own timeout would hide it for 10 s), while calls are still tried,
since slow is not down; SERVING again, the same process, once HBase answers."""

from __future__ import annotations

import time

import pytest

from simhash_client import DeadlineExceeded, SimHashClient


@pytest.fixture
def quick_health_server(make_index):
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    store = make_index()
    config = ServerConfig(
        address="127.0.0.1:0",
        metrics_address=None,
        health_interval_seconds=0.2,
        health_timeout_seconds=0.5,
        store=store.config,
    )
    srv = SimHashServer(config)
    srv.start()
    yield f"127.0.0.1:{srv.port}"
    srv.stop(grace=1)


def _until(condition, seconds: float = 60.0) -> None:
    """Wait for ``condition()`` (a state the test brought about, not a race it hopes to win)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)


def test_an_hbase_that_stops_answering_turns_health_not_serving_while_calls_are_still_tried(
    quick_health_server, pause_gateways
) -> None:
    with SimHashClient(quick_health_server, retries=0) as client:
        assert client.health()
        with pause_gateways():  # the gateways hold every call: pings go unanswered, nothing fails
            _until(lambda: not client.health(timeout=5))
            with pytest.raises(DeadlineExceeded):  # tried, and waited for: not refused as unreachable
                client.query(simhash=1, max_distance=0, timeout=1)
        client.wait_until_serving(timeout=60)
        assert client.query(simhash=1, max_distance=0) == []
