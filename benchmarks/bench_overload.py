"""Overload: what callers see when they offer 0.5x to 4x the queries a server sustains.

Serves bench-query's 10^6 index (table prefix bench_q1000000_r2) with `simhash-index serve` at its defaults
(64 calls of one method admitted at once, the next refused with RESOURCE_EXHAUSTED and a RetryInfo),
measures its capacity (Query by fingerprint from ghz, 32 callers each calling again once answered: calls/s),
then offers Query at 0.5x, 1x, 2x and 4x that rate for --seconds each (ghz --rps: a fixed arrival rate, not
callers that wait for answers).  --serve-args given more than once compares servers in one run.
For each load: the admitted calls' p50 / p99 (the OK answers), how many were refused and how fast, any
other status, and the server's peak resident memory.  Afterwards: whether the same server process (no
restart) says SERVING and answers a query.

    make bench-overload      # or: .venv/bin/python benchmarks/bench_overload.py --seconds 60
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile, table
from bench_grpc import PREFIX, ghz_binary, probes, protoset, rss_mb, serve

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports


def offer(ghz: str, port: int, data: list[dict], rate: int | None, seconds: int, pid: int) -> dict:
    """Query at ``rate`` calls/s for ``seconds`` (None: 32 callers, each calling again once answered): every
    call's status and latency, and the server's peak resident memory."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
    out = f.name + ".out"
    pacing = ["--rps", str(rate)] if rate is not None else []
    # enough workers that a slow answer does not lower the offered rate much
    workers = max(32, min(600, rate // 10)) if rate is not None else 32
    command = [
        ghz,
        "--insecure",
        "--protoset",
        protoset(),
        "--call",
        "simhash_index.v1.SimHashIndex.Query",
        "--data-file",
        f.name,
        *pacing,
        "-c",
        str(workers),
        "-z",
        f"{seconds}s",
        "--duration-stop",
        "wait",  # calls in flight at the end finish (ghz's default closes them: UNAVAILABLE on its side)
        "--connections",
        "8",
        "--timeout",
        "10s",
        "--format",
        "json",
        "--output",
        out,
        f"127.0.0.1:{port}",
    ]
    proc = subprocess.Popen(command)
    peak = 0.0
    while proc.poll() is None:
        peak = max(peak, rss_mb(pid))
        time.sleep(0.2)
    report = json.loads(Path(out).read_text())
    os.unlink(f.name)
    os.unlink(out)
    ok = [d["latency"] / 1e6 for d in report.get("details") or [] if d.get("status") == "OK"]
    refused = [d["latency"] / 1e6 for d in report.get("details") or [] if d.get("status") == "ResourceExhausted"]
    other = {
        k: v for k, v in (report.get("statusCodeDistribution") or {}).items() if k not in ("OK", "ResourceExhausted")
    }
    return {"offered": report["count"] / seconds, "ok": ok, "refused": refused, "other": other, "rss": peak}


# Offered rates, as multiples of the capacity.  At 1x the arrivals come as fast as the server answers, so a
# queue forms and some calls are refused; 0.5x shows the same server unhurried.
LOADS = (0.5, 1, 2, 4)


def load_rows(ghz: str, port: int, data: list[dict], seconds: int, pid: int) -> tuple[int, list[list[str]], float]:
    """The capacity, then each of LOADS: the table's rows, and admitted p99 at 4x over that at 1x."""
    # The capacity: what 32 callers get, each calling again once answered.  (Offered faster than that, the
    # server refuses some calls, and what it answers then is not what it can sustain.)
    capacity = offer(ghz, port, data, None, 20, pid)
    sustained = int(len(capacity["ok"]) / 20)
    rows, p99 = [], {}
    for multiple in LOADS:
        r = offer(ghz, port, data, int(sustained * multiple), seconds, pid)
        p99[multiple] = percentile(r["ok"], 0.99) if r["ok"] else float("nan")
        rows.append(
            [
                f"{multiple:g}x",
                f"{r['offered']:,.0f}",
                f"{len(r['ok']) / seconds:,.0f}",
                f"{percentile(r['ok'], 0.5):.2f} / {p99[multiple]:.2f}" if r["ok"] else "-",
                f"{len(r['refused']):,}",
                f"{percentile(r['refused'], 0.99):.2f}" if r["refused"] else "-",
                r["other"] or "none",
                f"{r['rss']:.0f}",
            ]
        )
    return sustained, rows, p99[4] / p99[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=int, default=60, help="Seconds at each load.")
    parser.add_argument("--regions", type=int, default=2, help="Which bench-query index to serve.")
    parser.add_argument(
        "--serve-args",
        action="append",
        help="`simhash-index serve` options, e.g. '--max-calls-per-method 100000' for none; given more than "
        "once, each server in turn (default: one, at its defaults).",
    )
    args = parser.parse_args()
    ghz = ghz_binary()
    local = LocalHBase()
    env = {
        **os.environ,
        "SIMHASH_TABLE_PREFIX": PREFIX.format(regions=args.regions),
        "SIMHASH_HBASE_THRIFT_PORT": str(local.ports.thrift),
        "SIMHASH_HBASE_THRIFT2_PORT": str(local.ports.thrift2),
    }
    data = [{"simhash": str(fp)} for fp in probes(2000)]
    header = ["load", "offered/s", "answered/s", "admitted p50 / p99 ms", "refused", "refusal p99 ms"]
    for serve_args in args.serve_args or [""]:
        port = Ports.free().thrift
        server = serve(port, env, serve_args)
        try:
            sustained, rows, ratio = load_rows(ghz, port, data, args.seconds, server.pid)
            with SimHashClient(f"127.0.0.1:{port}", timeout=30) as client:
                healthy = client.health() and client.query(simhash=int(data[0]["simhash"])) is not None
            restarted = server.poll() is not None
        finally:
            server.terminate()
            server.wait(60)
        print(f"serve {serve_args or '(defaults)'}")
        print(f"capacity: {sustained:,} queries/s (32 callers for 20 s, then {args.seconds} s per load)")
        print(table([*header, "other statuses", "server RSS MB (peak)"], rows))
        print(f"admitted p99 at 4x / at 1x: {ratio:.2f}x")
        print(f"after the load: SERVING and answering: {healthy}; server restarted: {restarted}\n", flush=True)


if __name__ == "__main__":
    main()
