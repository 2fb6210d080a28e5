"""The fp2docs table's block encoding: FAST_DIFF against ROW_INDEX_V1, in alternating rounds on one index.

A query that finds candidates reads their fp2docs rows (one multi-get).  Inside a FAST_DIFF block a seek
decodes cells from the block's start; ROW_INDEX_V1 keeps an index of row offsets in each block and
binary-searches it.  On the 10^6 index bench-live keeps (var/live/G1, compacted by its last state), each
round sets the fp2docs family's encoding (Thrift2 modifyColumnFamily), major-compacts the table so every
store file is rewritten in it, warms up, then asks probes that all hit (stored fingerprints 0-3 bits away)
in process, one at a time, and reads the CPU the region server and the Thrift2 gateway took per probe.
Rounds alternate the encodings (``--rounds`` of each); the family is set back to the schema's at the end.

    .venv/bin/python benchmarks/bench_live.py --gcs G1 --keep && .venv/bin/python benchmarks/bench_fp2docs.py
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import time

from bench_bulkload import cpu_seconds
from bench_live import PREFIX, ROOT, WORK
from bench_query import percentile
from bench_scale import probes
from bench_warmup import stored_fingerprints

from simhash_deploy import LocalHBase, Ports
from simhash_schema import connect, index_tables
from simhash_schema.apply import _family_descriptor, _table_name
from simhash_server.index.store import IndexStore, StoreConfig

ENCODINGS = ("FAST_DIFF", "ROW_INDEX_V1")


def hitting(count: int, seed: int) -> list[int]:
    """Stored fingerprints with 0-3 bits flipped (bench_scale.probes' even half): every probe has candidates,
    so every probe reads fp2docs."""
    return probes(2 * count, seed, stored=stored_fingerprints())[::2]


def set_encoding(local: LocalHBase, encoding: str) -> None:
    """The fp2docs family in ``encoding``, every store file rewritten in it."""
    spec = index_tables(PREFIX).fp2docs
    client = connect("127.0.0.1", local.ports.thrift2, 600_000)
    try:
        client.modifyColumnFamily(
            _table_name(spec.name), _family_descriptor(dataclasses.replace(spec.family, encoding=encoding))
        )
    finally:
        client.close()
    local.flush([spec.name], timeout=1800, compact=True)


def round_(local: LocalHBase, probes: list[int], warmup: list[int]) -> dict[str, float]:
    config = StoreConfig(thrift_port=local.ports.thrift, thrift2_port=local.ports.thrift2, table_prefix=PREFIX)
    status = local.status()
    server, gateway = status["master"]["pid"], status["thrift2"]["pid"]
    assert isinstance(server, int) and isinstance(gateway, int)
    with IndexStore(config) as store:
        for fp in warmup:
            store.query(fp)
        before = cpu_seconds(server), cpu_seconds(gateway)
        timings = []
        for fp in probes:
            began = time.perf_counter()
            store.query(fp)
            timings.append(time.perf_counter() - began)
        after = cpu_seconds(server), cpu_seconds(gateway)
    return {
        "p50 ms": 1000 * percentile(timings, 0.5),
        "p99 ms": 1000 * percentile(timings, 0.99),
        "region server us": 1e6 * (after[0] - before[0]) / len(probes),
        "gateway us": 1e6 * (after[1] - before[1]) / len(probes),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=4000, help="hitting probes per round")
    parser.add_argument("--warmup", type=int, default=2000, help="probes before each round's")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each encoding, alternating (at least 2)")
    parser.add_argument("--gc", default="G1", help="the bench-live index to use (var/live/GC)")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error(f"--rounds must be at least 2 (the first round of each warms the JVMs up), got {args.rounds}")
    work = WORK / args.gc
    if not (work / "data").is_dir():
        raise SystemExit(f"needs the index under {work}: run `benchmarks/bench_live.py --gcs {args.gc} --keep`")
    documents = json.loads((ROOT / "var" / "live-results.json").read_text())["args"]["documents"]
    local = LocalHBase(var_dir=work, ports=Ports.free(), master_heap_mb=2048, gc="G1")
    local.start()
    results: list[dict[str, object]] = []
    try:
        for n in range(2 * args.rounds):
            encoding = ENCODINGS[n % 2]
            set_encoding(local, encoding)
            measured = round_(local, hitting(args.queries, seed=2 * n), hitting(args.warmup, seed=2 * n + 1))
            results.append({"round": n + 1, "encoding": encoding} | measured)
            print(json.dumps(results[-1]), flush=True)
    finally:
        set_encoding(local, index_tables(PREFIX).fp2docs.family.encoding)
        local.stop()
    print(f"\n{os.cpu_count()} cores; {documents:,} documents; {args.queries:,} hitting probes per round, in process")
    print("| round | fp2docs encoding | p50 ms | p99 ms | region server µs per query | gateway µs per query |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['round']} | {r['encoding']} | {r['p50 ms']:.2f} | {r['p99 ms']:.2f} | "
            f"{r['region server us']:,.0f} | {r['gateway us']:,.0f} |"
        )
    later = results[2:]  # the first pair warms the JVMs up
    for key in ("p50 ms", "p99 ms", "region server us", "gateway us"):
        mean = {e: statistics.geometric_mean([r[key] for r in later if r["encoding"] == e]) for e in ENCODINGS}  # type: ignore[misc]
        print(f"- {key}, rounds 3 on: ROW_INDEX_V1/FAST_DIFF {mean['ROW_INDEX_V1'] / mean['FAST_DIFF']:.2f}x")


if __name__ == "__main__":
    main()
