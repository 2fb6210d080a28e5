"""`simhash-index serve`: the gRPC server.  Every flag has a SIMHASH_* environment variable."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import click

from simhash_server.cli.options import store_config, store_options
from simhash_server.index.config import StoreConfig
from simhash_server.rpc.event_loop import EVENT_LOOPS


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
    "--warmup-queries",
    type=click.IntRange(0),
    default=2000,
    show_default=True,
    envvar="SIMHASH_WARMUP_QUERIES",
    help="At least this many queries asked before the port opens (half random, half near stored fingerprints), "
    "so that the first callers do not pay for a freshly started HBase's compiling and caching; 0: none.",
)
@click.option(
    "--warmup-until-settled/--warmup-fixed",
    default=True,
    show_default=True,
    envvar="SIMHASH_WARMUP_UNTIL_SETTLED",
    help="After --warmup-queries, go on in rounds of 500 until a round's median latency stops falling (the JVMs "
    "have compiled their read path); --warmup-fixed asks exactly --warmup-queries.",
)
@click.option(
    "--warmup-seconds",
    type=click.FloatRange(0),
    default=30.0,
    show_default=True,
    envvar="SIMHASH_WARMUP_SECONDS",
    help="The most time the warm-up may take.",
)
@click.option(
    "--pool-size",
    type=click.IntRange(1),
    default=StoreConfig.pool_size,
    show_default=True,
    envvar="SIMHASH_POOL_SIZE",
    help="Thrift connections per gateway.",
)
@click.option(
    "--query-lanes",
    type=click.IntRange(1),
    default=StoreConfig.query_lanes,
    show_default=True,
    envvar="SIMHASH_QUERY_LANES",
    help="Batches of drawer scans at once; concurrent queries share batches.",
)
@click.option(
    "--write-lanes",
    type=click.IntRange(1),
    default=StoreConfig.write_lanes,
    show_default=True,
    envvar="SIMHASH_WRITE_LANES",
    help="Batches of writes at once; concurrent Index calls share batches.",
)
@click.option(
    "--batch-queries",
    type=click.IntRange(1),
    default=StoreConfig.batch_queries,
    show_default=True,
    envvar="SIMHASH_BATCH_QUERIES",
    help="Most concurrent queries answered by one batch of drawer scans (a QueryBatch's or DeduplicateBatch's "
    "items are read together, however many).",
)
@click.option(
    "--batch-documents",
    type=click.IntRange(1),
    default=StoreConfig.batch_documents,
    show_default=True,
    envvar="SIMHASH_BATCH_DOCUMENTS",
    help="Most documents of concurrent Index calls written by one batch.",
)
@click.option(
    "--dedup-order",
    type=click.Choice(["auto", "ask-first", "claim-first"]),
    default="auto",
    show_default=True,
    envvar="SIMHASH_DEDUP_ORDER",
    help="Whether Deduplicate queries before it takes its claims, answering a duplicate without them: "
    "auto while a third or more of recent documents were duplicates (docs/dedup.md).",
)
@click.option(
    "--event-loop",
    type=click.Choice(EVENT_LOOPS),
    default=EVENT_LOOPS[0],
    show_default=True,
    envvar="SIMHASH_EVENT_LOOP",
    help="The event loop that runs the gRPC server's calls: libuv's (uvloop), or asyncio's own.",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    envvar="SIMHASH_WORKERS",
    help="Threads for blocking work outside the query and write batches: Get, Delete, Stats, long texts.",
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
    "--max-calls-per-method",
    type=click.IntRange(1),
    default=64,
    show_default=True,
    envvar="SIMHASH_MAX_CALLS_PER_METHOD",
    help="Calls of one method in flight (running or queued for HBase); beyond, RESOURCE_EXHAUSTED with a RetryInfo.",
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
    "--tls-cert",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SIMHASH_TLS_CERT",
    help="Server certificate chain (PEM): serve TLS.",
)
@click.option(
    "--tls-key",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SIMHASH_TLS_KEY",
    help="Its private key (PEM).",
)
@click.option(
    "--tls-client-ca",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SIMHASH_TLS_CLIENT_CA",
    help="CA certificates (PEM) that sign client certificates: require mutual TLS.",
)
@click.option(
    "--tokens-file",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="SIMHASH_TOKENS_FILE",
    help="Bearer tokens, one 'ROLE TOKEN' per line (roles: read, write); or SIMHASH_TOKENS='ROLE TOKEN,...'.  "
    "The file and the TLS files are reread on SIGHUP and when they change.",
)
@click.option(
    "--credentials-check-seconds",
    type=click.FloatRange(min=0.1),
    default=5.0,
    show_default=True,
    envvar="SIMHASH_CREDENTIALS_CHECK_SECONDS",
    help="How often the TLS certificate, key and tokens file are checked for a change.",
)
@click.option(
    "--insecure",
    is_flag=True,
    envvar="SIMHASH_INSECURE",
    help="Allow serving a non-loopback address with neither TLS nor tokens (logs a warning).",
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
    warmup_queries: int,
    warmup_until_settled: bool,
    warmup_seconds: float,
    pool_size: int,
    query_lanes: int,
    write_lanes: int,
    batch_queries: int,
    batch_documents: int,
    dedup_order: str,
    event_loop: str,
    workers: int,
    max_concurrent_calls: int,
    max_calls_per_method: int,
    max_text_bytes: int,
    max_batch: int,
    max_limit: int,
    log_level: str,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_client_ca: Path | None,
    tokens_file: Path | None,
    credentials_check_seconds: float,
    insecure: bool,
    **opts: Any,
) -> None:
    """Serve the SimHashIndex gRPC API (with health checking and reflection) until SIGTERM or Ctrl-C.

    Traces every call by OTLP when the standard OTEL_* variables configure an exporter, such as
    OTEL_EXPORTER_OTLP_ENDPOINT (docs/operations.md#traces-following-one-call-opentelemetry)."""
    from simhash_server.rpc.limits import Limits
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        limits = Limits(
            max_text_bytes=max_text_bytes,
            max_batch=max_batch,
            max_limit=max_limit,
            max_concurrent_calls=max_concurrent_calls,
            max_calls_per_method=max_calls_per_method,
            workers=workers,
            default_limit=min(100, max_limit),
        )
        config = ServerConfig(
            address=address,
            metrics_address=metrics_address or None,
            grace_seconds=grace_seconds,
            warmup_queries=warmup_queries,
            warmup_seconds=warmup_seconds,
            warmup_until_settled=warmup_until_settled,
            dedup_order=dedup_order,
            event_loop=event_loop,
            limits=limits,
            store=store_config(
                opts,
                pool_size=pool_size,
                query_lanes=query_lanes,
                write_lanes=write_lanes,
                batch_queries=batch_queries,
                batch_documents=batch_documents,
            ),
            tls=_tls(tls_cert, tls_key, tls_client_ca),
            tokens=_tokens(tokens_file),
            tokens_file=tokens_file,
            credentials_check_seconds=credentials_check_seconds,
            insecure=insecure,
            tracing=True,  # as OTEL_* say: off when they configure no exporter
        )
        server = SimHashServer(config)
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        server.serve_forever()  # logs the address it serves once bound
    except (ValueError, OSError) as exc:  # the address is taken, a TLS file unreadable
        raise click.ClickException(str(exc)) from exc


def _tls(cert: Path | None, key: Path | None, client_ca: Path | None):  # -> TLSConfig | None
    from simhash_server.rpc.security import TLSConfig

    if cert is None and key is None:
        if client_ca is not None:
            raise ValueError("--tls-client-ca needs --tls-cert and --tls-key")
        return None
    if cert is None or key is None:
        raise ValueError("TLS needs both --tls-cert and --tls-key")
    return TLSConfig(cert, key, client_ca)


def _tokens(tokens_file: Path | None):  # -> Tokens | None
    from simhash_server.rpc.security import Tokens

    inline = os.environ.get("SIMHASH_TOKENS")
    if tokens_file is not None and inline:
        raise ValueError("give tokens by --tokens-file or SIMHASH_TOKENS, not both")
    if tokens_file is not None:
        return Tokens.from_file(tokens_file)
    return Tokens.parse(inline, "SIMHASH_TOKENS") if inline else None
