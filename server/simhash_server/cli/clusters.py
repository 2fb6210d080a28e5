"""`simhash-index clusters`: every near-duplicate group of the index at once, as MapReduce jobs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from simhash_server.cli.hfile import job_options, job_runner
from simhash_server.cli.options import store_config, store_options


@click.command("clusters")
@click.argument("output", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--max-distance",
    type=click.IntRange(0, 8),
    help="Pairs of fingerprints within this Hamming distance are candidates: every pair up to 3, and with "
    "--min-similarity up to 8 among those sharing a drawer, as a verified Query reads them.  "
    "[default: 3; 8 with --min-similarity]",
)
@click.option(
    "--budget",
    type=click.IntRange(1_000, 10**12),
    default=50_000_000,
    show_default=True,
    help="Comparisons per task: a drawer prefix group bigger than this is compared in tiles.",
)
@click.option(
    "--min-similarity",
    type=click.FloatRange(0, 1, min_open=True),
    help="Verify: link two documents only when their stored sketches estimate at least this Jaccard "
    "similarity (as Deduplicate's min_similarity); documents without a sketch join nothing.  [default: off]",
)
@click.option(
    "--clustering",
    type=click.Choice(["centres", "components"]),
    help="With --min-similarity, how the verified links are grouped: centres, stars around a centre (each "
    "member verified against its centre itself; CENTER, then stars merged whose centres are each linked to "
    "every member of the other), or components, any chain of links.  Unverified, "
    "clusters are connected components.  [default: centres when verifying]",
)
@click.option(
    "--keep",
    type=click.Choice(["smallest-id", "earliest", "longest"]),
    default="smallest-id",
    show_default=True,
    help="Which document each cluster keeps, and is named after: the smallest id, the earliest indexed_at, "
    "or the longest (the most distinct shingles in its v4 sketch; documents without one come last).  "
    "Ties fall to the smallest id.",
)
@click.option(
    "--read",
    type=click.Choice(["scan", "snapshot"]),
    default="scan",
    show_default=True,
    help="How the jobs read the tables: through the region servers, or from HBase snapshots taken first "
    "(their files read straight from the cluster's filesystem: the servers answering queries do no work "
    "for the job).  snapshot needs the cluster's hbase.rootdir (its hbase-site.xml, or -D hbase.rootdir=URI).",
)
@click.option(
    "--restore-dir",
    help="snapshot: where the snapshots are restored for reading, on hbase.rootdir's filesystem and outside "
    "it.  [default: simhash-restore/ beside hbase.rootdir]",
)
@click.option("--reducers", type=click.IntRange(1, 10_000), default=2, show_default=True, help="Reduce tasks per job.")
@click.option("--keep-work", is_flag=True, help="Keep OUTPUT/work (the steps' intermediate files) after success.")
@click.option(
    "--fetch-output",
    is_flag=True,
    help="yarn: copy clusters/, pairs/ and sizes/ from --staging-uri/output into OUTPUT (they stay there too).",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress lines.")
@job_options
@store_options
def clusters_command(output: Path, **opts: Any) -> None:
    """Group the index's documents into near-duplicate clusters, written under OUTPUT.

    \b
    One pass over the drawer table finds every pair of fingerprints within --max-distance (rows sharing a
    drawer prefix are adjacent; beyond 3, the pairs that share one); the pairs meet the documents in
    fp2docs; connected components are found in MapReduce rounds (with --min-similarity, stars around a
    centre within them).  OUTPUT gets:
      clusters/part-r-*       doc id <TAB> cluster id (the id of the document it keeps, --keep)
      pairs/part-r-*          fingerprint <TAB> fingerprint <TAB> distance (hex); with
                              --min-similarity: doc id <TAB> doc id <TAB> distance <TAB> similarity
      sizes/part-r-*          cluster id <TAB> documents
      largest-clusters.tsv, largest-groups.tsv, summary.json
    On YARN these are under --staging-uri/output; OUTPUT gets the two tables and summary.json (and the
    rest with --fetch-output).  A document with no near-duplicate is in no cluster.  A failed run keeps
    OUTPUT/work: the same command continues it.  Run `simhash-index gc` first if writers may have died mid-write.
    """
    from simhash_schema import SchemaError
    from simhash_server.bulk.checkpoint import BulkLoadError
    from simhash_server.clusters.job import MAX_DISTANCE, ClustersOptions, ClustersStats, run_clusters
    from simhash_server.index.errors import StoreError

    runner = job_runner(opts)
    try:
        options = ClustersOptions(
            store=store_config(opts),
            output=output,
            runner=runner,
            max_distance=opts["max_distance"],
            budget=opts["budget"],
            reducers=opts["reducers"],
            keep_work=opts["keep_work"],
            min_similarity=opts["min_similarity"],
            fetch_output=opts["fetch_output"],
            read=opts["read"],
            restore_dir=opts["restore_dir"],
            keep=opts["keep"],
            clustering=opts["clustering"],
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    last = [""]

    def report(stats: ClustersStats) -> None:
        line = f"{stats.phase}: {stats.progress:.0%}"
        if not opts["quiet"] and line != last[0]:
            last[0] = line
            click.echo(line, err=True)

    try:
        stats = run_clusters(options, report)
    except (BulkLoadError, OSError) as exc:
        raise click.ClickException(f"{exc}\n{output / 'work'} is kept: run again to continue") from exc
    except (SchemaError, StoreError) as exc:
        raise click.ClickException(str(exc)) from exc
    c = stats.counters
    reach = " sharing a drawer" if (options.max_distance or 0) > MAX_DISTANCE else ""
    click.echo(
        f"{c.get('documents', 0):,} documents at {c.get('fingerprints', 0):,} fingerprints; "
        f"{c.get('pairs', 0):,} pairs within distance {options.max_distance}{reach}; "
        f"{c.get('clusters', 0):,} clusters of {c.get('clustered_documents', 0):,} documents; "
        f"{stats.seconds['total']:.1f} s; see {output / 'summary.json'}"
    )
