"""The distributed cluster (deploy/cluster.yaml): HDFS, ZooKeeper, an HMaster, 2 region servers, the Thrift
gateways, YARN and 2 server replicas, brought up once for these tests on ports of their own
(simhash_deploy.stack), and taken down after.  `make test-cluster` runs them (they need Docker and the
images, and about 9 GiB of memory while a job's tasks run)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from simhash_client import SimHashClient
from simhash_deploy.stack import Stack

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "var" / "cluster-results.json"  # recovery times, quoted in docs/operations.md


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.cluster)


@dataclass
class Cluster(Stack):
    results: dict[str, float] = field(default_factory=dict)

    def record(self, name: str, seconds: float) -> None:
        self.results[name] = round(seconds, 1)
        RESULTS.parent.mkdir(exist_ok=True)
        stored = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        RESULTS.write_text(json.dumps({**stored, **self.results}, indent=1) + "\n")


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    # The tests place regions themselves (a kill, RegionMover); a balancer run between a move and the check
    # of where regions went would race it, so it waits a day.
    day = str(24 * 3600 * 1000)
    stack = Cluster.on_free_ports(f"simhashcluster{os.getpid()}", SIMHASH_BALANCER_PERIOD_MS=day)
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


@pytest.fixture(scope="module")
def yarn(cluster, tmp_path_factory):
    """A client of the cluster's YARN, HDFS and HBase, from this machine (tests/cluster/yarn_client.py)."""
    from yarn_client import YarnClient

    home = tmp_path_factory.mktemp("yarn-client")
    client = YarnClient(cluster, cluster.copy_client_conf(home / "conf"), home / "hosts")
    client.refresh()
    return client
