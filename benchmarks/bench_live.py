"""Query latency of a live index: written through the Index path, never compacted by hand, side by side.

The issue's new user: `make run` (HBase heap 2 GiB), documents written through Index, then queries through
the Python client while HBase flushes and compacts as it will.  Here one such HBase runs per garbage
collector (``--gcs``, default G1 and ZGC), each with one index, on the machine at once.  The same N documents
(random fingerprints) go to every index through ``IndexStore.index_many``, batches alternating.  Then the same
probes (half stored fingerprints 0-3 bits away, half random) ask every index, in process and through the
Python client of a ``serve`` process each, every probe all ways in an order that rotates, in states:
1. ``written``: at once after the last write (HBase's flushes and compactions of the burst still running);
2. ``writing``: while a writer keeps indexing ``--write-rate`` documents per second into each index;
3. ``compacted``: after a major compaction (the state the published figures were measured in).
Per state also: store files per drawer region, and the region server JVM's pauses (its safepoint log: every
stop-the-world pause, whatever the collector) in milliseconds per second and the longest.  An earlier run
compared block-cache settings instead (cache on write, prefetch on open): no difference (docs/benchmarks.md).
var/live is removed before and after (``--keep`` keeps it); results go to var/live-results.json.

    .venv/bin/python benchmarks/bench_live.py                  # or: make bench-live
    .venv/bin/python benchmarks/bench_live.py --documents 2e5  # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from bench_query import percentile
from bench_scale import probes, serving

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "var" / "live"
PREFIX = "live"
WAYS = ("store", "client")
_PAUSE = re.compile(rb"Safepoint .*Total: (\d+) ns")
_STALL = re.compile(rb"Allocation Stall \(.*\) ([\d.]+)ms")  # ZGC: one thread waits for memory, no safepoint


class Live:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.hbases = {
            gc: LocalHBase(var_dir=WORK / gc, ports=Ports.free(), master_heap_mb=args.heap_mb, gc=gc)
            for gc in args.gcs.split(",")
        }
        self.tables = index_tables(PREFIX)
        self.stored: list[int] = []

    def config(self, gc: str) -> StoreConfig:
        ports = self.hbases[gc].ports
        return StoreConfig(thrift_port=ports.thrift, thrift2_port=ports.thrift2, table_prefix=PREFIX)

    def start(self) -> None:
        for local in self.hbases.values():
            local.start()
            client = connect("127.0.0.1", local.ports.thrift2, 120_000)
            apply_schema(client, self.tables)
            client.close()

    def stop(self) -> None:
        for local in self.hbases.values():
            local.stop()

    @contextlib.contextmanager
    def stores(self) -> Iterator[dict[str, IndexStore]]:
        with contextlib.ExitStack() as stack:
            yield {gc: stack.enter_context(IndexStore(self.config(gc))) for gc in self.hbases}

    def write(self, count: int, seed: int, batch: int = 1000) -> dict[str, float]:
        """``count`` documents of random fingerprints into every index, batches alternating: seconds in each."""
        fps = np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)
        docs = [Document(f"d{seed}-{i}", int(fp)) for i, fp in enumerate(fps)]
        self.stored.extend(int(fp) for fp in fps[:100_000])
        spent = dict.fromkeys(self.hbases, 0.0)
        with self.stores() as stores:
            for lo in range(0, count, batch):
                for gc, store in stores.items():
                    began = time.perf_counter()
                    store.index_many(docs[lo : lo + batch])
                    spent[gc] += time.perf_counter() - began
        return spent

    @contextlib.contextmanager
    def writing(self, rate: int) -> Iterator[dict[str, int]]:
        """A writer indexing ``rate`` documents per second into every index (10 batches a second) meanwhile."""
        stop = threading.Event()
        done = {"documents": 0}

        def run() -> None:
            rng = np.random.default_rng(99)
            with self.stores() as stores:
                n, tick = 0, time.monotonic()
                while not stop.is_set():
                    fps = rng.integers(0, 2**64, rate // 10, dtype=np.uint64)
                    docs = [Document(f"w{n + i}", int(fp)) for i, fp in enumerate(fps)]
                    for store in stores.values():
                        store.index_many(docs)
                    n += len(docs)
                    done["documents"] = n
                    tick += 0.1  # a pace, not a wait for a condition
                    stop.wait(max(0.0, tick - time.monotonic()))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            yield done
        finally:
            stop.set()
            thread.join(60)

    def files_per_region(self) -> dict[str, float]:
        out = {}
        for gc, local in self.hbases.items():
            table = local.var_dir / "data" / "data" / "default" / self.tables.drawers.name
            counts = [sum(1 for f in (r / "d").iterdir() if f.is_file()) for r in table.iterdir() if (r / "d").is_dir()]
            out[gc] = statistics.mean(counts) if counts else 0.0
        return out

    def pause_log_sizes(self) -> dict[str, int]:
        return {gc: local.gc_log("master").stat().st_size for gc, local in self.hbases.items()}

    def pauses(self, since: dict[str, int], seconds: float) -> dict[str, dict[str, float]]:
        """The region server JVM's stop-the-world pauses logged after ``since``: ms per second, longest ms."""
        out = {}
        for gc, local in self.hbases.items():
            with open(local.gc_log("master"), "rb") as f:
                f.seek(since[gc])
                lines = f.readlines()
            ms = [int(m.group(1)) / 1e6 for line in lines if (m := _PAUSE.search(line))]
            stalls = [float(m.group(1)) for line in lines if (m := _STALL.search(line))]
            out[gc] = {
                "ms_per_s": sum(ms) / seconds,
                "max_ms": max(ms, default=0.0),
                "count": len(ms),
                "stall_ms_per_s": sum(stalls) / seconds,
                "max_stall_ms": max(stalls, default=0.0),
            }
        return out

    def compact(self) -> float:
        began = time.monotonic()
        names = [self.tables.drawers.name, self.tables.fp2docs.name, self.tables.docs.name]
        for local in self.hbases.values():
            local.flush(names, timeout=3600, compact=True)
        return time.monotonic() - began


@contextlib.contextmanager
def servers(live: Live) -> Iterator[dict[str, SimHashClient]]:
    """A serve process on each HBase's index, SERVING: their clients by collector."""
    with contextlib.ExitStack() as stack:
        yield {gc: stack.enter_context(serving(local, PREFIX)) for gc, local in live.hbases.items()}


def measure(live: Live, asked: list[int], warmup: list[int]) -> dict[str, dict[str, float]]:
    """p50/p99 of every (HBase, way), the probes asked every way in a rotating order; pauses meanwhile."""
    timings: dict[tuple[str, str], list[float]] = {(gc, w): [] for gc in live.hbases for w in WAYS}
    with live.stores() as stores, servers(live) as clients:
        calls = {
            (p, w): (stores[p].query if w == "store" else lambda fp, c=clients[p]: c.query(simhash=fp))
            for p, w in timings
        }
        for fp in warmup:
            for call in calls.values():
                call(fp)
        order = list(calls)
        since, began_all = live.pause_log_sizes(), time.monotonic()
        for i, fp in enumerate(asked):
            shift = i % len(order)
            for key in order[shift:] + order[:shift]:
                began = time.perf_counter()
                calls[key](fp)
                timings[key].append(time.perf_counter() - began)
        pauses = live.pauses(since, time.monotonic() - began_all)
    out: dict[str, dict[str, float]] = {
        f"{p} {w}": {"p50_ms": 1000 * percentile(v, 0.5), "p99_ms": 1000 * percentile(v, 0.99)}
        for (p, w), v in timings.items()
    }
    return out | {f"{gc} pauses": p for gc, p in pauses.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=lambda s: int(float(s)), default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--write-rate", type=int, default=500, help="documents/s per index in the writing state")
    parser.add_argument("--heap-mb", type=int, default=2048, help="HBase heap (make run's default)")
    parser.add_argument("--gcs", default="G1,ZGC", help="one HBase per garbage collector, side by side")
    parser.add_argument("--keep", action="store_true", help="keep var/live afterwards")
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    live = Live(args)
    live.start()
    results: dict[str, object] = {"args": vars(args)}
    try:
        results["write_s"] = live.write(args.documents, seed=1)
        print(f"wrote {args.documents:,} documents into each index: {results['write_s']} s", flush=True)
        asked = probes(args.queries, seed=1, stored=live.stored)
        warmup = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=args.warmup, dtype=np.uint64)]
        states: dict[str, object] = {}
        files = live.files_per_region()
        states["written"] = {"files": files, "latency": measure(live, asked, warmup)}
        print(f"written: {json.dumps(states['written'])}", flush=True)
        with live.writing(args.write_rate) as done:
            files = live.files_per_region()
            latency = measure(live, asked, warmup)
            states["writing"] = {"files": files, "latency": latency, "documents": done["documents"]}
        print(f"writing: {json.dumps(states['writing'])}", flush=True)
        results["compact_s"] = live.compact()
        states["compacted"] = {"files": live.files_per_region(), "latency": measure(live, asked, warmup)}
        print(f"compacted: {json.dumps(states['compacted'])}", flush=True)
        results["states"] = states
    finally:
        live.stop()
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "live-results.json").write_text(json.dumps(results, indent=1))
    report(results)


def report(results: dict[str, object]) -> None:
    states, args = results["states"], results["args"]
    assert isinstance(states, dict) and isinstance(args, dict)
    gcs = args["gcs"].split(",")
    print(f"\n{os.cpu_count()} cores; HBase heap {args['heap_mb']} MiB; {args['documents']:,} documents")
    for gc, seconds in results["write_s"].items():  # type: ignore[attr-defined]
        print(f"- writing them through {gc}'s HBase: {seconds:,.0f} s, {args['documents'] / seconds:,.0f} documents/s")
    print("| state | GC | drawer files/region | store p50 | store p99 | client p50 | client p99 | "
          "RS pauses ms/s | longest pause ms | allocation stalls ms/s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for state, r in states.items():
        lat = r["latency"]
        for gc in gcs:
            pauses = lat[f"{gc} pauses"]
            print(
                f"| {state} | {gc} | {r['files'][gc]:.1f} | {lat[f'{gc} store']['p50_ms']:.2f} | "
                f"{lat[f'{gc} store']['p99_ms']:.2f} | {lat[f'{gc} client']['p50_ms']:.2f} | "
                f"{lat[f'{gc} client']['p99_ms']:.2f} | {pauses['ms_per_s']:.1f} | {pauses['max_ms']:.1f} | "
                f"{pauses['stall_ms_per_s']:.1f} |"
            )
        base = lat[f"{gcs[0]} client"]
        for gc in gcs[1:]:
            other = lat[f"{gc} client"]
            print(
                f"| {state} | {gc}/{gcs[0]} client | | | | {other['p50_ms'] / base['p50_ms']:.2f}x | "
                f"{other['p99_ms'] / base['p99_ms']:.2f}x | | | |"
            )


if __name__ == "__main__":
    main()
