"""The gRPC service end to end: real server, real HBase, the Python client."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from observed import calls_ended

from simhash_client import (
    FailedPrecondition,
    Hit,
    InvalidArgument,
    NotFound,
    SimHashClient,
    Unavailable,
)
from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint

SENTENCES = [
    "海量数据的相似度计算是搜索引擎和推荐系统里的基础问题。",
    "SimHash 把一篇文章变成六十四位的指纹。",
    "相似的文章得到相近的指纹，汉明距离小于等于三就认为是近似重复。",
    "为了在几十亿条指纹里快速查找，我们把指纹分成五段。",
    "任意两段组合成一个抽屉，一共十个抽屉。",
    "查询时只需要扫描十个前缀，然后计算异或和比特数。",
    "这种方法来自谷歌发表的网页去重论文。",
    "它被广泛用于网页爬虫、新闻聚合和论文查重。",
    "北京今天天气晴朗，气温适宜。",
    "股市收盘上涨，成交量明显放大。",
    "新款手机发布，续航提升了百分之二十。",
    "图书馆周末延长开放时间到晚上十点。",
    "研究团队在实验室里完成了第三轮测试。",
    "城市地铁新线路下个月开通试运营。",
    "运动会上选手们打破了多项纪录。",
]


def article(seed: str) -> str:
    """About 700 characters of Chinese, different for every seed: each sentence is followed by a name of
    random characters (numbers would not do: v4 folds every run of digits to one)."""
    import random

    rng = random.Random(seed)
    return "".join(
        f"{rng.choice(SENTENCES)}{''.join(chr(0x4E00 + rng.randrange(0x5000)) for _ in range(3))}号。"
        for _ in range(50)
    )


def edited(text: str) -> str:
    """A copy with a footer appended: a near-duplicate any reader would call one."""
    return text + "（本文转载自技术博客）"


ARTICLE = article("fixed")
EDITED = edited(ARTICLE)


def test_fingerprint_matches_the_library(client) -> None:
    result = client.fingerprint(ARTICLE)
    fp = fingerprint(ARTICLE)
    assert (result.simhash, result.features, result.fingerprint_version) == (fp.value, fp.features, FINGERPRINT_VERSION)


def test_index_query_get_delete(client, ids) -> None:
    text = article("query")  # fixed seeds: the distance of the edited copy is the same every run
    fp = client.index(ids + "a", text=text)
    assert fp == fingerprint(text).value
    assert client.get(ids + "a") == fp
    hits = client.query(text=edited(text))  # verified at the index's floor: a text query's default
    distance = (fp ^ fingerprint(edited(text)).value).bit_count()
    assert [(h.doc_id, h.simhash, h.distance, h.verified) for h in hits] == [(ids + "a", fp, distance, True)]
    assert hits[0].distance <= 3 and hits[0].similarity >= 0.75
    # min_similarity 0: the fingerprint's own answer (within 3), each hit with its sketch's estimate
    assert client.query(text=edited(text), min_similarity=0) == hits
    assert client.query(simhash=f"{fp:016x}", max_distance=0) == [Hit(ids + "a", fp, 0)]
    assert client.delete([ids + "a", ids + "never"]) == 1
    with pytest.raises(NotFound, match="no document with doc_id"):
        client.get(ids + "a")
    assert client.query(simhash=fp) == []


def test_index_batch_reports_each_item(client, ids) -> None:
    outcomes = client.index_batch(
        [
            {"doc_id": ids + "1", "text": article("batch")},
            {"doc_id": ids + "2", "simhash": 42},
            {"doc_id": "", "simhash": 7},
            {"doc_id": ids + "3", "simhash": "00000000000000ff"},
        ]
    )
    assert [o.ok for o in outcomes] == [True, True, False, True]
    assert "documents[2].doc_id: doc_id is empty" in outcomes[2].error
    assert client.get(ids + "2") == 42 and client.get(ids + "3") == 255


def test_deduplicate_stores_only_what_is_new_and_is_safe_to_retry(client, ids) -> None:
    text = article("dedup" + ids)  # its own text each run: both clients run this against one index
    first = client.deduplicate(ids + "orig", text=text)
    assert first.stored and first.hits == ()
    again = client.deduplicate(ids + "orig", text=text)  # a retry of the same call
    assert again.stored and again.hits == ()
    copy = client.deduplicate(ids + "copy", text=edited(text))
    assert not copy.stored
    assert [h.doc_id for h in copy.hits] == [ids + "orig"]
    with pytest.raises(NotFound):
        client.get(ids + "copy")


def test_stats(client, server) -> None:
    stats = client.stats()
    assert stats.fingerprint_version == FINGERPRINT_VERSION
    assert stats.layout.startswith("segments=13,13,13,13,12")
    assert stats.tables == tuple(t.name for t in server.store.tables.all())
    assert stats.max_distance == 3 and stats.documents >= 0


@pytest.mark.parametrize(
    ("call", "field", "message"),
    [
        (
            lambda c: c.query(simhash=1, max_distance=4),
            "max_distance",
            "max_distance must be 0..3, got 4: the 5-segment drawer index",
        ),
        (lambda c: c.index("", simhash=1), "doc_id", "doc_id is empty"),
        (lambda c: c.index("x" * 600, simhash=1), "doc_id", "doc_id is 600 bytes, the limit is 512"),
        (
            lambda c: c.fingerprint("字" * 40_000),
            "text",
            "text is 120000 bytes, over the limit of 100000 (max_text_bytes)",
        ),
        (lambda c: c.query(simhash=1, limit=501), "limit", "limit is 501, over the maximum of 500 (max_limit)"),
        (
            lambda c: c.index_batch([{"doc_id": f"b{i}", "simhash": i} for i in range(51)]),
            "documents",
            "over the limit of 50 (max_batch)",
        ),
        (lambda c: c.delete([f"b{i}" for i in range(51)]), "doc_ids", "doc_ids has 51 items, over the limit of 50"),
        (lambda c: c.delete(["ok", ""]), "doc_ids[1]", "doc_ids[1]: doc_id is empty"),
        (lambda c: c.query(text="x", min_similarity=1.5), "min_similarity", "min_similarity must be within 0..1"),
    ],
)
def test_invalid_arguments_name_the_field(client, call, field, message) -> None:
    """The message names the field, and so does the BadRequest detail the client exposes."""
    with pytest.raises(InvalidArgument, match=re.escape(message)) as info:
        call(client)
    assert info.value.fields == [field]
    assert message.split(": ")[-1] in info.value.violations[0].description


def test_every_bad_field_of_a_call_is_named_in_one_answer(client) -> None:
    with pytest.raises(InvalidArgument) as info:
        client.deduplicate("", text="x", min_similarity=1.5, max_distance=9, limit=501)
    assert info.value.fields == ["doc_id", "min_similarity", "max_distance", "limit"]


def test_both_or_neither_of_text_and_simhash_is_refused_by_the_server(server) -> None:
    from simhash_index.v1 import simhash_index_pb2 as pb
    from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc

    stub = pb_grpc.SimHashIndexStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    for request, message in (
        (pb.QueryRequest(text="x", simhash=1), "give either text or simhash, not both"),
        (pb.QueryRequest(), "text or simhash is required"),
        (pb.IndexRequest(doc_id="d"), "text or simhash is required"),
    ):
        method = stub.Query if isinstance(request, pb.QueryRequest) else stub.Index
        with pytest.raises(grpc.RpcError) as info:
            method(request, timeout=10)
        assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        assert message in info.value.details()


def test_fingerprint_version_mismatch_is_failed_precondition(client) -> None:
    with pytest.raises(FailedPrecondition, match="fingerprint_version 'simhash64/old/r0' differs"):
        client.query(simhash=1, fingerprint_version="simhash64/old/r0")
    assert client.query(simhash=1, fingerprint_version=FINGERPRINT_VERSION) == []


def test_deadline_is_honoured(client, ids, pause_gateways) -> None:
    from simhash_client import DeadlineExceeded

    # HBase cannot answer while its gateways are paused, so the call is still waiting when its deadline
    # passes, however fast or slow this machine is.
    with pause_gateways(), pytest.raises(DeadlineExceeded):
        client.get(ids + "anything", timeout=0.5)


def test_work_stops_at_the_deadline_and_nothing_is_stored(server, client, ids, until) -> None:
    from simhash_client import DeadlineExceeded, NotFound

    # Every worker thread of the server is held, so the batch's fingerprinting (long texts go off the event
    # loop) cannot start: the deadline passes while the handler waits for it, whatever the machine's speed.
    started: list[None] = []
    release = threading.Event()

    def hold() -> None:
        started.append(None)
        release.wait()

    documents = [{"doc_id": f"{ids}late-{i}", "text": f"第{i}篇" + "近似重复" * 4_000} for i in range(10)]
    before = calls_ended("IndexBatch")
    try:
        for _ in range(server.config.limits.workers):
            server._executor.submit(hold)
        until(lambda: len(started) == server.config.limits.workers)
        with pytest.raises(DeadlineExceeded):
            client.index_batch(documents, timeout=0.5)
        # The server counts a call once its handler has ended; past that, nothing of the call is left to store.
        until(lambda: sum(calls_ended("IndexBatch").values()) > sum(before.values()))
    finally:
        release.set()
    assert calls_ended("IndexBatch").get("OK", 0) == before.get("OK", 0)
    for document in documents:
        with pytest.raises(NotFound):
            client.get(document["doc_id"])


def test_health_reflection_and_metrics(server, client) -> None:
    from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    health = health_pb2_grpc.HealthStub(channel)
    for name in ("", "simhash_index.v1.SimHashIndex"):
        assert (
            health.Check(health_pb2.HealthCheckRequest(service=name)).status == health_pb2.HealthCheckResponse.SERVING
        )
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answer = next(stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    names = {s.name for s in answer.list_services_response.service}
    assert {"simhash_index.v1.SimHashIndex", "grpc.health.v1.Health"} <= names
    client.query(simhash=5)
    with pytest.raises(InvalidArgument):
        client.query(simhash=5, max_distance=9)  # counted by its status code too
    text = urllib.request.urlopen(f"http://{server.config.metrics_address}/metrics", timeout=5).read().decode()
    assert 'simhash_rpc_calls_total{code="OK",method="Query"}' in text
    assert 'simhash_rpc_calls_total{code="INVALID_ARGUMENT",method="Query"}' in text
    assert "simhash_hbase_call_seconds_bucket" in text and "simhash_query_candidates_count" in text


@pytest.mark.slow("both Thrift gateways stopped and started again: each is a JVM")
def test_a_gateway_outage_is_unavailable_then_recovers_without_a_restart(server, client, hbase, ids, base) -> None:
    local = hbase.local
    if local is None:
        pytest.skip("needs the project's launcher to stop and start the gateways")
    client.index(ids + "before", simhash=base)
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    try:
        assert local.stop_process("thrift2") and local.stop_process("thrift")
        with SimHashClient(f"127.0.0.1:{server.port}", timeout=15, retries=0) as impatient:
            with pytest.raises(Unavailable):
                impatient.query(simhash=base)  # an error, never an empty hit list
            with pytest.raises(Unavailable):
                impatient.index(ids + "during", simhash=1)
        deadline = time.monotonic() + 10
        while health.Check(health_pb2.HealthCheckRequest()).status != health_pb2.HealthCheckResponse.NOT_SERVING:
            assert time.monotonic() < deadline, "health never said NOT_SERVING"
            time.sleep(0.2)
    finally:
        local.start()
    deadline = time.monotonic() + 30
    while health.Check(health_pb2.HealthCheckRequest()).status != health_pb2.HealthCheckResponse.SERVING:
        assert time.monotonic() < deadline, "health never came back to SERVING"
        time.sleep(0.2)
    assert client.query(simhash=base, max_distance=0) == [Hit(ids + "before", base, 0)]


def test_a_call_after_the_pool_sat_idle_past_the_gateway_timeout_succeeds(server, client, hbase, ids, base) -> None:
    if hbase.idle_timeout_ms is None:
        pytest.skip("the external HBase's Thrift idle timeout is unknown")
    client.index(ids + "idle", simhash=base)
    time.sleep(hbase.idle_timeout_ms / 1000 + 3)
    assert client.query(simhash=base, max_distance=0) == [Hit(ids + "idle", base, 0)]


def test_health_is_serving_while_the_index_answers(client) -> None:
    assert client.health() is True
    client.wait_until_serving(timeout=10)  # returns: the server says SERVING


@pytest.mark.parametrize("kind", ["blocking", "asyncio"])
def test_waiting_for_a_server_that_never_comes_ends_at_the_timeout(kind) -> None:
    import asyncio

    from simhash_client import AsyncSimHashClient, DeadlineExceeded
    from simhash_deploy import Ports

    target = f"127.0.0.1:{Ports.free().thrift}"  # nothing listens there

    async def wait_async() -> None:
        async with AsyncSimHashClient(target, retries=0) as client:
            await client.wait_until_serving(timeout=1)

    with pytest.raises(DeadlineExceeded):
        if kind == "blocking":
            with SimHashClient(target, retries=0) as client:
                client.wait_until_serving(timeout=1)
        else:
            asyncio.run(wait_async())


def test_the_health_command_exits_0_when_serving_and_1_when_nothing_answers(server) -> None:
    from simhash_deploy import Ports

    cli = str(Path(sys.executable).with_name("simhash-index"))
    up = subprocess.run([cli, "health", "--target", f"127.0.0.1:{server.port}"], capture_output=True, text=True)
    assert up.returncode == 0 and json.loads(up.stdout) == {"serving": True}, up.stderr
    nobody = f"127.0.0.1:{Ports.free().thrift}"
    down = subprocess.run([cli, "health", "--target", nobody, "--timeout", "5"], capture_output=True, text=True)
    assert down.returncode == 1 and "UNAVAILABLE" in down.stderr and "Traceback" not in down.stderr


def test_asyncios_own_event_loop_serves_the_same_answers(serve_in_process) -> None:
    """`serve --event-loop asyncio`: every other server of these tests runs on uvloop, the default."""
    text = article("asyncio loop")
    with SimHashClient(serve_in_process(event_loop="asyncio"), retries=0) as client:
        fp = client.index("on-asyncio", text=text)
        hits = client.query(text=edited(text))
        assert [(h.doc_id, h.simhash, h.verified) for h in hits] == [("on-asyncio", fp, True)]
        assert hits[0].distance == (fp ^ fingerprint(edited(text)).value).bit_count()
        assert client.delete(["on-asyncio"]) == 1
