"""`simhash-index schema apply|show`: the index's tables as code, created idempotently through Thrift2."""

from __future__ import annotations

import json
from typing import Any

import click

from simhash_client.times import parse_duration
from simhash_schema import DRAWER_REGIONS
from simhash_server.cli.options import store_config, store_options, version_option
from simhash_server.fingerprint.versions import FINGERPRINT_VERSION, short_name


def _retention(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """--retention in seconds; 0 for 'forever'; None when not given (keep the index's)."""
    if value is None:
        return None
    if value.strip().lower() == "forever":
        return 0
    try:
        return round(parse_duration(value).total_seconds())
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


@click.group()
def schema() -> None:
    """Create or inspect the index's HBase tables."""


@schema.command()
@store_options
@click.option(
    "--regions",
    type=click.IntRange(1, 4096),
    default=DRAWER_REGIONS,
    show_default=True,
    envvar="SIMHASH_DRAWER_REGIONS",
    help="Pre-split the drawer table into this many regions (keys are uniform: splits are even).  The default "
    "suits one region server; on a cluster, a few per region server (docs/operations.md).",
)
@click.option(
    "--compression",
    type=click.Choice(["NONE", "SNAPPY", "LZ4", "ZSTD", "GZ"]),
    default="LZ4",
    show_default=True,
    envvar="SIMHASH_COMPRESSION",
    help="Block compression of the fp2docs and docs tables (pure-Java codecs; LZ4 is the cheapest to read, "
    "docs/decisions.md).  The drawer table's blocks are not compressed: queries read them faster.",
)
@click.option(
    "--retention",
    callback=_retention,
    envvar="SIMHASH_RETENTION",
    help="Keep documents this long after their indexed_at (30d, 72h; at least 1h), then let HBase drop them from "
    "every table (a TTL); 'forever' removes it.  Applies to an existing index at once.  [default: as the index "
    "has it; a new index keeps documents for good]",
)
@version_option(
    "The fingerprint recipe a new index is created with (v1 for the recipe of simhash-index 0.1).  An existing "
    f"index keeps its own; naming another one is refused.  [default: the newest, {short_name(FINGERPRINT_VERSION)}]"
)
def apply(regions: int, compression: str, retention: int | None, fingerprint_version: str | None, **opts: Any) -> None:
    """Create missing tables and the meta record; set the retention if asked; report settings of existing
    tables that differ."""
    from simhash_schema import (
        DDL_TIMEOUT_MS,
        SchemaError,
        apply_schema,
        connect,
        index_tables,
        read_retention,
        set_retention,
        wait_until_online,
    )
    from simhash_server.index.errors import StoreError
    from simhash_server.index.store import IndexStore

    config = store_config(opts, fingerprint_version=fingerprint_version)
    try:
        client = connect(config.host, config.thrift2_port, max(config.timeout_ms, DDL_TIMEOUT_MS))
        keep = retention is None  # not given: whatever the index has
        seconds = read_retention(client, index_tables(config.table_prefix)) if keep else retention or None
        try:
            tables = index_tables(config.table_prefix, regions, compression, retention_seconds=seconds)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--retention") from None
        changed = [] if keep else set_retention(client, tables)
        states = apply_schema(client, tables)
        wait_until_online(client, tables)
        client.close()
        with IndexStore(config, tables) as store:  # writes or checks the meta record
            meta = store.meta
    except (SchemaError, StoreError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    for state in states:
        click.echo(f"{state.name}: {'created' if state.created else 'exists'}")
        if state.name in changed:
            click.echo("  retention changed")
        for diff in state.differences:
            click.echo(f"  differs from the spec: {diff}", err=True)
    click.echo(f"fingerprint version: {meta.fingerprint_version}\nlayout: {meta.layout}")
    click.echo(f"retention: {'forever' if seconds is None else f'{seconds} s'}")


@schema.command()
@store_options
def show(**opts: Any) -> None:
    """Print each table's family settings and region count as HBase reports them (JSON)."""
    from simhash_schema import SchemaError, connect, describe, index_tables, read_meta, region_count

    config = store_config(opts)
    tables = index_tables(config.table_prefix)
    try:
        client = connect(config.host, config.thrift2_port, config.timeout_ms)
        report = {
            t.name: {"families": describe(client, t.name), "regions": region_count(client, t.name)}
            for t in tables.all()
        }
        meta = read_meta(client, tables.meta)
    except (SchemaError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    except Exception as exc:
        raise click.ClickException(f"cannot describe the tables (run `simhash-index schema apply`): {exc!r}") from exc
    report["meta"] = meta.__dict__ if meta else None
    click.echo(json.dumps(report, indent=2))
