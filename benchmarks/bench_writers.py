"""What the same-id guard costs writers (index/writes.py: one timestamp per call, a writer's entry in the docs
row, and a second read of the docs rows to settle), side by side with the write path before it (read the
records, write the steps, nothing after; Delete calls not coalesced), on the local HBase of `make run`.

Two indexes, one per path, the same workloads alternating round by round, each path first in turn:
- single `Index` calls by fingerprint from --callers threads, through the store's write coalescer as in
  `serve` (documents/s and p50/p99 latency), a third of them moving an id already stored;
- `IndexBatch`-sized calls of --batch documents (documents/s);
- `Delete` of single ids from --callers threads (calls/s);
- single `Index` calls by fingerprint through a `simhash-index serve` of each path, from ghz at --callers
  (--service-calls a round, a third of them moving an id already stored): what a caller of the service sees
  (calls/s, and CPU µs a call of the server, the region server and the Thrift gateway). The path before the
  guard is served by this script (`--serve-unguarded`), the server's own code with the write path above.

    make bench-writers           # or: .venv/bin/python benchmarks/bench_writers.py --rounds 5
"""

from __future__ import annotations

import argparse
import collections
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


def serve_unguarded(serve_args: list[str]) -> None:
    """`simhash-index serve` with the write path before the guard (bench_grpc starts it as a server)."""
    from simhash_server.cli import main as cli

    IndexStore._guarded = Unguarded._guarded  # type: ignore[method-assign]
    IndexStore.delete = Unguarded.delete  # type: ignore[method-assign]
    cli(["serve", *serve_args])


def through_service(store: IndexStore, unguarded: bool, tag: str, args: argparse.Namespace) -> dict:
    """Single Index calls through a server of one path on ``store``'s index, from ghz (bench_grpc.run_ghz)."""
    import bench_grpc

    from simhash_deploy import LocalHBase, Ports

    env = {
        **os.environ,
        "SIMHASH_TABLE_PREFIX": store.config.table_prefix,
        "SIMHASH_HBASE_HOST": args.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(args.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(args.thrift2_port),
    }
    rng = random.Random(tag)
    calls = [
        {"doc_id": f"{tag}-m{n % args.callers}" if n % 3 == 0 else f"{tag}-{n}", "simhash": str(rng.getrandbits(64))}
        for n in range(args.service_calls)
    ]
    port = Ports.free().thrift
    command = [sys.executable, __file__, "--serve-unguarded"] if unguarded else None
    server = bench_grpc.serve(port, env, "", command)
    try:
        pids = {"server": server.pid} | {name: s["pid"] for name, s in LocalHBase().status().items() if s["pid"]}
        ghz = bench_grpc.ghz_binary()
        return bench_grpc.run_ghz(ghz, port, "Index", calls, args.callers, args.service_calls, pids)
    finally:
        server.terminate()
        server.wait(30)


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
    parser.add_argument(
        "--service-calls", type=int, default=4800, help="Index calls through `serve` per round and path (0: none)."
    )
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
    served: dict[str, list[dict]] = {p: [] for p in stores}
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
            if args.service_calls:
                served[path].append(through_service(store, path != "guarded", f"s{r}", args))
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
    if args.service_calls:
        print_service(served, args.rounds)


def print_service(served: dict[str, list[dict]], rounds: int) -> None:
    names = list(next(iter(served.values()))[0]["cpu"])
    rows = []
    for path, results in served.items():
        cpu = {n: statistics.median(r["cpu"][n] for r in results) for n in names}
        p50, p99 = (statistics.median(r[q] for r in results) for q in ("p50", "p99"))
        rows.append(
            [
                path,
                f"{statistics.median(r['rps'] for r in results):,.0f}",
                f"{p50:.2f} / {p99:.2f}",
                " / ".join(f"{cpu[n]:.0f}" for n in names),
                f"{sum(cpu.values()):.0f}",
                str(dict(sum((collections.Counter(r["codes"]) for r in results), collections.Counter()))),
            ]
        )
    print("\nThrough `serve`, single Index calls by fingerprint from ghz:")
    header = ["path", "Index calls/s", "p50 / p99 ms", f"CPU µs a call ({' / '.join(names)})", "all", "statuses"]
    print(table(header, rows))
    guarded, plain = served
    cost = statistics.median(r["rps"] for r in served[plain]) / statistics.median(r["rps"] for r in served[guarded])
    print(f"write cost of the guard through the service, index: {cost:.2f}x (median of {rounds} rounds)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve-unguarded"]:
        serve_unguarded(sys.argv[2:])
    else:
        main()
