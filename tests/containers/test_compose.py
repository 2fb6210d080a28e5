"""deploy/compose.yaml brought up as a user would: HBase, schema, server and Prometheus; used; taken down."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from simhash_client import SimHashClient
from simhash_deploy import Ports

pytestmark = pytest.mark.slow("the compose stack's containers started, and HBase's regions assigned in them")

ROOT = Path(__file__).resolve().parents[2]

ARTICLE = "".join(f"第{i}段：容器里的服务也要把近似重复的文章找出来，这是第{i}个句子。" for i in range(30))


def _wait(what: str, ready, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(1)


def test_the_compose_stack_serves_indexes_queries_and_is_scraped(compose, images) -> None:
    ports = Ports.free()
    env = {**os.environ, "SIMHASH_PORT": str(ports.thrift), "PROMETHEUS_PORT": str(ports.thrift2)}
    project = [*compose, "-p", f"simhash-test-{os.getpid()}", "-f", str(ROOT / "deploy" / "compose.yaml")]
    up = subprocess.run([*project, "up", "-d"], env=env, capture_output=True, text=True, timeout=600)
    try:
        assert up.returncode == 0, up.stderr
        with SimHashClient(f"127.0.0.1:{ports.thrift}", timeout=10, retries=0) as client:
            client.wait_until_serving(timeout=600)
            stored = client.deduplicate("compose-1", text=ARTICLE)
            assert stored.stored
            copy = client.deduplicate("compose-2", text=ARTICLE + "（转载）")
            assert not copy.stored and [h.doc_id for h in copy.hits] == ["compose-1"]
            assert [h.doc_id for h in client.query(text=ARTICLE)] == ["compose-1"]
            assert client.stats().documents == 1

        def scraped() -> bool:
            url = f"http://127.0.0.1:{ports.thrift2}/api/v1/query?query=simhash_rpc_calls_total"
            try:
                answer = json.load(urllib.request.urlopen(url, timeout=5))
            except OSError:
                return False
            methods = {r["metric"].get("method") for r in answer["data"]["result"]}
            return "Deduplicate" in methods

        _wait("Prometheus scraping the server's Deduplicate calls", scraped)
    finally:
        down = subprocess.run([*project, "down", "-v"], env=env, capture_output=True, text=True, timeout=300)
    assert down.returncode == 0, down.stderr
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=com.docker.compose.project=simhash-test-{os.getpid()}"],
        capture_output=True,
        text=True,
    )
    assert left.stdout.strip() == ""
