"""Step 7 without I/O: from the drawer scans' candidates to the documents near each probe.

A batch of probes is answered by two rounds of HBase calls: the drawer scans (scans.ScanPlan), then one
fp2docs read of every candidate near enough to some probe.  Probes with a ``max_age`` read with an HBase time
range, so both rounds are made once per window a batch holds (``windows``).  What to ask and how to read the
answers lives here, apart from the I/O (store.py, scans.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simhash_schema import hbase2
from simhash_server.index.keys import doc_of_qualifier, fingerprint_row
from simhash_server.index.model import Near, Probe
from simhash_server.index.scans import since
from simhash_server.metrics import CANDIDATES

__all__ = ["Fp2docsRead", "count_candidates", "near_candidates", "windows"]

Doc = tuple[str, bytes]  # (document id, sketch)


def near_candidates(
    probes: Sequence[Probe],
    found: Sequence[set[int]],
    min_stamp_ms: int | None = None,
    via_parts: Sequence[set[tuple[int, int]]] = (),
) -> tuple[list[dict[int, int]], Fp2docsRead]:
    """For each probe, its candidates within its distance (candidate -> distance), and the document
    fingerprints of the part rows in ``via_parts`` whose part is within it (at their own distance, however
    far); and the fp2docs read they need: for each such candidate, how many of its documents (None: all),
    seen at ``min_stamp_ms`` or later."""
    near: list[dict[int, int]] = []
    columns: dict[int, int | None] = {}
    for n, (probe, candidates) in enumerate(zip(probes, found, strict=True)):
        fp = probe.fingerprint
        each = {c: d for c in candidates if (d := (c ^ fp).bit_count()) <= probe.max_distance}
        for part, whole in via_parts[n] if n < len(via_parts) else ():
            if whole not in each and (part ^ fp).bit_count() <= probe.max_distance:
                each[whole] = (whole ^ fp).bit_count()
        near.append(each)
        for c in each:
            columns[c] = _wider(columns[c], probe.per_fingerprint) if c in columns else probe.per_fingerprint
    return near, Fp2docsRead(columns, min_stamp_ms)


def windows(probes: Sequence[Probe]) -> dict[int | None, list[int]]:
    """The positions of a batch's probes by their ``max_age_ms`` (None: no window first), each group read by
    one time range."""
    groups: dict[int | None, list[int]] = {}
    for n, probe in enumerate(probes):
        groups.setdefault(probe.max_age_ms, []).append(n)
    return groups


def count_candidates(found: Sequence[set[int]]) -> None:
    """The candidates of each probe of a batch answered, counted once."""
    for candidates in found:
        CANDIDATES.observe(len(candidates))


class Fp2docsRead:
    """(doc id, sketch) of the first ``columns[fp]`` documents of each fingerprint, by id.

    HBase keeps a row's columns sorted, and hits rank by distance, then id: the first n columns of a
    fingerprint are the only ones a query of limit n can return, so a fingerprint shared by a million
    documents costs a query no more than one shared by n (storeLimit: a per-row column limit)."""

    def __init__(self, columns: dict[int, int | None], min_stamp_ms: int | None = None) -> None:
        self.fps = sorted(columns)
        t = hbase2()
        window = since(min_stamp_ms)  # documents seen since then (their cells' timestamps: writes.py)
        self._gets = [t.TGet(row=fingerprint_row(fp), storeLimit=columns[fp], **window) for fp in self.fps]

    def __bool__(self) -> bool:
        return bool(self.fps)

    def request(self, table: bytes) -> tuple[str, dict[str, Any]]:
        """The one Thrift2 call reading them: most queries' one hit is a get, which costs the gateway and the
        region server less than a multi-get of one."""
        if len(self._gets) == 1:
            return "get", {"table": table, "tget": self._gets[0]}
        return "getMultiple", {"table": table, "tgets": self._gets}

    def documents(self, reply: Any) -> dict[int, list[Doc]]:
        """The documents of each fingerprint, from the call's reply (orphans, with none left, are skipped)."""
        results = [reply] if len(self._gets) == 1 else reply
        return {
            fp: [(doc_of_qualifier(cv.qualifier), cv.value or b"") for cv in result.columnValues or ()]
            for fp, result in zip(self.fps, results, strict=True)
        }

    def near(self, near: list[dict[int, int]], reply: Any) -> list[list[Near]]:
        """For each probe, its near documents."""
        documents = self.documents(reply)
        return [
            [
                Near(doc, candidate, distance, sketch)
                for candidate, distance in each.items()
                for doc, sketch in documents.get(candidate, ())
            ]
            for each in near
        ]


def _wider(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else max(a, b)
