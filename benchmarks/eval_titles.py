"""Would a veto on different page titles keep formulaic neighbours (N5) apart without losing copies?

A study for a future recipe, over `make eval`'s pairs (both halves, every class), with the service's own
normaliser (FOLDED).  A page's title is a short line (3-80 characters) repeated within ``--gap`` lines of
itself, as manual pages repeat their heading (a template's repeated lines lie far apart).  The veto fires
when both pages have titles, none in common, and a title of each looks like one of the other's (character
3-gram Jaccard >= ``--alike``): "11.3. Cartoon" beside "11.11. Cartoon (legacy)".  It prints, per language,
half and class, how many pairs the veto would refuse.  A veto only removes acceptances: copies refused are
recall lost, N5 pairs refused are false positives that could go.

    .venv/bin/python benchmarks/eval_titles.py [--gap 3] [--alike 0.1]    (after `make .venv/.eval`)
"""

from __future__ import annotations

import argparse
import collections
import re
from collections.abc import Iterable

from eval_accuracy import build_pairs, root_of
from pairs import CLASSES, half_of_id

from simhash_server.fingerprint.normalize import FOLDED, normalize

_SPACE = re.compile(r"\s+")


def lines_of(text: str) -> list[str]:
    """The text's non-empty lines, normalised as the fingerprint normalises them."""
    lines = (_SPACE.sub(" ", line).strip() for line in normalize(text, form=FOLDED).splitlines())
    return [line for line in lines if line]


def titles(lines: list[str], gap: int) -> set[str]:
    """Short lines repeated within ``gap`` lines of their previous occurrence."""
    last: dict[str, int] = {}
    found: set[str] = set()
    for i, line in enumerate(lines):
        if 3 <= len(line) <= 80:
            if line in last and i - last[line] <= gap:
                found.add(line)
            last[line] = i
    return found


def _grams(text: str) -> set[str]:
    return {text[i : i + 3] for i in range(max(1, len(text) - 2))}


def alike(a: Iterable[str], b: Iterable[str], floor: float) -> bool:
    """Some title of ``a`` and some of ``b`` share at least ``floor`` of their character 3-grams (Jaccard)."""
    grams_b = [_grams(t) for t in b]
    for title in a:
        ga = _grams(title)
        if any(len(ga & gb) / len(ga | gb) >= floor for gb in grams_b):
            return True
    return False


def vetoed(text_a: str, text_b: str, gap: int, floor: float) -> bool:
    ta, tb = titles(lines_of(text_a), gap), titles(lines_of(text_b), gap)
    return bool(ta and tb and not ta & tb and alike(ta, tb, floor))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gap", type=int, default=3, help="lines within which a title repeats")
    parser.add_argument("--alike", type=float, default=0.1, help="3-gram Jaccard at which two titles look alike")
    args = parser.parse_args()
    counts: dict[tuple[str, str, str], list[int]] = collections.defaultdict(lambda: [0, 0])
    for lang, pairs in build_pairs().items():
        for pair in pairs:
            key = (lang, half_of_id(root_of(pair)), pair.kind)
            counts[key][0] += 1
            counts[key][1] += vetoed(pair.a.text, pair.b.text, args.gap, args.alike)
    print(f"pairs vetoed (gap {args.gap}, titles alike >= {args.alike}), of the class's pairs")
    for lang in sorted({k[0] for k in counts}):
        for half in ("tune", "report"):
            row = [f"{kind} {counts[(lang, half, kind)][1]}/{counts[(lang, half, kind)][0]}"
                   for kind in CLASSES if (lang, half, kind) in counts]  # fmt: skip
            print(f"{lang} {half}: " + ", ".join(row))


if __name__ == "__main__":
    main()
