import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import status_pb2 as _status_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Verification(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    VERIFICATION_UNSPECIFIED: _ClassVar[Verification]
    VERIFICATION_VERIFIED: _ClassVar[Verification]
    VERIFICATION_UNVERIFIED: _ClassVar[Verification]
VERIFICATION_UNSPECIFIED: Verification
VERIFICATION_VERIFIED: Verification
VERIFICATION_UNVERIFIED: Verification

class FingerprintRequest(_message.Message):
    __slots__ = ("text",)
    TEXT_FIELD_NUMBER: _ClassVar[int]
    text: str
    def __init__(self, text: _Optional[str] = ...) -> None: ...

class FingerprintResponse(_message.Message):
    __slots__ = ("simhash", "features", "fingerprint_version")
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_VERSION_FIELD_NUMBER: _ClassVar[int]
    simhash: int
    features: int
    fingerprint_version: str
    def __init__(self, simhash: _Optional[int] = ..., features: _Optional[int] = ..., fingerprint_version: _Optional[str] = ...) -> None: ...

class IndexRequest(_message.Message):
    __slots__ = ("doc_id", "text", "simhash", "fingerprint_version", "indexed_at")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_VERSION_FIELD_NUMBER: _ClassVar[int]
    INDEXED_AT_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    text: str
    simhash: int
    fingerprint_version: str
    indexed_at: _timestamp_pb2.Timestamp
    def __init__(self, doc_id: _Optional[str] = ..., text: _Optional[str] = ..., simhash: _Optional[int] = ..., fingerprint_version: _Optional[str] = ..., indexed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class IndexResponse(_message.Message):
    __slots__ = ("doc_id", "simhash", "features")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    simhash: int
    features: int
    def __init__(self, doc_id: _Optional[str] = ..., simhash: _Optional[int] = ..., features: _Optional[int] = ...) -> None: ...

class IndexBatchRequest(_message.Message):
    __slots__ = ("documents",)
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[IndexRequest]
    def __init__(self, documents: _Optional[_Iterable[_Union[IndexRequest, _Mapping]]] = ...) -> None: ...

class IndexOutcome(_message.Message):
    __slots__ = ("doc_id", "code", "error", "simhash", "status")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    code: int
    error: str
    simhash: int
    status: _status_pb2.Status
    def __init__(self, doc_id: _Optional[str] = ..., code: _Optional[int] = ..., error: _Optional[str] = ..., simhash: _Optional[int] = ..., status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ...) -> None: ...

class IndexBatchResponse(_message.Message):
    __slots__ = ("outcomes", "indexed", "rejected")
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    INDEXED_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[IndexOutcome]
    indexed: int
    rejected: int
    def __init__(self, outcomes: _Optional[_Iterable[_Union[IndexOutcome, _Mapping]]] = ..., indexed: _Optional[int] = ..., rejected: _Optional[int] = ...) -> None: ...

class QueryBatchRequest(_message.Message):
    __slots__ = ("queries",)
    QUERIES_FIELD_NUMBER: _ClassVar[int]
    queries: _containers.RepeatedCompositeFieldContainer[QueryRequest]
    def __init__(self, queries: _Optional[_Iterable[_Union[QueryRequest, _Mapping]]] = ...) -> None: ...

class QueryOutcome(_message.Message):
    __slots__ = ("status", "response")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    status: _status_pb2.Status
    response: QueryResponse
    def __init__(self, status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., response: _Optional[_Union[QueryResponse, _Mapping]] = ...) -> None: ...

class QueryBatchResponse(_message.Message):
    __slots__ = ("outcomes",)
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[QueryOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[QueryOutcome, _Mapping]]] = ...) -> None: ...

class DeduplicateBatchRequest(_message.Message):
    __slots__ = ("documents",)
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    documents: _containers.RepeatedCompositeFieldContainer[DeduplicateRequest]
    def __init__(self, documents: _Optional[_Iterable[_Union[DeduplicateRequest, _Mapping]]] = ...) -> None: ...

class DeduplicateOutcome(_message.Message):
    __slots__ = ("status", "response")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    status: _status_pb2.Status
    response: DeduplicateResponse
    def __init__(self, status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., response: _Optional[_Union[DeduplicateResponse, _Mapping]] = ...) -> None: ...

class DeduplicateBatchResponse(_message.Message):
    __slots__ = ("outcomes", "stored", "duplicates", "rejected")
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    REJECTED_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[DeduplicateOutcome]
    stored: int
    duplicates: int
    rejected: int
    def __init__(self, outcomes: _Optional[_Iterable[_Union[DeduplicateOutcome, _Mapping]]] = ..., stored: _Optional[int] = ..., duplicates: _Optional[int] = ..., rejected: _Optional[int] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("text", "simhash", "max_distance", "limit", "fingerprint_version", "min_similarity", "max_age")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    MAX_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_VERSION_FIELD_NUMBER: _ClassVar[int]
    MIN_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_FIELD_NUMBER: _ClassVar[int]
    text: str
    simhash: int
    max_distance: int
    limit: int
    fingerprint_version: str
    min_similarity: float
    max_age: _duration_pb2.Duration
    def __init__(self, text: _Optional[str] = ..., simhash: _Optional[int] = ..., max_distance: _Optional[int] = ..., limit: _Optional[int] = ..., fingerprint_version: _Optional[str] = ..., min_similarity: _Optional[float] = ..., max_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class Hit(_message.Message):
    __slots__ = ("doc_id", "simhash", "distance", "similarity", "verification")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    VERIFICATION_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    simhash: int
    distance: int
    similarity: float
    verification: Verification
    def __init__(self, doc_id: _Optional[str] = ..., simhash: _Optional[int] = ..., distance: _Optional[int] = ..., similarity: _Optional[float] = ..., verification: _Optional[_Union[Verification, str]] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("hits", "simhash", "features", "below_similarity")
    HITS_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    BELOW_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[Hit]
    simhash: int
    features: int
    below_similarity: int
    def __init__(self, hits: _Optional[_Iterable[_Union[Hit, _Mapping]]] = ..., simhash: _Optional[int] = ..., features: _Optional[int] = ..., below_similarity: _Optional[int] = ...) -> None: ...

class DeduplicateRequest(_message.Message):
    __slots__ = ("doc_id", "text", "simhash", "max_distance", "limit", "fingerprint_version", "min_similarity", "indexed_at", "max_age")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    MAX_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_VERSION_FIELD_NUMBER: _ClassVar[int]
    MIN_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    INDEXED_AT_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    text: str
    simhash: int
    max_distance: int
    limit: int
    fingerprint_version: str
    min_similarity: float
    indexed_at: _timestamp_pb2.Timestamp
    max_age: _duration_pb2.Duration
    def __init__(self, doc_id: _Optional[str] = ..., text: _Optional[str] = ..., simhash: _Optional[int] = ..., max_distance: _Optional[int] = ..., limit: _Optional[int] = ..., fingerprint_version: _Optional[str] = ..., min_similarity: _Optional[float] = ..., indexed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., max_age: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class DeduplicateResponse(_message.Message):
    __slots__ = ("hits", "stored", "simhash", "features", "below_similarity")
    HITS_FIELD_NUMBER: _ClassVar[int]
    STORED_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    BELOW_SIMILARITY_FIELD_NUMBER: _ClassVar[int]
    hits: _containers.RepeatedCompositeFieldContainer[Hit]
    stored: bool
    simhash: int
    features: int
    below_similarity: int
    def __init__(self, hits: _Optional[_Iterable[_Union[Hit, _Mapping]]] = ..., stored: _Optional[bool] = ..., simhash: _Optional[int] = ..., features: _Optional[int] = ..., below_similarity: _Optional[int] = ...) -> None: ...

class GetRequest(_message.Message):
    __slots__ = ("doc_id",)
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    def __init__(self, doc_id: _Optional[str] = ...) -> None: ...

class GetResponse(_message.Message):
    __slots__ = ("doc_id", "simhash")
    DOC_ID_FIELD_NUMBER: _ClassVar[int]
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    doc_id: str
    simhash: int
    def __init__(self, doc_id: _Optional[str] = ..., simhash: _Optional[int] = ...) -> None: ...

class DeleteRequest(_message.Message):
    __slots__ = ("doc_ids",)
    DOC_IDS_FIELD_NUMBER: _ClassVar[int]
    doc_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, doc_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class DeleteResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: int
    def __init__(self, deleted: _Optional[int] = ...) -> None: ...

class StatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatsResponse(_message.Message):
    __slots__ = ("documents", "fingerprint_version", "layout", "tables", "max_distance", "drawer_rows_estimate", "orphan_drawer_rows_estimate", "orphan_sample", "top_fingerprints", "last_gc", "retention")
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    FINGERPRINT_VERSION_FIELD_NUMBER: _ClassVar[int]
    LAYOUT_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    MAX_DISTANCE_FIELD_NUMBER: _ClassVar[int]
    DRAWER_ROWS_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    ORPHAN_DRAWER_ROWS_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    ORPHAN_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    TOP_FINGERPRINTS_FIELD_NUMBER: _ClassVar[int]
    LAST_GC_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    documents: int
    fingerprint_version: str
    layout: str
    tables: _containers.RepeatedScalarFieldContainer[str]
    max_distance: int
    drawer_rows_estimate: int
    orphan_drawer_rows_estimate: int
    orphan_sample: int
    top_fingerprints: _containers.RepeatedCompositeFieldContainer[FingerprintCount]
    last_gc: _timestamp_pb2.Timestamp
    retention: _duration_pb2.Duration
    def __init__(self, documents: _Optional[int] = ..., fingerprint_version: _Optional[str] = ..., layout: _Optional[str] = ..., tables: _Optional[_Iterable[str]] = ..., max_distance: _Optional[int] = ..., drawer_rows_estimate: _Optional[int] = ..., orphan_drawer_rows_estimate: _Optional[int] = ..., orphan_sample: _Optional[int] = ..., top_fingerprints: _Optional[_Iterable[_Union[FingerprintCount, _Mapping]]] = ..., last_gc: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., retention: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class FingerprintCount(_message.Message):
    __slots__ = ("simhash", "documents")
    SIMHASH_FIELD_NUMBER: _ClassVar[int]
    DOCUMENTS_FIELD_NUMBER: _ClassVar[int]
    simhash: int
    documents: int
    def __init__(self, simhash: _Optional[int] = ..., documents: _Optional[int] = ...) -> None: ...
