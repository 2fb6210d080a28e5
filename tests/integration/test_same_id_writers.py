"""Writers of one document id on two replicas at once leave exactly one consistent document per id: its
record, its fp2docs column and its drawer rows agree, and no column is left at a fingerprint it moved from
(index/writes.py).  16 callers hammer 50 ids with index, move and delete calls spread over both replicas."""

from __future__ import annotations

import random
import threading
import uuid

import pytest

from simhash_client import NotFound, SimHashClient
from simhash_server.index.gc import collect

SERVERS, CALLERS, IDS, CALLS, PLACES = 2, 16, 50, 60, 4


@pytest.fixture(scope="module")
def replicas(index, spawn_server):
    return [spawn_server(index.config.table_prefix, "--metrics-address", "")[1] for _ in range(SERVERS)]


@pytest.mark.parametrize("round_", range(3))
def test_many_writers_of_few_ids_on_two_replicas_leave_each_stored_once(index, replicas, round_) -> None:
    run = uuid.uuid4().hex[:8]
    rng = random.Random(run)
    ids = [f"{run}-{n}" for n in range(IDS)]
    places = {doc: [rng.getrandbits(64) for _ in range(PLACES)] for doc in ids}  # where each id may move
    failures: list[BaseException] = []

    def caller(n: int) -> None:
        mine = random.Random(f"{run}-{n}")
        clients = [SimHashClient(target, timeout=60, retries=3) for target in replicas]
        try:
            for call in range(CALLS):
                client = clients[(n + call) % SERVERS]
                doc = mine.choice(ids)
                kind = mine.random()
                if kind < 0.6:
                    client.index(doc, simhash=mine.choice(places[doc]))
                elif kind < 0.8:
                    several = mine.sample(ids, 5)
                    client.index_batch([{"doc_id": d, "simhash": mine.choice(places[d])} for d in several])
                else:
                    client.delete([doc])
        except BaseException as exc:  # noqa: BLE001 - reported below, with the others
            failures.append(exc)
        finally:
            for client in clients:
                client.close()

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []

    with SimHashClient(replicas[0]) as client:
        for doc in ids:
            try:
                recorded: int | None = client.get(doc)
            except NotFound:
                recorded = None
            at = [fp for fp in places[doc] if doc in {h.doc_id for h in client.query(simhash=fp, max_distance=0)}]
            assert at == ([recorded] if recorded is not None else []), f"{doc}: record {recorded}, found at {at}"
    report = collect(index, grace_seconds=0, dry_run=True)  # the whole index: every table against the others
    assert (report.ghost_columns_deleted, report.incomplete_made_whole) == (0, 0)
