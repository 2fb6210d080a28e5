"""`hfile-load` on the cluster's YARN (`--runner yarn`), submitted from this machine as any
client of the cluster would: with the configuration copied out of a container (`--conf-dir`), the project's
own jars, no `hadoop` or `hbase` launcher script, and the HBase jars shipped with each job.  The host reaches
the containers by address; a hosts file names them for the client's JVM (the cluster's DNS, for a client
outside it).

- hfile-load of local records (normalised here, uploaded by the submitting JVM): its HFiles staged on HDFS,
  made by tasks in YARN containers, bulk-loaded into tables whose regions are on both region servers (the
  NodeManager kill is test_yarn_texts.py's, on a load of texts read from HDFS).  The three tables
  must hold exactly what `bulk-load` (Thrift) stores for the same input, which the local runner is held to
  in tests/integration/test_hfile_load.py, and a server replica must answer from them.

`clusters` on YARN (interrupted and resumed, hot prefix tiles, snapshot read) is test_yarn_texts.py's, over
the index that test loads."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import happybase
import pytest

from simhash_client import SimHashClient
from simhash_server.index.keys import PART_KEY_LENGTH

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from truth import digest, mixed_input
from yarn_client import CLI, STAGING, YarnClient, cells, replica

pytestmark = pytest.mark.slow("MapReduce jobs submitted to the container cluster's YARN")


def spread(yarn: YarnClient, *tables: str) -> None:
    """Regions of ``tables`` moved to both region servers in turn (spread.jsh: HBase's Admin.move)."""
    lib = Path(__file__).resolve().parents[2] / "deploy" / "hbase-local" / "target" / "lib"
    done = subprocess.run(
        [
            "jshell",
            f"-R-Djdk.net.hosts.file={yarn.hosts_file}",
            f"-R-Dtables={','.join(tables)}",
            "-R-Dlog4j2.configurationFile=" + str(yarn.conf / "log4j2.properties"),
            "--class-path",
            f"{yarn.conf}:{lib}/*",
            str(Path(__file__).with_name("spread.jsh")),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and done.stdout.count("spread ") == len(tables), done.stdout[-2000:]


def region_servers(cluster, table: str) -> set[str]:
    conn = happybase.Connection("127.0.0.1", cluster.thrift_port, timeout=60_000)
    try:
        return {region["server_name"].decode() for region in conn.table(table).regions()}
    finally:
        conn.close()


def test_hfile_load_of_local_records_on_yarn_stores_what_bulk_load_stores(
    cluster, yarn: YarnClient, tmp_path: Path
) -> None:
    source = tmp_path / "mixed.jsonl"
    mixed_input(source, seed=42, docs=6000, records=20_000, shared=2000)
    yarn.schema("bythrift")
    yarn.schema("byyarn", "--regions", "4")
    spread(yarn, "byyarn_drawers", "byyarn_fp2docs", "byyarn_docs")
    assert region_servers(cluster, "byyarn_drawers") == {"regionserver1", "regionserver2"}
    assert region_servers(cluster, "byyarn_fp2docs") | region_servers(cluster, "byyarn_docs") == {
        "regionserver1",
        "regionserver2",
    }

    by_thrift = subprocess.run(
        [CLI, "bulk-load", str(source), "--rejects", str(tmp_path / "a.rejects"), "--quiet"],
        env=yarn.env("bythrift"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert by_thrift.returncode == 3, by_thrift.stderr  # 3: loaded, with the one bad line rejected

    staging = f"{STAGING}/hfile-load"
    args = [str(source), "--staging", str(tmp_path / "staging"), "--rejects", str(tmp_path / "b.rejects")]
    # The NodeManager kill is test_yarn_texts.py's, on the texts load (tasks running Python).
    load = subprocess.run(
        [*yarn.command("hfile-load", *args, "--staging-uri", staging), "--quiet"],
        env=yarn.env("byyarn"),
        capture_output=True,
        text=True,
        timeout=900,
    )
    stdout, stderr = load.stdout, load.stderr
    assert load.returncode == 3, stderr[-3000:]
    assert "loaded" in stdout and "rejected 1" in stdout
    assert (tmp_path / "a.rejects").read_text().split("\t")[1:] == (tmp_path / "b.rejects").read_text().split("\t")[1:]

    expected, got = cells(cluster, "bythrift"), cells(cluster, "byyarn")
    # bulk-load writes records in input order, so an id indexed again elsewhere leaves its first fingerprint's
    # drawer rows behind when no other document has it (gc's orphans); hfile-load meets an id's records first.
    # A part row (v7: a page's first part) belongs to its document's fingerprint, its key's last 8 bytes.
    live = {row for row, _, _ in expected["fp2docs"]}
    orphans = [cell for cell in expected["drawers"] if cell[0][-8:] not in live]
    expected["drawers"] = [cell for cell in expected["drawers"] if cell[0][-8:] in live]
    assert any(len(row) == PART_KEY_LENGTH for row, _, _ in got["drawers"])
    differ = {
        table: (len(set(got[table]) - set(expected[table])), len(set(expected[table]) - set(got[table])))
        for table in expected
        if digest(got[table]) != digest(expected[table])
    }
    assert differ == {}, f"(extra, lacking) cells per table: {differ}; { ({t: len(c) for t, c in expected.items()}) }"
    assert len(expected["docs"]) < 20_000 and len(expected["drawers"]) < 10 * len(expected["docs"])  # repeats, sharing
    assert 0 < len(orphans) < len(expected["drawers"]) // 10

    # A replica of the loaded index answers as the Thrift-loaded index's store does.
    with replica(yarn, "byyarn") as address:
        rng = random.Random(5)
        fingerprints = [int.from_bytes(value, "big") for _, column, value in expected["docs"] if column == b"d:fp"]
        stored = rng.sample(fingerprints, 40)
        with SimHashClient(address, retries=0) as client, yarn.store("bythrift") as reference:
            client.wait_until_serving(timeout=120)
            for fp in stored:
                probe = fp ^ (1 << rng.randrange(64))
                want = [(h.doc_id, h.fingerprint, h.distance) for h in reference.query(probe, limit=50)]
                assert want
                assert [(h.doc_id, h.simhash, h.distance) for h in client.query(simhash=probe, limit=50)] == want
