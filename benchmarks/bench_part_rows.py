"""What v7's part rows cost and find (index/keys.py): a verified text query on a v6 index and on a v7 one, side
by side in one run, on the local HBase of `make run`.

Both indexes hold the same --background random fingerprints, each with random sketch bytes of format 5 that
store one random part, so the v7 index keeps part rows for every one of them, as an index of texts does; then
the pages of the evaluation corpus (corpus.py), each stored inside another site's header and footer (pairs.py's
templates, 7-28% of the copy).  Each bare page is then sent as a verified query at the recipe's floor, with its
parts, through the server's own async store (index/async_store.py, what `serve` calls), to both indexes, the
versions alternating, each first in turn; latency includes fingerprinting.  It prints each version's drawer
rows, query p50 / p99, and how often the bare page found its stored copy.

    make bench-part-rows         # or: .venv/bin/python benchmarks/bench_part_rows.py --background 1000000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import happybase
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile
from bench_parts import templated
from bench_verify import open_store
from corpus import load_corpus

from simhash_server.fingerprint import V6, V7, fingerprint, recipe_of, short_name
from simhash_server.fingerprint.sketch_format import parts_trailer
from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.model import VERIFY_MAX_DISTANCE, Document, Query
from simhash_server.index.scans import count_rows
from simhash_server.index.store import IndexStore

VERSIONS = (V6, V7)


async def ask(index: AsyncIndexStore, version: str, text: str) -> tuple[float, list[str]]:
    """(seconds, hit ids) of one verified query of ``text`` with its parts, as `Query` asks it."""
    began = time.perf_counter()
    fp = fingerprint(text, version, sketch=True, parts=True)  # as the service makes them (rpc/requests.py)
    query = Query(fp.value, VERIFY_MAX_DISTANCE, 20, None, recipe_of(version).query_floor, fp.sketch, fp.parts)
    (answer,) = await index.query_each([query])
    return time.perf_counter() - began, [h.doc_id for h in answer.hits]


def load_background(stores: dict[str, IndexStore], header: bytes, count: int, rng: np.random.Generator) -> None:
    """The same ``count`` random fingerprints in each index, each with random bins after a real format-5 header,
    one random stored part and no repeated words."""
    form = recipe_of(V7).sketch
    for start in range(0, count, 5000):
        fps = rng.integers(0, 2**64, size=min(5000, count - start), dtype=np.uint64)
        parts = rng.integers(0, 2**64, size=len(fps), dtype=np.uint64)
        noise = rng.integers(0, 256, size=(len(fps), form.size - form.header), dtype=np.uint8)
        documents = [
            Document(f"bg{start + i}", int(fp), header + n.tobytes() + parts_trailer((int(part),)) + b"\x00")
            for i, (fp, part, n) in enumerate(zip(fps, parts, noise, strict=True))
        ]
        for store in stores.values():
            store.index_many(documents)


async def measure(args: argparse.Namespace) -> None:
    run = os.getpid()
    stores = {v: open_store(f"bench_rows{run}_{short_name(v)}", args, v, None) for v in VERSIONS}
    indexes = {v: AsyncIndexStore(store, ThreadPoolExecutor(8)) for v, store in stores.items()}
    rng, np_rng = random.Random(13), np.random.default_rng(13)
    docs = [d for d in load_corpus(600) if not d.edits][: args.pages]
    copies = templated(docs, rng)
    made = [fingerprint(copy, V7, sketch=True) for copy in copies]  # v6's and v7's are one fingerprint and sketch
    load_background(stores, made[0].sketch[: recipe_of(V7).sketch.header], args.background, np_rng)
    for store in stores.values():
        store.index_many(Document(d.id, f.value, f.sketch) for d, f in zip(docs, made, strict=True))
    rows = {v: count_rows(store.thrift2, store.tables.drawers.name.encode(), None) for v, store in stores.items()}
    print(f"{args.background:,} background fingerprints and {len(docs)} pages in templates indexed", flush=True)

    for d in docs[:100]:  # warm-up: the JIT and the block cache
        for v in VERSIONS:
            await ask(indexes[v], v, d.text)
    wall: dict[str, list[float]] = {v: [] for v in VERSIONS}
    found: dict[str, int] = dict.fromkeys(VERSIONS, 0)
    for n, d in enumerate(docs):
        for v in VERSIONS if n % 2 else VERSIONS[::-1]:
            took, ids = await ask(indexes[v], v, d.text)
            wall[v].append(took)
            found[v] += d.id in ids

    conn = happybase.Connection(args.host, args.thrift_port, timeout=60_000)
    for v, store in stores.items():
        indexes[v].close()
        for spec in store.tables.all():
            conn.delete_table(spec.name, disable=True)
    conn.close()

    mean_chars = np.mean([len(d.text) for d in docs])
    print(f"\n{len(docs)} pages (mean {mean_chars:.0f} characters), each stored inside a template, sent bare")
    print("| version | drawer table rows | verified query p50 / p99 ms | bare pages that found their stored copy |")
    print("|---|---|---|---|")
    for v in VERSIONS:
        print(
            f"| {short_name(v)} | {rows[v]:,} | {percentile(wall[v], 0.5) * 1e3:.2f} / "
            f"{percentile(wall[v], 0.99) * 1e3:.2f} | {found[v]} of {len(docs)} |"
        )
    a, b = (wall[v] for v in VERSIONS)
    p50, p99 = (percentile(b, q) / percentile(a, q) for q in (0.5, 0.99))
    print(f"v7 / v6: p50 {p50:.2f}x, p99 {p99:.2f}x, drawer rows {rows[V7] / rows[V6]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--background", type=int, default=1_000_000, help="Random fingerprints besides the pages.")
    parser.add_argument("--pages", type=int, default=1000, help="Corpus pages indexed and sent (at most).")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--thrift-port", type=int, default=9090)
    parser.add_argument("--thrift2-port", type=int, default=9091)
    asyncio.run(measure(parser.parse_args()))


if __name__ == "__main__":
    main()
