"""The distributed cluster (deploy/cluster.yaml): HDFS, ZooKeeper, an HMaster, 2 region servers, the Thrift
gateways and 2 server replicas, brought up once for these tests on ports of their own, and taken down after.
`make test-cluster` runs them (they need Docker and the images, and about 5 GiB of memory)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from simhash_client import SimHashClient
from simhash_deploy import Ports

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "var" / "cluster-results.json"  # recovery times, quoted in docs/operations.md


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.cluster)


@dataclass
class Cluster:
    compose: list[str]
    project: str
    env: dict[str, str]
    replicas: list[str]
    thrift_port: int
    thrift2_port: int
    results: dict[str, float] = field(default_factory=dict)

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run([*self.compose, *args], env=self.env, capture_output=True, text=True, timeout=timeout)

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def docker(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, done.stderr
        return done

    def healthy(self, service: str, timeout: float = 300) -> None:
        """Wait for the service's health check to pass (docker re-runs it every 3 s)."""
        name = self.container(service)
        deadline = time.monotonic() + timeout
        while True:
            state = self.docker("inspect", "-f", "{{.State.Health.Status}}", name).stdout.strip()
            if state == "healthy":
                return
            assert time.monotonic() < deadline, f"{service} never became healthy ({state})"
            time.sleep(1)  # between checks of the condition

    def record(self, name: str, seconds: float) -> None:
        self.results[name] = round(seconds, 1)
        RESULTS.parent.mkdir(exist_ok=True)
        stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        RESULTS.write_text(json.dumps({**stored, **self.results}, indent=1) + "\n")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    docker = shutil.which("docker")
    assert docker and subprocess.run([docker, "info"], capture_output=True).returncode == 0, "no Docker engine"
    compose = [docker, "compose"]
    if subprocess.run([*compose, "version"], capture_output=True).returncode != 0:
        standalone = shutil.which("docker-compose")
        assert standalone, "neither `docker compose` nor docker-compose is installed (make deps, as root)"
        compose = [standalone]
    project = f"simhashcluster{os.getpid()}"
    ports = [Ports.free().thrift for _ in range(4)]
    env = {
        **os.environ,
        "SIMHASH_PORT_1": str(ports[0]),
        "SIMHASH_PORT_2": str(ports[1]),
        "SIMHASH_THRIFT_PORT": str(ports[2]),
        "SIMHASH_THRIFT2_PORT": str(ports[3]),
        # The tests place regions themselves (a kill, RegionMover); a balancer run between a move and the
        # check of where regions went would race it, so it waits a day.
        "SIMHASH_BALANCER_PERIOD_MS": str(24 * 3600 * 1000),
    }
    stack = Cluster(
        [*compose, "-p", project, "-f", str(ROOT / "deploy" / "cluster.yaml")],
        project,
        env,
        [f"127.0.0.1:{ports[0]}", f"127.0.0.1:{ports[1]}"],
        ports[2],
        ports[3],
    )
    began = time.monotonic()
    up = stack.run("up", "-d", timeout=900)
    try:
        assert up.returncode == 0, up.stderr[-3000:]
        for target in stack.replicas:
            with SimHashClient(target, retries=0) as probe:
                probe.wait_until_serving(timeout=300)
        stack.record("cluster start, seconds", time.monotonic() - began)
        yield stack
    finally:
        if up.returncode != 0 or os.environ.get("SIMHASH_KEEP_CLUSTER") != "1":
            logs = stack.run("logs", "--tail", "30")
            print(logs.stdout[-6000:])
            stack.run("down", "-v", timeout=600)
