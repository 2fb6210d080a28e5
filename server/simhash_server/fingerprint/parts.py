"""Text -> its parts, whose fingerprints a verified query looks up beside the whole text's (pipeline.py's
``part_fingerprints`` makes them).

A copy's fingerprint moves with what surrounds it: a page inside another site's header and footer, or a
whole page whose stored copy is only its first part, can land further from the stored fingerprint than the
drawers reach, although their sketches agree.  When the query is the larger of the two, a part of it is
close to what is stored: the text without its first and last tenth or fifth of lines (a template dropped),
or its first 60% of lines (a truncated copy).  The parts only add candidates: every hit is still verified
against the whole text's sketch, so they change recall, never what counts as a copy.  Which parts a recipe
looks up is part of the recipe (``Recipe.query_parts``), chosen on the evaluation's tuning half
(docs/decisions.md, "A verified text query also looks up parts of its text").

Parts are cut by the text's lines as sent, before normalisation: a text of a few lines has fewer distinct
parts, and one line has none.  Where normalising keeps a text's lines apart (``lines_normalize_apart``), a
part's normalised text is the normalised text's lines of the same numbers, and the Rust extension
fingerprints the parts from the grams of the whole text's one pass (pipeline.py).  With markup, whose tags
and character references can span, make or remove line breaks, each part is normalised and looked for among
the whole normalised text's lines (``line_span``); one that is not there is fingerprinted as a text alone.

Recipe v5 also stores each document's part fingerprints after its sketch (sketch format 4), for the
``clusters`` job: a stored document that holds more than another then reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_server.fingerprint.markup import markup_free
from simhash_server.fingerprint.versions import recipe_of

__all__ = ["line_span", "lines_normalize_apart", "part_spans", "part_texts", "parts_work"]

# The line breaks of str.splitlines besides \n, \r\n and \r (the character fold deletes some).
_OTHER_BREAKS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def part_spans(lines: int, cuts: Sequence[tuple[float, float]]) -> list[tuple[int, int]]:
    """The parts of a text of ``lines`` lines that ``cuts`` name, as ranges of line numbers [first, end): each
    cut is (share of lines dropped from the start, share dropped from the end), rounded down to whole lines;
    a cut that drops no line, or every line, gives no part."""
    for head, tail in cuts:
        if not (0 <= head < 1 and 0 <= tail < 1 and head + tail < 1):
            raise ValueError(f"cuts: ({head}, {tail}) must drop shares of lines in [0, 1) that leave some")
    spans = []
    for head, tail in cuts:
        first, end = int(lines * head), lines - int(lines * tail)
        if (first, end) != (0, lines) and first < end:
            spans.append((first, end))
    return spans


def part_texts(text: str, cuts: Sequence[tuple[float, float]]) -> list[str]:
    """The texts of the parts of ``text`` that ``cuts`` name (``part_spans``), its lines joined by \\n."""
    lines = text.splitlines()
    return ["\n".join(lines[first:end]) for first, end in part_spans(len(lines), cuts)]


def lines_normalize_apart(text: str) -> bool:
    """Whether the normalisation of the recipes with parts (v4 on) keeps the lines of ``text`` apart: line k
    of the normalised text (split at \\n) is then line k of ``text`` (``str.splitlines``) normalised alone.
    True unless the text holds markup (a tag or character reference can span, make or remove a line break:
    markup.py) or a line break other than \\n, \\r\\n and \\r; every other step maps a character to
    characters without line breaks (CR LF and CR become \\n), and NFKC composes nothing across one."""
    # One `in` per character: each a fast scan, where a regular expression's class costs 5x more.
    return not any(ch in text for ch in _OTHER_BREAKS) and markup_free(text)


def line_span(normalized: str, part: str) -> tuple[int, int] | None:
    """Line numbers [first, end) of ``normalized`` (split at \\n) whose lines joined are ``part``, if any are:
    the lines a part of a text with markup became in the whole normalised text, where no tag crosses the
    part's ends."""
    at = normalized.find(part)
    while at != -1:
        end = at + len(part)
        if (at == 0 or normalized[at - 1] == "\n") and (end == len(normalized) or normalized[end] == "\n"):
            first = normalized.count("\n", 0, at)
            return first, first + part.count("\n") + 1
        at = normalized.find(part, at + 1)
    return None


def parts_work(version: str) -> float:
    """How many whole texts' worth of fingerprinting the parts of ``version`` add at most (v4: 2.0, for a text
    whose markup moves its lines; a plain text's parts, from the whole text's pass, add far less): a caller
    that bounds the work it does inline counts them."""
    return sum(1 - head - tail for head, tail in recipe_of(version).query_parts)
