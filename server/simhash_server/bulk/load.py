"""Bulk load: input records -> the index in HBase, from worker processes, resumable after a kill.

The reading process parses the input in chunks of ``batch_size * workers`` lines and deals each chunk's
records to the workers by a hash of the document id, so every record of one id goes to one worker and is
written in input order (the last line of an id wins, as with repeated ``Index`` calls).  Each worker owns
its own Thrift connections and writes its share with the store code the server uses (``index_many``);
texts are fingerprinted there, with the server's recipe.

Checkpoint: a chunk is committed once every worker holding part of it has written it; only then are its
rejects appended to the reject file and the checkpoint (input position, counters, reject file size) is
replaced atomically.  Workers take chunks in order, so committed chunks are always a prefix of the input.
A killed load resumes at the checkpoint and re-sends at most the chunks in flight; writes are idempotent.

One load per checkpoint: the loader and each worker hold a lock on ``<checkpoint>.lock`` (exclusive while
the loader checks it, then shared).  A resumed load waits until every worker of a killed one has exited
(they notice within a second and finish at most the batch in hand), so no stale write can land after a
newer one for the same document.
"""

from __future__ import annotations

import fcntl
import os
import queue
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from simhash_schema import index_tables
from simhash_server.bulk.checkpoint import (
    CHECKPOINT_VERSION,
    BulkLoadError,
    Position,
    lock,
    read_checkpoint,
    write_checkpoint,
)
from simhash_server.bulk.input import InputSource
from simhash_server.bulk.records import Record, Reject
from simhash_server.bulk.workers import Workers
from simhash_server.index.store import IndexStore, StoreConfig

__all__ = ["BulkLoadError", "LoadOptions", "LoadStats", "run_load"]


@dataclass
class LoadOptions:
    store: StoreConfig
    checkpoint: Path
    rejects: Path
    workers: int = 2
    batch_size: int = 5_000
    resume: bool = False
    max_rejects: int | None = None
    flush: Callable[[list[str]], None] | None = None  # ends a --no-wal load


@dataclass
class LoadStats:
    file_bytes_read: int = 0  # of the input files as stored (compressed), for the ETA
    total_bytes: int | None = None
    lines: int = 0
    documents: int = 0
    rows: int = 0
    rejected: int = 0
    elapsed: float = 0.0
    resumed_at_line: int = 0
    complete: bool = False
    previous_documents: int = 0  # loaded by earlier runs of a resumed load
    previous_rows: int = 0

    @property
    def documents_per_second(self) -> float:
        return (self.documents - self.previous_documents) / self.elapsed if self.elapsed else 0.0

    @property
    def rows_per_second(self) -> float:
        return (self.rows - self.previous_rows) / self.elapsed if self.elapsed else 0.0


@dataclass
class _Chunk:
    seq: int
    end: Position
    lines: int
    rejects: list[Reject]
    source: str
    waiting: set[int] = field(default_factory=set)
    documents: int = 0
    rows: int = 0


def _identity(sources: list[InputSource], options: LoadOptions) -> dict[str, Any]:
    return {
        "inputs": [s.identity() for s in sources],
        "table_prefix": options.store.table_prefix,
        "formats": [s.format for s in sources],
    }


# -- the load ----------------------------------------------------------------------------------------------
class _Load:
    def __init__(
        self, sources: list[InputSource], options: LoadOptions, on_progress: Callable[[LoadStats], None]
    ) -> None:
        self.sources, self.options, self.on_progress = sources, options, on_progress
        self.stats = LoadStats(total_bytes=_total_size(sources))
        self.identity = _identity(sources, options)
        self.position = Position()
        self.pending: deque[_Chunk] = deque()
        self.rejects_file: Any = None
        self.started = time.monotonic()
        self.last_report = 0.0
        self.base_bytes = 0  # file bytes of inputs before the current one
        self.current_bytes = 0

    def restore(self) -> None:
        saved = read_checkpoint(self.options.checkpoint)
        if saved is not None and not self.options.resume and not saved.get("complete"):
            raise BulkLoadError(
                f"an unfinished load left a checkpoint at {self.options.checkpoint} (line {saved['line']} of "
                f"input {saved['source'] + 1}); pass --resume to continue it, or delete the file to start over"
            )
        if not self.options.resume or saved is None:
            self.rejects_file = open(self.options.rejects, "w", encoding="utf-8")  # noqa: SIM115
            return
        if saved["identity"] != self.identity:
            raise BulkLoadError(
                f"checkpoint {self.options.checkpoint} belongs to another load: {saved['identity']} "
                f"(this one: {self.identity})"
            )
        self.position = Position(saved["source"], saved["offset"], saved["line"])
        for source, decided in zip(self.sources, saved["fingerprint_formats"], strict=True):
            source.decided_format = decided
        for name in ("lines", "documents", "rows", "rejected"):
            setattr(self.stats, name, saved["stats"][name])
        self.stats.resumed_at_line = saved["line"]
        self.stats.previous_documents, self.stats.previous_rows = self.stats.documents, self.stats.rows
        self.stats.complete = saved.get("complete", False)
        self.rejects_file = open(self.options.rejects, "a+", encoding="utf-8")  # noqa: SIM115
        self.rejects_file.truncate(saved["rejects_bytes"])  # drop rejects of chunks that were not committed
        self.rejects_file.seek(saved["rejects_bytes"])

    def chunks(self) -> Iterator[tuple[_Chunk, list[list[tuple[str, int | None, str | None, int | None, bytes]]]]]:
        workers, size = self.options.workers, self.options.batch_size * self.options.workers
        seq = 0
        for index in range(self.position.source, len(self.sources)):
            source = self.sources[index]
            start = self.position if index == self.position.source else Position(index)
            self.base_bytes = sum(s.size or 0 for s in self.sources[:index])
            shares: list[list[tuple[str, int | None, str | None, int | None, bytes]]]
            shares = [[] for _ in range(workers)]
            rejects: list[Reject] = []
            lines, line, offset = 0, start.line, start.offset
            for item, offset, self.current_bytes in source.records(start.offset, start.line):
                lines += 1
                line = item.line + 1
                if isinstance(item, Record):
                    share = shares[zlib.crc32(item.doc_id.encode()) % workers]
                    share.append((item.doc_id, item.simhash, item.text, item.indexed_at_ms, item.sketch))
                else:
                    rejects.append(item)
                if lines >= size:
                    yield _Chunk(seq, Position(index, offset, line), lines, rejects, source.path), shares
                    seq += 1
                    shares, rejects, lines = [[] for _ in range(workers)], [], 0
            yield _Chunk(seq, Position(index + 1, 0, 1), lines, rejects, source.path), shares
            seq += 1

    def run(self) -> LoadStats:
        lock_path = self.options.checkpoint.with_name(self.options.checkpoint.name + ".lock")
        lock_fd = lock(lock_path, shared=False, timeout=60.0)
        try:
            self.restore()
            if self.stats.complete:
                self.rejects_file.close()
                return self.stats
            # Refuses a missing schema or an unknown fingerprint version before any worker starts; JSON lines
            # naming a fingerprint version are checked against the index's, and dated lines against its
            # retention.
            with IndexStore(replace(self.options.store, pool_size=1)) as store:
                for source in self.sources:
                    source.fingerprint_version = store.recipe.version
                    source.retention_seconds = store.retention_seconds
            fcntl.flock(lock_fd, fcntl.LOCK_SH)  # now the workers may take it too
            return self._run(lock_path)
        finally:
            os.close(lock_fd)

    def _run(self, lock_path: Path) -> LoadStats:
        self.workers = Workers(self.options.workers, self.options.store, lock_path)
        try:
            for chunk, shares in self.chunks():
                chunk.waiting = {worker for worker, share in enumerate(shares) if share}  # before any ack arrives
                self.pending.append(chunk)
                for worker, share in enumerate(shares):
                    if share:
                        self.workers.send(worker, (chunk.seq, share), self.poll)
                self.poll()
            while self.pending:
                self.poll(block=True)
            self.workers.stop()
        except BaseException:
            self.workers.kill()
            raise
        finally:
            self.rejects_file.close()
        if not self.options.store.wal and self.options.flush is not None:
            tables = index_tables(self.options.store.table_prefix)
            self.options.flush([spec.name for spec in (tables.drawers, tables.fp2docs, tables.docs)])
        self.stats.complete = True
        self.save()
        self.report(force=True)
        return self.stats

    def poll(self, block: bool = False) -> None:
        """Take worker reports; commit the finished prefix of chunks; report progress."""
        self.workers.check_alive()
        while True:
            try:
                message = self.workers.results.get(timeout=0.2 if block else 0)
            except queue.Empty:
                break
            kind, worker, seq = message[:3]
            if kind == "error":
                raise BulkLoadError(f"worker {worker} failed: {message[3]}")
            for chunk in self.pending:
                if chunk.seq == seq:
                    chunk.waiting.discard(worker)
                    chunk.documents += message[3]
                    chunk.rows += message[4]
            block = False
        committed = False
        while self.pending and not self.pending[0].waiting:
            self.commit(self.pending.popleft())
            committed = True
        if committed:
            self.save()
        self.report()

    def commit(self, chunk: _Chunk) -> None:
        for r in chunk.rejects:
            self.rejects_file.write(f"{chunk.source}\t{r.line}\t{r.reason}\t{r.raw}\n")
        self.stats.lines += chunk.lines
        self.stats.documents += chunk.documents
        self.stats.rows += chunk.rows
        self.stats.rejected += len(chunk.rejects)
        self.position = chunk.end
        limit = self.options.max_rejects
        if limit is not None and self.stats.rejected > limit:
            self.rejects_file.flush()
            self.save()
            raise BulkLoadError(
                f"{self.stats.rejected} lines rejected, over --max-rejects {limit}; see {self.options.rejects}"
            )

    def save(self) -> None:
        if not self.rejects_file.closed:  # closed at the end, when its size is final
            self.rejects_file.flush()
            os.fsync(self.rejects_file.fileno())
        self.stats.elapsed = time.monotonic() - self.started
        write_checkpoint(
            self.options.checkpoint,
            {
                "version": CHECKPOINT_VERSION,
                "identity": self.identity,
                "source": self.position.source,
                "offset": self.position.offset,
                "line": self.position.line,
                "fingerprint_formats": [s.decided_format for s in self.sources],
                "rejects_bytes": os.path.getsize(self.options.rejects),
                "wal": self.options.store.wal,
                "complete": self.stats.complete,
                "stats": asdict(self.stats),
            },
        )

    def report(self, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self.last_report >= 0.5:
            self.last_report = now
            self.stats.elapsed = now - self.started
            self.stats.file_bytes_read = self.base_bytes + self.current_bytes
            self.on_progress(self.stats)


def _total_size(sources: list[InputSource]) -> int | None:
    sizes = [s.size for s in sources]
    return None if any(s is None for s in sizes) else sum(s or 0 for s in sizes)


def run_load(
    sources: list[InputSource], options: LoadOptions, on_progress: Callable[[LoadStats], None] = lambda s: None
) -> LoadStats:
    """Load every input; returns the final counters.  BulkLoadError when the load cannot go on."""
    if options.workers < 1:
        raise ValueError(f"workers must be >= 1, got {options.workers}")
    if options.batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {options.batch_size}")
    return _Load(sources, options, on_progress).run()
