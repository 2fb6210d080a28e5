"""The `simhash-index` command line: one click group; each subcommand imports what it needs late,
so the client-only install (no jieba, happybase or numpy) can still run the client commands."""

from __future__ import annotations

import click

from simhash_client.cli import COMMANDS as CLIENT_COMMANDS
from simhash_server.cli.bulk import bulk_load
from simhash_server.cli.calibrate import calibrate_command
from simhash_server.cli.clusters import clusters_command
from simhash_server.cli.fingerprint import fingerprint_command
from simhash_server.cli.gc import gc_command
from simhash_server.cli.hbase import hbase
from simhash_server.cli.hfile import hfile_load
from simhash_server.cli.schema import schema
from simhash_server.cli.serve import serve


@click.group(context_settings={"help_option_names": ["-h", "--help"], "auto_envvar_prefix": "SIMHASH"})
@click.version_option(package_name="simhash-index")
def main() -> None:
    """Near-duplicate detection with 64-bit fingerprints (SimHash or MinHash) indexed in Apache HBase."""


main.add_command(hbase)
main.add_command(fingerprint_command, name="fingerprint")
main.add_command(schema)
main.add_command(serve)
main.add_command(bulk_load)
main.add_command(hfile_load)
main.add_command(calibrate_command, name="calibrate")
main.add_command(clusters_command, name="clusters")
main.add_command(gc_command, name="gc")
for _name, _command in CLIENT_COMMANDS.items():
    main.add_command(_command, name=_name)
