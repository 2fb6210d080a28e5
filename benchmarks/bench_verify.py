"""What verification costs, measured beside the unverified path in one run, on the local HBase.

Two indexes hold the same documents: the evaluation corpus (Debian documentation with edited copies, see
corpus.py) plus --background random fingerprints.  In `sketched` every document carries its 257-byte sketch
(random bytes of the sketch format for the background); `plain` has none, as before verification existed.
Interleaved, document by document:
- CPU per indexed document: fingerprint(text), then the sketch of its tokens (what fingerprint(text,
  sketch=True) adds), and datasketch's MinHash (256 permutations, update_batch) of the same shingles;
- Index latency of one document: with its sketch into `sketched` vs without into `plain`;
- Query latency, probing with every corpus document: unverified on `plain`, unverified on `sketched` (the
  bigger fp2docs cells), and verified (min_similarity 0.9) on `sketched`;
then the on-disk size of both fp2docs tables after a flush.

    make bench-verify            # or: .venv/bin/python benchmarks/bench_verify.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import happybase
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile
from corpus import load_corpus
from datasketch import MinHash

from simhash_deploy import LocalHBase
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.fingerprint import Fingerprint, fingerprint
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.sketch import SKETCH_BINS, SKETCH_FORMAT, sketch
from simhash_server.fingerprint.tokens import tokenize
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig


def open_store(prefix: str, args: argparse.Namespace) -> IndexStore:
    tables = index_tables(prefix, drawer_regions=2)
    client = connect(args.host, args.thrift2_port)
    apply_schema(client, tables)
    client.close()
    config = StoreConfig(args.host, args.thrift_port, args.thrift2_port, prefix, pool_size=16)
    store = IndexStore(config, tables)
    store.open()
    return store


def ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q) * 1e3:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--background", type=int, default=100_000, help="Random fingerprints besides the corpus.")
    parser.add_argument("--index-samples", type=int, default=500)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    args = parser.parse_args()
    run = f"{os.getpid()}"
    sketched, plain = open_store(f"bench_v{run}_sk", args), open_store(f"bench_v{run}_plain", args)
    docs = load_corpus(600)
    rng = np.random.default_rng(7)

    cpu: dict[str, list[float]] = {"fingerprint": [], "our sketch": [], "datasketch MinHash(256)": []}
    made = []
    for d in docs:
        began = time.perf_counter()
        fp = fingerprint(d.text)
        cpu["fingerprint"].append(time.perf_counter() - began)
        tokens = tokenize(normalize(d.text))
        began = time.perf_counter()
        made.append(Fingerprint(fp.value, fp.features, sketch(tokens)))
        cpu["our sketch"].append(time.perf_counter() - began)
        began = time.perf_counter()
        shingles = ["\x1f".join(tokens[i : i + 3]).encode() for i in range(max(len(tokens) - 2, 1))]
        MinHash(num_perm=SKETCH_BINS).update_batch(shingles)
        cpu["datasketch MinHash(256)"].append(time.perf_counter() - began)
    print(f"corpus: {len(docs)} documents, mean {np.mean([len(d.text) for d in docs]):.0f} characters", flush=True)

    background = rng.integers(0, 2**64, size=args.background, dtype=np.uint64)
    noise = rng.integers(0, 256, size=(args.background, SKETCH_BINS), dtype=np.uint8)
    for start in range(0, args.background, 5000):
        stop = min(start + 5000, args.background)
        ids = [f"bg{i}" for i in range(start, stop)]
        sketched.index_many(
            Document(i, int(fp), bytes([SKETCH_FORMAT]) + n.tobytes())
            for i, fp, n in zip(ids, background[start:stop], noise[start:stop], strict=True)
        )
        plain.index_many(zip(ids, (int(fp) for fp in background[start:stop]), strict=True))
    print(f"loaded {args.background:,} background fingerprints into both", flush=True)

    index = {"plain: Index without sketch": [], "sketched: Index with sketch": []}
    for n, (d, fp) in enumerate(zip(docs, made, strict=True)):
        if n < args.index_samples:
            began = time.perf_counter()
            plain.index_many([(d.id, fp.value)])
            index["plain: Index without sketch"].append(time.perf_counter() - began)
            began = time.perf_counter()
            sketched.index_many([Document(d.id, fp.value, fp.sketch)])
            index["sketched: Index with sketch"].append(time.perf_counter() - began)
        else:
            plain.index_many([(d.id, fp.value)])
            sketched.index_many([Document(d.id, fp.value, fp.sketch)])

    paths = ["plain: unverified", "sketched: unverified", "sketched: verified (0.9)"]
    query: dict[str, list[float]] = {p: [] for p in paths}
    hits: dict[str, list[int]] = {p: [] for p in paths}
    below = []
    for fp in made[:200]:  # warm-up: JIT and block cache
        sketched.query_verified(fp.value, fp.sketch, 0.9)
        plain.query(fp.value)
    for fp in made:
        for path in paths:
            began = time.perf_counter()
            if path.startswith("plain"):
                found = plain.query(fp.value)
            elif "unverified" in path:
                found = sketched.query(fp.value)
            else:
                answer = sketched.query_verified(fp.value, fp.sketch, 0.9)
                found = answer.hits
                below.append(answer.below_floor)
            query[path].append(time.perf_counter() - began)
            hits[path].append(len(found))

    tables = [t.tables.fp2docs.name for t in (plain, sketched)]
    local = LocalHBase()
    local.flush(tables)
    time.sleep(5)
    sizes = {name: local.table_bytes(name) for name in tables}
    rows = len(docs) + args.background
    conn = happybase.Connection(args.host, args.thrift_port, timeout=60_000)
    for store in (plain, sketched):
        store.close()
        for spec in store.tables.all():
            conn.delete_table(spec.name, disable=True)
    conn.close()

    print()
    print("| step | p50 ms | p99 ms | mean ms |")
    print("|---|---|---|---|")
    for name, values in {**cpu, **index}.items():
        print(f"| {name} | {ms(values, 0.5)} | {ms(values, 0.99)} | {np.mean(values) * 1e3:.2f} |")
    print()
    print("| query path | p50 ms | p99 ms | mean hits |")
    print("|---|---|---|---|")
    for path in paths:
        print(f"| {path} | {ms(query[path], 0.5)} | {ms(query[path], 0.99)} | {np.mean(hits[path]):.2f} |")
    print()
    fp_mean, sketch_mean = np.mean(cpu["fingerprint"]), np.mean(cpu["our sketch"])
    print(
        f"sketch CPU per document: mean {sketch_mean * 1e6:.0f} us, {sketch_mean / fp_mean:.2f} x fingerprint's; "
        f"datasketch MinHash(256) / our sketch, means: {np.mean(cpu['datasketch MinHash(256)']) / sketch_mean:.1f}"
    )
    index_p50 = {name: percentile(values, 0.5) for name, values in index.items()}
    print(
        "Index with sketch / without, p50: "
        f"{index_p50['sketched: Index with sketch'] / index_p50['plain: Index without sketch']:.2f}"
    )
    base = percentile(query["plain: unverified"], 0.5)
    for path in paths[1:]:
        print(f"{path} / plain: unverified, p50: {percentile(query[path], 0.5) / base:.2f}")
    print(f"verified queries: mean {np.mean(below):.2f} candidates below the floor")
    plain_bytes, sketched_bytes = sizes[tables[0]], sizes[tables[1]]
    print(
        f"fp2docs on disk after flush: plain {plain_bytes / rows:.1f} bytes/document, "
        f"sketched {sketched_bytes / rows:.1f} bytes/document ({rows:,} documents)"
    )


if __name__ == "__main__":
    main()
