"""What web pages leave in plain text, taken out before a text is fingerprinted (recipe v4 on).

- HTML character references, named and numeric, resolved by the standard library's ``html.unescape``
  (``&nbsp;`` ``&amp;`` ``&#160;`` ``&#x3000;`` ...), twice for the doubly escaped ``&amp;nbsp;``;
- HTML tags of the HTML element names below (``<p>``, ``<br/>``, ``<span style=...>``), comments, and the
  content of ``<script>`` and ``<style>``; a block element's tag becomes a line break.  A bracketed word that
  is no HTML element (``<file>``, ``<stdio.h>``) is text and stays;
- CR LF and CR become LF.

``INVISIBLE`` lists what the character fold (normalize.py) deletes: Unicode's format characters (zero-width
space and joiners, BOM, soft hyphen, direction marks) and control characters other than tab and line breaks.

``strip_markup(strip_markup(t)) == strip_markup(t)`` is not promised for text that escapes its own tags
(``&amp;lt;p&amp;gt;``); a copy and its original go through the same steps, which is what matters.
"""

from __future__ import annotations

import html
import re
import unicodedata

from simhash_server.fingerprint.codepoints import every_code_point

__all__ = ["BLOCK_ELEMENTS", "INLINE_ELEMENTS", "INVISIBLE", "markup_free", "strip_markup"]

BLOCK_ELEMENTS = (  # noqa: SIM905 (a word list)
    "address article aside blockquote body br dd details div dl dt fieldset figcaption figure footer form h1 "
    "h2 h3 h4 h5 h6 head header hr html li main nav ol p pre section summary table tbody td tfoot th thead "
    "title tr ul"
).split()
INLINE_ELEMENTS = (  # noqa: SIM905 (a word list)
    "a abbr b bdi bdo big button cite code del dfn em font i img input ins kbd label link mark meta picture q "
    "s samp small span strike strong sub sup svg time tt u var wbr center noscript iframe"
).split()
_NAME = r"\s*/?\s*({})(?=[\s/>])[^<>]*>"
_BLOCK = re.compile("<" + _NAME.format("|".join(BLOCK_ELEMENTS)), re.IGNORECASE)
_INLINE = re.compile("<" + _NAME.format("|".join(INLINE_ELEMENTS)), re.IGNORECASE)
_HIDDEN = re.compile(r"<(script|style)\b[^<>]*>.*?</\1\s*>|<!--.*?-->", re.IGNORECASE | re.DOTALL)
INVISIBLE = "".join(ch for ch in every_code_point() if unicodedata.category(ch) in ("Cf", "Cc") and ch not in "\t\n\r")
_NEWLINES = re.compile(r"\r\n?")


def strip_markup(text: str) -> str:
    """``text`` without character references, HTML tags and CRs (see the module)."""
    if "&" in text:
        text = html.unescape(text)
        if "&" in text:
            text = html.unescape(text)
    if "<" in text:
        text = _HIDDEN.sub("", text)
        text = _BLOCK.sub("\n", text)
        text = _INLINE.sub("", text)
    if "\r" in text:
        text = _NEWLINES.sub("\n", text)
    return text


def markup_free(text: str) -> bool:
    """Whether ``strip_markup`` changes nothing in ``text`` but its CRs (an ampersand or a bracketed word that
    is no reference or tag, ``2>&1``, ``<email>``, is text)."""
    if "&" not in text and "<" not in text:
        return True
    return strip_markup(text) == _NEWLINES.sub("\n", text)
