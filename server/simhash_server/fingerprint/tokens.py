"""Step 2: normalised text -> tokens.

The text is cut into runs.  Runs of Han characters go to the jieba segmenter (default mode, HMM on);
ideographs outside jieba's Han range are a token each; runs of letters and digits of any other script are
one token each (after normalisation there is no case left); everything else (space, punctuation, symbols,
emoji) separates runs and is not a token.

jieba-rs (the ``rjieba`` package) is used for the CJK runs because it returns jieba's tokens about ten times
faster; it is only given CJK-only runs, where the two agree (tests/unit/test_pipeline.py checks it against
jieba itself), never mixed text, where they differ.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["SEGMENTER", "segment_cjk", "tokenize"]

# jieba's own Han range (its re_han_default): the runs it segments.  Other ideographs (Extension A, B-G,
# compatibility) are one token each, as jieba itself yields them.
_HAN = "\u4e00-\u9fd5"
_OTHER_IDEOGRAPH = "\u3400-\u4dbf\u9fd6-\u9fff\uf900-\ufaff\U00020000-\U0003134f"
_RUNS = re.compile(rf"([{_HAN}]+)|([{_OTHER_IDEOGRAPH}])|([^\W_{_HAN}{_OTHER_IDEOGRAPH}]+)")


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
    for han, ideograph, word in _RUNS.findall(normalized):
        if han:
            tokens.extend(segment_cjk(han))
        else:
            tokens.append(ideograph or word)
    return tokens
