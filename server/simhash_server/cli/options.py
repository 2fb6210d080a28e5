"""Options shared by the commands that reach an index in HBase (schema, serve, bulk-load)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from simhash_server.index.config import StoreConfig

__all__ = ["apply_options", "store_config", "store_options", "version_option"]


def apply_options(command: Callable[..., Any], options: list[Callable[..., Any]]) -> Callable[..., Any]:
    """Decorate ``command`` with click options, listed in the order --help shows them."""
    for option in reversed(options):
        command = option(command)
    return command


def store_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option(
            "--hbase-host",
            default=StoreConfig.host,
            show_default=True,
            envvar="SIMHASH_HBASE_HOST",
            help="Host of the HBase Thrift gateways.",
        ),
        click.option(
            "--thrift-port",
            type=click.IntRange(1, 65535),
            default=StoreConfig.thrift_port,
            show_default=True,
            envvar="SIMHASH_HBASE_THRIFT_PORT",
            help="Thrift1 gateway port (writes, gets).",
        ),
        click.option(
            "--thrift2-port",
            type=click.IntRange(1, 65535),
            default=StoreConfig.thrift2_port,
            show_default=True,
            envvar="SIMHASH_HBASE_THRIFT2_PORT",
            help="Thrift2 gateway port (schema, scans).",
        ),
        click.option(
            "--table-prefix",
            default=StoreConfig.table_prefix,
            show_default=True,
            envvar="SIMHASH_TABLE_PREFIX",
            help="Names the index: tables PREFIX_drawers, PREFIX_fp2docs, PREFIX_docs, PREFIX_meta, PREFIX_claims.",
        ),
        click.option(
            "--hbase-timeout-ms",
            type=click.IntRange(100),
            default=StoreConfig.timeout_ms,
            show_default=True,
            envvar="SIMHASH_HBASE_TIMEOUT_MS",
            help="Socket timeout of each Thrift call.",
        ),
    ]
    return apply_options(command, options)


def store_config(opts: dict[str, Any], **overrides: Any) -> StoreConfig:
    return StoreConfig(
        host=opts.pop("hbase_host"),
        thrift_port=opts.pop("thrift_port"),
        thrift2_port=opts.pop("thrift2_port"),
        table_prefix=opts.pop("table_prefix"),
        timeout_ms=opts.pop("hbase_timeout_ms"),
        **overrides,
    )


def _version(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A fingerprint version by short name (v1, v2, ...) or full string; None stays None (the default)."""
    if value is None:
        return None
    from simhash_server.fingerprint import NAMES, VERSIONS

    version = NAMES.get(value.lower(), value)
    if version not in VERSIONS:
        raise click.BadParameter(f"{value!r}: choose one of {', '.join(NAMES)} (or a full version string)")
    return version


def version_option(help_text: str) -> Callable[..., Any]:
    return click.option(
        "--fingerprint-version",
        default=None,
        envvar="SIMHASH_FINGERPRINT_VERSION",
        callback=_version,
        metavar="v1|v2|v3|v4|v4-nofold",
        help=help_text,
    )
