"""Create the tables through Thrift2 (split keys and family settings Thrift1 cannot set), read them back."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from simhash_schema.tables import BLOOM_PREFIX_KEY, FOREVER, FamilySpec, IndexTables, TableSpec
from simhash_schema.thrift2 import SchemaError, hbase2

__all__ = [
    "ONLINE_WAIT_SECONDS",
    "TableState",
    "apply_schema",
    "describe",
    "offline_tables",
    "read_retention",
    "region_count",
    "set_retention",
    "table_exists",
    "wait_until_online",
]

# How long `schema apply` waits for an existing table's regions to come online: regions being reassigned
# after a region server's crash take 20-30 s on the test cluster.
ONLINE_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class TableState:
    name: str
    created: bool
    differences: tuple[str, ...]  # settings of an existing table that differ from the spec


def _table_name(name: str) -> Any:
    ns, _, qualifier = name.rpartition(":")
    return hbase2().TTableName(ns=ns.encode() or None, qualifier=qualifier.encode())


def _family_descriptor(spec: FamilySpec) -> Any:
    t = hbase2()
    config = {BLOOM_PREFIX_KEY: str(spec.bloom_prefix_length)} if spec.bloom_prefix_length else None
    return t.TColumnFamilyDescriptor(
        name=spec.name.encode(),
        maxVersions=spec.max_versions,
        bloomnFilterType=getattr(t.TBloomFilterType, spec.bloom),  # sic: the IDL spells it so
        compressionType=getattr(t.TCompressionAlgorithm, spec.compression),
        dataBlockEncoding=getattr(t.TDataBlockEncoding, spec.encoding),
        blockCacheEnabled=spec.block_cache,
        blockSize=spec.block_size,
        timeToLive=spec.ttl_seconds or FOREVER,
        configuration=config,
    )


def _enum_name(enum: Any, value: int | None) -> str | None:
    return None if value is None else enum._VALUES_TO_NAMES.get(value, str(value))


def describe(client: Any, name: str) -> dict[str, Any]:
    """The table's family settings as HBase reports them, in FamilySpec's terms."""
    t = hbase2()
    desc = client.getTableDescriptor(_table_name(name))
    families = {}
    for cf in desc.columns or []:
        families[cf.name.decode()] = {
            "max_versions": cf.maxVersions,
            "bloom": _enum_name(t.TBloomFilterType, cf.bloomnFilterType),
            "bloom_prefix_length": int(cf.configuration[BLOOM_PREFIX_KEY])
            if cf.configuration and BLOOM_PREFIX_KEY in cf.configuration
            else None,
            "compression": _enum_name(t.TCompressionAlgorithm, cf.compressionType),
            "encoding": _enum_name(t.TDataBlockEncoding, cf.dataBlockEncoding),
            "block_cache": cf.blockCacheEnabled,
            "block_size": cf.blockSize,
            "ttl_seconds": None if cf.timeToLive in (None, FOREVER) else cf.timeToLive,
        }
    return families


def table_exists(client: Any, name: str) -> bool:
    return bool(client.tableExists(_table_name(name)))


def region_count(client: Any, name: str) -> int:
    return len(client.getAllRegionLocations(name.encode()))


def _differences(spec: TableSpec, actual: dict[str, Any]) -> tuple[str, ...]:
    want = spec.family
    have = actual.get(want.name)
    if have is None:
        return (f"family {want.name!r} missing (has {sorted(actual)})",)
    return tuple(
        f"{key}: spec {getattr(want, key)!r}, table {value!r}"
        for key, value in have.items()
        if getattr(want, key) != value
    )


def table_attributes(client: Any, name: str) -> dict[str, str]:
    """The table descriptor's values (SPLIT_POLICY and the like) as HBase reports them."""
    desc = client.getTableDescriptor(_table_name(name))
    return {k.decode(): v.decode() for k, v in (desc.attributes or {}).items()}


def _attribute_differences(client: Any, spec: TableSpec) -> tuple[str, ...]:
    if not spec.attributes:
        return ()
    have = table_attributes(client, spec.name)
    return tuple(
        f"{key}: spec {value!r}, table {have.get(key)!r}" for key, value in spec.attributes if have.get(key) != value
    )


def apply_schema(client: Any, tables: IndexTables) -> list[TableState]:
    """Create every missing table; report how existing ones differ.  Idempotent."""
    t = hbase2()
    states = []
    for spec in tables.all():
        name = _table_name(spec.name)
        created = False
        if not client.tableExists(name):
            desc = t.TTableDescriptor(
                tableName=name,
                columns=[_family_descriptor(spec.family)],
                attributes={k.encode(): v.encode() for k, v in spec.attributes} or None,
            )
            try:
                client.createTable(desc, list(spec.split_keys) or None)
                created = True
            except t.TIOError as exc:
                if not client.tableExists(name):  # another process may have created it first
                    raise SchemaError(f"cannot create table {spec.name}: {exc.message}") from exc
            except TimeoutError as exc:
                raise SchemaError(
                    f"cannot create table {spec.name}: the HMaster had not finished creating it when the wait "
                    "ended; if its regions cannot open (the master's log says why), the next `schema apply` "
                    "names them"
                ) from exc
        drift = _differences(spec, describe(client, spec.name)) + _attribute_differences(client, spec)
        states.append(TableState(spec.name, created, drift))
    return states


def offline_tables(client: Any, tables: IndexTables) -> dict[str, str]:
    """The index's existing tables that cannot serve, and why: disabled, or regions not all open (a table
    being created or enabled is neither enabled nor disabled until its regions are open)."""
    offline = {}
    for spec in tables.all():
        name = _table_name(spec.name)
        if not client.tableExists(name):
            continue
        if client.isTableDisabled(name):
            offline[spec.name] = "disabled"
        elif not (client.isTableEnabled(name) and client.isTableAvailable(name)):
            offline[spec.name] = "regions not all open"  # or still being created, enabled or disabled
    return offline


def wait_until_online(client: Any, tables: IndexTables, seconds: float = ONLINE_WAIT_SECONDS) -> None:
    """Return once every existing table of the index can serve; SchemaError naming the ones that cannot: at
    once for a disabled table (only an operator enables it), after ``seconds`` for regions that stay closed.

    Regions that never open are how HBase 2.6 leaves a table created while HDFS refused new files (a
    NameNode in safe mode): the master writes no table descriptor, does not notice, and retries the
    assignment for ever."""
    deadline = time.monotonic() + seconds
    while True:
        offline = offline_tables(client, tables)
        disabled = sorted(name for name, why in offline.items() if why == "disabled")
        if disabled:
            quoted = ", ".join(disabled)
            raise SchemaError(f"tables disabled: {quoted}; enable them (HBase shell: enable '<table>')")
        if not offline:
            return
        if time.monotonic() >= deadline:
            raise SchemaError(
                f"tables whose regions did not all open within {seconds:.0f} s: {', '.join(sorted(offline))}; "
                "the HMaster's log says why (HBase 2.6 leaves a table created while HDFS was in safe mode "
                "without its .tabledesc: HBCK2's generateMissingTableDescriptorFile writes it)"
            )
        time.sleep(1)  # between checks of the regions' state


def read_retention(client: Any, tables: IndexTables) -> int | None:
    """The index's retention: its docs table's TTL in seconds (None: none, or no table yet)."""
    if not table_exists(client, tables.docs.name):
        return None
    return describe(client, tables.docs.name).get(tables.docs.family.name, {}).get("ttl_seconds")


def set_retention(client: Any, tables: IndexTables) -> list[str]:
    """Give the existing document tables the TTL their specs name (``index_tables(retention_seconds=...)``),
    changing nothing else of their families (an online alter); the names of the tables changed."""
    changed = []
    for spec in tables.documents():
        name = _table_name(spec.name)
        if not client.tableExists(name):
            continue  # apply_schema creates it with the TTL
        want = spec.family.ttl_seconds or FOREVER
        for family in client.getTableDescriptor(name).columns or []:
            if family.name.decode() == spec.family.name and (family.timeToLive or FOREVER) != want:
                family.timeToLive = want
                try:
                    client.modifyColumnFamily(name, family)
                except hbase2().TIOError as exc:
                    raise SchemaError(f"cannot set the retention of {spec.name}: {exc.message}") from exc
                changed.append(spec.name)
    return changed
