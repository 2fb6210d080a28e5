"""`simhash-index serve` as its own process: it serves, and stops gracefully on SIGTERM."""

from __future__ import annotations

import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from simhash_client import SimHashClient, Unavailable
from simhash_deploy import Ports
from simhash_server.rpc.warmup import ROUND_QUERIES

CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture
def serve_process(index, spawn_server):
    metrics_port = Ports.free().thrift2
    proc, target = spawn_server(
        index.config.table_prefix,
        "--metrics-address",
        f"127.0.0.1:{metrics_port}",
        "--grace-seconds",
        "600",
        env={"SIMHASH_HBASE_TIMEOUT_MS": "600000"},  # a call waits out paused gateways rather than timing out
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    port = int(target.rsplit(":", 1)[1])
    yield proc, port, metrics_port
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def metric(metrics_port: int, sample: str, **labels: str) -> float:
    """A sample's value on the metrics port (say ``simhash_query_candidates_count``), summed over the other labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=30) as answer:
        families = text_string_to_metric_families(answer.read().decode())
        return sum(
            s.value
            for f in families
            for s in f.samples
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items())
        )


def test_sigterm_lets_in_flight_calls_finish_and_refuses_new_ones(serve_process, pause_gateways) -> None:
    proc, port, metrics_port = serve_process
    texts = [{"doc_id": f"slow-{i}", "text": f"第{i}篇。近似重复检测需要把文本变成指纹。"} for i in range(3)]
    outcome: dict[str, object] = {}

    def slow_call() -> None:
        with SimHashClient(f"127.0.0.1:{port}", timeout=600, retries=0) as client:
            outcome["result"] = client.index_batch(texts)

    worker = threading.Thread(target=slow_call)
    with pause_gateways():  # the batch cannot finish until they resume: it is in flight for sure
        worker.start()
        deadline = time.monotonic() + 120
        while metric(metrics_port, "simhash_rpc_in_flight", method="IndexBatch") < 1:
            assert time.monotonic() < deadline, "the IndexBatch never reached its handler"
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        for line in proc.stdout:  # the server closes its doors before it logs this line
            if "signal 15: stopping gracefully" in line:
                break
        else:
            pytest.fail("the server ended without logging the signal")
        with SimHashClient(f"127.0.0.1:{port}", timeout=600, retries=0) as late, pytest.raises(Unavailable):
            late.get("slow-0")
        assert worker.is_alive()  # still waiting on HBase, and the server has not cancelled it
    worker.join(600)
    assert [o.ok for o in outcome["result"]] == [True] * len(texts), outcome
    assert proc.wait(600) == 0
    log = proc.stdout.read()
    assert "waiting for 1 call(s) in flight" in log and "stopped" in log, log


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


def _warming_server(index, spawn_server, ids, *options: str) -> tuple[subprocess.Popen, str, int]:
    """A serve process on an index of 5 documents (a hit's path to warm up too), warming up with ``options``
    (at most 600 s, so nothing below hangs on the machine's speed): (process, target, its metrics port)."""
    index.index_many([(f"{ids}{n}", random.getrandbits(64)) for n in range(5)])
    metrics_port = Ports.free().thrift2
    proc, target = spawn_server(
        index.config.table_prefix,
        *options,
        "--warmup-seconds",
        "600",
        "--metrics-address",
        f"127.0.0.1:{metrics_port}",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    return proc, target, metrics_port


def test_the_warm_up_queries_are_asked_before_the_port_opens(index, spawn_server, ids) -> None:
    proc, target, metrics_port = _warming_server(index, spawn_server, ids, "--warmup-queries", "40", "--warmup-fixed")
    # SERVING now, and no caller has asked anything: every query the process counted was its own warm-up.
    assert metric(metrics_port, "simhash_query_candidates_count") == 40
    # half of them 0-3 bits from a stored fingerprint, which each query's scans therefore find
    assert metric(metrics_port, "simhash_query_candidates_sum") >= 20
    with SimHashClient(target) as client:
        client.query(simhash=12345)
    assert metric(metrics_port, "simhash_query_candidates_count") == 41
    proc.terminate()
    output, _ = proc.communicate(timeout=60)
    assert "warmed up: 40 queries (20 near stored fingerprints) in " in output
    assert "(a fixed count)" in output


def test_the_warm_up_goes_on_in_rounds_until_latency_settles(index, spawn_server, ids) -> None:
    proc, _, metrics_port = _warming_server(index, spawn_server, ids, "--warmup-queries", "40")
    asked = metric(metrics_port, "simhash_query_candidates_count")
    proc.terminate()
    output, _ = proc.communicate(timeout=60)
    report = re.search(
        r"warmed up: (\d+) queries \((\d+) near stored fingerprints\) in .*; round medians (.*) ms \((.*)\)", output
    )
    assert report is not None, output
    assert int(report[1]) == asked  # every query counted before any caller was the warm-up's
    assert int(report[2]) == asked // 2
    # past the 40 asked for: whole rounds of 500, at least three (a first, then two flat ones), until settled
    assert report[4] == "settled"
    assert asked % ROUND_QUERIES == 0 and asked >= 3 * ROUND_QUERIES
    assert len(report[3].split(", ")) == asked // ROUND_QUERIES


def test_a_call_while_serve_warms_up_is_refused_at_once_never_held(index, hbase, ids) -> None:
    # The port opens only after the warm-up: a caller meanwhile is refused (UNAVAILABLE, which clients retry
    # elsewhere or later), where a bound port would have held its call until the warm-up ended.
    import grpc

    from simhash_index.v1 import simhash_index_pb2 as pb
    from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc

    index.index_many([(f"{ids}{n}", random.getrandbits(64)) for n in range(5)])
    port, metrics_port = Ports.free().thrift, Ports.free().thrift2
    env = {
        **os.environ,
        "SIMHASH_HBASE_HOST": hbase.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
        "SIMHASH_TABLE_PREFIX": index.config.table_prefix,
    }
    # a warm-up of 10^7 queries, cut at 600 s: it is still going on whenever the call below is made
    warm = ["--warmup-fixed", "--warmup-queries", "10000000", "--warmup-seconds", "600"]
    serve = [CLI, "serve", "--address", f"127.0.0.1:{port}", "--metrics-address", f"127.0.0.1:{metrics_port}", *warm]
    proc = subprocess.Popen(serve, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        seen = []
        for line in proc.stdout:
            seen.append(line)
            if "warming up before the port opens" in line:
                break
        else:
            pytest.fail("serve ended before its warm-up: " + "".join(seen))
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel, pytest.raises(grpc.RpcError) as refused:
            pb_grpc.SimHashIndexStub(channel).Query(pb.QueryRequest(simhash=1), timeout=5)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value
        assert proc.poll() is None  # still warming up, not failed
    finally:
        proc.kill()
        proc.wait()


def test_sighup_rereads_the_tokens_file(index, spawn_server, tmp_path: Path) -> None:
    from simhash_client import Unauthenticated

    old, new = "write " + "o" * 20, "write " + "n" * 20
    tokens = tmp_path / "tokens"
    tokens.write_text(old + "\n")
    # the file check every hour: only the signal can make the new file count
    proc, target = spawn_server(
        index.config.table_prefix, "--tokens-file", str(tokens), "--credentials-check-seconds", "3600"
    )
    with SimHashClient(target, token=old.split()[1], retries=0) as client:
        client.query(simhash=1)
    tokens.write_text(new + "\n")
    proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 60
    with SimHashClient(target, token=new.split()[1], retries=0) as client:
        while True:  # the signal is handled on the server's event loop, soon but not at once
            try:
                client.query(simhash=2)
                break
            except Unauthenticated:
                assert time.monotonic() < deadline, "SIGHUP did not reload the tokens file"
    with SimHashClient(target, token=old.split()[1], retries=0) as client, pytest.raises(Unauthenticated):
        client.query(simhash=3)
    assert proc.poll() is None  # reloaded, not stopped
