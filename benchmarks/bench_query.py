"""Query latency of the drawer index on the local HBase, beside its floors, in one run.

For each N (1e5 and 1e6 by default; --sizes 1e7 for more) it loads N random fingerprints into an index of
their own (kept under the table prefix bench_qN_rREGIONS and reused by later runs), then, interleaving query by query:
- store: IndexStore.query (10 parallel Thrift2 scans, XOR + popcount, one multi-get of document ids);
- raw Thrift2: the same 10 prefix scans issued directly, in parallel, nothing else (the floor);
- raw Thrift1: the same 10 scans through happybase (open, getList, close each), in parallel;
- brute force: numpy XOR + popcount over all N fingerprints in memory.
Half the probes are stored fingerprints with a few bits flipped, half are random.
With --layouts 64:ROW_INDEX_V1,8:FAST_DIFF,... the same fingerprints are also loaded into drawer tables of
other block sizes and encodings, and every probe queries each of them too, each layout first in turn.
With --windows (default 1h,3650d), every probe is also asked with each ``max_age``: an HBase time range on
both reads.  The index was loaded before the run, so 3650d holds every document (the time range's own cost)
and 1h none of them (what a window saves).
Freshly loaded tables (or all, with --compact) are major-compacted first: one store file per region.

    .venv/bin/python benchmarks/bench_query.py            # or: make bench-query
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import happybase
import numpy as np
from _common import percentile

from simhash_client.times import parse_duration
from simhash_schema import COMPRESSIONS, ENCODINGS, apply_schema, connect, hbase2, index_tables
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.store import IndexStore, StoreConfig

LOAD_BATCH = 5000


def load(store: IndexStore, fps: np.ndarray) -> float:
    """Index fps (ids b0, b1, ...) unless an earlier run did; returns seconds spent."""
    marker = b"m:bench_loaded"

    def meta() -> happybase.Table:  # a fresh connection each time: the gateway drops idle ones
        return happybase.Connection(store.config.host, store.config.thrift_port, timeout=60_000).table(
            store.tables.meta.name
        )

    if meta().row(b"index").get(marker) == str(len(fps)).encode():
        return 0.0
    began = time.perf_counter()
    batches = [
        [(f"b{i}", int(fps[i])) for i in range(s, min(s + LOAD_BATCH, len(fps)))]
        for s in range(0, len(fps), LOAD_BATCH)
    ]
    with ThreadPoolExecutor(4) as pool:
        for done, _ in enumerate(pool.map(store.index_many, batches), start=1):
            if done % 20 == 0:
                print(f"  loaded {done * LOAD_BATCH:,} of {len(fps):,}", flush=True)
    meta().put(b"index", {marker: str(len(fps)).encode()})
    return time.perf_counter() - began


class RawScans:
    """The 10 drawer scans and nothing else, through Thrift2 and through happybase."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self.table = store.tables.drawers.name.encode()
        self.pool = ThreadPoolExecutor(10)
        self.t2 = [connect(store.config.host, store.config.thrift2_port) for _ in range(10)]
        self.t1 = [
            happybase.Connection(store.config.host, store.config.thrift_port, timeout=10_000).table(self.table)
            for _ in range(10)
        ]
        self.hb = hbase2()

    def thrift2(self, fp: int) -> int:
        def scan(arg: tuple[object, bytes]) -> int:
            client, p = arg
            s = self.hb.TScan(
                startRow=p,
                stopRow=p + b"\xff" * 9,
                filterString=b"KeyOnlyFilter()",
                caching=10_000,
                readType=self.hb.TReadType.PREAD,
                limit=10_000,
            )
            return len(client.getScannerResults(self.table, s, 10_000))

        return sum(self.pool.map(scan, zip(self.t2, drawer_prefixes(fp), strict=True)))

    def thrift1(self, fp: int) -> int:
        def scan(arg: tuple[happybase.Table, bytes]) -> int:
            table, p = arg
            return sum(
                1 for _ in table.scan(row_start=p, row_stop=p + b"\xff" * 9, filter=b"KeyOnlyFilter()", batch_size=1000)
            )

        return sum(self.pool.map(scan, zip(self.t1, drawer_prefixes(fp), strict=True)))


Layout = tuple[int, str, str]  # drawer table block size (bytes), data block encoding, compression


def parse_layouts(text: str) -> list[Layout]:
    layouts = []
    default_compression = index_tables("bench").drawers.family.compression
    for item in text.split(","):
        size, _, rest = item.partition(":")
        encoding, _, compression = rest.upper().partition(":")
        compression = compression or default_compression
        if not size.isdigit() or encoding not in ENCODINGS or compression not in COMPRESSIONS:
            raise argparse.ArgumentTypeError(
                f"layout {item!r}: want BLOCK_KB:ENCODING[:COMPRESSION], ENCODING one of {ENCODINGS}, "
                f"COMPRESSION one of {COMPRESSIONS} (default {default_compression})"
            )
        layouts.append((int(size) * 1024, encoding, compression))
    return layouts


def layout_label(layout: Layout) -> str:
    return f"{layout[0] // 1024} KB {layout[1]} {layout[2]}"


def open_index(n: int, fps: np.ndarray, layout: Layout, args: argparse.Namespace) -> tuple[IndexStore, float]:
    """The index of these N fingerprints in this drawer layout, loaded (once) and compacted."""
    prefix = f"bench_q{n}_r{args.regions}"
    tables = index_tables(prefix, drawer_regions=args.regions)
    family = tables.drawers.family
    if layout != (family.block_size, family.encoding, family.compression):  # another layout: tables of its own
        prefix += f"_b{layout[0] // 1024}k_{layout[1].lower()}"
        if layout[2] != family.compression:
            prefix += f"_{layout[2].lower()}"
        tables = index_tables(prefix, drawer_regions=args.regions)
        family = replace(family, block_size=layout[0], encoding=layout[1], compression=layout[2])
        tables = replace(tables, drawers=replace(tables.drawers, family=family))
    client = connect(args.host, args.thrift2_port)
    drift = [f"{state.name}: {diff}" for state in apply_schema(client, tables) for diff in state.differences]
    client.close()
    if drift:  # an earlier run's tables in another layout would be measured under this one's name
        raise SystemExit("tables differ from the layout asked for; drop them to reload:\n  " + "\n  ".join(drift))
    config = StoreConfig(
        host=args.host,
        thrift_port=args.thrift_port,
        thrift2_port=args.thrift2_port,
        table_prefix=prefix,
        wal=False,
        pool_size=16,
    )
    store = IndexStore(config, tables)
    store.open()
    load_s = load(store, fps)
    if load_s or args.compact:  # one store file per region, as a settled index has: layouts compare fairly
        from simhash_deploy import LocalHBase

        LocalHBase().flush([t.name for t in (tables.drawers, tables.fp2docs, tables.docs)], 1800, compact=True)
    return store, load_s


def bench_size(n: int, queries: int, args: argparse.Namespace) -> dict[str, object]:
    rng = np.random.default_rng(n)
    fps = rng.integers(0, 2**64, size=n, dtype=np.uint64)
    store, load_s = open_index(n, fps, args.layouts[0], args)
    others = {f"store, {layout_label(layout)}": open_index(n, fps, layout, args)[0] for layout in args.layouts[1:]}
    probes = []
    for i in range(queries):
        if i % 2:
            probes.append(int(rng.integers(0, 2**64, dtype=np.uint64)))
        else:
            fp = int(fps[rng.integers(0, n)])
            for bit in rng.choice(64, size=int(rng.integers(0, 4)), replace=False):
                fp ^= 1 << int(bit)
            probes.append(fp)
    raw = RawScans(store)
    timings: dict[str, list[float]] = {"store": [], **{k: [] for k in others}}
    timings.update({"raw thrift2": [], "raw thrift1": [], "brute force": []})
    candidates = []
    warm = [int(v) for v in rng.integers(0, 2**64, size=args.warmup, dtype=np.uint64)]
    for fp in warm:  # other probes than the measured ones: warm the JIT and the block cache
        store.query(fp)
        for other in others.values():
            other.query(fp)
    paths: list[tuple[str, Callable[[int], object]]] = [("store", store.query)]
    paths += [(name, other.query) for name, other in others.items()]
    for label, ms in args.windows:
        timings[f"store, max_age {label}"] = []
        paths.append((f"store, max_age {label}", lambda fp, ms=ms: store.query(fp, max_age_ms=ms)))
    for i, fp in enumerate(probes):
        for name, query in paths[i % len(paths) :] + paths[: i % len(paths)]:  # each goes first in turn
            began = time.perf_counter()
            query(fp)
            timings[name].append(time.perf_counter() - began)
        began = time.perf_counter()
        rows = raw.thrift2(fp)
        if i % 2:  # random probes: what the theory predicts
            candidates.append(rows)
        timings["raw thrift2"].append(time.perf_counter() - began)
        began = time.perf_counter()
        raw.thrift1(fp)
        timings["raw thrift1"].append(time.perf_counter() - began)
        began = time.perf_counter()
        np.nonzero(np.bitwise_count(fps ^ np.uint64(fp)) <= 3)
        timings["brute force"].append(time.perf_counter() - began)
    store.close()
    for other in others.values():
        other.close()
    return {
        "n": n,
        "load_s": load_s,
        "timings": timings,
        "candidates": statistics.mean(candidates),
        "theory": 10 * n / 2**25.5,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=lambda s: [int(float(x)) for x in s.split(",")], default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=3000, help="Queries before measuring (JIT, block cache).")
    parser.add_argument("--regions", type=int, default=2, help="Drawer table regions (sized for the data: 2 here).")
    drawers = index_tables().drawers.family
    parser.add_argument(
        "--layouts",
        type=parse_layouts,
        default=[(drawers.block_size, drawers.encoding, drawers.compression)],
        help="Drawer table layouts to compare, as BLOCK_KB:ENCODING[:COMPRESSION],... (default: the schema's); the "
        "first is 'store', the rest are queried beside it, probe by probe.",
    )
    parser.add_argument("--compact", action="store_true", help="Major-compact tables an earlier run loaded.")
    parser.add_argument(
        "--windows",
        type=lambda s: [(w, round(parse_duration(w).total_seconds() * 1000)) for w in s.split(",") if w],
        default="1h,3650d",
        help="max_age windows to query with beside no window ('' for none).",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    args = parser.parse_args()
    results = []
    for n in args.sizes:
        print(f"N = {n:,}", flush=True)
        results.append(bench_size(n, args.queries, args))
    print()
    print("| N | path | p50 ms | p99 ms | queries/s (1 client) |")
    print("|---|---|---|---|---|")
    for r in results:
        for path, values in r["timings"].items():
            print(
                f"| {r['n']:,} | {path} | {percentile(values, 0.5) * 1e3:.2f} | {percentile(values, 0.99) * 1e3:.2f} "
                f"| {len(values) / sum(values):,.0f} |"
            )
    print()
    for r in results:
        t = r["timings"]
        p50 = {path: percentile(values, 0.5) for path, values in t.items()}
        line = (
            f"N = {r['n']:,}: drawer rows per random query {r['candidates']:.3f} "
            f"(theory 10*N/2^25.5 = {r['theory']:.3f}); "
            f"store p50 / raw Thrift2 p50 = {p50['store'] / p50['raw thrift2']:.2f}; "
            f"raw Thrift1 p50 / raw Thrift2 p50 = {p50['raw thrift1'] / p50['raw thrift2']:.2f}"
        )
        if r["load_s"]:
            line += f"; loaded in {r['load_s']:.0f} s ({r['n'] / r['load_s']:,.0f} fingerprints/s)"
        print(line)
        for path in t:
            if path.startswith("store, max_age"):
                print(f"  {path} p50 / store p50 = {p50[path] / p50['store']:.2f}")
    if len(results) >= 2:
        a, b = results[0], results[1]
        ratio = percentile(b["timings"]["store"], 0.5) / percentile(a["timings"]["store"], 0.5)
        print(f"store p50 at N = {b['n']:,} / p50 at N = {a['n']:,}: {ratio:.2f}")


if __name__ == "__main__":
    main()
