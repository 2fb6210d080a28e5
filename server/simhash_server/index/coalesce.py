"""Concurrent calls run as one batched call: the store's fixed cost per HBase call is paid once per batch.

Every Thrift call costs CPU in this process, the gateway and the region server whatever it carries, and on
a busy server that fixed cost is most of a small call
(docs/decisions.md#a-grpcaio-server-whose-concurrent-calls-share-hbase-calls).  A ``Coalescer`` lets
concurrent callers share it: each call queues its item, and a caller that finds a free lane takes the
queued items (its own among them when it can) and runs them as one batch, while the others wait.  Nothing
waits for a batch to fill: a lone caller runs at once, alone, so the added latency without load is nil,
and under load the batches grow by themselves while the lanes are busy.

``Coalescer`` serves threads (the store's own blocking API); ``AsyncCoalescer`` serves the asyncio gRPC
server, whose callers wait on futures instead of each holding a thread, and runs each batch in a thread or,
given a coroutine function, as a task on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Generic, Protocol, TypeVar

from simhash_server import tracing
from simhash_server.index.errors import DeadlineExceeded

__all__ = ["AsyncCoalescer", "Coalescer"]

T = TypeVar("T")
R = TypeVar("R")


class _Queued(Protocol):
    size: int
    deadline: float | None
    taken: bool


Q = TypeVar("Q", bound=_Queued)


class _Batching(Generic[T, R, Q]):
    """What both coalescers hold: the batch function, its limits, the queue and how many batches run."""

    def __init__(
        self,
        run_batch: Callable[[list[T], float | None], Sequence[R]]
        | Callable[[list[T], float | None], Awaitable[Sequence[R]]],
        max_size: int,
        lanes: int,
        observe: Callable[[int], None] | None = None,
    ) -> None:
        if max_size < 1:
            raise ValueError(f"max_size must be >= 1, got {max_size}")
        if lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {lanes}")
        self._run_batch = run_batch
        self._observe = observe  # told each batch's number of calls
        self.max_size, self.lanes = max_size, lanes
        self._busy = 0
        self._queue: deque[Q] = deque()
        self._prepare()

    def _prepare(self) -> None:
        """Set up what the subclass waits with."""


def _take_batch(queue: deque[Q], max_size: int) -> tuple[list[Q], float | None]:
    """Items from the front of the queue up to ``max_size`` (at least one), and the batch's deadline: the
    latest of its callers', None when one has none."""
    batch: list[Q] = []
    total = 0
    while queue and (not batch or total + queue[0].size <= max_size):
        queued = queue.popleft()
        queued.taken = True
        batch.append(queued)
        total += queued.size
    deadlines = [q.deadline for q in batch]
    return batch, None if None in deadlines else max(d for d in deadlines if d is not None)


class _Pending(Generic[T, R]):
    __slots__ = ("deadline", "done", "error", "item", "result", "size", "taken", "wake")

    def __init__(self, item: T, size: int, deadline: float | None, lock: threading.Lock) -> None:
        self.item, self.size, self.deadline = item, size, deadline
        self.wake = threading.Condition(lock)  # one per caller: a finished batch wakes only its own callers
        self.taken = self.done = False
        self.result: R | None = None
        self.error: BaseException | None = None


class Coalescer(_Batching[T, R, _Pending[T, R]]):
    """``submit(item)`` returns ``run_batch(items)[i]`` for its item, sharing the call with concurrent items.

    ``run_batch(items, deadline)`` must return one result per item, in order; an exception it raises is
    raised to every caller in that batch.  A batch holds up to ``max_size`` (summed over the items' sizes;
    an item larger than that runs alone); at most ``lanes`` batches run at once.  The batch's deadline is
    the latest of its callers' (None when one has none); a caller whose own deadline passes first gets
    DeadlineExceeded, while the batch finishes for the others.
    """

    def _prepare(self) -> None:
        self._lock = threading.Lock()

    def submit(self, item: T, size: int = 1, deadline: float | None = None) -> R:
        mine: _Pending[T, R] = _Pending(item, size, deadline, self._lock)
        with self._lock:
            self._queue.append(mine)
            while not mine.done:
                if not mine.taken and self._busy < self.lanes:
                    self._lead()
                    continue
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    if not mine.taken:
                        self._queue.remove(mine)
                        if self._queue and self._busy < self.lanes:  # it may have been woken to lead
                            self._queue[0].wake.notify()
                    raise DeadlineExceeded("the deadline passed while the call waited for HBase")
                mine.wake.wait(remaining)
        if mine.error is not None:
            raise mine.error
        return mine.result  # type: ignore[return-value]

    def _lead(self) -> None:
        """Run one batch from the front of the queue; called and returns with the lock held."""
        batch, deadline = _take_batch(self._queue, self.max_size)
        self._busy += 1
        self._lock.release()
        if self._observe is not None:
            self._observe(len(batch))
        try:
            results: Sequence[R] = self._run_batch([p.item for p in batch], deadline)  # type: ignore[assignment]
            if len(results) != len(batch):
                raise RuntimeError(f"batch of {len(batch)} items gave {len(results)} results")
            for pending, result in zip(batch, results, strict=True):
                pending.result = result
        except BaseException as exc:  # every caller of the batch hears of it
            for pending in batch:
                pending.error = exc
            if not isinstance(exc, Exception):  # KeyboardInterrupt, SystemExit: the leader's own to raise
                raise
        finally:
            self._lock.acquire()
            self._busy -= 1
            for pending in batch:
                pending.done = True
                pending.wake.notify()
            if self._queue:  # a lane is free: the longest waiting caller leads the next batch
                self._queue[0].wake.notify()


class _Waiting(Generic[T, R]):
    __slots__ = ("context", "deadline", "future", "group", "item", "size", "taken")

    def __init__(
        self, item: T | list[T], size: int, deadline: float | None, future: asyncio.Future[Any], group: bool = False
    ) -> None:
        self.item, self.size, self.deadline, self.future = item, size, deadline, future
        self.group = group  # item is a list of items, run in one batch, answered by the list of their results
        self.taken = False
        self.context = tracing.carried()  # the caller's trace, which the batch's spans join


class AsyncCoalescer(_Batching[T, R, _Waiting[T, R]]):
    """``await submit(item)``: Coalescer's batching for asyncio callers.

    ``run_batch`` blocks (it calls HBase), so each batch runs in one of ``lanes`` worker threads; the event
    loop only queues items and hands out results.  A coroutine function ``run_batch`` runs as a task on the
    loop instead (at most ``lanes`` at once).  Deadlines cost no timer per call: gRPC cancels a call's
    task when its deadline passes, and a cancelled caller's item leaves the queue (or, already running, its
    batch finishes for the others).  An item whose deadline has passed when a batch forms gets
    DeadlineExceeded instead of a place in it; a batch's deadline is the latest of its callers'.
    """

    def _prepare(self) -> None:
        run = self._run_batch  # a coroutine function, or an object whose __call__ is one
        self._on_loop = inspect.iscoroutinefunction(run) or inspect.iscoroutinefunction(type(run).__call__)
        self._tasks: set[asyncio.Task[Sequence[R]]] = set()  # the loop holds tasks weakly
        self._threads = ThreadPoolExecutor(max_workers=self.lanes, thread_name_prefix="batch")

    async def submit(self, item: T, size: int = 1, deadline: float | None = None) -> R:
        return await self._wait(_Waiting(item, size, deadline, asyncio.get_running_loop().create_future()))

    async def submit_each(self, items: list[T], deadline: float | None = None) -> list[R]:
        """``[await submit(item) for item in items]`` as one queued call: the items run in one batch (alone
        if they are more than ``max_size``), so a caller's own batch of items shares one batch call instead
        of being spread over several among other callers'."""
        if not items:
            return []
        loop = asyncio.get_running_loop()
        return await self._wait(_Waiting(list(items), len(items), deadline, loop.create_future(), group=True))

    async def _wait(self, mine: _Waiting[T, R]) -> Any:
        loop = asyncio.get_running_loop()
        self._queue.append(mine)
        self._start_batches(loop)
        try:
            return await mine.future
        finally:
            if not mine.taken:  # cancelled while it waited
                self._queue.remove(mine)

    def _drop_expired(self) -> None:
        now = time.monotonic()
        for waiting in [w for w in self._queue if w.deadline is not None and w.deadline <= now]:
            self._queue.remove(waiting)
            waiting.taken = True
            if not waiting.future.done():
                waiting.future.set_exception(DeadlineExceeded("the deadline passed while the call waited for HBase"))

    def _start_batches(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._busy < self.lanes:
            self._drop_expired()
        while self._queue and self._busy < self.lanes:
            batch, deadline = _take_batch(self._queue, self.max_size)
            self._busy += 1
            if self._observe is not None:
                self._observe(len(batch))
            items: list[T] = []
            for w in batch:
                if w.group:
                    items.extend(w.item)  # type: ignore[arg-type]
                else:
                    items.append(w.item)  # type: ignore[arg-type]
            if self._on_loop:
                task = loop.create_task(self._run_batch(items, deadline))  # type: ignore[arg-type]
                self._tasks.add(task)
                task.add_done_callback(lambda done, batch=batch: self._finish_task(loop, batch, done))
            else:
                if batch[0].context is None:
                    running = self._threads.submit(self._run_batch, items, deadline)
                else:  # traced: the batch's spans join its callers' traces
                    running = self._threads.submit(self._traced, items, deadline, [w.context for w in batch])
                running.add_done_callback(lambda done, batch=batch: self._hand_back(loop, batch, done))

    def _traced(self, items: list[T], deadline: float | None, contexts: list[Any]) -> Sequence[R]:
        """In the batch's thread: the batch call in a span of the first caller's trace, linked to the others'."""
        name = getattr(self._run_batch, "__name__", "batch")
        with tracing.linked_span(
            name, contexts, {"simhash.batch.calls": len(contexts), "simhash.batch.items": len(items)}
        ):
            return self._run_batch(items, deadline)  # type: ignore[return-value]

    def _hand_back(self, loop: asyncio.AbstractEventLoop, batch: list[_Waiting[T, R]], done: Future[Any]) -> None:
        """In the batch's thread: have the loop deliver the results."""
        with contextlib.suppress(RuntimeError):  # the loop has closed: the server stopped, nobody waits
            loop.call_soon_threadsafe(self._finish, loop, batch, done)

    def _finish_task(
        self, loop: asyncio.AbstractEventLoop, batch: list[_Waiting[T, R]], done: asyncio.Task[Sequence[R]]
    ) -> None:
        self._tasks.discard(done)
        self._finish(loop, batch, done)

    def _finish(
        self,
        loop: asyncio.AbstractEventLoop,
        batch: list[_Waiting[T, R]],
        done: Future[Any] | asyncio.Future[Sequence[R]],
    ) -> None:
        self._busy -= 1
        error = (
            RuntimeError("the batch was cancelled: the server is stopping") if done.cancelled() else done.exception()
        )
        results = None if error is not None else done.result()
        wanted = sum(w.size if w.group else 1 for w in batch)
        if results is not None and len(results) != wanted:
            error = RuntimeError(f"batch of {wanted} items gave {len(results)} results")
        at = 0
        for waiting in batch:
            count = waiting.size if waiting.group else 1
            at += count
            if waiting.future.done():
                continue
            if error is not None:
                waiting.future.set_exception(error)
            else:
                mine = results[at - count : at] if waiting.group else results[at - count]  # type: ignore[index]
                waiting.future.set_result(mine)
        self._start_batches(loop)

    def close(self) -> None:
        """Stop the worker threads once their running batches end; cancel the batches running on the loop."""
        self._threads.shutdown(wait=False, cancel_futures=True)
        for task in self._tasks:
            task.cancel()
