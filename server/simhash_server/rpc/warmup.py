"""serve's warm-up: queries asked before the port opens, until the HBase JVMs answer at their settled speed.

A region server and Thrift gateway fresh from a restart, or from a burst of writes, compile their read path
and fill their block cache during their first few thousand queries, which answer several times slower
meanwhile: without a warm-up the first callers pay for it.  How many queries that takes depends on the
machine and on what the JVMs did before (their compilers' backlog drains in seconds of CPU, not in a count of
calls), so a fixed count either stops while they still compile or asks for more than needed.  The warm-up
therefore asks at least ``minimum`` queries, then goes on in rounds until the median latency of a round stops
falling (``Settling``), within ``seconds`` in all
(docs/decisions.md#serve-warms-up-until-settled-before-it-reports-serving).

Half the queries are random (a miss: drawer scans only), half a few bits from stored fingerprints (a hit: the
fp2docs read too, another path to compile).
"""

from __future__ import annotations

import logging
import math
import random
import statistics
import time
from dataclasses import dataclass, field

from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.model import MAX_DISTANCE

__all__ = ["ROUND_QUERIES", "Settling", "WarmupReport", "warm_up"]

log = logging.getLogger(__name__)

ROUND_QUERIES = 500  # a round's median is steady to a few percent at this size, and takes under a second
_STORED_SAMPLE = 1000  # stored fingerprints the warm-up reads; its near queries cycle through them


@dataclass
class Settling:
    """Whether latency has stopped falling: each round's median against the fastest round before it.

    A round counts as flat unless it is faster than every earlier round by more than ``tolerance``; the
    latency has settled after ``patience`` flat rounds in a row (two, so that one lucky round alone does
    not end a warm-up that is still compiling)."""

    tolerance: float = 0.05
    patience: int = 2
    medians: list[float] = field(default_factory=list)
    flat: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.tolerance < 1:
            raise ValueError(f"tolerance must be in [0, 1), got {self.tolerance}")
        if self.patience < 1:
            raise ValueError(f"patience must be >= 1, got {self.patience}")

    def add(self, median: float) -> None:
        best = min(self.medians, default=math.inf)
        self.flat = 0 if median < best * (1 - self.tolerance) else self.flat + 1
        self.medians.append(median)

    @property
    def settled(self) -> bool:
        return self.flat >= self.patience


_ENDINGS = {True: "settled", False: "not settled: stopped by the time limit", None: "a fixed count"}


@dataclass(frozen=True)
class WarmupReport:
    asked: int
    near: int  # of them, a few bits from a stored fingerprint
    seconds: float
    round_medians_ms: tuple[float, ...]
    settled: bool | None  # False: stopped by the time limit (or an error) first; None: a fixed count, not asked

    def describe(self) -> str:
        medians = ", ".join(f"{m:.2f}" for m in self.round_medians_ms)
        ending = _ENDINGS[self.settled]
        return (
            f"warmed up: {self.asked} queries ({self.near} near stored fingerprints) in {self.seconds:.1f} s; "
            f"round medians {medians or '-'} ms ({ending})"
        )


def _flip_bits(fp: int, bits: int, rng: random.Random) -> int:
    """``fp`` with ``bits`` distinct random bits flipped."""
    for bit in rng.sample(range(64), bits):
        fp ^= 1 << bit
    return fp


async def warm_up(index: AsyncIndexStore, minimum: int, seconds: float, until_settled: bool = True) -> WarmupReport:
    """Ask at least ``minimum`` queries (none if it is 0) and, ``until_settled``, more rounds until latency
    settles; never past ``seconds``.  Best effort: a failure is logged and the warm-up ends."""
    if minimum < 1:
        return WarmupReport(0, 0, 0.0, (), None)
    rng = random.Random()
    began = time.monotonic()
    deadline = began + seconds
    asked = near = 0
    settling = Settling()
    try:
        stored = await index.sample_fingerprints(min(minimum // 2, _STORED_SAMPLE), deadline=deadline)
        timings: list[float] = []
        while time.monotonic() < deadline and (asked < minimum or (until_settled and not settling.settled)):
            if asked % 2 and stored:
                fp = _flip_bits(stored[near % len(stored)], rng.randint(0, MAX_DISTANCE), rng)
                near += 1
            else:
                fp = rng.getrandbits(64)
            start = time.perf_counter()
            await index.query(fp, deadline=deadline)
            timings.append(time.perf_counter() - start)
            asked += 1
            if len(timings) == ROUND_QUERIES:
                settling.add(statistics.median(timings))
                timings.clear()
    except Exception as exc:  # noqa: BLE001 - warming is optional; serving is not
        log.warning("warm-up stopped after %d queries: %r", asked, exc)
    medians = tuple(1000 * m for m in settling.medians)
    return WarmupReport(asked, near, time.monotonic() - began, medians, settling.settled if until_settled else None)
