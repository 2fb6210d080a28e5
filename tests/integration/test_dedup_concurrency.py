"""Deduplicate is atomic across replicas: near-duplicates sent at once to two server processes on one index
store exactly one of each group, and every other call is told which document it duplicates."""

from __future__ import annotations

import itertools
import queue
import random
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from simhash_client import SimHashClient

CLI = str(Path(sys.executable).with_name("simhash-index"))
SERVERS, CALLERS, GROUPS, ROUNDS = 2, 16, 200, 2
VARIANTS = ("{}", "{}（转载）", "{}（完）", "【转】{}")  # pairwise near-duplicates: one short edit each


def article(seed: str) -> str:
    rng = random.Random(seed)
    return "。".join("".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(20)) for _ in range(40))


def near_duplicates(seed: str) -> bool:
    """Whether every two variants of the article are duplicates by the service's own test, asked one at a
    time: within distance 3 and verified at the default floor.  About 1 group in 70 has a pair the edits
    push past distance 3 (the fingerprint's recall, docs/accuracy.md), where storing both is right."""
    from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint, recipe_of
    from simhash_server.fingerprint.sketch import similarity

    floor = recipe_of(FINGERPRINT_VERSION).dedup_floor
    prints = [fingerprint(v.format(article(seed)), sketch=True) for v in VARIANTS]
    return all(
        (a.value ^ b.value).bit_count() <= 3 and similarity(a.sketch, b.sketch) >= floor
        for n, a in enumerate(prints)
        for b in prints[n + 1 :]
    )


@pytest.fixture(scope="module")
def replicas(index, spawn_server):
    """Two `simhash-index serve` processes on the module's index, like two replicas behind a balancer."""
    return [spawn_server(index.config.table_prefix, "--metrics-address", "")[1] for _ in range(SERVERS)]


@pytest.mark.slow("800 Deduplicate calls by 16 callers over 2 server replicas, each claiming, reading and writing")
@pytest.mark.parametrize("round_", range(ROUNDS))
def test_concurrent_near_duplicates_store_exactly_one_per_group(replicas, round_) -> None:
    run = uuid.uuid4().hex[:8]
    seeds = (f"{run}-{n}" for n in itertools.count())
    texts = {g: article(seed) for g, seed in zip(range(GROUPS), filter(near_duplicates, seeds), strict=False)}
    # Group-major order: the variants of a group are taken by different callers at the same moment.
    tasks: queue.Queue[tuple[int, int]] = queue.Queue()
    for g in range(GROUPS):
        for v in range(len(VARIANTS)):
            tasks.put((g, v))
    answers: dict[tuple[int, int], object] = {}

    def caller(n: int) -> None:
        clients = [SimHashClient(target, timeout=60, retries=3) for target in replicas]
        try:
            while True:
                try:
                    g, v = tasks.get_nowait()
                except queue.Empty:
                    return
                doc_id = f"{run}-{g}-{v}"
                text = VARIANTS[v].format(texts[g])
                answers[(g, v)] = clients[(n + v) % SERVERS].deduplicate(doc_id, text=text)
        finally:
            for client in clients:
                client.close()

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == GROUPS * len(VARIANTS), "a caller failed"

    stored_per_group = Counter(g for (g, _), answer in answers.items() if answer.stored)
    assert [g for g in range(GROUPS) if stored_per_group[g] != 1] == [], stored_per_group
    for (g, v), answer in answers.items():
        if not answer.stored:
            (winner,) = [w for w in range(len(VARIANTS)) if answers[(g, w)].stored]
            assert f"{run}-{g}-{winner}" in [h.doc_id for h in answer.hits], (g, v)


BATCH = 12


def test_concurrent_batches_on_two_replicas_store_exactly_one_per_group(replicas) -> None:
    """DeduplicateBatch keeps the rule across batches and inside them: the variants of a group are spread
    over batches sent at once to both replicas, some landing in one batch together."""
    run = uuid.uuid4().hex[:8]
    seeds = (f"{run}-b{n}" for n in itertools.count())
    groups = GROUPS // 2
    texts = {g: article(seed) for g, seed in zip(range(groups), filter(near_duplicates, seeds), strict=False)}
    items = [(g, v) for g in range(groups) for v in range(len(VARIANTS))]
    random.Random(run).shuffle(items)
    batches: queue.Queue[list[tuple[int, int]]] = queue.Queue()
    for start in range(0, len(items), BATCH):
        batches.put(items[start : start + BATCH])
    answers: dict[tuple[int, int], object] = {}

    def caller(n: int) -> None:
        with SimHashClient(replicas[n % SERVERS], timeout=120, retries=3) as client:
            while True:
                try:
                    batch = batches.get_nowait()
                except queue.Empty:
                    return
                documents = [{"doc_id": f"{run}-{g}-{v}", "text": VARIANTS[v].format(texts[g])} for g, v in batch]
                for key, outcome in zip(batch, client.deduplicate_batch(documents), strict=True):
                    answers[key] = outcome.result

    threads = [threading.Thread(target=caller, args=(n,)) for n in range(CALLERS // 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(answers) == len(items), "a caller failed"
    together = sum(
        len({g for g, _ in items[s : s + BATCH]}) < len(items[s : s + BATCH]) for s in range(0, len(items), BATCH)
    )
    assert together > 0  # some batch holds two variants of one group: the rule inside a batch was exercised
    stored_per_group = Counter(g for (g, _), answer in answers.items() if answer.stored)
    assert [g for g in range(groups) if stored_per_group[g] != 1] == [], stored_per_group
    for (g, v), answer in answers.items():
        if not answer.stored:
            (winner,) = [w for w in range(len(VARIANTS)) if answers[(g, w)].stored]
            assert f"{run}-{g}-{winner}" in [h.doc_id for h in answer.hits], (g, v)


def test_a_claim_blocks_near_fingerprints_until_released_and_no_others(make_index, base) -> None:
    from simhash_server.index.errors import DeadlineExceeded

    store = make_index()
    held = store.claim(base)
    try:
        with pytest.raises(DeadlineExceeded):
            store.claim(base ^ 0b111, deadline=time.monotonic() + 0.3)  # within 3: shares a drawer
        far = base ^ ((1 << 64) - 1)  # every segment differs: no drawer in common
        store.release(store.claim(far, deadline=time.monotonic() + 30))
    finally:
        store.release(held)
    store.release(store.claim(base ^ 0b111, deadline=time.monotonic() + 30))  # free again once released


def _rows_held_by(store, fp: int, owner: bytes) -> list[bytes]:
    """The claim rows of ``fp``'s drawer prefixes that ``owner`` holds a mark on, read from the claims table."""
    from simhash_schema import hbase2
    from simhash_server.index.keys import drawer_prefixes

    t, table = hbase2(), store.tables.claims.name.encode()
    rows = sorted(set(drawer_prefixes(fp)))
    got = store.thrift2.run(lambda c: c.getMultiple(table, [t.TGet(row=row) for row in rows]))
    return [
        row
        for row, r in zip(rows, got, strict=True)
        if any(cv.qualifier == b"i" + owner and cv.value for cv in r.columnValues or ())
    ]


def _deadline_after(store, calls: int):
    """A runner for claims.claim: the store's own, except that calls bound by a deadline fail with
    DeadlineExceeded after the first ``calls`` of them, as when a caller's deadline passes half-way."""
    from simhash_server.index.errors import DeadlineExceeded

    made = itertools.count()

    def run(call, *, deadline=None):
        if deadline is not None and next(made) >= calls:
            raise DeadlineExceeded("the test's deadline")
        return store.thrift2.run(call, deadline=deadline)

    return run


def test_a_claim_whose_deadline_passes_half_way_leaves_no_row_claimed(make_index, base) -> None:
    from simhash_server.index.claims import claim, new_owner
    from simhash_server.index.errors import DeadlineExceeded

    store = make_index()
    near, table = base ^ 0b111, store.tables.claims.name.encode()
    held = store.claim(base)
    try:
        owner = new_owner()
        # Every row marked and read at once: those before the first of base's rows kept, the rest unmarked; then
        # the wait for that row fails at the deadline, so the kept ones go back only if giving back is not
        # bound by it (it once was).
        with pytest.raises(DeadlineExceeded):
            claim(_deadline_after(store, 1), table, near, owner, time.monotonic() + 600)
        assert _rows_held_by(store, near, owner) == []
        # The deadline passing inside the first try, once its marks are written: all taken back.
        owner = new_owner()
        far = base ^ ((1 << 64) - 1)  # no drawer in common with base: every row would be taken
        with pytest.raises(DeadlineExceeded):
            claim(_marked_then_late(store), table, far, owner, time.monotonic() + 600)
        assert _rows_held_by(store, far, owner) == []
    finally:
        store.release(held)
    assert _rows_held_by(store, base, held.owner) == []


def _marked_then_late(store):
    """A runner for claims.claim whose calls bound by a deadline write what they write and then fail with
    DeadlineExceeded, as when the deadline passes while HBase answers."""
    from simhash_server.index.errors import DeadlineExceeded

    def run(call, *, deadline=None):
        result = store.thrift2.run(call, deadline=deadline)
        if deadline is not None:
            raise DeadlineExceeded("the test's deadline")
        return result

    return run


class _Noting:
    """A Thrift2 client that notes the name of every call made through it."""

    def __init__(self, client, made: list[str]) -> None:
        self.client, self.made = client, made

    def __getattr__(self, name: str):
        self.made.append(name)
        return getattr(self.client, name)


def _counted(store, made: list[str]):
    """The store's runner for claims.claim/release, noting every Thrift2 call it makes in ``made``."""
    return lambda call, *, deadline=None: store.thrift2.run(lambda c: call(_Noting(c, made)), deadline=deadline)


def test_a_claim_released_within_the_hold_limit_is_freed_by_one_call(make_index, base) -> None:
    from simhash_server.index.claims import claim, new_owner, release

    store = make_index()
    table = store.tables.claims.name.encode()
    held = claim(store.thrift2.run, table, [base, base ^ (1 << 63)], new_owner(), None)
    assert len(_rows_held_by(store, base, held.owner)) == 10
    made: list[str] = []
    release(_counted(store, made), table, held)
    assert made == ["putMultiple"]
    assert _rows_held_by(store, base, held.owner) == [] and _rows_held_by(store, base ^ (1 << 63), held.owner) == []
    made.clear()
    far = claim(_counted(store, made), table, base ^ ((1 << 64) - 1), new_owner(), None)
    assert made == ["putMultiple", "getMultiple"]  # taken by one mark and one read
    release(store.thrift2.run, table, far)
    store.release(store.claim(base ^ 0b111, deadline=time.monotonic() + 30))  # near ones are free to go


def test_a_claim_past_the_hold_limit_frees_only_the_rows_still_its_own(make_index, base) -> None:
    """A holder past the limit may have lost a row to a lapsed lease: another call's claim there stays."""
    import dataclasses

    from simhash_server.index.claims import HOLD_LIMIT_SECONDS, _mark, claim, new_owner, release
    from simhash_server.index.errors import DeadlineExceeded

    store = make_index()
    table = store.tables.claims.name.encode()
    held = claim(store.thrift2.run, table, base, new_owner(), None)
    other, lost = new_owner(), held.rows[3]
    store.thrift2.run(lambda c: _mark(c, table, [lost], other, b"\x01"))  # as if held's lease there had lapsed
    stale = dataclasses.replace(held, began=held.began - HOLD_LIMIT_SECONDS)
    made: list[str] = []
    release(_counted(store, made), table, stale)
    assert made == ["putMultiple"]
    assert _rows_held_by(store, base, held.owner) == [] and _rows_held_by(store, base, other) == [lost]
    with pytest.raises(DeadlineExceeded):  # the other call's row is still its own
        store.claim(base, deadline=time.monotonic() + 0.3)
    store.thrift2.run(lambda c: _mark(c, table, [lost], other, b""))  # the other call's release


def test_a_claim_of_an_earlier_version_is_waited_for(make_index, base) -> None:
    """A server of an earlier version claims a row by one cell naming its holder, emptied on release: a
    claim of this version waits for it, and takes the row once it is emptied."""
    from simhash_schema import hbase2
    from simhash_server.index.errors import DeadlineExceeded
    from simhash_server.index.keys import drawer_prefixes

    store = make_index()
    t, table = hbase2(), store.tables.claims.name.encode()
    # A row the claim below takes (base ^ 1 keeps the 6 drawers without the last segment), from the middle of
    # its order, so that rows before it are marked first and must be unmarked.
    shared = sorted(set(drawer_prefixes(base)) & set(drawer_prefixes(base ^ 0b1)))
    assert len(shared) == 6
    row = shared[len(shared) // 2]

    def earlier(holder: bytes) -> None:
        cell = t.TColumnValue(family=b"d", qualifier=b"o", value=holder)
        store.thrift2.run(lambda c: c.put(table, t.TPut(row=row, columnValues=[cell])))

    earlier(b"an earlier server's call")
    with pytest.raises(DeadlineExceeded):
        store.claim(base ^ 0b1, deadline=time.monotonic() + 0.3)
    earlier(b"")  # released
    store.release(store.claim(base ^ 0b1, deadline=time.monotonic() + 30))


def test_an_index_without_the_claims_table_says_to_apply_the_schema(make_index, hbase, base) -> None:
    from simhash_schema import SchemaError

    store = make_index()
    conn = hbase.connection()
    try:
        conn.delete_table(store.tables.claims.name, disable=True)  # an index made before claims existed
    finally:
        conn.close()
    with pytest.raises(SchemaError, match="simhash-index schema apply"):
        store.claim(base, deadline=time.monotonic() + 30)
    store.open()  # everything but Deduplicate still works
    store.index_many([("unclaimed", base)])
    assert [n.doc_id for n in store.query(base, 0)] == ["unclaimed"]


def test_claims_given_back_after_the_answer_are_waited_for_by_a_stopping_server(make_index, base) -> None:
    """The release runs after the answer, in the executor; a server that stops waits for it (given_back)
    before it closes the store, or the claims would lapse only with their lease."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from simhash_server.index.async_store import AsyncIndexStore

    store = make_index()
    executor = ThreadPoolExecutor(max_workers=1)
    gate = threading.Event()

    async def scenario() -> tuple[int, list[bytes], int, list[bytes]]:
        index = AsyncIndexStore(store, executor)
        async with index.claimed(base) as held:
            executor.submit(gate.wait)  # the one worker busy: the release waits behind it
        still_out = await index.given_back(0.2)
        held_meanwhile = _rows_held_by(store, base, held.owner)
        waiting = asyncio.create_task(index.given_back(60))
        gate.set()
        return still_out, held_meanwhile, await waiting, _rows_held_by(store, base, held.owner)

    try:
        still_out, held_meanwhile, left, held_after = asyncio.run(scenario())
    finally:
        gate.set()
        executor.shutdown()
    assert (still_out, len(held_meanwhile)) == (1, 10)
    assert (left, held_after) == (0, [])


@pytest.mark.parametrize("order", ["ask-first", "claim-first"])
def test_a_duplicate_of_a_stored_document_is_answered_while_its_drawers_are_claimed(make_index, base, order) -> None:
    """A call refused for a document HBase holds needs no claim (docs/dedup.md): while another call holds
    the drawers' claims, it is answered at once, singly and in a batch; a new document still waits for
    them.  Claiming first (--dedup-order claim-first), the duplicate waits too."""
    from simhash_client.errors import DeadlineExceeded
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    store = make_index()
    config = ServerConfig(address="127.0.0.1:0", metrics_address=None, store=store.config, dedup_order=order)
    srv = SimHashServer(config)
    srv.start()
    try:
        with SimHashClient(f"127.0.0.1:{srv.port}", timeout=30, retries=0) as client:
            assert client.deduplicate("stored", simhash=base).stored
            other = base ^ ((1 << 64) - 1)  # shares no drawer with base
            held = store.claim([base, other])  # another call, on any server, holds both neighbourhoods
            try:
                if order == "ask-first":  # within the claims' 60 s lease: claiming first, it could not answer
                    answer = client.deduplicate("copy", simhash=base ^ 0b101, timeout=30)
                    assert not answer.stored and [h.doc_id for h in answer.hits] == ["stored"]
                    batch = client.deduplicate_batch([{"doc_id": "copy2", "simhash": base ^ 0b11}], timeout=30)
                    assert [(o.result.stored, [h.doc_id for h in o.result.hits]) for o in batch] == [
                        (False, ["stored"])
                    ]
                else:
                    with pytest.raises(DeadlineExceeded):
                        client.deduplicate("copy", simhash=base ^ 0b101, timeout=1)
                with pytest.raises(DeadlineExceeded):  # nothing stored near it: it waits for the claim
                    client.deduplicate("new", simhash=other, timeout=1)
            finally:
                store.release(held)
            assert client.deduplicate("new", simhash=other, timeout=30).stored  # and is stored once it is free
    finally:
        srv.stop(grace=1)
