"""The graceful stop's bookkeeping: what is in flight, and when the last call has left."""

from __future__ import annotations

import asyncio

from simhash_server.rpc.interceptors import Drain


def test_wait_returns_when_the_last_call_leaves() -> None:
    async def scenario() -> tuple[int, int]:
        drain = Drain()
        drain.enter()
        drain.enter()
        drain.close()
        waiting = asyncio.create_task(drain.wait(600))
        drain.leave()
        await asyncio.sleep(0)  # let the waiter run: one call is still in flight, so it must not finish
        assert not waiting.done()
        drain.leave()
        return await waiting, drain.in_flight

    assert asyncio.run(scenario()) == (0, 0)


def test_wait_gives_up_after_its_timeout_and_says_how_many_are_left() -> None:
    async def scenario() -> int:
        drain = Drain()
        drain.enter()
        return await drain.wait(0)

    assert asyncio.run(scenario()) == 1


def test_an_idle_drain_needs_no_waiting_and_closing_stops_admitting() -> None:
    drain = Drain()
    assert drain.admitting
    assert asyncio.run(drain.wait(0)) == 0
    drain.close()
    assert not drain.admitting
