"""A query's drawer reads grouped by region, against a scan per prefix, on bench-scale's 10^8 index.

The store reads a query's 10 drawer prefixes with one scan per region they fall in (a MultiRowRangeFilter
when a region holds several).  Two costs of grouping show where blocks come from disk:
- a region server reads a scan's ranges one after the other, so a region holding three of the prefixes
  waits for three disk reads in a row, where three scans would wait for them side by side;
- HBase consults the ROWPREFIX_FIXED_LENGTH bloom filter only for a scan whose start and stop rows share
  the prefix, so a grouped scan seeks into every store file of the region, even one without the prefix.
A scan per prefix pays a Thrift call per prefix instead (10 against ~7.6 with 16 regions).

Side by side in one run, each probe asked by one way only (a probe's blocks, once read, would be cached for
the other), the ways alternating in pairs of probes (half stored fingerprints 0-3 bits away, half random):
1. cold: the page cache dropped first (as root; else noted), 300 warm-up probes, then the probes;
2. warm: the drawer table's files read once into the page cache, then other probes.
Then both ways are asked the same probes and must find the same candidates.  Reported per way: p50/p99, and
the HBase JVMs' CPU (master with its region server, and the Thrift2 gateway) per query.

    .venv/bin/python benchmarks/bench_grouping.py        # or: make bench-grouping (after make bench-scale)
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from bench_cache import drop_page_cache, read_into_page_cache
from bench_query import percentile
from bench_scale import WORK, Scale, probes

from simhash_server.index.keys import drawer_prefixes, split_key
from simhash_server.index.scans import _drawer_scan
from simhash_server.index.store import IndexStore

WAYS = ("grouped by region", "a scan per prefix")
_TICK = os.sysconf("SC_CLK_TCK")


def jvm_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICK


def ways(store: IndexStore) -> dict[str, Callable[[int], set[int]]]:
    def grouped(fp: int) -> set[int]:
        return store.scans.candidates([fp], None)[0]

    def per_prefix(fp: int) -> set[int]:
        scans = [_drawer_scan([prefix]) for prefix in sorted(drawer_prefixes(fp))]
        return {split_key(key)[1] for key in store.scans._keys(scans, None)}

    return dict(zip(WAYS, (grouped, per_prefix), strict=True))


def phase(calls: dict[str, Callable[[int], set[int]]], asked: list[int], pids: list[int]) -> dict[str, dict]:
    """Each probe by one way, alternating in pairs (so each way gets stored and random probes alike)."""
    wall: dict[str, list[float]] = {name: [] for name in calls}
    jvm = dict.fromkeys(calls, 0.0)
    names = list(calls)
    for i, fp in enumerate(asked):
        name = names[(i // 2) % 2]
        c0, w0 = jvm_seconds(pids), time.perf_counter()
        calls[name](fp)
        wall[name].append(time.perf_counter() - w0)
        jvm[name] += jvm_seconds(pids) - c0
    return {
        name: {
            "p50_ms": 1000 * percentile(values, 0.5),
            "p99_ms": 1000 * percentile(values, 0.99),
            "jvm_cpu_us": 1e6 * jvm[name] / len(values),
            "n": len(values),
        }
        for name, values in wall.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=2000, help="probes per phase, shared between the ways")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--check", type=int, default=300, help="probes both ways answer, compared")
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    args = parser.parse_args()
    dropped = drop_page_cache()
    scale = Scale(argparse.Namespace(master_heap_mb=args.master_heap_mb, chunk=0))
    if scale.state.get("loaded", 0) < 100_000_000:
        raise SystemExit(f"{WORK} holds no 10^8 index: run `make bench-scale` first")
    scale.start()
    results: dict[str, dict[str, dict]] = {}
    try:
        status = scale.local.status()
        pids = [int(status[name]["pid"]) for name in ("master", "thrift2")]  # type: ignore[call-overload]
        drawers = scale.drawers_dir
        with IndexStore(scale.config()) as store:
            calls = ways(store)
            rng = np.random.default_rng(11)
            for fp in rng.integers(0, 2**64, size=args.warmup, dtype=np.uint64):
                for call in calls.values():
                    call(int(fp))
            results["cold"] = phase(calls, probes(args.queries, seed=12), pids)
            gb, seconds = read_into_page_cache(drawers)
            print(f"drawer files read into the page cache: {gb:.1f} GB in {seconds:.0f} s", flush=True)
            results["warm"] = phase(calls, probes(args.queries, seed=13), pids)
            checked = probes(args.check, seed=14)
            for fp in checked:
                answers = [call(fp) for call in calls.values()]
                assert answers[0] == answers[1], f"the ways disagree on {fp:#018x}"
        layout = scale.layout()
    finally:
        scale.local.stop()
    print(
        f"\n{os.cpu_count()} cores; index `{scale.tables.drawers.name}` in {WORK}: "
        f"{layout['drawers_bytes'] / 1e9:.2f} GB of drawers, {layout['drawers_regions']} regions, "
        f"{layout['drawers_files_per_region']:.1f} store files per region; page cache dropped first: {dropped}; "
        f"{args.check} probes answered alike both ways"
    )
    print("| page cache | way | probes | p50 ms | p99 ms | HBase JVMs' CPU µs per query |")
    print("|---|---|---|---|---|---|")
    for state, label in (("cold", "dropped, 300 probes read first"), ("warm", "drawer files read first")):
        for name, r in results[state].items():
            print(f"| {label} | {name} | {r['n']} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['jvm_cpu_us']:.0f} |")
    for state in ("cold", "warm"):
        a, b = (results[state][name] for name in WAYS)
        print(
            f"{state}: per prefix / grouped: p50 {b['p50_ms'] / a['p50_ms']:.2f}x, "
            f"p99 {b['p99_ms'] / a['p99_ms']:.2f}x, "
            f"JVM CPU {b['jvm_cpu_us'] / a['jvm_cpu_us']:.2f}x"
        )


if __name__ == "__main__":
    main()
