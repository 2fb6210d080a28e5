"""Bulk load's worker processes: each writes its share of every chunk with the server's store code.

Workers are spawned (no inherited Thrift sockets or locks), each with its own connections and a bounded
task queue (two batches: memory stays flat).  A batch is idempotent, so one that HBase did not take is
retried with backoff before the worker reports an error; a worker whose loader is gone exits within a
second, finishing at most the batch in hand.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import queue
import random
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from simhash_server.bulk.checkpoint import BulkLoadError, lock
from simhash_server.bulk.normalized import stored_document
from simhash_server.index.errors import DeadlineExceeded, Unavailable
from simhash_server.index.store import IndexStore, StoreConfig

__all__ = ["Workers"]

_BATCH_ATTEMPTS = 6  # a batch is idempotent: retried on HBase errors with backoff before the load gives up
# What a later attempt can cure.  Anything else (a refused request, corrupt data) stops the load at once.
_TRANSIENT = (Unavailable, DeadlineExceeded)


def _worker(index: int, config: StoreConfig, lock_path: Path, tasks: Any, results: Any, parent: int) -> None:
    """Write batches until told to stop (None) or the loader is gone (a killed loader leaves no workers)."""
    lock_fd = lock(lock_path, shared=True, timeout=10.0)  # released when this process exits
    try:
        store = IndexStore(replace(config, pool_size=2))
        store.open()
    except Exception as exc:  # noqa: BLE001  # reported to the loader, which stops the load
        results.put(("error", index, -1, f"{type(exc).__name__}: {exc}"))
        return
    try:
        while True:
            try:
                task = tasks.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent:
                    return
                continue
            if task is None or os.getppid() != parent:
                return
            seq, items = task
            documents = [
                stored_document(doc, fp, text, store.recipe.version, seen, sketch)
                for doc, fp, text, seen, sketch in items
            ]
            for attempt in range(_BATCH_ATTEMPTS):
                try:
                    docs = store.index_many(documents)
                    break
                except _TRANSIENT as exc:
                    if attempt + 1 == _BATCH_ATTEMPTS or os.getppid() != parent:
                        results.put(("error", index, seq, f"{exc} (after {_BATCH_ATTEMPTS} attempts)"))
                        return
                    time.sleep(min(2.0**attempt, 30.0) * random.uniform(0.5, 1.0))
            rows = 10 * len({d.fingerprint for d in documents}) + 2 * docs  # drawer rows + fp2docs + docs
            results.put(("done", index, seq, docs, rows))
    finally:
        store.close()
        os.close(lock_fd)


class Workers:
    def __init__(self, count: int, config: StoreConfig, lock_path: Path) -> None:
        ctx = mp.get_context("spawn")  # no inherited Thrift sockets or locks
        self.tasks = [ctx.Queue(maxsize=2) for _ in range(count)]  # bounded: memory stays flat
        self.results = ctx.Queue()
        self.procs = [
            ctx.Process(
                target=_worker,
                args=(i, config, lock_path, self.tasks[i], self.results, os.getpid()),
                name=f"bulk-load-{i}",
                daemon=True,
            )
            for i in range(count)
        ]
        for p in self.procs:
            p.start()

    def send(self, worker: int, task: Any, on_idle: Callable[[], None]) -> None:
        while True:
            try:
                self.tasks[worker].put(task, timeout=0.2)
                return
            except queue.Full:
                on_idle()

    def check_alive(self) -> None:
        for p in self.procs:
            if not p.is_alive():
                raise BulkLoadError(f"worker {p.name} died (exit code {p.exitcode})")

    def stop(self, timeout: float = 30.0) -> None:
        for q in self.tasks:
            with contextlib.suppress(Exception):
                q.put(None, timeout=1.0)
        deadline = time.monotonic() + timeout
        for p in self.procs:
            p.join(max(deadline - time.monotonic(), 0.1))
            if p.is_alive():
                p.kill()

    def kill(self) -> None:
        for p in self.procs:
            if p.is_alive():
                p.kill()
