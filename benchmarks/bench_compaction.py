"""Live 10^8 after chunked loads: query latency while HBase compacts the loads' store files, by the region
server's compaction throughput limit, side by side in one run.

bench-scale's live 10^8 is an index HBase is compacting: the chunks' loads left several store files in each
drawer region, and HBase rewrites them (a long and a short compaction thread, on two cores) while the probes
run.  Here:
1. Build, once (kept under var/compaction, ~20 GB; `make bench-compaction-clean` removes it): bench-scale's
   fingerprints 0..10^8 loaded by `hfile-load` in chunks of 25 million with HBase's compactions switched off,
   so each region holds one store file per chunk; then the three tables are snapshotted.
2. Trials, in the order --order gives (each way early and late): the tables restored from the snapshots
   (compactions off), the limit written to hbase-site.xml and reloaded online (Admin.updateConfiguration),
   compactions switched on and requested for the three tables, as a load's own request would; then probes
   for --seconds while HBase compacts, each asked in process (IndexStore.query) or through a `serve`
   process's Python client (alternating in pairs), fresh probes each trial so that none finds blocks an
   earlier trial read.  Also: the bytes the compaction wrote meanwhile (hence how long the live state lasts),
   the store files left, and how much of the loaded drawer files the page cache holds (`fincore`).
   Ways: `off` (compactions stay off: the loads' files, nobody compacting), `hbase` (HBase's own limit, 50-100
   MiB/s by compaction pressure), `<N>MB` (N MiB/s for the region server, both bounds; the launcher's default
   is 10).

    .venv/bin/python benchmarks/bench_compaction.py          # or: make bench-compaction
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
from bench_query import percentile
from bench_scale import PREFIX, ROOT, Scale, ask_one_way, probes, serving, splitmix64

from simhash_server.index.store import IndexStore

WORK = ROOT / "var" / "compaction"
SCRIPT = Path(__file__).with_name("compaction.jsh")
COMPACTIONS_OFF = {"hbase.regionserver.compaction.enabled": "false"}
LOWER, HIGHER = "hbase.hstore.compaction.throughput.lower.bound", "hbase.hstore.compaction.throughput.higher.bound"


def limit_site(way: str) -> dict[str, str]:
    """hbase-site.xml properties of a way: the compaction throughput bounds, whatever the launcher's default."""
    if way in ("off", "hbase"):
        return {LOWER: str(50 << 20), HIGHER: str(100 << 20)}  # HBase's own
    if not way.endswith("MB") or not way[:-2].isdigit() or int(way[:-2]) == 0:
        raise ValueError(f"unknown way {way!r}: off, hbase or <N>MB")
    rate = str(int(way[:-2]) << 20)
    return {LOWER: rate, HIGHER: rate}


class Admin:
    """The steps of compaction.jsh against ``scale``'s HBase (a JVM per call: ~5 s)."""

    def __init__(self, scale: Scale) -> None:
        self.local = scale.local
        self.tables = [scale.tables.drawers.name, scale.tables.fp2docs.name, scale.tables.docs.name]

    def __call__(self, *ops: str, timeout: float = 1800) -> list[str]:
        command = [
            "jshell", f"-R-Dtables={','.join(self.tables)}", f"-R-Dops={','.join(ops)}",
            f"-R-Dhbase.log.dir={self.local.log_dir}", "-R-Dhbase.log.file=bench-compaction.log",
            "--class-path", f"{self.local.conf_dir}:{self.local.lib_dir}/*", str(SCRIPT),
        ]  # fmt: skip
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
        lines = result.stdout.splitlines()
        if result.returncode != 0 or sum(line.startswith("done ") for line in lines) != len(ops):
            raise SystemExit(f"{' '.join(ops)} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")
        return lines

    def files(self) -> dict[str, dict[str, int]]:
        """Per table: regions, store files, and cells compacted and being compacted since its regions opened."""
        out = {}
        for line in self("files"):
            if line.startswith("files "):
                _, name, *values = line.split()
                keys = ("regions", "files", "compacted", "compacting")
                out[name.rsplit("_", 1)[1]] = dict(zip(keys, map(int, values), strict=True))
        return out


def build(scale: Scale, admin: Admin, size: int) -> None:
    if scale.state.get("snapshot"):
        return
    began = time.monotonic()
    scale.grow(size)
    admin("snapshot")
    scale.state["snapshot"] = {"s": time.monotonic() - began, "files": admin.files()}
    record_loaded(scale, admin)
    print(f"built and snapshotted {size:,} in {time.monotonic() - began:,.0f} s: {scale.state['snapshot']}", flush=True)


def record_loaded(scale: Scale, admin: Admin) -> None:
    """The drawer table's files as the loads left them, and the three tables' bytes, before any trial compacts."""
    admin("off", "restore")
    paths = scale.drawers_dir.glob("*/d/*")
    scale.state["snapshot"]["drawer_files"] = [str(path.relative_to(scale.drawers_dir)) for path in paths]
    others = (scale.tables.fp2docs.name, scale.tables.docs.name)
    drawers = sum(path.stat().st_size for path in loaded_drawer_files(scale))
    scale.state["snapshot"]["bytes"] = drawers + sum(scale.local.table_bytes(name) for name in others)
    scale.save()


def loaded_drawer_files(scale: Scale) -> list[Path]:
    """Where the loads' drawer files are now: in the table, or in HBase's archive once a trial's compaction
    replaced them (a restored table then reads them through a link, named <table>=<region>-<file>)."""
    archive = scale.local.var_dir / "data" / "archive" / "data" / "default" / scale.tables.drawers.name
    out = []
    for name in scale.state["snapshot"]["drawer_files"]:
        region, family, file = name.split("/")
        if "=" in file:
            file = file.split("=", 1)[1].removeprefix(region + "-")
        found = [d / region / family / file for d in (scale.drawers_dir, archive)]
        out += [path for path in found if path.is_file()][:1]
    return out


def written_since(scale: Scale, since: float) -> int:
    """Bytes of the three tables' files written since ``since`` (time.time()): what compactions wrote, the files
    they finished and those in progress (a region's .tmp); restored files keep their times."""
    base = scale.local.var_dir / "data" / "data" / "default"
    tables = (scale.tables.drawers.name, scale.tables.fp2docs.name, scale.tables.docs.name)
    return sum(
        stat.st_size
        for name in tables
        for path in (base / name).rglob("*")
        if path.is_file() and (stat := path.stat()).st_mtime >= since
    )


def loaded_cached(scale: Scale) -> int | None:
    """Bytes of the loads' drawer files in the page cache (util-linux's fincore; None where it is missing)."""
    if shutil.which("fincore") is None:
        return None
    command = ["fincore", "--bytes", "--noheadings", "--output", "RES", *map(str, loaded_drawer_files(scale))]
    return sum(int(n) for n in subprocess.run(command, capture_output=True, text=True, check=True).stdout.split())


def trial(scale: Scale, admin: Admin, way: str, seed: int, seconds: float, warmup: int) -> dict[str, object]:
    """One way from the loaded state: ``warmup`` probes asked both ways, then probes for ``seconds``."""
    admin("off", "restore")
    scale.local.write_config(limit_site(way))  # over the launcher's settings and COMPACTIONS_OFF
    admin("reload", *(("on", "compact") if way != "off" else ()))
    began, wall = time.monotonic(), time.time()
    # Fresh probes: half stored fingerprints (any of those loaded) 0-3 bits away, half random.
    rng = np.random.default_rng(seed)
    stored = [int(v) for v in splitmix64(rng.integers(0, scale.state["loaded"], size=5000))]
    asked = probes(200_000, seed=seed, stored=stored)
    timings: dict[str, list[float]] = {"store": [], "client": []}
    with IndexStore(scale.config()) as store, serving(scale.local, PREFIX) as client:
        for fp in asked[-warmup:]:
            store.query(fp)
            client.query(simhash=fp)
        cached = loaded_cached(scale)
        started = time.monotonic()
        for i, fp in enumerate(asked[:-warmup]):
            if time.monotonic() - started > seconds:
                break
            ask_one_way(i, fp, store, client, timings)
    elapsed = time.monotonic() - began
    out: dict[str, object] = {"way": way, "seconds": elapsed, "written": written_since(scale, wall)}
    out |= {"drawers_cached_before": cached, "drawers_cached_after": loaded_cached(scale), "files": admin.files()}
    for name, values in timings.items():
        out[f"{name}_n"] = len(values)
        out[f"{name}_p50_ms"] = 1000 * percentile(values, 0.5)
        out[f"{name}_p99_ms"] = 1000 * percentile(values, 0.99)
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--order", default="hbase,10MB,off,off,10MB,hbase")
    parser.add_argument("--seconds", type=float, default=150, help="of probes per trial, after the warm-up")
    parser.add_argument("--warmup", type=int, default=300, help="probes asked both ways first, each trial")
    parser.add_argument("--size", type=lambda s: int(float(s)), default=100_000_000)
    parser.add_argument("--work", type=Path, default=WORK, help="where the index and results are kept")
    parser.add_argument("--chunk", type=lambda s: int(float(s)), default=25_000_000)
    parser.add_argument("--master-heap-mb", type=int, default=6144)
    args = parser.parse_args()
    ways = args.order.split(",")
    for way in ways:
        limit_site(way)  # unknown ways fail here, before an hour of loading
    if shutil.which("jshell") is None:
        raise SystemExit("jshell (JDK 17, as HBase needs) is not on PATH")
    scale = Scale(args, site=COMPACTIONS_OFF, work=args.work)
    scale.start()
    admin = Admin(scale)
    results = []
    try:
        build(scale, admin, args.size)
        # A freshly started HBase compiles its read path during the first trial: one unreported trial first.
        trial(scale, admin, "off", 99, args.seconds / 3, args.warmup)
        for seed, way in enumerate(ways, start=100):
            results.append(trial(scale, admin, way, seed, args.seconds, args.warmup))
    finally:
        scale.local.stop()
    (args.work / f"results-{time.strftime('%Y%m%dT%H%M%S')}.json").write_text(json.dumps(results, indent=1))
    report(results, scale)


def report(results: list[dict[str, object]], scale: Scale) -> None:
    loaded = scale.state["snapshot"]["files"]
    total = scale.state["snapshot"]["bytes"]
    print(
        f"\n{os.cpu_count()} cores; {scale.state['loaded']:,} fingerprints ({total / 1e9:.1f} GB); store files "
        "after the loads: " + ", ".join(f"{name} {t['files']} in {t['regions']} regions" for name, t in loaded.items())
    )
    print(
        "| # | way | store p50 ms | store p99 ms | client p50 ms | client p99 ms | probes | MB/s compacted | "
        "loaded drawers cached GB, before / after | drawer files left |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for i, r in enumerate(results, start=1):
        print(
            f"| {i} | {r['way']} | {r['store_p50_ms']:.2f} | {r['store_p99_ms']:.2f} | {r['client_p50_ms']:.2f} | "
            f"{r['client_p99_ms']:.2f} | {r['store_n'] + r['client_n']:,} | {r['written'] / r['seconds'] / 1e6:.1f} | "
            f"{_gb(r['drawers_cached_before'])} / {_gb(r['drawers_cached_after'])} | {r['files']['drawers']['files']} |"
        )
    keys = ("store_p50_ms", "store_p99_ms", "client_p50_ms", "client_p99_ms")
    for way in dict.fromkeys(r["way"] for r in results):
        mine = [r for r in results if r["way"] == way]
        mean = {k: float(np.exp(np.mean([np.log(r[k]) for r in mine]))) for k in keys}
        rate = sum(r["written"] for r in mine) / sum(r["seconds"] for r in mine)
        lasts = f", the live state lasting ~{total / rate / 60:.0f} min at that rate" if rate else ""
        print(f"{way}: geometric means " + ", ".join(f"{k} {v:.2f}" for k, v in mean.items()) + lasts)


def _gb(value: object) -> str:
    return f"{value / 1e9:.2f}" if isinstance(value, int) else "-"  # no fincore here


if __name__ == "__main__":
    main()
