"""Where the 10^8 index's drawer table is read from: the JVM's block cache or the operating system's page cache.

bench-scale's 10^8 index (var/scale; run `make bench-scale` first) has an 18-19 GB drawer table, far more
than the region server's block cache (40% of its heap).  A random probe reads about 10 drawer blocks (one
per prefix scan; its ~21 candidate rows lie in them), so its p99 is set by the blocks that come from disk.
This asks, side by side in one run, with the same probes as bench-scale, for each region-server heap:
1. as bench-scale measured: 300 warm-up probes, then the probes;
2. after the drawer table's files are read once into the page cache (what a long-running server's cache
   holds), then the same probes.
Before each heap the page cache is dropped (as root; otherwise this is noted and the runs share it).  A
smaller heap leaves more memory to the page cache: the question is whether the drawer table then fits.
With ``--then-layout KB:ENCODING[:COMPRESSION]`` the drawer family's block size, data block encoding and
compression are then changed and the table major-compacted (every HFile rewritten in the new layout), and
the first heap is measured again: what a block read from the page cache costs depends on its layout.  The
index keeps the new layout.

    .venv/bin/python benchmarks/bench_cache.py --heaps 6144,3072       # or: make bench-cache
    .venv/bin/python benchmarks/bench_cache.py --heaps 6144 --then-layout 8:FAST_DIFF:NONE
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from bench_query import Layout, layout_label, parse_layouts
from bench_scale import PREFIX, WORK, Scale, measure, probes

from simhash_schema import connect, describe
from simhash_schema.apply import _family_descriptor, _table_name

WARMUP = 300


def drop_page_cache() -> bool:
    """Drop the operating system's clean page cache; False when not permitted (not root)."""
    subprocess.run(["sync"], check=True)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def meminfo_gib(field: str) -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**20
    raise KeyError(field)


def read_into_page_cache(directory: Path) -> tuple[float, float]:
    """Read every file under ``directory`` once (sequentially, 8 MiB at a time); (GB read, seconds)."""
    began, total = time.monotonic(), 0
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        with open(path, "rb", buffering=0) as f:
            while chunk := f.read(8 << 20):
                total += len(chunk)
    return total / 1e9, time.monotonic() - began


def set_drawer_layout(scale: Scale, layout: Layout) -> float:
    """Alter the drawer family's layout and major-compact the table into it; seconds taken."""
    began = time.monotonic()
    name = scale.tables.drawers.name
    client = connect("127.0.0.1", scale.local.ports.thrift2, 120_000)
    try:
        family = replace(scale.tables.drawers.family, block_size=layout[0], encoding=layout[1], compression=layout[2])
        client.modifyColumnFamily(_table_name(name), _family_descriptor(family))
        if drawer_layout(client, scale) != layout:
            raise SystemExit(f"{name}: HBase did not take the layout {layout_label(layout)}")
    finally:
        client.close()
    scale.local.flush([name], timeout=4 * 3600, compact=True)
    return time.monotonic() - began


def drawer_layout(client: Any, scale: Scale) -> Layout:
    family = describe(client, scale.tables.drawers.name)[scale.tables.drawers.family.name]
    return family["block_size"], family["encoding"], family["compression"]


def current_drawer_layout(scale: Scale) -> Layout:
    """The drawer family's layout, asked over a connection of its own."""
    client = connect("127.0.0.1", scale.local.ports.thrift2, 120_000)
    try:
        return drawer_layout(client, scale)
    finally:
        client.close()


def run_heap(heap_mb: int, asked: list[int], warm: list[int], layout: Layout | None = None) -> dict[str, object]:
    dropped = drop_page_cache()
    scale = Scale(argparse.Namespace(master_heap_mb=heap_mb, chunk=0))
    if scale.state.get("loaded", 0) < 100_000_000:
        raise SystemExit(f"{WORK} holds no 10^8 index: run `make bench-scale` first")
    scale.start()
    rewritten = None
    try:
        if layout is not None:
            rewritten = set_drawer_layout(scale, layout)
            dropped = drop_page_cache()  # the compaction's writes would otherwise start this run warm
        now = current_drawer_layout(scale)
        drawers = scale.drawers_dir
        probed = measure(scale, asked, warm)
        gb, seconds = read_into_page_cache(drawers)
        cached = meminfo_gib("Cached")
        preread = measure(scale, asked, warm)
        layout = scale.layout()
    finally:
        scale.local.stop()
    return {
        "heap_mb": heap_mb,
        "layout": layout_label(now),
        "rewrite_s": rewritten,
        "dropped": dropped,
        "probed": probed,
        "preread": preread,
        "drawers_gb_read": gb,
        "preread_s": seconds,
        "page_cache_gib_after_preread": cached,
        "mem_total_gib": meminfo_gib("MemTotal"),
        "drawers_bytes": layout["drawers_bytes"],
        "drawers_files_per_region": layout["drawers_files_per_region"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heaps", default="6144,3072", help="region-server heaps in MiB, measured in this order")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument(
        "--then-layout",
        type=lambda text: parse_layouts(text)[0],
        help="then rewrite the drawers in this layout, KB:ENCODING[:COMPRESSION] (say 8:FAST_DIFF:NONE)",
    )
    args = parser.parse_args()
    asked = probes(args.queries, seed=1)  # bench-scale's probes and warm-up, so the rows compare with its table
    warm = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=WARMUP, dtype=np.uint64)]
    heaps = [int(h) for h in args.heaps.split(",")]
    results = [run_heap(h, asked, warm) for h in heaps]
    if args.then_layout:
        results.append(run_heap(heaps[0], asked, warm, args.then_layout))
    (WORK / f"cache-results-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(results, indent=1))
    print(f"\n{os.cpu_count()} cores, {results[0]['mem_total_gib']:.1f} GiB; index `{PREFIX}` in {WORK}")
    print(
        "| heap MiB | block cache MiB | drawer layout | drawers GB | page cache | store p50 | store p99 | client p50 "
        "| client p99 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        for state, label in (("probed", f"{WARMUP} probes read first"), ("preread", "drawer files read first")):
            m = r[state]
            cache = label if state == "probed" else f"{label} ({r['page_cache_gib_after_preread']:.1f} GiB cached)"
            print(
                f"| {r['heap_mb']} | {0.4 * r['heap_mb']:,.0f} | {r['layout']} | "
                f"{r['drawers_bytes'] / 1e9:.2f} | {cache} | "
                f"{m['store_p50_ms']:.2f} | {m['store_p99_ms']:.2f} | {m['client_p50_ms']:.2f} | "
                f"{m['client_p99_ms']:.2f} |"
            )
        if r["rewrite_s"] is not None:
            print(f"(drawers rewritten as {r['layout']} first: {r['rewrite_s']:,.0f} s)")
        if not r["dropped"]:
            print(f"(heap {r['heap_mb']}: the page cache was not dropped before it: not root)")


if __name__ == "__main__":
    main()
