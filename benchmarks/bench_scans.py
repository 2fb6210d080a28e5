"""Drawer scans two ways on one index, interleaved probe by probe: what pipelining the region scans saves.

- pipelined: DrawerScans.candidates as the store runs it: one thread writes every region group's scan, each on
  a connection of its own, then reads the replies;
- a thread per group: the same scans (same groups, same filters), each a blocking call in a thread pool of
  its own, the last in the calling thread (the store's way before).

Both give the same candidates (checked on every probe).  Reported: p50/p99 wall time and this process's CPU
per call.  The index is the scale benchmark's (var/scale, built by `make bench-scale`), or --prefix/--var-dir.

    .venv/bin/python benchmarks/bench_scans.py          # or: make bench-scans
"""

from __future__ import annotations

import argparse
import bisect
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from bench_query import percentile

from simhash_deploy import LocalHBase
from simhash_server.index.keys import drawer_prefixes, split_key
from simhash_server.index.scans import _drawer_scan, _paged
from simhash_server.index.store import IndexStore, StoreConfig

ROOT = Path(__file__).resolve().parents[1]


class ThreadPerGroup:
    """The region groups' scans as blocking calls, one thread each (the last in the caller's thread)."""

    def __init__(self, store: IndexStore) -> None:
        self.scans, self.pool = store.scans, store.thrift2
        self.table = store.tables.drawers.name.encode()
        self.threads = ThreadPoolExecutor(16)

    def candidates(self, fp: int) -> set[int]:
        starts = self.scans._region_starts(None)
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
    wall: dict[str, list[float]] = {"pipelined": [], "thread per group": []}
    cpu = dict.fromkeys(wall, 0.0)
    try:
        with IndexStore(config) as store:
            threaded = ThreadPerGroup(store)
            ways = {
                "pipelined": lambda fp: store.scans.candidates([fp], None)[0],
                "thread per group": threaded.candidates,
            }
            for fp in probes[: args.warmup]:
                assert ways["pipelined"](fp) == ways["thread per group"](fp)
            for i, fp in enumerate(probes[args.warmup :]):
                order = list(ways.items())
                answers = []
                for name, way in order[i % 2 :] + order[: i % 2]:  # each goes first in turn
                    c0, w0 = time.process_time(), time.perf_counter()
                    answers.append(way(fp))
                    wall[name].append(time.perf_counter() - w0)
                    cpu[name] += time.process_time() - c0
                assert answers[0] == answers[1]
    finally:
        if started:
            local.stop()
    print(f"{args.queries} random probes on {args.prefix} ({args.var_dir}), both ways interleaved\n")
    print("| scans | p50 ms | p99 ms | CPU µs per call (this process) |")
    print("|---|---|---|---|")
    for name, values in wall.items():
        p50, p99 = 1000 * percentile(values, 0.5), 1000 * percentile(values, 0.99)
        print(f"| {name} | {p50:.2f} | {p99:.2f} | {1e6 * cpu[name] / len(values):.0f} |")
    ratio = percentile(wall["pipelined"], 0.5) / percentile(wall["thread per group"], 0.5)
    print(f"\npipelined / thread per group: p50 {ratio:.2f}x, CPU {cpu['pipelined'] / cpu['thread per group']:.2f}x")


if __name__ == "__main__":
    main()
