"""The first queries after a restart: serve's warm-up until settled, a fixed count, and none, in rotating rounds.

Needs the 10^6 index `bench_live.py --keep` leaves under var/live/GC (``--gc``, default G1, the launcher's).
Each way restarts that HBase (cold JVMs: nothing compiled, empty block cache), starts `serve` on it, and as
soon as it is SERVING asks the same probes (half stored fingerprints 0-3 bits away, half random) through the
Python client: the latency first callers see, by slices of the probes.  Ways: ``--warmup-queries 0`` (none),
``N --warmup-fixed`` (exactly N, default 2000, as serve did before it warmed up until settled) and ``N``
(serve's default: at least N, then rounds until latency stops falling).  ``--baseline DIR`` adds a fourth: the
serve of another checkout (a `git worktree` of an earlier commit) warming up its own way from N, to measure a
change to the warm-up itself.  Rounds rotate which way goes first.  Not side by side at once: on 2 cores the
cold JVMs of one way would slow the other.

    .venv/bin/python benchmarks/bench_live.py --gcs G1 --keep && .venv/bin/python benchmarks/bench_warmup.py
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path

import numpy as np
from bench_live import PREFIX, ROOT, WORK
from bench_query import percentile
from bench_scale import probes, serving

from simhash_deploy import LocalHBase, Ports

_WARMED = re.compile(r"warmed up: (\d+) queries")


def slices(queries: int) -> tuple[tuple[int, int], ...]:
    """The first quarter of the probes, the second, and the second half: what first callers see, by time."""
    return ((0, queries // 4), (queries // 4, queries // 2), (queries // 2, queries))


def stored_fingerprints() -> list[int]:
    """The first 10^5 fingerprints bench_live wrote (its documents are drawn from seed 1)."""
    documents = json.loads((ROOT / "var" / "live-results.json").read_text())["args"]["documents"]
    return [int(fp) for fp in np.random.default_rng(1).integers(0, 2**64, size=documents, dtype=np.uint64)[:100_000]]


def first_queries(
    local: LocalHBase, options: tuple[str, ...], asked: list[int], checkout: Path | None
) -> dict[str, object]:
    """Restart ``local`` (cold JVMs), serve it with warm-up ``options``, time the probes once SERVING."""
    local.stop()
    local.start()
    timings = []
    began = time.monotonic()
    log = ROOT / "var" / "warmup-serve.log"
    with serving(local, PREFIX, *options, checkout=checkout, log=log) as client:
        ready = time.monotonic() - began
        for fp in asked:
            began = time.perf_counter()
            client.query(simhash=fp)
            timings.append(time.perf_counter() - began)
    warmed = _WARMED.search(log.read_text())
    return {"serving_after_s": ready, "warmup_asked": int(warmed[1]) if warmed else 0} | {
        f"{lo + 1}-{hi}": {
            "p50_ms": 1000 * percentile(timings[lo:hi], 0.5),
            "p99_ms": 1000 * percentile(timings[lo:hi], 0.99),
        }
        for lo, hi in slices(len(asked))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--warmup-queries", type=int, default=2000)
    parser.add_argument("--queries", type=int, default=1000, help="probes after SERVING (at least 4)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--baseline", type=Path, help="another checkout whose serve warms up too, for comparison")
    parser.add_argument("--gc", default="G1", help="the collector of the bench-live index to restart (var/live/GC)")
    args = parser.parse_args()
    if args.queries < 4:
        parser.error(f"--queries must be at least 4 (a quarter of them is the first slice), got {args.queries}")
    if not (WORK / args.gc / "data").is_dir():
        raise SystemExit(
            f"needs the index under {WORK / args.gc}: run `benchmarks/bench_live.py --gcs {args.gc} --keep`"
        )
    local = LocalHBase(var_dir=WORK / args.gc, ports=Ports.free(), master_heap_mb=2048, gc=args.gc)
    asked = probes(args.queries, seed=3, stored=stored_fingerprints())
    results: list[dict[str, object]] = []
    try:
        n = str(args.warmup_queries)
        ways: list[tuple[str, str, tuple[str, ...], Path | None]] = [
            ("this", "0", ("--warmup-queries", "0"), None),
            ("this", f"{n} fixed", ("--warmup-queries", n, "--warmup-fixed"), None),
            ("this", f"{n}, until settled", ("--warmup-queries", n), None),
        ]
        if args.baseline is not None:  # its own default way of warming up, N queries
            ways.append(("baseline", n, ("--warmup-queries", n), args.baseline.resolve()))
        for round_ in range(args.rounds):
            shift = round_ % len(ways)
            for code, warmup, options, checkout in ways[shift:] + ways[:shift]:
                timed = first_queries(local, options, asked, checkout)
                results.append({"round": round_ + 1, "serve": code, "warmup": warmup} | timed)
                print(json.dumps(results[-1]), flush=True)
    finally:
        local.stop()
    (ROOT / "var" / "warmup-results.json").write_text(json.dumps(results, indent=1))
    print(f"\n{os.cpu_count()} cores; one HBase ({args.gc}, 2 GiB heap) restarted before each serve")
    heads = " | ".join(f"probes {lo + 1}-{hi} p50 / p99 ms" for lo, hi in slices(args.queries))
    print(f"| round | serve | warm-up | queries asked | SERVING after s | {heads} |")
    print("|---|---|---|---|---|" + "---|" * 3)
    for r in results:
        cells = " | ".join(
            f"{r[f'{lo + 1}-{hi}']['p50_ms']:.2f} / {r[f'{lo + 1}-{hi}']['p99_ms']:.2f}"
            for lo, hi in slices(args.queries)  # type: ignore[index]
        )
        print(
            f"| {r['round']} | {r['serve']} | {r['warmup']} | {r['warmup_asked']:,} | {r['serving_after_s']:.1f} | "
            f"{cells} |"
        )


if __name__ == "__main__":
    main()
