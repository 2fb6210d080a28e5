"""How `hfile-load` and `clusters` run their Java jobs (server/mapreduce): here with Hadoop's LocalJobRunner,
or on YARN.

- ``local``: one JVM on this machine with the job's own jars (server/mapreduce/target, built by ``make
  jars``), the launcher's JDK 17 flags and a generated ``hbase-site.xml`` naming ZooKeeper and the pure-Java
  codecs.  Its heap is ``heap_mb``; what sizes it is ``sort_mb`` per map task and ``parallel`` tasks at once.
- ``yarn``: ``hadoop jar`` with the cluster's own configuration (``HADOOP_CONF_DIR``, ``HBASE_CONF_DIR``) and
  its HBase jars (``hbase mapredcp``), so the job runs as any MapReduce job there; the normalised input is
  first copied to ``staging_uri`` on the cluster's filesystem.

The JVM reports JSON lines on stdout (progress, finished phases, loads); its log goes to staging/job.log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from simhash_server.bulk.checkpoint import BulkLoadError

__all__ = ["CLUSTERS_CLASS", "MAIN_CLASS", "RUNNERS", "JobEvent", "JobRunner", "default_job_dir"]

RUNNERS = ("local", "yarn")
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
    heap_mb: int = 3072
    sort_mb: int = 512  # per map task: its sort buffer (mapreduce.task.io.sort.mb)
    parallel: int = 2  # local: map (and reduce) tasks at once
    staging_uri: str | None = None  # yarn: the staging directory on the cluster's filesystem
    properties: dict[str, str] = field(default_factory=dict)  # more -D settings for the job

    def __post_init__(self) -> None:
        if self.kind not in RUNNERS:
            raise ValueError(f"unknown runner {self.kind!r}; choose one of {', '.join(RUNNERS)}")
        if self.kind == "yarn" and not self.staging_uri:
            raise ValueError("the yarn runner needs a staging URI on the cluster's filesystem (--staging-uri)")
        if not 1 <= self.parallel <= 64:
            raise ValueError(f"parallel must be 1..64, got {self.parallel}")
        if self.sort_mb * self.parallel > self.heap_mb * 0.7:
            raise ValueError(
                f"{self.parallel} map tasks with {self.sort_mb} MB sort buffers do not fit a {self.heap_mb} MB heap "
                "with room for the reducers: lower --sort-mb or raise --heap-mb"
            )

    @property
    def jar(self) -> Path:
        jar = (self.job_dir or default_job_dir()) / JAR
        if not jar.is_file():
            raise BulkLoadError(f"{jar} is missing: build the job with `make jars` (Maven)")
        return jar

    def job_properties(self, staging: str) -> dict[str, str]:
        """Big sort buffers and compressed map output: the job's shuffle is most of its disk traffic."""
        props = {
            "mapreduce.task.io.sort.mb": str(self.sort_mb),
            "mapreduce.map.output.compress": "true",
            "mapreduce.map.output.compress.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.Lz4Codec",
            "hbase.bulkload.locality.sensitive.enabled": "false",
        }
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
        if self.kind == "yarn":
            argv, env = self._yarn(command, args, staging, main_class)
        else:
            argv, env = self._local(command, args, staging, main_class), None
        log_path = staging / "job.log"
        with open(log_path, "ab") as log:
            # The staging directory is the working directory: the local runner links job files into it.
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True, cwd=staging)
            assert proc.stdout is not None
            steady = LocalProgress() if self.kind == "local" else None
            try:
                for line in proc.stdout:
                    event = _event(line)
                    if event is not None:
                        yield steady.take(event) if steady else event
            finally:
                if proc.poll() is None:
                    proc.kill()
                code = proc.wait()
        if code != 0:
            raise BulkLoadError(f"the {command} job failed (exit {code}); {log_path} ends:\n{_tail(log_path)}")

    def _arguments(
        self, command: str, args: dict[str, str], staging: str, extra: dict[str, str] | None = None
    ) -> list[str]:
        props = (extra or {}) | self.job_properties(staging)
        defines = [f"-D{key}={value}" for key, value in props.items()]
        pairs = [item for key, value in args.items() for item in (f"--{key}", value)]
        return [*defines, command, *pairs]

    def _local(self, command: str, args: dict[str, str], staging: Path, main_class: str) -> list[str]:
        from simhash_deploy.jvm import JDK17_FLAGS
        from simhash_deploy.site import AIRCOMPRESSOR_CODECS, site_xml

        conf = staging.resolve() / "conf"  # absolute: the job runs in the staging directory
        conf.mkdir(exist_ok=True)
        host, _, port = (self.zookeeper or "127.0.0.1:2181").partition(":")
        site = {"hbase.zookeeper.quorum": host, "hbase.zookeeper.property.clientPort": port or "2181"}
        (conf / "hbase-site.xml").write_text(site_xml(site | AIRCOMPRESSOR_CODECS, "written by hfile-load"))
        (conf / "log4j2.properties").write_text(_LOG4J2)
        java_home = os.environ.get("JAVA_HOME")
        java = (java_home and shutil.which("java", path=f"{java_home}/bin")) or shutil.which("java")
        if java is None:
            raise BulkLoadError(
                "java is not installed; the HFile job needs JDK 17 (apt-get install openjdk-17-jdk-headless)"
            )
        jar = self.jar
        return [
            java,
            f"-Xmx{self.heap_mb}m",
            *JDK17_FLAGS,
            f"-Dlog4j2.configurationFile=file:{conf / 'log4j2.properties'}",
            "-cp",
            f"{conf}:{jar}:{jar.parent / 'lib'}/*",
            main_class,
            *self._arguments(command, args, str(staging.resolve())),
        ]

    def _yarn(
        self, command: str, args: dict[str, str], staging: Path, main_class: str
    ) -> tuple[list[str], dict[str, str]]:
        for tool in ("hadoop", "hbase"):
            if shutil.which(tool) is None:
                raise BulkLoadError(f"the yarn runner needs the cluster's `{tool}` command on PATH")
        mapredcp = subprocess.run(["hbase", "mapredcp"], capture_output=True, text=True, check=True).stdout.strip()
        remote = str(self.staging_uri)
        if command == "generate":  # the normalised input goes to the cluster's filesystem first
            subprocess.run(["hadoop", "fs", "-mkdir", "-p", remote], check=True)
            subprocess.run(["hadoop", "fs", "-put", "-f", str(staging / "input"), remote], check=True)
        env = dict(os.environ)
        env["HADOOP_CLASSPATH"] = ":".join(p for p in (mapredcp, env.get("HBASE_CONF_DIR", "")) if p)
        zookeeper = {}
        if self.zookeeper:  # otherwise the cluster's hbase-site.xml names it
            host, _, port = self.zookeeper.partition(":")
            zookeeper = {"hbase.zookeeper.quorum": host} | (
                {"hbase.zookeeper.property.clientPort": port} if port else {}
            )
        argv = ["hadoop", "jar", str(self.jar), main_class, "-libjars", mapredcp.replace(":", ",")]
        if "staging" in args:
            args = args | {"staging": remote}
        return [*argv, *self._arguments(command, args, remote, zookeeper)], env


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
    lines = path.read_text(errors="replace").splitlines()
    return "\n".join(lines[-_LOG_TAIL:])


# The JVM's log: Hadoop's and HBase's warnings to stderr (job.log); job progress comes as JSON on stdout.
_LOG4J2 = (
    "status = warn\nappender.err.type = Console\nappender.err.name = err\nappender.err.target = SYSTEM_ERR\n"
    "appender.err.layout.type = PatternLayout\nappender.err.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n\n"
    "rootLogger = WARN, err\nlogger.job.name = org.apache.hadoop.mapred.LocalJobRunner\nlogger.job.level = WARN\n"
    "logger.bulk.name = org.apache.hadoop.hbase.tool\nlogger.bulk.level = INFO\n"
    "logger.mr.name = org.apache.hadoop.hbase.mapreduce\nlogger.mr.level = INFO\n"
)
