"""How `hfile-load` and `clusters` run their Java jobs (server/mapreduce): here with Hadoop's LocalJobRunner,
or on YARN.

- ``local``: one JVM on this machine with the job's own jars (server/mapreduce/target, built by ``make
  jars``), the launcher's JDK 17 flags and a generated ``hbase-site.xml`` naming ZooKeeper and the pure-Java
  codecs.  Its heap is ``heap_mb``; what sizes it is ``sort_mb`` per map task and ``parallel`` tasks at once.
- ``yarn``: submitted to the cluster's ResourceManager from a JVM on this machine with the same jars, and the
  cluster's configuration directories (``conf_dirs``: ``--conf-dir``, else ``HADOOP_CONF_DIR`` and
  ``HBASE_CONF_DIR``) on its class path after them.  No ``hadoop`` or ``hbase`` launcher script is used, even where
  one is installed: each job ships its HBase jars through the distributed cache (HBase's
  ``TableMapReduceUtil.addDependencyJars``), and the normalised input goes to ``staging_uri`` on the
  cluster's filesystem through Hadoop's FileSystem API, from the same JVM.

On YARN, hfile-load's chain of jobs is driven from inside the cluster by default (``driver="cluster"``,
server/mapreduce's Driver): the JVM here submits one YARN application, whose master configures, submits and
waits for each job and hands the HFiles over, and relays its lines.  With ``driver="client"`` the JVM here
does all of that itself.

The JVM reports JSON lines on stdout (progress, finished phases, loads); its log goes to staging/job.log.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simhash_server.bulk.checkpoint import BulkLoadError
from simhash_server.bulk.class_archive import ClassArchive

__all__ = ["CLUSTERS_CLASS", "DRIVERS", "MAIN_CLASS", "RUNNERS", "JobEvent", "JobRunner", "default_job_dir"]

RUNNERS = ("local", "yarn")
DRIVERS = ("cluster", "client")
MAIN_CLASS = "io.simhashindex.hfile.Main"  # hfile-load
CLUSTERS_CLASS = "io.simhashindex.hfile.ClustersMain"
JAR = "simhash-mapreduce.jar"
_LOG_TAIL = 25


def default_job_dir() -> Path:
    from simhash_deploy import project_root

    return project_root() / "server" / "mapreduce" / "target"


@dataclass(frozen=True)
class JobEvent:
    kind: str  # progress | phase | generated | loaded
    phase: str
    data: dict[str, Any]


@dataclass(frozen=True)
class JobRunner:
    kind: str = "local"
    job_dir: Path | None = None  # the jar and its lib/; default: server/mapreduce/target in the checkout
    zookeeper: str | None = None  # host:port; local default 127.0.0.1:2181, yarn default the cluster's
    heap_mb: int = 3072  # local: the job's JVM, tasks included; yarn: the submitting JVM's
    sort_mb: int | None = None  # per map task (mapreduce.task.io.sort.mb); local default 512, yarn the cluster's
    parallel: int = 2  # local: map (and reduce) tasks at once
    staging_uri: str | None = None  # yarn: the staging directory on the cluster's filesystem
    conf_dirs: tuple[Path, ...] = ()  # yarn: the cluster's client configuration [$HADOOP_CONF_DIR $HBASE_CONF_DIR]
    properties: dict[str, str] = field(default_factory=dict)  # more -D settings for the job
    driver: str = "cluster"  # yarn, hfile-load: where its chain of jobs is driven from (DRIVERS)

    def __post_init__(self) -> None:
        if self.kind not in RUNNERS:
            raise ValueError(f"unknown runner {self.kind!r}; choose one of {', '.join(RUNNERS)}")
        if self.driver not in DRIVERS:
            raise ValueError(f"unknown driver {self.driver!r}; choose one of {', '.join(DRIVERS)}")
        if self.kind == "yarn" and not self.staging_uri:
            raise ValueError("the yarn runner needs a staging URI on the cluster's filesystem (--staging-uri)")
        if not 1 <= self.parallel <= 64:
            raise ValueError(f"parallel must be 1..64, got {self.parallel}")
        if self.kind == "local" and self.local_sort_mb * self.parallel > self.heap_mb * 0.7:
            raise ValueError(
                f"{self.parallel} map tasks with {self.local_sort_mb} MB sort buffers do not fit a "
                f"{self.heap_mb} MB heap with room for the reducers: lower --sort-mb or raise --heap-mb"
            )

    @property
    def local_sort_mb(self) -> int:
        return self.sort_mb or 512

    @property
    def jar(self) -> Path:
        jar = (self.job_dir or default_job_dir()) / JAR
        if not jar.is_file():
            raise BulkLoadError(f"{jar} is missing: build the job with `make jars` (Maven)")
        return jar

    def job_properties(self, staging: str) -> dict[str, str]:
        """Big sort buffers and compressed map output: the job's shuffle is most of its disk traffic."""
        props = {
            "mapreduce.map.output.compress": "true",
            "mapreduce.map.output.compress.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.Lz4Codec",
            "hbase.bulkload.locality.sensitive.enabled": "false",
        }
        if self.sort_mb is not None or self.kind == "local":
            props["mapreduce.task.io.sort.mb"] = str(self.local_sort_mb)
        if self.kind == "yarn":
            props["mapreduce.framework.name"] = "yarn"
            # The jars the job ships before the cluster's own: Hadoop 2's ZooKeeper 3.4 would shadow HBase's.
            props["mapreduce.job.user.classpath.first"] = "true"
        if self.kind == "local":
            props |= {
                "mapreduce.framework.name": "local",
                "fs.defaultFS": "file:///",
                "hadoop.tmp.dir": f"{staging}/tmp/hadoop",  # map outputs and spills: beside the HFiles
                "mapreduce.local.map.tasks.maximum": str(self.parallel),
                "mapreduce.local.reduce.tasks.maximum": str(self.parallel),
                # Reducers share the one heap here: each may buffer this share of it while merging.
                "mapreduce.reduce.shuffle.input.buffer.percent": f"{0.5 / self.parallel:.2f}",
            }
        return props | self.properties

    # -- running ------------------------------------------------------------------------------------------
    def run(
        self, command: str, args: dict[str, str], staging: Path, main_class: str = MAIN_CLASS
    ) -> Iterator[JobEvent]:
        """Run ``command`` of ``main_class``; ``staging`` holds its log, configuration and (local) temporary files."""
        java = self.java_binary()
        archive = ClassArchive(java, [self.jar, *sorted((self.jar.parent / "lib").glob("*.jar"))])
        if self.kind == "yarn":
            argv = self._yarn(java, command, args, staging, main_class, archive.flags())
        else:
            argv = self._local(java, command, args, staging, main_class, archive.flags())
        log_path = staging / "job.log"
        with open(log_path, "ab") as log:
            # The staging directory is the working directory: the local runner links job files into it.
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=log, text=True, cwd=staging, preexec_fn=_end_with_parent
            )
            assert proc.stdout is not None
            steady = LocalProgress() if self.kind == "local" else None
            try:
                for line in proc.stdout:
                    event = _event(line)
                    if event is not None:
                        yield steady.take(event) if steady else event
            finally:
                if proc.poll() is None:  # stopped early: SIGTERM, so the JVM kills the job it submitted
                    proc.terminate()
                    try:
                        proc.wait(timeout=60)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                code = proc.wait()
                archive.keep(code)
        if code != 0:
            raise BulkLoadError(f"the {command} job failed (exit {code}); {log_path} ends:\n{_tail(log_path)}")

    def _arguments(
        self, command: str, args: dict[str, str], staging: str, extra: dict[str, str] | None = None
    ) -> list[str]:
        props = (extra or {}) | self.job_properties(staging)
        defines = [f"-D{key}={value}" for key, value in props.items()]
        pairs = [item for key, value in args.items() for item in (f"--{key}", value)]
        return [*defines, command, *pairs]

    @staticmethod
    def java_binary() -> str:
        """The java the launcher runs HBase with ($JAVA_HOME's, else PATH's); BulkLoadError when there is none."""
        from simhash_deploy.home import HBaseError
        from simhash_deploy.jvm import java_binary

        try:
            return java_binary()
        except HBaseError as exc:
            raise BulkLoadError(str(exc)) from exc

    def _java(self, java: str, conf: Path, conf_dirs: list[Path], main_class: str, flags: list[str]) -> list[str]:
        """The JVM: the launcher's JDK 17 flags and ``flags``, logging to stderr, the job's jars and then
        ``conf_dirs`` on its class path (after the jars, so that the class archive can hold their classes)."""
        from simhash_deploy.jvm import JDK17_FLAGS

        (conf / "log4j2.properties").write_text(_LOG4J2)
        jar = self.jar
        return [
            java,
            f"-Xmx{self.heap_mb}m",
            *JDK17_FLAGS,
            *flags,
            f"-Dlog4j2.configurationFile=file:{conf / 'log4j2.properties'}",
            "-cp",
            ":".join([str(jar), f"{jar.parent / 'lib'}/*", *map(str, conf_dirs)]),
            main_class,
        ]

    def _conf(self, staging: Path) -> Path:
        conf = staging.resolve() / "conf"  # absolute: the job runs in the staging directory
        conf.mkdir(exist_ok=True)
        return conf

    def _local(
        self, java: str, command: str, args: dict[str, str], staging: Path, main_class: str, flags: list[str]
    ) -> list[str]:
        from simhash_deploy.site import AIRCOMPRESSOR_CODECS, site_xml

        conf = self._conf(staging)
        host, _, port = (self.zookeeper or "127.0.0.1:2181").partition(":")
        site = {"hbase.zookeeper.quorum": host, "hbase.zookeeper.property.clientPort": port or "2181"}
        (conf / "hbase-site.xml").write_text(site_xml(site | AIRCOMPRESSOR_CODECS, "written by hfile-load"))
        jvm = self._java(java, conf, [conf], main_class, flags)
        return [*jvm, *self._arguments(command, args, str(staging.resolve()))]

    def cluster_conf_dirs(self) -> list[Path]:
        """The cluster's configuration directories, checked for what a submission needs; BulkLoadError
        naming what is missing."""
        dirs = list(self.conf_dirs) or [
            Path(os.environ[name]) for name in ("HADOOP_CONF_DIR", "HBASE_CONF_DIR") if os.environ.get(name)
        ]
        if not dirs:
            raise BulkLoadError(
                "the yarn runner needs the cluster's client configuration: --conf-dir DIR (or HADOOP_CONF_DIR and "
                "HBASE_CONF_DIR) with its core-site.xml, yarn-site.xml, mapred-site.xml and hbase-site.xml"
            )
        for folder in dirs:
            if not folder.is_dir():
                raise BulkLoadError(f"configuration directory {folder} does not exist")
        props = site_properties(dirs)
        shown = ", ".join(map(str, dirs))
        if not ({"yarn.resourcemanager.address", "yarn.resourcemanager.hostname"} & props.keys()):
            raise BulkLoadError(
                f"no ResourceManager address: no yarn-site.xml in {shown} sets yarn.resourcemanager.address "
                "or yarn.resourcemanager.hostname"
            )
        if not self.zookeeper and "hbase.zookeeper.quorum" not in props:
            raise BulkLoadError(
                f"no HBase ZooKeeper: no hbase-site.xml in {shown} sets hbase.zookeeper.quorum (or give --zookeeper)"
            )
        staging = str(self.staging_uri)
        default_fs = props.get("fs.defaultFS", "file:///")
        if staging.startswith("file:") or ("://" not in staging and default_fs.startswith("file:")):
            raise BulkLoadError(
                f"the staging URI {staging} is on this machine's filesystem, which the cluster's nodes do not read: "
                "give an hdfs:// URI, or a --conf-dir whose core-site.xml sets fs.defaultFS"
            )
        return [d.resolve() for d in dirs]

    def _yarn(
        self, java: str, command: str, args: dict[str, str], staging: Path, main_class: str, flags: list[str]
    ) -> list[str]:
        dirs = self.cluster_conf_dirs()
        remote = str(self.staging_uri).rstrip("/")
        zookeeper = {}
        if self.zookeeper:  # otherwise the cluster's hbase-site.xml names it
            host, _, port = self.zookeeper.partition(":")
            zookeeper = {"hbase.zookeeper.quorum": host} | (
                {"hbase.zookeeper.property.clientPort": port} if port else {}
            )
        if "staging" in args:
            args = args | {"staging": remote}
        if command == "generate" and "inputs" not in args:  # the normalised input: copied by the JVM
            args = args | {"upload": str((staging / "input").resolve())}
        if main_class == MAIN_CLASS and command in ("generate", "load"):
            args = args | {"driver": self.driver}
        from simhash_deploy.jvm import SUBMITTER_FLAGS

        jvm = self._java(java, self._conf(staging), dirs, main_class, [*SUBMITTER_FLAGS, *flags])
        return [*jvm, *self._arguments(command, args, remote, zookeeper)]


def _end_with_parent() -> None:
    """In the job's JVM before it starts: SIGTERM when this process dies, however it dies (a SIGKILL runs no
    ``finally``), so the JVM's shutdown hook kills the job it submitted instead of outliving its caller.
    Linux's PR_SET_PDEATHSIG (prctl is looked up before the fork: the child only calls it)."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


_PR_SET_PDEATHSIG = 1
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux") else None


def site_properties(dirs: list[Path]) -> dict[str, str]:
    """The properties of every ``*-site.xml`` in ``dirs`` (the first directory's value wins, as on a class
    path); BulkLoadError naming a file that is not Hadoop's XML."""
    props: dict[str, str] = {}
    for folder in reversed(dirs):
        for path in sorted(folder.glob("*-site.xml")):
            try:
                root = ET.parse(path).getroot()
            except ET.ParseError as exc:
                raise BulkLoadError(f"{path} is not a Hadoop configuration file: {exc}") from exc
            for prop in root.iter("property"):
                name, value = prop.findtext("name"), prop.findtext("value")
                if name:
                    props[name.strip()] = (value or "").strip()
    return props


class LocalProgress:
    """Hadoop's LocalJobRunner (2.10, ``LocalJobRunner.Job.done``) sets a job's map or reduce progress to 1
    whenever one of its tasks finishes, until another task reports: read each second, the bar jumps to 100%
    and back.  So a 1 is taken once the next step confirms it: reducers under way for the maps, the job's end
    (its phase event) for the reducers; until then the last figure stands."""

    def __init__(self) -> None:
        self._shown: dict[str, tuple[float, float]] = {}

    def take(self, event: JobEvent) -> JobEvent:
        if event.kind == "phase":  # the job ended: a later job of the same phase starts afresh
            self._shown.pop(event.phase, None)
        if event.kind != "progress":
            return event
        maps, reduces = float(event.data["map"]), float(event.data["reduce"])
        last_maps, last_reduces = self._shown.get(event.phase, (0.0, 0.0))
        if maps >= 1.0 and reduces <= 0.0:
            maps = last_maps
        if reduces >= 1.0:
            reduces = last_reduces
        self._shown[event.phase] = (maps, reduces)
        return replace(event, data=event.data | {"map": maps, "reduce": reduces})


def _event(line: str) -> JobEvent | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        data = json.loads(line)
    except json.JSONDecodeError:
        return None
    return JobEvent(data.pop("event", "?"), data.pop("phase", ""), data)


def _tail(path: Path) -> str:
    """The job's own account of its failure (Jobs.exit: the messages after ``error:``, last), else the log's
    last lines."""
    lines = path.read_text(errors="replace").splitlines()
    said = [n for n, line in enumerate(lines) if line.startswith("error: ")]
    return "\n".join(lines[said[-1] :] if said else lines[-_LOG_TAIL:])


# The JVM's log: Hadoop's and HBase's warnings to stderr (job.log); job progress comes as JSON on stdout.
_LOG4J2 = (
    "status = warn\nappender.err.type = Console\nappender.err.name = err\nappender.err.target = SYSTEM_ERR\n"
    "appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n\n"
    "rootLogger = WARN, err\nlogger.job.name = org.apache.hadoop.mapred.LocalJobRunner\nlogger.job.level = WARN\n"
    "logger.bulk.name = org.apache.hadoop.hbase.tool\nlogger.bulk.level = INFO\n"
    "logger.mr.name = org.apache.hadoop.hbase.mapreduce\nlogger.mr.level = INFO\n"
)
