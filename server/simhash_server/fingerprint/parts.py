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
parts, and one line has none.  Recipe v5 also stores each document's part fingerprints after its sketch
(sketch format 4), for the ``clusters`` job: a stored document that holds more than another then reaches it.
"""

from __future__ import annotations

from collections.abc import Sequence

from simhash_server.fingerprint.versions import recipe_of

__all__ = ["part_texts", "parts_work"]


def part_texts(text: str, cuts: Sequence[tuple[float, float]]) -> list[str]:
    """The parts of ``text`` that ``cuts`` name, each (share of lines dropped from the start, share dropped
    from the end), rounded down to whole lines; a cut that drops no line, or every line, gives no part."""
    for head, tail in cuts:
        if not (0 <= head < 1 and 0 <= tail < 1 and head + tail < 1):
            raise ValueError(f"cuts: ({head}, {tail}) must drop shares of lines in [0, 1) that leave some")
    lines = text.splitlines()
    parts = []
    for head, tail in cuts:
        first, end = int(len(lines) * head), len(lines) - int(len(lines) * tail)
        if (first, end) != (0, len(lines)) and first < end:
            parts.append("\n".join(lines[first:end]))
    return parts


def parts_work(version: str) -> float:
    """How many whole texts' worth of fingerprinting the parts of ``version`` add (v4: 2.0): a caller that
    bounds the work it does inline counts them."""
    return sum(1 - head - tail for head, tail in recipe_of(version).query_parts)
