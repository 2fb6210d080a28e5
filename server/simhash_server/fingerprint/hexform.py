"""A fingerprint's text form: 16 lowercase hex digits, most significant first.

The client (simhash_client.types) has the same two functions; the fingerprint layer keeps its own so that it
imports nothing of the client or of gRPC.  tests/unit/test_layers.py holds the two to one behaviour.
"""

from __future__ import annotations

__all__ = ["from_hex", "to_hex"]

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def to_hex(value: int) -> str:
    """16 lowercase hex digits, most significant first."""
    return f"{value:016x}"


def from_hex(text: str) -> int:
    """Exactly 16 hex digits (either case, nothing else) -> the fingerprint; ValueError names the value."""
    if len(text) != 16 or not _HEX_DIGITS.issuperset(text):
        raise ValueError(f"simhash {text[:40]!r} is not 16 hex digits")
    return int(text, 16)
