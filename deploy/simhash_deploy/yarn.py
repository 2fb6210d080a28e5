"""YARN in the container cluster: the configuration of its ResourceManager (with MapReduce's history server
beside it) and NodeManagers, and of the MapReduce jobs submitted to them.

Every daemon and every task runs on the jars of deploy/yarn (Hadoop's own, no HBase): a job brings its HBase
jars itself.  The same files are what a client copies from the cluster (`--conf-dir`), so the job settings
below (task memory, the JDK 17 flags, the tasks' class path) reach the jobs it submits.

Memory: the ResourceManager and history server hold SIMHASH_HEAP_MB each; a NodeManager its own heap plus
up to SIMHASH_NM_MEMORY_MB [2048] of task containers (an application master of 512 MB, tasks of 768 MB).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from simhash_deploy.jvm import JDK17_FLAGS
from simhash_deploy.site import site_xml

__all__ = [
    "HISTORY_PORT",
    "LIB",
    "NODEMANAGER_PORT",
    "RESOURCEMANAGER_PORT",
    "RM_WEB_PORT",
    "java_home",
    "write_yarn_config",
]

RESOURCEMANAGER_PORT, RM_WEB_PORT, HISTORY_PORT, NODEMANAGER_PORT = 8032, 8088, 10020, 45454
LIB = Path("deploy") / "yarn" / "target" / "lib"  # under the project's home
AM_MB, TASK_MB = 512, 768


# Tasks and application masters collect with one thread: several small JVMs share a node's cores, where G1's
# own threads cost more than its pauses save (docs/decisions.md#serial-collection-in-yarn-tasks).
TASK_GC = "-XX:+UseSerialGC"


def _heap(container_mb: int) -> str:
    """A task's JVM options: a heap of 70% of its container (the rest is the JVM's own), JDK 17's flags, and
    the collector."""
    return " ".join([f"-Xmx{container_mb * 7 // 10}m", *JDK17_FLAGS, TASK_GC])


def java_home() -> str:
    """The JDK the NodeManager hands its containers ($JAVA_HOME in their launch scripts)."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    java = shutil.which("java")
    if java is None:
        raise RuntimeError("java is not installed")
    return str(Path(java).resolve().parents[1])


def write_yarn_config(conf: Path, data: Path, lib: Path, resourcemanager: str) -> None:
    nm_memory = int(os.environ.get("SIMHASH_NM_MEMORY_MB") or 2048)
    classpath = f"{conf},{lib}/*"
    (conf / "yarn-site.xml").write_text(
        site_xml(
            {
                "yarn.resourcemanager.hostname": resourcemanager,
                "yarn.resourcemanager.bind-host": "0.0.0.0",
                "yarn.nodemanager.bind-host": "0.0.0.0",
                "yarn.nodemanager.address": f"0.0.0.0:{NODEMANAGER_PORT}",  # a fixed port: a restart is the same node
                "yarn.nodemanager.aux-services": "mapreduce_shuffle",
                "yarn.nodemanager.aux-services.mapreduce_shuffle.class": "org.apache.hadoop.mapred.ShuffleHandler",
                "yarn.nodemanager.resource.memory-mb": str(nm_memory),
                "yarn.nodemanager.resource.cpu-vcores": "4",
                "yarn.scheduler.minimum-allocation-mb": "256",
                "yarn.scheduler.maximum-allocation-mb": str(nm_memory),
                # A JVM reserves far more address space than it uses; physical memory is still checked.
                "yarn.nodemanager.vmem-check-enabled": "false",
                "yarn.nodemanager.local-dirs": str(data / "yarn" / "local"),
                "yarn.nodemanager.log-dirs": str(data / "yarn" / "logs"),
                # A NodeManager silent this long is lost, and its tasks run again elsewhere (the default, 10
                # minutes, is for clusters that would rather wait than redo work).
                "yarn.nm.liveness-monitor.expiry-interval-ms": "20000",
                # How long an application master keeps trying a NodeManager it cannot reach, to start or stop
                # a container there.  A task on a lost node runs again only once the master has given up
                # stopping it (after a 20 s connect timeout, tries of ~3 s each plus the interval): the
                # default, 3 minutes, held a job 4 minutes; 20 s held it 66 s (docs/operations.md).
                "yarn.client.nodemanager-connect.max-wait-ms": "6000",
                "yarn.client.nodemanager-connect.retry-interval-ms": "2000",
                "yarn.application.classpath": classpath,
            },
            "written by simhash_deploy.yarn",
        )
    )
    (conf / "mapred-site.xml").write_text(
        site_xml(
            {
                "mapreduce.framework.name": "yarn",
                "mapreduce.application.classpath": f"{lib}/*",
                "mapreduce.jobhistory.address": f"{resourcemanager}:{HISTORY_PORT}",
                "mapreduce.jobhistory.bind-host": "0.0.0.0",
                "yarn.app.mapreduce.am.resource.mb": str(AM_MB),
                "yarn.app.mapreduce.am.command-opts": _heap(AM_MB),
                "mapreduce.map.memory.mb": str(TASK_MB),
                "mapreduce.reduce.memory.mb": str(TASK_MB),
                "mapreduce.map.java.opts": _heap(TASK_MB),
                "mapreduce.reduce.java.opts": _heap(TASK_MB),
                "mapreduce.task.io.sort.mb": "192",
                # The NodeManager-kill test waits for this, not for the 10-minute default.
                "mapreduce.task.timeout": "120000",
            },
            "written by simhash_deploy.yarn",
        )
    )
    (conf / "capacity-scheduler.xml").write_text(
        site_xml(
            {
                "yarn.scheduler.capacity.root.queues": "default",
                "yarn.scheduler.capacity.root.default.capacity": "100",
                "yarn.scheduler.capacity.root.default.maximum-capacity": "100",
                # Application masters may take half the cluster (the default, 10%, would not start one here).
                "yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
            },
            "written by simhash_deploy.yarn",
        )
    )
    (conf / "log4j.properties").write_text(_LOG4J)


# Hadoop 2's daemons log through log4j 1 (reload4j): to the console, a container's log.
_LOG4J = (
    "log4j.rootLogger=INFO,console\nlog4j.appender.console=org.apache.log4j.ConsoleAppender\n"
    "log4j.appender.console.target=System.err\nlog4j.appender.console.layout=org.apache.log4j.PatternLayout\n"
    "log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n\n"
    "log4j.logger.org.apache.hadoop.yarn.server.resourcemanager.RMAuditLogger=WARN\n"
    "log4j.logger.org.apache.hadoop.yarn.server.nodemanager.NMAuditLogger=WARN\n"
)
