"""The two load paths side by side in one run: `hfile-load` (HFiles by HBase's MapReduce tooling, local
mode) and `bulk-load` (Thrift writes), each loading the same N random fingerprints (bin format) into a fresh
index of one HBase.  Per path: fingerprints/s end to end, CPU of each process (the Python loader, the job's
JVM, the Thrift gateway, the region server), and bytes on disk per table after a major compaction.

It starts an HBase of its own (var/bench-hbase, free ports, 6 GiB heap, as bench_bulkload.py does).

    .venv/bin/python benchmarks/bench_hfile.py          # or: make bench-hfile (10 million each)
    .venv/bin/python benchmarks/bench_hfile.py --n 1e6
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import time
from pathlib import Path

from _common import cpu_seconds
from bench_bulkload import WORK, write_binary

from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables

ROOT = Path(__file__).resolve().parents[1]
CLI = str(ROOT / ".venv" / "bin" / "simhash-index")
RESULTS = ROOT / "var" / "bench-hfile" / "results.json"


def own_cpu(pid: int) -> float:
    """User + system CPU of the process itself (not its children)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            found += [int(c) for c in task.read_text().split()]
    return found


def run(local: LocalHBase, command: list[str]) -> dict[str, float]:
    """Run a load; CPU of the loader, of each kind of child (python workers or the java job), of the gateway
    and of the region server, sampled from /proc every 0.5 s (a child's last sample is kept)."""
    servers = {name: entry["pid"] for name, entry in local.status().items() if entry["pid"]}
    before = {name: cpu_seconds(pid) for name, pid in servers.items()}
    began = time.monotonic()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    loader, kids, comm = 0.0, {}, {}
    while proc.poll() is None:
        loader = max(loader, own_cpu(proc.pid))
        for child in children(proc.pid):
            comm.setdefault(child, _comm(child))
            kids[child] = max(kids.get(child, 0.0), cpu_seconds(child))
        time.sleep(0.5)
    elapsed = time.monotonic() - began
    out, err = proc.communicate()
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{command[1]} failed ({proc.returncode}): {out}\n{err[-3000:]}")
    print(out.strip(), flush=True)
    after = {name: cpu_seconds(pid) for name, pid in servers.items()}
    result = {"elapsed": elapsed, "cpu_loader": loader}
    result["cpu_job_jvm"] = sum(cpu for pid, cpu in kids.items() if comm[pid] == "java")
    result["cpu_workers"] = sum(cpu for pid, cpu in kids.items() if comm[pid] != "java")
    for name in servers:
        result[f"cpu_{name}"] = after[name] - before[name]
    return result


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=lambda s: int(float(s)), default=10_000_000)
    parser.add_argument("--regions", type=int, default=16, help="Drawer regions (fp2docs gets a quarter).")
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    parser.add_argument("--paths", default="hfile,bulk", help="Which paths, in order.")
    args = parser.parse_args()

    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / f"fps-{args.n}.bin"
    if not source.exists():
        print(f"writing {source} ...", flush=True)
        write_binary(source, args.n, seed=args.n)
    local = LocalHBase(var_dir=ROOT / "var" / "bench-hbase", ports=Ports.free(), master_heap_mb=args.master_heap_mb)
    local.stop()
    local.start()
    results: dict[str, dict[str, float]] = {}
    try:
        for path in args.paths.split(","):
            prefix = f"bench_{path}_{time.strftime('%H%M%S')}"
            tables = index_tables(prefix, drawer_regions=args.regions)
            client = connect("127.0.0.1", local.ports.thrift2, 60_000)
            apply_schema(client, tables)
            client.close()
            common = [
                str(source),
                "--table-prefix",
                prefix,
                "--thrift-port",
                str(local.ports.thrift),
                "--thrift2-port",
                str(local.ports.thrift2),
                "--rejects",
                str(WORK / f"{prefix}.rejects"),
                "--quiet",
            ]
            if path == "hfile":
                staging = WORK / f"{prefix}.staging"
                extra = ["--staging", str(staging), "--zookeeper", f"127.0.0.1:{local.ports.zookeeper}"]
                command = [CLI, "hfile-load", *common, *extra, "--new-ids-only"]
            else:
                command = [CLI, "bulk-load", *common, "--checkpoint", str(WORK / f"{prefix}.checkpoint")]
            print(f"{path}: {' '.join(command[1:])}", flush=True)
            r = run(local, command)
            names = [tables.drawers.name, tables.fp2docs.name, tables.docs.name]
            local.flush(names, timeout=3600, compact=True)
            for table in names:
                r[f"bytes_{table.rsplit('_', 1)[1]}"] = local.table_bytes(table)
            r["n"] = args.n
            results[path] = r
            print(json.dumps(r), flush=True)
    finally:
        local.stop()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1))
    report(results)


def report(results: dict[str, dict[str, float]]) -> None:
    print(f"\n{os.cpu_count()} cores; region server = the standalone HBase JVM (master)")
    print(
        "| path | fingerprints | elapsed s | fingerprints/s | CPU s: loader | workers | job JVM | Thrift1 | "
        "region server | region server µs/fp | MB on disk: drawers | fp2docs | docs |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path, r in results.items():
        n = r["n"]
        print(
            f"| {path}-load | {n:,} | {r['elapsed']:,.0f} | {n / r['elapsed']:,.0f} | {r['cpu_loader']:,.0f} | "
            f"{r['cpu_workers']:,.0f} | {r['cpu_job_jvm']:,.0f} | {r.get('cpu_thrift', 0):,.0f} | "
            f"{r.get('cpu_master', 0):,.0f} | {1e6 * r.get('cpu_master', 0) / n:,.1f} | "
            f"{r['bytes_drawers'] / 1e6:,.0f} | {r['bytes_fp2docs'] / 1e6:,.0f} | {r['bytes_docs'] / 1e6:,.0f} |"
        )
    if {"hfile", "bulk"} <= results.keys():
        h, b = results["hfile"], results["bulk"]
        print(f"hfile/bulk fingerprints/s: {b['elapsed'] / h['elapsed']:.2f}x")
        print(f"region-server CPU per fingerprint, hfile/bulk: {h['cpu_master'] / b['cpu_master']:.1%}")
        disk = sum(h[k] for k in h if k.startswith("bytes_")) / sum(b[k] for k in b if k.startswith("bytes_"))
        print(f"bytes on disk after a major compaction, hfile/bulk: {disk:.3f}x")


if __name__ == "__main__":
    main()
