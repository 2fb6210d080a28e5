"""`simhash-index serve` as its own process: it serves, and stops gracefully on SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from simhash_client import SimHashClient, Unavailable
from simhash_deploy import Ports

CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture
def serve_process(index, hbase):
    port = Ports.free().thrift
    env = {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
        "SIMHASH_TABLE_PREFIX": index.config.table_prefix,
    }
    proc = subprocess.Popen(
        [CLI, "serve", "--address", f"127.0.0.1:{port}", "--metrics-address", "", "--grace-seconds", "30"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
    deadline = time.monotonic() + 60
    while True:
        try:
            if (
                health.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                == health_pb2.HealthCheckResponse.SERVING
            ):
                break
        except grpc.RpcError:
            pass
        assert proc.poll() is None, proc.stdout.read()
        assert time.monotonic() < deadline, "the server never became SERVING"
        time.sleep(0.2)
    yield proc, port
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_sigterm_lets_in_flight_calls_finish_and_refuses_new_ones(serve_process) -> None:
    proc, port = serve_process
    # ~15 MB of text (under the 16 MiB message limit): fingerprinting and writing it takes a while
    texts = [
        {"doc_id": f"slow-{i}", "text": f"第{i}篇。" + "近似重复检测需要把文本变成指纹。" * 1200} for i in range(280)
    ]
    outcome: dict[str, object] = {}

    def slow_call() -> None:
        with SimHashClient(f"127.0.0.1:{port}", timeout=60, retries=0) as client:
            outcome["result"] = client.index_batch(texts)
            outcome["finished"] = time.monotonic()

    worker = threading.Thread(target=slow_call)
    worker.start()
    time.sleep(0.2)  # the batch is being fingerprinted now
    proc.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    time.sleep(0.1)
    with SimHashClient(f"127.0.0.1:{port}", timeout=5, retries=0) as late, pytest.raises(Unavailable):
        late.get("slow-0")
    worker.join(60)
    assert [o.ok for o in outcome["result"]] == [True] * len(texts), outcome
    assert outcome["finished"] > signalled  # it really was in flight when SIGTERM came, and finished
    assert proc.wait(30) == 0
    log = proc.stdout.read()
    assert "signal 15: stopping gracefully" in log and "stopped" in log


def test_a_taken_address_is_a_clear_error_without_a_traceback(index, hbase) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "SIMHASH_TABLE_PREFIX": index.config.table_prefix}
        done = subprocess.run(
            [CLI, "serve", "--address", f"127.0.0.1:{port}", "--metrics-address", ""],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1, done.stderr
    assert f"Error: cannot listen on 127.0.0.1:{port}: in use" in done.stderr
    assert "Traceback" not in done.stderr
