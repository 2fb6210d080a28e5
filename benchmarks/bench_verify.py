"""What verification costs by recipe version: v4 (containment, format 3) and v6, the default (v4's containment,
its parts and its renamed neighbours, format 5), side by side in one run, on the local HBase of `make run`.

Two indexes hold the same --background random fingerprints, each with random sketch bytes of its version's
format, plus the evaluation corpus (corpus.py: Debian pages with edited copies) fingerprinted and sketched
by each version.  Interleaved, document by document:
- CPU per document: fingerprint + sketch under each version;
- CPU per candidate: one sketch comparison (``similarity``) of each document with its edited copy, in the
  extension and in numpy and Python (its fallback), alternating;
- Query latency: every corpus document asks its own index a verified query at its version's default floor
  (0.75 for both), the two versions alternating, each first in turn; also an unverified query of each;
then the fp2docs table's bytes per document on disk after a flush, for each.

With --scale, both versions' queries scan the drawer table of bench-scale's index instead (var/scale, on its
own HBase: run `make bench-scale` first; 10^8 fingerprints when it has run in full).  Each version keeps its
own fp2docs, docs and meta tables beside that shared drawer table; its corpus documents are deleted from it
at the end.  Random fingerprints almost never come within reach of a corpus document, so what the drawer
table's size changes is the scans' cost, which is what this measures at 10^8.

    make bench-verify            # or: .venv/bin/python benchmarks/bench_verify.py --background 1000000
    .venv/bin/python benchmarks/bench_verify.py --scale
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

import happybase
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SCALE_DRAWER_REGIONS, SCALE_HEAP_MB, SCALE_PREFIX, SCALE_WORK, percentile
from corpus import load_corpus

from simhash_deploy import LocalHBase, Ports
from simhash_schema import TableSpec, apply_schema, connect, index_tables
from simhash_server.fingerprint import V4, V6, fingerprint, recipe_of, short_name
from simhash_server.fingerprint.sketch import similarity
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

VERSIONS = (V4, V6)


def open_store(prefix: str, args: argparse.Namespace, version: str, drawers: TableSpec | None) -> IndexStore:
    tables = index_tables(prefix)
    if drawers is not None:
        tables = dataclasses.replace(tables, drawers=drawers)
    client = connect(args.host, args.thrift2_port)
    apply_schema(client, tables)
    client.close()
    config = StoreConfig(
        args.host, args.thrift_port, args.thrift2_port, prefix, pool_size=16, fingerprint_version=version
    )
    store = IndexStore(config, tables)
    store.open()
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--background", type=int, default=1_000_000, help="Random fingerprints besides the corpus.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    parser.add_argument("--scale", action="store_true", help="scan bench-scale's drawer table (var/scale) instead")
    args = parser.parse_args()
    run = f"{os.getpid()}"
    local, drawers = LocalHBase(), None
    if args.scale:
        state = SCALE_WORK / "state.json"
        if not state.exists():
            raise SystemExit(f"--scale needs bench-scale's index: {state} is missing (run `make bench-scale`)")
        held = json.loads(state.read_text())
        args.background = held["loaded"] + sum(held.get("live", {}).values())
        local = LocalHBase(var_dir=SCALE_WORK / "hbase", ports=Ports.free(), master_heap_mb=SCALE_HEAP_MB)
        local.start()
        args.host, args.thrift_port, args.thrift2_port = "127.0.0.1", local.ports.thrift, local.ports.thrift2
        drawers = index_tables(SCALE_PREFIX, drawer_regions=SCALE_DRAWER_REGIONS).drawers
        print(f"bench-scale's index: {args.background:,} fingerprints in {drawers.name}", flush=True)
    try:
        measure(args, run, local, drawers)
    finally:
        if args.scale:
            local.stop()


def load_background(
    stores: dict[str, IndexStore], headers: dict[str, bytes], count: int, rng: np.random.Generator
) -> None:
    """The same ``count`` random fingerprints in each index, each with random sketch bytes after a real header
    of its version's format (the format byte, and a count)."""
    background = rng.integers(0, 2**64, size=count, dtype=np.uint64)
    for v, store in stores.items():
        form = recipe_of(v).sketch
        for start in range(0, count, 5000):
            stop = min(start + 5000, count)
            noise = rng.integers(0, 256, size=(stop - start, form.size - form.header), dtype=np.uint8)
            trailer = bytes(form.parts + form.renames)  # no parts follow, nor repeated words
            store.index_many(
                Document(f"bg{i}", int(fp), headers[v] + n.tobytes() + trailer)
                for i, fp, n in zip(range(start, stop), background[start:stop], noise, strict=True)
            )


def score_candidates(docs: list, made: dict[str, list], rounds: int = 5) -> dict[tuple[str, bool], float]:
    """µs per sketch comparison, each edited copy's against its original's, per version, in the extension
    (True) and in numpy and Python (False): the paths alternate round by round, each first in turn."""
    where = {d.id: k for k, d in enumerate(docs)}
    pairs = [(where[d.edited_from], k) for k, d in enumerate(docs) if d.edited_from in where]
    paths = [(v, native) for v in VERSIONS for native in (True, False)]
    took: dict[tuple[str, bool], list[float]] = {p: [] for p in paths}
    for r in range(rounds):
        for v, native in paths if r % 2 else paths[::-1]:
            sketches = [(made[v][i].sketch, made[v][j].sketch) for i, j in pairs]
            began = time.perf_counter()
            for a, b in sketches:
                similarity(a, b, native)
            took[(v, native)].append((time.perf_counter() - began) / len(sketches))
    return {p: float(np.median(t)) * 1e6 for p, t in took.items()}


def measure(args: argparse.Namespace, run: str, local: LocalHBase, drawers: TableSpec | None) -> None:
    stores = {v: open_store(f"bench_v{run}_{short_name(v)}", args, v, drawers) for v in VERSIONS}
    docs = load_corpus(600)
    rng = np.random.default_rng(7)

    cpu: dict[str, list[float]] = {v: [] for v in VERSIONS}
    made: dict[str, list] = {v: [] for v in VERSIONS}
    for v in VERSIONS:  # warm: each version's extension builds its tables on first use
        fingerprint(docs[0].text, v, sketch=True)
    for d in docs:
        for v in VERSIONS:
            began = time.perf_counter()
            made[v].append(fingerprint(d.text, v, sketch=True))
            cpu[v].append(time.perf_counter() - began)
    print(f"corpus: {len(docs)} documents, mean {np.mean([len(d.text) for d in docs]):.0f} characters", flush=True)
    scoring = score_candidates(docs, made)

    if drawers is None:  # with --scale, bench-scale's drawer table is the background
        headers = {v: made[v][0].sketch[: recipe_of(v).sketch.header] for v in VERSIONS}
        load_background(stores, headers, args.background, rng)
    for v, store in stores.items():
        store.index_many(Document(d.id, fp.value, fp.sketch) for d, fp in zip(docs, made[v], strict=True))
        print(f"{args.background:,} background fingerprints and the corpus in {short_name(v)}", flush=True)

    paths = [(v, verified) for v in VERSIONS for verified in (True, False)]
    query: dict[tuple[str, bool], list[float]] = {p: [] for p in paths}
    hits: dict[tuple[str, bool], list[int]] = {p: [] for p in paths}
    for n in range(min(200, len(docs))):  # warm-up: JIT and block cache
        for v in VERSIONS:
            stores[v].query_verified(made[v][n].value, made[v][n].sketch, recipe_of(v).dedup_floor)
    for n in range(len(docs)):
        order = paths if n % 2 else paths[::-1]
        for v, verified in order:
            fp, store = made[v][n], stores[v]
            began = time.perf_counter()
            if verified:
                found = store.query_verified(fp.value, fp.sketch, recipe_of(v).dedup_floor).hits
            else:
                found = store.query(fp.value)
            query[(v, verified)].append(time.perf_counter() - began)
            hits[(v, verified)].append(len(found))

    tables = [stores[v].tables.fp2docs.name for v in VERSIONS]
    local.flush(tables)
    time.sleep(5)  # the flushed files reach their final size
    sizes = {name: local.table_bytes(name) for name in tables}
    rows = len(docs) + (0 if drawers else args.background)
    conn = happybase.Connection(args.host, args.thrift_port, timeout=60_000)
    for store in stores.values():
        if drawers:  # the shared drawer table keeps only its own rows
            ids = [d.id for d in docs]
            for start in range(0, len(ids), 500):
                store.delete(ids[start : start + 500])
        store.close()
        for spec in store.tables.all():
            if spec != drawers:
                conn.delete_table(spec.name, disable=True)
    conn.close()

    print(f"\n{args.background:,} background fingerprints{' (bench-scale)' if drawers else ''}")
    print(
        "| version | fingerprint + sketch, µs per document (mean) | scoring a candidate, µs: extension / numpy "
        "| verified query p50 / p99 ms | unverified p50 / p99 ms | mean hits, verified | fp2docs bytes per document |"
    )
    print("|---|---|---|---|---|---|---|")
    for v, name in zip(VERSIONS, tables, strict=True):
        ver, unv = query[(v, True)], query[(v, False)]
        print(
            f"| {short_name(v)} | {np.mean(cpu[v]) * 1e6:.0f} | {scoring[(v, True)]:.1f} / {scoring[(v, False)]:.1f} "
            f"| {percentile(ver, 0.5) * 1e3:.2f} / "
            f"{percentile(ver, 0.99) * 1e3:.2f} | {percentile(unv, 0.5) * 1e3:.2f} / {percentile(unv, 0.99) * 1e3:.2f} "
            f"| {np.mean(hits[(v, True)]):.2f} | {sizes[name] / rows:.1f} |"
        )
    a, b = VERSIONS
    for v in VERSIONS:
        print(
            f"{short_name(v)}, scoring a candidate: extension / numpy {scoring[(v, True)] / scoring[(v, False)]:.2f}x"
        )
    for verified in (True, False):
        ratio = percentile(query[(b, verified)], 0.5) / percentile(query[(a, verified)], 0.5)
        ratio99 = percentile(query[(b, verified)], 0.99) / percentile(query[(a, verified)], 0.99)
        kind = "verified" if verified else "unverified"
        print(f"{short_name(b)} / {short_name(a)}, {kind} query: p50 {ratio:.2f}x, p99 {ratio99:.2f}x")
    print(
        f"{short_name(b)} / {short_name(a)}, documents/s fingerprint + sketch: {np.mean(cpu[a]) / np.mean(cpu[b]):.2f}x"
    )


if __name__ == "__main__":
    main()
