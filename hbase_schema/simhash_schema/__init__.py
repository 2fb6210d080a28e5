"""The HBase tables of a simhash-index, as code: specs, creation through Thrift2, and the meta record."""

from simhash_schema.apply import TableState, apply_schema, describe, region_count, table_exists
from simhash_schema.filters import key_only_multi_range
from simhash_schema.meta import IndexMeta, VersionMismatch, ensure_meta, read_meta
from simhash_schema.tables import (
    BLOOM_TYPES,
    CLAIM_TTL_SECONDS,
    COMPRESSIONS,
    DRAWER_REGIONS,
    ENCODINGS,
    FamilySpec,
    IndexTables,
    TableSpec,
    index_tables,
)
from simhash_schema.thrift2 import (
    Incomplete,
    SchemaError,
    connect,
    decode_reply,
    encode_request,
    hbase2,
    receive_reply,
    send_request,
)

__all__ = [
    "BLOOM_TYPES",
    "CLAIM_TTL_SECONDS",
    "COMPRESSIONS",
    "DRAWER_REGIONS",
    "ENCODINGS",
    "FamilySpec",
    "Incomplete",
    "IndexMeta",
    "IndexTables",
    "SchemaError",
    "TableSpec",
    "TableState",
    "VersionMismatch",
    "apply_schema",
    "connect",
    "decode_reply",
    "describe",
    "encode_request",
    "ensure_meta",
    "hbase2",
    "index_tables",
    "key_only_multi_range",
    "read_meta",
    "receive_reply",
    "region_count",
    "send_request",
    "table_exists",
]
