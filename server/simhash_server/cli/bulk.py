"""`simhash-index bulk-load`: fingerprints (or texts) from files straight into the index in HBase."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from simhash_server.cli.options import apply_options, store_config, store_options

EXIT_REJECTS = 3  # the load finished, but some lines were rejected

_NO_WAL_HELP = (
    "Write without HBase's write-ahead log: faster, and the load ends by flushing the tables to store files. "
    "If HBase itself crashes before that flush, rows written since its last flush are lost although the "
    "checkpoint counts them: reload from the start (without --resume).  Only for the project's local "
    "HBase (--hbase-var-dir), the one this command can flush."
)


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The inputs and how they are read: shared by bulk-load and hfile-load (one input layer)."""
    from simhash_server.bulk.input import COMPRESSIONS, FINGERPRINT_FORMATS, FORMATS

    options = [
        click.argument("inputs", nargs=-1, required=True, metavar="INPUT..."),
        click.option("--format", "fmt", type=click.Choice(FORMATS), help="Input format.  [default: by file name]"),
        click.option(
            "--compression", type=click.Choice(COMPRESSIONS), help="Input compression.  [default: by file name]"
        ),
        click.option(
            "--fingerprint-format",
            type=click.Choice(FINGERPRINT_FORMATS),
            default="auto",
            show_default=True,
            help="How TSV/CSV simhash fields are written; auto rejects 16 all-decimal digits as ambiguous.",
        ),
        click.option(
            "--rejects",
            help="Where rejected lines go (input, line, reason, line).  [default: FIRST_INPUT.rejects.tsv; for "
            "hfile-load of URIs, a directory FIRST_INPUT.rejects on the same filesystem]",
        ),
        click.option(
            "--max-rejects",
            type=click.IntRange(0),
            help="Stop the load once more lines than this are rejected.  [default: no limit]",
        ),
        click.option("--quiet", is_flag=True, help="Log a line every 10 s instead of a progress bar."),
    ]
    return apply_options(command, options)


def input_sources(opts: dict[str, Any]) -> list[Any]:
    """The checked InputSources of the command line (ClickException for a missing or unreadable one)."""
    from simhash_server.bulk.input import InputSource

    inputs: tuple[str, ...] = opts.pop("inputs")
    try:
        sources = [
            InputSource.detect(path, opts["fmt"], opts["compression"], opts["fingerprint_format"]) for path in inputs
        ]
    except (ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    missing = [p for p in inputs if p != "-" and not Path(p).is_file()]
    if missing:
        raise click.ClickException(f"no such input file: {', '.join(missing)}")
    if inputs.count("-") > 1:
        raise click.ClickException("stdin (-) can be given once")
    return sources


def _bulk_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="Writer processes."),
        click.option(
            "--batch-size",
            type=click.IntRange(1, 100_000),
            default=5_000,
            show_default=True,
            help="Documents per HBase write per worker.",
        ),
        click.option("--wal/--no-wal", default=True, show_default=True, help=_NO_WAL_HELP),
        click.option("--resume", is_flag=True, help="Continue an interrupted load from its checkpoint."),
        click.option(
            "--checkpoint",
            type=click.Path(dir_okay=False, path_type=Path),
            help="Checkpoint file.  [default: FIRST_INPUT.checkpoint]",
        ),
        click.option(
            "--hbase-var-dir",
            type=click.Path(file_okay=False, path_type=Path),
            envvar="SIMHASH_HBASE_VAR_DIR",
            help="The local HBase to flush after --no-wal.  [default: var/hbase in the checkout]",
        ),
    ]
    return apply_options(command, options)


@click.command("bulk-load")
@input_options
@_bulk_options
@store_options
@click.pass_context
def bulk_load(ctx: click.Context, **opts: Any) -> None:
    """Load INPUT files (or - for stdin) into the index, straight to HBase.

    \b
    Formats: tsv (doc_id TAB simhash), csv (doc_id,simhash), jsonl ({"doc_id": ..., "simhash": ...} or
    {"doc_id": ..., "text": ...}; texts are fingerprinted with the server's recipe), bin (README).
    Plain, gzip (.gz) or zstd (.zst).  Bad lines go to the reject file with their line number and reason.

    \b
    Exit status: 0 every line loaded; 3 the load finished but lines were rejected; 1 the load stopped
    (the checkpoint holds what was written: --resume continues it).
    """
    from simhash_schema import SchemaError
    from simhash_server.bulk.load import BulkLoadError, LoadOptions, run_load
    from simhash_server.index.errors import StoreError

    sources = input_sources(opts)
    first = sources[0].path
    if first == "-" and (opts["checkpoint"] is None or opts["rejects"] is None):
        raise click.ClickException("reading stdin first: give --checkpoint and --rejects")
    checkpoint = opts["checkpoint"] or Path(first + ".checkpoint")
    rejects = Path(opts["rejects"] or first + ".rejects.tsv")
    wal = opts["wal"]
    config = store_config(opts, wal=wal)
    flush = None if wal else _local_flush(opts["hbase_var_dir"], config.thrift_port)
    options = LoadOptions(
        store=config,
        checkpoint=checkpoint,
        rejects=rejects,
        workers=opts["workers"],
        batch_size=opts["batch_size"],
        resume=opts["resume"],
        max_rejects=opts["max_rejects"],
        flush=flush,
    )
    try:
        stats = with_progress(lambda report: run_load(sources, options, report), opts["quiet"], _describe)
    except (BulkLoadError, ValueError, OSError) as exc:
        raise click.ClickException(f"{exc}\nthe checkpoint is {checkpoint}: --resume continues from it") from exc
    except (SchemaError, StoreError) as exc:  # a missing schema or another fingerprint version
        raise click.ClickException(str(exc)) from exc
    rate = stats.documents_per_second
    click.echo(
        f"lines read {stats.lines:,}; documents loaded {stats.documents:,}; rejected {stats.rejected:,}; "
        f"rows written {stats.rows:,}; elapsed {stats.elapsed:.1f} s; {rate:,.0f} documents/s"
        + (f" (resumed at line {stats.resumed_at_line:,})" if stats.resumed_at_line > 1 else "")
    )
    if stats.rejected:
        click.echo(f"{stats.rejected:,} lines rejected: see {rejects}", err=True)
        ctx.exit(EXIT_REJECTS)


def _local_flush(var_dir: Path | None, thrift_port: int) -> Callable[[list[str]], None]:
    from simhash_deploy import HBaseError, LocalHBase

    local = LocalHBase(var_dir=var_dir)
    if not local.is_running() or local.ports.thrift != thrift_port:
        raise click.ClickException(
            f"--no-wal ends with a flush, which this command can only ask of the project's local HBase; none "
            f"under {local.var_dir} serves Thrift port {thrift_port}.  Load with the WAL on (the default)."
        )

    def flush(tables: list[str]) -> None:
        try:
            local.flush(tables)
        except HBaseError as exc:
            raise click.ClickException(f"the final flush failed, so the load is not durable: {exc}") from exc

    return flush


def with_progress(load: Callable[[Callable[[Any], None]], Any], quiet: bool, describe: Callable[[Any], str]) -> Any:
    """Run ``load`` with a progress bar by input bytes read (or a log line every 10 s)."""
    if quiet or not sys.stderr.isatty():
        last = [time.monotonic()]

        def log_line(stats: Any) -> None:
            now = time.monotonic()
            if now - last[0] >= 10 or stats.complete:
                last[0] = now
                click.echo(describe(stats), err=True)

        return load(log_line)
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    with Progress(
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
        transient=False,
    ) as progress:
        task = progress.add_task("starting", total=None)

        def show(stats: Any) -> None:
            description = describe(stats)
            progress.update(task, completed=stats.file_bytes_read, total=stats.total_bytes, description=description)

        return load(show)


def _describe(stats: Any) -> str:
    rate = stats.rows_per_second
    return (
        f"{stats.lines:,} lines, {stats.documents:,} documents, {stats.rejected:,} rejected, "
        f"{rate:,.0f} rows/s, {stats.file_bytes_read / 2**20:,.1f} MiB read"
    )
