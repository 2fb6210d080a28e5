"""One role of a distributed HBase on HDFS, in a container of the HBase image: `python -m simhash_deploy.cluster
ROLE` (deploy/cluster.yaml runs one container per role).

Roles: zookeeper, namenode, datanode, master, regionserver, thrift (both gateways), resourcemanager (with
MapReduce's history server) and nodemanager.  All of them are the jars `make jars` fetched from Maven Central
(HBase 2.6.1 and the Hadoop 2.10.2 it is built against; the NameNode and DataNode are Hadoop's own classes
from hadoop-hdfs; YARN's daemons run on deploy/yarn's Hadoop jars alone, see yarn.py), with jvm.py's flags.  Each
role writes its configuration under $SIMHASH_HBASE_DATA/conf, then runs its JVM in the foreground, logging
to the console (`docker logs`).  `... check ROLE` is the health check: the role's port answers (for thrift,
a Thrift call does; a region server must also be registered with the master, a NodeManager running at the
ResourceManager).  `... regions unload|load
SERVER` moves regions off a region server and back.

Settings, from the environment (defaults in brackets):
  SIMHASH_HBASE_DATA [/data]                 configuration and the role's data
  SIMHASH_HEAP_MB [512]                      the JVM's heap
  SIMHASH_ZOOKEEPER [zookeeper]              ZooKeeper's host
  SIMHASH_NAMENODE [namenode]                the NameNode's host
  SIMHASH_RESOURCEMANAGER [resourcemanager]  the ResourceManager's host
  SIMHASH_NM_MEMORY_MB [2048]                what a NodeManager offers its task containers
  SIMHASH_ZK_SESSION_TIMEOUT_MS [20000]      how soon a dead region server's ZooKeeper session expires
  SIMHASH_BALANCER_PERIOD_MS [300000]        how often the master rebalances regions (HBase's default)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from simhash_deploy.hbase_local import THRIFT1_CLASS, THRIFT2_CLASS
from simhash_deploy.home import ASSEMBLY, project_root
from simhash_deploy.jvm import JDK17_FLAGS, JIT_FLAGS, log4j2_properties
from simhash_deploy.site import AIRCOMPRESSOR_CODECS, site_xml
from simhash_deploy.yarn import (
    HISTORY_PORT,
    LIB,
    NODEMANAGER_PORT,
    RESOURCEMANAGER_PORT,
    RM_WEB_PORT,
    java_home,
    write_yarn_config,
)

__all__ = ["ROLES", "main"]

NAMENODE_PORT, ZOOKEEPER_PORT, THRIFT1_PORT, THRIFT2_PORT = 8020, 2181, 9090, 9091
MASTER_PORT, REGIONSERVER_PORT, DATANODE_PORT = 16000, 16020, 50010
NAMENODE_WEB_PORT = 50070  # Hadoop 2's default dfs.namenode.http-address
ROLES = {  # role -> (main class, arguments, the port that shows it is up)
    "zookeeper": ("org.apache.zookeeper.server.quorum.QuorumPeerMain", ["{conf}/zoo.cfg"], ZOOKEEPER_PORT),
    "namenode": ("org.apache.hadoop.hdfs.server.namenode.NameNode", [], NAMENODE_PORT),
    "datanode": ("org.apache.hadoop.hdfs.server.datanode.DataNode", [], DATANODE_PORT),
    "master": ("org.apache.hadoop.hbase.master.HMaster", ["start"], MASTER_PORT),
    "regionserver": ("org.apache.hadoop.hbase.regionserver.HRegionServer", ["start"], REGIONSERVER_PORT),
    "thrift": (THRIFT1_CLASS, ["-p", str(THRIFT1_PORT), "-threadpool", "start"], THRIFT1_PORT),
    "resourcemanager": (
        "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager",
        [],
        RESOURCEMANAGER_PORT,
    ),
    "nodemanager": ("org.apache.hadoop.yarn.server.nodemanager.NodeManager", [], NODEMANAGER_PORT),
}
YARN_ROLES = ("resourcemanager", "nodemanager")
HISTORY_CLASS = "org.apache.hadoop.mapreduce.v2.hs.JobHistoryServer"


def _env(name: str, default: str) -> str:
    return os.environ.get(name) or default


def _data() -> Path:
    return Path(_env("SIMHASH_HBASE_DATA", "/data"))


def _site(path: Path, properties: dict[str, str]) -> None:
    path.write_text(site_xml(properties, "written by simhash_deploy.cluster"))


def write_config(conf: Path) -> None:
    data, namenode, zookeeper = _data(), _env("SIMHASH_NAMENODE", "namenode"), _env("SIMHASH_ZOOKEEPER", "zookeeper")
    conf.mkdir(parents=True, exist_ok=True)
    _site(
        conf / "core-site.xml",
        {"fs.defaultFS": f"hdfs://{namenode}:{NAMENODE_PORT}", "hadoop.tmp.dir": str(data / "tmp")},
    )
    _site(
        conf / "hdfs-site.xml",
        {
            "dfs.replication": "1",  # one DataNode here; a real cluster keeps the default 3
            "dfs.namenode.name.dir": str(data / "name"),
            "dfs.datanode.data.dir": str(data / "dn"),
            "dfs.namenode.rpc-bind-host": "0.0.0.0",
            "dfs.permissions.enabled": "false",
            # Containers' addresses have no reverse DNS: accept DataNodes by address.
            "dfs.namenode.datanode.registration.ip-hostname-check": "false",
        },
    )
    _site(
        conf / "hbase-site.xml",
        {
            "hbase.cluster.distributed": "true",
            "hbase.rootdir": f"hdfs://{namenode}:{NAMENODE_PORT}/hbase",
            "hbase.tmp.dir": str(data / "tmp"),
            "hbase.zookeeper.quorum": zookeeper,
            "zookeeper.session.timeout": _env("SIMHASH_ZK_SESSION_TIMEOUT_MS", "20000"),
            "hbase.wal.provider": "filesystem",
            "hbase.master.info.port": "-1",
            "hbase.regionserver.info.port": "-1",
            "hbase.master.wait.on.regionservers.mintostart": "2",
            "hbase.balancer.period": _env("SIMHASH_BALANCER_PERIOD_MS", "300000"),
            # Servers go by the names they report (their service names); containers' addresses reverse
            # to other names, which the master would otherwise impose on them.
            "hbase.regionserver.hostname.disable.master.reversedns": "true",
            "hbase.thrift.info.port": "-1",
            "hbase.thrift.server.socket.read.timeout": "60000",
            # A flush that cannot write its file is tried again once a second (hbase.server.pause), and the
            # server aborts after the last try.  A restarted NameNode refuses new files for 30 s past its
            # restart (its safe-mode extension): with the default 10 tries, a flush due then (hbase:meta's
            # come every 5 minutes) aborted a region server.  120 tries cover two minutes.
            "hbase.hstore.flush.retries.number": "120",
            **AIRCOMPRESSOR_CODECS,
        },
    )
    (conf / "zoo.cfg").write_text(
        f"dataDir={data / 'zk'}\nclientPort={ZOOKEEPER_PORT}\ntickTime=2000\nmaxSessionTimeout=60000\n"
        "admin.enableServer=false\n4lw.commands.whitelist=ruok,dump\n"
    )
    (conf / "log4j2.properties").write_text(log4j2_properties(console=True))
    write_yarn_config(conf, data, project_root() / LIB, _env("SIMHASH_RESOURCEMANAGER", "resourcemanager"))
    for webapp in ("hdfs", "datanode", "static"):  # Hadoop's web UIs look these up on the class path; the
        (conf / "webapps" / webapp).mkdir(parents=True, exist_ok=True)  # Maven jars ship none: empty


def java(main_class: str, args: list[str], conf: Path, yarn: bool = False) -> list[str]:
    lib = project_root() / (LIB if yarn else ASSEMBLY / "target" / "lib")
    heap = _env("SIMHASH_HEAP_MB", "512")
    logging = (
        [f"-Dlog4j.configuration=file:{conf / 'log4j.properties'}", f"-Dyarn.log.dir={_data() / 'logs'}"]
        if yarn
        else [f"-Dlog4j2.configurationFile=file:{conf / 'log4j2.properties'}"]
    )
    return [
        "java",
        f"-Xms{heap}m",
        f"-Xmx{heap}m",
        *JIT_FLAGS,
        *JDK17_FLAGS,
        *logging,
        "-Dzookeeper.admin.enableServer=false",
        "-cp",
        f"{conf}:{lib}/*",
        main_class,
        *(a.format(conf=conf) for a in args),
    ]


def run(role: str) -> int:
    conf = _data() / "conf"
    write_config(conf)
    main_class, args, _ = ROLES[role]
    if role == "namenode" and not (_data() / "name" / "current").exists():
        formatted = subprocess.run(java(main_class, ["-format", "-nonInteractive"], conf), check=False)
        if formatted.returncode != 0:
            return formatted.returncode
    yarn = role in YARN_ROLES
    commands = [java(main_class, args, conf, yarn)]
    if role == "thrift":  # both gateways in one container: the server reaches them at one host
        commands.append(java(THRIFT2_CLASS, ["-p", str(THRIFT2_PORT), "-threadpool", "start"], conf))
    if role == "resourcemanager":  # finished jobs' status and counters, where clients look for them
        commands.append(java(HISTORY_CLASS, [], conf, yarn))
    env = {**os.environ, "JAVA_HOME": java_home(), "HADOOP_CONF_DIR": str(conf)} if yarn else None
    procs = [subprocess.Popen(c, env=env) for c in commands]

    def forward(signum: int, _frame: object) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    pid, status = os.wait()  # one JVM gone (or stopped by a forwarded signal): stop the other
    for proc in procs:
        if proc.pid == pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
    forward(signal.SIGTERM, None)
    codes = [proc.wait() for proc in procs]
    return next((code for code in codes if code), 0)


def region_server_registered(host: str, zookeeper: tuple[str, int] | None = None) -> bool:
    """Whether ZooKeeper holds the region server's ephemeral node.  The server creates it once the master
    has taken it on; its port answers earlier, while the master cannot give it regions yet."""
    address = zookeeper or (_env("SIMHASH_ZOOKEEPER", "zookeeper"), ZOOKEEPER_PORT)
    try:
        with socket.create_connection(address, timeout=3) as conn:
            conn.sendall(b"dump")  # ZooKeeper's four-letter command: sessions and their ephemeral nodes
            reply = b"".join(iter(lambda: conn.recv(65536), b""))
    except OSError:
        return False
    return f"/hbase/rs/{host},".encode() in reply


def namenode_writable(address: str = "127.0.0.1") -> bool:
    """Whether the NameNode is out of safe mode (its JMX NameNodeInfo bean).  A restarted one answers RPCs
    at once but refuses new files until its DataNodes have reported and 30 s more have passed; HBase 2.6
    creating a table then writes no table descriptor, and does not notice: the table's regions never open."""
    import json
    import urllib.request

    url = f"http://{address}:{NAMENODE_WEB_PORT}/jmx?qry=Hadoop:service=NameNode,name=NameNodeInfo"
    try:
        with urllib.request.urlopen(url, timeout=3) as reply:
            beans = json.load(reply).get("beans") or []
    except (OSError, ValueError):
        return False
    return bool(beans) and beans[0].get("Safemode") == ""


def node_running(host: str, resourcemanager: str | None = None) -> bool:
    """Whether the ResourceManager lists the NodeManager on ``host`` as RUNNING (its REST API)."""
    import json
    import urllib.request

    address = resourcemanager or _env("SIMHASH_RESOURCEMANAGER", "resourcemanager")
    try:
        with urllib.request.urlopen(f"http://{address}:{RM_WEB_PORT}/ws/v1/cluster/nodes", timeout=3) as reply:
            nodes = (json.load(reply).get("nodes") or {}).get("node") or []
    except (OSError, ValueError):
        return False
    return any(node.get("nodeHostName") == host and node.get("state") == "RUNNING" for node in nodes)


def check(role: str) -> int:
    port = ROLES[role][2]
    ports = {"thrift": [port, THRIFT2_PORT], "resourcemanager": [port, HISTORY_PORT]}.get(role, [port])
    for p in ports:
        try:
            socket.create_connection(("127.0.0.1", p), timeout=3).close()
        except OSError:
            try:
                socket.create_connection((socket.gethostname(), p), timeout=3).close()
            except OSError:
                return 1
    if role == "namenode":
        return 0 if namenode_writable() else 1
    if role == "regionserver":
        return 0 if region_server_registered(socket.gethostname()) else 1
    if role == "nodemanager":
        return 0 if node_running(socket.gethostname()) else 1
    if role == "thrift":
        import happybase
        from thriftpy2.thrift import TException

        try:
            happybase.Connection("127.0.0.1", THRIFT1_PORT, timeout=5000).tables()
        except (OSError, TException):
            return 1
    return 0


# Regions the RegionMover moves at once.  Its default, one, waits for each region to open on its new server
# before it closes the next: a server's few dozen regions then take most of a minute each way.
MOVER_THREADS = 4


def move_regions(operation: str, server: str) -> int:
    """HBase's own RegionMover: ``unload`` moves every region off ``server`` (to the others), ``load`` moves
    back the ones it unloaded (it keeps their list in /tmp); each region is checked online where it went."""
    conf = _data() / "conf"
    args = ["-r", f"{server}:{REGIONSERVER_PORT}", "-o", operation, "-m", str(MOVER_THREADS)]
    mover = java("org.apache.hadoop.hbase.util.RegionMover", args, conf)
    return subprocess.run(mover, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 1 and args[0] in ROLES:
        return run(args[0])
    if len(args) == 2 and args[0] == "check" and args[1] in ROLES:
        return check(args[1])
    if len(args) == 3 and args[0] == "regions" and args[1] in ("unload", "load"):
        return move_regions(args[1], args[2])
    roles = "|".join(ROLES)
    print(
        f"usage: python -m simhash_deploy.cluster {{{roles}}} | check {{{roles}}} | regions unload|load SERVER",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
