"""The two load paths side by side in one run: `hfile-load` (HFiles by HBase's MapReduce tooling, local
mode) and `bulk-load` (Thrift writes), each loading the same N random fingerprints (bin format) into a fresh
index of one HBase.  Per path: fingerprints/s end to end, CPU of each process (the Python loader, the job's
JVM, the Thrift gateway, the region server), and bytes on disk per table after a major compaction.

It starts an HBase of its own (var/bench-hbase, free ports, 6 GiB heap, as bench_bulkload.py does).

With ``--runner yarn`` the two paths are `hfile-load` with the local runner (into that HBase) and `hfile-load
--runner yarn` into the container cluster (deploy/cluster.yaml, a stack of its own: HDFS, 2 region servers,
2 NodeManagers), submitted from this machine as tests/cluster/test_yarn.py submits it.  For the cluster it
reports the region servers' and the NodeManagers' CPU (their containers' cgroups) and the memory the whole
stack held (the sum of its containers' resident memory: idle before the load, and the most while it ran).

    .venv/bin/python benchmarks/bench_hfile.py          # or: make bench-hfile (10 million each)
    .venv/bin/python benchmarks/bench_hfile.py --n 1e6
    .venv/bin/python benchmarks/bench_hfile.py --runner yarn   # or: make bench-hfile BENCH_ARGS='--runner yarn'

``--texts`` runs the texts mode instead (bench_hfile_texts.py: pages fingerprinted in the job's tasks, the
local runner and YARN side by side); the arguments after it are that suite's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from _common import CLI, children, cluster_client, cpu_seconds, own_cpu, tree_cpu
from bench_bulkload import WORK, write_binary

from simhash_deploy import LocalHBase, Ports
from simhash_deploy.stack import SERVICES, Stack
from simhash_schema import apply_schema, connect, index_tables

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "var" / "bench-hfile" / "results.json"


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
    finish(proc, command[1])
    after = {name: cpu_seconds(pid) for name, pid in servers.items()}
    result = {"elapsed": elapsed, "cpu_loader": loader}
    result["cpu_job_jvm"] = sum(cpu for pid, cpu in kids.items() if comm[pid] == "java")
    result["cpu_workers"] = sum(cpu for pid, cpu in kids.items() if comm[pid] != "java")
    for name in servers:
        result[f"cpu_{name}"] = after[name] - before[name]
    return result


def finish(proc: subprocess.Popen, what: str) -> None:
    """A load's summary printed; SystemExit with its output if it failed (3: loaded, some lines rejected)."""
    out, err = proc.communicate()
    if proc.returncode not in (0, 3):
        raise SystemExit(f"{what} failed ({proc.returncode}): {out}\n{err[-3000:]}")
    print(out.strip(), flush=True)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def main() -> None:
    if "--texts" in sys.argv:  # the texts mode: a suite of its own, run in this process's place
        rest = [a for a in sys.argv[1:] if a != "--texts"]
        script = str(Path(__file__).with_name("bench_hfile_texts.py"))
        os.execv(sys.executable, [sys.executable, script, *rest])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=lambda s: int(float(s)), default=10_000_000)
    parser.add_argument("--regions", type=int, default=16, help="Drawer regions (fp2docs gets a quarter).")
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    parser.add_argument(
        "--paths", help="Which paths, in order (hfile, bulk, yarn) [hfile,bulk; --runner yarn: hfile,yarn]."
    )
    parser.add_argument("--runner", choices=("local", "yarn"), default="local")
    parser.add_argument("--clusters", action="store_true", help="then time `clusters` over each hfile index")
    parser.add_argument(
        "--yarn-define", action="append", default=[], metavar="KEY=VALUE", help="a -D setting for the yarn job"
    )
    args = parser.parse_args()
    paths = (args.paths or ("hfile,yarn" if args.runner == "yarn" else "hfile,bulk")).split(",")

    WORK.mkdir(parents=True, exist_ok=True)
    source = WORK / f"fps-{args.n}.bin"
    if not source.exists():
        print(f"writing {source} ...", flush=True)
        write_binary(source, args.n, seed=args.n)
    results: dict[str, dict[str, float]] = {}
    if "yarn" in paths:
        paths.remove("yarn")
        results["yarn"] = on_yarn(source, args.n, args.regions, args.clusters, args.yarn_define)
        print(json.dumps(results["yarn"]), flush=True)
    local = LocalHBase(var_dir=ROOT / "var" / "bench-hbase", ports=Ports.free(), master_heap_mb=args.master_heap_mb)
    local.stop()
    local.start()
    try:
        for path in paths:
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
            if args.clusters and path == "hfile":
                r["clusters_s"] = timed([
                    CLI, "clusters", str(WORK / f"{prefix}.clusters"), "--table-prefix", prefix, "--quiet",
                    "--thrift-port", str(local.ports.thrift), "--thrift2-port", str(local.ports.thrift2),
                    "--zookeeper", f"127.0.0.1:{local.ports.zookeeper}",
                ])  # fmt: skip
            if args.runner == "local":  # bytes after a major compaction (the cluster's are not measured)
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


def timed(command: list[str], env: dict[str, str] | None = None) -> float:
    print(" ".join(command[1:]), flush=True)
    began = time.monotonic()
    subprocess.run(command, env=env, check=True)
    return time.monotonic() - began


def on_yarn(source: Path, n: int, regions: int, clusters: bool, defines: Sequence[str] = ()) -> dict[str, float]:
    """hfile-load --runner yarn of ``source`` into a fresh index of a container cluster of its own (then, with
    ``clusters``, `clusters --runner yarn` over it)."""
    stack = Stack.on_free_ports(f"simhashbench{os.getpid()}")
    home = WORK / stack.project
    home.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    up = stack.run("up", "-d", timeout=900)
    try:
        if up.returncode != 0:
            raise SystemExit(f"the cluster did not start: {up.stderr[-3000:]}")
        for service in ("thrift", "regionserver1", "regionserver2", "resourcemanager", "nodemanager1", "nodemanager2"):
            stack.healthy(service, timeout=600)
        print(f"cluster up in {time.monotonic() - began:.0f} s", flush=True)
        prefix = f"bench_yarn_{time.strftime('%H%M%S')}"
        conf, client_env = cluster_client(stack, home, prefix)
        subprocess.run([CLI, "schema", "apply", "--regions", str(regions)], env=client_env, check=True)
        time.sleep(30)  # let the stack settle after its start (compactions, the balancer's first run)
        idle = sum(stack.memory_rss(s) for s in SERVICES)
        busy = ("regionserver1", "regionserver2", "nodemanager1", "nodemanager2")
        before = {s: stack.cpu_seconds(s) for s in busy}
        command = [
            CLI,
            "hfile-load",
            str(source),
            "--staging",
            str(home / "staging"),
            "--rejects",
            str(home / "rejects"),
            "--new-ids-only",
            "--runner",
            "yarn",
            "--conf-dir",
            str(conf),
            "--staging-uri",
            "hdfs://namenode:8020/bench-hfile",
            "--quiet",
            *(f"-D{d}" for d in defines),
        ]
        print(f"yarn: {' '.join(command[1:])}", flush=True)
        start = time.monotonic()
        proc = subprocess.Popen(command, env=client_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak, client_cpu = idle, 0.0
        while proc.poll() is None:
            peak = max(peak, sum(stack.memory_rss(s) for s in SERVICES))
            client_cpu = max(client_cpu, tree_cpu(proc.pid))
            time.sleep(1)
        elapsed = time.monotonic() - start
        finish(proc, "hfile-load --runner yarn")
        used = {s: stack.cpu_seconds(s) - before[s] for s in busy}
        result = {
            "n": n,
            "elapsed": elapsed,
            "cpu_client": client_cpu,
            "cpu_region_servers": used["regionserver1"] + used["regionserver2"],
            "cpu_nodemanagers": used["nodemanager1"] + used["nodemanager2"],
            "rss_idle": idle,
            "rss_peak": peak,
        }
        if clusters:
            remote = [
                "--runner",
                "yarn",
                "--conf-dir",
                str(conf),
                "--staging-uri",
                "hdfs://namenode:8020/bench-clusters",
            ]
            output = home / "clusters"
            result["clusters_s"] = timed([CLI, "clusters", str(output), "--quiet", *remote], env=client_env)
        return result
    finally:
        stack.run("down", "-v", timeout=600)


def report(results: dict[str, dict[str, float]]) -> None:
    if "yarn" in results:
        report_yarn(results)
        return
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


def report_yarn(results: dict[str, dict[str, float]]) -> None:
    print(f"\n{os.cpu_count()} cores")
    print(
        "| runner | HBase | fingerprints | elapsed s | fingerprints/s | CPU s: client (loader + JVM) | tasks | "
        "region servers | region-server µs/fp | memory GiB (idle / most) | then clusters, s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    if "hfile" in results:
        r = results["hfile"]
        print(
            f"| local | standalone (1 JVM) | {r['n']:,} | {r['elapsed']:,.0f} | {r['n'] / r['elapsed']:,.0f} | "
            f"{r['cpu_loader'] + r['cpu_job_jvm']:,.0f} | (in the client) | {r.get('cpu_master', 0):,.0f} | "
            f"{1e6 * r.get('cpu_master', 0) / r['n']:,.1f} | | {r.get('clusters_s', 0):,.0f} |"
        )
    y = results["yarn"]
    print(
        f"| yarn | cluster (2 region servers on HDFS) | {y['n']:,} | {y['elapsed']:,.0f} | "
        f"{y['n'] / y['elapsed']:,.0f} | {y['cpu_client']:,.0f} | {y['cpu_nodemanagers']:,.0f} | "
        f"{y['cpu_region_servers']:,.0f} | {1e6 * y['cpu_region_servers'] / y['n']:,.1f} | "
        f"{y['rss_idle'] / 2**30:.1f} / {y['rss_peak'] / 2**30:.1f} | {y.get('clusters_s', 0):,.0f} |"
    )
    if "hfile" in results:
        h = results["hfile"]
        print(f"yarn/local fingerprints/s: {h['elapsed'] / y['elapsed']:.2f}x")
        if "clusters_s" in h and "clusters_s" in y:
            print(f"clusters wall time, yarn/local: {y['clusters_s'] / h['clusters_s']:.2f}x")


if __name__ == "__main__":
    main()
