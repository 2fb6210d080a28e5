"""tests/slow_marks.py: a slow mark must give its reason, and the run's report lists only the tests over the
limit that give none."""

from __future__ import annotations

import pytest
from slow_marks import LIMIT_SECONDS, reason_of, require_reasons, unexplained


class _Item:
    """What the hooks read of a collected test: its id and its nearest marks (the test's, then its module's)."""

    def __init__(self, nodeid: str, *marks: pytest.MarkDecorator) -> None:
        self.nodeid = nodeid
        self.marks = [m.mark for m in marks]

    def get_closest_marker(self, name: str) -> pytest.Mark | None:
        return next((m for m in self.marks if m.name == name), None)


def test_the_reason_is_read_from_the_mark_given_positionally_or_by_name() -> None:
    assert reason_of(_Item("t")) is None
    assert reason_of(_Item("t", pytest.mark.slow("a YARN job"))) == "a YARN job"
    assert reason_of(_Item("t", pytest.mark.slow(reason="waits on a compaction"))) == "waits on a compaction"
    assert reason_of(_Item("t", pytest.mark.slow("own"), pytest.mark.slow("module's"))) == "own"
    assert reason_of(_Item("t", pytest.mark.slow())) == ""
    assert reason_of(_Item("t", pytest.mark.slow(30))) == ""


def test_a_slow_mark_without_a_reason_stops_the_run_naming_each_such_test() -> None:
    fine = [_Item("a", pytest.mark.slow("why")), _Item("b"), _Item("c", pytest.mark.unit)]
    require_reasons({item.nodeid: reason_of(item) for item in fine})
    items = [_Item("a", pytest.mark.slow()), _Item("b", pytest.mark.slow("  ")), _Item("c", pytest.mark.slow("ok"))]
    with pytest.raises(pytest.UsageError, match="needs a reason") as raised:
        require_reasons({item.nodeid: reason_of(item) for item in items})
    assert "a, b" in str(raised.value) and "c" not in str(raised.value).split(": ", 1)[1]


def test_the_report_lists_tests_over_the_limit_without_a_reason_slowest_first() -> None:
    seconds = {"quick": 1.0, "at-limit": LIMIT_SECONDS, "slow-explained": 200.0, "slow-a": 31.0, "slow-b": 95.5}
    reasons = {"quick": None, "at-limit": None, "slow-explained": "a cluster's faults", "slow-a": None}
    assert unexplained(seconds, reasons) == [("slow-b", 95.5), ("slow-a", 31.0)]
    assert unexplained(seconds, reasons, limit=100.0) == []
    assert unexplained({}, {}) == []
