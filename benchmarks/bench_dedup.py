"""What atomic Deduplicate costs: the store's steps of one Deduplicate, with and without its claims, side by
side in one run on the local HBase (docs/dedup.md).

One index holds --background random fingerprints.  For each probe (a fresh random fingerprint), in
alternating order:
- "unclaimed": query (distance 3) then store, what Deduplicate did before claims;
- "claimed": take the 10 claims, query, store, what it does now before it answers (the release follows in
  the background, as in the server);
and, alone, the claims' take + release.  One caller, so the figures are latencies, not contention.

    make bench-dedup            # or: .venv/bin/python benchmarks/bench_dedup.py
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_query import percentile

from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--background", type=int, default=20_000, help="Random fingerprints stored first.")
    parser.add_argument("--probes", type=int, default=1_000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    args = parser.parse_args()

    prefix = f"benchdedup{int(time.time())}"
    tables = index_tables(prefix, drawer_regions=2)
    client = connect(args.host, args.thrift2_port)
    apply_schema(client, tables)
    client.close()
    store = IndexStore(StoreConfig(args.host, args.thrift_port, args.thrift2_port, prefix), tables)
    store.open()
    rng = random.Random(7)
    releases = ThreadPoolExecutor(1)
    try:
        for start in range(0, args.background, 1000):
            store.index_many([(f"bg-{i}", rng.getrandbits(64)) for i in range(start, start + 1000)])
        seconds: dict[str, list[float]] = {"unclaimed": [], "claimed": [], "claims alone": []}
        for n in range(args.probes):
            for kind in ("unclaimed", "claimed") if n % 2 else ("claimed", "unclaimed"):
                fp = rng.getrandbits(64)
                began = time.perf_counter()
                held = store.claim(fp) if kind == "claimed" else None
                if not store.query(fp, 3):
                    store.index_many([Document(f"{kind}-{n}", fp)])
                if held is not None:
                    releases.submit(store.release, held)
                seconds[kind].append(time.perf_counter() - began)
            began = time.perf_counter()
            store.release(store.claim(rng.getrandbits(64)))
            seconds["claims alone"].append(time.perf_counter() - began)
    finally:
        releases.shutdown(wait=True)
        store.close()
    print(f"Deduplicate's store steps, {args.probes} probes each, {args.background:,} fingerprints stored, 1 thread")
    print("| steps | p50 ms | p99 ms |")
    print("|---|---|---|")
    for kind, values in seconds.items():
        print(f"| {kind} | {percentile(values, 0.5) * 1e3:.2f} | {percentile(values, 0.99) * 1e3:.2f} |")
    ratio = percentile(seconds["claimed"], 0.5) / percentile(seconds["unclaimed"], 0.5)
    print(f"\nclaimed / unclaimed, p50: {ratio:.2f}x")


if __name__ == "__main__":
    main()
