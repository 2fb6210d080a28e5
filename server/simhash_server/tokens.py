"""Step 2: normalised text -> tokens.

The text is cut into runs.  Runs of CJK ideographs go to the jieba segmenter (default mode, HMM on);
runs of letters and digits of any other script are one token each (after normalisation there is no case
left); everything else (space, punctuation, symbols, emoji) separates runs and is not a token.

jieba-rs (the ``rjieba`` package) is used for the CJK runs because it returns jieba's tokens about ten times
faster; it is only given CJK-only runs, where the two agree (tests/unit/test_tokens.py checks it against
jieba itself), never mixed text, where they differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["SEGMENTER", "segment_cjk", "tokenize"]

# CJK Unified Ideographs, Extension A, Compatibility Ideographs, and Extensions B-F (planes 2-3).
_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_RUNS = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")


def _load_segmenter() -> tuple[Callable[[str], list[str]], str]:
    try:
        import rjieba
    except ImportError:  # pragma: no cover - rjieba is a server dependency; jieba is the reference
        import jieba

        jieba.setLogLevel(60)
        return (lambda run: jieba.lcut(run, HMM=True)), "jieba"
    return (lambda run: rjieba.cut(run, hmm=True)), "rjieba"


segment_cjk, SEGMENTER = _load_segmenter()


def tokenize(normalized: str) -> list[str]:
    """Tokens of an already normalised text, in order."""
    tokens: list[str] = []
    for cjk, word in _RUNS.findall(normalized):
        if cjk:
            tokens.extend(segment_cjk(cjk))
        else:
            tokens.append(word)
    return tokens
