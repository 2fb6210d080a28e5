"""Faults on the distributed cluster, under traffic: a region server killed (its WAL split and replayed from
HDFS, its regions reassigned), regions moved, a server replica restarted, the HMaster killed, ZooKeeper and
the NameNode restarted, a replica cut off from HBase by the network.  Nothing acknowledged is lost, no
answer is ever wrong (a query that cannot be answered fails; it never answers "no near-duplicates"), and the
recovery times are recorded (var/cluster-results.json)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from simhash_client import SimHashClient, SimHashError, Unavailable
from simhash_schema import connect, index_tables

pytestmark = pytest.mark.slow("a fault in the container cluster (HDFS, ZooKeeper, HBase, YARN), waited out")

CLI = str(Path(sys.executable).with_name("simhash-index"))
SEEDED = 300
REGION_SERVERS = ("regionserver1", "regionserver2")


class Traffic:
    """Writers (Index, each a new document) and a reader (Query of an acknowledged document at distance 0)
    against replicas, every outcome logged with its time."""

    def __init__(self, targets: list[str], writers: int = 3, seed: int = 0, timeout: float = 10) -> None:
        self.targets = targets
        self.timeout = timeout  # per call
        self.acknowledged: dict[str, int] = {}
        self.began = 0.0  # when the fault began (failures are counted from then)
        self.reads: list[tuple[float, str]] = []  # (time, "ok" | "wrong" | status name)
        self.writes: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._rng = random.Random(seed)
        self._threads = [threading.Thread(target=self._write, args=(n,)) for n in range(writers)]
        self._threads.append(threading.Thread(target=self._read))

    def seed(self, count: int) -> None:
        with SimHashClient(self.targets[0], timeout=60) as client:
            batch = {f"seed-{n}": self._rng.getrandbits(64) for n in range(count)}
            for start in range(0, count, 100):
                part = list(batch.items())[start : start + 100]
                client.index_batch([{"doc_id": d, "simhash": fp} for d, fp in part])
            self.acknowledged.update(batch)

    def start(self) -> Traffic:
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(120)
        assert not any(t.is_alive() for t in self._threads), "a traffic thread never returned"

    def _write(self, n: int) -> None:
        rng = random.Random(f"writer-{n}")
        clients = [SimHashClient(t, timeout=self.timeout, retries=0) for t in self.targets]
        try:
            for i in range(1_000_000):
                if self._stop.is_set():
                    return
                doc, fp = f"w{n}-{i}", rng.getrandbits(64)
                try:
                    clients[i % len(clients)].index(doc, simhash=fp)
                except SimHashError as exc:
                    self._log(self.writes, exc.code.name if exc.code else "ERROR")
                    self._stop.wait(0.5)  # pace retries of a failing cluster
                    continue
                with self._lock:
                    self.acknowledged[doc] = fp
                self._log(self.writes, "ok")
        finally:
            for client in clients:
                client.close()

    def _read(self) -> None:
        rng = random.Random("reader")
        clients = [SimHashClient(t, timeout=self.timeout, retries=0) for t in self.targets]
        seeded = [f"seed-{n}" for n in range(SEEDED)]
        try:
            for i in range(10_000_000):
                if self._stop.is_set():
                    return
                doc = rng.choice(seeded)
                try:
                    hits = clients[i % len(clients)].query(simhash=self.acknowledged[doc], max_distance=0)
                except SimHashError as exc:
                    self._log(self.reads, exc.code.name if exc.code else "ERROR")
                    self._stop.wait(0.5)
                    continue
                self._log(self.reads, "ok" if doc in {h.doc_id for h in hits} else "wrong")
        finally:
            for client in clients:
                client.close()

    def _log(self, log: list[tuple[float, str]], outcome: str) -> None:
        with self._lock:
            log.append((time.monotonic(), outcome))

    def wait_for(self, what: str, condition: Callable[[], bool], timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"{what} never happened"
            time.sleep(0.5)  # between checks of the condition

    def ok_since(self, log: list[tuple[float, str]], since: float) -> int:
        """Successes in a row at the end of ``log``, all after ``since``."""
        with self._lock:
            run = 0
            for at, outcome in reversed(log):
                if outcome != "ok" or at < since:
                    break
                run += 1
            return run

    def failures(self, log: list[tuple[float, str]], since: float) -> list[tuple[float, str]]:
        with self._lock:
            return [(at, outcome) for at, outcome in log if at >= since and outcome != "ok"]

    def check_acknowledged(self) -> None:
        """Every acknowledged document answers Get with its fingerprint (through a retrying client; 8 Gets in
        flight, as a few thousand one after another took seconds a test)."""
        with SimHashClient(self.targets[0], timeout=60, retries=10) as client, ThreadPoolExecutor(8) as pool:
            docs = sorted(self.acknowledged)
            stored = pool.map(client.get, docs)
            lost = [d for d, fp in zip(docs, stored, strict=True) if fp != self.acknowledged[d]]
        assert lost == [], f"{len(lost)} of {len(self.acknowledged)} acknowledged documents lost: {lost[:10]}"


def region_hosts(cluster) -> set[str]:
    """The region servers holding the index's regions, as the cluster reports them."""
    client = connect("127.0.0.1", cluster.thrift2_port, 30_000)
    try:
        tables = index_tables("simhash")
        return {
            loc.serverName.hostName.decode() if isinstance(loc.serverName.hostName, bytes) else loc.serverName.hostName
            for spec in tables.all()
            for loc in client.getAllRegionLocations(spec.name.encode())
        }
    finally:
        client.close()


def reassigned_to(cluster, server: str) -> bool:
    """Whether every region of the index is on ``server``; False while the cluster cannot say (hbase:meta
    itself may be among the regions being reassigned)."""
    try:
        return region_hosts(cluster) == {server}
    except Exception:  # noqa: BLE001 - any failure to read the locations means "not yet"
        return False


def test_a_region_server_killed_during_a_load_loses_nothing_and_answers_nothing_wrongly(cluster) -> None:
    traffic = Traffic(cluster.replicas)
    traffic.seed(SEEDED)
    # The master places a new table's regions; usually on both servers, but not always.  The victim is one
    # that holds some, so the kill always takes index regions with it.
    holders = region_hosts(cluster)
    assert holders and holders <= set(REGION_SERVERS), holders
    victim = min(holders)
    (survivor,) = set(REGION_SERVERS) - {victim}
    cluster.record("region server kill: servers holding the index before, count", len(holders))
    traffic.start()
    try:
        before = len(traffic.acknowledged)
        traffic.wait_for("writes before the kill", lambda: len(traffic.acknowledged) >= before + 300)
        killed = time.monotonic()
        cluster.docker("kill", cluster.container(victim))
        traffic.wait_for("regions reassigned", lambda: reassigned_to(cluster, survivor))
        reassigned = time.monotonic()
        traffic.wait_for(
            "queries and writes answering again",
            lambda: (
                traffic.ok_since(traffic.reads, reassigned) >= 50 and traffic.ok_since(traffic.writes, reassigned) >= 50
            ),
        )
    finally:
        traffic.stop()
    failed_reads, failed_writes = traffic.failures(traffic.reads, killed), traffic.failures(traffic.writes, killed)
    assert "wrong" not in {outcome for _, outcome in failed_reads}, "a query answered without its document"
    last_failure = max((at for at, _ in failed_reads + failed_writes), default=killed)
    cluster.record("region server kill: regions reassigned after, seconds", reassigned - killed)
    cluster.record("region server kill: last failed call after, seconds", last_failure - killed)
    cluster.record("region server kill: failed reads", len(failed_reads))
    cluster.record("region server kill: failed writes", len(failed_writes))
    traffic.check_acknowledged()
    cluster.record("region server kill: acknowledged writes checked", len(traffic.acknowledged))

    cluster.docker("start", cluster.container(victim))
    cluster.healthy(victim)


def test_regions_moving_during_queries_lose_nothing_and_answer_nothing_wrongly(cluster) -> None:
    traffic = Traffic(cluster.replicas, seed=1)
    traffic.seed(SEEDED)
    traffic.start()
    try:
        before = region_hosts(cluster)
        source = "regionserver2" if "regionserver2" in before else "regionserver1"  # one holding regions
        (target,) = set(REGION_SERVERS) - {source}
        mover = ["exec", cluster.container(source), "/opt/launcher/bin/python", "-m", "simhash_deploy.cluster"]
        began = time.monotonic()
        cluster.docker(*mover, "regions", "unload", source, timeout=600)
        unloaded = time.monotonic()
        assert region_hosts(cluster) == {target}
        cluster.docker(*mover, "regions", "load", source, timeout=600)
        loaded = time.monotonic()
        assert region_hosts(cluster) == before
        traffic.wait_for("queries after the moves", lambda: traffic.ok_since(traffic.reads, loaded) >= 20)
    finally:
        traffic.stop()
    failed_reads = traffic.failures(traffic.reads, began)
    assert "wrong" not in {outcome for _, outcome in failed_reads}, "a query answered without its document"
    traffic.check_acknowledged()
    cluster.record("region moves: unload of a region server, seconds", unloaded - began)
    cluster.record("region moves: load back, seconds", loaded - unloaded)
    cluster.record("region moves: failed reads", len(failed_reads))
    cluster.record("region moves: failed writes", len(traffic.failures(traffic.writes, began)))


def test_a_replica_restart_leaves_the_other_replica_answering(cluster) -> None:
    first, second = cluster.replicas
    traffic = Traffic([second], seed=2, timeout=60)  # a busy machine's slow call is not the restart's doing
    traffic.seed(SEEDED)
    traffic.start()
    try:
        began = time.monotonic()
        cluster.docker("restart", cluster.container("server1"), timeout=120)
        with SimHashClient(first, retries=0) as probe:
            probe.wait_until_serving(timeout=300)
        serving = time.monotonic()
        traffic.wait_for("queries on the other replica", lambda: traffic.ok_since(traffic.reads, serving) >= 20)
    finally:
        traffic.stop()
    assert traffic.failures(traffic.reads, began) == [] and traffic.failures(traffic.writes, began) == []
    traffic.check_acknowledged()
    cluster.record("replica restart: serving again after, seconds", serving - began)


def _under_traffic(cluster, seed: int, fault: Callable[[Traffic], float], targets: list[str] | None = None) -> Traffic:
    """Seed, start traffic, run ``fault`` (it returns when the cluster is whole again, with that moment), wait
    for 20 queries and 20 writes in a row after it; then: no wrong answer, every acknowledged write kept."""
    traffic = Traffic(targets or cluster.replicas, seed=seed)
    traffic.seed(SEEDED)
    traffic.start()
    try:
        before = len(traffic.acknowledged)
        traffic.wait_for("writes before the fault", lambda: len(traffic.acknowledged) >= before + 100)
        traffic.began = time.monotonic()
        whole = fault(traffic)
        traffic.wait_for(
            "queries and writes after the fault",
            lambda: traffic.ok_since(traffic.reads, whole) >= 20 and traffic.ok_since(traffic.writes, whole) >= 20,
        )
    finally:
        traffic.stop()
    failed = traffic.failures(traffic.reads, traffic.began)
    assert "wrong" not in {outcome for _, outcome in failed}, "a query answered without its document"
    traffic.check_acknowledged()
    return traffic


def _record_failures(cluster, name: str, traffic: Traffic) -> None:
    cluster.record(f"{name}: failed reads", len(traffic.failures(traffic.reads, traffic.began)))
    cluster.record(f"{name}: failed writes", len(traffic.failures(traffic.writes, traffic.began)))
    cluster.record(f"{name}: acknowledged writes checked", len(traffic.acknowledged))


def _create_index(cluster, prefix: str) -> None:
    """`schema apply` of a new index: the master creates its 5 tables and they open."""
    env = {
        **os.environ,
        "SIMHASH_HBASE_HOST": "127.0.0.1",
        "SIMHASH_HBASE_THRIFT_PORT": str(cluster.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(cluster.thrift2_port),
        "SIMHASH_TABLE_PREFIX": prefix,
    }
    # `schema apply` retries a master that says it is initialising for a few minutes; a master that takes
    # longer is asked again (tables it created before are then reported as existing) until the deadline.
    deadline, created, stderr = time.monotonic() + 900, set(), ""
    while time.monotonic() < deadline:
        applied = subprocess.run([CLI, "schema", "apply"], env=env, capture_output=True, text=True, timeout=900)
        created |= {line.split(":")[0] for line in applied.stdout.splitlines() if line.endswith(": created")}
        if applied.returncode == 0:
            assert len(created) == 5, (created, applied.stdout)
            assert applied.stdout.count(": created") + applied.stdout.count(": exists") == 5, applied.stdout
            return
        stderr = applied.stderr
        if not any(word in stderr for word in ("PleaseHold", "initializ", "MasterNotRunning")):
            break  # not a master on its way: asking again would not help
    raise AssertionError(f"schema apply of {prefix} failed: {stderr}")


def test_the_hmaster_killed_and_restarted_under_load_loses_nothing(cluster) -> None:
    """Reads and writes go to region servers directly: without a master they go on; it comes back."""

    def fault(traffic: Traffic) -> float:
        cluster.docker("kill", cluster.container("master"))
        killed = time.monotonic()
        traffic.wait_for("writes without a master", lambda: traffic.ok_since(traffic.writes, killed) >= 50)
        cluster.docker("start", cluster.container("master"))
        cluster.healthy("master")
        cluster.record("hmaster kill: healthy again after the kill, seconds", time.monotonic() - killed)
        # Its port answers long before it has finished becoming the active master (assigning hbase:meta,
        # waiting for the region servers), and a master that loses HDFS meanwhile aborts: back means it
        # creates tables again (the client retries while the master says it is initialising).
        _create_index(cluster, "aftermaster")
        cluster.record("hmaster kill: creates tables again after the kill, seconds", time.monotonic() - killed)
        return time.monotonic()

    _record_failures(cluster, "hmaster kill", _under_traffic(cluster, 3, fault))


def test_zookeeper_restarted_under_load_loses_nothing(cluster) -> None:
    def fault(traffic: Traffic) -> float:
        began = time.monotonic()
        cluster.docker("restart", "-t", "10", cluster.container("zookeeper"), timeout=120)
        cluster.healthy("zookeeper")
        cluster.record("zookeeper restart: healthy again after, seconds", time.monotonic() - began)
        for server in ("master", *REGION_SERVERS):  # their sessions outlived the restart: no one aborted
            cluster.healthy(server)
        return time.monotonic()

    _record_failures(cluster, "zookeeper restart", _under_traffic(cluster, 4, fault))


def test_the_namenode_restarted_under_load_loses_nothing(cluster) -> None:
    def fault(traffic: Traffic) -> float:
        began = time.monotonic()
        cluster.docker("restart", "-t", "10", cluster.container("namenode"), timeout=120)
        cluster.healthy("namenode")
        cluster.record("namenode restart: healthy again after, seconds", time.monotonic() - began)
        for server in REGION_SERVERS:
            cluster.healthy(server)
        # Healthy means it takes new files again: a table created now opens (created while the NameNode
        # was still in safe mode, it would be left without a descriptor, its regions never opening).
        _create_index(cluster, "afternamenode")
        return time.monotonic()

    _record_failures(cluster, "namenode restart", _under_traffic(cluster, 5, fault))


def test_a_replica_cut_off_from_hbase_refuses_calls_then_serves_again_without_a_restart(cluster) -> None:
    """Its callers still reach it: while cut, it answers UNAVAILABLE (so clients go elsewhere) and says
    NOT_SERVING; joined again, it serves, the same process.  The other replica answers throughout."""
    first, second = cluster.replicas
    network, name = f"{cluster.project}_gateway", cluster.container("server1")
    started = cluster.docker("inspect", "-f", "{{.State.StartedAt}}", name).stdout

    def fault(traffic: Traffic) -> float:
        cluster.docker("network", "disconnect", network, name)
        cut = time.monotonic()
        with SimHashClient(first, timeout=30, retries=0) as client:
            traffic.wait_for("NOT_SERVING while cut", lambda: not client.health(timeout=10), timeout=120)
            cluster.record("replica cut: NOT_SERVING after, seconds", time.monotonic() - cut)
            traffic.wait_for("calls refused while cut", lambda: _refused(client), timeout=120)
            cluster.record("replica cut: calls refused at once after, seconds", time.monotonic() - cut)
            asked = time.monotonic()
            with pytest.raises(Unavailable, match="not reachable"):
                client.query(simhash=1, max_distance=0)
            cluster.record("replica cut: a query then refused in, seconds", time.monotonic() - asked)
            cluster.docker("network", "connect", network, name)
            joined = time.monotonic()
            client.wait_until_serving(timeout=300)
            traffic.wait_for("a query on the joined replica", lambda: _answers(client), timeout=120)
            cluster.record("replica cut: serving again after joining, seconds", time.monotonic() - joined)
        return time.monotonic()

    traffic = _under_traffic(cluster, 6, fault, targets=[second])
    assert traffic.failures(traffic.reads, traffic.began) == []  # the other replica never failed a call
    assert cluster.docker("inspect", "-f", "{{.State.StartedAt}}", name).stdout == started  # no restart
    _record_failures(cluster, "replica cut", traffic)


def _refused(client: SimHashClient) -> bool:
    """Whether a query is refused because the server knows HBase is out of reach (not tried, then failed)."""
    try:
        client.query(simhash=1, max_distance=0)
    except Unavailable as exc:
        return "not reachable" in str(exc)
    except SimHashError:
        return False
    return False


def _answers(client: SimHashClient) -> bool:
    try:
        client.query(simhash=1, max_distance=0)
        return True
    except SimHashError:
        return False
