"""Near-duplicate clusters of the whole index: MapReduce jobs over the drawer table (server/mapreduce).

The drawer table already holds every pair in order: rows sharing a 5-byte prefix are adjacent, and two
fingerprints within distance 3 share a prefix. So one pass over it, comparing within prefix groups, finds
every pair (verifying, also the pairs within 8 that share a prefix: what a verified query reads); the Java
half (``ClustersMain``) then meets the pairs with fp2docs, finds the connected components in star rounds and
labels each document with the document its cluster keeps (``keep``: the smallest id, the earliest indexed, or
the longest). This module checks the request, runs the job with ``hfile_job.JobRunner`` and writes
``summary.json`` from its counters.

Output directory (local runner; on YARN the same under ``--staging-uri``/output, and the two tables and
summary.json here; with ``fetch_output`` all of it here too):

- ``clusters/part-r-*``: ``doc id <TAB> cluster id``, for every document with a near-duplicate;
- ``pairs/part-r-*``: ``fingerprint <TAB> fingerprint <TAB> distance`` (hex), every pair once; verifying
  (``min_similarity``): ``doc id <TAB> doc id <TAB> distance <TAB> similarity``, every verified pair once;
- ``sizes/part-r-*``: ``cluster id <TAB> documents``;

A cluster's id is the id of the document it keeps: by default its smallest document id (UTF-8 bytes);
``keep="earliest"`` the earliest ``indexed_at`` (the fp2docs cell's timestamp); ``keep="longest"`` the document
whose sketch counts the most distinct shingles (v4's sketches count them; a document whose sketch does not
comes after all that do, so a v1-v3 index keeps by id).  Ties fall to the smallest id.
- ``largest-clusters.tsv``, ``largest-groups.tsv`` (the biggest drawer prefix groups), ``summary.json``.

The tables are read through the region servers (``read="scan"``), or from HBase snapshots of them taken
when the run starts (``read="snapshot"``: ``TableSnapshotInputFormat`` reads their files from the cluster's
filesystem, so the region servers that answer queries do no work for the job; the job needs the cluster's
``hbase.rootdir``, from its hbase-site.xml or ``-D``).  The snapshots are deleted when the run succeeds.

A document alone at its fingerprint with no pair is in no cluster and is not listed.  Verifying, the
clusters are of documents: two documents are linked only when their stored sketches compare at or above
``min_similarity`` (as Deduplicate verifies); a document without a comparable sketch joins nothing.  The
links are then grouped (``clustering``) into stars around a centre (``centres``, the default when verifying:
every member is linked to its centre itself, so no chain of links joins two documents a reader calls
different; two stars merge when each centre is linked to every member of the other), or into connected
components (``components``, the only grouping unverified).  Verifying an index whose sketches carry their
text's parts (v5), each document's part fingerprints also meet the drawer rows (``PartsJob``): a document
stored with more around it than its copy, or whole beside its truncated copy, pairs with it there.  A failed
run keeps
``work/``; the same command continues from the last finished step.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from simhash_schema import index_tables
from simhash_server.bulk.checkpoint import BulkLoadError
from simhash_server.bulk.hfile_job import CLUSTERS_CLASS, JobEvent, JobRunner
from simhash_server.index.config import StoreConfig
from simhash_server.index.model import MAX_DISTANCE, VERIFY_MAX_DISTANCE

__all__ = [
    "CLUSTERINGS",
    "KEEPS",
    "MAX_DISTANCE",
    "READS",
    "VERIFY_MAX_DISTANCE",
    "ClustersOptions",
    "ClustersStats",
    "run_clusters",
]

READS = ("scan", "snapshot")
KEEPS = ("smallest-id", "earliest", "longest")  # which document a cluster keeps, and is named after
CLUSTERINGS = ("centres", "components")  # verifying: stars around a centre, or any chain of links
SUMMARY = "summary.json"
_REQUEST = "request.json"
_FINISHED = "finished.json"  # in work/: the counters and seconds of the phases finished so far
# Counters of the job that the summary names, and the names it gives them.
_COUNTERS = {
    "drawer rows": "drawer_rows",
    "part rows skipped": "part_rows_skipped",  # v7's, for verified queries: the job makes its own parts
    "prefix groups": "prefix_groups",
    "comparisons": "comparisons",
    "pairs": "pairs_found",
    "hot groups": "hot_groups",
    "hot group fingerprints": "hot_group_fingerprints",
    "tiles": "tiles",
    "document parts": "document_parts",
    "part comparisons": "part_comparisons",
    "pairs through parts": "pairs_through_parts",
    "part tiles": "part_tiles",
    "fingerprints with documents": "fingerprints",
    "documents": "documents",
    "fingerprints without documents": "fingerprints_without_documents",
    "pairs with an end without documents": "pairs_dropped_without_documents",
    "members": "member_fingerprints",
    "edges": "pairs",
    "clusters": "clusters",
    "clustered documents": "clustered_documents",
    "documents at two fingerprints": "documents_at_two_fingerprints",
    "documents alone after the join": "documents_alone_after_join",
    "centres": "centres",
    "documents linked to no centre": "documents_linked_to_no_centre",
    "components too large to merge stars": "components_too_large_to_merge_stars",
    "document pairs below the floor": "document_pairs_below_the_floor",
    "document pairs without comparable sketches": "document_pairs_without_comparable_sketches",
}


@dataclass
class ClustersOptions:
    store: StoreConfig  # which index (its table prefix), and where its Thrift gateway is for the schema check
    output: Path  # local: the outputs and work/; yarn: the log and summary.json (outputs under staging_uri)
    runner: JobRunner
    # None: the reach of the call that answers the same question for one text.  Unverified, MAX_DISTANCE (the
    # drawers' pigeonhole guarantee: beyond it a pair may share no prefix); verifying, Deduplicate's
    # VERIFY_MAX_DISTANCE among fingerprints sharing a drawer, so a cluster links what Deduplicate would find.
    max_distance: int | None = None
    budget: int = 50_000_000  # comparisons per task: bigger prefix groups are split into tiles
    reducers: int = 2
    keep_work: bool = False
    min_similarity: float | None = None  # verify: only document pairs whose sketches agree at least this much
    fetch_output: bool = False  # yarn: copy clusters/, pairs/ and sizes/ from the cluster's filesystem to output
    read: str = "scan"  # the tables through the region servers, or from snapshots of them (READS)
    restore_dir: str | None = None  # snapshot: where they are restored, on hbase.rootdir's filesystem
    keep: str = "smallest-id"  # which document names its cluster (KEEPS)
    clustering: str | None = None  # CLUSTERINGS; None: centres when verifying, else components

    def __post_init__(self) -> None:
        verified = self.min_similarity is not None
        top = VERIFY_MAX_DISTANCE if verified else MAX_DISTANCE
        if self.max_distance is None:
            self.max_distance = top
        if not 0 <= self.max_distance <= top:
            raise ValueError(
                f"max_distance must be 0..{top}, got {self.max_distance}: the drawers find every pair within "
                f"{MAX_DISTANCE}, and with min_similarity those within {VERIFY_MAX_DISTANCE} that share a drawer"
            )
        if not 1_000 <= self.budget <= 10**12:
            raise ValueError(f"budget must be 1,000..10^12 comparisons, got {self.budget:,}")
        if not 1 <= self.reducers <= 10_000:
            raise ValueError(f"reducers must be 1..10000, got {self.reducers}")
        if self.min_similarity is not None and not 0 < self.min_similarity <= 1:
            raise ValueError(f"min_similarity must be in (0, 1], got {self.min_similarity}")
        if self.read not in READS:
            raise ValueError(f"read must be one of {', '.join(READS)}, got {self.read!r}")
        if self.clustering is None:
            self.clustering = "centres" if self.min_similarity is not None else "components"
        if self.clustering not in CLUSTERINGS:
            raise ValueError(f"clustering must be one of {', '.join(CLUSTERINGS)}, got {self.clustering!r}")
        if self.clustering == "centres" and self.min_similarity is None:
            raise ValueError(
                "clustering='centres' links each member to its centre by their sketches: it needs min_similarity"
            )
        if self.keep not in KEEPS:
            raise ValueError(f"keep must be one of {', '.join(KEEPS)}, got {self.keep!r}")
        if self.restore_dir is not None and self.read != "snapshot":
            raise ValueError("restore_dir is for read='snapshot'")


@dataclass
class ClustersStats:
    phase: str = "starting"
    progress: float = 0.0  # of the current phase, 0..1
    rounds: int = 0  # star rounds until the components settled
    phases: dict[str, dict[str, int]] = field(default_factory=dict)  # each finished job's counters
    seconds: dict[str, float] = field(default_factory=dict)  # per phase
    complete: bool = False

    @property
    def counters(self) -> dict[str, int]:
        """The job's own counters, summed over phases, by _COUNTERS' names; and the cluster size buckets."""
        out: dict[str, int] = {}
        for counters in self.phases.values():
            for name, value in counters.items():
                key = _COUNTERS.get(name, name if name.startswith("clusters of ") else None)
                if key is not None:
                    out[key] = out.get(key, 0) + value
        return out

    @property
    def shuffle_bytes(self) -> int:
        """Map output moved to reducers (compressed), all phases."""
        return sum(counters.get("REDUCE_SHUFFLE_BYTES", 0) for counters in self.phases.values())


def run_clusters(options: ClustersOptions, report: Callable[[ClustersStats], None] = lambda s: None) -> ClustersStats:
    """Cluster the index's documents; returns the counters, and writes OUTPUT/summary.json.  BulkLoadError
    when the job cannot go on (OUTPUT/work is kept: the same call continues it)."""
    from simhash_server.index.store import IndexStore

    output = options.output
    if (output / SUMMARY).exists():
        raise BulkLoadError(f"{output} already holds clusters ({SUMMARY}): remove it, or choose another output")
    work = output / "work"
    work.mkdir(parents=True, exist_ok=True)
    tables = index_tables(options.store.table_prefix)
    request = {
        "drawers": tables.drawers.name,
        "fp2docs": tables.fp2docs.name,
        "max-distance": str(options.max_distance),
        "budget": str(options.budget),
        "reducers": str(options.reducers),
    }
    if options.read != "scan":
        request["read"] = options.read
    if options.restore_dir is not None:
        request["restore-dir"] = options.restore_dir
    if options.min_similarity is not None:
        request["min-similarity"] = repr(options.min_similarity)
    if options.keep != "smallest-id":
        request["keep"] = options.keep
    if options.clustering != "components":
        request["clustering"] = str(options.clustering)
    with IndexStore(replace(options.store, pool_size=1)) as store:  # refuses a missing or foreign schema now
        stores_parts = store.recipe.sketch.parts
    if options.min_similarity is not None and stores_parts:
        request["parts"] = "stored"  # v5: each document's parts meet the drawer rows too (PartsJob)
    _check_request(work / _REQUEST, request)
    if options.runner.kind == "yarn":
        remote = str(options.runner.staging_uri).rstrip("/")
        paths = {"work": f"{remote}/work", "output": f"{remote}/output", "summary-to": str(output.resolve())}
        if options.fetch_output:
            paths["copy-to"] = str(output.resolve())
    else:
        paths = {"work": str(work.resolve()), "output": str(output.resolve())}
    stats = ClustersStats()
    finished = work / _FINISHED
    if finished.exists():  # a rerun: the phases an earlier run finished are skipped, their counters kept
        saved = json.loads(finished.read_text())
        stats.phases, stats.seconds = saved["phases"], saved["seconds"]
    started = time.monotonic()
    for event in options.runner.run("clusters", request | paths, work, main_class=CLUSTERS_CLASS):
        _take(stats, event)
        if event.kind == "phase":
            _save(finished, {"phases": stats.phases, "seconds": stats.seconds})
        report(stats)
    stats.seconds["total"] = stats.seconds.get("total", 0.0) + time.monotonic() - started
    if not stats.complete:
        raise BulkLoadError(f"the clusters job stopped before it was done; {work}/job.log has its log")
    summary = _summary(options, stats, lambda name: (output / name).read_text(encoding="utf-8"))
    _save(output / SUMMARY, summary)
    if not options.keep_work:
        shutil.rmtree(work)
    return stats


def _save(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def _check_request(path: Path, request: dict[str, str]) -> None:
    if path.exists():
        saved = json.loads(path.read_text())
        if saved != request:
            raise BulkLoadError(
                f"{path.parent} belongs to another clusters run: {saved} (this one: {request}); "
                "remove it, or choose another output"
            )
    else:
        path.write_text(json.dumps(request, indent=1))


def _take(stats: ClustersStats, event: JobEvent) -> None:
    if event.kind == "progress":
        stats.phase = event.phase
        stats.progress = (event.data["map"] + event.data["reduce"]) / 2
    elif event.kind == "phase":
        stats.seconds[event.phase] = event.data["seconds"]
        stats.phases[event.phase] = event.data["counters"]
    elif event.kind == "settled":
        stats.rounds = event.data["rounds"]
    elif event.kind == "done":
        stats.complete = True


def _summary(options: ClustersOptions, stats: ClustersStats, read: Callable[[str], str]) -> dict[str, Any]:
    counters = stats.counters
    sizes = {
        name.removeprefix("clusters of "): counters.pop(name)
        for name in list(counters)
        if name.startswith("clusters of ")
    }

    def table(name: str) -> list[list[str]]:
        return [line.split("\t") for line in read(name).splitlines()[1:] if line]

    return {
        "index": options.store.table_prefix,
        "max_distance": options.max_distance,
        "budget": options.budget,
        "min_similarity": options.min_similarity,
        "read": options.read,
        "keep": options.keep,
        "clustering": options.clustering,
        **{key: counters.get(key, 0) for key in _COUNTERS.values()},
        "star_rounds": stats.rounds,
        "clusters_by_documents": dict(sorted(sizes.items(), key=lambda kv: int(kv[0].split("-")[0]))),
        "largest_clusters": [{"cluster": c, "documents": int(n)} for c, n in table("largest-clusters.tsv")],
        "largest_prefix_groups": [
            {"drawer_value": v, "flag": int(f), "fingerprints": int(n)} for v, f, n in table("largest-groups.tsv")
        ],
        "shuffle_bytes": stats.shuffle_bytes,
        "seconds": {k: round(v, 3) for k, v in stats.seconds.items()},
        "runner": asdict(options.runner)
        | {"job_dir": str(options.runner.job_dir or ""), "conf_dirs": [str(d) for d in options.runner.conf_dirs]},
    }
