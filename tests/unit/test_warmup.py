"""When serve's warm-up stops: a round's median latency against the fastest round before it."""

from __future__ import annotations

import pytest

from simhash_server.rpc.warmup import Settling, WarmupReport


def settled_after(medians: list[float], **options: float) -> int | None:
    """How many rounds it took to settle (None: never, within ``medians``)."""
    settling = Settling(**options)
    for n, median in enumerate(medians, 1):
        settling.add(median)
        if settling.settled:
            return n
    return None


def test_latency_still_falling_by_more_than_the_tolerance_never_settles() -> None:
    # a JVM compiling its read path: each round clearly faster than the last
    assert settled_after([9.0, 6.0, 4.0, 3.0, 2.5, 2.2, 2.0]) is None


def test_two_flat_rounds_in_a_row_settle_it() -> None:
    assert settled_after([2.7, 2.2, 1.76, 1.75, 1.77]) == 5
    assert settled_after([1.6, 1.62, 1.59]) == 3  # already warm: the minimum of three rounds


def test_one_flat_round_then_a_faster_one_starts_the_count_again() -> None:
    # 2.0 is flat against 1.9's best, but 1.5 is >5% faster than it: still compiling
    assert settled_after([2.5, 1.9, 2.0, 1.5, 1.52, 1.49]) == 6


def test_a_slower_round_counts_as_flat() -> None:
    # noise upwards (a collector's pause, another process) does not mean latency is still falling
    assert settled_after([2.0, 2.6, 2.1]) == 3


def test_tolerance_and_patience_are_the_caller_s() -> None:
    medians = [2.0, 1.92, 1.85, 1.80, 1.78]
    assert settled_after(medians) == 3  # each within 5% of the best before it
    assert settled_after(medians, tolerance=0.01) is None
    assert settled_after(medians, patience=4) == 5


@pytest.mark.parametrize(("options", "message"), [({"tolerance": 1.0}, "tolerance"), ({"patience": 0}, "patience")])
def test_bad_options_are_refused_naming_them(options: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Settling(**options)


def test_the_report_says_how_the_warm_up_ended() -> None:
    report = WarmupReport(asked=1500, near=750, seconds=2.04, round_medians_ms=(2.5, 1.71, 1.7), settled=True)
    assert report.describe() == (
        "warmed up: 1500 queries (750 near stored fingerprints) in 2.0 s; round medians 2.50, 1.71, 1.70 ms (settled)"
    )
    assert WarmupReport(40, 20, 0.1, (), None).describe().endswith("round medians - ms (a fixed count)")
    assert "not settled" in WarmupReport(9000, 4500, 30.0, (3.0, 2.0), False).describe()
