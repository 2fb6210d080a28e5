"""Coalescer and AsyncCoalescer: concurrent calls share batches; results, errors, deadlines and cancellations
reach the right callers, and nothing waiting is run for a caller that has gone."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pytest

from simhash_server.index.coalesce import AsyncCoalescer, Coalescer
from simhash_server.index.errors import DeadlineExceeded


class Recorder:
    """A batch function that records its batches and can be held at the start of one."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.running = 0
        self.most_running = 0
        self.entered = threading.Semaphore(0)
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Lock()

    def __call__(self, items: list[int], deadline: float | None) -> list[int]:
        with self.lock:
            self.batches.append(list(items))
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        self.entered.release()
        self.gate.wait(10)
        with self.lock:
            self.running -= 1
        if -1 in items:
            raise OSError("HBase is down")
        return [item * 10 for item in items]


def wait_queued(coalescer: Coalescer, count: int) -> None:
    for _ in range(500):
        with coalescer._lock:
            if len(coalescer._queue) >= count:
                return
        time.sleep(0.01)
    raise AssertionError(f"{count} items never queued")


def hold_first(pool: ThreadPoolExecutor, max_size: int, item: int) -> tuple[Recorder, Coalescer, Future]:
    """A one-lane coalescer whose first batch (``item`` alone) is running and held at its gate."""
    run = Recorder()
    coalescer = Coalescer(run, max_size=max_size, lanes=1)
    run.gate.clear()
    first = pool.submit(coalescer.submit, item)
    assert run.entered.acquire(timeout=5)
    return run, coalescer, first


def test_a_lone_call_runs_at_once_alone() -> None:
    run = Recorder()
    coalescer = Coalescer(run, max_size=8, lanes=1)
    assert coalescer.submit(4) == 40
    assert run.batches == [[4]]


def test_calls_arriving_while_a_batch_runs_share_the_next_one() -> None:
    with ThreadPoolExecutor(8) as pool:
        run, coalescer, first = hold_first(pool, 100, 0)
        rest = [pool.submit(coalescer.submit, n) for n in range(1, 8)]
        wait_queued(coalescer, 7)
        run.gate.set()
        assert first.result(5) == 0
        assert [f.result(5) for f in rest] == [n * 10 for n in range(1, 8)]
    assert run.batches[0] == [0]
    assert sorted(run.batches[1]) == list(range(1, 8))  # one batch for the seven that waited
    assert len(run.batches) == 2


def test_batches_respect_max_size_and_an_oversized_item_runs_alone() -> None:
    with ThreadPoolExecutor(8) as pool:
        run, coalescer, first = hold_first(pool, 5, 0)
        big = pool.submit(coalescer.submit, 9, 9)
        wait_queued(coalescer, 1)
        small = [pool.submit(coalescer.submit, n, 2) for n in (1, 2, 3)]
        wait_queued(coalescer, 4)
        run.gate.set()
        assert [f.result(5) for f in (first, big, *small)] == [0, 90, 10, 20, 30]
    sizes = {0: 1, 9: 9, 1: 2, 2: 2, 3: 2}
    assert [9] in run.batches
    for batch in run.batches:
        assert len(batch) == 1 or sum(sizes[i] for i in batch) <= 5


def test_an_error_reaches_every_caller_of_its_batch_only() -> None:
    with ThreadPoolExecutor(4) as pool:
        run, coalescer, first = hold_first(pool, 100, 5)
        doomed = [pool.submit(coalescer.submit, n) for n in (-1, 7)]
        wait_queued(coalescer, 2)
        run.gate.set()
        assert first.result(5) == 50
        for future in doomed:
            with pytest.raises(OSError, match="HBase is down"):
                future.result(5)


def test_a_waiting_call_past_its_deadline_gives_up_and_is_never_run() -> None:
    with ThreadPoolExecutor(2) as pool:
        run, coalescer, first = hold_first(pool, 100, 1)
        with pytest.raises(DeadlineExceeded):
            coalescer.submit(2, deadline=time.monotonic() + 0.05)
        run.gate.set()
        assert first.result(5) == 10
    assert run.batches == [[1]]
    assert not coalescer._queue


def test_lanes_bound_the_batches_running_at_once() -> None:
    run = Recorder()
    coalescer = Coalescer(run, max_size=1, lanes=3)
    run.gate.clear()
    with ThreadPoolExecutor(8) as pool:
        futures = [pool.submit(coalescer.submit, n) for n in range(8)]
        for _ in range(3):
            assert run.entered.acquire(timeout=5)
        wait_queued(coalescer, 5)
        assert run.running == 3
        run.gate.set()
        assert sorted(f.result(5) for f in futures) == [n * 10 for n in range(8)]
    assert run.most_running == 3
    assert len(run.batches) == 8


def test_a_batch_function_must_answer_every_item() -> None:
    coalescer = Coalescer(lambda items, deadline: [], max_size=4, lanes=1)
    with pytest.raises(RuntimeError, match="batch of 1 items gave 0 results"):
        coalescer.submit(1)


@pytest.mark.parametrize(("max_size", "lanes", "message"), [(0, 1, "max_size"), (1, 0, "lanes")])
def test_options_are_checked(max_size: int, lanes: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Coalescer(Recorder(), max_size=max_size, lanes=lanes)


# -- AsyncCoalescer ---------------------------------------------------------------------------------------
def run_async(main: Coroutine[Any, Any, None]) -> None:
    asyncio.run(asyncio.wait_for(main, 20))


async def entered(recorder: Recorder) -> None:
    assert await asyncio.to_thread(recorder.entered.acquire, True, 5)


async def queued(coalescer: AsyncCoalescer, count: int) -> None:
    for _ in range(500):
        if len(coalescer._queue) >= count:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"{count} items never queued")


async def hold_first_async(max_size: int, item: int, lanes: int = 1) -> tuple[Recorder, AsyncCoalescer, asyncio.Task]:
    """A coalescer whose first batch (``item`` alone) is running and held at its gate."""
    recorder = Recorder()
    coalescer: AsyncCoalescer[int, int] = AsyncCoalescer(recorder, max_size=max_size, lanes=lanes)
    recorder.gate.clear()
    first = asyncio.create_task(coalescer.submit(item))
    await entered(recorder)
    return recorder, coalescer, first


# -- AsyncCoalescer with a coroutine batch function: batches run as tasks on the loop ---------------------
class LoopRecorder:
    """A coroutine batch function: records its batches, waits at ``gate``, answers item * 10 (a negative item
    fails its batch)."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.entered = asyncio.Queue[None]()
        self.running = self.most_running = 0

    async def __call__(self, items: list[int], deadline: float | None) -> list[int]:
        self.batches.append(list(items))
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        self.entered.put_nowait(None)
        try:
            await self.gate.wait()
        finally:
            self.running -= 1
        if any(item < 0 for item in items):
            raise OSError("HBase is down")
        return [item * 10 for item in items]


async def hold_first_on_loop(max_size: int, item: int) -> tuple[LoopRecorder, AsyncCoalescer, asyncio.Task]:
    """A coalescer of coroutine batches whose first batch (``item`` alone) is running and held at its gate."""
    recorder = LoopRecorder()
    coalescer: AsyncCoalescer[int, int] = AsyncCoalescer(recorder, max_size=max_size, lanes=1)
    recorder.gate.clear()
    first = asyncio.create_task(coalescer.submit(item))
    await recorder.entered.get()
    return recorder, coalescer, first


def test_async_a_lone_call_runs_at_once_alone() -> None:
    async def main() -> None:
        recorder = Recorder()
        coalescer = AsyncCoalescer(recorder, max_size=8, lanes=1)
        assert await coalescer.submit(4) == 40
        assert recorder.batches == [[4]]
        coalescer.close()

    run_async(main())


@pytest.mark.parametrize("hold_first", [hold_first_async, hold_first_on_loop], ids=["in threads", "on the loop"])
def test_async_calls_arriving_while_a_batch_runs_share_the_next_one_within_max_size(hold_first: Callable) -> None:
    async def main() -> None:
        recorder, coalescer, first = await hold_first(max_size=5, item=0)
        rest = [asyncio.create_task(coalescer.submit(n)) for n in range(1, 8)]
        await queued(coalescer, 7)
        recorder.gate.set()
        assert await first == 0
        assert await asyncio.gather(*rest) == [n * 10 for n in range(1, 8)]
        assert recorder.batches == [[0], [1, 2, 3, 4, 5], [6, 7]]

    run_async(main())


@pytest.mark.parametrize("hold_first", [hold_first_async, hold_first_on_loop], ids=["in threads", "on the loop"])
def test_async_a_callers_items_run_in_one_batch_and_come_back_as_its_list(hold_first: Callable) -> None:
    async def main() -> None:
        recorder, coalescer, first = await hold_first(max_size=5, item=0)
        before = asyncio.create_task(coalescer.submit(1))
        small = asyncio.create_task(coalescer.submit_each([2, 3]))
        large = asyncio.create_task(coalescer.submit_each([4, 5, 6, 7, 8, 9]))  # over max_size: alone
        after = asyncio.create_task(coalescer.submit(10))
        await queued(coalescer, 4)
        recorder.gate.set()
        assert await first == 0
        assert await before == 10
        assert await small == [20, 30]
        assert await large == [40, 50, 60, 70, 80, 90]
        assert await after == 100
        assert recorder.batches == [[0], [1, 2, 3], [4, 5, 6, 7, 8, 9], [10]]
        assert await coalescer.submit_each([]) == []
        assert len(recorder.batches) == 4  # nothing to ask: no batch

    run_async(main())


@pytest.mark.parametrize("hold_first", [hold_first_async, hold_first_on_loop], ids=["in threads", "on the loop"])
def test_async_an_error_in_a_batch_reaches_a_callers_items_as_one(hold_first: Callable) -> None:
    async def main() -> None:
        recorder, coalescer, first = await hold_first(max_size=100, item=5)
        doomed = asyncio.create_task(coalescer.submit_each([7, -1, 8]))
        await queued(coalescer, 1)
        recorder.gate.set()
        assert await first == 50
        with pytest.raises(OSError, match="HBase is down"):
            await doomed

    run_async(main())


@pytest.mark.parametrize("hold_first", [hold_first_async, hold_first_on_loop], ids=["in threads", "on the loop"])
def test_async_an_error_reaches_every_caller_of_its_batch_only(hold_first: Callable) -> None:
    async def main() -> None:
        recorder, coalescer, first = await hold_first(max_size=100, item=5)
        doomed = [asyncio.create_task(coalescer.submit(n)) for n in (-1, 7)]
        await queued(coalescer, 2)
        recorder.gate.set()
        assert await first == 50
        for task in doomed:
            with pytest.raises(OSError, match="HBase is down"):
                await task

    run_async(main())


def test_async_a_call_whose_deadline_passed_while_it_waited_is_never_run() -> None:
    async def main() -> None:
        recorder, coalescer, first = await hold_first_async(max_size=100, item=1)
        late = asyncio.create_task(coalescer.submit(2, deadline=time.monotonic() + 0.05))
        kept = asyncio.create_task(coalescer.submit(3, deadline=time.monotonic() + 60))
        await queued(coalescer, 2)
        await asyncio.sleep(0.1)
        recorder.gate.set()
        assert await first == 10
        with pytest.raises(DeadlineExceeded):
            await late
        assert await kept == 30
        assert recorder.batches == [[1], [3]]
        assert not coalescer._queue

    run_async(main())


def test_async_a_cancelled_waiting_call_is_never_run() -> None:
    async def main() -> None:
        recorder, coalescer, first = await hold_first_async(max_size=100, item=1)
        gone = asyncio.create_task(coalescer.submit(2))
        kept = asyncio.create_task(coalescer.submit(3))
        await queued(coalescer, 2)
        gone.cancel()
        with pytest.raises(asyncio.CancelledError):
            await gone
        recorder.gate.set()
        assert (await first, await kept) == (10, 30)
        assert recorder.batches == [[1], [3]]

    run_async(main())


def test_async_a_running_call_cancelled_at_its_deadline_leaves_its_batch_to_the_others() -> None:
    turns = threading.Semaphore(0)  # each batch waits for its own turn
    batches: list[list[int]] = []

    def one_turn_each(items: list[int], deadline: float | None) -> list[int]:
        batches.append(list(items))
        assert turns.acquire(timeout=10)
        return [item * 10 for item in items]

    async def main() -> None:
        coalescer = AsyncCoalescer(one_turn_each, max_size=100, lanes=1)
        first = asyncio.create_task(coalescer.submit(1))
        await asyncio.sleep(0)
        late = asyncio.create_task(coalescer.submit(2))
        patient = asyncio.create_task(coalescer.submit(3))
        await queued(coalescer, 2)
        turns.release()
        assert await first == 10
        await asyncio.sleep(0.05)
        assert batches == [[1], [2, 3]]  # running, both taken
        late.cancel()  # as gRPC does when a call's deadline passes
        with pytest.raises(asyncio.CancelledError):
            await late
        turns.release()
        assert await patient == 30

    run_async(main())


def test_async_lanes_bound_the_batches_running_at_once() -> None:
    async def main() -> None:
        recorder = Recorder()
        coalescer = AsyncCoalescer(recorder, max_size=1, lanes=3)
        recorder.gate.clear()
        tasks = [asyncio.create_task(coalescer.submit(n)) for n in range(8)]
        for _ in range(3):
            await entered(recorder)
        await queued(coalescer, 5)
        assert recorder.running == 3
        recorder.gate.set()
        assert sorted(await asyncio.gather(*tasks)) == [n * 10 for n in range(8)]
        assert recorder.most_running == 3
        assert len(recorder.batches) == 8

    run_async(main())


def test_async_a_batch_function_must_answer_every_item() -> None:
    async def main() -> None:
        coalescer = AsyncCoalescer(lambda items, deadline: [], max_size=4, lanes=1)
        with pytest.raises(RuntimeError, match="batch of 1 items gave 0 results"):
            await coalescer.submit(1)

    run_async(main())


@pytest.mark.parametrize(("max_size", "lanes", "message"), [(0, 1, "max_size"), (1, 0, "lanes")])
def test_async_options_are_checked(max_size: int, lanes: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AsyncCoalescer(lambda items, deadline: items, max_size=max_size, lanes=lanes)


def test_async_a_batch_that_ends_after_its_loop_closed_is_dropped_quietly(caplog) -> None:
    recorder = Recorder()
    recorder.gate.clear()

    async def main() -> AsyncCoalescer:
        coalescer = AsyncCoalescer(recorder, max_size=8, lanes=1)
        asyncio.get_running_loop().create_task(coalescer.submit(1))
        await entered(recorder)
        return coalescer  # asyncio.run cancels the waiting caller and closes the loop

    coalescer = asyncio.run(main())
    recorder.gate.set()
    coalescer._threads.shutdown(wait=True)
    assert recorder.batches == [[1]]
    assert not [r for r in caplog.records if r.levelname == "ERROR"], caplog.text


def test_loop_batches_run_on_the_loop_and_start_no_thread() -> None:
    async def main() -> None:
        recorder = LoopRecorder()
        coalescer: AsyncCoalescer[int, int] = AsyncCoalescer(recorder, max_size=8, lanes=1)
        assert await coalescer.submit(4) == 40
        assert recorder.batches == [[4]]
        assert coalescer._threads._threads == set()  # no batch thread was ever started
        coalescer.close()

    run_async(main())


def test_loop_batches_lanes_bound_the_batches_running_at_once() -> None:
    async def main() -> None:
        recorder = LoopRecorder()
        coalescer: AsyncCoalescer[int, int] = AsyncCoalescer(recorder, max_size=1, lanes=3)
        recorder.gate.clear()
        tasks = [asyncio.create_task(coalescer.submit(n)) for n in range(8)]
        for _ in range(3):
            await recorder.entered.get()
        await queued(coalescer, 5)
        assert recorder.running == 3
        recorder.gate.set()
        assert sorted(await asyncio.gather(*tasks)) == [n * 10 for n in range(8)]
        assert recorder.most_running == 3 and len(recorder.batches) == 8

    run_async(main())


def test_loop_batches_closing_cancels_a_running_batch_and_its_callers_hear_why() -> None:
    async def main() -> None:
        recorder, coalescer, caller = await hold_first_on_loop(max_size=8, item=1)
        coalescer.close()
        with pytest.raises(RuntimeError, match="server is stopping"):
            await caller
        assert recorder.running == 0 and not coalescer._tasks

    run_async(main())
