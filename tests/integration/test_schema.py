"""The schema on real HBase: every setting read back, idempotent apply, version refusal."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from simhash_schema import (
    CLAIM_TTL_SECONDS,
    IndexMeta,
    SchemaError,
    VersionMismatch,
    apply_schema,
    connect,
    describe,
    ensure_meta,
    hbase2,
    index_tables,
    read_meta,
    region_count,
    table_attributes,
)
from simhash_server.fingerprint import FINGERPRINT_VERSION
from simhash_server.index.keys import LAYOUT
from simhash_server.index.store import IndexStore, StoreConfig

CLI = str(Path(sys.executable).with_name("simhash-index"))


@pytest.fixture
def tables(drop):
    tables = index_tables(f"s{uuid.uuid4().hex[:10]}", drawer_regions=8, compression="SNAPPY")
    yield tables
    drop(tables)


@pytest.fixture
def client(hbase):
    client = connect(hbase.host, hbase.thrift2_port)
    yield client
    client.close()


def test_apply_creates_every_table_with_every_setting(client, tables) -> None:
    states = apply_schema(client, tables)
    assert [s.created for s in states] == [True] * 5
    assert all(s.differences == () for s in states)

    drawers = describe(client, tables.drawers.name)
    assert drawers == {
        "d": {
            "max_versions": 1,
            "bloom": "ROWPREFIX_FIXED_LENGTH",
            "bloom_prefix_length": 5,
            "compression": "NONE",
            "encoding": "FAST_DIFF",
            "block_cache": True,
            "block_size": 4096,
            "ttl_seconds": None,
        }
    }
    assert region_count(client, tables.drawers.name) == 8
    # HBase splits a drawer region only between prefix groups (a snapshot read of clusters relies on it).
    policy = table_attributes(client, tables.drawers.name)
    assert policy["SPLIT_POLICY"] == "org.apache.hadoop.hbase.regionserver.KeyPrefixRegionSplitPolicy"
    assert policy["KeyPrefixRegionSplitPolicy.prefix_length"] == "5"
    for spec in (tables.fp2docs, tables.docs):
        family = describe(client, spec.name)["d"]
        got = (family["bloom"], family["encoding"], family["compression"], family["max_versions"], family["block_size"])
        assert got == ("ROW", "FAST_DIFF", "SNAPPY", 1, 8192)  # 8 KB: read by single rows
    assert region_count(client, tables.fp2docs.name) == 2
    assert describe(client, tables.meta.name)["m"]["max_versions"] == 1
    # Deduplicate's claims lapse on their own: the table's TTL is their lease (index/claims.py).
    assert describe(client, tables.claims.name)["d"]["ttl_seconds"] == CLAIM_TTL_SECONDS


def test_apply_is_idempotent_and_reports_drift(client, tables) -> None:
    apply_schema(client, tables)
    again = apply_schema(client, tables)
    assert [s.created for s in again] == [False] * 5
    assert all(s.differences == () for s in again)
    other = index_tables(tables.drawers.name.removesuffix("_drawers"), drawer_regions=8, compression="ZSTD")
    drift = [state.differences for state in apply_schema(client, other)]
    assert drift[0] == ()  # the drawer table's blocks are uncompressed whatever the option says
    assert drift[1] == drift[2] == ("compression: spec 'ZSTD', table 'SNAPPY'",)


def test_a_drawer_table_made_without_the_split_policy_is_reported(client, tables) -> None:
    from dataclasses import replace

    older = replace(tables, drawers=replace(tables.drawers, attributes=()))  # as schema apply made it before
    apply_schema(client, older)
    drift = apply_schema(client, tables)[0].differences
    assert drift == (
        "SPLIT_POLICY: spec 'org.apache.hadoop.hbase.regionserver.KeyPrefixRegionSplitPolicy', table None",
        "KeyPrefixRegionSplitPolicy.prefix_length: spec '5', table None",
    )


def test_meta_record_refuses_another_version_or_layout(client, tables, hbase) -> None:
    apply_schema(client, tables)
    config = StoreConfig(
        host=hbase.host,
        thrift_port=hbase.thrift_port,
        thrift2_port=hbase.thrift2_port,
        table_prefix=tables.drawers.name.removesuffix("_drawers"),
    )
    with IndexStore(config, tables) as store:
        assert store.meta == IndexMeta(FINGERPRINT_VERSION, LAYOUT)
    assert read_meta(client, tables.meta) == IndexMeta(FINGERPRINT_VERSION, LAYOUT)
    with pytest.raises(VersionMismatch, match="fingerprint_version 'minhash64/"):
        ensure_meta(client, tables.meta, IndexMeta("simhash64/other/r9", LAYOUT))
    with pytest.raises(VersionMismatch, match="layout"):
        ensure_meta(client, tables.meta, IndexMeta(FINGERPRINT_VERSION, "segments=16,16,16,16"))


def test_opening_an_index_without_tables_says_what_to_run(hbase) -> None:
    config = StoreConfig(
        host=hbase.host,
        thrift_port=hbase.thrift_port,
        thrift2_port=hbase.thrift2_port,
        table_prefix=f"absent{uuid.uuid4().hex[:8]}",
        retries=0,
    )
    store = IndexStore(config)
    with pytest.raises(SchemaError, match="simhash-index schema apply"):
        store.open()
    store.close()


def test_apply_refuses_an_index_with_a_disabled_table_naming_it(tables, hbase) -> None:
    """An index whose table cannot serve is not reported ready: the command fails and names the table.

    Each admin call opens its own connection: a command run between them may outlast the gateways' idle
    timeout (6 s here), which closes a connection left open meanwhile."""
    prefix = tables.drawers.name.removesuffix("_drawers")
    env = {
        **os.environ,
        "SIMHASH_HBASE_HOST": hbase.host,
        "SIMHASH_HBASE_THRIFT_PORT": str(hbase.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(hbase.thrift2_port),
        "SIMHASH_TABLE_PREFIX": prefix,
    }

    def apply() -> subprocess.CompletedProcess[str]:
        return subprocess.run([CLI, "schema", "apply"], env=env, capture_output=True, text=True, timeout=120)

    assert apply().returncode == 0
    docs = hbase2().TTableName(qualifier=tables.docs.name.encode())

    def admin(call: str) -> None:
        client = connect(hbase.host, hbase.thrift2_port)
        try:
            getattr(client, call)(docs)
        finally:
            client.close()

    admin("disableTable")
    try:
        refused = apply()
    finally:
        admin("enableTable")
    assert refused.returncode == 1
    assert f"tables disabled: {tables.docs.name};" in refused.stderr
    again = apply()
    assert again.returncode == 0, again.stderr
    assert f"{tables.docs.name}: exists" in again.stdout
