"""Accuracy of "Hamming distance <= k" as a near-duplicate test, for every recipe, on a real corpus.

Ground truth: exact Jaccard similarity of word 3-shingle sets (words from this project's tokenizer) for all
pairs of documents.  For k = 0..6 and thresholds 0.8 and 0.9 it reports precision, recall and F1 of
"Hamming <= k" against "Jaccard >= threshold", for this project's recipes and for the `simhash` package
(PyPI), and writes the tables to docs/accuracy.md.

    .venv/bin/python benchmarks/eval_accuracy.py            # or: make eval
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import xxhash
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import Doc, load_corpus

from simhash_server.features import DEFAULT_RECIPE, RECIPES, features
from simhash_server.normalize import normalize
from simhash_server.simhash import simhash
from simhash_server.tokens import tokenize

KS = range(7)
THRESHOLDS = (0.8, 0.9)


def shingle_matrix(token_lists: list[list[str]]) -> sparse.csr_matrix:
    ids: dict[int, int] = {}
    rows, cols = [], []
    for r, tokens in enumerate(token_lists):
        grams = {
            xxhash.xxh3_64_intdigest("\x1f".join(tokens[i : i + 3]).encode()) for i in range(max(len(tokens) - 2, 1))
        }
        for g in grams:
            rows.append(r)
            cols.append(ids.setdefault(g, len(ids)))
    data = np.ones(len(rows), dtype=np.float32)
    return sparse.csr_matrix((data, (rows, cols)), shape=(len(token_lists), len(ids)))


def jaccard_pairs(matrix: sparse.csr_matrix) -> dict[tuple[int, int], float]:
    """Jaccard of every pair sharing at least one shingle (all other pairs have Jaccard 0)."""
    sizes = np.asarray(matrix.sum(axis=1)).ravel()
    inter = sparse.triu(matrix @ matrix.T, k=1).tocoo()
    union = sizes[inter.row] + sizes[inter.col] - inter.data
    return {(int(i), int(j)): float(v) for i, j, v in zip(inter.row, inter.col, inter.data / union, strict=True)}


def close_pairs(fps: np.ndarray, max_k: int) -> dict[tuple[int, int], int]:
    out = {}
    for i in range(len(fps) - 1):
        dist = np.bitwise_count(fps[i] ^ fps[i + 1 :])
        for j in np.nonzero(dist <= max_k)[0]:
            out[(i, i + 1 + int(j))] = int(dist[j])
    return out


def scores(close: dict[tuple[int, int], int], jac: dict[tuple[int, int], float]) -> dict[tuple[float, int], tuple]:
    result = {}
    for t in THRESHOLDS:
        positives = {p for p, v in jac.items() if v >= t}
        for k in KS:
            predicted = {p for p, d in close.items() if d <= k}
            tp = len(predicted & positives)
            precision = tp / len(predicted) if predicted else 1.0
            recall = tp / len(positives) if positives else 1.0
            f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
            result[(t, k)] = (precision, recall, f1, len(predicted), len(positives))
    return result


def simhash_package():
    """The `simhash` package's Simhash class, usable under numpy 2.

    Its path for weights above `large_weight_cutoff` (50) multiplies a uint8 array by the weight, which
    numpy 2 refuses (OverflowError).  Its other path weighs a feature by repeating its digest w times, which
    gives the same sums; raising the cutoff sends every feature down that path, so values are unchanged.
    """
    from simhash import Simhash

    Simhash.large_weight_cutoff = 2**62
    return Simhash


def recipe_fingerprints(docs: list[Doc], tokens: list[list[str]]) -> dict[str, np.ndarray]:
    Simhash = simhash_package()

    out = {name: np.array([simhash(features(t, name)) for t in tokens], dtype=np.uint64) for name in RECIPES}
    out["simhash-pkg (char 4-grams)"] = np.array([Simhash(d.text).value for d in docs], dtype=np.uint64)
    out["simhash-pkg (char 4-grams)"] = out.pop("simhash-pkg (char 4-grams)")
    out["simhash-pkg (jieba tokens)"] = np.array([Simhash(t).value if t else 0 for t in tokens], dtype=np.uint64)
    return out


def _jaccard3(a: list[str], b: list[str]) -> float:
    sa, sb = ({tuple(t[i : i + 3]) for i in range(max(len(t) - 2, 1))} for t in (a, b))
    return len(sa & sb) / len(sa | sb) if sa | sb else 1.0


SHORT_LENGTHS = (50, 100, 200, 400, 800, 1600)


def short_text_table(docs: list[Doc], samples: int = 300, seed: int = 7) -> list[str]:
    """How the default recipe behaves on short texts: Chinese originals cut to L characters.

    recall: a copy with one changed character stays within distance 3;
    false matches: pairs of different documents (word 3-shingle Jaccard < 0.5) within distance 3.
    """
    import random

    from corpus import edit_chars

    from simhash_server.fingerprint import fingerprint

    rng = random.Random(seed)
    lines = [
        "## Short texts",
        "",
        "Chinese originals cut to their first L characters; each gets a copy with one "
        "changed character; false matches among all pairs of different cut documents whose "
        "word 3-shingle Jaccard is below 0.5.",
        "",
        "| L (chars) | mean features | copy's mean Jaccard | copy within k<=3 | false matches within k<=3 |",
        "|---|---|---|---|---|",
    ]
    zh = [d for d in docs if d.lang == "zh" and not d.edited_from]
    for length in SHORT_LENGTHS:
        pool = rng.sample([d for d in zh if len(d.text) >= length], samples)
        cut = [Doc(d.id, d.source, d.lang, d.text[:length]) for d in pool]
        fps = [fingerprint(d.text) for d in cut]
        edits = [edit_chars(d, rng, count=1) for d in cut]
        kept = sum(bin(f.value ^ fingerprint(e).value).count("1") <= 3 for f, e in zip(fps, edits, strict=True))
        tokens = [tokenize(normalize(d.text)) for d in cut]
        copy_jac = np.mean([_jaccard3(a, tokenize(normalize(e))) for a, e in zip(tokens, edits, strict=True)])
        jac = jaccard_pairs(shingle_matrix(tokens))
        close = close_pairs(np.array([f.value for f in fps], dtype=np.uint64), 3)
        false = sum(1 for pair in close if jac.get(pair, 0.0) < 0.5)
        total = samples * (samples - 1) // 2
        lines.append(
            f"| {length} | {np.mean([f.features for f in fps]):.0f} | {copy_jac:.2f} | {kept / samples:.2f} | "
            f"{false} of {total:,} ({false / total:.1e}) |"
        )
    return lines


def render(table: dict[str, dict], docs: list[Doc], jac: dict, elapsed: float, command: str) -> str:
    edited = sum(1 for d in docs if d.edited_from)
    lines = [
        "# Accuracy of the fingerprint recipes",
        "",
        f"Made by `{command}` in {elapsed:.0f} s.",
        "",
        f"Corpus: {len(docs)} documents from Debian documentation packages ({len(docs) - edited} originals, "
        f"{edited} edited copies: inserted ad sentence, deleted sentence, changed numbers, a few changed "
        "characters, appended footer, and combinations of 2-3 of them). Ground truth: exact Jaccard of word "
        f"3-shingle sets over all {len(docs) * (len(docs) - 1) // 2:,} pairs; "
        + ", ".join(f"{sum(v >= t for v in jac.values())} pairs have Jaccard >= {t}" for t in THRESHOLDS)
        + ".",
        f"Default recipe: `{DEFAULT_RECIPE}`.",
        "",
    ]
    for t in THRESHOLDS:
        lines += [
            f"## Against Jaccard >= {t}",
            "",
            "| recipe | " + " | ".join(f"k<={k} P / R / F1" for k in KS) + " |",
            "|---|" + "---|" * len(KS),
        ]
        for name, sc in table.items():
            cells = [
                f"{sc[(t, k)][0]:.2f} / {sc[(t, k)][1]:.2f} / **{sc[(t, k)][2]:.2f}**"
                if k == 3
                else f"{sc[(t, k)][0]:.2f} / {sc[(t, k)][1]:.2f} / {sc[(t, k)][2]:.2f}"
                for k in KS
            ]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines + short_text_table(docs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edited", type=int, default=600)
    parser.add_argument("--output", type=Path, default=Path("docs/accuracy.md"))
    args = parser.parse_args()
    began = time.monotonic()
    docs = load_corpus(args.edited)
    tokens = [tokenize(normalize(d.text)) for d in docs]
    jac = jaccard_pairs(shingle_matrix(tokens))
    table = {}
    for name, fps in recipe_fingerprints(docs, tokens).items():
        table[name] = scores(close_pairs(fps, max(KS)), jac)
        p, r, f1, *_ = table[name][(0.9, 3)]
        print(f"{name:28s} k<=3 vs J>=0.9: P {p:.3f} R {r:.3f} F1 {f1:.3f}", flush=True)
    command = "make eval" if args.edited == 600 else f"benchmarks/eval_accuracy.py --edited {args.edited}"
    args.output.parent.mkdir(exist_ok=True)
    args.output.write_text(render(table, docs, jac, time.monotonic() - began, command) + "\n", encoding="utf-8")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
