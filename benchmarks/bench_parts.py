"""What a verified text query's parts cost (fingerprint/parts.py): v4's verified query by text with its parts and
without them, side by side in one run, on the local HBase of `make run`.

One v4 index holds --background random fingerprints (random sketch bytes after a real v4 header) and the pages
of the evaluation corpus (corpus.py).  Each page is sent twice as a query: as it is, and inside another site's
header and footer (pairs.py's templates, drawn afresh per page).  Each is asked at v4's floor through the
server's own async store (index/async_store.py, what `serve` calls), the way `Query` answers it: the text
fingerprinted and sketched, then its drawers scanned and the candidates verified; with parts, the parts are
fingerprinted too and their drawers scanned in the same batch.  The two ways alternate, each first in turn.
It prints each way's fingerprinting CPU, its latency (fingerprinting included) p50 / p99, its hits, and how
often the page in a template found the page itself.

    make bench-parts             # or: .venv/bin/python benchmarks/bench_parts.py --background 1000000
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
from corpus import Doc, load_corpus
from pairs import TemplateMaker, wrap

from simhash_schema import apply_schema, connect, index_tables
from simhash_server.fingerprint import V4, fingerprint, recipe_of
from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.model import VERIFY_MAX_DISTANCE, Document, Query
from simhash_server.index.store import IndexStore, StoreConfig

WAYS = ("without parts", "with parts")


def templated(docs: list[Doc], rng: random.Random) -> list[str]:
    """Each page inside a template of its language, 7-28% of the copy as pairs.py's P1 draws it."""
    makers = {lang: TemplateMaker(lang, [d for d in docs if d.lang == lang]) for lang in {d.lang for d in docs}}
    out = []
    for d in docs:
        share = rng.uniform(0.07, 0.28)
        out.append(wrap(d.text, makers[d.lang].make(rng, int(len(d.text) * share / (1 - share)))))
    return out


async def ask(index: AsyncIndexStore, text: str, parts: bool) -> tuple[float, float, list[str]]:
    """(fingerprinting seconds, seconds in all, hit ids) of one verified query of ``text``."""
    began = time.perf_counter()
    fp = fingerprint(text, V4, sketch=True, parts=parts)  # as the service makes them (rpc/requests.py)
    found = fp.parts
    made = time.perf_counter()
    query = Query(fp.value, VERIFY_MAX_DISTANCE, 20, None, recipe_of(V4).query_floor, fp.sketch, found)
    (answer,) = await index.query_each([query])
    return made - began, time.perf_counter() - began, [h.doc_id for h in answer.hits]


async def measure(args: argparse.Namespace) -> None:
    prefix = f"bench_parts{os.getpid()}"
    tables = index_tables(prefix)
    client = connect(args.host, args.thrift2_port)
    apply_schema(client, tables)
    client.close()
    config = StoreConfig(args.host, args.thrift_port, args.thrift2_port, prefix, pool_size=16, fingerprint_version=V4)
    store = IndexStore(config, tables)
    store.open()
    index = AsyncIndexStore(store, ThreadPoolExecutor(8))
    rng, np_rng = random.Random(11), np.random.default_rng(11)
    docs = [d for d in load_corpus(600) if not d.edits][: args.pages]
    made = [fingerprint(d.text, V4, sketch=True) for d in docs]
    header = made[0].sketch[: recipe_of(V4).sketch.header]
    size = recipe_of(V4).sketch.size - len(header)
    for start in range(0, args.background, 5000):
        fps = np_rng.integers(0, 2**64, size=min(5000, args.background - start), dtype=np.uint64)
        noise = np_rng.integers(0, 256, size=(len(fps), size), dtype=np.uint8)
        store.index_many(
            Document(f"bg{start + i}", int(fp), header + n.tobytes())
            for i, (fp, n) in enumerate(zip(fps, noise, strict=True))
        )
    store.index_many(Document(d.id, f.value, f.sketch) for d, f in zip(docs, made, strict=True))
    copies = templated(docs, rng)
    print(f"{args.background:,} background fingerprints and {len(docs)} pages indexed", flush=True)

    for text in [d.text for d in docs[:100]]:  # warm-up: the JIT and the block cache
        await ask(index, text, True)
    cpu: dict[str, list[float]] = {w: [] for w in WAYS}
    wall: dict[str, list[float]] = {w: [] for w in WAYS}
    hits: dict[str, list[int]] = {w: [] for w in WAYS}
    found: dict[str, int] = dict.fromkeys(WAYS, 0)
    for n, (d, copy) in enumerate(zip(docs, copies, strict=True)):
        for text in (d.text, copy):
            for way in WAYS if n % 2 else WAYS[::-1]:
                spent, total, ids = await ask(index, text, way == "with parts")
                cpu[way].append(spent)
                wall[way].append(total)
                hits[way].append(len(ids))
                found[way] += text is copy and d.id in ids

    index.close()
    store.close()
    conn = happybase.Connection(args.host, args.thrift_port, timeout=60_000)
    for spec in tables.all():
        conn.delete_table(spec.name, disable=True)
    conn.close()

    mean_chars = np.mean([len(d.text) for d in docs])
    print(f"\n{len(docs)} pages (mean {mean_chars:.0f} characters), each sent as it is and inside a template")
    print("| query | fingerprinting µs (mean) | verified query p50 / p99 ms | mean hits | pages in a template found |")
    print("|---|---|---|---|---|")
    for way in WAYS:
        print(
            f"| {way} | {np.mean(cpu[way]) * 1e6:.0f} | {percentile(wall[way], 0.5) * 1e3:.2f} / "
            f"{percentile(wall[way], 0.99) * 1e3:.2f} | {np.mean(hits[way]):.2f} | {found[way]} of {len(docs)} |"
        )
    a, b = (wall[w] for w in WAYS)
    print(
        f"with / without parts: p50 {percentile(b, 0.5) / percentile(a, 0.5):.2f}x, "
        f"p99 {percentile(b, 0.99) / percentile(a, 0.99):.2f}x, "
        f"fingerprinting CPU {np.mean(cpu['with parts']) / np.mean(cpu['without parts']):.2f}x"
    )


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
