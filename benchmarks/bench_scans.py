"""Where a query's time goes, on one index, interleaved probe by probe.

- scans, pipelined: DrawerScans.candidates as the store runs it: one thread writes every region group's scan,
  each on a connection of its own, then reads the replies;
- scans, a thread per group: the same scans (same groups, same filters), each a blocking call in a thread pool,
  the last in the calling thread (the store's way before);
- store.query: the scans, XOR + popcount, and the fp2docs read of any hit, in this process;
- client query: the same query through the Python client of a `simhash-index serve` process;
- client health check: a gRPC call that does no work, through the same client and server (gRPC's own cost).

Every probe is first asked once unmeasured, so that no way pays alone for reading its blocks into the cache
(the first one asked would, on an index larger than the cache).  Both scan ways give the same candidates
(checked on every probe).  Reported: p50/p99 wall time and, for the
in-process ways, this process's CPU per call.  The index is the scale benchmark's (var/scale, built by
`make bench-scale`), or --prefix/--var-dir.

    .venv/bin/python benchmarks/bench_scans.py          # or: make bench-scans
"""

from __future__ import annotations

import argparse
import bisect
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from bench_query import percentile

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports
from simhash_server.index.keys import drawer_prefixes, split_key
from simhash_server.index.scans import _drawer_scan, _paged
from simhash_server.index.store import IndexStore, StoreConfig

ROOT = Path(__file__).resolve().parents[1]
CLI = str(ROOT / ".venv" / "bin" / "simhash-index")


class ThreadPerGroup:
    """The region groups' scans as blocking calls, one thread each (the last in the caller's thread)."""

    def __init__(self, store: IndexStore) -> None:
        self.scans, self.pool = store.scans, store.thrift2
        self.table = store.tables.drawers.name.encode()
        self.threads = ThreadPoolExecutor(16)

    def candidates(self, fp: int) -> set[int]:
        starts = self.scans.region_starts(None)
        groups: dict[int, list[bytes]] = {}
        for prefix in sorted(drawer_prefixes(fp)):
            groups.setdefault(bisect.bisect_right(starts, prefix), []).append(prefix)
        *others, last = [_drawer_scan(group) for group in groups.values()]
        futures = [self.threads.submit(lambda s: _paged(self.pool, self.table, None, **s), s) for s in others]
        rows = _paged(self.pool, self.table, None, **last)
        for future in futures:
            rows.extend(future.result())
        return {split_key(r.row)[1] for r in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--var-dir", type=Path, default=ROOT / "var" / "scale" / "hbase")
    parser.add_argument("--prefix", default="scale")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    args = parser.parse_args()
    if not args.var_dir.is_dir():
        raise SystemExit(f"no index under {args.var_dir}: run `make bench-scale` first, or give --var-dir")
    local = LocalHBase(var_dir=args.var_dir, master_heap_mb=args.master_heap_mb)
    started = local.start()
    ports = local.ports
    config = StoreConfig(thrift_port=ports.thrift, thrift2_port=ports.thrift2, table_prefix=args.prefix, pool_size=16)
    rng = np.random.default_rng(3)
    probes = [int(v) for v in rng.integers(0, 2**64, size=args.warmup + args.queries, dtype=np.uint64)]
    port = Ports.free().thrift
    env = {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(ports.thrift),
        "SIMHASH_HBASE_THRIFT2_PORT": str(ports.thrift2),
        "SIMHASH_TABLE_PREFIX": args.prefix,
    }
    server = subprocess.Popen(
        [CLI, "serve", "--address", f"127.0.0.1:{port}", "--metrics-address", ""],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    names = ("scans, pipelined", "scans, a thread per group", "store.query", "client query", "client health check")
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu = dict.fromkeys(wall, 0.0)
    try:
        with IndexStore(config) as store, SimHashClient(f"127.0.0.1:{port}") as client:
            client.wait_until_serving(timeout=120)
            threaded = ThreadPerGroup(store)
            ways = {
                names[0]: lambda fp: store.scans.candidates([fp], None)[0],
                names[1]: threaded.candidates,
                names[2]: store.query,
                names[3]: lambda fp: client.query(simhash=fp),
                names[4]: lambda fp: client.health(),
            }
            for fp in probes[: args.warmup]:
                assert ways[names[0]](fp) == ways[names[1]](fp)
                mine, theirs = ways[names[2]](fp), ways[names[3]](fp)
                assert [(h.doc_id, h.distance) for h in mine] == [(h.doc_id, h.distance) for h in theirs]
                ways[names[4]](fp)
            for i, fp in enumerate(probes[args.warmup :]):
                store.query(fp)  # unmeasured: its blocks are cached for every way, not only for the first
                order = list(ways.items())
                answers = {}
                for name, way in order[i % len(order) :] + order[: i % len(order)]:  # each goes first in turn
                    c0, w0 = time.process_time(), time.perf_counter()
                    answers[name] = way(fp)
                    wall[name].append(time.perf_counter() - w0)
                    cpu[name] += time.process_time() - c0
                assert answers[names[0]] == answers[names[1]]
    finally:
        server.terminate()
        server.wait(60)
        if started:
            local.stop()
    print(f"{args.queries} random probes on {args.prefix} ({args.var_dir}), every way interleaved\n")
    print("| path | p50 ms | p99 ms | CPU µs per call in this process |")
    print("|---|---|---|---|")
    for name, values in wall.items():
        p50, p99 = 1000 * percentile(values, 0.5), 1000 * percentile(values, 0.99)
        own = "" if name.startswith("client") else f"{1e6 * cpu[name] / len(values):.0f}"
        print(f"| {name} | {p50:.2f} | {p99:.2f} | {own} |")
    p50 = {name: percentile(values, 0.5) for name, values in wall.items()}
    print(
        f"\npipelined / a thread per group: p50 {p50[names[0]] / p50[names[1]]:.2f}x, "
        f"CPU {cpu[names[0]] / cpu[names[1]]:.2f}x; client query - store.query, p50: "
        f"{1000 * (p50[names[3]] - p50[names[2]]):.2f} ms (gRPC alone: {1000 * p50[names[4]]:.2f} ms)"
    )


if __name__ == "__main__":
    main()
