"""End-to-end gRPC latency and throughput with ghz, beside the store-level floor, in one run.

Starts `simhash-index serve` over the 1e6-fingerprint index that bench_query.py loaded (table prefix
bench_q1000000_r2), then drives it with ghz (a Go load generator: `make tools` builds it into var/bin):
- Fingerprint of a 3-character text at concurrency 32: what any call costs (gRPC and the service's edge);
- Query by fingerprint at concurrency 1 and 32 (half the probes near stored fingerprints, half random);
- Index by fingerprint and by ~1 KB Chinese text at concurrency 32 (online writes of new documents: every
  call a new id; documents/s);
- IndexBatch of 100 fingerprints at concurrency 8 (documents/s for callers who can batch);
- QueryBatch of 100 fingerprints at concurrency 8 beside Query at 32 (queries/s), and DeduplicateBatch of
  100 ~1 KB texts at concurrency 8 beside Deduplicate at 32 (documents/s: each text sent `--copies` times,
  4 by default, so most are found to be duplicates, in both; `--copies 1`: every document new);
and measures IndexStore.query in-process over the same probes (the floor of bench_query.py).
Reports the server's resident memory under load, and each batch call's items/s over its single call's.  The
index's tables are flushed and major-compacted first, and every server's reads run before any server's
writes, so each read sees the same settled index; the documents a server wrote are deleted before the next
one writes (and at the end), so each server's writes meet the index's 1e6 documents alone (their drawer rows
stay, as orphans that queries skip).  A server given `--table-prefix` serves a copy of the index instead (in
another table layout, say), which is settled and cleaned up the same way.

    .venv/bin/python benchmarks/bench_grpc.py      # or: make bench-grpc
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from simhash_deploy import LocalHBase, Ports

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_seconds

from simhash_schema import index_tables
from simhash_server.fingerprint import fingerprint
from simhash_server.index.keys import drawer_keys
from simhash_server.index.store import IndexStore, StoreConfig

ROOT = Path(__file__).resolve().parents[1]
PREFIX = "bench_q1000000_r{regions}"
N = 1_000_000


def ghz_binary() -> str:
    local = ROOT / "var" / "bin" / "ghz"
    found = str(local) if local.is_file() else shutil.which("ghz")
    if not found:
        sys.exit("ghz not found: run `make tools` (builds it from the Go module proxy into var/bin)")
    return found


def probes(count: int) -> list[int]:
    rng = np.random.default_rng(N)  # the generator bench_query.py loaded the index with
    stored = rng.integers(0, 2**64, size=N, dtype=np.uint64)
    out = []
    for i in range(count):
        if i % 2:
            out.append(int(rng.integers(0, 2**64, dtype=np.uint64)))
        else:
            fp = int(stored[rng.integers(0, N)])
            for bit in rng.choice(64, size=int(rng.integers(0, 4)), replace=False):
                fp ^= 1 << int(bit)
            out.append(fp)
    return out


def protoset() -> str:
    path = ROOT / "var" / "simhash_index.protoset"
    proto = ROOT / "proto"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            f"-I{proto}",
            f"--descriptor_set_out={path}",
            "--include_imports",
            str(proto / "simhash_index" / "v1" / "simhash_index.proto"),
        ],
        check=True,
    )
    return str(path)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_ghz(
    ghz: str,
    port: int,
    method: str,
    data: list[dict],
    concurrency: int,
    total: int,
    pids: dict[str, int],
    metadata: dict[str, str] | None = None,
):
    """ghz's latency report, the server's peak RSS, and CPU µs per call of each process (from /proc); every
    call sends ``metadata``, if given."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    cmd = [
        ghz,
        "--insecure",
        "--protoset",  # ghz's own .proto parser predates proto3 `optional`; a compiled descriptor set works
        protoset(),
        "--call",
        f"simhash_index.v1.SimHashIndex.{method}",
        "--data-file",
        f.name,
        "-c",
        str(concurrency),
        "-n",
        str(total),
        "--format",
        "json",
        "--connections",
        str(min(concurrency, 4)),
        "--output",
        f.name + ".out",  # a file, not a pipe: the report outgrows a pipe's buffer while we poll
        *(["--metadata", json.dumps(metadata)] if metadata else []),
        f"127.0.0.1:{port}",
    ]
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    proc = subprocess.Popen(cmd)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, rss_mb(pids["server"]))
        time.sleep(0.2)
    cpu = {name: (cpu_seconds(pid) - before[name]) / total * 1e6 for name, pid in pids.items()}
    report = json.loads(Path(f.name + ".out").read_text())
    os.unlink(f.name)
    os.unlink(f.name + ".out")
    lat = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    codes = report.get("statusCodeDistribution", {})
    return {"p50": lat.get(50), "p99": lat.get(99), "rps": report["rps"], "codes": codes, "rss": peak, "cpu": cpu}


# One batch per call and no bound on lanes: every call makes its own HBase calls, as before coalescing.
UNCOALESCED = "--query-lanes 64 --write-lanes 64 --batch-queries 1 --batch-documents 1"
BATCH_DOCUMENTS = 100


def serve(port: int, env: dict[str, str], serve_args: str, command: list[str] | None = None) -> subprocess.Popen:
    """`simhash-index serve` (or ``command``, which takes serve's options) on ``port``, once SERVING."""
    server = subprocess.Popen(
        [
            *(command or [str(ROOT / ".venv" / "bin" / "simhash-index"), "serve"]),
            "--address",
            f"127.0.0.1:{port}",
            "--metrics-address",
            "",
            "--log-level",
            "WARNING",
            *serve_args.split(),
        ],
        env=env,
    )
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    for _ in range(300):
        try:
            if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == 1:
                return server
        except grpc.RpcError:
            time.sleep(0.2)
    server.terminate()
    sys.exit("the server did not become healthy")


INDEX_CALLS, BATCH_CALLS, TEXT_CALLS = 5000, 300, 2000
# Distinct ~1 KB texts each Deduplicate row sends (`--copies` times each): two rows' worth is most of the
# evaluation corpus's 4,030 pieces.  80 DeduplicateBatch calls at 4 copies; at 500 (20 calls) a row lasted
# about a second and moved by a third between runs.
DEDUP_DISTINCT = 2000


def reads(ghz: str, port: int, pids: dict[str, int], fps: list[int], queries: int) -> dict[str, dict]:
    short = [{"text": "短文本"}]
    results = {"Fingerprint of 3 characters c=32": run_ghz(ghz, port, "Fingerprint", short, 32, queries, pids)}
    by_simhash = [{"simhash": str(fp)} for fp in fps]
    run_ghz(ghz, port, "Query", by_simhash, 8, 1000, pids)  # warm up
    for c in (1, 32):
        results[f"Query c={c}"] = run_ghz(ghz, port, "Query", by_simhash, c, queries, pids)
    n = BATCH_DOCUMENTS
    # As many queries as each Query row, n to a call.
    batches = [{"queries": [by_simhash[(b + k) % len(by_simhash)] for k in range(n)]} for b in range(0, queries, n)]
    name = f"QueryBatch of {n} by simhash c=8"
    results[name] = run_ghz(ghz, port, "QueryBatch", batches, 8, len(batches), pids)
    results[name]["documents"] = n
    return results


def writes(ghz: str, port: int, pids: dict[str, int], written: dict[str, int], copies: int) -> dict[str, dict]:
    """Index calls of new documents (new ids every run), added to ``written`` (id -> fingerprint)."""
    run = f"bench-{time.time_ns()}-"
    rng = np.random.default_rng(99)
    values = rng.integers(0, 2**64, size=INDEX_CALLS + BATCH_CALLS * BATCH_DOCUMENTS, dtype=np.uint64)
    by_fp = [{"doc_id": f"{run}{i}", "simhash": str(int(v))} for i, v in enumerate(values)]
    online, batched = by_fp[:INDEX_CALLS], by_fp[INDEX_CALLS:]
    results = {"Index by simhash c=32": run_ghz(ghz, port, "Index", online, 32, INDEX_CALLS, pids)}
    n = BATCH_DOCUMENTS
    batches = [{"documents": batched[b : b + n]} for b in range(0, len(batched), n)]  # bulk callers' way
    results["IndexBatch of 100 by simhash c=8"] = run_ghz(ghz, port, "IndexBatch", batches, 8, BATCH_CALLS, pids)
    results["IndexBatch of 100 by simhash c=8"]["documents"] = BATCH_DOCUMENTS
    from bench_fingerprint import one_kb_docs

    texts = one_kb_docs(500)
    by_text = [{"doc_id": f"{run}text-{i}", "text": texts[i % len(texts)]} for i in range(TEXT_CALLS)]
    results["Index by 1 KB text c=32"] = run_ghz(ghz, port, "Index", by_text, 32, TEXT_CALLS, pids)
    written |= {d["doc_id"]: int(d["simhash"]) for d in by_fp}
    written |= {d["doc_id"]: fingerprint(d["text"]).value for d in by_text}
    results |= deduplicate(ghz, port, pids, run, written, copies)
    return results


def kb_pieces(count: int) -> list[str]:
    """``count`` ~1 KB Chinese texts, none a near-duplicate of another: the evaluation corpus's whole pages
    cut into 1,024-byte pieces, a piece left out when its fingerprint is within 8 bits of one kept (pages of
    one manual share licence and navigation text)."""
    from corpus import load_corpus

    kept: list[str] = []
    prints = np.zeros(0, dtype=np.uint64)
    for doc in load_corpus(whole=True):
        if doc.lang != "zh" or doc.edited_from:
            continue
        data = doc.text.encode()
        for at in range(0, len(data) - 1023, 1024):
            piece = data[at : at + 1024].decode("utf-8", errors="ignore")
            if "{{" in piece:  # ghz reads its data as a Go template
                continue
            fp = np.uint64(fingerprint(piece).value)
            if not len(prints) or int(np.bitwise_count(prints ^ fp).min()) > 8:
                kept.append(piece)
                prints = np.append(prints, fp)
                if len(kept) == count:
                    return kept
    sys.exit(f"the corpus gives {len(kept)} distinct pieces of 1 KB, not {count}: ask for more copies of each")


def deduplicate(
    ghz: str, port: int, pids: dict[str, int], run: str, written: dict[str, int], copies: int
) -> dict[str, dict]:
    """Deduplicate one by one, then DeduplicateBatch, each over its own ~1 KB texts sent ``copies`` times."""
    distinct, calls = DEDUP_DISTINCT, DEDUP_DISTINCT * copies
    texts = kb_pieces(2 * distinct)
    single_texts, batch_texts = texts[:distinct], texts[distinct:]
    single = [{"doc_id": f"{run}dedup-{i}", "text": single_texts[i % distinct]} for i in range(calls)]
    results = {"Deduplicate by 1 KB text c=32": run_ghz(ghz, port, "Deduplicate", single, 32, calls, pids)}
    items = [{"doc_id": f"{run}dedup-batch-{i}", "text": batch_texts[i % distinct]} for i in range(calls)]
    n = BATCH_DOCUMENTS
    batches = [{"documents": items[b : b + n]} for b in range(0, len(items), n)]
    # 8 callers, as the other batch rows: 800 items in flight, fewer than the `distinct` between two copies of a
    # text, as 32 single calls are.  A batch never meets its own texts in a batch still running, whose claims
    # it would wait for: a contention the single calls of this bench never have.
    callers = 8
    name = f"DeduplicateBatch of {n} by 1 KB text c={callers}"
    results[name] = run_ghz(ghz, port, "DeduplicateBatch", batches, callers, len(batches), pids)
    results[name]["documents"] = n
    written |= {d["doc_id"]: fingerprint(d["text"]).value for d in single + items}
    return results


def forget(store: IndexStore, written: dict[str, int]) -> None:
    """Delete the documents the benchmark wrote, and their drawer rows, so the index is as bench_query.py
    left it (the fingerprints are the benchmark's own: random, or of its texts)."""
    ids = list(written)
    for start in range(0, len(ids), 1000):
        store.delete(ids[start : start + 1000])
    keys = [key for fp in set(written.values()) for key in drawer_keys(fp)]

    def drop(conn: Any) -> None:
        with conn.table(store.tables.drawers.name).batch(batch_size=10_000) as batch:
            for key in keys:
                batch.delete(key)

    store.thrift1.run(drop)


def served_prefix(serve_args: str, default: str) -> str:
    """The index a server started with ``serve_args`` serves: its --table-prefix, else ``default``."""
    words = shlex.split(serve_args)
    for n, word in enumerate(words):
        if word == "--table-prefix" and n + 1 < len(words):
            return words[n + 1]
        if word.startswith("--table-prefix="):
            return word.split("=", 1)[1]
    return default


def measure(local: LocalHBase, env: dict[str, str], serve_args: str, load: Callable[..., dict], *args: Any) -> dict:
    """``load(port, pids, *args)`` against a server started for it on ``port``."""
    port = Ports.free().thrift
    server = serve(port, env, serve_args)
    try:
        pids = {"server": server.pid} | {name: s["pid"] for name, s in local.status().items() if s["pid"]}
        return load(port, pids, *args)
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=5000)
    parser.add_argument("--regions", type=int, default=2, help="Which bench_query.py index to serve.")
    parser.add_argument("--serve-args", default="", help="Extra `simhash-index serve` options, e.g. '--query-lanes 2'.")
    parser.add_argument(
        "--baseline-args",
        default=UNCOALESCED,
        help="Options of the server measured beside it ('' for none); default: coalescing off.",
    )
    parser.add_argument(
        "--copies",
        type=int,
        default=4,
        help="Times each text is sent to Deduplicate and DeduplicateBatch (1: every document new).",
    )
    args = parser.parse_args()
    if not 1 <= args.copies <= 16:
        parser.error(f"--copies must be within 1 and 16, got {args.copies}")
    prefix = PREFIX.format(regions=args.regions)
    ghz = ghz_binary()
    local = LocalHBase()
    env = {
        **os.environ,
        "SIMHASH_TABLE_PREFIX": prefix,
        "SIMHASH_HBASE_THRIFT_PORT": str(local.ports.thrift),
        "SIMHASH_HBASE_THRIFT2_PORT": str(local.ports.thrift2),
    }
    fps = probes(1000)
    configs = {"serve " + (args.serve_args or "(defaults)"): args.serve_args}
    if args.baseline_args:
        configs = {"serve " + args.baseline_args: args.baseline_args, **configs}
    # A server given --table-prefix serves a copy of the index (another table layout, say) instead.
    prefixes = {label: served_prefix(serve_args, prefix) for label, serve_args in configs.items()}
    # Each run starts from settled indexes, one store file per region: a read seeks in every store file and
    # in the memstore, so what earlier runs left unflushed or uncompacted would change every figure.
    settled = [t.name for p in dict.fromkeys(prefixes.values()) for t in index_tables(p).documents()]
    local.flush(settled, 1800, compact=True)
    # Every server's reads first, then every server's writes: each read sees the same index.
    runs: dict[str, dict[str, dict]] = {
        label: measure(local, env, serve_args, functools.partial(reads, ghz), fps, args.queries)
        for label, serve_args in configs.items()
    }
    store = IndexStore(
        StoreConfig(thrift_port=local.ports.thrift, thrift2_port=local.ports.thrift2, table_prefix=prefix)
    )
    store.open()
    floor = []
    for fp in fps[:100] + fps:
        began = time.perf_counter()
        store.query(fp)
        floor.append(time.perf_counter() - began)
    try:
        for label, serve_args in configs.items():  # each server writes into the index as bench_query left it
            written: dict[str, int] = {}
            try:
                runs[label] |= measure(local, env, serve_args, functools.partial(writes, ghz), written, args.copies)
            finally:
                with IndexStore(replace(store.config, table_prefix=prefixes[label])) as own:
                    forget(own, written)
    finally:
        store.close()
    floor = sorted(floor[100:])
    print(f"N = {N:,} fingerprints; ghz, {args.queries} queries per concurrency level")
    print("| server | call | p50 ms | p99 ms | calls/s | documents/s | status codes | server RSS MB (peak) |")
    print("|---|---|---|---|---|---|---|---|")
    for label, results in runs.items():
        for name, r in results.items():
            docs = f"{r['rps'] * r['documents']:,.0f}" if "documents" in r else ""
            print(
                f"| {label} | {name} | {r['p50']:.2f} | {r['p99']:.2f} | {r['rps']:,.0f} | {docs} | {r['codes']} | "
                f"{r['rss']:.0f} |"
            )
    print(
        f"| in-process | store.query (floor), 1 thread | {floor[len(floor) // 2] * 1e3:.2f} | "
        f"{floor[int(len(floor) * 0.99)] * 1e3:.2f} | {len(floor) / sum(floor):,.0f} | | | |"
    )
    names = list(next(iter(next(iter(runs.values())).values()))["cpu"])
    print("\nCPU µs per call, by process (ghz itself not counted):")
    print("| server | call | " + " | ".join(names) + " | all |")
    print("|---|---|" + "---|" * (len(names) + 1))
    for label, results in runs.items():
        for name, r in results.items():
            cells = " | ".join(f"{r['cpu'][n]:.0f}" for n in names)
            print(f"| {label} | {name} | {cells} | {sum(r['cpu'].values()):.0f} |")
    print("\nBatch calls against single calls, items/s:")
    for label, results in runs.items():
        for batch, single in (("QueryBatch of", "Query c=32"), ("DeduplicateBatch of", "Deduplicate by")):
            b = next((r for name, r in results.items() if name.startswith(batch)), None)
            one = next((r for name, r in results.items() if name.startswith(single)), None)
            if b and one:
                ratio = b["rps"] * b["documents"] / one["rps"]
                print(f"- {label}: {batch.split()[0]} / {single.split()[0]}: {ratio:.2f}x")
    if len(runs) == 2:
        (base_label, base), (label, new) = runs.items()
        print(f"\nRatios, {label} / {base_label}, calls/s:")
        for name in new:
            print(f"- {name}: {new[name]['rps'] / base[name]['rps']:.2f}")


if __name__ == "__main__":
    main()
