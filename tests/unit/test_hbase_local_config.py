"""The launcher's configuration, without starting anything."""

from __future__ import annotations

import itertools
import json
import os
import socket
import threading
from dataclasses import asdict
from pathlib import Path
from xml.etree import ElementTree

import pytest

from simhash_deploy import HBaseError, LocalHBase, Ports

ROOT = Path(__file__).resolve().parents[2]


def _local(tmp_path: Path) -> LocalHBase:
    return LocalHBase(home=ROOT, var_dir=tmp_path, ports=Ports(zookeeper=12181, thrift=19090, thrift2=19091))


def test_site_xml_is_standalone_on_loopback(tmp_path: Path) -> None:
    local = _local(tmp_path)
    local.write_config()
    tree = ElementTree.parse(tmp_path / "conf" / "hbase-site.xml")
    props = {p.findtext("name"): p.findtext("value") for p in tree.getroot()}
    assert props["hbase.cluster.distributed"] == "false"
    assert props["hbase.rootdir"] == (tmp_path / "data").as_uri()
    assert props["hbase.zookeeper.property.clientPort"] == "12181"
    assert props["hbase.unsafe.stream.capability.enforce"] == "false"
    assert props["hbase.master.info.port"] == props["hbase.regionserver.info.port"] == "-1"
    assert props["hbase.thrift.info.port"] == "-1"
    assert props["hbase.localcluster.assign.random.ports"] == "true"
    for key in (
        "hbase.zookeeper.quorum",
        "hbase.master.ipc.address",
        "hbase.regionserver.ipc.address",
        "hbase.regionserver.thrift.ipaddress",
    ):
        assert props[key] == "127.0.0.1", key


def test_gateways_bind_loopback_on_their_ports(tmp_path: Path) -> None:
    procs = {p.name: p for p in _local(tmp_path).processes()}
    assert procs["thrift"].args[:4] == ("-b", "127.0.0.1", "--infoport", "-1")
    assert "19090" in procs["thrift"].args and "19091" in procs["thrift2"].args
    cmd = _local(tmp_path).java_command(procs["master"])
    assert "--add-opens" in cmd and "java.base/java.nio=ALL-UNNAMED" in cmd
    assert cmd[-2:] == ["org.apache.hadoop.hbase.master.HMaster", "start"]


def test_every_jvm_runs_the_chosen_collector_and_logs_its_pauses(tmp_path: Path) -> None:
    local = LocalHBase(home=ROOT, var_dir=tmp_path, ports=Ports(12181, 19090, 19091), gc="ZGC")
    for proc in local.processes():
        cmd = local.java_command(proc)
        assert "-XX:+UseZGC" in cmd and "-XX:+UseG1GC" not in cmd
        assert "-XX:CompileThresholdScaling=0.25" in cmd  # the read path compiled within serve's warm-up
        [log] = [arg for arg in cmd if arg.startswith("-Xlog:")]
        assert log.startswith(f"-Xlog:gc,safepoint:file={local.gc_log(proc.name)}:")
    default = _local(tmp_path).java_command(local.processes()[0])
    assert "-XX:+UseG1GC" in default and "-XX:+UseZGC" not in default


def test_an_unknown_collector_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"unknown garbage collector 'CMS'; choose one of G1, ZGC, Shenandoah"):
        LocalHBase(home=ROOT, var_dir=tmp_path, gc="CMS")


def test_an_offheap_block_cache_is_the_region_servers_alone_with_room_for_it(tmp_path: Path) -> None:
    local = LocalHBase(home=ROOT, var_dir=tmp_path, ports=Ports(12181, 19090, 19091), offheap_cache_mb=1024)
    props = local.site_properties()
    assert props["hbase.bucketcache.ioengine"] == "offheap" and props["hbase.bucketcache.size"] == "1024"
    direct = {
        p.name: [a for a in local.java_command(p) if a.startswith("-XX:MaxDirectMemorySize")] for p in local.processes()
    }
    assert direct == {"master": ["-XX:MaxDirectMemorySize=1536m"], "thrift": [], "thrift2": []}
    default = _local(tmp_path)
    assert not any(k.startswith("hbase.bucketcache") for k in default.site_properties())
    assert not any("MaxDirectMemorySize" in a for p in default.processes() for a in default.java_command(p))
    with pytest.raises(ValueError, match=r"offheap_cache_mb must be >= 0, got -1"):
        LocalHBase(home=ROOT, var_dir=tmp_path, offheap_cache_mb=-1)


def test_compactions_are_limited_to_leave_the_cores_to_queries_unless_told_otherwise(tmp_path: Path) -> None:
    lower, higher = "hbase.hstore.compaction.throughput.lower.bound", "hbase.hstore.compaction.throughput.higher.bound"
    limited = _local(tmp_path).site_properties()
    assert limited[lower] == limited[higher] == str(10 * 2**20)
    hbase_own = LocalHBase(home=ROOT, var_dir=tmp_path, compaction_mib_per_s=None).site_properties()
    assert lower not in hbase_own and higher not in hbase_own
    with pytest.raises(ValueError, match=r"compaction_mib_per_s must be > 0 \(None: HBase's limit\), got 0"):
        LocalHBase(home=ROOT, var_dir=tmp_path, compaction_mib_per_s=0)


def test_a_config_written_with_overrides_holds_them_until_written_again(tmp_path: Path) -> None:
    local = _local(tmp_path)
    site = tmp_path / "conf" / "hbase-site.xml"
    local.write_config({"hbase.hstore.compaction.throughput.higher.bound": "1"})
    assert "<value>1</value>" in site.read_text()
    local.write_config()
    assert "<value>1</value>" not in site.read_text()


def test_site_properties_given_override_the_launchers_and_reach_the_written_file(tmp_path: Path) -> None:
    site = {"hfile.block.cache.policy": "AdaptiveLRU", "hbase.unsafe.stream.capability.enforce": "true"}
    local = LocalHBase(home=ROOT, var_dir=tmp_path, ports=Ports(12181, 19090, 19091), site=site)
    props = local.site_properties()
    assert props["hfile.block.cache.policy"] == "AdaptiveLRU"
    assert props["hbase.unsafe.stream.capability.enforce"] == "true"  # the launcher's "false", overridden
    assert props["hbase.rootdir"] == (tmp_path / "data").as_uri()  # the rest stays
    local.write_config()
    written = (local.conf_dir / "hbase-site.xml").read_text()
    assert "<name>hfile.block.cache.policy</name>" in written and "<value>AdaptiveLRU</value>" in written
    assert "hfile.block.cache.policy" not in _local(tmp_path / "other").site_properties()


def test_stale_pid_file_is_dropped(tmp_path: Path) -> None:
    local = _local(tmp_path)
    local.run_dir.mkdir(parents=True)
    # Our own pid is alive but is not an HBase JVM of this var dir: a reused pid, so stale.
    (local.run_dir / "master.pid").write_text(f"{os.getpid()}\n")
    (local.run_dir / "thrift.pid").write_text("not a pid\n")
    report = local.status()
    assert report["master"]["running"] is False and report["thrift"]["running"] is False
    assert not (local.run_dir / "master.pid").exists()
    assert local.stop() == []


def test_starting_on_other_ports_beside_a_running_hbase_is_refused_at_once(tmp_path: Path, monkeypatch) -> None:
    first = _local(tmp_path)
    first.run_dir.mkdir(parents=True)
    first.state_file.write_text(json.dumps({"ports": asdict(first.ports)}))
    second = LocalHBase(home=first.home, var_dir=first.var_dir, ports=Ports(12181, 12090, 12091))
    monkeypatch.setattr(LocalHBase, "_pid", lambda self, proc: 4242 if proc.name == "master" else None)
    monkeypatch.setattr(LocalHBase, "is_running", lambda self: False)
    with pytest.raises(HBaseError, match=r"already runs under .* \(master\) on ports .*19090.*hbase stop --var-dir"):
        second.start()


def test_free_ports_are_distinct() -> None:
    ports = Ports.free()
    assert len({ports.zookeeper, ports.thrift, ports.thrift2}) == 3


def test_the_container_runs_the_same_configuration_with_the_gateways_on_every_address(tmp_path, monkeypatch) -> None:
    from simhash_deploy.container import configured

    monkeypatch.setenv("SIMHASH_HOME", str(ROOT))
    monkeypatch.setenv("SIMHASH_HBASE_DATA", str(tmp_path))
    monkeypatch.setenv("SIMHASH_THRIFT_IDLE_TIMEOUT_MS", "7000")
    local = configured()
    loopback = LocalHBase(home=ROOT, var_dir=tmp_path, ports=Ports())  # `make run`'s, on the same data
    props, reference = local.site_properties(), loopback.site_properties()
    assert props.pop("hbase.regionserver.thrift.ipaddress") == "0.0.0.0"
    assert props.pop("hbase.thrift.server.socket.read.timeout") == "7000"
    assert props == {k: v for k, v in reference.items() if k in props}  # every other property as `make run`
    assert set(props) == set(reference) - {
        "hbase.regionserver.thrift.ipaddress",
        "hbase.thrift.server.socket.read.timeout",
    }
    gateways = [p for p in local.processes() if p.name.startswith("thrift")]
    assert all(p.args[p.args.index("-b") + 1] == "0.0.0.0" for p in gateways)
    assert local.java_command(local.processes()[0])[3:20] == loopback.java_command(loopback.processes()[0])[3:20]


def test_the_clusters_jvms_run_the_launchers_flags(tmp_path: Path) -> None:
    from simhash_deploy.cluster import java

    def module_access(cmd: list[str]) -> set[tuple[str, str]]:
        return {(a, b) for a, b in itertools.pairwise(cmd) if a in ("--add-modules", "--add-opens", "--add-exports")}

    local = _local(tmp_path)
    launcher = local.java_command(local.processes()[0])
    command = java("org.apache.hadoop.hbase.master.HMaster", ["start"], tmp_path)
    # The same JIT thresholds and JDK 17 access; the collector stays the JDK's default (G1), the heap its own.
    tuning = {a for a in launcher if a.startswith("-XX:") and a != "-XX:+UseG1GC" and "DirectMemory" not in a}
    assert "-XX:CompileThresholdScaling=0.25" in tuning and tuning <= set(command)
    assert module_access(command) == module_access(launcher) != set()
    assert {"-Xms512m", "-Xmx512m"} <= set(command)


def test_the_container_is_unhealthy_until_its_start_has_seen_a_table_round_trip(tmp_path, monkeypatch) -> None:
    # Open ports are not enough: they listen while the master still initialises, when a table cannot be made.
    from simhash_deploy import container

    monkeypatch.setenv("SIMHASH_HOME", str(ROOT))
    monkeypatch.setenv("SIMHASH_HBASE_DATA", str(tmp_path))
    monkeypatch.setattr(container.LocalHBase, "is_running", lambda self: True)  # every port listening
    assert container.check() == 1
    (tmp_path / "ready").write_text(container.READY_LINE)  # what run() writes after start()'s round trip
    assert container.check() == 0
    monkeypatch.setattr(container.LocalHBase, "is_running", lambda self: False)  # a process gone since
    assert container.check() == 1


@pytest.mark.parametrize(
    ("value", "message"), [("soon", "must be a whole number, got 'soon'"), ("-5", "must be positive, got -5")]
)
def test_a_bad_container_setting_is_named(monkeypatch, value: str, message: str) -> None:
    from simhash_deploy import HBaseError
    from simhash_deploy.container import configured

    monkeypatch.setenv("SIMHASH_HBASE_MASTER_HEAP_MB", value)
    with pytest.raises(HBaseError, match=f"SIMHASH_HBASE_MASTER_HEAP_MB {message}"):
        configured()


# What ZooKeeper 3.8's `dump` printed on the test cluster: the master's and two region servers' sessions.
ZOOKEEPER_DUMP = b"""SessionTracker dump:
Session Sets (2)/(3):
3 expire at Wed Nov 25 15:20:25 UTC 2026:
\t0x10000b186bf0002
\t0x10000b186bf0001
ephemeral nodes dump:
Sessions with Ephemerals (2):
0x10000b186bf0002:
\t/hbase/rs/regionserver2,16020,1795619853524
0x10000b186bf0001:
\t/hbase/master
"""


@pytest.mark.parametrize(
    ("host", "registered"), [("regionserver2", True), ("regionserver1", False), ("regionserver", False)]
)
def test_a_region_server_is_healthy_once_zookeeper_holds_its_node(host: str, registered: bool) -> None:
    from simhash_deploy.cluster import region_server_registered

    asked: list[bytes] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(30)  # a client that never connects fails the test instead of hanging it

        def answer() -> None:
            conn, _ = listener.accept()
            with conn, conn.makefile("rb") as request:
                asked.append(request.read(4))
                conn.sendall(ZOOKEEPER_DUMP)

        server = threading.Thread(target=answer)
        server.start()
        assert region_server_registered(host, listener.getsockname()) is registered
        server.join()
    assert asked == [b"dump"]


def test_a_region_server_is_not_healthy_while_zookeeper_does_not_answer() -> None:
    from simhash_deploy.cluster import region_server_registered

    with socket.create_server(("127.0.0.1", 0)) as listener:
        address = listener.getsockname()
    assert region_server_registered("regionserver1", address) is False
