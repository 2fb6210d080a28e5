"""What the same-id guard costs writers (index/writes.py: one timestamp per call, a writer's entry in the docs
row, and a second read of the docs rows to settle), side by side with the write path before it (read the
records, write the steps, nothing after; Delete calls not coalesced), on the local HBase of `make run`.

Two indexes, one per path, the same workloads alternating round by round, each path first in turn:
- single `Index` calls by fingerprint from --callers threads, through the store's write coalescer as in
  `serve` (documents/s and p50/p99 latency), a third of them moving an id already stored;
- `IndexBatch`-sized calls of --batch documents (documents/s);
- `Delete` of single ids from --callers threads (calls/s).

    make bench-writers           # or: .venv/bin/python benchmarks/bench_writers.py --rounds 5
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import happybase

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile, table

from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.store import IndexStore, StoreConfig
from simhash_server.index.writes import ENTRY_PREFIX, Record, Step


class Unguarded(IndexStore):
    """The write path before the guard: the records read, the steps written at HBase's clock, no entry, no
    second read; and each Delete call on its own (not coalesced)."""

    def delete(self, doc_ids, deadline=None):  # type: ignore[no-untyped-def]
        docs = list(dict.fromkeys(d.encode() for d in doc_ids))
        return self.delete_many([docs], deadline)[0]

    def _guarded(self, docs, steps, deadline, old=None, seen=None):  # type: ignore[no-untyped-def]
        if old is None:
            stored = self._stored_fingerprints(docs, deadline)
            old = {doc: Record(stored.get(doc)) for doc in docs}
        written = steps(old, ENTRY_PREFIX, 0)
        self.write_steps([_without_entries(step) for step in written], deadline)


def _without_entries(step: Step) -> Step:
    puts = [(row, {c: v for c, v in data.items() if not c.startswith(ENTRY_PREFIX)}) for row, data in step.puts]
    return step._replace(puts=[(row, data) for row, data in puts if data])


def open_store(kind: type[IndexStore], prefix: str, args: argparse.Namespace) -> IndexStore:
    tables = index_tables(prefix)
    client = connect(args.host, args.thrift2_port)
    apply_schema(client, tables)
    client.close()
    store = kind(StoreConfig(args.host, args.thrift_port, args.thrift2_port, prefix, pool_size=16), tables)
    store.open()
    return store


def threaded(callers: int, calls: int, work: Callable[[int, int], None]) -> tuple[float, list[float]]:
    """Seconds for ``callers`` threads making ``calls`` calls each, and every call's latency."""
    latencies: list[float] = []
    lock = threading.Lock()

    def caller(n: int) -> None:
        mine = []
        for c in range(calls):
            began = time.perf_counter()
            work(n, c)
            mine.append(time.perf_counter() - began)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(callers)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--callers", type=int, default=32)
    parser.add_argument("--calls", type=int, default=150, help="Single calls per caller per round.")
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--batches", type=int, default=20, help="Batch calls per round.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    args = parser.parse_args()
    run = os.getpid()
    stores = {
        "guarded": open_store(IndexStore, f"bench_w{run}_guarded", args),
        "before the guard": open_store(Unguarded, f"bench_w{run}_plain", args),
    }
    rng = random.Random(run)
    rates: dict[tuple[str, str], list[float]] = {(p, w): [] for p in stores for w in ("index", "batch", "delete")}
    single: dict[str, list[float]] = {p: [] for p in stores}
    for r in range(args.rounds):
        for path in list(stores)[:: 1 if r % 2 else -1]:
            store = stores[path]
            moving = [f"r{r}-c{n}-m" for n in range(args.callers)]
            store.index_many([(doc, rng.getrandbits(64)) for doc in moving])

            def index(n: int, c: int, store: IndexStore = store, moving: list[str] = moving, r: int = r) -> None:
                doc = moving[n] if c % 3 == 0 else f"r{r}-c{n}-{c}"
                store.index(doc, random.getrandbits(64))

            seconds, latencies = threaded(args.callers, args.calls, index)
            rates[(path, "index")].append(args.callers * args.calls / seconds)
            single[path].extend(latencies)

            began = time.perf_counter()
            for b in range(args.batches):
                store.index_many([(f"r{r}-b{b}-{i}", rng.getrandbits(64)) for i in range(args.batch)])
            rates[(path, "batch")].append(args.batches * args.batch / (time.perf_counter() - began))

            def delete(n: int, c: int, store: IndexStore = store, r: int = r) -> None:
                store.delete([f"r{r}-c{n}-{c}"])

            seconds, _ = threaded(args.callers, args.calls, delete)
            rates[(path, "delete")].append(args.callers * args.calls / seconds)
        print(f"round {r + 1}/{args.rounds} done", flush=True)

    conn = happybase.Connection(args.host, args.thrift_port, timeout=60_000)
    for store in stores.values():
        store.close()
        for spec in store.tables.all():
            conn.delete_table(spec.name, disable=True)
    conn.close()

    rows = []
    for path in stores:
        rows.append(
            [
                path,
                f"{statistics.median(rates[(path, 'index')]):,.0f}",
                f"{percentile(single[path], 0.5) * 1e3:.2f} / {percentile(single[path], 0.99) * 1e3:.2f}",
                f"{statistics.median(rates[(path, 'batch')]):,.0f}",
                f"{statistics.median(rates[(path, 'delete')]):,.0f}",
            ]
        )
    print()
    header = ["path", "Index calls/s", "Index p50 / p99 ms", f"batch of {args.batch}: docs/s", "Delete calls/s"]
    print(table(header, rows))
    guarded, plain = stores
    for work in ("index", "batch", "delete"):
        cost = statistics.median(rates[(plain, work)]) / statistics.median(rates[(guarded, work)])
        print(f"write cost of the guard, {work}: {cost:.2f}x (median of {args.rounds} rounds)")


if __name__ == "__main__":
    main()
