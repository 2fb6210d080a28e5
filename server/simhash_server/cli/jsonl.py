"""JSON lines read by the commands: one object per line, or a ValueError saying what the line is instead."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["json_object"]


def json_object(line: str) -> dict[str, Any]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    return record
