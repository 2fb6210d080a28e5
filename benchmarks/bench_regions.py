"""Drawer regions on one region server, side by side: the same documents in indexes of 2 and 1 regions (`--regions`).

One HBase (`make run`'s settings: G1, 2 GiB heap) holds one index per entry of ``--regions``.  The same N
documents (random fingerprints) go into each through ``IndexStore.index_many``, a batch to each in turn, so
every index is written under the same flushes and compactions; each index's batches are timed.  Then the
same probes (half stored fingerprints 0-3 bits away, half random) are asked of every index, in process
(store) and through the Python client of a ``serve`` per index, each index first in turn, in the three
states of bench_live: written, writing (a writer adds ``--write-rate`` documents/s to each index), and
compacted.  Measured side by side, so the machine's speed, which drifts between runs here, is the same for
every index.  var/regions is removed before and after (``--keep`` keeps it); results go to
var/regions-results.json.

    .venv/bin/python benchmarks/bench_regions.py        # or: make bench-regions
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable
from multiprocessing.sharedctypes import Synchronized

import numpy as np
from bench_live import ROOT, STATES, writers
from bench_query import percentile
from bench_scale import probes, serving

from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

WORK = ROOT / "var" / "regions"
WAYS = ("store", "client")


def prefix(regions: int) -> str:
    return f"regions{regions}"


class Indexes:
    """One HBase, one index per region count."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args, self.counts = args, args.regions
        self.local = LocalHBase(var_dir=WORK, ports=Ports.free(), master_heap_mb=args.heap_mb, gc="G1")

    def config(self, regions: int) -> StoreConfig:
        ports = self.local.ports
        return StoreConfig(thrift_port=ports.thrift, thrift2_port=ports.thrift2, table_prefix=prefix(regions))

    def start(self) -> None:
        self.local.start()
        client = connect("127.0.0.1", self.local.ports.thrift2, 120_000)
        for regions in self.counts:
            apply_schema(client, index_tables(prefix(regions), drawer_regions=regions))
        client.close()

    def write(self, count: int, seed: int, batch: int = 1000) -> dict[int, float]:
        """``count`` documents into every index, a batch to each in turn: the seconds each index's took."""
        fps = np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)
        seconds = dict.fromkeys(self.counts, 0.0)
        with contextlib.ExitStack() as stack:
            stores = {r: stack.enter_context(IndexStore(self.config(r))) for r in self.counts}
            for n, lo in enumerate(range(0, count, batch)):
                documents = [Document(f"d{seed}-{i}", int(fp)) for i, fp in enumerate(fps[lo : lo + batch], lo)]
                shift = n % len(self.counts)
                for regions in self.counts[shift:] + self.counts[:shift]:
                    began = time.perf_counter()
                    stores[regions].index_many(documents)
                    seconds[regions] += time.perf_counter() - began
        return seconds

    def writing(self, rate: int) -> contextlib.AbstractContextManager[list[Synchronized[int]]]:
        """A writer per index indexing ``rate`` documents per second into it meanwhile."""
        return writers([self.config(r) for r in self.counts], rate)

    def compact(self) -> None:
        names = []
        for r in self.counts:
            tables = index_tables(prefix(r), drawer_regions=r)
            names += [tables.drawers.name, tables.fp2docs.name, tables.docs.name]
        self.local.flush(names, timeout=3600, compact=True)


def measure(indexes: Indexes, asked: list[int], warmup: list[int]) -> dict[str, float]:
    """p50/p99 per index and way, every probe asked of each index both ways, the order rotating."""
    timings: dict[tuple[int, str], list[float]] = {(r, w): [] for r in indexes.counts for w in WAYS}
    with contextlib.ExitStack() as stack:
        calls: dict[tuple[int, str], Callable[[int], object]] = {}
        for r in indexes.counts:
            store = stack.enter_context(IndexStore(indexes.config(r)))
            client = stack.enter_context(serving(indexes.local, prefix(r)))
            calls[(r, "store")] = store.query
            calls[(r, "client")] = lambda fp, client=client: client.query(simhash=fp)
        order = list(calls)
        for fp in warmup:
            for call in calls.values():
                call(fp)
        for i, fp in enumerate(asked):
            shift = i % len(order)
            for key in order[shift:] + order[:shift]:
                began = time.perf_counter()
                calls[key](fp)
                timings[key].append(time.perf_counter() - began)
    return {f"{r} {w} {q}": 1000 * percentile(v, q / 100) for (r, w), v in timings.items() for q in (50, 99)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--regions", type=lambda s: [int(x) for x in s.split(",")], default=[2, 1], help="drawer regions per index"
    )
    parser.add_argument("--documents", type=lambda s: int(float(s)), default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--write-rate", type=int, default=250, help="documents/s into each index while writing")
    parser.add_argument("--heap-mb", type=int, default=2048, help="HBase heap (make run's default)")
    parser.add_argument("--keep", action="store_true", help="keep var/regions afterwards")
    args = parser.parse_args()
    if len(set(args.regions)) != len(args.regions) or min(args.regions) < 1:
        parser.error(f"--regions: distinct counts of at least 1, got {args.regions}")
    shutil.rmtree(WORK, ignore_errors=True)
    indexes = Indexes(args)
    indexes.start()
    results: dict[str, object] = {"args": vars(args)}
    try:
        seconds = indexes.write(args.documents, seed=1)
        results["documents/s"] = {str(r): args.documents / s for r, s in seconds.items()}
        print(f"written: {json.dumps(results['documents/s'])}", flush=True)
        stored = [int(fp) for fp in np.random.default_rng(1).integers(0, 2**64, args.documents, np.uint64)[:100_000]]
        asked = probes(args.queries, seed=1, stored=stored)
        warmup = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=args.warmup, dtype=np.uint64)]
        results["written"] = measure(indexes, asked, warmup)
        print(f"written: {json.dumps(results['written'])}", flush=True)
        with indexes.writing(args.write_rate):
            results["writing"] = measure(indexes, asked, warmup)
        print(f"writing: {json.dumps(results['writing'])}", flush=True)
        indexes.compact()
        results["compacted"] = measure(indexes, asked, warmup)
        print(f"compacted: {json.dumps(results['compacted'])}", flush=True)
    finally:
        indexes.local.stop()
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)
    (ROOT / "var" / "regions-results.json").write_text(json.dumps(results, indent=1))
    report(results)


def report(results: dict[str, object]) -> None:
    args = results["args"]
    assert isinstance(args, dict)
    counts, rates = args["regions"], results["documents/s"]
    assert isinstance(rates, dict)
    print(f"\n{os.cpu_count()} cores; HBase heap {args['heap_mb']} MiB; {args['documents']:,} documents per index; ms")
    print("| drawer regions | documents/s written | state | store p50 | store p99 | client p50 | client p99 |")
    print("|---|---|---|---|---|---|---|")
    for r in counts:
        for state in STATES:
            s = results[state]
            assert isinstance(s, dict)
            print(
                f"| {r} | {rates[str(r)]:,.0f} | {state} | {s[f'{r} store 50']:.2f} | {s[f'{r} store 99']:.2f} | "
                f"{s[f'{r} client 50']:.2f} | {s[f'{r} client 99']:.2f} |"
            )
    base = counts[0]
    for r in counts[1:]:
        print(f"- {r}/{base} regions: documents/s {rates[str(r)] / rates[str(base)]:.2f}x")
        for state in STATES:
            s = results[state]
            assert isinstance(s, dict)
            ratios = ", ".join(
                f"{w} p{q} {s[f'{r} {w} {q}'] / s[f'{base} {w} {q}']:.2f}x" for w in WAYS for q in (50, 99)
            )
            print(f"  - {state}: {ratios}")
    geo = statistics.geometric_mean
    for r in counts[1:]:
        ratio = geo([results[st][f"{r} client 50"] / results[st][f"{base} client 50"] for st in STATES])  # type: ignore[index]
        print(f"- client p50 over the three states, {r}/{base} regions: {ratio:.2f}x")


if __name__ == "__main__":
    main()
