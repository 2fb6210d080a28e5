"""Times as people type them: a duration (``72h``, ``30d``, ``90m``, ``45s``, ``500ms``) and an instant
(RFC 3339, ``2026-11-24T08:00:00Z``, or Unix seconds).  ValueError names what is wrong."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

__all__ = ["parse_duration", "parse_instant"]

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(text: str) -> timedelta:
    """``72h``, ``30d``, ``1.5h``...: a number and one unit of ms, s, m, h or d."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a duration: a number and a unit of ms, s, m, h or d (72h, 30d)")
    value = timedelta(seconds=float(match[1]) * _UNITS[match[2]])
    if value <= timedelta(0):
        raise ValueError(f"{text!r}: a duration must be positive")
    return value


def parse_instant(text: str) -> datetime:
    """An RFC 3339 time with its offset (``2026-11-24T08:00:00Z``), or Unix seconds (``1795507200``)."""
    text = text.strip()
    try:
        return datetime.fromtimestamp(float(text), timezone.utc)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)  # 3.10: no Z
    except ValueError:
        raise ValueError(f"{text!r} is not a time: give RFC 3339 (2026-11-24T08:00:00Z) or Unix seconds") from None
    if when.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset: add Z or +08:00")
    return when
