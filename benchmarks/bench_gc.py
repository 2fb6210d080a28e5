"""Hot fingerprints and churn, side by side in one run on the local HBase (docs/benchmarks.md).

hot: one index holds --background random fingerprints (one document each) and one fingerprint shared by
--hot documents (as an empty text or a template page makes).  Probes one bit away from a background
fingerprint ("normal") and from the hot one ("hot") alternate, at the service's default limit (100): the
hot probe's query reads 100 of its documents, not all of them.  A few probes with no limit show what that
bound saves.

churn: three indexes end with the same --docs live documents.  "baseline" had them written once; "churned"
and "churned + gc" went through 10 rounds of deleting half the documents and re-indexing all of them at new
fingerprints (each 1-2 bits from the last, as an edited text's is), and the last one then ran `gc`.  The
same probes (one bit from a live fingerprint) alternate over the three: drawer rows, candidates per query
and latency.

    make bench-gc            # or: .venv/bin/python benchmarks/bench_gc.py [--part hot|churn]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import happybase

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_query import percentile

from simhash_deploy import LocalHBase
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.gc import collect
from simhash_server.index.scans import count_rows
from simhash_server.index.store import IndexStore, StoreConfig

LIMIT = 100  # the service's default


def open_index(args: argparse.Namespace, name: str) -> IndexStore:
    prefix = f"benchgc{name}{int(time.time())}"
    tables = index_tables(prefix, drawer_regions=4)
    client = connect(args.host, args.thrift2_port)
    apply_schema(client, tables)
    client.close()
    store = IndexStore(StoreConfig(args.host, args.thrift_port, args.thrift2_port, prefix), tables)
    store.open()
    return store


def drop(args: argparse.Namespace, store: IndexStore) -> None:
    store.close()
    conn = happybase.Connection(args.host, args.thrift_port)
    for spec in store.tables.all():
        conn.delete_table(spec.name, disable=True)
    conn.close()


def timed(call) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def row(label: str, values: list[float], extra: str = "") -> str:
    return f"| {label} | {percentile(values, 0.5) * 1e3:.2f} | {percentile(values, 0.99) * 1e3:.2f} |{extra}"


def hot(args: argparse.Namespace) -> None:
    store = open_index(args, "hot")
    rng = random.Random(19)
    try:
        background = [rng.getrandbits(64) for _ in range(args.background)]
        for n in range(0, len(background), 10_000):
            store.index_many([(f"bg-{n + i}", fp) for i, fp in enumerate(background[n : n + 10_000])])
        hot_fp = rng.getrandbits(64)
        began = time.perf_counter()
        for n in range(0, args.hot, 10_000):
            store.index_many([(f"hot-{i:08d}", hot_fp) for i in range(n, min(args.hot, n + 10_000))])
        load = time.perf_counter() - began
        seconds: dict[str, list[float]] = {"normal": [], "hot": []}
        for n in range(args.probes):
            for kind in ("normal", "hot") if n % 2 else ("hot", "normal"):
                fp = (hot_fp if kind == "hot" else rng.choice(background)) ^ (1 << rng.randrange(64))
                seconds[kind].append(timed(lambda fp=fp: store.query(fp, 3, LIMIT)))
        unbounded = [timed(lambda: store.query(hot_fp ^ 1, 3, None)) for _ in range(3)]
    finally:
        drop(args, store)
    print(f"\nhot: {args.hot:,} documents on one fingerprint (written in {load:.0f} s), {args.background:,} others;")
    print(f"{args.probes:,} probes of each kind alternating, limit {LIMIT}, 1 thread")
    print("| probe | p50 ms | p99 ms |")
    print("|---|---|---|")
    print(row("normal (1 document within distance 3)", seconds["normal"]))
    print(row(f"hot ({args.hot:,} documents within distance 1)", seconds["hot"]))
    print(row("hot, no limit (3 probes: the whole row read)", unbounded))
    for q in (0.5, 0.99):
        ratio = percentile(seconds["hot"], q) / percentile(seconds["normal"], q)
        print(f"hot / normal, p{int(q * 100)}: {ratio:.2f}x")


def churn(args: argparse.Namespace) -> None:
    rng = random.Random(23)
    docs = [f"doc-{n:06d}" for n in range(args.docs)]
    # The first fingerprints, then 10 re-indexings of edited texts: each a few bits from the last (an edit moves
    # a fingerprint a little), so the orphans sit beside the live fingerprints, in the drawers queries scan.
    history = [{d: rng.getrandbits(64) for d in docs}]
    for _ in range(10):
        history.append({d: fp ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64)) for d, fp in history[-1].items()})
    stores = {name: open_index(args, name.replace(" + ", "")) for name in ("baseline", "churned", "churned + gc")}
    try:
        final = history[-1]
        for n in range(0, len(docs), 10_000):
            stores["baseline"].index_many([(d, final[d]) for d in docs[n : n + 10_000]])
        for name in ("churned", "churned + gc"):
            store = stores[name]
            for round_, live in enumerate(history):
                if round_:
                    store.delete(docs[: len(docs) // 2])
                for n in range(0, len(docs), 10_000):
                    store.index_many([(d, live[d]) for d in docs[n : n + 10_000]])
        began = time.perf_counter()
        report = collect(stores["churned + gc"], grace_seconds=0)
        gc_seconds = time.perf_counter() - began
        probes = [final[rng.choice(docs)] ^ (1 << rng.randrange(64)) for _ in range(args.probes)]
        as_written = measure(stores, probes)
        # Deletes stay as markers that scans step over until a major compaction (HBase's Admin API, here):
        # the same probes once every table of the three is major-compacted.
        local = LocalHBase()  # the one `make bench-gc` started
        local.flush(
            [t.name for s in stores.values() for t in (s.tables.drawers, s.tables.fp2docs, s.tables.docs)], 1800, True
        )
        compacted = measure(stores, probes)
    finally:
        for store in stores.values():
            drop(args, store)
    print(f"\nchurn: {args.docs:,} live documents; 10 rounds of delete half + re-index all 1-2 bits away;")
    print(f"gc took {gc_seconds:.0f} s and deleted {report.orphan_drawer_rows_deleted:,} drawer rows; ")
    print(f"{args.probes:,} probes alternating over the three indexes, limit {LIMIT}, 1 thread")
    for label, (seconds, candidates, rows) in (("as written", as_written), ("major-compacted", compacted)):
        print(f"\n{label}:\n| index | p50 ms | p99 ms | drawer rows | candidates per query |\n|---|---|---|---|---|")
        for name in stores:
            print(row(name, seconds[name], f" {rows[name]:,} | {candidates[name] / len(probes):.2f} |"))
        for name in ("churned", "churned + gc"):
            ratio = percentile(seconds[name], 0.5) / percentile(seconds["baseline"], 0.5)
            print(f"{name} / baseline, p50: {ratio:.2f}x; drawer rows {rows[name] / rows['baseline']:.2f}x")


def measure(stores: dict[str, IndexStore], probes: list[int]) -> tuple[dict, dict, dict]:
    """The probes over every index in turn (rotating who goes first): latencies, candidates, drawer rows."""
    seconds: dict[str, list[float]] = {name: [] for name in stores}
    candidates: dict[str, int] = {name: 0 for name in stores}
    order = list(stores)
    for n, fp in enumerate(probes):
        for name in order[n % 3 :] + order[: n % 3]:
            store = stores[name]
            seconds[name].append(timed(lambda s=store, fp=fp: s.query(fp, 3, LIMIT)))
            candidates[name] += len(store.candidates(fp))
    rows = {name: count_rows(s.thrift2, s.tables.drawers.name.encode(), None) for name, s in stores.items()}
    return seconds, candidates, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["hot", "churn", "both"], default="both")
    parser.add_argument("--hot", type=int, default=1_000_000, help="Documents sharing the hot fingerprint.")
    parser.add_argument("--background", type=int, default=100_000, help="Other fingerprints (hot part).")
    parser.add_argument("--docs", type=int, default=20_000, help="Live documents (churn part).")
    parser.add_argument("--probes", type=int, default=2_000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    args = parser.parse_args()
    if args.part in ("hot", "both"):
        hot(args)
    if args.part in ("churn", "both"):
        churn(args)


if __name__ == "__main__":
    main()
