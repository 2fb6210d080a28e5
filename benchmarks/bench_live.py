"""Query latency of a live index: written through the Index path, never compacted by hand, one HBase at a time.

The issue's new user: `make run` (HBase heap 2 GiB), documents written through Index, then queries through the
Python client while HBase flushes and compacts as it will.  For each entry of ``--gcs`` in turn (a garbage
collector, optionally the drawer table's regions, ``G1:16``, the schema's default otherwise; then options:
``+bucket``, data blocks cached in an off-heap BucketCache of ``--offheap-mb`` instead of on the heap;
``+warmup=N``, serve's ``--warmup-queries``; ``+fixed``, serve's ``--warmup-fixed``; ``+compaction=N``, the
region server's compaction throughput limit in MiB/s, 0 for HBase's own; repeat entries to
alternate, say ``G1,ZGC,ZGC,G1``), a fresh HBase alone on the machine gets the same N documents (random
fingerprints) through ``IndexStore.index_many``; then the same probes (half stored fingerprints 0-3 bits away,
half random) are asked in process (store) and through the Python client of a ``serve`` process, every probe
both ways in turn, in states:
1. ``written``: at once after the last write (HBase's flushes and compactions of the burst still running);
2. ``writing``: while a writer keeps indexing ``--write-rate`` documents per second;
3. ``compacted``: after a major compaction (the state the published figures were measured in).
Per state also: store files per drawer region, the region server JVM's pauses (its safepoint log: every
stop-the-world pause, whatever the collector) in milliseconds per second and the longest, the CPU its
threads took meanwhile, split into the collector's, the JIT compiler's and the rest, and the CPU per query
of serve, the Thrift2 gateway and the region server.  One HBase at a time:
two at once share the cores, so one collector's concurrent threads would slow the other's queries as well.
var/live/GC (var/live/GC-Rr for R regions, ...-bucket) is removed before and after (``--keep`` keeps each entry's last);
results go to var/live-results.json.

    .venv/bin/python benchmarks/bench_live.py                  # or: make bench-live
    .venv/bin/python benchmarks/bench_live.py --documents 2e5  # a quick look
    .venv/bin/python benchmarks/bench_live.py --gcs G1:16,G1,G1,G1:16  # 16 drawer regions against the default
    .venv/bin/python benchmarks/bench_live.py --gcs G1,G1+bucket,G1+bucket,G1  # the block cache off the heap
    .venv/bin/python benchmarks/bench_live.py --gcs G1,G1+warmup=8000,G1+warmup=8000,G1  # serve's warm-up count
    .venv/bin/python benchmarks/bench_live.py --gcs G1+fixed,G1,G1,G1+fixed  # warm-up until settled, or fixed
    .venv/bin/python benchmarks/bench_live.py --gcs G1+compaction=0,G1,G1,G1+compaction=0  # HBase's compaction limit
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import multiprocessing
import os
import re
import shutil
import statistics
import time
from collections.abc import Iterator
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event as EventType
from pathlib import Path

import numpy as np
from _common import CLK_TCK, cpu_seconds, percentile, probes, serving

from simhash_deploy import LocalHBase, Ports
from simhash_deploy.jvm import GARBAGE_COLLECTORS
from simhash_schema import apply_schema, connect, index_tables
from simhash_schema.tables import IndexTables
from simhash_server.index.model import Document
from simhash_server.index.store import IndexStore, StoreConfig

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "var" / "live"
PREFIX = "live"
WAYS = ("store", "client")
_PAUSE = re.compile(rb"Safepoint .*Total: (\d+) ns")
_STALL = re.compile(rb"Allocation Stall \(.*\) ([\d.]+)ms")  # ZGC: one thread waits for memory, no safepoint
_GC_THREADS = re.compile(r"^(ZWorker|ZDirector|ZDriver|ZStat|ZUncommit|GC Thread|G1 |VM Thread)")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds so far of a JVM's live threads, by kind: the collector's, the JIT compiler's, the rest."""
    out = dict.fromkeys(("gc", "jit", "other"), 0.0)
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        kind = "gc" if _GC_THREADS.match(name) else "jit" if "CompilerThre" in name else "other"
        out[kind] += (int(fields[11]) + int(fields[12])) / CLK_TCK
    return out


@dataclasses.dataclass(frozen=True)
class Variant:
    """An entry of --gcs, ``GC[:REGIONS][+bucket][+warmup=N][+fixed][+compaction=N]``: the collector, the drawer
    regions (None: the schema's default), whether data blocks are cached off the heap (an off-heap BucketCache
    of --offheap-mb), serve's ``--warmup-queries`` (None: serve's default), whether its warm-up asks exactly
    that many (``--warmup-fixed``) instead of going on until latency settles, and the region server's
    compaction throughput limit in MiB/s (0: HBase's own; None: the launcher's default)."""

    gc: str
    regions: int | None
    bucket: bool
    warmup: int | None = None
    fixed: bool = False
    compaction: int | None = None

    @classmethod
    def of(cls, entry: str) -> Variant:
        head, *options = entry.split("+")
        bucket, warmup, fixed, compaction = False, None, False, None
        for option in options:
            name, eq, value = option.partition("=")
            if option == "bucket":
                bucket = True
            elif option == "fixed":
                fixed = True
            elif name == "warmup" and eq and value.isdigit():
                warmup = int(value)
            elif name == "compaction" and eq and value.isdigit():
                compaction = int(value)
            else:
                raise SystemExit(
                    f"--gcs: {entry!r}: an option after '+' is 'bucket', 'warmup=N', 'fixed' or 'compaction=N', "
                    f"not {option!r}"
                )
        gc, _, regions = head.partition(":")
        if gc not in GARBAGE_COLLECTORS:
            raise SystemExit(f"--gcs: {entry!r}: the collector must be one of {', '.join(GARBAGE_COLLECTORS)}")
        if regions and not (regions.isdigit() and 1 <= int(regions) <= 4096):
            raise SystemExit(f"--gcs: {entry!r}: the drawer regions after ':' must be a number in 1..4096")
        return cls(gc, int(regions) if regions else None, bucket, warmup, fixed, compaction)

    @property
    def serve_options(self) -> tuple[str, ...]:
        count = () if self.warmup is None else ("--warmup-queries", str(self.warmup))
        return count + (("--warmup-fixed",) if self.fixed else ())

    @property
    def tables(self) -> IndexTables:
        return index_tables(PREFIX) if self.regions is None else index_tables(PREFIX, drawer_regions=self.regions)

    @property
    def work_dir(self) -> Path:
        """var/live/GC for the defaults (what bench_warmup restarts), var/live/GC-Rr-bucket and the like otherwise."""
        regions = "" if self.regions is None else f"-{self.regions}r"
        return WORK / f"{self.gc}{regions}{'-bucket' if self.bucket else ''}"


def serve_pid() -> int:
    """The pid of the `serve` process this benchmark started (its only child running serve)."""
    for tid in Path("/proc/self/task").iterdir():
        for child in (tid / "children").read_text().split():
            if b"serve" in Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0"):
                return int(child)
    raise RuntimeError("no serve process among this process's children")


def _write(config: StoreConfig, rate: int, stop: EventType, written: Synchronized[int]) -> None:
    """A writer process's loop: ``rate`` random documents a second, in 10 batches, until ``stop``."""
    rng = np.random.default_rng(99)
    with IndexStore(config) as store:
        n, tick = 0, time.monotonic()
        while not stop.is_set():
            fps = rng.integers(0, 2**64, rate // 10, dtype=np.uint64)
            store.index_many([Document(f"w{n + i}", int(fp)) for i, fp in enumerate(fps)])
            n += len(fps)
            written.value = n
            tick += 0.1  # a pace, not a wait for a condition
            stop.wait(max(0.0, tick - time.monotonic()))


@contextlib.contextmanager
def writers(configs: list[StoreConfig], rate: int) -> Iterator[list[Synchronized[int]]]:
    """A writer per index indexing ``rate`` random documents per second into it (10 batches a second) while
    the block runs: how many each has written so far (``.value``).  Each writer is a process of its own, as
    another service writing would be: a thread here would hold this process's GIL between the queries it
    times, and add its waits to their latency."""
    spawn = multiprocessing.get_context("spawn")  # no fork of a process holding gRPC and Thrift connections
    stop = spawn.Event()
    done = [spawn.Value("q", 0) for _ in configs]
    processes = [
        spawn.Process(target=_write, args=(config, rate, stop, written), daemon=True)
        for config, written in zip(configs, done, strict=True)
    ]
    for process in processes:
        process.start()
    try:
        yield done
    finally:
        stop.set()
        for process in processes:
            process.join(60)
        if any(process.exitcode != 0 for process in processes):  # None: still running a minute after stop
            codes = [process.exitcode for process in processes]
            raise RuntimeError(f"a writer failed or did not stop (exit codes {codes})")


class Live:
    """One HBase (``make run``'s settings, collector ``gc``) holding one index (``regions`` drawer regions)."""

    def __init__(self, args: argparse.Namespace, variant: Variant) -> None:
        self.args, self.gc = args, variant.gc
        self.local = LocalHBase(
            var_dir=variant.work_dir,
            ports=Ports.free(),
            master_heap_mb=args.heap_mb,
            gc=variant.gc,
            offheap_cache_mb=args.offheap_mb if variant.bucket else 0,
            **({} if variant.compaction is None else {"compaction_mib_per_s": variant.compaction or None}),
        )
        self.tables = variant.tables
        self.serve_options = variant.serve_options
        self.stored: list[int] = []

    def config(self) -> StoreConfig:
        ports = self.local.ports
        return StoreConfig(thrift_port=ports.thrift, thrift2_port=ports.thrift2, table_prefix=PREFIX)

    def start(self) -> None:
        self.local.start()
        client = connect("127.0.0.1", self.local.ports.thrift2, 120_000)
        apply_schema(client, self.tables)
        client.close()

    def write(self, count: int, seed: int, batch: int = 1000) -> float:
        """``count`` documents of random fingerprints: the seconds it took."""
        fps = np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64)
        self.stored.extend(int(fp) for fp in fps[:100_000])
        began = time.perf_counter()
        with IndexStore(self.config()) as store:
            for lo in range(0, count, batch):
                store.index_many([Document(f"d{seed}-{i}", int(fp)) for i, fp in enumerate(fps[lo : lo + batch], lo)])
        return time.perf_counter() - began

    @contextlib.contextmanager
    def writing(self, rate: int) -> Iterator[Synchronized[int]]:
        """A writer indexing ``rate`` documents per second (10 batches a second) meanwhile."""
        with writers([self.config()], rate) as done:
            yield done[0]

    def files_per_region(self) -> float:
        table = self.local.var_dir / "data" / "data" / "default" / self.tables.drawers.name
        counts = [sum(1 for f in (r / "d").iterdir() if f.is_file()) for r in table.iterdir() if (r / "d").is_dir()]
        return statistics.mean(counts) if counts else 0.0

    @contextlib.contextmanager
    def watched(self, queries: int) -> Iterator[dict[str, float]]:
        """The region server's pauses and its threads' CPU (% of a core, by kind) while the block runs, and
        the CPU µs per query of serve (``queries`` through it) and of the gateway and the region server
        (``queries`` both ways: in process and through serve)."""
        status = self.local.status()
        pid, gateway = status["master"]["pid"], status["thrift2"]["pid"]
        assert isinstance(pid, int) and isinstance(gateway, int)
        processes = {"serve": serve_pid(), "thrift2": gateway, "hbase": pid}
        log = self.local.gc_log("master")
        since, cpu, began = log.stat().st_size, thread_cpu(pid), time.monotonic()
        before = {name: cpu_seconds(p) for name, p in processes.items()}
        out: dict[str, float] = {}
        yield out
        seconds = time.monotonic() - began
        for name, p in processes.items():
            per = queries if name == "serve" else 2 * queries
            out[f"{name} us per query"] = 1e6 * (cpu_seconds(p) - before[name]) / per
        out.update({f"{kind} cpu %": 100 * (s - cpu[kind]) / seconds for kind, s in thread_cpu(pid).items()})
        with open(log, "rb") as f:
            f.seek(since)
            lines = f.readlines()
        ms = [int(m.group(1)) / 1e6 for line in lines if (m := _PAUSE.search(line))]
        stalls = [float(m.group(1)) for line in lines if (m := _STALL.search(line))]
        out.update(
            {
                "pauses ms per s": sum(ms) / seconds,
                "longest pause ms": max(ms, default=0.0),
                "stalls ms per s": sum(stalls) / seconds,
            }
        )

    def compact(self) -> float:
        began = time.monotonic()
        names = [self.tables.drawers.name, self.tables.fp2docs.name, self.tables.docs.name]
        self.local.flush(names, timeout=3600, compact=True)
        return time.monotonic() - began


def measure(live: Live, asked: list[int], warmup: list[int]) -> dict[str, object]:
    """p50/p99 in process and through the client, the probes asked both ways in turn; the JVM meanwhile."""
    timings: dict[str, list[float]] = {w: [] for w in WAYS}
    with IndexStore(live.config()) as store, serving(live.local, PREFIX, *live.serve_options) as client:
        calls = {"store": store.query, "client": lambda fp: client.query(simhash=fp)}
        for fp in warmup:
            for call in calls.values():
                call(fp)
        with live.watched(len(asked)) as jvm:
            for i, fp in enumerate(asked):
                for way in WAYS[i % 2 :] + WAYS[: i % 2]:
                    began = time.perf_counter()
                    calls[way](fp)
                    timings[way].append(time.perf_counter() - began)
    latency = {f"{w} {q}": 1000 * percentile(v, q / 100) for w, v in timings.items() for q in (50, 99)}
    return latency | {"jvm": jvm}


def run(args: argparse.Namespace, entry: str) -> dict[str, object]:
    """One entry's HBase, alone: the documents written, then the three states."""
    variant = Variant.of(entry)
    shutil.rmtree(variant.work_dir, ignore_errors=True)
    live = Live(args, variant)
    live.start()
    out: dict[str, object] = {"gc": entry, "drawer regions": len(live.tables.drawers.split_keys) + 1}
    try:
        out["write_s"] = live.write(args.documents, seed=1)
        print(f"{entry}: wrote {args.documents:,} documents in {out['write_s']:.0f} s", flush=True)
        asked = probes(args.queries, seed=1, stored=live.stored)
        warmup = [int(v) for v in np.random.default_rng(2).integers(0, 2**64, size=args.warmup, dtype=np.uint64)]
        files = live.files_per_region()
        out["written"] = {"files": files} | measure(live, asked, warmup)
        print(f"{entry} written: {json.dumps(out['written'])}", flush=True)
        with live.writing(args.write_rate) as done:
            files = live.files_per_region()
            out["writing"] = {"files": files} | measure(live, asked, warmup) | {"documents": done.value}
        print(f"{entry} writing: {json.dumps(out['writing'])}", flush=True)
        out["compact_s"] = live.compact()
        out["compacted"] = {"files": live.files_per_region()} | measure(live, asked, warmup)
        print(f"{entry} compacted: {json.dumps(out['compacted'])}", flush=True)
    finally:
        live.local.stop()
        if not args.keep:
            shutil.rmtree(variant.work_dir, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=lambda s: int(float(s)), default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--write-rate", type=int, default=500, help="documents/s in the writing state")
    parser.add_argument("--heap-mb", type=int, default=2048, help="HBase heap (make run's default)")
    parser.add_argument("--offheap-mb", type=int, default=1024, help="the off-heap BucketCache of a '+bucket' entry")
    parser.add_argument(
        "--gcs",
        default="G1,ZGC,ZGC,G1",
        help="one fresh HBase per entry (GC or GC:DRAWER_REGIONS, then +bucket, +warmup=N, +fixed), in this order",
    )
    parser.add_argument("--keep", action="store_true", help="keep var/live/GC afterwards")
    args = parser.parse_args()
    for entry in args.gcs.split(","):
        Variant.of(entry)  # refuse a malformed entry before the first HBase starts
    results = {"args": vars(args), "runs": [run(args, gc) for gc in args.gcs.split(",")]}
    (ROOT / "var").mkdir(exist_ok=True)
    (ROOT / "var" / "live-results.json").write_text(json.dumps(results, indent=1))
    report(results)


STATES = ("written", "writing", "compacted")


def report(results: dict[str, object]) -> None:
    args, runs = results["args"], results["runs"]
    assert isinstance(args, dict) and isinstance(runs, list)
    print(f"\n{os.cpu_count()} cores; HBase heap {args['heap_mb']} MiB; {args['documents']:,} documents; ms")
    print("| run | entry | regions | documents/s written | state | drawer files/region | store p50 | store p99 | "
          "client p50 | client p99 | RS pauses ms/s | longest pause | RS CPU %: GC | JIT | other |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, r in enumerate(runs, 1):
        for state in STATES:
            s, jvm = r[state], r[state]["jvm"]
            print(
                f"| {n} | {r['gc']} | {r.get('drawer regions', 16)} | "
                f"{args['documents'] / r['write_s']:,.0f} | {state} | {s['files']:.1f} | "
                f"{s['store 50']:.2f} | {s['store 99']:.2f} | {s['client 50']:.2f} | {s['client 99']:.2f} | "
                f"{jvm['pauses ms per s']:.1f} | {jvm['longest pause ms']:.1f} | {jvm['gc cpu %']:.0f} | "
                f"{jvm['jit cpu %']:.0f} | {jvm['other cpu %']:.0f} |"
            )
    if all("serve us per query" in r[state]["jvm"] for r in runs for state in STATES):
        print("\nCPU µs per query: serve (per client query); Thrift2 gateway and region server (per query, both ways)")
        print("| run | entry | drawer regions | state | serve | Thrift2 | region server |")
        print("|---|---|---|---|---|---|---|")
        for n, r in enumerate(runs, 1):
            for state in STATES:
                jvm = r[state]["jvm"]
                print(
                    f"| {n} | {r['gc']} | {r['drawer regions']} | {state} | "
                    f"{jvm['serve us per query']:,.0f} | {jvm['thrift2 us per query']:,.0f} | "
                    f"{jvm['hbase us per query']:,.0f} |"
                )
    entries = list(dict.fromkeys(r["gc"] for r in runs))
    for entry in entries[1:]:  # geometric means over each entry's runs: the ratio to the first entry's
        for state in STATES:
            ratios = [
                statistics.geometric_mean([r[state][f"client {q}"] for r in runs if r["gc"] == entry])
                / statistics.geometric_mean([r[state][f"client {q}"] for r in runs if r["gc"] == entries[0]])
                for q in (50, 99)
            ]
            print(f"- {state}: {entry}/{entries[0]} client p50 {ratios[0]:.2f}x, p99 {ratios[1]:.2f}x")


if __name__ == "__main__":
    main()
