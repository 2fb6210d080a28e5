"""QueryBatch and DeduplicateBatch end to end: a real server on a real HBase, through both Python clients."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from observed import batches_observed

from simhash_client import InvalidArgument, NotFound
from simhash_server.fingerprint import fingerprint


def article(seed: str) -> str:
    """40 sentences of random Chinese characters: articles of different seeds share nothing."""
    rng = random.Random(seed)
    return "。".join("".join(chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(20)) for _ in range(40)) + "。"


def edited(text: str) -> str:
    """A copy with a footer appended: a near-duplicate any reader would call one."""
    return text + "（本文转载自技术博客）"


def test_deduplicate_batch_decides_in_order_as_single_calls_would(client, ids) -> None:
    a, b = article("batch-a" + ids), article("batch-b" + ids)
    items = [
        {"doc_id": ids + "a", "text": a},
        {"doc_id": ids + "a-copy", "text": edited(a)},  # a near-duplicate of the batch's own first item
        {"doc_id": ids + "b", "text": b},
        {"doc_id": "", "text": b},  # refused alone
        {"doc_id": ids + "far", "text": b, "max_distance": 9},  # refused alone
        {"doc_id": ids + "b", "text": edited(b)},  # its own id again: never its own duplicate; replaces b
        {"doc_id": ids + "b-copy", "text": b},  # a duplicate of what id b holds by now
    ]
    outcomes = client.deduplicate_batch(items)
    assert [o.ok for o in outcomes] == [True, True, True, False, False, True, True]
    assert [o.result.stored for o in outcomes if o.ok] == [True, False, True, True, False]
    assert [h.doc_id for h in outcomes[1].result.hits] == [ids + "a"]
    assert [h.doc_id for h in outcomes[6].result.hits] == [ids + "b"]
    assert outcomes[6].result.hits[0].simhash == fingerprint(edited(b)).value  # b as the batch rewrote it
    assert outcomes[3].violations[0].field == "documents[3].doc_id"
    assert outcomes[4].violations[0].field == "documents[4].max_distance"
    assert client.get(ids + "b") == fingerprint(edited(b)).value
    for duplicate in ("a-copy", "b-copy"):
        with pytest.raises(NotFound):
            client.get(ids + duplicate)
    # A retry of the whole batch gives the same decisions: each document is never its own duplicate.
    again = client.deduplicate_batch(items)
    assert [o.result.stored if o.ok else None for o in again] == [True, False, True, None, None, True, False]


def test_deduplicate_batch_sees_what_single_calls_stored_and_they_see_it(client, ids) -> None:
    a, b = article("seen-a" + ids), article("seen-b" + ids)
    assert client.deduplicate(ids + "a", text=a).stored
    outcomes = client.deduplicate_batch([{"doc_id": ids + "a2", "text": edited(a)}, {"doc_id": ids + "b", "text": b}])
    assert [o.result.stored for o in outcomes] == [False, True]
    assert [h.doc_id for h in outcomes[0].result.hits] == [ids + "a"]
    single = client.deduplicate(ids + "b2", text=edited(b))
    assert not single.stored and [h.doc_id for h in single.hits] == [ids + "b"]


def test_deduplicate_batch_by_fingerprint_is_unverified_within_distance_3(client, ids, base) -> None:
    outcomes = client.deduplicate_batch(
        [
            {"doc_id": ids + "1", "simhash": base},
            {"doc_id": ids + "2", "simhash": base ^ 0b111},  # distance 3 from the first
            {"doc_id": ids + "3", "simhash": base ^ 0b1111, "max_distance": 0},  # only an exact match counts
        ]
    )
    assert [o.result.stored for o in outcomes] == [True, False, True]
    assert [(h.doc_id, h.distance, h.verified) for h in outcomes[1].result.hits] == [(ids + "1", 3, None)]


def test_query_batch_answers_each_item_as_query_does(client, ids, base) -> None:
    text = article("query-batch" + ids)
    client.index(ids + "t", text=text)
    client.index(ids + "f", simhash=base)
    queries = [
        {"text": edited(text)},
        {"text": edited(text), "min_similarity": 0.5},
        {"simhash": base ^ 1},
        {"simhash": base, "min_similarity": 0.5},  # refused alone: a fingerprint has no sketch
        {"simhash": base ^ 0b1111},  # nothing within 3
    ]
    batches_before = batches_observed("queries")
    outcomes = client.query_batch(queries)
    # The batch's four good items were read by one batch of drawer scans and fp2docs reads, as one call.
    assert tuple(a - b for a, b in zip(batches_observed("queries"), batches_before, strict=True)) == (1.0, 1.0)
    assert [o.ok for o in outcomes] == [True, True, True, False, True]
    for query, outcome in zip(queries, outcomes, strict=True):
        if outcome.ok:
            assert list(outcome.hits) == client.query(**query)
    assert [h.doc_id for h in outcomes[0].hits] == [ids + "t"]
    assert outcomes[1].hits[0].verified is True
    assert outcomes[3].violations[0].field == "queries[3].min_similarity"
    assert outcomes[4].hits == ()


def test_a_batch_over_max_batch_is_refused_whole(client) -> None:
    with pytest.raises(InvalidArgument, match="max_batch") as refused:
        client.deduplicate_batch([{"doc_id": str(n), "simhash": n} for n in range(51)])
    assert refused.value.violations[0].field == "documents"
    with pytest.raises(InvalidArgument, match="max_batch"):
        client.query_batch([{"simhash": n} for n in range(51)])


def test_empty_batches_answer_nothing(client) -> None:
    assert client.query_batch([]) == []
    assert client.deduplicate_batch([]) == []


def test_the_dedup_command_streams_json_lines_in_order_and_names_bad_lines(server, ids, base) -> None:
    a = article("cli" + ids)
    lines = [
        json.dumps({"id": ids + "a", "text": a}, ensure_ascii=False),
        "not json",
        json.dumps({"id": ids + "a-copy", "text": edited(a)}, ensure_ascii=False),
        json.dumps({"id": ids + "f", "simhash": f"{base:016x}"}),
        json.dumps({"id": ids + "g", "simhash": "xyz"}),
        "",
        json.dumps({"id": "", "simhash": f"{base ^ 2**40:016x}"}),  # refused by the server: an empty id
        json.dumps({"id": ids + "f2", "simhash": f"{base ^ 1:016x}"}),
    ]
    cli = str(Path(sys.executable).with_name("simhash-index"))
    done = subprocess.run(
        [cli, "dedup", "--target", f"127.0.0.1:{server.port}", "--input", "-", "--batch-size", "2"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [(r["doc_id"], r["stored"]) for r in records] == [
        (ids + "a", True),
        (ids + "a-copy", False),
        (ids + "f", True),
        (ids + "f2", False),
    ]
    assert [d["doc_id"] for d in records[1]["duplicates"]] == [ids + "a"]
    problems = done.stderr.splitlines()
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 5", "line 7"], done.stderr
    assert "doc_id" in problems[2] and "Traceback" not in done.stderr
