"""The JVM side of every HBase process the project launches (local, container, cluster): flags, collectors,
logging, and which java runs them."""

from __future__ import annotations

import os
import shutil

from simhash_deploy.home import HBaseError

__all__ = ["GARBAGE_COLLECTORS", "JDK17_FLAGS", "JIT_FLAGS", "SUBMITTER_FLAGS", "java_binary", "log4j2_properties"]

# The module flags HBase's own bin/hbase passes on JDK 11+ (HBASE-28261 and neighbours).
JDK17_FLAGS = [
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules",
    "jdk.unsupported",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports",
    "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
    "--add-exports",
    "java.base/sun.net.dns=ALL-UNNAMED",
    "--add-exports",
    "java.base/sun.net.util=ALL-UNNAMED",
    "-Djava.net.preferIPv4Stack=true",
]

# The JVMs' garbage collector.  G1 by default: JDK 17's ZGC is not generational, so it marks every memstore
# cell in every cycle, and on a small machine that costs queries more than G1's pauses do
# (docs/decisions.md#g1-the-jdks-default-collector-on-every-launcher-jvm).
GARBAGE_COLLECTORS = {"G1": "-XX:+UseG1GC", "ZGC": "-XX:+UseZGC", "Shenandoah": "-XX:+UseShenandoahGC"}
# The JIT compiles a method after a quarter of the calls it waits for by default, so a few thousand queries
# (serve's warm-up) compile the gateway's and the region server's read path, not tens of thousands
# (docs/decisions.md#jit-compile-thresholds-scaled-by-025-on-every-launcher-jvm).
JIT_FLAGS = ["-XX:CompileThresholdScaling=0.25"]
# A JVM that only submits jobs to YARN and waits for them runs no hot loop: C1 alone, with one compiler
# thread, and the serial collector spend less of the submitting machine's CPU than C2 and G1's threads do
# (docs/decisions.md#submitting-parse-task-and-master-jvms-on-yarn-run-c1-and-the-serial-collector), and
# no performance counters, whose sampler wakes every 50 ms for as long as the jobs run.  Its code runs once
# (configuration, submission) or once a second (status), so it compiles only what is called 4 times as often
# as the default asks: its compiler thread's CPU halves and the interpreter spends less than that saves.
SUBMITTER_FLAGS = [
    "-XX:TieredStopAtLevel=1",
    "-XX:CICompilerCount=1",
    "-XX:CompileThresholdScaling=4",
    "-XX:+UseSerialGC",
    "-XX:-UsePerfData",
]


def java_binary() -> str:
    """$JAVA_HOME's java, else the one on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    java = (java_home and shutil.which("java", path=f"{java_home}/bin")) or shutil.which("java")
    if java is None:
        raise HBaseError("java is not installed; HBase 2.6 needs JDK 17 (apt-get install openjdk-17-jdk-headless)")
    return java


def log4j2_properties(console: bool = False) -> str:
    """HBase's logging: to ${hbase.log.dir}/${hbase.log.file}, or to the console (a container's log)."""
    appender = (
        "appender.out.type = Console\n"
        if console
        else "appender.out.type = File\nappender.out.fileName = ${sys:hbase.log.dir}/${sys:hbase.log.file}\n"
    )
    return (
        f"status = warn\n{appender}appender.out.name = out\nappender.out.layout.type = PatternLayout\n"
        "appender.out.layout.pattern = %d{ISO8601} %-5p [%t] %c{2}: %m%n\nrootLogger = INFO, out\n"
        "logger.zookeeper.name = org.apache.zookeeper\nlogger.zookeeper.level = WARN\n"
        "logger.hadoop.name = org.apache.hadoop\nlogger.hadoop.level = WARN\n"
        "logger.hdfs.name = org.apache.hadoop.hdfs.server\nlogger.hdfs.level = INFO\n"  # NameNode, DataNode
        "logger.hbase.name = org.apache.hadoop.hbase\nlogger.hbase.level = INFO\n"
    )
