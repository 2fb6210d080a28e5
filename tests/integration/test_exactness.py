"""Exactness on real HBase: 100,000 random fingerprints plus planted neighbours, checked against brute force,
one query at a time and with many at once (concurrent queries share their drawer scans)."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, TypeVar

import numpy as np
import pytest

from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.errors import DeadlineExceeded
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import Hit
from simhash_server.index.store import IndexStore
from simhash_server.metrics import BATCH_CALLS, CANDIDATES

R = TypeVar("R")
N_RANDOM = 100_000
N_PROBES = 40


class Loaded(NamedTuple):
    store: IndexStore
    probes: list[int]
    ids: list[str]
    fps: np.ndarray
    planted: dict[str, tuple[int, int]]  # doc id -> (probe index, distance)

    def expected(self, probe: int) -> list[tuple[int, str]]:
        distances = np.bitwise_count(self.fps ^ np.uint64(probe))
        return sorted((int(distances[i]), self.ids[i]) for i in np.nonzero(distances <= 3)[0])


def _flip_bits(rng: np.random.Generator, fp: int, k: int) -> int:
    for bit in rng.choice(64, size=k, replace=False):
        fp ^= 1 << int(bit)
    return fp


def _batches_observed(kind: str) -> tuple[float, float]:
    """(batches, calls) the store's coalescer has reported so far for ``kind``."""
    samples = {s.name: s.value for metric in BATCH_CALLS.collect() for s in metric.samples if s.labels["kind"] == kind}
    return samples.get("simhash_store_batch_calls_count", 0.0), samples.get("simhash_store_batch_calls_sum", 0.0)


def _candidates_counted() -> float:
    """Probes whose candidates the store has counted so far (the simhash_query_candidates histogram)."""
    return next(s.value for m in CANDIDATES.collect() for s in m.samples if s.name.endswith("_count"))


@pytest.fixture(scope="module")
def loaded(make_index) -> Loaded:
    store = make_index(regions=8, wal=False, pool_size=8)
    rng = np.random.default_rng(20261121)
    random_fps = [int(v) for v in rng.integers(0, 2**64, size=N_RANDOM, dtype=np.uint64)]
    probes = [int(v) for v in rng.integers(0, 2**64, size=N_PROBES, dtype=np.uint64)]
    planted: dict[str, tuple[int, int]] = {}
    items = [(f"r{i}", fp) for i, fp in enumerate(random_fps)]
    for p, probe in enumerate(probes):
        for distance in (0, 1, 2, 3, 4, 5, 6):
            doc = f"p{p}d{distance}"
            planted[doc] = (p, distance)
            items.append((doc, _flip_bits(rng, probe, distance)))
    with ThreadPoolExecutor(4) as pool:  # concurrent writers: their batches may be written together
        list(pool.map(store.index_many, (items[start : start + 5000] for start in range(0, len(items), 5000))))
    ids = [doc for doc, _ in items]
    return Loaded(store, probes, ids, np.array([fp for _, fp in items], dtype=np.uint64), planted)


def test_drawer_index_finds_exactly_what_brute_force_finds(loaded: Loaded) -> None:
    for p, probe in enumerate(loaded.probes):
        hits = loaded.store.query(probe)
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
        found = {h.doc_id for h in hits}
        for doc, (q, distance) in loaded.planted.items():
            if q == p:
                assert (doc in found) == (distance <= 3), (doc, distance)
    # every document landed, whichever writer's batch carried it
    assert loaded.store.count_documents() == len(loaded.ids)


@pytest.mark.parametrize(
    "cached_starts",
    [
        pytest.param(lambda probe: [], id="one region cached, eight now (the table split since)"),
        pytest.param(  # every prefix a scan of its own: 10 scans, more than the store's 8 connections (waves)
            lambda probe: sorted(drawer_prefixes(probe)), id="a region per prefix cached, eight now"
        ),
        pytest.param(lambda probe: [b"\x12\x34", b"\x9a\xbc\xde"], id="boundaries that never existed"),
    ],
)
def test_stale_region_boundaries_cost_scans_never_rows(
    loaded: Loaded, monkeypatch, cached_starts: Callable[[int], list[bytes]]
) -> None:
    # A query groups its prefixes by the region starts it cached (for a minute); the regions may have split
    # or merged since (a new index's one drawer region splits as it grows).  However the prefixes are grouped,
    # every group's scan must be read in full, wherever its rows now lie.
    for probe in loaded.probes:
        monkeypatch.setattr(loaded.store.scans, "region_starts", lambda deadline, p=probe: cached_starts(p))
        assert [(h.distance, h.doc_id) for h in loaded.store.query(probe)] == loaded.expected(probe)


def test_concurrent_queries_share_scans_and_each_gets_its_own_answer(loaded: Loaded) -> None:
    probes = loaded.probes * 5  # 200 queries from 32 threads, each probe's answer checked
    batches_before, calls_before = _batches_observed("queries")
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(loaded.store.query, probes))
    for probe, hits in zip(probes, answers, strict=True):
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    batches, calls = _batches_observed("queries")
    assert calls - calls_before == len(probes)
    assert batches - batches_before < len(probes)  # some queries shared a batch of scans


def test_concurrent_single_document_writes_all_land(loaded: Loaded) -> None:
    store, rng = loaded.store, np.random.default_rng(7)
    writes = [(f"w{i}", int(v)) for i, v in enumerate(rng.integers(0, 2**64, size=300, dtype=np.uint64))]
    batches_before, calls_before = _batches_observed("writes")
    with ThreadPoolExecutor(32) as pool:
        assert list(pool.map(lambda item: store.index_many([item]), writes)) == [1] * len(writes)
    batches, calls = _batches_observed("writes")
    assert calls - calls_before == len(writes)
    assert batches - batches_before < len(writes)
    for doc, fp in writes:
        assert store.get(doc) == fp
        assert (doc, fp, 0) in [(h.doc_id, h.fingerprint, h.distance) for h in store.query(fp, max_distance=0)]


# -- serve's way: a batch of queries read on the event loop (loop_reads.py) ---------------------------------
def _on_a_loop(store: IndexStore, work: Callable[[AsyncIndexStore], Awaitable[R]]) -> R:
    """``work(index)`` with an AsyncIndexStore over ``store`` on a new event loop (the store stays open)."""

    async def main() -> R:
        with ThreadPoolExecutor(4) as executor:
            index = AsyncIndexStore(store, executor)
            try:
                return await work(index)
            finally:
                index._nearby.close()
                index._writes.close()
                assert index._reads is not None
                index._reads.close()

    return asyncio.run(main())


def _in_threads(store: IndexStore, monkeypatch) -> list[list]:
    """Records each batch answered in a thread (the store's blocking path) instead of on the loop."""
    batches: list[list] = []
    near_many = store.near_many

    def recorded(probes, deadline):
        batches.append(list(probes))
        return near_many(probes, deadline)

    monkeypatch.setattr(store, "near_many", recorded)
    return batches


def _fresh_region_starts(store: IndexStore, monkeypatch) -> None:
    """The store's region starts, read now and kept fresh however long the test takes (the cache lasts a
    minute): the loop's common path, whatever the machine's speed."""
    starts = store.scans.region_starts(None)
    monkeypatch.setattr(store.scans, "cached_region_starts", lambda: starts)


def test_queries_read_on_the_event_loop_find_exactly_what_brute_force_finds(loaded: Loaded, monkeypatch) -> None:
    _fresh_region_starts(loaded.store, monkeypatch)
    in_threads = _in_threads(loaded.store, monkeypatch)

    async def work(index: AsyncIndexStore) -> list[list[Hit]]:
        alone = [await index.query(probe) for probe in loaded.probes]
        together = await asyncio.gather(*(index.query(probe) for probe in loaded.probes * 3))
        return alone + list(together)

    answers = _on_a_loop(loaded.store, work)
    for probe, hits in zip(loaded.probes * 4, answers, strict=True):
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    assert in_threads == []


def test_queries_on_the_event_loop_read_in_waves_when_scans_outnumber_connections(loaded: Loaded, monkeypatch) -> None:
    in_threads = _in_threads(loaded.store, monkeypatch)
    for probe in loaded.probes[:10]:  # a region per prefix: 10 scans, 8 connections
        starts = sorted(drawer_prefixes(probe))
        monkeypatch.setattr(loaded.store.scans, "cached_region_starts", lambda s=starts: s)
        hits = _on_a_loop(loaded.store, lambda index, p=probe: index.query(p))
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    assert in_threads == []


def test_a_fingerprint_shared_by_thousands_of_documents_is_answered_whole_on_the_event_loop(
    make_index, monkeypatch
) -> None:
    # Their fp2docs reply (about 300 KB) arrives in several reads: all of it is answered, never a part.
    store = make_index(regions=1, wal=False)
    shared = 0x0123_4567_89AB_CDEF
    docs = sorted(f"shared-{i:05d}" for i in range(6000))
    store.index_many([(doc, shared) for doc in docs])
    store.index_many([("one-bit-away", shared ^ 1)])
    _fresh_region_starts(store, monkeypatch)
    in_threads = _in_threads(store, monkeypatch)

    async def work(index: AsyncIndexStore) -> tuple[list[Hit], list[Hit]]:
        return await index.query(shared ^ 1), await index.query(shared, limit=10)

    everything, first_ten = _on_a_loop(store, work)
    assert [(h.distance, h.doc_id) for h in everything] == [(0, "one-bit-away")] + [(1, doc) for doc in docs]
    assert [h.doc_id for h in first_ten] == docs[:10]
    assert in_threads == []


def test_stale_region_boundaries_on_the_event_loop_go_to_a_thread_which_refreshes_them(
    loaded: Loaded, monkeypatch
) -> None:
    in_threads = _in_threads(loaded.store, monkeypatch)
    monkeypatch.setattr(loaded.store.scans, "_regions", None)  # as a minute after the last refresh
    probe = loaded.probes[0]
    hits = _on_a_loop(loaded.store, lambda index: index.query(probe))
    assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    assert [[p.fingerprint for p in batch] for batch in in_threads] == [[probe]]
    assert loaded.store.scans.cached_region_starts() is not None


def test_a_broken_loop_connection_costs_one_batch_a_thread_never_an_answer(loaded: Loaded, monkeypatch) -> None:
    _fresh_region_starts(loaded.store, monkeypatch)
    in_threads = _in_threads(loaded.store, monkeypatch)
    first, second, third = loaded.probes[:3]

    async def work(index: AsyncIndexStore) -> list[list[Hit]]:
        answers = [await index.query(first)]
        assert index._reads is not None
        idle = index._reads._thrift._idle
        assert idle, "the first query left its connections idle"
        for conn in idle:  # as a gateway restart, or its idle timeout, leaves them
            conn.writer.transport.abort()
        answers.append(await index.query(second))  # fails on the loop, answered in a thread
        answers.append(await index.query(third))  # fresh connections: the loop again
        return answers

    answers = _on_a_loop(loaded.store, work)
    for probe, hits in zip((first, second, third), answers, strict=True):
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    assert [[p.fingerprint for p in batch] for batch in in_threads] == [[second]]


def test_a_batch_the_event_loop_gives_up_on_after_its_scans_is_counted_once(loaded: Loaded, monkeypatch) -> None:
    # The fp2docs read fails on the loop: the batch is read again in a thread, and its candidates (a
    # histogram operators watch) are counted for the one answer, not for both tries.
    _fresh_region_starts(loaded.store, monkeypatch)
    in_threads = _in_threads(loaded.store, monkeypatch)
    probe = next(p for p in loaded.probes if loaded.expected(p))  # one with hits: the loop reads fp2docs
    counted_before = _candidates_counted()

    async def work(index: AsyncIndexStore) -> list[Hit]:
        assert index._reads is not None
        thrift = index._reads._thrift
        calls = thrift.calls

        async def fp2docs_fails(requests, deadline):
            if requests[0][0] in ("get", "getMultiple"):
                raise EOFError("the Thrift2 gateway closed the connection")
            return await calls(requests, deadline)

        monkeypatch.setattr(thrift, "calls", fp2docs_fails)
        return await index.query(probe)

    hits = _on_a_loop(loaded.store, work)
    assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    assert [[p.fingerprint for p in batch] for batch in in_threads] == [[probe]]
    assert _candidates_counted() - counted_before == 1


def test_an_unreachable_gateway_on_the_event_loop_is_answered_in_a_thread(loaded: Loaded, monkeypatch) -> None:
    _fresh_region_starts(loaded.store, monkeypatch)
    in_threads = _in_threads(loaded.store, monkeypatch)
    probe = loaded.probes[1]

    async def work(index: AsyncIndexStore) -> list[Hit]:
        assert index._reads is not None
        with socket.socket() as unused:  # a port nothing listens on
            unused.bind(("127.0.0.1", 0))
            index._reads._thrift.port = unused.getsockname()[1]
        return await index.query(probe)

    hits = _on_a_loop(loaded.store, work)
    assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    assert len(in_threads) == 1


def test_a_query_on_the_event_loop_past_its_deadline_is_refused(loaded: Loaded) -> None:
    with pytest.raises(DeadlineExceeded):
        _on_a_loop(loaded.store, lambda index: index.query(loaded.probes[0], deadline=time.monotonic() - 1))
