"""What tracing costs on the query path: one index served by `simhash-index serve` processes that differ only in
their OTEL_* variables, driven in turns in one run.

- absent: no OTEL_* variable, so nothing of OpenTelemetry is imported (run twice, as two servers: the
  difference between the two is this machine's noise);
- unsampled by the caller: an OTLP endpoint configured (the default sampler, parent-based), and every call
  sends a W3C traceparent whose trace is not sampled, as a caller's edge decided;
- unsampled by the server: OTEL_TRACES_SAMPLER=always_off, no traceparent;
- sampled: the caller's traceparent says sampled, so every call's spans are exported, to a real OTLP receiver
  in this process (tests/integration/otlp_receiver.py).

Each round drives every server with ghz (a Go load generator: `make tools` builds it) at concurrency 8, the
servers' order rotated from round to round: verified Query by text (~1-4 KB pages of the evaluation corpus:
fingerprint, drawer scans, sketch reads) and Query by simhash.  Prints each server's p50 and p99 (the median
of its rounds'), the ratios to the first absent server, and the server's CPU per call.  The index is the
corpus's documents and edited copies (corpus.py), on an HBase of its own.

    .venv/bin/python benchmarks/bench_tracing.py      # or: make bench-tracing
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import secrets
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "integration"))
from _common import ROOT, cpu_seconds, table
from bench_grpc import ghz_binary, run_ghz, serve
from corpus import load_corpus
from otlp_receiver import OtlpReceiver

from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.fingerprint import fingerprint
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

PREFIX = "bench_tracing"
ENDPOINT = "endpoint"  # stands for the receiver's address in a mode's variables
# mode -> (the server's OTEL_* variables, the flags of the traceparent each call sends: None for none)
MODES: dict[str, tuple[dict[str, str], str | None]] = {
    "absent": ({}, None),
    "absent, again": ({}, None),
    "unsampled by the caller": ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT}, "00"),
    "unsampled by the server": ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_TRACES_SAMPLER": "always_off"}, None),
    # a queue that holds a round's spans: the SDK's 2,048 drops most of them at this rate, and with them
    # the cost of exporting them
    "sampled": ({"OTEL_EXPORTER_OTLP_ENDPOINT": ENDPOINT, "OTEL_BSP_MAX_QUEUE_SIZE": "262144"}, "01"),
}


def traceparent(flags: str | None) -> dict[str, str] | None:
    """A caller's trace context, new each run (W3C trace-context: version, trace id, parent id, flags)."""
    if flags is None:
        return None
    return {"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-{flags}"}


def load_index(local: LocalHBase) -> list[str]:
    """The corpus in the index (fingerprints and sketches); returns its texts, the queries."""
    client = connect("127.0.0.1", local.ports.thrift2)
    apply_schema(client, index_tables(PREFIX))
    client.close()
    store = IndexStore(StoreConfig("127.0.0.1", local.ports.thrift, local.ports.thrift2, PREFIX))
    store.open()
    docs = [d for d in load_corpus() if "{{" not in d.text]  # ghz reads its data as a Go template
    made = [fingerprint(d.text, sketch=True) for d in docs]
    store.index_many(Document(d.id, fp.value, fp.sketch) for d, fp in zip(docs, made, strict=True))
    store.close()
    return [d.text for d in docs]


def environment(local: LocalHBase, variables: dict[str, str], endpoint: str) -> dict[str, str]:
    """The server's environment: this one's without OTEL_*, naming the index, and then ``variables``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {
        "SIMHASH_HBASE_THRIFT_PORT": str(local.ports.thrift),
        "SIMHASH_HBASE_THRIFT2_PORT": str(local.ports.thrift2),
        "SIMHASH_TABLE_PREFIX": PREFIX,
    }
    return env | {k: endpoint if v == ENDPOINT else v for k, v in variables.items()}


def service(mode: str) -> str:
    return f"bench-tracing {mode}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--calls", type=int, default=2000, help="calls per server per round and call kind")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--interceptor",
        action="store_true",
        help="only what OpenTelemetry's interceptor costs a call that does nothing",
    )
    args = parser.parse_args()
    if args.interceptor:
        interceptor_cost(args.rounds)
        return
    ghz = ghz_binary()
    var = ROOT / "var" / "bench-tracing"
    local = LocalHBase(var_dir=var / "hbase", ports=Ports.free())
    local.start()
    try:
        texts = load_index(local)
        print(f"index: {len(texts):,} corpus documents", flush=True)
        with OtlpReceiver() as receiver:
            measure(args, ghz, local, texts, receiver)
    finally:
        local.stop()


def measure(args: argparse.Namespace, ghz: str, local: LocalHBase, texts: list[str], receiver: OtlpReceiver) -> None:
    kinds = {
        "verified Query by text": ("Query", [{"text": t, "min_similarity": 0.75} for t in texts]),
        "Query by simhash": ("Query", [{"simhash": str(fingerprint(t).value)} for t in texts]),
    }
    results: dict[tuple[str, str], list[dict]] = {}
    with contextlib.ExitStack() as servers:
        ports = {}
        for name, (variables, _) in MODES.items():
            port = Ports.free().thrift
            env = environment(local, variables | {"OTEL_SERVICE_NAME": service(name)}, receiver.endpoint)
            proc = serve(port, env, "")
            servers.callback(proc.wait, 60)
            servers.callback(proc.terminate)
            ports[name] = (port, proc.pid)
        names = list(MODES)
        for name in names:  # warm up: the JIT of HBase's scans, each server's first calls
            for method, data in kinds.values():
                port, pid = ports[name]
                run_ghz(ghz, port, method, data, args.concurrency, 500, {"server": pid}, traceparent(MODES[name][1]))
        for r in range(args.rounds):
            order = names[r % len(names) :] + names[: r % len(names)]
            for kind, (method, data) in kinds.items():
                for name in order:
                    port, pid = ports[name]
                    metadata = traceparent(MODES[name][1])
                    got = run_ghz(ghz, port, method, data, args.concurrency, args.calls, {"server": pid}, metadata)
                    if set(got["codes"]) != {"OK"}:
                        sys.exit(f"{name}: {kind} answered {got['codes']}")
                    results.setdefault((name, kind), []).append(got)
            print(f"round {r + 1} of {args.rounds}", flush=True)
    spans = collections.Counter(s.service for s in receiver.spans())
    rows = []
    for kind in kinds:
        base = statistics.median(g["p50"] for g in results[("absent", kind)])
        base99 = statistics.median(g["p99"] for g in results[("absent", kind)])
        for name in MODES:
            p50 = statistics.median(g["p50"] for g in results[(name, kind)])
            p99 = statistics.median(g["p99"] for g in results[(name, kind)])
            cpu = statistics.median(g["cpu"]["server"] for g in results[(name, kind)])
            rows.append(
                [kind, name, f"{p50:.2f}", f"{p99:.2f}", f"{p50 / base:.3f}x", f"{p99 / base99:.3f}x", f"{cpu:.0f}"]
            )
    print(f"\nc={args.concurrency}, {args.rounds} rounds of {args.calls:,} calls per server and kind, in turns")
    print(
        table(
            ["call", "server", "p50 ms", "p99 ms", "p50 / absent", "p99 / absent", "server CPU µs per call"],
            rows,
        )
    )
    calls = (args.rounds * args.calls + 500) * len(kinds)
    print(
        "spans received by the OTLP receiver, per call: "
        + ", ".join(f"{name} {spans[service(name)] / calls:.1f}" for name in MODES)
    )


def check_many(stub: Any, count: int) -> None:
    from grpc_health.v1 import health_pb2

    for _ in range(count):
        stub.Check(health_pb2.HealthCheckRequest())


INTERCEPTORS = ("none", "pass-through", "opentelemetry, unsampled", "opentelemetry, sampled")


def interceptor_cost(rounds: int, calls: int = 6000) -> None:
    """Server CPU per call of a method that does nothing (_trivial_server.py), under each interceptor, the
    servers in turns, from 4 threads of a client in this process."""
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    script = str(Path(__file__).resolve().parent / "_trivial_server.py")
    cpu: dict[str, list[float]] = {kind: [] for kind in INTERCEPTORS}
    for r in range(rounds):
        for kind in INTERCEPTORS[r % 4 :] + INTERCEPTORS[: r % 4]:
            port = Ports.free().thrift
            proc = subprocess.Popen([sys.executable, script, kind, str(port)], stdout=subprocess.PIPE, text=True)
            try:
                proc.stdout.readline()  # "ready"
                with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
                    stub = health_pb2_grpc.HealthStub(channel)
                    for _ in range(500):  # warm up
                        stub.Check(health_pb2.HealthCheckRequest())
                    before = cpu_seconds(proc.pid)
                    with ThreadPoolExecutor(4) as pool:
                        list(pool.map(check_many, [stub] * 4, [calls // 4] * 4))
                    cpu[kind].append((cpu_seconds(proc.pid) - before) / calls * 1e6)
            finally:
                proc.terminate()
                proc.wait(30)
    base = statistics.median(cpu["pass-through"])
    rows = [[k, f"{statistics.median(v):.0f}", f"{statistics.median(v) - base:+.0f}"] for k, v in cpu.items()]
    print(f"\na method that does nothing, {rounds} rounds of {calls:,} calls per server, in turns")
    print(table(["interceptors", "server CPU µs per call", "µs over a pass-through interceptor"], rows))


if __name__ == "__main__":
    main()
