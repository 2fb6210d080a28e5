"""Soak: a bounded stretch of mixed load on one `simhash-index serve` over the local HBase, watching for errors,
a growing server, and latency that drifts.

1. A fresh index; the server as its own process; 2,000 random articles indexed.
2. Calibration: 16 callers as fast as they go for --calibrate seconds give the rate the machine sustains.
3. The soak: half that rate (50% CPU headroom), open loop (each call scheduled on a fixed clock, its latency
   counted from when it was due, so a stall is not hidden), for --seconds: 70% Query, 20% Index,
   10% Deduplicate, all by text.  Server RSS is read from /proc every 5 s.
Prints a table per minute and the goals (no errors; RSS within 10% of the first minute's; last minute's p99
within 1.5x of the first's), and draws docs/soak.png.

    make soak            # or: .venv/bin/python benchmarks/soak.py [--seconds 600]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import percentile

from simhash_client import SimHashClient, SimHashError
from simhash_deploy import Ports

ROOT = Path(__file__).resolve().parents[1]
CLI = str(Path(sys.executable).with_name("simhash-index"))
MIX = (("query", 0.7), ("index", 0.2), ("dedup", 0.1))


def article(rng: random.Random) -> str:
    return "。".join("".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(20)) for _ in range(15))


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Load:
    def __init__(self, target: str, texts: list[str]) -> None:
        self.target, self.texts = target, texts
        self.local = threading.local()
        self.counter = 0
        self.lock = threading.Lock()

    def client(self) -> SimHashClient:
        if not hasattr(self.local, "client"):
            self.local.client = SimHashClient(self.target, timeout=30, retries=0)
        return self.local.client

    def one(self, rng: random.Random) -> str:
        kind = rng.choices([k for k, _ in MIX], [w for _, w in MIX])[0]
        text = rng.choice(self.texts)
        with self.lock:
            self.counter += 1
            n = self.counter
        if kind == "query":
            self.client().query(text=text)
        elif kind == "index":
            self.client().index(f"soak-{n}", text=text + f"（第{n}版）")
        else:
            self.client().deduplicate(f"dedup-{n}", text=text + "（转载）")
        return kind


def calibrate(load: Load, seconds: float) -> float:
    done = 0
    stop = time.monotonic() + seconds
    lock = threading.Lock()

    def caller(seed: int) -> None:
        nonlocal done
        rng = random.Random(seed)
        while time.monotonic() < stop:
            load.one(rng)
            with lock:
                done += 1

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--calibrate", type=float, default=20)
    parser.add_argument("--plot", default=str(ROOT / "docs" / "soak.png"))
    args = parser.parse_args()

    prefix = f"soak{int(time.time())}"
    env = {**os.environ, "SIMHASH_TABLE_PREFIX": prefix}
    subprocess.run([CLI, "schema", "apply"], env=env, check=True, capture_output=True)
    port = Ports.free().thrift
    server = subprocess.Popen(
        [CLI, "serve", "--address", f"127.0.0.1:{port}", "--metrics-address", ""],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    target = f"127.0.0.1:{port}"
    try:
        with SimHashClient(target, timeout=5, retries=0) as probe:
            try:
                probe.wait_until_serving(timeout=120)
            except SimHashError as exc:
                raise SystemExit(f"the server never became SERVING: {exc}") from None
            rng = random.Random(1)
            texts = [article(rng) for _ in range(2000)]
            for start in range(0, len(texts), 100):
                probe.index_batch([{"doc_id": f"base-{i}", "text": texts[i]} for i in range(start, start + 100)])
        load = Load(target, texts)
        sustained = calibrate(load, args.calibrate)
        rate = sustained / 2
        print(
            f"calibration: {sustained:.0f} calls/s with 16 callers; soak at {rate:.0f} calls/s for {args.seconds:.0f} s"
        )

        records: list[tuple[float, float, str, bool]] = []  # (due, latency, kind, ok)
        rss: list[tuple[float, float]] = []
        lock = threading.Lock()
        began = time.monotonic()
        rng = random.Random(2)

        def run(due: float, seed: int) -> None:
            ok = True
            kind = "?"
            try:
                kind = load.one(random.Random(seed))
            except SimHashError:
                ok = False
            with lock:
                records.append((due - began, time.monotonic() - due, kind, ok))

        with ThreadPoolExecutor(64) as pool:
            n = 0
            next_rss = began
            while True:
                due = began + n / rate
                if due - began >= args.seconds:
                    break
                now = time.monotonic()
                if now >= next_rss:
                    rss.append((now - began, rss_mb(server.pid)))
                    next_rss += 5
                if due > now:
                    time.sleep(due - now)
                pool.submit(run, due, rng.getrandbits(32))
                n += 1
        report(records, rss, args.seconds, args.plot)
    finally:
        server.terminate()
        server.wait(60)


def report(
    records: list[tuple[float, float, str, bool]], rss: list[tuple[float, float]], seconds: float, plot: str
) -> None:
    minutes = int(seconds // 60)
    print("| minute | calls | errors | p50 ms | p99 ms | server RSS MB |")
    print("|---|---|---|---|---|---|")
    p99s, rss_by_minute = [], []
    for m in range(minutes):
        window = [r for r in records if m * 60 <= r[0] < (m + 1) * 60]
        lat = [r[1] for r in window]
        mem = [v for t, v in rss if m * 60 <= t < (m + 1) * 60]
        p99s.append(percentile(lat, 0.99))
        rss_by_minute.append(max(mem))
        print(
            f"| {m + 1} | {len(window):,} | {sum(not r[3] for r in window)} | {percentile(lat, 0.5) * 1e3:.1f} "
            f"| {p99s[-1] * 1e3:.1f} | {rss_by_minute[-1]:.0f} |"
        )
    errors = sum(not r[3] for r in records)
    drift = max(rss_by_minute) / rss_by_minute[0]
    ratio = p99s[-1] / p99s[0]
    print(f"\nerrors: {errors} of {len(records):,} (goal 0)")
    print(
        f"server RSS: {rss_by_minute[0]:.0f} MB in minute 1, at most {max(rss_by_minute):.0f}: "
        f"{drift:.2f}x (goal <= 1.10)"
    )
    print(f"p99: {p99s[0] * 1e3:.1f} ms in minute 1, {p99s[-1] * 1e3:.1f} ms in the last: {ratio:.2f}x (goal <= 1.5)")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    windows = range(int(seconds // 10))
    for q, label in ((0.5, "p50"), (0.99, "p99")):
        values = [
            percentile([r[1] for r in records if w * 10 <= r[0] < (w + 1) * 10] or [float("nan")], q) * 1e3
            for w in windows
        ]
        top.plot([w * 10 / 60 for w in windows], values, label=label)
    top.set_ylabel("latency, ms (10 s windows)")
    top.legend()
    bottom.plot([t / 60 for t, _ in rss], [v for _, v in rss])
    bottom.set_ylim(0, max(v for _, v in rss) * 1.2)  # from zero: drift reads at its true size
    bottom.set_ylabel("server RSS, MB")
    bottom.set_xlabel("minutes")
    fig.suptitle("simhash-index soak: 70% Query, 20% Index, 10% Deduplicate at half the sustained rate")
    fig.tight_layout()
    fig.savefig(plot, dpi=80)
    print(f"plot: {plot}")


if __name__ == "__main__":
    main()
