"""What the YARN tests share: a client of the container cluster's YARN, HDFS and HBase, as any client outside
the cluster would be (its configuration copied out of a container, a hosts file naming the containers)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import happybase

from simhash_deploy.stack import Stack
from simhash_server.index.config import StoreConfig
from simhash_server.index.store import IndexStore
from simhash_server.index.writes import ENTRY_PREFIX

CLI = str(Path(sys.executable).with_name("simhash-index"))
STAGING = "hdfs://namenode:8020/simhash-tests"


@dataclass
class YarnClient:
    cluster: object
    conf: Path
    hosts_file: Path
    resourcemanager: str = ""  # its address

    def env(self, prefix: str) -> dict[str, str]:
        return {
            **self.cluster.env,  # type: ignore[attr-defined]
            "SIMHASH_HBASE_HOST": "127.0.0.1",
            "SIMHASH_HBASE_THRIFT_PORT": str(self.cluster.thrift_port),  # type: ignore[attr-defined]
            "SIMHASH_HBASE_THRIFT2_PORT": str(self.cluster.thrift2_port),  # type: ignore[attr-defined]
            "SIMHASH_TABLE_PREFIX": prefix,
            "JAVA_TOOL_OPTIONS": f"-Djdk.net.hosts.file={self.hosts_file}",
            # HDFS's simple authentication: the cluster's daemons run as hbase, and so do its jobs here.
            "HADOOP_USER_NAME": "hbase",
        }

    def command(self, command: str, *args: str) -> list[str]:
        return [CLI, command, *args, "--runner", "yarn", "--conf-dir", str(self.conf)]

    def store(self, prefix: str) -> IndexStore:
        config = StoreConfig(
            host="127.0.0.1",
            thrift_port=self.cluster.thrift_port,  # type: ignore[attr-defined]
            thrift2_port=self.cluster.thrift2_port,  # type: ignore[attr-defined]
            table_prefix=prefix,
            timeout_ms=60_000,
        )
        return IndexStore(config)

    def schema(self, prefix: str, *args: str) -> None:
        done = subprocess.run([CLI, "schema", "apply", *args], env=self.env(prefix), capture_output=True, text=True)
        assert done.returncode == 0, done.stderr

    def refresh(self) -> None:
        """Name the containers for the client's JVM anew (a restarted one may have another address)."""
        stack: Stack = self.cluster  # type: ignore[assignment]
        stack.write_hosts(self.hosts_file)
        self.resourcemanager = stack.addresses(("resourcemanager",))["resourcemanager"]

    def hdfs_list(self, path: str) -> list[str]:
        """The names in an HDFS directory (the NameNode's WebHDFS API); [] if it does not exist."""
        namenode = self.cluster.addresses(("namenode",))["namenode"]  # type: ignore[attr-defined]
        url = f"http://{namenode}:50070/webhdfs/v1{path}?op=LISTSTATUS&user.name=hbase"  # Hadoop 2's HTTP port
        try:
            with urllib.request.urlopen(url, timeout=10) as reply:
                return [str(s["pathSuffix"]) for s in json.load(reply)["FileStatuses"]["FileStatus"]]
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return []
            raise

    def applications(self) -> list[dict[str, object]]:
        """Every application the ResourceManager knows (its REST API)."""
        url = f"http://{self.resourcemanager}:8088/ws/v1/cluster/apps"
        with urllib.request.urlopen(url, timeout=10) as reply:
            return (json.load(reply).get("apps") or {}).get("app") or []


def until(condition: Callable[[], bool], what: str, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {seconds:.0f} s"
        time.sleep(0.5)  # between checks of the condition


def cells(cluster, prefix: str, thrift_port: int | None = None) -> dict[str, list[tuple[bytes, bytes, bytes]]]:
    """Every cell of the index's three tables, but the docs rows' writer entries (only live writers leave
    them: tests/integration/test_hfile_load.py); from the cluster's gateway unless another is named."""
    conn = happybase.Connection("127.0.0.1", thrift_port or cluster.thrift_port, timeout=120_000)
    try:
        return {
            table: [
                (row, column, value)
                for row, data in conn.table(f"{prefix}_{table}").scan(batch_size=5000)
                for column, value in sorted(data.items())
                if table != "docs" or not column.startswith(ENTRY_PREFIX)
            ]
            for table in ("drawers", "fp2docs", "docs")
        }
    finally:
        conn.close()


def task_running(cluster, host: str, marker: str | None = None) -> bool:
    """Whether a MapReduce task or application master runs in the NodeManager's container; or, given a
    marker, a process whose command line holds it."""
    top = cluster.docker("top", cluster.container(host), "-o", "pid,args").stdout
    return marker in top if marker else "YarnChild" in top or "MRAppMaster" in top


@contextlib.contextmanager
def replica(yarn: YarnClient, prefix: str) -> Iterator[str]:
    """A `serve` process of the index ``prefix`` on the cluster's HBase, from this machine: its address."""
    port = socket.socket()
    port.bind(("127.0.0.1", 0))
    address = f"127.0.0.1:{port.getsockname()[1]}"
    port.close()
    process = subprocess.Popen(
        [CLI, "serve", "--address", address, "--metrics-address", "", "--warmup-queries", "0"],
        env=yarn.env(prefix),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield address
    finally:
        process.terminate()
        process.wait(timeout=60)
