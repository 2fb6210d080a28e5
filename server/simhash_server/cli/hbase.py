"""`simhash-index hbase start|stop|status`: the local standalone HBase used by `make run` and tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from simhash_deploy.jvm import GARBAGE_COLLECTORS
from simhash_deploy.site import COMPACTION_MIB_PER_S
from simhash_server.cli.options import apply_options

if TYPE_CHECKING:
    from simhash_deploy import LocalHBase


def _local(opts: dict[str, Any]) -> LocalHBase:
    from simhash_deploy import HBaseError, LocalHBase, Ports

    try:
        base = LocalHBase(var_dir=opts["var_dir"])
        ports = Ports(
            zookeeper=opts["zk_port"] or base.ports.zookeeper,
            thrift=opts["thrift_port"] or base.ports.thrift,
            thrift2=opts["thrift2_port"] or base.ports.thrift2,
        )
        return LocalHBase(
            home=base.home,
            var_dir=base.var_dir,
            ports=ports,
            master_heap_mb=opts["master_heap_mb"],
            gc=opts["gc"],
            compaction_mib_per_s=opts["compaction_mib_per_s"] or None,
        )
    except HBaseError as exc:
        raise click.ClickException(str(exc)) from exc


def hbase_options(command: Callable[..., None]) -> Callable[..., None]:
    """The options that say which local HBase: shared by start, stop and status."""
    options = [
        click.option(
            "--var-dir",
            type=click.Path(file_okay=False, path_type=Path),
            envvar="SIMHASH_HBASE_VAR_DIR",
            help="Data, logs and pid files.  [default: var/hbase in the checkout]",
        ),
        click.option(
            "--zk-port",
            type=click.IntRange(1, 65535),
            envvar="SIMHASH_HBASE_ZK_PORT",
            help="ZooKeeper client port.  [default: 2181, or the one the running HBase uses]",
        ),
        click.option(
            "--thrift-port",
            type=click.IntRange(1, 65535),
            envvar="SIMHASH_HBASE_THRIFT_PORT",
            help="Thrift1 gateway (happybase) port.  [default: 9090]",
        ),
        click.option(
            "--thrift2-port",
            type=click.IntRange(1, 65535),
            envvar="SIMHASH_HBASE_THRIFT2_PORT",
            help="Thrift2 gateway port.  [default: 9091]",
        ),
        click.option(
            "--master-heap-mb",
            type=click.IntRange(256),
            default=2048,
            show_default=True,
            envvar="SIMHASH_HBASE_MASTER_HEAP_MB",
            help="Heap of the master + region server JVM.",
        ),
        click.option(
            "--gc",
            type=click.Choice(list(GARBAGE_COLLECTORS)),
            default="G1",
            show_default=True,
            envvar="SIMHASH_HBASE_GC",
            help="The JVMs' garbage collector (pauses are logged to logs/NAME-gc.log).",
        ),
        click.option(
            "--compaction-mib-per-s",
            type=click.IntRange(0),
            default=COMPACTION_MIB_PER_S,
            show_default=True,
            envvar="SIMHASH_HBASE_COMPACTION_MIB_PER_S",
            help="The region server's compaction throughput limit, so that compacting after loads leaves the "
            "cores to queries; 0: HBase's own (50-100 MiB/s).",
        ),
    ]
    return apply_options(command, options)


@click.group()
def hbase() -> None:
    """Run a real standalone HBase on 127.0.0.1 (jars from Maven Central)."""


@hbase.command()
@hbase_options
@click.option("--timeout", type=float, default=240.0, show_default=True, help="Seconds to wait for Thrift.")
def start(timeout: float, **opts: Any) -> None:
    """Fetch the jars if needed, start HBase and its Thrift gateways, wait until they answer.

    A no-op when everything already runs."""
    from simhash_deploy import HBaseError

    local = _local(opts)
    began = time.monotonic()
    try:
        started = local.start(timeout=timeout)
    except HBaseError as exc:
        raise click.ClickException(str(exc)) from exc
    if started:
        click.echo(f"HBase started in {time.monotonic() - began:.1f} s")
    else:
        click.echo("HBase is already running")
    _print_status(local)


@hbase.command()
@hbase_options
def stop(**opts: Any) -> None:
    """Stop the Thrift gateways and HBase; no java process of ours is left behind."""
    from simhash_deploy import HBaseError

    try:
        stopped = _local(opts).stop()
    except HBaseError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"stopped: {', '.join(stopped)}" if stopped else "HBase was not running")


@hbase.command()
@hbase_options
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def status(ctx: click.Context, as_json: bool, **opts: Any) -> None:
    """What runs, with its pid and port.  Exit status 1 unless everything runs."""
    local = _local(opts)
    report = _print_status(local, as_json)
    if not all(entry["listening"] for entry in report.values()):
        ctx.exit(1)


def _print_status(local: LocalHBase, as_json: bool = False) -> dict[str, dict[str, object]]:
    report = local.status()
    if as_json:
        click.echo(json.dumps({"var_dir": str(local.var_dir), "processes": report}, indent=2))
        return report
    click.echo(f"data: {local.var_dir}")
    for name, entry in report.items():
        state = "listening" if entry["listening"] else ("starting" if entry["running"] else "stopped")
        pid = entry["pid"] or "-"
        click.echo(f"  {name:<8} {state:<10} pid {pid!s:<8} 127.0.0.1:{entry['port']}")
    return report
