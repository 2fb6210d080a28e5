"""The block cache's policy for the 10^8 index, its drawer table in the page cache: side by side in one run.

At 10^8 a random probe reads ~10 drawer blocks (one per prefix), and the 2.4 GiB block cache holds a
small part of the 19 GB table: almost every block is copied from the page cache, decompressed, checksummed,
then cached, evicting another (bench-cache, docs/benchmarks.md).  Caching what will not be read again costs
the insertion, the eviction thread's work and the garbage collector's.  Each configuration below is a set
of hbase-site properties over the launcher's; for each, in rounds (the configurations in order, then in
reverse, and so on), HBase is started on bench-scale's index (var/scale; `make bench-scale` first), the
drawer table's files are read into the page cache, --fill random probes fill the block cache (a 10^8 probe
reads ~10 blocks of 64 KB, so the 2.4 GiB of a 6 GiB heap hold ~3,900 probes' blocks: from then on every
block cached evicts one, as in a server that has run a while), and bench-scale's probes are asked after its
warm-up, each one way (in process or through the Python client of a `serve`), the ways alternating in pairs.
The HBase JVMs' CPU is counted over the probes alone (serve's warm-up and bench-scale's come before), a
recount of every second probe's candidates included.

With ``--layouts KB:ENCODING[:COMPRESSION],...`` every configuration is measured in each drawer layout too:
before a run whose layout differs from the table's, the drawer family is altered and the table
major-compacted into it (bench-cache's `--then-layout`), so a round asks the layouts in order and the next
round in reverse, each switch one rewrite of the table; the index keeps the last.  ``--smallest`` lets it
run on a smaller bench-scale index (say 10^7 with a 1 GiB heap: the block cache then holds about the same
share of the drawer table as 2.4 GiB of the 10^8 one).

    .venv/bin/python benchmarks/bench_blockcache.py              # or: make bench-blockcache
    .venv/bin/python benchmarks/bench_blockcache.py --configs LRU,AdaptiveLRU --rounds 4
    .venv/bin/python benchmarks/bench_blockcache.py --configs LRU --layouts 64:ROW_INDEX_V1:LZ4,8:FAST_DIFF:NONE
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

import numpy as np
from bench_cache import WARMUP, current_drawer_layout, read_into_page_cache, set_drawer_layout
from bench_grouping import jvm_seconds
from bench_query import Layout, layout_label, parse_layouts
from bench_scale import WORK, Scale, measure, probes

from simhash_server.index.store import IndexStore

# HBase 2.6's block cache policies (hfile.block.cache.policy, BlockCacheFactory) and its switch for caching
# data blocks on read (CacheConfig); index and bloom blocks are cached whatever these say.
CONFIGS: dict[str, dict[str, str]] = {
    "LRU": {},  # HBase's default: every block read is cached
    # Once evictions have freed more than 500 MB per 10 s period (the default limit), cache a falling share
    # of the data blocks read (HBASE-23887); the limit count of 0 lets it act from the first heavy period.
    "AdaptiveLRU": {"hfile.block.cache.policy": "AdaptiveLRU", "hbase.lru.cache.heavy.eviction.count.limit": "0"},
    "TinyLFU": {"hfile.block.cache.policy": "TinyLFU"},  # admits a block only if it is read more than its victim
    "no data cached": {"hbase.block.data.cacheonread": "false"},
}


def run(
    name: str, layout: Layout | None, asked: list[int], warm: list[int], fill: list[int], args: argparse.Namespace
) -> dict[str, object]:
    scale = Scale(argparse.Namespace(master_heap_mb=args.master_heap_mb, chunk=0), site=CONFIGS[name])
    if scale.state.get("loaded", 0) < args.smallest:
        raise SystemExit(f"{WORK} holds fewer than {args.smallest:,} fingerprints: run `make bench-scale` first")
    scale.start()
    rewritten = None
    try:
        now = current_drawer_layout(scale)
        if layout is not None and layout != now:
            rewritten, now = set_drawer_layout(scale, layout), layout
        gb, seconds = read_into_page_cache(scale.drawers_dir)
        with IndexStore(scale.config()) as store:
            for fp in fill:
                store.query(fp)
        cached = scale.drawers_cached()
        pids = [int(entry["pid"]) for entry in scale.local.status().values() if entry["pid"] is not None]
        measured = measure(scale, asked, warm, cpu=lambda: jvm_seconds(pids))
        drawers_bytes = scale.local.table_bytes(scale.tables.drawers.name)
    finally:
        scale.local.stop()
    return {
        "config": name,
        "layout": layout_label(now),
        "rewrite_s": rewritten,
        "loaded": scale.state["loaded"],
        "drawers_bytes": drawers_bytes,
        **measured,
        "drawers_gb_read": gb,
        "preread_s": seconds,
        "drawers_cached": cached,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"of {', '.join(CONFIGS)}")
    parser.add_argument("--rounds", type=int, default=2, help="each round asks every configuration once")
    parser.add_argument("--queries", type=int, default=2000, help="probes, half asked in process, half by the client")
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    parser.add_argument(
        "--fill", type=int, default=10_000, help="random probes asked first, to fill the block cache (steady state)"
    )
    parser.add_argument(
        "--layouts", type=parse_layouts, help="drawer layouts, KB:ENCODING[:COMPRESSION],... (default: the table's)"
    )
    parser.add_argument(
        "--smallest", type=lambda s: int(float(s)), default=100_000_000, help="the smallest index to accept"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONFIGS]
    if unknown or not names:
        raise SystemExit(f"--configs: unknown {', '.join(map(repr, unknown))}; choose from {', '.join(CONFIGS)}")
    if args.rounds < 1:
        raise SystemExit(f"--rounds must be >= 1, got {args.rounds}")
    asked = probes(args.queries, seed=1)  # bench-scale's probes and warm-up
    warm = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=WARMUP, dtype=np.uint64)]
    fill = [int(v) for v in np.random.default_rng(3).integers(0, 2**64, size=args.fill, dtype=np.uint64)]
    runs: list[tuple[str, Layout | None]] = [(n, layout) for layout in args.layouts or [None] for n in names]
    results = []
    for r in range(args.rounds):
        for name, layout in runs if r % 2 == 0 else reversed(runs):
            results.append({"round": r + 1, **run(name, layout, asked, warm, fill, args)})
            print(json.dumps(results[-1]), flush=True)
    (WORK / f"blockcache-results-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(results, indent=1))
    print(
        f"\n{os.cpu_count()} cores; {results[0]['loaded']:,} fingerprints; heap {args.master_heap_mb} MiB; "
        f"{args.queries} probes per run"
    )
    header = "| round | config | drawer layout | drawers GB | in page cache GB | store p50 | store p99 | client p50 "
    print(header + "| client p99 | HBase CPU µs per probe |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        cached = f"{r['drawers_cached'] / 1e9:.2f}" if r["drawers_cached"] is not None else "-"
        print(
            f"| {r['round']} | {r['config']} | {r['layout']} | {r['drawers_bytes'] / 1e9:.2f} | {cached} | "
            f"{r['store_p50_ms']:.2f} | {r['store_p99_ms']:.2f} | {r['client_p50_ms']:.2f} | "
            f"{r['client_p99_ms']:.2f} | {r['cpu_us_per_probe']:,.0f} |"
        )
        if r["rewrite_s"] is not None:
            print(f"(drawers rewritten as {r['layout']} first: {r['rewrite_s']:,.0f} s)")
    print("\nmean over rounds:")
    for name, layout in runs:
        label = layout_label(layout) if layout else results[0]["layout"]
        rows = [r for r in results if r["config"] == name and r["layout"] == label]
        cols = ("store_p50_ms", "store_p99_ms", "client_p50_ms", "client_p99_ms", "cpu_us_per_probe")
        values = " | ".join(f"{statistics.mean(r[c] for r in rows):.2f}" for c in cols)
        print(f"| {name} | {label} | {values} |")


if __name__ == "__main__":
    main()
