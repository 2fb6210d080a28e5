"""`simhash-index hfile-load`: big loads as HFiles written by HBase's MapReduce tooling, then handed over."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import click

from simhash_server.cli.bulk import EXIT_REJECTS, input_options, input_sources, with_progress
from simhash_server.cli.options import apply_options, store_config, store_options

PEX_NAME = "simhash-index.pex"  # the tasks' environment, in --job-dir: `make pex`

_NEW_IDS_HELP = (
    "Promise that no input id is stored yet, so the docs table is not consulted.  HFiles cannot read before "
    "they write: an id already stored at another fingerprint would keep its old fp2docs column (a ghost "
    "that `simhash-index gc` removes).  Without this flag the job reads the docs table for every id."
)


def job_options(command: Any) -> Any:
    """The options of commands that run a job on HBase's MapReduce tooling (hfile-load, clusters)."""
    from simhash_server.bulk.hfile_job import RUNNERS

    options = [
        click.option(
            "--runner",
            type=click.Choice(RUNNERS),
            default="local",
            show_default=True,
            help="local: Hadoop's LocalJobRunner on this machine; yarn: submitted to the cluster's YARN.",
        ),
        click.option("--staging-uri", help="yarn: the job's directory on the cluster's filesystem (hdfs://...)."),
        click.option(
            "--conf-dir",
            "conf_dirs",
            multiple=True,
            type=click.Path(file_okay=False, path_type=Path),
            help="yarn: the cluster's client configuration (core-, yarn-, mapred-, hbase-site.xml); repeatable.  "
            "[default: $HADOOP_CONF_DIR and $HBASE_CONF_DIR]",
        ),
        click.option(
            "--zookeeper",
            envvar="SIMHASH_ZOOKEEPER",
            help="HBase's ZooKeeper, HOST:PORT.  [default: local 127.0.0.1:2181; yarn the cluster's hbase-site.xml]",
        ),
        click.option(
            "--heap-mb", type=click.IntRange(256), default=3072, show_default=True, help="local: the job's JVM heap."
        ),
        click.option(
            "--sort-mb",
            type=click.IntRange(16, 2047),
            help="Sort buffer per map task.  [default: local 512; yarn the cluster's mapreduce.task.io.sort.mb]",
        ),
        click.option(
            "--parallel", type=click.IntRange(1, 64), default=2, show_default=True, help="local: tasks at once."
        ),
        click.option(
            "--job-dir",
            type=click.Path(file_okay=False, path_type=Path),
            envvar="SIMHASH_HFILE_JOB_DIR",
            help="The built job (simhash-mapreduce.jar and lib/).  [default: server/mapreduce/target]",
        ),
        click.option(
            "-D", "properties", multiple=True, metavar="KEY=VALUE", help="A Hadoop/HBase setting for the job."
        ),
    ]
    return apply_options(command, options)


def job_runner(opts: dict[str, Any]) -> Any:
    """The JobRunner that job_options describe; ClickException for a bad combination."""
    from simhash_server.bulk.hfile_job import JobRunner

    properties = {}
    for item in opts["properties"]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"{item!r} is not KEY=VALUE", param_hint="-D")
        properties[key] = value
    try:
        return JobRunner(
            kind=opts["runner"],
            job_dir=opts["job_dir"],
            zookeeper=opts["zookeeper"],
            heap_mb=opts["heap_mb"],
            sort_mb=opts["sort_mb"],
            parallel=opts["parallel"],
            staging_uri=opts["staging_uri"],
            conf_dirs=tuple(opts["conf_dirs"]),
            properties=properties,
            driver=opts.get("driver", "cluster"),
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc


def _hfile_options(command: Any) -> Any:
    from simhash_server.bulk.hfile_job import DRIVERS

    options = [
        click.option(
            "--staging",
            type=click.Path(file_okay=False, path_type=Path),
            help="Where normalised input and HFiles wait; kept until the load succeeds.  "
            "[default: FIRST_INPUT.hfile-staging]",
        ),
        click.option("--new-ids-only", is_flag=True, help=_NEW_IDS_HELP),
        click.option("--generate-only", is_flag=True, help="Write the HFiles and stop (load later with --load-only)."),
        click.option("--load-only", is_flag=True, help="Hand over HFiles an earlier --generate-only wrote."),
        click.option("--keep-staging", is_flag=True, help="Keep the staging directory after a successful load."),
        click.option(
            "--driver",
            type=click.Choice(DRIVERS),
            default="cluster",
            show_default=True,
            help="yarn: where the job chain is driven from.  cluster: a YARN application of its own, this machine "
            "only submits it and follows it (as spark-submit's cluster deploy mode); client: a JVM here "
            "(Kerberos-secured clusters).",
        ),
        click.option(
            "--splits", type=click.IntRange(1, 1024), default=4, show_default=True, help="Map tasks of the first job."
        ),
        click.option(
            "--task-python",
            help="URI inputs: the Python the map tasks run.  [default: local this one; yarn python3, which must "
            "be of the PEX's minor version on every NodeManager]",
        ),
        click.option(
            "--python-env",
            type=click.Path(dir_okay=False, exists=True, path_type=Path),
            envvar="SIMHASH_PYTHON_ENV",
            help="yarn, URI inputs: the tasks' environment, a PEX shipped through the distributed cache.  "
            "[default: simhash-index.pex in --job-dir, built by `make pex`]",
        ),
    ]
    return job_options(apply_options(command, options))


@click.command("hfile-load")
@input_options
@_hfile_options
@store_options
@click.pass_context
def hfile_load(ctx: click.Context, **opts: Any) -> None:
    """Load INPUT files into the index as HFiles: for loads too big for Thrift writes.

    \b
    The same inputs, formats, rejects and last-one-wins rules as bulk-load.  Local files are normalised
    here; URIs of the cluster's filesystem (hdfs://, file://, s3a://...: files, directories, globs) are read
    where they live and fingerprinted in the job's map tasks, their rejects written beside them.  A
    MapReduce job on HBase's own tooling (HFileOutputFormat2) writes each table's HFiles with its family
    settings, and BulkLoadHFilesTool hands them over: drawers, docs, then fp2docs.  A failed run keeps the
    staging directory: the same command continues it.

    \b
    Exit status: 0 every line loaded; 3 loaded, but lines were rejected; 1 the load stopped.
    """
    from simhash_schema import SchemaError
    from simhash_server.bulk.checkpoint import BulkLoadError
    from simhash_server.bulk.hfile import HFileLoadOptions, run_hfile_load
    from simhash_server.index.errors import StoreError

    runner = job_runner(opts)
    cluster = _cluster_inputs(opts, runner)
    sources = [] if cluster else input_sources(opts)
    first = cluster.uris[0] if cluster else sources[0].path
    if first == "-" and (opts["staging"] is None or opts["rejects"] is None):
        raise click.ClickException("reading stdin first: give --staging and --rejects")
    staging = opts["staging"] or Path(_stem(first) + ".hfile-staging")
    options = HFileLoadOptions(
        store=store_config(opts),
        staging=staging,
        rejects=Path(cluster.rejects if cluster else opts["rejects"] or first + ".rejects.tsv"),
        cluster_inputs=cluster,
        runner=runner,
        splits=opts["splits"],
        new_ids_only=opts["new_ids_only"],
        generate_only=opts["generate_only"],
        load_only=opts["load_only"],
        keep_staging=opts["keep_staging"],
        max_rejects=opts["max_rejects"],
    )
    try:
        stats = with_progress(lambda report: run_hfile_load(sources, options, report), opts["quiet"], _describe)
    except (BulkLoadError, ValueError, OSError) as exc:
        raise click.ClickException(f"{exc}\nthe staging directory {staging} is kept: run again to continue") from exc
    except (SchemaError, StoreError) as exc:
        raise click.ClickException(str(exc)) from exc
    steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in stats.seconds.items())
    if stats.job_seconds:
        steps += " (" + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in stats.job_seconds.items()) + ")"
    if stats.task_cpu_seconds:
        steps += "; tasks' CPU " + ", ".join(f"{name} {cpu:.1f} s" for name, cpu in stats.task_cpu_seconds.items())
    if stats.task_python_cpu_seconds:
        steps += f"; the parse tasks' Python CPU {stats.task_python_cpu_seconds:.1f} s"
    if stats.nodes_checked:
        steps += f"; NodeManagers checked {stats.nodes_checked}"
        if stats.nodes_remembered:
            steps += f" ({stats.nodes_remembered} remembered from an earlier load)"
    if stats.nodes_unchecked:
        click.echo(f"YARN placed no check task on {', '.join(stats.nodes_unchecked)}: not checked", err=True)
    click.echo(
        f"lines read {stats.lines:,}; records {stats.records:,}; documents {stats.documents:,} "
        f"(repeated ids {stats.repeated_ids:,}, already stored {stats.present_same_fingerprint:,}, "
        f"moved {stats.moved:,}); rejected {stats.rejected:,}; "
        + ("loaded" if stats.loaded else f"HFiles generated in {staging}")
        + f"; {steps}"
    )
    if stats.rejected:
        shown = cluster.rejects if cluster else options.rejects
        click.echo(f"{stats.rejected:,} lines rejected: see {shown}", err=True)
        ctx.exit(EXIT_REJECTS)


def _stem(first: str) -> str:
    """A local name for a URI input's staging directory: its last path part, in the working directory."""
    from simhash_server.bulk.cluster_inputs import is_uri

    if not is_uri(first):
        return first
    return first.rstrip("/").rsplit("/", 1)[-1].replace("*", "_") or "hfile-load"


def _cluster_inputs(opts: dict[str, Any], runner: Any) -> Any:
    """ClusterInputs when INPUT names URIs (every one must), else None; ClickException for a bad mix."""
    from simhash_server.bulk.checkpoint import BulkLoadError
    from simhash_server.bulk.cluster_inputs import ClusterInputs, default_rejects_uri, is_uri, task_env_needs
    from simhash_server.bulk.hfile_job import default_job_dir

    inputs: tuple[str, ...] = opts["inputs"]
    uris = [p for p in inputs if is_uri(p)]
    if not uris:
        if opts["task_python"] or opts["python_env"]:
            raise click.ClickException("--task-python and --python-env are for URI inputs (hdfs://, file://...)")
        return None
    if len(uris) != len(inputs):
        local = ", ".join(p for p in inputs if not is_uri(p))
        raise click.ClickException(
            f"give every input as a URI, or none: {local} is a local path (file:///... names a local file as a URI)"
        )
    if runner.kind == "yarn" and any(u.startswith("file:") for u in uris):
        raise click.ClickException("file:// inputs are on this machine, which YARN's tasks do not read: use hdfs://")
    if opts["rejects"] and not is_uri(opts["rejects"]) and runner.kind == "yarn":
        raise click.ClickException("--rejects: URI inputs' rejects go to a directory URI on the cluster's filesystem")
    staging = (runner.staging_uri if runner.kind == "yarn" else None) or (
        opts["staging"] and f"file://{Path(opts['staging']).resolve()}"
    )
    if staging:  # the staging directory is removed once the load succeeds: it must hold no input
        inside = [u for u in uris if (u.rstrip("/") + "/").startswith(staging.rstrip("/") + "/")]
        if inside:
            raise click.ClickException(f"{inside[0]} is inside the staging directory {staging}: stage elsewhere")
    env = None
    if runner.kind == "yarn":
        env = opts["python_env"] or (runner.job_dir or default_job_dir()) / PEX_NAME
        if not Path(env).is_file():
            raise click.ClickException(f"the tasks' Python environment {env} is missing: build it with `make pex`")
        try:
            needs = task_env_needs(Path(env))
        except BulkLoadError as exc:
            raise click.ClickException(str(exc)) from exc
        click.echo(f"the tasks run {PEX_NAME}: they need {needs}; a task on each NodeManager checks", err=True)
    python = opts["task_python"] or ("python3" if runner.kind == "yarn" else sys.executable)
    if runner.kind == "local" and shutil.which(python) is None:
        raise click.ClickException(f"--task-python {python} is not on this machine's PATH")
    return ClusterInputs(
        uris=tuple(uris),
        rejects=opts["rejects"] or default_rejects_uri(uris[0]),
        fmt=opts["fmt"],
        compression=opts["compression"],
        fingerprint_format=opts["fingerprint_format"],
        python=python,
        env=Path(env) if env else None,
    )


def _describe(stats: Any) -> str:
    if stats.phase == "normalize":
        return (
            f"normalize: {stats.lines:,} lines, {stats.rejected:,} rejected, {stats.file_bytes_read / 2**20:,.1f} MiB"
        )
    if stats.phase.startswith("loaded "):  # a table handed to HBase: the jobs' progress figure is not its
        return f"{stats.phase} ({stats.records:,} records)"
    return f"{stats.phase}: {stats.progress:.0%} ({stats.records:,} records)"
