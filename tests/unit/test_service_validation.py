"""The service's request checks and its one table of status codes, without a server or HBase."""

from __future__ import annotations

import math
import time
from types import SimpleNamespace

import grpc
import pytest
from google.protobuf import duration_pb2, timestamp_pb2
from google.rpc import error_details_pb2, status_pb2

from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_schema import SchemaError, VersionMismatch
from simhash_server.fingerprint import FINGERPRINT_VERSION, NAMES, V1, VERSIONS, fingerprint
from simhash_server.fingerprint.pipeline import part_fingerprints
from simhash_server.index.errors import (
    CorruptData,
    DeadlineExceeded,
    InvalidArgument,
    Rejected,
    Unavailable,
)
from simhash_server.rpc.limits import Limits
from simhash_server.rpc.service import SimHashIndexService
from simhash_server.rpc.status import NotFound, _bad_request, status_for


@pytest.fixture
def service() -> SimHashIndexService:
    # Validation never reaches HBase: the service gets only the recipe an opened index would give it, so a
    # check that read or wrote the index would fail loudly.
    opened = SimpleNamespace(recipe=VERSIONS[FINGERPRINT_VERSION], retention_seconds=None)
    limits = Limits(max_text_bytes=100, max_limit=50, default_limit=20)
    return SimHashIndexService(index=opened, executor=None, limits=limits)  # type: ignore[arg-type]


def _violation(call) -> InvalidArgument:
    with pytest.raises(InvalidArgument) as info:
        call()
    return info.value


@pytest.mark.parametrize(
    ("request_", "field", "message"),
    [
        (pb.QueryRequest(simhash=1, max_distance=4), "max_distance", "max_distance must be 0..3, got 4"),
        (
            pb.QueryRequest(text="x", max_distance=9, min_similarity=0.5),
            "max_distance",
            "0..8 with min_similarity, got 9",
        ),
        (pb.QueryRequest(simhash=1, limit=51), "limit", "limit is 51, over the maximum of 50"),
        (pb.QueryRequest(text="x", simhash=1), "text", "give either text or simhash, not both"),
        (pb.QueryRequest(), "text", "text or simhash is required"),
        (pb.QueryRequest(text="字" * 40), "text", "120 bytes, over the limit of 100"),
        (pb.QueryRequest(simhash=1, min_similarity=0.9), "min_similarity", "needs text"),
        (pb.DeduplicateRequest(doc_id="", simhash=1), "doc_id", "doc_id is empty"),
    ],
)
def test_each_bad_field_is_named(service, request_, field: str, message: str) -> None:
    error = _violation(lambda: service.requests.checked(request_, needs_id=isinstance(request_, pb.DeduplicateRequest)))
    assert error.field == field and message in str(error)
    assert error.violations == ((field, error.description),)


def _time(seconds_from_now: float) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMilliseconds(int((time.time() + seconds_from_now) * 1000))
    return stamp


@pytest.mark.parametrize(
    ("request_", "field", "message"),
    [
        (pb.IndexRequest(doc_id="a", simhash=1, indexed_at=_time(3600)), "indexed_at", "ahead of the server's clock"),
        (pb.QueryRequest(simhash=1, max_age=duration_pb2.Duration(seconds=0)), "max_age", "at least 1 ms"),
        (pb.QueryRequest(simhash=1, max_age=duration_pb2.Duration(seconds=-5)), "max_age", "at least 1 ms"),
        (pb.DeduplicateRequest(doc_id="a", simhash=1, max_age=duration_pb2.Duration(nanos=10)), "max_age", "1 ms"),
        (
            pb.IndexRequest(doc_id="a", simhash=1, indexed_at=timestamp_pb2.Timestamp(nanos=-1)),
            "indexed_at",
            "indexed_at is not valid: Timestamp is not valid",
        ),
        (
            pb.QueryRequest(simhash=1, max_age=duration_pb2.Duration(seconds=5, nanos=-1)),
            "max_age",
            "max_age is not valid",
        ),
    ],
)
def test_bad_times_are_named(service, request_, field: str, message: str) -> None:
    error = _violation(lambda: service.requests.checked(request_, needs_id=not isinstance(request_, pb.QueryRequest)))
    assert error.field == field and message in str(error)


def test_an_unreadable_time_is_named_with_the_other_bad_fields(service) -> None:
    request = pb.DeduplicateRequest(doc_id="", simhash=1, indexed_at=timestamp_pb2.Timestamp(seconds=10**12))
    error = _violation(lambda: service.requests.checked(request, needs_id=True))
    assert [field for field, _ in error.violations] == ["doc_id", "indexed_at"]


def test_a_time_is_taken_in_milliseconds_and_held_to_the_retention(service) -> None:
    checked = service.requests.checked(
        pb.DeduplicateRequest(
            doc_id="a", simhash=1, indexed_at=_time(-3600), max_age=duration_pb2.Duration(seconds=72 * 3600)
        ),
        needs_id=True,
    )
    assert abs(checked.indexed_at_ms - (time.time() - 3600) * 1000) < 5_000
    assert checked.max_age_ms == 72 * 3600 * 1000
    service.index.retention_seconds = 1800  # half an hour: a document seen an hour ago would expire at once
    late = pb.IndexRequest(doc_id="a", simhash=1, indexed_at=_time(-3600))
    error = _violation(lambda: service.requests.checked(late))
    assert error.field == "indexed_at" and "older than the index's retention of 1800 s" in str(error)
    outcomes, good = service.requests.checked_documents(
        pb.IndexBatchRequest(
            documents=[
                pb.IndexRequest(doc_id="new", simhash=1, indexed_at=_time(-60)),
                pb.IndexRequest(doc_id="old", simhash=2, indexed_at=_time(-3600)),
            ]
        ),
        None,
    )
    assert [d.doc_id for d in good] == ["new"] and good[0].indexed_at_ms is not None
    assert outcomes[1].status.code == 3 and "documents[1].indexed_at" in outcomes[1].status.message


def test_every_bad_field_of_a_request_is_named_at_once(service) -> None:
    request = pb.DeduplicateRequest(doc_id="", text="x", simhash=1, min_similarity=2.0, max_distance=99, limit=51)
    error = _violation(lambda: service.requests.checked(request, needs_id=True))
    assert [field for field, _ in error.violations] == ["doc_id", "text", "min_similarity", "max_distance", "limit"]
    ((_, value),) = _bad_request(error)
    bad = error_details_pb2.BadRequest()
    assert status_pb2.Status.FromString(value).details[0].Unpack(bad)
    assert [v.field for v in bad.field_violations] == ["doc_id", "text", "min_similarity", "max_distance", "limit"]


def test_defaults_are_the_exact_and_the_verified_reach(service) -> None:
    exact = service.requests.checked(pb.QueryRequest(simhash=1))
    assert (exact.max_distance, exact.limit, exact.verified) == (3, service.limits.default_limit, False)
    assert service.requests.checked(pb.QueryRequest(text="x", min_similarity=0.5)).max_distance == 8
    given = service.requests.checked(pb.QueryRequest(simhash=1, max_distance=0, limit=7))
    assert (given.max_distance, given.limit) == (0, 7)


def test_deduplicate_verifies_a_text_at_the_recipe_floor(service) -> None:
    floor = service.index.recipe.dedup_floor
    by_text = service.requests.checked(pb.DeduplicateRequest(doc_id="d", text="x"), needs_id=True, default_floor=floor)
    assert by_text.min_similarity == floor
    by_fp = service.requests.checked(pb.DeduplicateRequest(doc_id="d", simhash=1), needs_id=True, default_floor=floor)
    assert by_fp.min_similarity is None and by_fp.max_distance == 3
    asked = pb.DeduplicateRequest(doc_id="d", text="x", min_similarity=0.5)
    named = service.requests.checked(asked, default_floor=floor)
    assert named.min_similarity == 0.5


def test_a_text_query_verifies_at_the_v4_floor_and_min_similarity_0_is_the_fingerprints_answer(service) -> None:
    floor = service.index.recipe.query_floor
    assert floor == service.index.recipe.dedup_floor == 0.75  # one answer from Query and Deduplicate
    by_text = service.requests.checked(pb.QueryRequest(text="x"), default_floor=floor)
    assert (by_text.min_similarity, by_text.verified, by_text.max_distance) == (0.75, True, 8)
    by_fp = service.requests.checked(pb.QueryRequest(simhash=1), default_floor=floor)
    assert (by_fp.min_similarity, by_fp.verified, by_fp.max_distance) == (None, False, 3)
    fingerprints = service.requests.checked(pb.QueryRequest(text="x", min_similarity=0), default_floor=floor)
    assert (fingerprints.min_similarity, fingerprints.max_distance) == (0, 3)  # every candidate, within 3
    wider = pb.QueryRequest(text="x", min_similarity=0, max_distance=8)
    assert service.requests.checked(wider, default_floor=floor).max_distance == 8


@pytest.mark.parametrize("name", ["v1", "v2", "v3"])
def test_v1_to_v3_answer_a_text_query_with_the_fingerprint(name: str) -> None:
    assert VERSIONS[NAMES[name]].query_floor is None


@pytest.mark.parametrize("floor", [-0.1, 1.01, math.nan, math.inf])
def test_min_similarity_outside_0_1_is_refused(service, floor: float) -> None:
    error = _violation(lambda: service.requests.checked(pb.QueryRequest(text="x", min_similarity=floor)))
    assert error.field == "min_similarity"


def test_a_query_is_fingerprinted_once_checked(service) -> None:
    assert service.requests.document_of(service.requests.checked(pb.QueryRequest(simhash=7))) == (7, 0, b"", ())
    fp = fingerprint("近似重复检测", sketch=True)
    checked = service.requests.checked(pb.QueryRequest(text="近似重复检测"))
    assert service.requests.document_of(checked) == (fp.value, fp.features, fp.sketch, ())


def test_a_verified_text_query_looks_up_its_parts(service) -> None:
    text = "\n".join(("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"))
    floor = service.index.recipe.query_floor
    verified = service.requests.checked(pb.QueryRequest(text=text), default_floor=floor)  # v4's default
    assert verified.looks_up_parts
    made = service.requests.document_of(verified, parts=verified.looks_up_parts)
    assert made.parts == part_fingerprints(text, FINGERPRINT_VERSION, made.fingerprint) != ()
    for unverified in (pb.QueryRequest(text=text, min_similarity=0), pb.QueryRequest(simhash=made.fingerprint)):
        assert not service.requests.checked(unverified, default_floor=floor).looks_up_parts


def test_a_fingerprint_of_another_version_is_a_precondition_failure(service) -> None:
    other = service.requests.checked(pb.IndexRequest(doc_id="d", simhash=1, fingerprint_version="simhash64/other/r9"))
    with pytest.raises(VersionMismatch, match="differs from the index's"):
        service.requests.document_of(other)
    same = service.requests.checked(pb.IndexRequest(doc_id="d", simhash=1, fingerprint_version=FINGERPRINT_VERSION))
    assert service.requests.document_of(same)[0] == 1


def test_a_batch_rejects_bad_items_alone_naming_their_path(service) -> None:
    request = pb.IndexBatchRequest(
        documents=[
            pb.IndexRequest(doc_id="a", simhash=1),
            pb.IndexRequest(doc_id="", simhash=2),
            pb.IndexRequest(doc_id="c"),
            pb.IndexRequest(doc_id="d", text="近似重复"),
        ]
    )
    outcomes, good = service.requests.checked_documents(request, None)
    assert [o.code for o in outcomes] == [0, 3, 3, 0]
    assert outcomes[1].error == "documents[1].doc_id: doc_id is empty"
    assert outcomes[2].error == "documents[2].text or documents[2].simhash is required"
    assert [d.doc_id for d in good] == ["a", "d"] and good[1].fingerprint == fingerprint("近似重复").value


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (InvalidArgument("f", "f is wrong"), grpc.StatusCode.INVALID_ARGUMENT),
        (NotFound("x"), grpc.StatusCode.NOT_FOUND),
        (VersionMismatch("v"), grpc.StatusCode.FAILED_PRECONDITION),
        (SchemaError("tables missing"), grpc.StatusCode.UNAVAILABLE),
        (DeadlineExceeded("late"), grpc.StatusCode.DEADLINE_EXCEEDED),
        (Unavailable("down"), grpc.StatusCode.UNAVAILABLE),
        (CorruptData("bad cell"), grpc.StatusCode.DATA_LOSS),
        (Rejected("TIllegalArgument"), grpc.StatusCode.INTERNAL),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"), grpc.StatusCode.INTERNAL),  # a bug, not the caller's
        (ValueError("from deep inside"), grpc.StatusCode.INTERNAL),
        (KeyError("k"), grpc.StatusCode.INTERNAL),
    ],
)
def test_each_error_class_has_one_status(error: BaseException, code: grpc.StatusCode) -> None:
    assert status_for(error) is code


def test_a_field_violation_travels_as_a_bad_request_detail() -> None:
    ((key, value),) = _bad_request(InvalidArgument("documents[2].doc_id", "documents[2].doc_id: doc_id is empty"))
    assert key == "grpc-status-details-bin"
    status = status_pb2.Status.FromString(value)
    assert status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    bad = error_details_pb2.BadRequest()
    assert status.details[0].Unpack(bad)
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("documents[2].doc_id", "documents[2].doc_id: doc_id is empty")
    ]


def test_texts_are_fingerprinted_with_the_index_recipe(service) -> None:
    service.index.recipe = VERSIONS[V1]  # an index created before v2
    fp = fingerprint("近似重复检测", V1, sketch=True)
    checked = service.requests.checked(pb.QueryRequest(text="近似重复检测"))
    assert service.requests.document_of(checked) == (fp.value, fp.features, fp.sketch, ())
    assert fp.value != fingerprint("近似重复检测").value
    newer = service.requests.checked(pb.IndexRequest(doc_id="d", simhash=1, fingerprint_version=FINGERPRINT_VERSION))
    with pytest.raises(VersionMismatch, match="differs from the index's"):
        service.requests.document_of(newer)
