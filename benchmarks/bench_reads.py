"""Where serve reads a batch of queries from HBase, side by side: on its event loop, or in a batch thread.

One HBase (`make run`'s settings: G1, 2 GiB heap) holds one index of N documents (random fingerprints,
written through ``IndexStore.index_many``).  Two ``serve`` processes read it, one per ``--query-reads``
choice.  The same probes (half stored fingerprints 0-3 bits away, half random) are asked of both through
the Python client, one caller, each probe of each server in turn and each server first in turn, in
bench_live's three states: written (at once), writing (a writer process adds ``--write-rate`` documents/s),
compacted.  Then, per state, ``--threads`` callers ask ``--burst`` probes of each server in turn (calls/s).
Per server, its process's CPU per query (/proc), counted while only its own queries ran.  var/reads is
removed before and after (``--keep`` keeps it); results go to var/reads-results.json.

    .venv/bin/python benchmarks/bench_reads.py        # or: make bench-reads
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from bench_bulkload import cpu_seconds
from bench_live import ROOT, STATES, writers
from bench_query import percentile
from bench_scale import probes, serving

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.config import QUERY_READS
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

WORK = ROOT / "var" / "reads"
PREFIX = "reads"


def serve_pid(reads: str) -> int:
    """The pid of this process's `serve` child started with ``--query-reads reads``."""
    for tid in Path("/proc/self/task").iterdir():
        for child in (tid / "children").read_text().split():
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            if b"serve" in argv and reads.encode() in argv:
                return int(child)
    raise RuntimeError(f"no serve --query-reads {reads} among this process's children")


class Server:
    """One serve process's client, and the CPU its process took over the calls made through ``call``."""

    def __init__(self, reads: str, client: SimHashClient) -> None:
        self.reads, self.client, self.pid = reads, client, serve_pid(reads)
        self.cpu = self.calls = 0.0

    def query(self, fp: int) -> None:
        self.client.query(simhash=fp)

    @contextlib.contextmanager
    def counted(self, calls: int) -> Iterator[None]:
        began = cpu_seconds(self.pid)
        yield
        self.cpu += cpu_seconds(self.pid) - began
        self.calls += calls


def one_caller(servers: list[Server], asked: list[int], warmup: list[int]) -> dict[str, float]:
    """p50/p99 and CPU µs per query of each server, every probe asked of each, the first rotating."""
    timings: dict[str, list[float]] = {s.reads: [] for s in servers}
    for fp in warmup:
        for server in servers:
            server.query(fp)
    for server in servers:
        server.cpu = server.calls = 0
    for i, fp in enumerate(asked):
        shift = i % len(servers)
        for server in servers[shift:] + servers[:shift]:
            with server.counted(1):
                began = time.perf_counter()
                server.query(fp)
                timings[server.reads].append(time.perf_counter() - began)
    out = {f"{r} {q}": 1000 * percentile(v, q / 100) for r, v in timings.items() for q in (50, 99)}
    return out | {f"{s.reads} cpu": 1e6 * s.cpu / s.calls for s in servers}


def many_callers(servers: list[Server], asked: list[int], threads: int, rounds: int = 2) -> dict[str, float]:
    """calls/s and CPU µs per query of each server with ``threads`` callers: ``rounds`` bursts of every probe
    each, the servers in turn."""
    seconds = dict.fromkeys((s.reads for s in servers), 0.0)
    for server in servers:
        server.cpu = server.calls = 0
    with ThreadPoolExecutor(threads) as pool:
        for n in range(rounds * len(servers)):
            server = servers[n % len(servers)] if n // len(servers) % 2 == 0 else servers[::-1][n % len(servers)]
            with server.counted(len(asked)):
                began = time.perf_counter()
                list(pool.map(server.query, asked))
                seconds[server.reads] += time.perf_counter() - began
    out = {f"{r} c{threads} calls/s": rounds * len(asked) / s for r, s in seconds.items()}
    return out | {f"{s.reads} c{threads} cpu": 1e6 * s.cpu / s.calls for s in servers}


@contextlib.contextmanager
def servers_of(local: LocalHBase, order: list[str]) -> Iterator[list[Server]]:
    with contextlib.ExitStack() as stack:
        yield [Server(r, stack.enter_context(serving(local, PREFIX, "--query-reads", r))) for r in order]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--order", type=lambda s: s.split(","), default=list(QUERY_READS), help="the --query-reads choices, in order"
    )
    parser.add_argument("--documents", type=lambda s: int(float(s)), default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--threads", type=int, default=16, help="callers of the concurrent rounds")
    parser.add_argument("--burst", type=int, default=2000, help="queries per concurrent round")
    parser.add_argument("--write-rate", type=int, default=500, help="documents/s while writing")
    parser.add_argument("--heap-mb", type=int, default=2048, help="HBase heap (make run's default)")
    parser.add_argument("--keep", action="store_true", help="keep var/reads afterwards")
    args = parser.parse_args()
    if sorted(args.order) != sorted(QUERY_READS):
        parser.error(f"--order: each of {', '.join(QUERY_READS)} once, got {args.order}")
    shutil.rmtree(WORK, ignore_errors=True)
    local = LocalHBase(var_dir=WORK, ports=Ports.free(), master_heap_mb=args.heap_mb, gc="G1")
    local.start()
    config = StoreConfig(thrift_port=local.ports.thrift, thrift2_port=local.ports.thrift2, table_prefix=PREFIX)
    results: dict[str, object] = {"args": vars(args)}
    try:
        client = connect("127.0.0.1", local.ports.thrift2, 120_000)
        apply_schema(client, index_tables(PREFIX))
        client.close()
        fps = np.random.default_rng(1).integers(0, 2**64, size=args.documents, dtype=np.uint64)
        began = time.perf_counter()
        with IndexStore(config) as store:
            for lo in range(0, args.documents, 1000):
                store.index_many([Document(f"d{i}", int(fp)) for i, fp in enumerate(fps[lo : lo + 1000], lo)])
        results["documents/s"] = args.documents / (time.perf_counter() - began)
        asked = probes(args.queries, seed=1, stored=[int(fp) for fp in fps[:100_000]])
        warmup = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=args.warmup, dtype=np.uint64)]
        burst = probes(args.burst, seed=3, stored=[int(fp) for fp in fps[:100_000]])

        def measure(state: str) -> None:
            with servers_of(local, args.order) as servers:
                results[state] = one_caller(servers, asked, warmup) | many_callers(servers, burst, args.threads)
            print(f"{state}: {json.dumps(results[state])}", flush=True)

        measure("written")
        with writers([config], args.write_rate):
            measure("writing")
        tables = index_tables(PREFIX)
        local.flush([tables.drawers.name, tables.fp2docs.name, tables.docs.name], timeout=3600, compact=True)
        measure("compacted")
    finally:
        local.stop()
        if not args.keep:
            shutil.rmtree(WORK, ignore_errors=True)
    (ROOT / "var" / "reads-results.json").write_text(json.dumps(results, indent=1))
    report(results)


def report(results: dict[str, object]) -> None:
    args = results["args"]
    assert isinstance(args, dict)
    order, c = args["order"], args["threads"]
    print(f"\n{os.cpu_count()} cores; HBase heap {args['heap_mb']} MiB; {args['documents']:,} documents")
    print(f"written at {results['documents/s']:,.0f} documents/s; order {', '.join(order)}; ms, µs")
    print(f"| state | query reads | p50 | p99 | serve CPU/query | c={c} calls/s | c={c} serve CPU/query |")
    print("|---|---|---|---|---|---|---|")
    for state in STATES:
        s: dict[str, float] = results[state]  # type: ignore[assignment]
        for r in order:
            print(
                f"| {state} | {r} | {s[f'{r} 50']:.2f} | {s[f'{r} 99']:.2f} | {s[f'{r} cpu']:,.0f} | "
                f"{s[f'{r} c{c} calls/s']:,.0f} | {s[f'{r} c{c} cpu']:,.0f} |"
            )
    ratio: Callable[[str], list[float]] = lambda key: [  # noqa: E731
        results[st][f"loop {key}"] / results[st][f"threads {key}"]  # type: ignore[index]
        for st in STATES
    ]
    for key in ("50", "99", "cpu", f"c{c} calls/s", f"c{c} cpu"):
        each = ", ".join(f"{v:.2f}x" for v in ratio(key))
        print(
            f"- loop/threads {key}: {each} (written, writing, compacted); geometric mean "
            f"{statistics.geometric_mean(ratio(key)):.2f}x"
        )


if __name__ == "__main__":
    main()
