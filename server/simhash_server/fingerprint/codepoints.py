"""Every Unicode code point as one string, for the tables built from Python's Unicode database (markup.py's
invisible characters, native.py's classes and decompositions).

Made by decoding U+0000..U+10FFFF from UTF-32 in C: ``"".join(map(chr, range(0x110000)))`` makes a million
small strings first, about a third of a second of a map task's start-up and most of its memory churn.
"""

from __future__ import annotations

import array
import sys

__all__ = ["every_code_point"]


def every_code_point() -> str:
    """U+0000 to U+10FFFF in order, surrogates included (as Python's ``chr`` gives them)."""
    points = array.array("I", range(sys.maxunicode + 1))
    if sys.byteorder == "big":
        points.byteswap()
    return points.tobytes().decode("utf-32-le", "surrogatepass")
