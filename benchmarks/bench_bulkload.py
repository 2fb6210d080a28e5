"""Bulk-load speed on this machine: `simhash-index bulk-load` of N random fingerprints (bin format), then of
JSON lines with texts (the Debian corpus of corpus.py, cycled under fresh ids), and where the CPU went.

It starts an HBase of its own (var/bench-hbase, free ports, a 6 GiB master heap: at 2 GiB the memstores
flush under heap pressure every few seconds and the region server's CPU per row doubles), applies a fresh
schema, runs the loader as a subprocess, and reads the CPU time of each process from /proc: the loader
and its workers (Python), the Thrift1 gateway, and the master JVM that also is the region server.

    .venv/bin/python benchmarks/bench_bulkload.py          # or: make bench-bulkload (10 million)
    .venv/bin/python benchmarks/bench_bulkload.py --n 1e6 --texts 5000
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import cpu_seconds, tree_cpu

from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "var" / "bench-bulkload"


def write_binary(path: Path, n: int, seed: int) -> None:
    """The bin format (simhash_server.bulk.input): magic, then u64 fingerprint + u16 id length + id."""
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(b"SHBULK1\n")
        step = 1_000_000
        for start in range(0, n, step):
            count = min(step, n - start)
            fps = rng.integers(0, 2**64, size=count, dtype=np.uint64, endpoint=False)
            ids = [f"b{i:010d}".encode() for i in range(start, start + count)]
            record = np.dtype([("fp", ">u8"), ("len", ">u2"), ("id", "S11")])
            out = np.empty(count, dtype=record)
            out["fp"], out["len"], out["id"] = fps, 11, ids
            f.write(out.tobytes())


def write_texts(path: Path, n: int) -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from corpus import load_corpus

    docs = load_corpus()
    chars = 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            doc = docs[i % len(docs)]
            chars += len(doc.text)
            f.write(json.dumps({"doc_id": f"t{i}", "text": doc.text}, ensure_ascii=False) + "\n")
    return chars


def run_load(local: LocalHBase, prefix: str, path: Path, extra: list[str]) -> dict[str, float]:
    pids = {name: entry["pid"] for name, entry in local.status().items()}
    before = {name: cpu_seconds(pid) for name, pid in pids.items() if pid}
    cmd = [
        str(ROOT / ".venv" / "bin" / "simhash-index"),
        "bulk-load",
        str(path),
        "--table-prefix",
        prefix,
        "--thrift-port",
        str(local.ports.thrift),
        "--thrift2-port",
        str(local.ports.thrift2),
        "--quiet",
        "--checkpoint",
        str(path) + f".{prefix}.checkpoint",
        "--rejects",
        str(path) + f".{prefix}.rejects",
        *extra,
    ]
    began = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    loader_cpu = 0.0
    while proc.poll() is None:
        loader_cpu = max(loader_cpu, tree_cpu(proc.pid))
        time.sleep(0.5)
    elapsed = time.monotonic() - began
    out = proc.stdout.read() if proc.stdout else ""
    if proc.returncode != 0:
        raise SystemExit(f"bulk-load failed ({proc.returncode}): {out}")
    print(out.strip(), flush=True)
    after = {name: cpu_seconds(pid) for name, pid in pids.items() if pid}
    cpu = {f"cpu_{name}": after[name] - before[name] for name in before}
    cpu["cpu_loader"] = loader_cpu
    return {"elapsed": elapsed, **cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=lambda s: int(float(s)), default=10_000_000, help="Fingerprints to load.")
    parser.add_argument("--texts", type=int, default=20_000, help="JSON lines with texts to load.")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=5000)
    parser.add_argument("--regions", type=int, default=8)
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    parser.add_argument("--wal", choices=["on", "off"], default="on")
    args = parser.parse_args()

    WORK.mkdir(parents=True, exist_ok=True)
    local = LocalHBase(var_dir=ROOT / "var" / "bench-hbase", ports=Ports.free(), master_heap_mb=args.master_heap_mb)
    local.stop()
    local.start()
    try:
        extra = ["--workers", str(args.workers), "--batch-size", str(args.batch_size)]
        if args.wal == "off":
            extra += ["--no-wal", "--hbase-var-dir", str(local.var_dir)]
        results = {}
        for name, n in (("fingerprints", args.n), ("texts", args.texts)):
            if n <= 0:
                continue
            prefix = f"bench_bl_{name}_{time.strftime('%H%M%S')}"
            client = connect("127.0.0.1", local.ports.thrift2, 60_000)  # fresh: the gateway drops idle ones
            apply_schema(client, index_tables(prefix, drawer_regions=args.regions))
            client.close()
            path = WORK / (f"fps-{n}.bin" if name == "fingerprints" else f"texts-{n}.jsonl")
            if not path.exists():
                print(f"writing {path} ...", flush=True)
                if name == "fingerprints":
                    write_binary(path, n, seed=n)
                else:
                    write_texts(path, n)
            r = run_load(local, prefix, path, extra)
            r["n"] = n
            print(f"{name}: {json.dumps(r)}", flush=True)
            if name == "fingerprints":  # bytes per row on disk, for docs/operations.md
                tables = index_tables(prefix)
                names = [tables.drawers.name, tables.fp2docs.name, tables.docs.name]
                local.flush(names)
                for table, rows in zip(names, (10 * n, n, n), strict=True):
                    r[f"bytes_per_row_{table.rsplit('_', 1)[1]}"] = local.table_bytes(table) / rows
            results[name] = r
        print_table(results, args)
    finally:
        local.stop()


def print_table(results: dict[str, dict[str, float]], args: argparse.Namespace) -> None:
    print(
        f"\nworkers {args.workers}, batch {args.batch_size}, drawer regions {args.regions}, "
        f"master heap {args.master_heap_mb} MiB, WAL {args.wal}, {os.cpu_count()} cores"
    )
    print("| input | documents | elapsed s | documents/s | drawer rows/s | CPU s: loader | Thrift1 | region server |")
    print("|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        n, el = r["n"], r["elapsed"]
        print(
            f"| {name} | {n:,} | {el:,.0f} | {n / el:,.0f} | {10 * n / el:,.0f} | {r['cpu_loader']:,.0f} | "
            f"{r.get('cpu_thrift', 0):,.0f} | {r.get('cpu_master', 0):,.0f} |"
        )
    sizes = {k: v for k, v in results.get("fingerprints", {}).items() if k.startswith("bytes_per_row_")}
    if sizes:
        print("on disk after a flush, bytes per row: " + ", ".join(f"{k[14:]} {v:.1f}" for k, v in sizes.items()))
    for name, r in results.items():
        total = r["cpu_loader"] + r.get("cpu_thrift", 0) + r.get("cpu_master", 0)
        per = 1e6 / r["n"]
        print(
            f"{name}: CPU per document {total * per:,.0f} µs = loader {r['cpu_loader'] * per:,.0f} + Thrift1 "
            f"{r.get('cpu_thrift', 0) * per:,.0f} + region server {r.get('cpu_master', 0) * per:,.0f}; "
            f"cores busy {total / r['elapsed']:.2f} of {os.cpu_count()}"
        )


if __name__ == "__main__":
    main()
