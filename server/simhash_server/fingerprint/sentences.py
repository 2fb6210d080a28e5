"""Step 2b, recipe v4: a normalised text -> its segments, each with how much it reads like prose.

A segment is what lies between two sentence ends or line breaks.  Its tier says how much it counts:

- tier 0: a sentence (ended by ``.`` ``!`` ``?`` ``;`` or ``。``) of at least 10 tokens: the article itself;
- tier 1: a shorter sentence of at least 4 tokens;
- tier 2: anything else: a line without a sentence end (menus, breadcrumbs, titles, tags, bylines,
  copyright lines, the "related articles" list) or a fragment of under 4 tokens.

A site's template is nearly all tier 2 and an article is mostly tier 0, so weighing the tiers apart
(minhash.tiered_minhash_bits) lets a page keep its fingerprint inside another site's header and footer
(docs/accuracy.md).  The idea is SpotSigs' (Theobald, Siddharth and Paepcke, SIGIR 2008): signatures
anchored in natural-language sentences survive the boilerplate around them.

The sentence ends are those left after normalisation (NFKC has already folded ``！？；．`` to ASCII);
``tokens(segment)`` are tokens.tokenize's, so the tokens of all segments are the text's tokens in order.
"""

from __future__ import annotations

import re

from simhash_server.fingerprint.tokens import tokenize

__all__ = ["LONG_SENTENCE", "SENTENCE_END", "SHORT_SENTENCE", "segments"]

SENTENCE_END = ".!?;。"
LONG_SENTENCE = 10  # tokens: tier 0 from here
SHORT_SENTENCE = 4  # tokens: tier 1 from here
_SPLIT = re.compile(r"([.!?;。\n])")


def segments(normalized: str) -> list[tuple[list[str], int]]:
    """(tokens, tier) of each segment with tokens, in order."""
    pieces = _SPLIT.split(normalized)
    out = []
    for i in range(0, len(pieces), 2):
        tokens = tokenize(pieces[i])
        if not tokens:
            continue
        ended = i + 1 < len(pieces) and pieces[i + 1] in SENTENCE_END
        tier = 2
        if ended and len(tokens) >= LONG_SENTENCE:
            tier = 0
        elif ended and len(tokens) >= SHORT_SENTENCE:
            tier = 1
        out.append((tokens, tier))
    return out
