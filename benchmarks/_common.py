"""What the benchmarks share: percentiles, CPU accounting from /proc, the probes, and a `serve` process.

Every suite imports from here, never from another suite.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports

ROOT = Path(__file__).resolve().parents[1]
CLI = str(ROOT / ".venv" / "bin" / "simhash-index")
# bench_scale.py's index, which bench_verify.py --scale (and bench_clusters.py) reuse: where it lives (its
# HBase, inputs and state.json), its table prefix, its drawer regions, and the HBase heap that serves it.
SCALE_WORK = ROOT / "var" / "scale"
SCALE_PREFIX = "scale"
SCALE_DRAWER_REGIONS = 16
SCALE_HEAP_MB = 6144
CLK_TCK = os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its reaped children."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(x) for x in fields[11:15]) / CLK_TCK


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


def reaped_cpu(pid: int) -> float:
    """CPU of the process's children that it has waited for (gone, their account handed to it)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[13]) + int(fields[14])) / CLK_TCK


def tree_cpu(pid: int) -> float:
    """CPU of a process plus its live children (the workers)."""
    total = cpu_seconds(pid)
    for child in Path(f"/proc/{pid}/task").glob("*/children"):
        for c in child.read_text().split():
            total += cpu_seconds(int(c))
    return total


def splitmix64(index: np.ndarray) -> np.ndarray:
    z = index.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def probes(count: int, seed: int, stored: list[int] | None = None) -> list[int]:
    """Half stored fingerprints 0-3 bits away, half random: the same at every size.  Stored: ``stored``, by
    default this benchmark's first 10^5."""
    if stored is None:
        stored = [int(v) for v in splitmix64(np.arange(100_000))]
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        if i % 2:
            out.append(int(rng.integers(0, 2**64, dtype=np.uint64)))
        else:
            fp = stored[int(rng.integers(0, len(stored)))]
            for bit in rng.choice(64, size=int(rng.integers(0, 4)), replace=False):
                fp ^= 1 << int(bit)
            out.append(fp)
    return out


@contextlib.contextmanager
def serving(
    local: LocalHBase, prefix: str, *options: str, checkout: Path | None = None, log: Path | None = None
) -> Iterator[SimHashClient]:
    """A `simhash-index serve` process (metrics off) on index ``prefix`` of ``local``: its client, once SERVING.

    ``checkout``: run another checkout's code (say a `git worktree` of an earlier commit) instead of this one.
    ``log``: where its log goes (nowhere by default)."""
    port = Ports.free().thrift
    env = {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(local.ports.thrift),
        "SIMHASH_HBASE_THRIFT2_PORT": str(local.ports.thrift2),
        "SIMHASH_TABLE_PREFIX": prefix,
    }
    if checkout is not None:  # its packages ahead of this checkout's editable install
        env["PYTHONPATH"] = os.pathsep.join(str(checkout / d) for d in ("server", "client", "hbase_schema", "deploy"))
    command = [CLI, "serve", "--address", f"127.0.0.1:{port}", "--metrics-address", "", *options]
    with open(log, "w") if log is not None else contextlib.nullcontext(subprocess.DEVNULL) as sink:
        proc = subprocess.Popen(command, env=env, stdout=sink, stderr=sink)
        try:
            with SimHashClient(f"127.0.0.1:{port}") as client:
                client.wait_until_serving(timeout=300)
                yield client
        finally:
            proc.terminate()
            proc.wait(60)


MAPREDUCE_TARGET = ROOT / "server" / "mapreduce" / "target"


def java_harness(source: Path, built: Path, jars: str = "*.jar") -> str:
    """Compiles a benchmark's Java harness (``source``, into ``built``) against the MapReduce job's classes and
    its dependency jars named like ``jars``; the class path to run it with."""
    found = sorted((MAPREDUCE_TARGET / "lib").glob(jars))
    if not (MAPREDUCE_TARGET / "classes").is_dir() or not found:
        raise SystemExit(f"{MAPREDUCE_TARGET} has no classes or no {jars} jar: run `make jars` first")
    path = ":".join([str(built), str(MAPREDUCE_TARGET / "classes"), *map(str, found)])
    built.mkdir(parents=True, exist_ok=True)
    subprocess.run(["javac", "-nowarn", "-cp", path, "-d", str(built), str(source)], check=True)
    return path


def table(header: list[str], rows: list[list[object]]) -> str:
    """A Markdown table, as docs/benchmarks.md holds them."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def cluster_client(stack: Any, home: Path, prefix: str) -> tuple[Path, dict[str, str]]:
    """A client of the container cluster from this machine, as tests/cluster's: the cluster's configuration
    (copied out of a container), a hosts file naming the containers, and the environment naming the index."""
    conf = stack.copy_client_conf(home / "conf")
    stack.write_hosts(home / "hosts")
    return conf, stack.env | {
        "SIMHASH_HBASE_HOST": "127.0.0.1",
        "SIMHASH_HBASE_THRIFT_PORT": str(stack.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(stack.thrift2_port),
        "SIMHASH_TABLE_PREFIX": prefix,
        "JAVA_TOOL_OPTIONS": f"-Djdk.net.hosts.file={home / 'hosts'}",
        "HADOOP_USER_NAME": "hbase",  # HDFS's simple authentication: the cluster's daemons run as hbase
    }
