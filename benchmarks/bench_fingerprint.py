"""Fingerprinting speed: this project against the `simhash` package, on the same ~1 KB Chinese documents;
and every recipe version side by side on those, on whole Chinese pages and on whole English pages.

One process, one core, both measured side by side in this run (interleaved rounds, best round kept, so a
noisy neighbour hurts both alike); then the multi-process path (`simhash-index fingerprint --workers`).
Also checks that every document's tokens equal jieba's own.

    .venv/bin/python benchmarks/bench_fingerprint.py     # or: make bench-fingerprint
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
from corpus import load_corpus
from eval_accuracy import simhash_package

from simhash_server.fingerprint import fingerprint
from simhash_server.fingerprint.features import DEFAULT_RECIPE
from simhash_server.fingerprint.native import fingerprinter
from simhash_server.fingerprint.normalize import normalize
from simhash_server.fingerprint.tokens import tokenize

ROOT = Path(__file__).resolve().parents[1]
COPIES = 30  # of the documents, for the --workers runs: enough that start-up does not dominate


def one_kb_docs(count: int) -> list[str]:
    """Chinese documents cut to at most 1024 UTF-8 bytes (on a character boundary)."""
    docs = []
    for doc in load_corpus():
        if doc.lang == "zh" and not doc.edited_from and len(doc.text.encode()) >= 1024:
            docs.append(doc.text.encode()[:1024].decode("utf-8", errors="ignore"))
            if len(docs) == count:
                break
    return docs


def jieba_tokens(normalized: str) -> list[str]:
    """The reference: jieba itself on each Han run, the project's rules elsewhere."""
    import jieba

    from simhash_server.fingerprint.tokens import _RUNS

    jieba.setLogLevel(60)
    out: list[str] = []
    for han, ideograph, word in _RUNS.findall(normalized):
        out.extend(jieba.lcut(han, HMM=True) if han else [ideograph or word])
    return out


def best_rate(fn, docs: list[str], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        for d in docs:
            fn(d)
        best = min(best, time.perf_counter() - began)
    return len(docs) / best


def workers_rate(docs: list[str], workers: int) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        for _ in range(COPIES):
            for n, d in enumerate(docs):
                f.write(json.dumps({"id": n, "text": d}, ensure_ascii=False) + "\n")
    began = time.perf_counter()
    subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "simhash-index"),
            "fingerprint",
            "-i",
            f.name,
            "-o",
            os.devnull,
            "-w",
            str(workers),
        ],
        check=True,
    )
    elapsed = time.perf_counter() - began
    os.unlink(f.name)
    return COPIES * len(docs) / elapsed


def versions_table(docs: list[str], rounds: int) -> None:
    """Each fingerprint version's documents/s, with and without the sketch, side by side (interleaved)."""
    from simhash_server.fingerprint import VERSIONS, short_name

    names = {version: short_name(version) for version in VERSIONS}
    best: dict[tuple[str, bool], float] = {}
    for version in VERSIONS:
        fingerprint(docs[0], version, sketch=True)  # warm
    for _ in range(rounds):
        for version in VERSIONS:
            for sketch in (False, True):
                rate = best_rate(lambda d, v=version, s=sketch: fingerprint(d, v, sketch=s), docs, 1)
                best[(version, sketch)] = max(best.get((version, sketch), 0.0), rate)
    first = next(iter(VERSIONS))
    print("| version (1 core) | docs/s, fingerprint | docs/s, fingerprint + sketch | ratio to v1 (with sketch) |")
    print("|---|---|---|---|")
    for version, name in names.items():
        print(
            f"| {name} | {best[(version, False)]:,.0f} | {best[(version, True)]:,.0f} | "
            f"{best[(version, True)] / best[(first, True)]:.2f} |"
        )


def whole_pages(count: int, lang: str = "zh") -> list[str]:
    """Whole pages of one language as users send them (not cut), up to ``count``."""
    pages = [d.text for d in load_corpus(1500, whole=True, n_realistic=200) if d.lang == lang and not d.edited_from]
    return pages[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--versions-only", action="store_true", help="only the v1 / v2 table")
    args = parser.parse_args()
    docs = one_kb_docs(args.docs)
    samples = (
        ("~1 KB Chinese documents", docs),
        ("whole Chinese pages", whole_pages(args.docs)),
        ("whole English pages", whole_pages(args.docs, "en")),
    )
    for label, sample in samples:
        chars = sum(map(len, sample)) / len(sample)
        print(f"fingerprint versions on {len(sample)} {label} ({chars:,.0f} characters on average):")
        versions_table(sample, args.rounds)
    if args.versions_only:
        return
    mb = sum(len(d.encode()) for d in docs) / 1e6
    native = fingerprinter(DEFAULT_RECIPE)
    if native is None:
        sys.exit("simhash_native is not installed: `make install` builds it (server/native)")
    same = sum(tokenize(normalize(d)) == jieba_tokens(normalize(d)) for d in docs)
    same_native = sum(native.tokenize(normalize(d)) == jieba_tokens(normalize(d)) for d in docs)
    equal = sum(fingerprint(d) == fingerprint(d, native=False) for d in docs)
    Simhash = simhash_package()
    fingerprint(docs[0]), Simhash(docs[0])  # warm both (IDF table, jieba dictionary)
    ours = python = package = 0.0
    for _ in range(args.rounds):  # interleave, keep each one's best
        ours = max(ours, best_rate(fingerprint, docs, 1))
        python = max(python, best_rate(lambda d: fingerprint(d, native=False), docs, 1))
        package = max(package, best_rate(lambda d: Simhash(d).value, docs, 1))
    stages = {
        "normalize (Python's unicodedata)": best_rate(normalize, docs, args.rounds),
        "tokens + features + SimHash in Rust, on normalised text": best_rate(
            native.fingerprint, [normalize(d) for d in docs], args.rounds
        ),
    }
    per_doc_mb = mb / len(docs)
    print(
        f"documents: {len(docs)} Chinese, {mb * 1e6 / len(docs):.0f} bytes on average; "
        f"tokens identical to jieba's for {same} of {len(docs)} (Python path), {same_native} (Rust path); "
        f"fingerprints of the two paths identical for {equal} of {len(docs)}"
    )
    print("| implementation (1 core) | docs/s | MB/s |")
    print("|---|---|---|")
    print(f"| simhash-index (Rust path, the default) | {ours:,.0f} | {ours * per_doc_mb:.2f} |")
    print(f"| simhash-index, Python path | {python:,.0f} | {python * per_doc_mb:.2f} |")
    print(f"| simhash package {Simhash.__module__} | {package:,.0f} | {package * per_doc_mb:.2f} |")
    print(f"ratio simhash-index / simhash package: {ours / package:.1f}x (Python path: {python / package:.1f}x)")
    for stage, rate in stages.items():
        print(f"stage: {stage}: {1e6 / rate:.1f} µs per document")
    for workers in (1, 2):
        rate = workers_rate(docs, workers)
        print(
            f"simhash-index fingerprint --workers {workers}: {rate:,.0f} docs/s "
            f"({COPIES * len(docs):,} documents; process start-up and JSON included)"
        )
    print(f"(cores: {os.cpu_count()})")


if __name__ == "__main__":
    main()
