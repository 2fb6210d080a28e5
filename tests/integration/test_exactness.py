"""Exactness on real HBase: 100,000 random fingerprints plus planted neighbours, checked against brute force,
one query at a time and with many at once (concurrent queries share their drawer scans)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, TypeVar

import numpy as np
import pytest
from observed import batches_observed

from simhash_server.index.async_store import AsyncIndexStore
from simhash_server.index.errors import DeadlineExceeded
from simhash_server.index.keys import drawer_prefixes
from simhash_server.index.model import Hit
from simhash_server.index.store import IndexStore

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
    batches_before, calls_before = batches_observed("queries")
    with ThreadPoolExecutor(32) as pool:
        answers = list(pool.map(loaded.store.query, probes))
    for probe, hits in zip(probes, answers, strict=True):
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)
    batches, calls = batches_observed("queries")
    assert calls - calls_before == len(probes)
    assert batches - batches_before < len(probes)  # some queries shared a batch of scans


def test_concurrent_single_document_writes_all_land(loaded: Loaded) -> None:
    store, rng = loaded.store, np.random.default_rng(7)
    writes = [(f"w{i}", int(v)) for i, v in enumerate(rng.integers(0, 2**64, size=300, dtype=np.uint64))]
    batches_before, calls_before = batches_observed("writes")
    with ThreadPoolExecutor(32) as pool:
        assert list(pool.map(lambda item: store.index_many([item]), writes)) == [1] * len(writes)
    batches, calls = batches_observed("writes")
    assert calls - calls_before == len(writes)
    assert batches - batches_before < len(writes)
    for doc, fp in writes:
        assert store.get(doc) == fp
        assert (doc, fp, 0) in [(h.doc_id, h.fingerprint, h.distance) for h in store.query(fp, max_distance=0)]


# -- serve's way: concurrent queries on an event loop, sharing batches (AsyncIndexStore) ----------------------
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

    return asyncio.run(main())


def test_queries_on_the_event_loop_find_exactly_what_brute_force_finds(loaded: Loaded) -> None:
    async def work(index: AsyncIndexStore) -> list[list[Hit]]:
        alone = [await index.query(probe) for probe in loaded.probes]
        together = await asyncio.gather(*(index.query(probe) for probe in loaded.probes * 3))
        return alone + list(together)

    answers = _on_a_loop(loaded.store, work)
    for probe, hits in zip(loaded.probes * 4, answers, strict=True):
        assert [(h.distance, h.doc_id) for h in hits] == loaded.expected(probe)


def test_a_query_on_the_event_loop_past_its_deadline_is_refused(loaded: Loaded) -> None:
    with pytest.raises(DeadlineExceeded):
        _on_a_loop(loaded.store, lambda index: index.query(loaded.probes[0], deadline=time.monotonic() - 1))
