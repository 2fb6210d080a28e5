"""Step 3: tokens -> weighted features.

A feature is a string; its weight a positive integer.  Weights are integers on purpose: the fingerprint
sums them per bit, and integer sums are exact in any order on any machine, where float sums may round
differently under another BLAS or CPU and flip a bit that sits near zero.

Recipes (chosen between by ``benchmarks/eval_accuracy.py``; the numbers are in docs/accuracy.md):
- ``unigram-tf``: each distinct token, weighted by its count.
- ``unigram-tfidf``: the same, times the token's IDF from jieba's table (median IDF for unknown tokens).
- ``shingle2-tf`` / ``shingle3-tf``: runs of 2 or 3 consecutive tokens, weighted by count.
- ``blend-tfidf`` (the default): unigram-tfidf plus token bigrams, a bigram weighted by its count times the
  smaller IDF of its two tokens.  Unigrams alone find edited copies but also pages sharing a vocabulary;
  bigrams add word order, which separates pages that share a template from real copies.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache
from importlib import resources

__all__ = ["DEFAULT_RECIPE", "IDF_SCALE", "RECIPES", "features"]

IDF_SCALE = 100  # IDF is kept to two decimals: weight = count * round(idf * 100)
_JOIN = "\x1f"  # unit separator: cannot occur inside a token


@cache
def _idf_table() -> tuple[dict[str, int], int]:
    """jieba's IDF table as integers (IDF x 100), and the median for tokens it does not list."""
    text = resources.files("jieba.analyse").joinpath("idf.txt").read_text(encoding="utf-8")
    table: dict[str, int] = {}
    for line in text.splitlines():
        word, _, value = line.rpartition(" ")
        if word:
            table[word] = round(float(value) * IDF_SCALE)
    ordered = sorted(table.values())
    return table, ordered[len(ordered) // 2]


def _unigram_tf(tokens: list[str]) -> dict[str, int]:
    return dict(Counter(tokens))


def _unigram_tfidf(tokens: list[str]) -> dict[str, int]:
    idf, median = _idf_table()
    return {tok: n * idf.get(tok, median) for tok, n in Counter(tokens).items()}


def _shingles(tokens: list[str], width: int) -> Counter[str]:
    if len(tokens) < width:
        return Counter([_JOIN.join(tokens)]) if tokens else Counter()
    return Counter(_JOIN.join(tokens[i : i + width]) for i in range(len(tokens) - width + 1))


def _blend_tfidf(tokens: list[str]) -> dict[str, int]:
    idf, median = _idf_table()
    weights = _unigram_tfidf(tokens)
    for gram, n in _shingles(tokens, 2).items():
        left, _, right = gram.partition(_JOIN)
        # A bigram is as informative as its commoner word: min IDF beat mean and max IDF (docs/accuracy.md).
        weights[_JOIN + gram] = n * min(idf.get(left, median), idf.get(right, median))
    return weights


RECIPES: dict[str, Callable[[list[str]], dict[str, int]]] = {
    "unigram-tf": _unigram_tf,
    "unigram-tfidf": _unigram_tfidf,
    "shingle2-tf": lambda tokens: dict(_shingles(tokens, 2)),
    "shingle3-tf": lambda tokens: dict(_shingles(tokens, 3)),
    "blend-tfidf": _blend_tfidf,
}
DEFAULT_RECIPE = "blend-tfidf"


def features(tokens: list[str], recipe: str = DEFAULT_RECIPE) -> dict[str, int]:
    """Weighted features of a token list under ``recipe`` (one of RECIPES)."""
    try:
        build = RECIPES[recipe]
    except KeyError:
        raise ValueError(f"unknown feature recipe {recipe!r}; choose one of {sorted(RECIPES)}") from None
    return build(tokens)
