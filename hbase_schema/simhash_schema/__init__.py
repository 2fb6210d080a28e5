"""The HBase tables of a simhash-index, as code: specs, creation through Thrift2, and the meta record."""

from simhash_schema.apply import (
    ONLINE_WAIT_SECONDS,
    TableState,
    apply_schema,
    describe,
    offline_tables,
    read_retention,
    region_count,
    set_retention,
    table_attributes,
    table_exists,
    wait_until_online,
)
from simhash_schema.filters import key_only_multi_range
from simhash_schema.meta import IndexMeta, VersionMismatch, ensure_meta, read_meta
from simhash_schema.tables import (
    BLOOM_TYPES,
    CLAIM_TTL_SECONDS,
    COMPRESSIONS,
    DRAWER_REGIONS,
    ENCODINGS,
    MIN_RETENTION_SECONDS,
    FamilySpec,
    IndexTables,
    TableSpec,
    index_tables,
)
from simhash_schema.thrift2 import DDL_TIMEOUT_MS, SchemaError, connect, hbase2

__all__ = [
    "BLOOM_TYPES",
    "CLAIM_TTL_SECONDS",
    "COMPRESSIONS",
    "DDL_TIMEOUT_MS",
    "DRAWER_REGIONS",
    "ENCODINGS",
    "MIN_RETENTION_SECONDS",
    "ONLINE_WAIT_SECONDS",
    "FamilySpec",
    "IndexMeta",
    "IndexTables",
    "SchemaError",
    "TableSpec",
    "TableState",
    "VersionMismatch",
    "apply_schema",
    "connect",
    "describe",
    "ensure_meta",
    "hbase2",
    "index_tables",
    "key_only_multi_range",
    "offline_tables",
    "read_meta",
    "read_retention",
    "region_count",
    "set_retention",
    "table_attributes",
    "table_exists",
    "wait_until_online",
]
