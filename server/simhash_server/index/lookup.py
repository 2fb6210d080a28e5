"""Steps 6-7's I/O: the documents near each of a batch of probes, by the drawer scans (scans.py) and then one
fp2docs read of the candidates near enough to some probe, once per time window; nearby.py plans both."""

from __future__ import annotations

import time
from typing import Any

from simhash_server.index.model import Near, Probe
from simhash_server.index.nearby import count_candidates, near_candidates, windows
from simhash_server.index.pool import ConnectionPool
from simhash_server.index.scans import DrawerScans

__all__ = ["NearLookup"]


class NearLookup:
    """Reads of one index's drawer and fp2docs tables for queries."""

    def __init__(self, scans: DrawerScans, pool: ConnectionPool[Any], fp2docs: bytes, part_rows: bool = False) -> None:
        self.scans, self.pool, self.fp2docs = scans, pool, fp2docs
        # Whether the index keeps part rows (recipe v7): verifying probes read them too.
        self.part_rows = part_rows
        self._span = {"hbase.table": fp2docs.decode()}

    def near_many(self, probes: list[Probe], deadline: float | None) -> list[list[Near]]:
        """For each probe, the documents near it: one batch per time window (nearby.py); callers reach it
        through a coalescer."""
        answers: list[list[Near]] = [[] for _ in probes]
        now_ms = int(time.time() * 1000)
        for max_age_ms, positions in windows(probes).items():
            group = [probes[n] for n in positions]
            min_stamp = None if max_age_ms is None else now_ms - max_age_ms
            fps = [probe.fingerprint for probe in group]
            wanted = [self.part_rows and probe.verifying for probe in group]
            found, via_parts = self.scans.candidates_with_parts(fps, deadline, min_stamp, wanted)
            near, read = near_candidates(group, found, min_stamp, via_parts)
            if read:
                api, arguments = read.request(self.fp2docs)
                reply = self.pool.run(
                    lambda c, a=api, k=arguments: getattr(c, a)(**k),
                    deadline=deadline,
                    what=f"{api} fp2docs",  # the documents and their sketches
                    attributes={**self._span, "simhash.rows": len(read.fps)},
                )
                for n, each in zip(positions, read.near(near, reply), strict=True):
                    answers[n] = each
            count_candidates(found)
        return answers
