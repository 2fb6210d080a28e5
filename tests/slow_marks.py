"""Tests that need more than LIMIT_SECONDS say why, with ``@pytest.mark.slow("reason")``.

A test's own time (its call, not its fixtures' set-up) past the limit with no such mark is listed at the end
of the run, as a report: no test passes or fails by how long it took, since this machine is shared.  A
``slow`` mark without a reason stops the run at collection, naming the test.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

__all__ = ["LIMIT_SECONDS", "reason_of", "require_reasons", "unexplained"]

LIMIT_SECONDS = 30.0


def reason_of(item: pytest.Item) -> str | None:
    """The reason a test's ``slow`` mark gives (the nearest mark: the test's own, then its module's); None
    when it has none."""
    mark = item.get_closest_marker("slow")
    if mark is None:
        return None
    reason = mark.args[0] if mark.args else mark.kwargs.get("reason")
    return reason if isinstance(reason, str) else ""


def require_reasons(reasons: Mapping[str, str | None]) -> None:
    """pytest.UsageError naming each test (id -> ``reason_of``) whose ``slow`` mark gives no reason."""
    bare = [test for test, reason in reasons.items() if reason is not None and not reason.strip()]
    if bare:
        raise pytest.UsageError(f'@pytest.mark.slow needs a reason ("why this takes long"): {", ".join(bare)}')


def unexplained(
    seconds: Mapping[str, float], reasons: Mapping[str, str | None], limit: float = LIMIT_SECONDS
) -> list[tuple[str, float]]:
    """(test id, seconds) of each test that took longer than ``limit`` and whose reason is None, slowest
    first."""
    over = [(test, took) for test, took in seconds.items() if took > limit and not reasons.get(test)]
    return sorted(over, key=lambda pair: -pair[1])
