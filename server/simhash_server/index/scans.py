"""Drawer scans through Thrift2: a query's prefixes grouped by region, one scan per region, all in flight at once.

Thrift2's ``getScannerResults`` opens, reads and closes a scan in one call (happybase needs about four).
The prefixes of every fingerprint in a batch are grouped by the region holding them, and each group is read
by one scan (a MultiRowRangeFilter over its prefixes, keys only): as many Thrift calls as regions touched,
however many fingerprints.  One thread writes every scan's request, each on a connection of its own, then
reads the replies: the gateway runs them in parallel, and this process hands nothing between threads
(docs/decisions.md#a-querys-drawer-scans-grouped-by-region-pipelined-from-one-thread).  Region boundaries
are a cached hint: a stale one costs speed, never a row.
"""

from __future__ import annotations

import bisect
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any

from thriftpy2.thrift import TException

from simhash_schema import hbase2, key_only_multi_range
from simhash_server import tracing
from simhash_server.index.errors import DeadlineExceeded
from simhash_server.index.keys import (
    PART_KEY_LENGTH,
    PREFIX_LENGTH,
    drawer_prefixes,
    part_prefixes,
    split_key,
    split_part_key,
)
from simhash_server.index.pool import TRANSPORT_ERRORS, ConnectionPool
from simhash_server.index.thrift2_calls import receive_reply, send_request
from simhash_server.metrics import HBASE_CALL_SECONDS

__all__ = ["DrawerScans", "ScanPlan", "count_rows", "read_on", "row_keys", "scan_request", "since"]

log = logging.getLogger(__name__)

_SCAN_PAGE = 10_000
_REGION_CACHE_SECONDS = 60.0
# stop = prefix + ff*17 sorts after every 13-byte drawer key and 21-byte part row key under the prefix and
# shares its 5 bytes, so the ROWPREFIX_FIXED_LENGTH(5) bloom filter can skip store files without the prefix.
_STOP_TAIL = b"\xff" * (PART_KEY_LENGTH - PREFIX_LENGTH + 1)


def _paged(pool: ConnectionPool[Any], table: bytes, deadline: float | None, **scan: Any) -> list[Any]:
    """Every result of a scan, one Thrift2 call per _SCAN_PAGE rows."""
    t = hbase2()
    out: list[Any] = []
    start = scan.pop("startRow", b"")
    while True:
        page = t.TScan(startRow=start, caching=_SCAN_PAGE, limit=_SCAN_PAGE, **scan)
        results = pool.run(
            lambda c, s=page: c.getScannerResults(table, s, _SCAN_PAGE),
            deadline=deadline,
            what="getScannerResults",
            attributes={"hbase.table": table.decode()},
        )
        out.extend(results)
        if len(results) < _SCAN_PAGE:
            return out
        start = results[-1].row + b"\x00"


_KEYS_ONLY = b"FirstKeyOnlyFilter() AND KeyOnlyFilter()"


def count_rows(pool: ConnectionPool[Any], table: bytes, deadline: float | None, column: bytes | None = None) -> int:
    """Rows of a table (holding ``column``, b"family:qualifier", if given), by a keys-only scan: O(rows), so
    callers cache it."""
    scan: dict[str, Any] = {"filterString": _KEYS_ONLY}
    if column is not None:
        family, _, qualifier = column.partition(b":")
        scan["columns"] = [hbase2().TColumn(family=family, qualifier=qualifier)]
    return len(_paged(pool, table, deadline, **scan))


def row_keys(
    pool: ConnectionPool[Any], table: bytes, start: bytes, stop: bytes, count: int, deadline: float | None
) -> list[bytes]:
    """The keys of at most ``count`` rows in [start, stop) (``stop`` b"": to the end), by one call."""
    scan = hbase2().TScan(startRow=start, stopRow=stop, caching=count, limit=count, filterString=_KEYS_ONLY)
    return [r.row for r in pool.run(lambda c: c.getScannerResults(table, scan, count), deadline=deadline)]


def since(min_stamp_ms: int | None) -> dict[str, Any]:
    """The field limiting a TScan or TGet to cells written at ``min_stamp_ms`` or later (None: no limit).

    A window reaching back before 1970 (a ``max_age`` longer than the epoch's age) holds every cell: no limit,
    as HBase refuses a time range that starts below 0."""
    if min_stamp_ms is None or min_stamp_ms <= 0:
        return {}
    return {"timeRange": hbase2().TTimeRange(minStamp=min_stamp_ms, maxStamp=_LATEST)}


_LATEST = 2**63 - 1  # HBase's Long.MAX_VALUE: a time range's exclusive end that excludes nothing


def _drawer_scan(prefixes: list[bytes], min_stamp_ms: int | None = None) -> dict[str, Any]:
    """The TScan fields reading the drawer row keys under sorted prefixes (keys only; PREAD suits short scans),
    of rows written at ``min_stamp_ms`` or later (None: all)."""
    ranges = [(p, p + _STOP_TAIL) for p in prefixes]
    scan: dict[str, Any] = {
        "startRow": ranges[0][0],
        "stopRow": ranges[-1][1],
        "readType": hbase2().TReadType.PREAD,
        **since(min_stamp_ms),
    }
    if len(ranges) == 1:
        scan["filterString"] = b"KeyOnlyFilter()"
    else:
        scan["filterBytes"] = key_only_multi_range(ranges)
    return scan


class ScanPlan:
    """A batch's drawer reads: the prefixes of every fingerprint (and the part prefixes of those in
    ``part_rows``) grouped by the region holding them, one scan per group, and which fingerprints asked for
    each prefix; only rows written at ``min_stamp_ms`` or later, if given (writes.py: a drawer row is never
    older than its documents)."""

    def __init__(
        self,
        fps: Sequence[int],
        region_starts: list[bytes],
        min_stamp_ms: int | None = None,
        part_rows: Sequence[bool] = (),
    ) -> None:
        self.size = len(fps)
        self.owners: dict[bytes, list[int]] = {}
        for n, fp in enumerate(fps):
            wanted = drawer_prefixes(fp) + (part_prefixes(fp) if n < len(part_rows) and part_rows[n] else [])
            for prefix in wanted:
                self.owners.setdefault(prefix, []).append(n)
        groups: dict[int, list[bytes]] = {}
        for prefix in sorted(self.owners):
            groups.setdefault(bisect.bisect_right(region_starts, prefix), []).append(prefix)
        self.scans = [_drawer_scan(group, min_stamp_ms) for group in groups.values()]

    def found(self, keys: Iterable[bytes]) -> list[set[int]]:
        """For each fingerprint, the stored fingerprints among the drawer row keys the scans read."""
        return self.found_with_parts(keys)[0]

    def found_with_parts(self, keys: Iterable[bytes]) -> tuple[list[set[int]], list[set[tuple[int, int]]]]:
        """For each fingerprint, the stored fingerprints among the drawer row keys the scans read, and the
        (part, document fingerprint) of the part rows among them."""
        found: list[set[int]] = [set() for _ in range(self.size)]
        via_parts: list[set[tuple[int, int]]] = [set() for _ in range(self.size)]
        for key in keys:
            if len(key) == PART_KEY_LENGTH:
                prefix, part, whole = split_part_key(key)
                for n in self.owners[prefix]:
                    via_parts[n].add((part, whole))
                continue
            prefix, candidate = split_key(key)
            for n in self.owners[prefix]:
                found[n].add(candidate)
        return found, via_parts


def scan_request(table: bytes, scan: dict[str, Any]) -> dict[str, Any]:
    """The arguments of the ``getScannerResults`` call reading one page of a drawer scan."""
    tscan = hbase2().TScan(caching=_SCAN_PAGE, limit=_SCAN_PAGE, **scan)
    return {"table": table, "tscan": tscan, "numRows": _SCAN_PAGE}


def read_on(scan: dict[str, Any], rows: list[Any]) -> dict[str, Any] | None:
    """The rest of a scan whose page came back full, from after its last row (None: the scan is done)."""
    return scan | {"startRow": rows[-1].row + b"\x00"} if len(rows) == _SCAN_PAGE else None


class DrawerScans:
    """Reads of one drawer table: every stored fingerprint sharing a drawer with each of many fingerprints."""

    def __init__(self, pool: ConnectionPool[Any], table: bytes) -> None:
        self.pool = pool
        self.table = table
        self._regions: tuple[float, list[bytes]] | None = None
        self._call_seconds = HBASE_CALL_SECONDS.labels(pool.name)  # once: a label lookup takes a lock

    def candidates(self, fps: Sequence[int], deadline: float | None, min_stamp_ms: int | None = None) -> list[set[int]]:
        """For each fingerprint, every stored fingerprint sharing a drawer with it (in a drawer row written at
        ``min_stamp_ms`` or later, if given)."""
        return self.candidates_with_parts(fps, deadline, min_stamp_ms)[0]

    def candidates_with_parts(
        self,
        fps: Sequence[int],
        deadline: float | None,
        min_stamp_ms: int | None = None,
        part_rows: Sequence[bool] = (),
    ) -> tuple[list[set[int]], list[set[tuple[int, int]]]]:
        """``candidates``, and for the fingerprints in ``part_rows`` the (part, document fingerprint) of every
        part row sharing a drawer with them (index/keys.py)."""
        plan = ScanPlan(fps, self.region_starts(deadline), min_stamp_ms, part_rows)
        # one span for the pipelined scans: they are in flight together, over several connections
        attributes = {"db.system": "hbase", "hbase.table": self.table.decode(), "simhash.gateway": self.pool.name}
        with tracing.span("HBase scan drawers", {**attributes, "simhash.scans": len(plan.scans)}) as span:
            found, via_parts = plan.found_with_parts(self._keys(plan.scans, deadline))
            if span is not None:
                span.set_attribute("simhash.candidates", sum(len(f) for f in found) + sum(len(v) for v in via_parts))
            return found, via_parts

    def cached_region_starts(self) -> list[bytes] | None:
        """The region starts if the cache is fresh, without a call (None: ask ``region_starts``)."""
        cached = self._regions
        if cached is not None and time.monotonic() - cached[0] < _REGION_CACHE_SECONDS:
            return cached[1]
        return None

    def region_starts(self, deadline: float | None) -> list[bytes]:
        """Start keys of the table's regions (cached for a minute; regions split rarely)."""
        cached = self.cached_region_starts()
        if cached is not None:
            return cached
        locations = self.pool.run(
            lambda c: c.getAllRegionLocations(self.table),
            deadline=deadline,
            what="getAllRegionLocations",
            attributes={"hbase.table": self.table.decode()},
        )
        starts = sorted(loc.regionInfo.startKey or b"" for loc in locations)[1:]  # the first starts at b""
        self._regions = (time.monotonic(), starts)
        return starts

    def _keys(self, scans: list[dict[str, Any]], deadline: float | None) -> list[bytes]:
        """The row keys every scan reads: all in flight at once, in waves of as many connections as are free.

        A scan that fills a page is read on, and a failed wave is read again, through the pool's paged and
        retried calls: the rare paths stay the plain ones."""
        if deadline is not None and time.monotonic() >= deadline:
            raise DeadlineExceeded(f"{self.pool.name}: the deadline passed")
        keys: list[bytes] = []
        unfinished: list[dict[str, Any]] = []  # full pages: read on from their last row
        traced = tracing.on()
        try:
            with self.pool.held(len(scans)) as conns:
                for lo in range(0, len(scans), len(conns)):
                    wave = list(zip(conns, scans[lo : lo + len(conns)], strict=False))  # the last wave may be short
                    began = time.perf_counter()
                    sent = time.time_ns() if traced else 0
                    for conn, scan in wave:
                        send_request(conn, "getScannerResults", **scan_request(self.table, scan))
                    for conn, scan in wave:
                        rows = receive_reply(conn, "getScannerResults")
                        self._call_seconds.observe(time.perf_counter() - began)
                        keys.extend(r.row for r in rows)
                        if traced:  # a span per scan, from the wave's sending to its reply
                            tracing.record(
                                "HBase getScannerResults", sent, time.time_ns(), self._scan_attributes(scan, rows)
                            )
                        if (rest := read_on(scan, rows)) is not None:
                            unfinished.append(rest)
        except (*TRANSPORT_ERRORS, TException) as exc:
            log.warning("%s: pipelined drawer scans failed, retrying one by one: %r", self.pool.name, exc)
            keys, unfinished = [], scans
        return keys + self.read_rest(unfinished, deadline)

    def _scan_attributes(self, scan: dict[str, Any], rows: list[Any]) -> dict[str, Any]:
        return {
            "db.system": "hbase",
            "hbase.table": self.table.decode(),
            "simhash.gateway": self.pool.name,
            "hbase.start_row": scan["startRow"].hex(),
            "hbase.stop_row": scan["stopRow"].hex(),
            "simhash.rows": len(rows),
        }

    def read_rest(self, scans: list[dict[str, Any]], deadline: float | None) -> list[bytes]:
        """The row keys of scans read one by one, page by page, through the pool's retried calls."""
        return [r.row for scan in scans for r in _paged(self.pool, self.table, deadline, **scan)]
