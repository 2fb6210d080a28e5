"""On-disk size of the index under each block compression codec (HBase 2.6's pure-Java codecs).

Loads the same N random fingerprints into one index per codec (on every table, the drawer table included)
on the local HBase of `make run`, flushes the memstores, and reports bytes on disk per table and per drawer
row, and the load rate, side by side.

    .venv/bin/python benchmarks/bench_compression.py --n 200000    # or: make bench-compression
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import numpy as np

from simhash_deploy import LocalHBase
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.store import IndexStore, StoreConfig

CODECS = ("NONE", "SNAPPY", "LZ4", "ZSTD")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200_000)
    args = parser.parse_args()
    local = LocalHBase()
    fps = np.random.default_rng(7).integers(0, 2**64, size=args.n, dtype=np.uint64)
    batches = [[(f"doc-{i:09d}", int(fps[i])) for i in range(s, min(s + 5000, args.n))] for s in range(0, args.n, 5000)]
    rows = []
    for codec in CODECS:
        prefix = f"bench_c{args.n}_{codec.lower()}"
        tables = index_tables(prefix, drawer_regions=4, compression=codec)
        # the codec on the drawer table too, whose blocks the schema leaves uncompressed
        drawers = replace(tables.drawers, family=replace(tables.drawers.family, compression=codec))
        tables = replace(tables, drawers=drawers)
        client = connect("127.0.0.1", local.ports.thrift2)
        states = apply_schema(client, tables)
        client.close()
        if drift := [f"{state.name}: {diff}" for state in states for diff in state.differences]:
            sys.exit("tables of an earlier layout; drop them to measure this one:\n  " + "\n  ".join(drift))
        fresh = any(s.created for s in states)
        store = IndexStore(
            StoreConfig(
                thrift_port=local.ports.thrift, thrift2_port=local.ports.thrift2, table_prefix=prefix, wal=False
            ),
            tables,
        )
        store.open()
        began = time.perf_counter()
        if fresh:
            with ThreadPoolExecutor(4) as pool:
                list(pool.map(store.index_many, batches))
        load_s = time.perf_counter() - began
        store.close()
        names = [t.name for t in (tables.drawers, tables.fp2docs, tables.docs)]
        local.flush(names)
        sizes = [local.table_bytes(n) for n in names]
        rows.append((codec, sizes, load_s if fresh else None))
    encodings = f"drawers {tables.drawers.family.encoding}, the others {tables.fp2docs.family.encoding}"
    print(f"N = {args.n:,} fingerprints ({10 * args.n:,} drawer rows); data block encoding: {encodings}")
    print("| codec | drawers MB | bytes/drawer row | fp2docs MB | docs MB | total MB | load fingerprints/s |")
    print("|---|---|---|---|---|---|---|")
    for codec, (drawers, fp2docs, docs), load_s in rows:
        rate = f"{args.n / load_s:,.0f}" if load_s else "(loaded earlier)"
        print(
            f"| {codec} | {drawers / 1e6:.1f} | {drawers / (10 * args.n):.1f} | {fp2docs / 1e6:.1f} | "
            f"{docs / 1e6:.1f} | {(drawers + fp2docs + docs) / 1e6:.1f} | {rate} |"
        )


if __name__ == "__main__":
    main()
