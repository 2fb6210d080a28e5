"""What one reduce call of the `clusters` parts step costs when many documents share a part.

On a v5 index the parts step meets each document's stored parts with the fingerprints of a drawer prefix,
in one reduce call per prefix (server/mapreduce's PartsJob).  A reduce call holding 64 or more fingerprints
compares each part value with them once and remembers what it reached (PartsJob.Meeting), so a part many
documents share (a boilerplate page's) costs one comparison per fingerprint, not one per document.  This runs
benchmarks/java's PartsMeetingCost in fresh JVMs, the job's way ("meeting") and each part compared with
every fingerprint ("each", what the step did before) in turns, for prefixes of several sizes, with two
thirds of the parts one shared value and with none shared (where remembering cannot help), and prints the
median seconds of each (the meeting's range too: the JIT compiles its loop one of several ways in a JVM) and
their ratio side by side.  Both ways must find the same pairs.  No HBase, no Hadoop: the step's own
classes, with the serial collector the job's tasks run.

    make bench-parts-step        # or: .venv/bin/python benchmarks/bench_parts_step.py
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, java_harness, table

SOURCE = ROOT / "benchmarks" / "java" / "io" / "simhashindex" / "hfile" / "PartsMeetingCost.java"
BUILT = ROOT / "var" / "bench-parts-step"
HARNESS = "io.simhashindex.hfile.PartsMeetingCost"
WAYS = ("meeting", "each")


def run(path: str, fingerprints: int, documents: int, share: float, rounds: int, way: str) -> tuple[float, int]:
    """(best seconds of the rounds, pairs found) of one reduce call, in a fresh JVM."""
    given = (fingerprints, documents, share, rounds, way)
    done = subprocess.run(
        ["java", "-Xmx820m", "-XX:+UseSerialGC", "-cp", path, HARNESS, *map(str, given)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"PartsMeetingCost {fingerprints} {documents} {way} failed: {done.stderr[-2000:]}")
    seconds, _, pairs = done.stdout.split()
    return float(seconds), int(pairs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", default="64x100000,1000x100000,5000x200000", help="fingerprints x parts")
    parser.add_argument("--repeats", type=int, default=5, help="fresh JVMs per way and group, in turns")
    parser.add_argument("--rounds", type=int, default=4, help="reduce calls per JVM (the first warm it up)")
    args = parser.parse_args()
    path = java_harness(SOURCE, BUILT)
    rows = []
    for group in args.groups.split(","):
        fingerprints, documents = (int(x) for x in group.split("x"))
        for share in (2 / 3, 0.0):
            seconds: dict[str, list[float]] = {way: [] for way in WAYS}
            found: set[int] = set()
            for _ in range(args.repeats):
                for way in WAYS:
                    took, pairs = run(path, fingerprints, documents, share, args.rounds, way)
                    seconds[way].append(took)
                    found.add(pairs)
            if len(found) != 1:
                raise SystemExit(f"{group}, share {share:.2f}: the two ways found different pairs: {found}")
            meeting, each = (statistics.median(seconds[way]) for way in WAYS)
            spread = "-".join(f"{1e3 * x:.0f}" for x in (min(seconds["meeting"]), max(seconds["meeting"])))
            rows.append(
                [f"{fingerprints:,}", f"{documents:,}", f"{share:.0%}", f"{1e3 * meeting:.1f} ({spread})",
                 f"{1e3 * each:.1f}", f"{meeting / each:.2f}x", f"{found.pop():,}"]
            )  # fmt: skip
            print(" | ".join(rows[-1]), flush=True)
    print()
    headers = ["fingerprints held", "parts met", "one shared part", "meeting ms (range)", "each ms", "meeting / each"]
    print(table([*headers, "pairs (both)"], rows))


if __name__ == "__main__":
    main()
