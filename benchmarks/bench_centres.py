"""How large a component the `clusters` job's centres step can star in one reducer's heap.

`clusters --min-similarity` makes its star clusters per component of the verified links, in one reduce call
that holds the component's documents (server/mapreduce's Center.java).  A component too large for the
reducer's heap fails the task, so this is the figure a data team sizes `mapreduce.reduce.memory.mb` by.
For each heap (-Xmx, as `mapreduce.reduce.java.opts` sets it; Hadoop 3 gives its default reduce container of
1,024 MB an 820 MB heap), it finds the largest component that completes, to within --step documents, by
bisection over fresh JVMs running benchmarks/java's CenterCapacity (each document linked to an earlier one at
random), and times a component of --documents documents. It prints each heap's largest component and the ratio
between the heaps, side by side. No HBase, no Hadoop: the step's own class, with the serial collector the
job's tasks run.

    make bench-centres           # or: .venv/bin/python benchmarks/bench_centres.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, java_harness, table

SOURCE = ROOT / "benchmarks" / "java" / "io" / "simhashindex" / "hfile" / "CenterCapacity.java"
BUILT = ROOT / "var" / "bench-centres"
HARNESS = "io.simhashindex.hfile.CenterCapacity"


def run(path: str, heap_mb: int, documents: int) -> tuple[float, int] | None:
    """(seconds, MB in use after) of one component, or None when it did not fit the heap."""
    done = subprocess.run(
        ["java", f"-Xmx{heap_mb}m", "-XX:+UseSerialGC", "-cp", path, HARNESS, str(documents)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if done.returncode != 0:
        if "OutOfMemoryError" in done.stderr:
            return None
        raise SystemExit(f"CenterCapacity {documents} at {heap_mb} MB failed: {done.stderr.strip()[-2000:]}")
    _, _, _, seconds, used = done.stdout.split()
    return float(seconds), int(used)


def largest(path: str, heap_mb: int, step: int) -> int:
    """The largest component that completes in ``heap_mb``, to within ``step`` documents."""
    low, high = 0, step
    while run(path, heap_mb, high) is not None:
        low, high = high, high * 2
    while high - low > step:
        middle = (low + high) // 2
        if run(path, heap_mb, middle) is not None:
            low = middle
        else:
            high = middle
    return low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--heaps", default="820,1640", help="reducer heaps in MB, comma-separated")
    parser.add_argument("--documents", type=int, default=5_000_000, help="the component timed at each heap")
    parser.add_argument("--step", type=int, default=250_000, help="the bisection's resolution in documents")
    args = parser.parse_args()
    path = java_harness(SOURCE, BUILT, "agrona-*.jar")
    heaps = [int(h) for h in args.heaps.split(",")]
    rows, found = [], []
    for heap in heaps:
        most = largest(path, heap, args.step)
        timed = run(path, heap, args.documents)
        found.append(most)
        shown = "does not fit" if timed is None else f"{timed[0]:.1f} s, {timed[1]:,} MB in use after"
        rows.append([f"{heap:,} MB", f"{most:,}", shown])
        print(f"heap {heap} MB: largest component {most:,} documents; {args.documents:,}: {shown}", flush=True)
    print()
    print(table(["reducer heap", "largest component starred (documents)", f"{args.documents:,} documents"], rows))
    for heap, most in zip(heaps[1:], found[1:], strict=True):
        print(f"{heap:,} MB against {heaps[0]:,} MB: {most / max(found[0], 1):.2f}x the documents")


if __name__ == "__main__":
    main()
