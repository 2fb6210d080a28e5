"""`simhash-index clusters` measured: exactness at 10^5 with a 10^5-fingerprint hot prefix, then wall time on
the scale benchmark's data at 10^7 (and 10^8 where bench-scale built it), against asking the index once
per document.

1. exactness: tests/integration/test_clusters.py with 200,000 documents (100,000 planted among random
   ones, 100,000 in one drawer prefix) and the default budget, every pair checked by brute force;
2. scale: an index `clusters7` of bench-scale's first 10^7 fingerprints (splitmix64(i), id s<i>), loaded
   with hfile-load into bench-scale's HBase (var/scale) once and kept; `--sizes 1e7,1e8` also clusters
   bench-scale's own index (`scale`, 10^8 after a full bench-scale).  For each: the job's wall time per
   phase, pairs found against the theory for random fingerprints (N^2/2 * sum_{k<=3} C(64,k) / 2^64),
   comparisons against theirs (N^2/2 * (6/2^26 + 4/2^25)), the shuffle bytes, and the time N queries
   through IndexStore.query would take, from 2,000 queries of stored fingerprints timed here.

3. `--reads scan,snapshot`: the job once per way of reading the tables (through the region server, or
   from HBase snapshots), while a `serve` replica of the same index answers one caller asking for stored
   fingerprints at `--query-rate` per second; the replica's query p50/p99 during each job, and with no job.

    .venv/bin/python benchmarks/bench_clusters.py             # or: make bench-clusters
    .venv/bin/python benchmarks/bench_clusters.py --sizes 1e7,1e8 --skip-exactness
    .venv/bin/python benchmarks/bench_clusters.py --skip-exactness --reads scan,snapshot
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
from math import comb

import numpy as np
from _common import CLI, ROOT, cpu_seconds, splitmix64
from bench_scale import PREFIX, WORK, write_chunk

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.store import IndexStore, StoreConfig

SMALL_PREFIX = "clusters7"
STATE = WORK / "clusters.json"
DRAWER_BUCKETS = 6 / 2**26 + 4 / 2**25  # six drawers of 26 bits, four of 25


def theory(n: int) -> tuple[float, float]:
    """Expected pairs within distance 3, and comparisons, for n random fingerprints."""
    half = n * (n - 1) / 2
    return half * sum(comb(64, k) for k in range(4)) / 2**64, half * DRAWER_BUCKETS


def exactness() -> dict[str, object]:
    env = os.environ | {"SIMHASH_CLUSTERS_N": "200000", "SIMHASH_CLUSTERS_HOT": "100000"}
    env["SIMHASH_CLUSTERS_BUDGET"] = "50000000"
    env["SIMHASH_CLUSTERS_REPORT"] = str(WORK / "clusters-exactness.json")
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/integration/test_clusters.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    print(done.stdout[-1500:], flush=True)
    summary = json.loads((WORK / "clusters-exactness.json").read_text())
    keep = ("documents", "pairs", "comparisons", "hot_groups", "hot_group_fingerprints", "tiles", "clusters", "seconds")
    return {"passed": done.returncode == 0, "s": time.monotonic() - began, "tail": done.stdout.splitlines()[-1]} | {
        key: summary.get(key) for key in keep
    }


def load(local: LocalHBase, prefix: str, n: int) -> None:
    """bench-scale's first n fingerprints into the index `prefix`, once (recorded in var/scale/clusters.json)."""
    state = json.loads(STATE.read_text()) if STATE.exists() else {}
    if state.get(prefix) == n:
        return
    client = connect("127.0.0.1", local.ports.thrift2, 120_000)
    apply_schema(client, index_tables(prefix))
    client.close()
    source = WORK / f"{prefix}.bin"
    write_chunk(source, 0, n)
    began = time.monotonic()
    command = [
        CLI, "hfile-load", str(source), "--new-ids-only", "--quiet", "--staging", str(WORK / "staging"),
        "--rejects", str(WORK / "rejects.tsv"), "--table-prefix", prefix,
        "--thrift-port", str(local.ports.thrift), "--thrift2-port", str(local.ports.thrift2),
        "--zookeeper", f"127.0.0.1:{local.ports.zookeeper}",
    ]  # fmt: skip
    subprocess.run(command, check=True)
    source.unlink()
    state[prefix] = n
    STATE.write_text(json.dumps(state))
    print(f"loaded {n:,} into {prefix} in {time.monotonic() - began:,.0f} s", flush=True)


def cluster(local: LocalHBase, prefix: str, n: int, args: argparse.Namespace, read: str = "scan") -> dict[str, object]:
    output = WORK / f"clusters-{prefix}"
    shutil.rmtree(output, ignore_errors=True)
    command = [
        CLI, "clusters", str(output), "--table-prefix", prefix, "--quiet",
        "--thrift-port", str(local.ports.thrift), "--thrift2-port", str(local.ports.thrift2),
        "--zookeeper", f"127.0.0.1:{local.ports.zookeeper}",
        "--heap-mb", str(args.heap_mb), "--parallel", str(args.parallel), "--reducers", str(args.parallel),
        "--read", read,
    ]  # fmt: skip
    if read == "snapshot":  # the launcher's root directory (simhash_deploy.site.standalone_properties)
        command += ["-D", f"hbase.rootdir={(local.var_dir / 'data').as_uri()}"]
    hbase = int(local.status()["master"]["pid"])  # the standalone HBase: master and region server in one JVM
    hbase_cpu = cpu_seconds(hbase)
    began = time.monotonic()
    cpu = os.times()
    subprocess.run(command, check=True)
    wall = time.monotonic() - began
    after = os.times()
    hbase_cpu = cpu_seconds(hbase) - hbase_cpu
    summary = json.loads((output / "summary.json").read_text())
    pairs, comparisons = theory(summary["fingerprints"])  # bench-scale's index also holds its live writes
    return {
        "n": n,
        "read": read,
        "wall_s": wall,
        "hbase_cpu_s": hbase_cpu,
        "job_cpu_s": (after.children_user + after.children_system) - (cpu.children_user + cpu.children_system),
        "seconds": summary["seconds"],
        "pairs": summary["pairs"],
        "pairs_theory": pairs,
        "comparisons": summary["comparisons"],
        "comparisons_theory": comparisons,
        "drawer_rows": summary["drawer_rows"],
        "documents": summary["documents"],
        "clusters": summary["clusters"],
        "star_rounds": summary["star_rounds"],
        "shuffle_bytes": summary["shuffle_bytes"],
        "largest_group": summary["largest_prefix_groups"][0]["fingerprints"],
    } | (queries(local, prefix, n) if read == "scan" else {})


class Replica:
    """A `simhash-index serve` of the index, and one caller asking it for stored fingerprints at a fixed rate
    (in a thread) between start() and stop(), which returns the latencies in ms."""

    def __init__(self, local: LocalHBase, prefix: str, n: int, rate: float) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.address = f"127.0.0.1:{probe.getsockname()[1]}"
        command = [
            CLI, "serve", "--address", self.address, "--metrics-address", "", "--table-prefix", prefix,
            "--thrift-port", str(local.ports.thrift), "--thrift2-port", str(local.ports.thrift2),
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.asked = [int(fp) for fp in splitmix64(np.random.default_rng(11).integers(0, n, size=100_000))]
        self.rate = rate
        self.client = SimHashClient(self.address)
        self.client.wait_until_serving(timeout=300)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._times: list[float] = []

    def start(self) -> None:
        self._stop.clear()
        self._times = []
        self._thread = threading.Thread(target=self._ask, daemon=True)
        self._thread.start()

    def _ask(self) -> None:
        due = time.monotonic()
        for i in range(10**9):
            if self._stop.is_set():
                return
            began = time.perf_counter()
            self.client.query(simhash=self.asked[i % len(self.asked)], max_distance=3)
            self._times.append((time.perf_counter() - began) * 1e3)
            due += 1 / self.rate
            time.sleep(max(0.0, due - time.monotonic()))  # paced: an open load, not one as fast as it can

    def stop(self) -> dict[str, float]:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()
        times = sorted(self._times)
        return {
            "queries": len(times),
            "p50_ms": times[len(times) // 2],
            "p99_ms": times[int(len(times) * 0.99)],
        }

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=60)


def reads_side_by_side(
    local: LocalHBase, prefix: str, n: int, args: argparse.Namespace, reads: list[str]
) -> dict[str, object]:
    """The job once per read, a replica answering a paced caller throughout; and the caller with no job."""
    replica = Replica(local, prefix, n, args.query_rate)
    out: dict[str, object] = {}
    try:
        replica.start()
        time.sleep(args.idle_seconds)
        out["idle"] = replica.stop()
        for read in reads:
            replica.start()
            result = cluster(local, prefix, n, args, read)
            result["replica"] = replica.stop()
            out[read] = result
            print(json.dumps(result, indent=1), flush=True)
    finally:
        replica.close()
    return out


def queries(local: LocalHBase, prefix: str, n: int, count: int = 2000) -> dict[str, float]:
    """IndexStore.query of stored fingerprints, one caller: what asking once per document costs."""
    config = StoreConfig(
        thrift_port=local.ports.thrift, thrift2_port=local.ports.thrift2, table_prefix=prefix, pool_size=16
    )
    asked = splitmix64(np.random.default_rng(7).integers(0, n, size=count))
    times = []
    with IndexStore(config) as store:
        for fp in asked[:200]:  # warm-up: connections, code paths
            store.query(int(fp), 3)
        for fp in asked:
            began = time.perf_counter()
            store.query(int(fp), 3)
            times.append(time.perf_counter() - began)
    mean = statistics.fmean(times)
    return {"query_p50_ms": statistics.median(times) * 1e3, "query_mean_ms": mean * 1e3, "n_queries_s": mean * n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e7", help="comma-separated; 1e8 uses bench-scale's own index")
    parser.add_argument("--skip-exactness", action="store_true")
    parser.add_argument("--heap-mb", type=int, default=3072)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    parser.add_argument("--reads", default="", help="scan,snapshot: each read beside a replica's queries")
    parser.add_argument("--query-rate", type=float, default=100.0, help="the replica's caller, queries/s")
    parser.add_argument("--idle-seconds", type=float, default=60.0, help="the caller alone, before the jobs")
    args = parser.parse_args()
    results: dict[str, object] = {}
    WORK.mkdir(parents=True, exist_ok=True)
    if not args.skip_exactness:
        results["exactness"] = exactness()
    local = LocalHBase(var_dir=WORK / "hbase", ports=Ports.free(), master_heap_mb=args.master_heap_mb)
    local.start()
    try:
        for size in (int(float(s)) for s in args.sizes.split(",") if s):
            scale = json.loads((WORK / "state.json").read_text()).get("loaded", 0) if size > 10**7 else 0
            if size > 10**7 and scale < size:
                raise SystemExit(f"{size:,} clusters bench-scale's index, which holds {scale:,}: run bench-scale")
            prefix = PREFIX if size > 10**7 else SMALL_PREFIX
            if prefix == SMALL_PREFIX:
                load(local, prefix, size)
            if args.reads:
                results[f"reads {size}"] = reads_side_by_side(local, prefix, size, args, args.reads.split(","))
                continue
            result = cluster(local, prefix, size, args)
            results[str(size)] = result
            print(json.dumps(result, indent=1), flush=True)
    finally:
        local.stop()
    (WORK / "clusters-results.json").write_text(json.dumps(results, indent=1))
    report(results)


def report(results: dict[str, object]) -> None:
    if isinstance(exact := results.get("exactness"), dict):
        details = {k: v for k, v in exact.items() if k != "tail"}
        print(f"exactness (brute force): {exact['tail']}; {json.dumps(details)}")
    print("\n| N | wall | pairs (theory) | comparisons (theory) | shuffle | star rounds | N queries | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for key, r in results.items():
        if key == "exactness" or key.startswith("reads ") or not isinstance(r, dict):
            continue
        print(
            f"| {r['n']:,} | {r['wall_s'] / 60:.1f} min | {r['pairs']:,} ({r['pairs_theory']:.1f}) | "
            f"{r['comparisons']:,} ({r['comparisons_theory']:,.0f}) | {r['shuffle_bytes'] / 2**20:,.0f} MiB | "
            f"{r['star_rounds']} | {r['n_queries_s'] / 3600:.1f} h ({r['query_mean_ms']:.2f} ms each) | "
            f"{r['n_queries_s'] / r['wall_s']:.0f}x |"
        )

    for key, side in results.items():
        if not key.startswith("reads ") or not isinstance(side, dict):
            continue
        idle = side["idle"]
        print(
            f"\n{key.removeprefix('reads ')} fingerprints; the replica alone: p50 {idle['p50_ms']:.2f} ms, "
            f"p99 {idle['p99_ms']:.2f} ms ({idle['queries']:,} queries)"
        )
        print("| read | wall | HBase CPU during the job | job CPU | replica p50 / p99 during the job | queries |")
        print("|---|---|---|---|---|---|")
        for read, r in side.items():
            if read != "idle":
                q = r["replica"]
                print(
                    f"| {read} | {r['wall_s']:.0f} s | {r['hbase_cpu_s']:.0f} s | {r['job_cpu_s']:.0f} s | "
                    f"{q['p50_ms']:.2f} / {q['p99_ms']:.2f} ms | {q['queries']:,} |"
                )
        if "scan" in side and "snapshot" in side:
            scan, snap = side["scan"], side["snapshot"]
            print(
                f"snapshot / scan: wall {snap['wall_s'] / scan['wall_s']:.2f}x, replica p99 during the job "
                f"{snap['replica']['p99_ms'] / scan['replica']['p99_ms']:.2f}x (against the replica alone: scan "
                f"{scan['replica']['p99_ms'] / idle['p99_ms']:.2f}x, "
                f"snapshot {snap['replica']['p99_ms'] / idle['p99_ms']:.2f}x)"
            )


if __name__ == "__main__":
    main()
