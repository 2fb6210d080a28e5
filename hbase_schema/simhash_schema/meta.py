"""The index's meta record: which fingerprint recipe and key layout its rows were written with."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from simhash_schema.tables import TableSpec
from simhash_schema.thrift2 import SchemaError, hbase2

__all__ = ["IndexMeta", "VersionMismatch", "ensure_meta", "read_meta"]

ROW = b"index"
FIELDS = ("fingerprint_version", "layout")


class VersionMismatch(SchemaError):
    """The stored index was written with another fingerprint version or layout than this server's."""


@dataclass(frozen=True)
class IndexMeta:
    fingerprint_version: str
    layout: str


def read_meta(client: Any, table: TableSpec) -> IndexMeta | None:
    t = hbase2()
    family = table.family.name.encode()
    result = client.get(table.name.encode(), t.TGet(row=ROW))
    values = {cv.qualifier.decode(): cv.value.decode() for cv in result.columnValues or [] if cv.family == family}
    if not values:
        return None
    missing = [f for f in FIELDS if f not in values]
    if missing:
        raise SchemaError(f"meta record of {table.name} lacks {', '.join(missing)}")
    return IndexMeta(values["fingerprint_version"], values["layout"])


def ensure_meta(client: Any, table: TableSpec, expected: IndexMeta) -> IndexMeta:
    """Write the meta record of a new index; refuse one written with another version or layout."""
    t = hbase2()
    stored = read_meta(client, table)
    if stored is None:
        family = table.family.name.encode()
        values = {
            **{f: getattr(expected, f) for f in FIELDS},
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        put = t.TPut(
            row=ROW,
            columnValues=[
                t.TColumnValue(family=family, qualifier=k.encode(), value=v.encode()) for k, v in values.items()
            ],
        )
        # checkAndPut on "no fingerprint_version yet": two first starts cannot write different records.
        client.checkAndPut(table.name.encode(), ROW, family, b"fingerprint_version", None, put)
        stored = read_meta(client, table)
    if stored != expected:
        for f in FIELDS:
            if getattr(stored, f) != getattr(expected, f):
                raise VersionMismatch(
                    f"index {table.name} holds fingerprints of {f} {getattr(stored, f)!r}, this server makes "
                    f"{getattr(expected, f)!r}: refusing to mix them (use another table prefix, or reindex)"
                )
    return stored
