"""The index's meta record and table settings, as a store opening the index reads them: which recipe and
layout its fingerprints have (a server refuses to mix others in), which tables exist, and its retention."""

from __future__ import annotations

from typing import Any

from simhash_schema import IndexMeta, IndexTables, VersionMismatch, describe, ensure_meta, read_meta, table_exists
from simhash_server.fingerprint import VERSIONS, Recipe, recipe_of
from simhash_server.index.keys import LAYOUT

__all__ = ["check_meta", "meta_record", "missing_tables", "retention_of"]


def check_meta(stored: IndexMeta, wanted: str | None) -> Recipe:
    """The recipe an index's meta record names, if this build serves it (and it is ``wanted``, if given)."""
    if stored.layout != LAYOUT:
        raise VersionMismatch(
            f"the index holds fingerprints of layout {stored.layout!r}, this server reads {LAYOUT!r}: "
            "refusing to mix them (use another table prefix, or reindex)"
        )
    if stored.fingerprint_version not in VERSIONS:
        raise VersionMismatch(
            f"the index holds fingerprints of fingerprint_version {stored.fingerprint_version!r}, which this "
            f"build does not make (it knows {', '.join(map(repr, VERSIONS))}): refusing to mix them"
        )
    if wanted is not None and stored.fingerprint_version != wanted:
        raise VersionMismatch(
            f"the index holds fingerprints of fingerprint_version {stored.fingerprint_version!r}, not the "
            f"{wanted!r} asked for: refusing to mix them (use another table prefix, or reindex: docs/operations.md)"
        )
    return recipe_of(stored.fingerprint_version)


def meta_record(client: Any, tables: IndexTables, wanted: str) -> IndexMeta:
    """The index's meta record; a new index records ``wanted`` (the first writer wins)."""
    stored = read_meta(client, tables.meta)
    if stored is None:
        stored = ensure_meta(client, tables.meta, IndexMeta(wanted, LAYOUT))
    return stored


def missing_tables(client: Any, tables: IndexTables) -> list[str]:
    """The index's tables that do not exist, but the claims table: without it only Deduplicate fails
    (claims.py says to apply the schema), so a server upgraded before `schema apply` serves the rest."""
    return [s.name for s in tables.all() if s is not tables.claims and not table_exists(client, s.name)]


def retention_of(client: Any, tables: IndexTables) -> int | None:
    """The index's retention: the docs table's TTL (`schema apply --retention` sets all three alike)."""
    return describe(client, tables.docs.name).get(tables.docs.family.name, {}).get("ttl_seconds")
