"""`simhash-index serve`: the gRPC server.  Every flag has a SIMHASH_* environment variable."""

from __future__ import annotations

import logging
from typing import Any

import click

from simhash_server.cli_options import store_config, store_options


@click.command()
@store_options
@click.option(
    "--address",
    default="127.0.0.1:50051",
    show_default=True,
    envvar="SIMHASH_ADDRESS",
    help="host:port to serve gRPC on.",
)
@click.option(
    "--metrics-address",
    default="127.0.0.1:9464",
    show_default=True,
    envvar="SIMHASH_METRICS_ADDRESS",
    help="host:port for Prometheus metrics; empty to turn them off.",
)
@click.option(
    "--grace-seconds",
    type=click.FloatRange(0),
    default=10.0,
    show_default=True,
    envvar="SIMHASH_GRACE_SECONDS",
    help="On SIGTERM/Ctrl-C, how long in-flight calls may finish.",
)
@click.option(
    "--pool-size",
    type=click.IntRange(1),
    default=32,
    show_default=True,
    envvar="SIMHASH_POOL_SIZE",
    help="Thrift connections per gateway.",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=32,
    show_default=True,
    envvar="SIMHASH_WORKERS",
    help="Threads serving calls.",
)
@click.option(
    "--max-concurrent-calls",
    type=click.IntRange(1),
    default=256,
    show_default=True,
    envvar="SIMHASH_MAX_CONCURRENT_CALLS",
    help="Beyond this, calls get RESOURCE_EXHAUSTED.",
)
@click.option(
    "--max-text-bytes",
    type=click.IntRange(1),
    default=2 * 1024 * 1024,
    show_default=True,
    envvar="SIMHASH_MAX_TEXT_BYTES",
    help="Largest text accepted (UTF-8 bytes).",
)
@click.option(
    "--max-batch",
    type=click.IntRange(1),
    default=1000,
    show_default=True,
    envvar="SIMHASH_MAX_BATCH",
    help="Most documents per IndexBatch and ids per Delete.",
)
@click.option(
    "--max-limit",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    envvar="SIMHASH_MAX_LIMIT",
    help="Most hits a query may ask for.",
)
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
    default="INFO",
    show_default=True,
    envvar="SIMHASH_LOG_LEVEL",
)
def serve(
    address: str,
    metrics_address: str,
    grace_seconds: float,
    pool_size: int,
    workers: int,
    max_concurrent_calls: int,
    max_text_bytes: int,
    max_batch: int,
    max_limit: int,
    log_level: str,
    **opts: Any,
) -> None:
    """Serve the SimHashIndex gRPC API (with health checking and reflection) until SIGTERM or Ctrl-C."""
    from simhash_server.limits import Limits
    from simhash_server.server import ServerConfig, SimHashServer

    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        limits = Limits(
            max_text_bytes=max_text_bytes,
            max_batch=max_batch,
            max_limit=max_limit,
            max_concurrent_calls=max_concurrent_calls,
            workers=workers,
            default_limit=min(100, max_limit),
        )
        config = ServerConfig(
            address=address,
            metrics_address=metrics_address or None,
            grace_seconds=grace_seconds,
            limits=limits,
            store=store_config(opts, pool_size=pool_size),
        )
        server = SimHashServer(config)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"serving on {address.rsplit(':', 1)[0]}:{server.port} (metrics: {metrics_address or 'off'})", err=True)
    server.serve_forever()
