"""`hfile-load` and `clusters` on the cluster's YARN (`--runner yarn`), submitted from this machine as any
client of the cluster would: with the configuration copied out of a container (`--conf-dir`), the project's
own jars, no `hadoop` or `hbase` launcher script, and the HBase jars shipped with each job.  The host reaches
the containers by address; a hosts file names them for the client's JVM (the cluster's DNS, for a client
outside it).

- hfile-load of local records (normalised here, uploaded by the submitting JVM): its HFiles staged on HDFS,
  made by tasks in YARN containers, bulk-loaded into tables whose regions are on both region servers (the
  NodeManager kill is test_yarn_texts.py's, on a load of texts read from HDFS).  The three tables
  must hold exactly what `bulk-load` (Thrift) stores for the same input, which the local runner is held to
  in tests/integration/test_hfile_load.py, and a server replica must answer from them.
- clusters: interrupted (SIGINT) while the job after its first phase runs on YARN, whose application must end
  killed, then run again, which resumes from the finished phase; its pairs and clusters must be exactly
  brute force's.  (`--read snapshot` on YARN is test_yarn_texts.py's, verified against the sketches.)"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import happybase
import numpy as np
import pytest

from simhash_client import SimHashClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "integration"))
from truth import brute_pairs, digest, expected_clusters, mixed_input, plant, read_parts, unescape
from yarn_client import CLI, STAGING, YarnClient, cells, replica, until

BUDGET = 2_000  # comparisons per task: the hot prefix group is cut into tiles


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


def _interruptible() -> None:
    """SIGINT as a terminal delivers it: a test run in the background (nohup, `make ... &`) inherits SIGINT
    ignored, and Python then installs no KeyboardInterrupt handler, so the Ctrl-C below would be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
    live = {row for row, _, _ in expected["fp2docs"]}
    orphans = [cell for cell in expected["drawers"] if cell[0][5:] not in live]
    expected["drawers"] = [cell for cell in expected["drawers"] if cell[0][5:] in live]
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


@dataclass
class Clustered:
    prefix: str
    live: dict[str, int]
    truth: set[tuple[int, int]]


@pytest.fixture(scope="module")
def clustered(cluster, yarn: YarnClient) -> Clustered:
    """An index of planted clusters (a hot prefix, deleted documents), and brute force's pairs over it."""
    planted = plant(3000, seed=20261126, hot=400)
    prefix = "yarnclusters"
    yarn.schema(prefix)
    with yarn.store(prefix) as store:
        store.index_many(list(planted.documents.items()))
        store.delete(sorted(planted.deleted))
    live = {doc: fp for doc, fp in planted.documents.items() if doc not in planted.deleted}
    truth = brute_pairs(np.unique(np.fromiter(live.values(), dtype=np.uint64, count=len(live))), 3)
    assert len(truth) > 300  # the planted clusters are there
    return Clustered(prefix, live, truth)


def test_clusters_on_yarn_resume_after_an_interruption_and_equal_brute_force(
    cluster, yarn: YarnClient, clustered: Clustered, tmp_path: Path
) -> None:
    prefix, live = clustered.prefix, clustered.live
    output = tmp_path / "out"
    command = yarn.command(
        "clusters", str(output), "--staging-uri", f"{STAGING}/clusters", "--budget", str(BUDGET), "--fetch-output"
    )
    finished = output / "work" / "finished.json"

    def ours() -> list[tuple[str, str, str]]:
        """(phase, state, final status) of each clusters application the ResourceManager knows: a MapReduce
        job killed through its application master ends FINISHED, with the final status KILLED."""
        apps = [app for app in yarn.applications() if str(app["name"]).startswith("simhash-index clusters: ")]
        return [
            (str(app["name"]).split(": ", 1)[1].split(" ")[0], str(app["state"]), str(app["finalStatus"]))
            for app in apps
        ]

    first = subprocess.Popen(
        command,
        env=yarn.env(prefix),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_interruptible,
    )
    interrupted: set[str] = set()

    def running_after_pairs() -> bool:
        interrupted.update(phase for phase, state, _ in ours() if phase != "pairs" and state == "RUNNING")
        return bool(interrupted) or first.poll() is not None

    try:
        # Interrupted while the phase after pairs runs on the cluster: its application dies with the submitter.
        until(running_after_pairs, "a clusters phase after pairs running on YARN")
        assert first.poll() is None, first.communicate()[1][-3000:]
        first.send_signal(signal.SIGINT)  # as Ctrl-C
        first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode != 0
    assert list(json.loads(finished.read_text())["phases"]) == ["pairs"]
    # The submitter has exited: the application it was running ends (its master unregisters a moment after the
    # kill), killed; had the kill not reached it, it would have ended SUCCEEDED.
    until(lambda: all(state in ("FINISHED", "KILLED", "FAILED") for _, state, _ in ours()), "every application ended")
    states = ours()
    assert [final for phase, _, final in states if phase in interrupted] == ["KILLED"], states

    second = subprocess.run(command, env=yarn.env(prefix), capture_output=True, text=True, timeout=1800)
    assert second.returncode == 0, second.stderr[-3000:]
    runs = [phase for phase, _, _ in ours()]
    assert runs.count("pairs") == 1, runs  # resumed: the finished phase did not run again

    truth = clustered.truth
    found = {(int(a, 16), int(b, 16)) for a, b, _ in read_parts(output / "pairs")}
    assert found == truth
    got = {unescape(doc): unescape(cluster_id) for doc, cluster_id in read_parts(output / "clusters")}
    assert got == expected_clusters(live, truth)
    summary = json.loads((output / "summary.json").read_text())
    assert summary["tiles"] > 1 and summary["pairs"] == len(truth)
    assert summary["largest_clusters"]  # the tables came back from the cluster's filesystem
