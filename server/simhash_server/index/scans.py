"""Drawer scans through Thrift2: a query's prefixes grouped by region, one scan per region, in parallel.

Thrift2's ``getScannerResults`` opens, reads and closes a scan in one call (happybase needs about four).
The prefixes of every fingerprint in a batch are grouped by the region holding them, and each group is read
by one scan (a MultiRowRangeFilter over its prefixes, keys only): as many Thrift calls as regions touched,
however many fingerprints.  Region boundaries are a cached hint: a stale one costs speed, never a row.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from simhash_schema import hbase2, key_only_multi_range
from simhash_server.index.keys import KEY_LENGTH, PREFIX_LENGTH, drawer_prefixes, split_key
from simhash_server.index.pool import ConnectionPool

__all__ = ["DrawerScans", "count_rows"]

_SCAN_PAGE = 10_000
_REGION_CACHE_SECONDS = 60.0
# stop = prefix + ff*9 sorts after every 13-byte key under the prefix and shares its 5 bytes, so the
# ROWPREFIX_FIXED_LENGTH(5) bloom filter can skip store files without the prefix.
_STOP_TAIL = b"\xff" * (KEY_LENGTH - PREFIX_LENGTH + 1)


def _paged(pool: ConnectionPool[Any], table: bytes, deadline: float | None, **scan: Any) -> list[Any]:
    """Every result of a scan, one Thrift2 call per _SCAN_PAGE rows."""
    t = hbase2()
    out: list[Any] = []
    start = scan.pop("startRow", b"")
    while True:
        page = t.TScan(startRow=start, caching=_SCAN_PAGE, limit=_SCAN_PAGE, **scan)
        results = pool.run(lambda c, s=page: c.getScannerResults(table, s, _SCAN_PAGE), deadline=deadline)
        out.extend(results)
        if len(results) < _SCAN_PAGE:
            return out
        start = results[-1].row + b"\x00"


def count_rows(pool: ConnectionPool[Any], table: bytes, deadline: float | None) -> int:
    """Rows of a table, by a keys-only scan: O(rows), so callers cache it."""
    return len(_paged(pool, table, deadline, filterString=b"FirstKeyOnlyFilter() AND KeyOnlyFilter()"))


class DrawerScans:
    """Reads of one drawer table: every stored fingerprint sharing a drawer with each of many fingerprints."""

    def __init__(self, pool: ConnectionPool[Any], table: bytes, threads: int) -> None:
        self._pool = pool
        self._table = table
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="drawer-scan")
        self._regions: tuple[float, list[bytes]] | None = None

    def close(self) -> None:
        self._threads.shutdown(wait=False, cancel_futures=True)

    def candidates(self, fps: Sequence[int], deadline: float | None) -> list[set[int]]:
        """For each fingerprint, every stored fingerprint sharing a drawer with it."""
        owners: dict[bytes, list[int]] = {}
        for n, fp in enumerate(fps):
            for prefix in drawer_prefixes(fp):
                owners.setdefault(prefix, []).append(n)
        groups: dict[int, list[bytes]] = {}
        starts = self._region_starts(deadline)
        for prefix in sorted(owners):
            groups.setdefault(bisect.bisect_right(starts, prefix), []).append(prefix)
        *others, last = groups.values()
        futures = [self._threads.submit(self._scan, group, deadline) for group in others]
        keys = self._scan(last, deadline)  # the last group in this thread: one hand-off fewer
        for future in futures:
            keys.extend(future.result())
        found: list[set[int]] = [set() for _ in fps]
        for key in keys:
            prefix, candidate = split_key(key)
            for n in owners[prefix]:
                found[n].add(candidate)
        return found

    def _region_starts(self, deadline: float | None) -> list[bytes]:
        """Start keys of the table's regions (cached for a minute; regions split rarely)."""
        cached = self._regions
        if cached is not None and time.monotonic() - cached[0] < _REGION_CACHE_SECONDS:
            return cached[1]
        locations = self._pool.run(lambda c: c.getAllRegionLocations(self._table), deadline=deadline)
        starts = sorted(loc.regionInfo.startKey or b"" for loc in locations)[1:]  # the first starts at b""
        self._regions = (time.monotonic(), starts)
        return starts

    def _scan(self, prefixes: list[bytes], deadline: float | None) -> list[bytes]:
        """Drawer row keys under sorted prefixes, keys only."""
        ranges = [(p, p + _STOP_TAIL) for p in prefixes]
        if len(ranges) == 1:
            filters = {"filterString": b"KeyOnlyFilter()"}
        else:
            filters = {"filterBytes": key_only_multi_range(ranges)}
        # PREAD: positional reads suit short scans.
        results = _paged(
            self._pool,
            self._table,
            deadline,
            startRow=ranges[0][0],
            stopRow=ranges[-1][1],
            readType=hbase2().TReadType.PREAD,
            **filters,
        )
        return [r.row for r in results]
