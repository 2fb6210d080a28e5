"""Coalescer: concurrent submits share batches; results, errors and deadlines reach the right callers."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

from simhash_server.coalesce import Coalescer, DeadlinePassed


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
        with pytest.raises(DeadlinePassed):
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
