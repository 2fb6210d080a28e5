"""The HFile job's Java codec against keys.py, the normalised-record format, and the job runners' settings."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from simhash_deploy.jvm import JDK17_FLAGS
from simhash_server.bulk.hfile_job import (
    CLUSTERS_CLASS,
    MAIN_CLASS,
    JobEvent,
    JobRunner,
    LocalProgress,
    default_job_dir,
)
from simhash_server.bulk.normalized import NORMALIZED_MAGIC, iter_normalized, normalized_record
from simhash_server.index.keys import drawer_keys


def test_the_java_codec_makes_the_drawer_keys_keys_py_makes() -> None:
    jar = default_job_dir() / "simhash-mapreduce.jar"
    java = shutil.which("java")
    if java is None or not jar.is_file():
        pytest.fail(f"java and {jar} are needed (make jars builds it)")
    rng = random.Random(2026)
    edges = [0, 1, 2**64 - 1, 2**63, 2**63 - 1, 0x5555_5555_5555_5555, 0xAAAA_AAAA_AAAA_AAAA]
    fps = edges + [rng.getrandbits(64) for _ in range(20_000)] + [1 << bit for bit in range(64)]
    result = subprocess.run(
        [java, *JDK17_FLAGS, "-cp", f"{jar}:{jar.parent / 'lib'}/*", MAIN_CLASS, "keys"],
        input="".join(f"{fp}\n" for fp in fps),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = result.stdout.splitlines()
    assert len(lines) == len(fps)
    for fp, line in zip(fps, lines, strict=True):
        assert line.split() == [key.hex() for key in drawer_keys(fp)], hex(fp)


def test_normalised_records_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "part.norm"
    records = [
        (0, 2**64 - 1, "é-doc".encode(), b"", None),
        (7, 5, b"x" * 1024, bytes(range(256)) * 16, 1_764_000_000_123),
        (8, 6, b"epoch", b"", 0),  # dated at the epoch itself: 0 is a date, not "undated"
    ]
    path.write_bytes(NORMALIZED_MAGIC + b"".join(normalized_record(*r) for r in records))
    assert list(iter_normalized(path)) == records


def test_runner_options_are_checked_eagerly() -> None:
    with pytest.raises(ValueError, match="unknown runner 'spark'"):
        JobRunner(kind="spark")
    with pytest.raises(ValueError, match="--staging-uri"):
        JobRunner(kind="yarn")
    with pytest.raises(ValueError, match="do not fit a 1024 MB heap"):
        JobRunner(heap_mb=1024, sort_mb=512, parallel=2)
    with pytest.raises(ValueError, match="unknown driver 'edge'; choose one of cluster, client"):
        JobRunner(kind="yarn", staging_uri="hdfs:///x", driver="edge")


def test_the_local_runner_keeps_hadoop_files_in_staging_and_the_yarn_runner_leaves_the_cluster_its_own() -> None:
    local = JobRunner().job_properties("/st")
    assert local["mapreduce.framework.name"] == "local" and local["hadoop.tmp.dir"] == "/st/tmp/hadoop"
    yarn = JobRunner(kind="yarn", staging_uri="hdfs:///x", properties={"mapreduce.job.queuename": "bulk"})
    props = yarn.job_properties("hdfs:///x")
    assert props["mapreduce.framework.name"] == "yarn" and "fs.defaultFS" not in props
    assert "mapreduce.task.io.sort.mb" not in props  # the cluster's, sized to its task containers
    assert props["mapreduce.job.user.classpath.first"] == "true"  # HBase's ZooKeeper before Hadoop 2's
    assert props["mapreduce.job.queuename"] == "bulk"


def _site(folder: Path, name: str, props: dict[str, str]) -> None:
    from simhash_deploy.site import site_xml

    folder.mkdir(exist_ok=True)
    (folder / name).write_text(site_xml(props, "test"))


def test_the_yarn_runner_names_what_the_cluster_configuration_lacks(tmp_path: Path, monkeypatch) -> None:
    from simhash_server.bulk.checkpoint import BulkLoadError

    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("HBASE_CONF_DIR", raising=False)
    with pytest.raises(BulkLoadError, match="--conf-dir"):
        JobRunner(kind="yarn", staging_uri="hdfs://nn/x").cluster_conf_dirs()
    conf = tmp_path / "conf"
    _site(conf, "core-site.xml", {"fs.defaultFS": "hdfs://nn:8020"})
    with pytest.raises(BulkLoadError, match="no ResourceManager address"):
        JobRunner(kind="yarn", staging_uri="/x", conf_dirs=(conf,)).cluster_conf_dirs()
    _site(conf, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm"})
    with pytest.raises(BulkLoadError, match=r"hbase\.zookeeper\.quorum"):
        JobRunner(kind="yarn", staging_uri="/x", conf_dirs=(conf,)).cluster_conf_dirs()
    assert JobRunner(kind="yarn", staging_uri="/x", conf_dirs=(conf,), zookeeper="zk:2181").cluster_conf_dirs()
    _site(conf, "hbase-site.xml", {"hbase.zookeeper.quorum": "zk"})
    assert JobRunner(kind="yarn", staging_uri="/x", conf_dirs=(conf,)).cluster_conf_dirs() == [conf.resolve()]
    with pytest.raises(BulkLoadError, match="this machine's filesystem"):
        JobRunner(kind="yarn", staging_uri="file:///x", conf_dirs=(conf,)).cluster_conf_dirs()
    (conf / "core-site.xml").write_text("<configuration><property>")
    with pytest.raises(BulkLoadError, match=r"core-site\.xml is not a Hadoop configuration file"):
        JobRunner(kind="yarn", staging_uri="/x", conf_dirs=(conf,)).cluster_conf_dirs()


def test_hfile_loads_on_yarn_name_their_driver_and_clusters_drives_from_here(tmp_path: Path) -> None:
    conf = tmp_path / "conf"
    _site(conf, "yarn-site.xml", {"yarn.resourcemanager.hostname": "rm"})
    _site(conf, "hbase-site.xml", {"hbase.zookeeper.quorum": "zk"})

    def command(runner: JobRunner, name: str, main_class: str) -> list[str]:
        argv = runner._yarn("java", name, {"staging": "x"}, tmp_path, main_class, [])
        return argv[argv.index(name) :]

    runner = JobRunner(kind="yarn", staging_uri="hdfs://nn/x", conf_dirs=(conf,))
    for name in ("generate", "load"):
        assert command(runner, name, MAIN_CLASS)[-2:] == ["--driver", "cluster"]
    client = replace(runner, driver="client")
    assert command(client, "generate", MAIN_CLASS)[-2:] == ["--driver", "client"]
    assert "--driver" not in command(runner, "pairs", CLUSTERS_CLASS)


def test_the_command_line_names_a_bad_setting_before_anything_runs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from simhash_server.cli import main

    source = tmp_path / "in.tsv"
    source.write_text("a\taaaaaaaaaaaaaaaa\n")
    bad_define = CliRunner().invoke(main, ["hfile-load", str(source), "-D", "no-equals-sign"])
    assert bad_define.exit_code == 2 and "'no-equals-sign' is not KEY=VALUE" in bad_define.output
    too_small = CliRunner().invoke(main, ["hfile-load", str(source), "--heap-mb", "512", "--sort-mb", "512"])
    assert too_small.exit_code == 1 and "do not fit a 512 MB heap" in too_small.output
    no_uri = CliRunner().invoke(main, ["hfile-load", str(source), "--runner", "yarn"])
    assert no_uri.exit_code == 1 and "--staging-uri" in no_uri.output
    assert not (tmp_path / "in.tsv.hfile-staging").exists()


def _shown(readings: list[tuple[float, float] | str]) -> list[tuple[float, float]]:
    steady, shown = LocalProgress(), []
    for reading in readings:
        if reading == "end":
            steady.take(JobEvent("phase", "drawers", {"seconds": 1.0, "counters": {}}))
            continue
        event = steady.take(JobEvent("progress", "drawers", {"map": reading[0], "reduce": reading[1]}))
        shown.append((event.data["map"], event.data["reduce"]))
    return shown


def test_local_progress_skips_the_full_bar_hadoop_reports_whenever_one_task_ends() -> None:
    # What a 25-million chunk's drawers job reported (bench-scale, 2026-11-26): 20%, 50%, 32%, then 69%, 100%, 75%.
    maps = _shown([(0.32, 0.0), (0.4, 0.0), (1.0, 0.0), (0.64, 0.0)])
    assert maps == [(0.32, 0.0), (0.4, 0.0), (0.4, 0.0), (0.64, 0.0)]
    reduces = _shown([(1.0, 0.38), (1.0, 1.0), (1.0, 0.5)])
    assert reduces == [(1.0, 0.38), (1.0, 0.38), (1.0, 0.5)]


def test_local_progress_takes_a_full_bar_once_the_next_step_confirms_it() -> None:
    # The maps' real end shows when reducers report; a job that ended leaves nothing to the next of its phase.
    assert _shown([(0.9, 0.0), (1.0, 0.0), (1.0, 0.01)]) == [(0.9, 0.0), (0.9, 0.0), (1.0, 0.01)]
    assert _shown([(0.9, 0.0), "end", (1.0, 0.0), (0.1, 0.0)]) == [(0.9, 0.0), (0.0, 0.0), (0.1, 0.0)]


def test_the_progress_line_gives_a_job_its_figure_and_a_table_handed_to_hbase_none() -> None:
    from simhash_server.bulk.hfile import HFileLoadStats
    from simhash_server.cli.hfile import _describe

    stats = HFileLoadStats(phase="drawers", progress=0.75, records=25_000_000)
    assert _describe(stats) == "drawers: 75% (25,000,000 records)"
    stats.phase = "loaded drawers"  # the last job's 75% is no measure of the load
    assert _describe(stats) == "loaded drawers (25,000,000 records)"


def test_normalising_carries_each_lines_date_and_rejects_one_ahead_of_the_clock(tmp_path: Path) -> None:
    """A dated line keeps its date into the job's input (the job gives its cells that timestamp); an undated
    line stays undated (the load's timestamp); a date in the future is a reject by line number."""
    from simhash_server.bulk.hfile import HFileLoadOptions, HFileLoadStats, _normalize
    from simhash_server.bulk.input import InputSource
    from simhash_server.index.store import StoreConfig

    path = tmp_path / "in.tsv"
    ahead = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86_400))
    path.write_text(f"a\t00000000000000ff\nb\t00000000000000fe\t2026-11-24T08:00:00Z\nc\t00000000000000fd\t{ahead}\n")
    options = HFileLoadOptions(StoreConfig(), tmp_path / "staging", tmp_path / "rejects.tsv", None, splits=1)  # type: ignore[arg-type]
    stats = HFileLoadStats()
    source = InputSource.detect(str(path), None, None, "auto")
    source.fingerprint_version = "v3"
    _normalize([source], options, stats, lambda s: None)
    assert (stats.lines, stats.records, stats.rejected) == (3, 2, 1)
    assert (tmp_path / "rejects.tsv").read_text().split("\t")[1] == "3"
    part = tmp_path / "staging" / "input" / "part-00000.norm"
    assert [(doc, seen) for _, _, doc, _, seen in iter_normalized(part)] == [
        (b"a", None),
        (b"b", 1_795_507_200_000),  # 2026-11-24T08:00:00Z
    ]


def _running(pid: int) -> bool:
    """Whether the process exists and has not exited (an exited orphan may linger as a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_job_process_ends_with_the_process_that_started_it_even_one_killed_outright() -> None:
    """The runners start the job's JVM so: a caller killed with SIGKILL (no `finally` runs) leaves no JVM behind
    submitting or running its job (found as a JVM still polling a cluster 40 minutes after its caller died)."""
    starter = (
        "import subprocess\n"
        "from simhash_server.bulk.hfile_job import _end_with_parent\n"
        "child = subprocess.Popen(['sleep', '600'], preexec_fn=_end_with_parent)\n"
        "print(child.pid, flush=True)\n"
        "child.wait()\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    assert _running(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 30
    while _running(child):
        assert time.monotonic() < deadline, "the child outlived its killed parent"
        time.sleep(0.05)  # between checks of the condition


class _Clocks:
    """time.monotonic and time.time, held still: 100.0 and 1,000,000.0."""

    @staticmethod
    def monotonic() -> float:
        return 100.0

    @staticmethod
    def time() -> float:
        return 1_000_000.0


@pytest.mark.parametrize(
    ("data", "since", "expected"),
    [
        ({}, 90.0, 100.0),  # no time of its own: when it arrived
        ({"at_ms": 999_997_000}, 90.0, 97.0),  # 3 s before it arrived (relayed a poll late)
        ({"at_ms": 999_980_000}, 90.0, 90.0),  # before the step began (another clock): the step's start
        ({"at_ms": 1_000_005_000}, 90.0, 100.0),  # ahead of this clock: when it arrived
        ({"at_ms": "soon"}, 90.0, 100.0),
    ],
)
def test_a_generated_line_ends_the_step_at_its_own_time(data: dict, since: float, expected: float, monkeypatch) -> None:
    from simhash_server.bulk import hfile

    monkeypatch.setattr(hfile, "time", _Clocks)
    assert hfile.event_time(JobEvent("generated", "", data), since) == pytest.approx(expected)
