"""`simhash-index gc`: orphans and incomplete documents found and fixed (simhash_server.index.gc), resumably."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

import click

from simhash_server.cli.options import store_config, store_options


@click.command("gc")
@store_options
@click.option(
    "--grace",
    "grace_seconds",
    type=click.IntRange(0),
    default=600,
    show_default=True,
    help="Leave cells younger than this many seconds alone (live writers' steps are in flight).",
)
@click.option("--dry-run", is_flag=True, help="Count what would be fixed; change nothing.")
@click.option("--restart", is_flag=True, help="Start over instead of resuming an interrupted run.")
@click.option(
    "--compact",
    is_flag=True,
    help="Then print the HBase shell commands that major-compact the tables, dropping the delete markers "
    "scans still step over (HBase 2.6's Thrift gateway cannot: its majorCompact runs a minor compaction).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress bar (a line every 10 s instead).")
def gc_command(grace_seconds: int, dry_run: bool, restart: bool, compact: bool, quiet: bool, **opts: Any) -> None:
    """Delete drawer rows and fp2docs columns no document owns, and make incomplete documents whole.

    Safe beside live traffic, and resumable: an interrupted run goes on where it stopped (the point is
    kept in the index's meta table).  Prints the report as JSON; `simhash-index stats` shows the last one."""
    from simhash_schema import SchemaError
    from simhash_server.index.errors import StoreError
    from simhash_server.index.gc import collect, major_compact_commands
    from simhash_server.index.store import IndexStore

    try:
        with IndexStore(store_config(opts)) as store:
            report = _with_progress(
                lambda progress: collect(store, grace_seconds, dry_run, restart, progress),
                quiet or not sys.stderr.isatty(),
            )
            commands = major_compact_commands(store)
    except (SchemaError, StoreError, OSError) as exc:
        raise click.ClickException(f"{exc} (run gc again to resume)") from exc
    click.echo(json.dumps(asdict(report), indent=1))
    if compact and not dry_run:
        click.echo("Major-compact the tables in the HBase shell (`hbase shell`) to drop gc's delete markers:", err=True)
        for line in commands:
            click.echo(f"    {line}", err=True)


def _with_progress(run: Callable[[Callable[[str, float | None, int], None]], Any], quiet: bool) -> Any:
    if quiet:
        last = [0.0]

        def log_line(phase: str, fraction: float | None, rows: int) -> None:
            if time.monotonic() - last[0] >= 10:
                last[0] = time.monotonic()
                where = f" ({fraction:.0%} of the key space)" if fraction is not None else ""
                click.echo(f"gc {phase}: {rows:,} rows{where}", err=True)

        return run(log_line)
    from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn()) as progress:
        tasks: dict[str, TaskID] = {}

        def show(phase: str, fraction: float | None, rows: int) -> None:
            if phase not in tasks:
                tasks[phase] = progress.add_task(phase, total=None if fraction is None else 1.0)
            progress.update(tasks[phase], completed=fraction or 0, description=f"{phase}: {rows:,} rows")

        return run(show)
