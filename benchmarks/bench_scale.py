"""Query latency as the index grows to 10^8 fingerprints, built with `hfile-load`, on this machine.

One index (table prefix `scale`, the default layout) grows through the sizes (default 1e5,1e6,1e7,1e8).  At
each size, once the HFiles of the new fingerprints are loaded (in chunks of at most --chunk):
1. live: N/10 (at most 10^5) more documents are written through IndexStore.index_many, as a service's
   Index calls would, and nothing is compacted: the store files the loads and flushes left;
2. compacted: the three tables are major-compacted (one store file per region).
In each state the same probes (half stored fingerprints 0-3 bits away, half random) are asked, interleaved,
in process (IndexStore.query) and through the Python client of a `simhash-index serve` process, each probe by
one of the two only (alternating in pairs), so that neither finds blocks the other just read from disk;
warm-up probes (others, asked both ways) go first, so the block cache holds what the probes touch where it
can.  Also: candidates per random probe against the theory (10 N / 2^25.5), regions and store files per
table, and how much of the drawer table the page cache holds before and after the probes (at 10^8 it sets
their tail; `fincore`).

Fingerprint i is splitmix64(i) and its id s<i>, so the data can be rebuilt and extended; it stays under
var/scale (HBase, inputs, results) for later runs: `make bench-scale-clean` removes it.  10^8 takes ~40 GB.

    .venv/bin/python benchmarks/bench_scale.py                  # or: make bench-scale
    .venv/bin/python benchmarks/bench_scale.py --sizes 1e5,1e6   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from _common import (
    CLI,
    ROOT,
    SCALE_DRAWER_REGIONS,
    SCALE_HEAP_MB,
    percentile,
    probes,
    serving,
    splitmix64,
)
from _common import SCALE_PREFIX as PREFIX
from _common import SCALE_WORK as WORK
from bench_query import RawScans

from simhash_client import SimHashClient
from simhash_deploy import LocalHBase, Ports
from simhash_schema import apply_schema, connect, index_tables
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

BYTES_PER_FINGERPRINT = 450  # on disk, all three tables, measured at 10^7 (docs/benchmarks.md, hfile)
_RECORD = np.dtype([("fp", ">u8"), ("len", ">u2"), ("id", "S11")])


def write_chunk(path: Path, start: int, end: int) -> None:
    """Fingerprints start..end-1 in the bin format of bulk input."""
    with open(path, "wb") as f:
        f.write(b"SHBULK1\n")
        for lo in range(start, end, 1_000_000):
            hi = min(lo + 1_000_000, end)
            out = np.empty(hi - lo, dtype=_RECORD)
            out["fp"], out["len"] = splitmix64(np.arange(lo, hi)), 11
            out["id"] = [f"s{i:010d}".encode() for i in range(lo, hi)]
            f.write(out.tobytes())


class Scale:
    def __init__(self, args: argparse.Namespace, site: dict[str, str] | None = None, work: Path = WORK) -> None:
        self.args = args
        self.work = work
        self.state_path = work / "state.json"
        self.state = json.loads(self.state_path.read_text()) if self.state_path.exists() else {"loaded": 0}
        self.local = LocalHBase(
            var_dir=work / "hbase", ports=Ports.free(), master_heap_mb=args.master_heap_mb, site=site
        )
        # 16 drawer regions, as the published runs had (about 1.2 GB each at 10^8; hfile-load's drawers job
        # gets one reducer per region), not the schema's default for a small index.
        self.tables = index_tables(PREFIX, drawer_regions=SCALE_DRAWER_REGIONS)

    def save(self) -> None:
        self.state_path.write_text(json.dumps(self.state, indent=1))

    def config(self) -> StoreConfig:
        ports = self.local.ports
        return StoreConfig(thrift_port=ports.thrift, thrift2_port=ports.thrift2, table_prefix=PREFIX, pool_size=16)

    def start(self) -> None:
        self.work.mkdir(parents=True, exist_ok=True)
        self.local.start()
        client = connect("127.0.0.1", self.local.ports.thrift2, 120_000)
        apply_schema(client, self.tables)
        client.close()

    def grow(self, target: int) -> None:
        while self.state["loaded"] < target:
            start = self.state["loaded"]
            end = min(target, start + self.args.chunk)
            need = (end - start) * BYTES_PER_FINGERPRINT * 2 + (2 << 30)  # staging + its copy in HBase
            free = shutil.disk_usage(self.work).free
            if free < need:
                raise SystemExit(
                    f"loading fingerprints {start:,}..{end:,} needs about {need / 2**30:.0f} GiB free under "
                    f"{self.work}, and {free / 2**30:.0f} GiB are: free space, or give smaller --sizes"
                )
            source = self.work / f"chunk-{start}-{end}.bin"
            write_chunk(source, start, end)
            began = time.monotonic()
            command = [
                CLI, "hfile-load", str(source), "--new-ids-only", "--quiet",
                "--staging", str(self.work / "staging"), "--rejects", str(self.work / "rejects.tsv"),
                "--table-prefix", PREFIX, "--thrift-port", str(self.local.ports.thrift),
                "--thrift2-port", str(self.local.ports.thrift2),
                "--zookeeper", f"127.0.0.1:{self.local.ports.zookeeper}",
            ]  # fmt: skip
            subprocess.run(command, check=True)
            source.unlink()
            self.state.setdefault("loads", []).append({"start": start, "end": end, "s": time.monotonic() - began})
            self.state["loaded"] = end
            self.save()
            print(f"loaded {start:,}..{end:,} in {time.monotonic() - began:,.0f} s", flush=True)

    def write_live(self, n: int) -> int:
        """N/10 (at most 10^5) documents through the store's Index path, beside the HFile-loaded ones."""
        count = min(100_000, n // 10)
        rng = np.random.default_rng(n)
        fps = rng.integers(0, 2**64, size=count, dtype=np.uint64)
        docs = [Document(f"w{n}-{i}", int(fp)) for i, fp in enumerate(fps)]
        with IndexStore(self.config()) as store:
            for lo in range(0, count, 1000):
                store.index_many(docs[lo : lo + 1000])
        return count

    def compact(self) -> float:
        began = time.monotonic()
        names = [self.tables.drawers.name, self.tables.fp2docs.name, self.tables.docs.name]
        self.local.flush(names, timeout=4 * 3600, compact=True)
        return time.monotonic() - began

    def layout(self) -> dict[str, object]:
        """Regions and store files per region of each table, as on disk now, and the drawers cached."""
        out: dict[str, object] = {}
        base = self.local.var_dir / "data" / "data" / "default"
        for spec in (self.tables.drawers, self.tables.fp2docs, self.tables.docs):
            regions = [r for r in (base / spec.name).iterdir() if r.is_dir() and not r.name.startswith(".")]
            files = [len([f for f in (r / "d").glob("*") if f.is_file()]) for r in regions if (r / "d").is_dir()]
            short = spec.name.rsplit("_", 1)[1]
            out[f"{short}_regions"] = len(regions)
            out[f"{short}_files_per_region"] = statistics.mean(files) if files else 0
            out[f"{short}_bytes"] = self.local.table_bytes(spec.name)
        out["drawers_cached_after"] = self.drawers_cached()
        return out

    @property
    def drawers_dir(self) -> Path:
        """The drawer table's directory under HBase's root (its regions, their store files)."""
        return self.local.var_dir / "data" / "data" / "default" / self.tables.drawers.name

    def drawers_cached(self) -> int | None:
        """Bytes of the drawer table's store files in the page cache now (util-linux's fincore; None where
        it is missing): at 10^8 what the probes find there sets their tail."""
        if shutil.which("fincore") is None:
            return None
        files = self.drawers_dir.glob("*/d/*")
        command = ["fincore", "--bytes", "--noheadings", "--output", "RES", *map(str, files)]
        return sum(int(n) for n in subprocess.run(command, capture_output=True, text=True, check=True).stdout.split())


def ask_one_way(i: int, fp: int, store: IndexStore, client: SimHashClient, timings: dict[str, list[float]]) -> None:
    """Probe ``i`` asked in process or through the client, timed into ``timings["store" | "client"]``: each probe
    by one way only, the ways alternating in pairs (a stored and a random probe each), as a probe asked both
    ways would find, the second time, the blocks the first read from disk."""
    name = ("store", "client")[(i // 2) % 2]
    began = time.perf_counter()
    if name == "store":
        store.query(fp)
    else:
        client.query(simhash=fp)
    timings[name].append(time.perf_counter() - began)


def measure(
    scale: Scale, asked: list[int], warm: list[int], cpu: Callable[[], float] | None = None
) -> dict[str, object]:
    """p50/p99 of the probes ``asked`` after the ``warm`` ones; with ``cpu`` (CPU seconds of some processes so
    far) also their CPU per probe over the probes alone, a recount of every second probe's candidates included."""
    timings: dict[str, list[float]] = {"store": [], "client": []}
    candidates = []
    with IndexStore(scale.config()) as store, serving(scale.local, PREFIX) as client:
        raw = RawScans(store)
        for fp in warm:
            store.query(fp)
            client.query(simhash=fp)
        cpu_began = cpu() if cpu else 0.0
        for i, fp in enumerate(asked):
            ask_one_way(i, fp, store, client, timings)
            if i % 2:
                candidates.append(raw.thrift2(fp))
        cpu_spent = cpu() - cpu_began if cpu else None
    out: dict[str, object] = {"candidates": statistics.mean(candidates)}
    if cpu_spent is not None:
        out["cpu_us_per_probe"] = 1e6 * cpu_spent / len(asked)
    for name, values in timings.items():
        out[f"{name}_p50_ms"] = 1000 * percentile(values, 0.5)
        out[f"{name}_p99_ms"] = 1000 * percentile(values, 0.99)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e5,1e6,1e7,1e8")
    parser.add_argument("--chunk", type=lambda s: int(float(s)), default=25_000_000)
    parser.add_argument("--queries", type=int, default=2000, help="probes, half asked in process, half by the client")
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--master-heap-mb", type=int, default=SCALE_HEAP_MB)
    args = parser.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    scale = Scale(args)
    scale.start()
    asked = probes(args.queries, seed=1)
    warm = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=args.warmup, dtype=np.uint64)]
    results = scale.state.setdefault("results", {})
    try:
        for n in sizes:
            if n < scale.state["loaded"]:
                print(f"skipping {n:,}: the index already holds {scale.state['loaded']:,}", flush=True)
                continue
            scale.grow(n)
            written = scale.write_live(n)
            total = scale.state["loaded"] + sum(scale.state.get("live", {}).values()) + written
            scale.state.setdefault("live", {})[str(n)] = written
            cached = {"drawers_cached_before": scale.drawers_cached()}
            live = cached | measure(scale, asked, warm) | scale.layout() | {"n": total}
            print(f"{n:,} live: {json.dumps(live)}", flush=True)
            compact_s = scale.compact()
            cached = {"drawers_cached_before": scale.drawers_cached()}
            compacted = cached | measure(scale, asked, warm) | scale.layout() | {"n": total, "compact_s": compact_s}
            print(f"{n:,} compacted: {json.dumps(compacted)}", flush=True)
            results[str(n)] = {"live": live, "compacted": compacted}
            scale.save()
    finally:
        scale.local.stop()
    report(results, args)


def report(results: dict[str, dict[str, dict[str, float]]], args: argparse.Namespace) -> None:
    heap = args.master_heap_mb
    print(f"\n{os.cpu_count()} cores; HBase heap {heap} MiB, block cache {0.4 * heap:,.0f} MiB (40%)")
    print("| N | state | store p50 ms | store p99 ms | client p50 ms | client p99 ms | candidates | theory | "
          "drawer regions | drawer files/region | drawers GB | drawers cached GB, before / after probes |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for _, states in sorted(results.items(), key=lambda kv: int(kv[0])):
        for state, r in states.items():
            print(
                f"| {int(r['n']):,} | {state} | {r['store_p50_ms']:.2f} | {r['store_p99_ms']:.2f} | "
                f"{r['client_p50_ms']:.2f} | {r['client_p99_ms']:.2f} | {r['candidates']:.2f} | "
                f"{10 * r['n'] / 2**25.5:.2f} | {r['drawers_regions']} | {r['drawers_files_per_region']:.1f} | "
                f"{r['drawers_bytes'] / 1e9:.2f} | {_gb(r.get('drawers_cached_before'))} / "
                f"{_gb(r.get('drawers_cached_after'))} |"
            )
    plot(results)


def _gb(value: object) -> str:
    return f"{value / 1e9:.2f}" if isinstance(value, int) else "-"  # not measured (older runs, no fincore)


def plot(results: dict[str, dict[str, dict[str, float]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted(results, key=int)
    fig, ax = plt.subplots(figsize=(7, 4))
    for state, style in (("compacted", "-"), ("live", "--")):
        for metric, marker in (("client_p50_ms", "o"), ("client_p99_ms", "^")):
            xs = [results[n][state]["n"] for n in ns if state in results[n]]
            ys = [results[n][state][metric] for n in ns if state in results[n]]
            ax.plot(xs, ys, style, marker=marker, label=f"{state}, {metric[7:10]} (Python client)")
    ax.set_xscale("log")
    ax.set_xlabel("fingerprints in the index")
    ax.set_ylabel("query latency, ms")
    ax.set_title("Query latency against index size (make bench-scale)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(ROOT / "docs" / "scale.png", dpi=110)


if __name__ == "__main__":
    main()
