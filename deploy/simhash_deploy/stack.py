"""deploy/cluster.yaml driven from this machine: a stack of its own (a compose project, free host ports), its
containers' addresses and resource use, and what a client outside the stack needs to submit jobs to its
YARN: the cluster's configuration, copied out of a container as a user copies it from a gateway node, and a
hosts file naming the containers (the cluster's DNS, for a client outside it).

Used by `make test-cluster` (tests/cluster) and `make bench-hfile BENCH_ARGS='--runner yarn'`.  Needs Docker
and the images (`make images`).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from simhash_deploy.home import project_root
from simhash_deploy.processes import Ports

__all__ = ["HOSTS", "SERVICES", "Stack", "compose_command"]

# The containers a YARN client reaches by name: HDFS, ZooKeeper, HBase, YARN.
HOSTS = (
    "zookeeper",
    "namenode",
    "datanode",
    "master",
    "regionserver1",
    "regionserver2",
    "thrift",
    "resourcemanager",
    "nodemanager1",
    "nodemanager2",
)
SERVICES = (*HOSTS, "server1", "server2")  # every long-running container (the schema job exits)


_S = TypeVar("_S", bound="Stack")


def compose_command() -> list[str]:
    """`docker compose`, or the standalone docker-compose; RuntimeError naming what is missing."""
    docker = shutil.which("docker")
    if not docker or subprocess.run([docker, "info"], capture_output=True).returncode != 0:
        raise RuntimeError("no Docker engine answers (make engine, as root)")
    if subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    if not standalone:
        raise RuntimeError("neither `docker compose` nor docker-compose is installed (make deps, as root)")
    return [standalone]


@dataclass
class Stack:
    """One compose project of deploy/cluster.yaml; ``env`` holds its port settings (SIMHASH_PORT_1, ...)."""

    project: str
    env: dict[str, str]
    compose: list[str] = field(default_factory=list)

    @classmethod
    def on_free_ports(cls: type[_S], project: str, **settings: str) -> _S:
        """A stack whose replicas and Thrift gateways answer on free ports of this machine, with ``settings``
        (SIMHASH_* variables of deploy/cluster.yaml) added to the environment."""
        ports = [Ports.free().thrift for _ in range(4)]
        names = ("SIMHASH_PORT_1", "SIMHASH_PORT_2", "SIMHASH_THRIFT_PORT", "SIMHASH_THRIFT2_PORT")
        return cls(project, {**os.environ, **dict(zip(names, map(str, ports), strict=True)), **settings})

    @property
    def replicas(self) -> list[str]:
        """The two server replicas' gRPC targets."""
        return [f"127.0.0.1:{self.env['SIMHASH_PORT_1']}", f"127.0.0.1:{self.env['SIMHASH_PORT_2']}"]

    @property
    def thrift_port(self) -> int:
        return int(self.env["SIMHASH_THRIFT_PORT"])

    @property
    def thrift2_port(self) -> int:
        return int(self.env["SIMHASH_THRIFT2_PORT"])

    def __post_init__(self) -> None:
        if not self.compose:
            spec = project_root() / "deploy" / "cluster.yaml"
            self.compose = [*compose_command(), "-p", self.project, "-f", str(spec)]

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([*self.compose, *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def docker(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)}: {done.stderr.strip()}")
        return done

    def healthy(self, service: str, timeout: float = 300) -> None:
        """Wait for the service's health check to pass; RuntimeError if it has not within ``timeout`` s."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.docker("inspect", "-f", "{{.State.Health.Status}}", self.container(service)).stdout.strip()
            if state == "healthy":
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{service} never became healthy ({state})")
            time.sleep(1)  # docker re-runs the check every few seconds

    def addresses(self, services: tuple[str, ...] = HOSTS) -> dict[str, str]:
        """Each service's address on the stack's network (a restarted container may get another)."""
        network = f"{self.project}_default"
        template = f'{{{{(index .NetworkSettings.Networks "{network}").IPAddress}}}}'
        return {s: self.docker("inspect", "-f", template, self.container(s)).stdout.strip() for s in services}

    def write_hosts(self, path: Path) -> None:
        """A hosts file for a client JVM (-Djdk.net.hosts.file): the containers by name, and this machine."""
        lines = [f"{ip} {host}" for host, ip in self.addresses().items()]
        lines.append(f"127.0.0.1 localhost {socket.gethostname()}")
        path.write_text("\n".join(lines) + "\n")

    def copy_client_conf(self, dest: Path) -> Path:
        """The cluster's client configuration (Hadoop's, YARN's, MapReduce's and HBase's site files)."""
        self.docker("cp", f"{self.container('resourcemanager')}:/data/conf", str(dest))
        return dest

    def _cgroup(self, service: str, controller: str, v1: str, v2: str) -> Path:
        cid = self.docker("inspect", "-f", "{{.Id}}", self.container(service)).stdout.strip()
        for path in (
            Path(f"/sys/fs/cgroup/{controller}/docker/{cid}/{v1}"),
            Path(f"/sys/fs/cgroup/system.slice/docker-{cid}.scope/{v2}"),
        ):
            if path.exists():
                return path
        raise RuntimeError(f"no cgroup file {v1} or {v2} for {service} ({cid[:12]})")

    def cpu_seconds(self, service: str) -> float:
        """CPU the service's container has used since it started (its cgroup's account)."""
        path = self._cgroup(service, "cpuacct", "cpuacct.usage", "cpu.stat")
        text = path.read_text()
        if path.name == "cpu.stat":
            usage = dict(line.split() for line in text.splitlines())
            return int(usage["usage_usec"]) / 1e6
        return int(text) / 1e9

    def memory_rss(self, service: str) -> int:
        """Anonymous memory the container's processes hold now, in bytes (JVM heaps and the rest; not the
        page cache, which the kernel gives back under pressure)."""
        path = self._cgroup(service, "memory", "memory.stat", "memory.stat")
        stat = dict(line.split() for line in path.read_text().splitlines())
        return int(stat["total_rss"] if "total_rss" in stat else stat["anon"])

    # -- HDFS from this machine: the NameNode's WebHDFS (Hadoop 2's HTTP port), DataNodes by address ----------
    def _webhdfs(self, path: str, op: str) -> tuple[str, str]:
        """The NameNode's URL for ``op`` on ``path``, and the DataNode's address to put in its redirect."""
        found = self.addresses(("namenode", "datanode"))
        url = f"http://{found['namenode']}:50070/webhdfs/v1{path}?op={op}&user.name=hbase&overwrite=true"
        return url, found["datanode"]

    def hdfs_put(self, path: str, data: bytes) -> None:
        """A file on HDFS (replaced), as the cluster's user: the NameNode redirects to a DataNode by its
        container name, which is followed by address."""
        url, datanode = self._webhdfs(path, "CREATE")
        try:
            urllib.request.build_opener(_NoRedirect).open(urllib.request.Request(url, method="PUT"), timeout=60)
            raise RuntimeError(f"WebHDFS CREATE of {path} did not redirect to a DataNode")
        except urllib.error.HTTPError as exc:
            if exc.code != 307:
                raise
            location = exc.headers["Location"].replace("//datanode:", f"//{datanode}:")
        with urllib.request.urlopen(urllib.request.Request(location, data=data, method="PUT"), timeout=600):
            pass

    def hdfs_read(self, path: str) -> bytes:
        url, datanode = self._webhdfs(path, "OPEN")
        try:
            urllib.request.build_opener(_NoRedirect).open(url, timeout=60)
            raise RuntimeError(f"WebHDFS OPEN of {path} did not redirect to a DataNode")
        except urllib.error.HTTPError as exc:
            if exc.code != 307:
                raise
            location = exc.headers["Location"].replace("//datanode:", f"//{datanode}:")
        with urllib.request.urlopen(location, timeout=600) as reply:
            return reply.read()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """WebHDFS redirects to a DataNode by a name only the cluster resolves: the caller follows it by address."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None
