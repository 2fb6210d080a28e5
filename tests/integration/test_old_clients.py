"""A client built from the released API (proto/released: the descriptor set of simhash-index 0.1.0) still
calls today's server: the messages it sends parse, and the answers it reads carry what they carried."""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

RELEASED = Path(__file__).resolve().parents[2] / "proto" / "released" / "simhash_index-v0.1.0.binpb"
SERVICE = "/simhash_index.v1.SimHashIndex/"


@pytest.fixture(scope="module")
def released():
    """The 0.1.0 message classes by short name, made from the released descriptors alone."""
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(RELEASED.read_bytes()).file:
        pool.Add(file)
    package = pool.FindMessageTypeByName("simhash_index.v1.QueryRequest").file.message_types_by_name
    return {name: message_factory.GetMessageClass(descriptor) for name, descriptor in package.items()}


@pytest.fixture
def call(server, released):
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")

    def invoke(method: str, request):
        answer = released[f"{method}Response"]
        stub = channel.unary_unary(
            SERVICE + method,
            request_serializer=type(request).SerializeToString,
            response_deserializer=answer.FromString,
        )
        return stub(request, timeout=20)

    yield invoke
    channel.close()


def test_released_calls_work_against_this_server(call, released, ids, base) -> None:
    m = released
    text = "".join(chr(0x4E00 + (n * 37) % 20000) for n in range(400)) + "。" + ids
    indexed = call("Index", m["IndexRequest"](doc_id=ids + "t", text=text))
    assert indexed.doc_id == ids + "t" and indexed.features > 0
    batch = call(
        "IndexBatch",
        m["IndexBatchRequest"](
            documents=[m["IndexRequest"](doc_id=ids + "f", simhash=base), m["IndexRequest"](doc_id="", simhash=base)]
        ),
    )
    assert [(o.doc_id, o.code) for o in batch.outcomes] == [(ids + "f", 0), ("", 3)]
    assert "documents[1].doc_id" in batch.outcomes[1].error and (batch.indexed, batch.rejected) == (1, 1)
    hits = call("Query", m["QueryRequest"](simhash=base ^ 1)).hits
    assert [(h.doc_id, h.distance) for h in hits] == [(ids + "f", 1)]
    verified = call("Query", m["QueryRequest"](text=text, min_similarity=0.9)).hits
    assert [(h.doc_id, h.distance) for h in verified] == [(ids + "t", 0)] and verified[0].similarity > 0.9
    # A released client that sends no min_similarity gets the verified answer, in fields it already reads:
    # hits as before, each with its similarity and verification (VERIFIED is 1 in every release).
    default = call("Query", m["QueryRequest"](text=text)).hits
    assert [(h.doc_id, h.distance, h.verification) for h in default] == [(ids + "t", 0, 1)]
    assert default[0].similarity == verified[0].similarity
    dedup = call("Deduplicate", m["DeduplicateRequest"](doc_id=ids + "copy", text=text))
    assert not dedup.stored and [h.doc_id for h in dedup.hits] == [ids + "t"]
    assert call("Get", m["GetRequest"](doc_id=ids + "f")).simhash == base
    assert call("Delete", m["DeleteRequest"](doc_ids=[ids + "f", ids + "t"])).deleted == 2
    assert call("Stats", m["StatsRequest"]()).documents >= 0
