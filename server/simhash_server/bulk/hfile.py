"""HFile bulk load: input records -> normalised files -> HFiles by HBase's MapReduce tooling -> BulkLoadHFilesTool.

Python reads the inputs with bulk-load's input layer (the same formats, rejects and version check),
fingerprints texts with the index's recipe, and writes normalised records; the Java job
(server/mapreduce, run by ``hfile_job``) does what grows with N, on Hadoop: last-one-wins per id, the three
tables' HFiles, the hand-over.  Nothing kept in this process grows with the input.

Inputs given as URIs of a Hadoop FileSystem (``ClusterInputs``: hdfs://, file://, s3a://..., globs and
directories too) are not read here at all: the first job's map tasks read them where they live and run the
same Python (bulk/file_task.py; on YARN from a PEX in the distributed cache), and their rejects go to a
directory on that filesystem.  This process then only lists files and reads counters.

Steps, each recorded in the staging directory so a rerun continues where one stopped (the staging
directory is removed only once the load succeeded):

1. normalise: ``input/part-NNNNN.norm``, rejects to the reject file (manifest ``normalized``); for
   ClusterInputs, the parse job instead (part of generate, marked ``parsed-input`` in the job's staging);
2. generate (``--generate-only`` stops here): the docs job (ids meet: the last record of an id wins; the
   docs table is consulted, unless ``new_ids_only``, for ids already stored at another fingerprint), then
   the drawers and fp2docs jobs, one reducer per region with the table's own family settings;
3. load (``--load-only`` starts here): old fp2docs columns of moved documents deleted, then the HFiles of
   drawers, docs and fp2docs, in that order, the order of index/writes.py: a load stopped between
   tables leaves at worst orphans or incomplete documents, which ``simhash-index gc`` repairs.

Cells carry one timestamp, chosen when the load starts: a delete made before it does not hide the load, and
a write made after it (by a live service) wins over it.  A dated record (``indexed_at``) carries its date in
its docs and fp2docs cells instead, moved past every cell and delete marker its docs row already holds, as
bulk-load moves it (index/writes.py doc_stamps; DocsJob.stampOf), but never past the load's timestamp.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from simhash_schema import index_tables
from simhash_server.bulk.checkpoint import BulkLoadError
from simhash_server.bulk.cluster_inputs import ClusterInputs
from simhash_server.bulk.hfile_job import JobEvent, JobRunner
from simhash_server.bulk.input import InputSource
from simhash_server.bulk.normalized import NORMALIZED_MAGIC, normalized_record, stored_document
from simhash_server.bulk.records import Record, Reject
from simhash_server.fingerprint import recipe_of
from simhash_server.index.store import IndexStore, StoreConfig

__all__ = [
    "HFileLoadOptions",
    "HFileLoadStats",
    "run_hfile_load",
]

_MANIFEST_VERSION = 2  # 2: records carry indexed_at
_DEAL = 4096  # records per file before moving to the next: map tasks get equal shares


@dataclass
class HFileLoadOptions:
    store: StoreConfig
    staging: Path
    rejects: Path
    runner: JobRunner
    splits: int = 4  # normalised files, hence map tasks of the docs job
    new_ids_only: bool = False  # the user's word that no id is stored yet: the docs table is not consulted
    generate_only: bool = False
    load_only: bool = False
    keep_staging: bool = False
    max_rejects: int | None = None
    cluster_inputs: ClusterInputs | None = None  # instead of sources: read by the map tasks


@dataclass
class HFileLoadStats:
    file_bytes_read: int = 0
    total_bytes: int | None = None
    lines: int = 0
    records: int = 0
    rejected: int = 0
    phase: str = "normalize"
    progress: float = 0.0  # of the current job phase, 0..1
    documents: int = 0  # after last-one-wins
    repeated_ids: int = 0
    present_same_fingerprint: int = 0
    moved: int = 0  # stored before at another fingerprint: the old column is deleted first
    seconds: dict[str, float] = field(default_factory=dict)  # per step
    job_seconds: dict[str, float] = field(default_factory=dict)  # per MapReduce job and per table handed over
    task_cpu_seconds: dict[str, float] = field(default_factory=dict)  # per job, its tasks' (YARN's account)
    task_python_cpu_seconds: float = 0.0  # the parse job's Python processes' own, as they report it
    nodes_checked: int = 0  # NodeManagers that ran the tasks' Python before the parse job (NodeCheck)
    nodes_unchecked: list[str] = field(default_factory=list)  # running ones YARN gave no check task
    nodes_remembered: int = 0  # of nodes_checked, those an earlier load checked with the same PEX and Python
    loaded: bool = False

    @property
    def elapsed(self) -> float:
        return sum(self.seconds.values())

    @property
    def complete(self) -> bool:
        return self.loaded


class _Manifest:
    """staging/manifest.json: identity, timestamp and finished steps, replaced atomically."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        os.replace(tmp, self.path)


def _identity(sources: list[InputSource], options: HFileLoadOptions) -> dict[str, Any]:
    cluster = options.cluster_inputs
    if cluster is not None:  # the files behind URIs are the cluster's: the job lists them
        return {
            "inputs": list(cluster.uris),
            "formats": [cluster.fmt, cluster.compression, cluster.fingerprint_format],
            "table_prefix": options.store.table_prefix,
            "new_ids_only": options.new_ids_only,
        }
    return {
        "inputs": [s.identity() for s in sources],
        "formats": [s.format for s in sources],
        "table_prefix": options.store.table_prefix,
        "new_ids_only": options.new_ids_only,
    }


def _normalize(
    sources: list[InputSource],
    options: HFileLoadOptions,
    stats: HFileLoadStats,
    report: Callable[[HFileLoadStats], None],
) -> None:
    folder = options.staging / "input"
    shutil.rmtree(folder, ignore_errors=True)  # a partial earlier attempt's: normalising starts over
    folder.mkdir(parents=True)
    version = sources[0].fingerprint_version
    started = last = time.monotonic()
    with ExitStack() as stack:
        parts: list[IO[bytes]] = [
            stack.enter_context(open(folder / f"part-{n:05d}.norm", "wb", buffering=1 << 20))
            for n in range(options.splits)
        ]
        rejects = stack.enter_context(open(options.rejects, "w", encoding="utf-8"))
        for part in parts:
            part.write(NORMALIZED_MAGIC)
        base = 0
        for source in sources:
            for item, _, read in source.records():
                stats.lines += 1
                if isinstance(item, Reject):
                    stats.rejected += 1
                    rejects.write(f"{source.path}\t{item.line}\t{item.reason}\t{item.raw}\n")
                    if options.max_rejects is not None and stats.rejected > options.max_rejects:
                        rejects.flush()
                        raise BulkLoadError(
                            f"{stats.rejected} lines rejected, over --max-rejects {options.max_rejects}; "
                            f"see {options.rejects}"
                        )
                    continue
                parts[(stats.records // _DEAL) % len(parts)].write(_encode(stats.records, item, version))
                stats.records += 1
                if stats.records % 8192 == 0 and time.monotonic() - last >= 0.5:
                    last = time.monotonic()
                    stats.file_bytes_read = base + read
                    report(stats)
            base += source.size or 0
        stats.file_bytes_read = base
        for part in parts:
            part.flush()
            os.fsync(part.fileno())
    stats.seconds["normalize"] = time.monotonic() - started


def _encode(seq: int, record: Record, version: str) -> bytes:
    doc = stored_document(record.doc_id, record.simhash, record.text, version, sketch=record.sketch)  # as bulk-load
    return normalized_record(seq, doc.fingerprint, doc.doc_id.encode("utf-8"), doc.sketch, record.indexed_at_ms)


class _Load:
    def __init__(
        self, sources: list[InputSource], options: HFileLoadOptions, report: Callable[[HFileLoadStats], None]
    ) -> None:
        self.sources, self.options, self.report = sources, options, report
        self.manifest = _Manifest(options.staging / "manifest.json")
        self.stats = HFileLoadStats(total_bytes=_total_size(sources))
        tables = index_tables(options.store.table_prefix)
        self.tables = {"drawers": tables.drawers.name, "fp2docs": tables.fp2docs.name, "docs": tables.docs.name}

    def run(self) -> HFileLoadStats:
        self.options.staging.mkdir(parents=True, exist_ok=True)
        self._check_staging()
        # A missing schema or another fingerprint version is refused before anything is written.
        with IndexStore(replace(self.options.store, pool_size=1)) as store:
            for source in self.sources:
                source.fingerprint_version = store.recipe.version
                source.retention_seconds = store.retention_seconds
            self.version, self.retention_seconds = store.recipe.version, store.retention_seconds
        if self.options.cluster_inputs is not None:  # read by the parse job, within generate
            for key, value in self.manifest.data.get("normalized", {}).items():  # an earlier run's parse job
                setattr(self.stats, key, value)
        elif "normalized" not in self.manifest.data:
            if self.options.load_only:
                raise BulkLoadError(f"{self.options.staging} holds no generated load: run without --load-only")
            _normalize(self.sources, self.options, self.stats, self.report)
            self.manifest.data["normalized"] = {
                k: getattr(self.stats, k) for k in ("lines", "records", "rejected", "file_bytes_read")
            }
            self.manifest.data["seconds"] = dict(self.stats.seconds)
            self.manifest.save()
        else:
            for key, value in self.manifest.data["normalized"].items():
                setattr(self.stats, key, value)
            self.stats.seconds.update(self.manifest.data.get("seconds", {}))
        consult = str(not self.options.new_ids_only).lower()
        if self.options.generate_only:
            self._job("generate", consult=consult)
            return self.stats
        if self.options.load_only:
            self._job("load")
        else:  # one JVM for both: a second would start, load its classes and connect again (#71's fixed cost)
            self._job("generate", consult=consult, **{"then-load": "true"})
        self.stats.loaded = True
        self.report(self.stats)
        if not self.options.keep_staging:
            shutil.rmtree(self.options.staging)
        return self.stats

    def _check_staging(self) -> None:
        identity = _identity(self.sources, self.options)
        saved = self.manifest.data.get("identity")
        if saved is None:
            if any(self.options.staging.iterdir()):
                raise BulkLoadError(f"staging directory {self.options.staging} is not empty and holds no load")
            self.manifest.data = {
                "version": _MANIFEST_VERSION,
                "identity": identity,
                "timestamp_ms": int(time.time() * 1000),
                "tables": self.tables,
            }
            self.manifest.save()
        elif self.manifest.data.get("version") != _MANIFEST_VERSION:
            raise BulkLoadError(
                f"staging directory {self.options.staging} was made by another version of hfile-load; remove it "
                "and load again"
            )
        elif saved != identity:
            raise BulkLoadError(
                f"staging directory {self.options.staging} belongs to another load: {saved} (this one: {identity}); "
                "remove it, or give another --staging"
            )

    def _job(self, command: str, **extra: str) -> None:
        args = {"staging": str(self.options.staging.resolve()), **self.tables, **extra}
        args["splits"] = str(self.options.splits)
        loads = command == "load" or extra.get("then-load") == "true"
        if loads and self.options.runner.kind == "yarn" and not self.options.keep_staging:
            args["remove-staging"] = "true"  # the HFiles are HBase's now; the rest on the cluster goes
        if command == "generate":
            args["timestamp"] = str(self.manifest.data["timestamp_ms"])
            args["part-rows"] = str(recipe_of(self.version).part_rows).lower()  # v7: DrawersJob writes them too
            if self.options.cluster_inputs is not None:
                args |= self._parse_args(self.options.cluster_inputs)
        step, started = command, time.monotonic()
        for event in self.options.runner.run(command, args, self.options.staging):
            if event.kind == "generated" and loads:  # the same JVM goes on to load: the seconds after are its
                ended = event_time(event, started)
                self._finished(step, started, ended)
                step, started = "load", ended
            self._take(event)
        self._finished(step, started)

    def _finished(self, step: str, started: float, ended: float | None = None) -> None:
        ended = time.monotonic() if ended is None else ended
        self.stats.seconds[step] = self.stats.seconds.get(step, 0.0) + ended - started
        self.manifest.data["seconds"] = dict(self.stats.seconds)
        self.manifest.data[step] = asdict(self.stats)
        self.manifest.save()

    def _parse_args(self, cluster: ClusterInputs) -> dict[str, str]:
        listed = self.options.staging / "inputs.txt"
        listed.write_text("".join(uri + "\n" for uri in cluster.uris))
        args = {
            "inputs": str(listed.resolve()),
            "rejects": cluster.rejects,
            "python": cluster.python,
            "task-args": "\t".join(cluster.task_args(self.version, self.retention_seconds)),
        }
        if self.options.max_rejects is not None:
            args["max-rejects"] = str(self.options.max_rejects)
        if cluster.env is not None:  # on YARN: the NodeManagers are checked with it first (NodeCheck)
            from simhash_server.bulk.file_task import pinned_probe

            args["env"] = str(cluster.env.resolve())
            args["probe"] = pinned_probe(self.version).replace("\n", "\\n")
        return args

    def _take(self, event: JobEvent) -> None:
        if event.kind == "progress":
            self.stats.phase = event.phase
            self.stats.progress = (event.data["map"] + event.data["reduce"]) / 2
        elif event.kind == "phase" and event.phase == "parse":
            counters = event.data["counters"]
            self.stats.lines = counters.get("LINES", 0)
            self.stats.records = counters.get("RECORDS", 0)
            self.stats.rejected = counters.get("REJECTED", 0)
            self.stats.task_python_cpu_seconds = counters.get("PYTHON_CPU_MILLISECONDS", 0) / 1000
            self.manifest.data["normalized"] = {k: getattr(self.stats, k) for k in ("lines", "records", "rejected")}
            self.manifest.save()
        elif event.kind == "phase" and event.phase == "docs":
            counters = event.data["counters"]
            self.stats.documents = counters.get("DOCUMENTS", 0)
            self.stats.repeated_ids = counters.get("REPEATED_IDS", 0)
            self.stats.present_same_fingerprint = counters.get("PRESENT_SAME_FINGERPRINT", 0)
            self.stats.moved = counters.get("MOVED", 0)
        if event.kind == "phase":
            self.stats.job_seconds[event.phase] = event.data["seconds"]
            cpu = event.data.get("counters", {}).get("CPU_MILLISECONDS", 0)
            if cpu and self.options.runner.kind == "yarn":
                # YARN's account: each task's process tree, sampled every few seconds, so a parse task's Python
                # is in it up to its last sample (the Python's own figure is task_python_cpu_seconds).
                self.stats.task_cpu_seconds[event.phase] = cpu / 1000
        elif event.kind == "checked":
            self.stats.nodes_checked = int(event.data["nodes"])
            self.stats.nodes_remembered = int(event.data.get("remembered", 0))
            self.stats.nodes_unchecked = [n for n in str(event.data.get("unchecked", "")).split(",") if n]
        elif event.kind == "loaded":
            self.stats.phase = f"loaded {event.phase}"
            self.stats.job_seconds[f"load {event.phase}"] = event.data.get("seconds", 0.0)
        self.report(self.stats)


def event_time(event: JobEvent, since: float) -> float:
    """When ``event`` happened, on this process's monotonic clock: its ``at_ms`` (the job's wall clock) where
    it has one, kept between ``since`` and now.  A driver in the cluster relays its lines a poll at a time, so
    a line's arrival can be seconds late, and two steps' ends arrive together."""
    now = time.monotonic()
    at_ms = event.data.get("at_ms")
    if not isinstance(at_ms, int | float):
        return now
    return min(now, max(since, now - (time.time() - at_ms / 1000)))


def _total_size(sources: list[InputSource]) -> int | None:
    sizes = [s.size for s in sources]
    return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)


def run_hfile_load(
    sources: list[InputSource],
    options: HFileLoadOptions,
    on_progress: Callable[[HFileLoadStats], None] = lambda s: None,
) -> HFileLoadStats:
    """Load every input through HFiles; returns the counters.  BulkLoadError when the load cannot go on
    (the staging directory is kept: run the same command again to continue)."""
    if not 1 <= options.splits <= 1024:
        raise ValueError(f"splits must be 1..1024, got {options.splits}")
    if options.generate_only and options.load_only:
        raise ValueError("--generate-only and --load-only exclude each other")
    return _Load(sources, options, on_progress).run()
