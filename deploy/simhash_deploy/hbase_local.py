"""A real, standalone Apache HBase on loopback, assembled from Maven Central jars.

One JVM runs ZooKeeper, the master and a region server (``HMaster start`` with
``hbase.cluster.distributed=false``); two more run the Thrift1 gateway (what
happybase speaks) and the Thrift2 gateway (split keys, column family settings,
one-call scans).  Everything lives under one ``var`` directory: configuration,
data, logs, pid files and a ``state.json`` naming the ports.  Its parts: home.py
(where the jars are), site.py (hbase-site.xml), jvm.py (flags), processes.py,
admin.py (flushes and compactions through HBase's Admin API).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from pathlib import Path

from simhash_deploy import admin
from simhash_deploy.home import ASSEMBLY, HBaseError, project_root
from simhash_deploy.jvm import GARBAGE_COLLECTORS, JDK17_FLAGS, JIT_FLAGS, java_binary, log4j2_properties
from simhash_deploy.processes import Ports, Process, alive, marked_pids, port_open, terminate
from simhash_deploy.site import COMPACTION_BOUNDS, COMPACTION_MIB_PER_S, site_xml, standalone_properties

__all__ = ["MASTER_CLASS", "THRIFT1_CLASS", "THRIFT2_CLASS", "LocalHBase"]

MASTER_CLASS = "org.apache.hadoop.hbase.master.HMaster"
THRIFT1_CLASS = "org.apache.hadoop.hbase.thrift.ThriftServer"
THRIFT2_CLASS = "org.apache.hadoop.hbase.thrift2.ThriftServer"
PROBE_TABLE = "simhash_launcher_probe"


class LocalHBase:
    """Fetch, configure, start, stop and report on a standalone HBase under ``var_dir``."""

    def __init__(
        self,
        home: Path | None = None,
        var_dir: Path | None = None,
        ports: Ports | None = None,
        master_heap_mb: int = 2048,
        thrift_heap_mb: int = 512,
        thrift_idle_timeout_ms: int = 60_000,
        thrift_bind: str = "127.0.0.1",
        gc: str = "G1",
        offheap_cache_mb: int = 0,
        compaction_mib_per_s: int | None = COMPACTION_MIB_PER_S,
        site: Mapping[str, str] | None = None,
    ) -> None:
        if gc not in GARBAGE_COLLECTORS:
            raise ValueError(f"unknown garbage collector {gc!r}; choose one of {', '.join(GARBAGE_COLLECTORS)}")
        if offheap_cache_mb < 0:
            raise ValueError(f"offheap_cache_mb must be >= 0, got {offheap_cache_mb}")
        if compaction_mib_per_s is not None and compaction_mib_per_s <= 0:
            raise ValueError(f"compaction_mib_per_s must be > 0 (None: HBase's limit), got {compaction_mib_per_s}")
        self.gc = gc
        self.offheap_cache_mb = offheap_cache_mb  # 0: data blocks cached on the heap (HBase's default)
        # Background compactions' limit; a forced major compaction (flush(compact=True)) runs without it.
        self.compaction_mib_per_s = compaction_mib_per_s
        # hbase-site.xml properties set over the launcher's own (a benchmark's alternative, an operator's tuning)
        self.site = dict(site or {})
        self.home = (home or project_root()).resolve()
        self.var_dir = (var_dir or self.home / "var" / "hbase").resolve()
        self.ports = ports or self._saved_ports() or Ports()
        self.master_heap_mb = master_heap_mb
        self.thrift_heap_mb = thrift_heap_mb
        self.thrift_idle_timeout_ms = thrift_idle_timeout_ms
        self.thrift_bind = thrift_bind  # 0.0.0.0 in a container (container.py); loopback everywhere else
        self._children: dict[str, subprocess.Popen[bytes]] = {}

    # -- layout ---------------------------------------------------------------
    @property
    def pom(self) -> Path:
        return self.home / ASSEMBLY / "pom.xml"

    @property
    def lib_dir(self) -> Path:
        return self.home / ASSEMBLY / "target" / "lib"

    @property
    def conf_dir(self) -> Path:
        return self.var_dir / "conf"

    @property
    def log_dir(self) -> Path:
        return self.var_dir / "logs"

    @property
    def run_dir(self) -> Path:
        return self.var_dir / "run"

    @property
    def state_file(self) -> Path:
        return self.var_dir / "state.json"

    def processes(self) -> list[Process]:
        p = self.ports
        thrift_common = ("-b", self.thrift_bind, "--infoport", "-1")
        return [
            Process("master", MASTER_CLASS, ("start",), self.master_heap_mb, p.zookeeper),
            Process(
                "thrift",
                THRIFT1_CLASS,
                (*thrift_common, "-p", str(p.thrift), "-threadpool", "start"),
                self.thrift_heap_mb,
                p.thrift,
            ),
            Process(
                "thrift2",
                THRIFT2_CLASS,
                (*thrift_common, "-p", str(p.thrift2), "-threadpool", "start"),
                self.thrift_heap_mb,
                p.thrift2,
            ),
        ]

    # -- jars -----------------------------------------------------------------
    def fetch_jars(self, quiet: bool = True) -> bool:
        """Copy HBase's runtime classpath from Maven Central into ``lib_dir`` once; True if it downloaded."""
        marker = self.lib_dir / ".complete"
        if marker.is_file():
            return False
        mvn = shutil.which("mvn")
        if mvn is None:
            raise HBaseError("Maven (mvn) is not installed; `apt-get install maven` or run `make deps`")
        cmd = [mvn, "-B", "-f", str(self.pom), "package"]
        if quiet:
            cmd.insert(2, "-q")
        result = subprocess.run(cmd, capture_output=quiet, text=True)
        if result.returncode != 0:
            tail = (result.stdout or "")[-2000:] + (result.stderr or "")[-2000:]
            raise HBaseError(f"mvn failed to fetch the HBase jars (exit {result.returncode}):\n{tail}")
        marker.write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
        return True

    def hbase_version(self) -> str:
        """The HBase release on the classpath, read from the hbase-server jar's name."""
        jars = sorted(self.lib_dir.glob("hbase-server-*.jar"))
        return f"Apache HBase {jars[0].stem.removeprefix('hbase-server-')}" if jars else "Apache HBase (not fetched)"

    # -- configuration --------------------------------------------------------
    def site_properties(self) -> dict[str, str]:
        props = standalone_properties(
            self.var_dir,
            self.ports.zookeeper,
            self.thrift_bind,
            self.thrift_idle_timeout_ms,
            self.offheap_cache_mb,
            self.compaction_mib_per_s,
        )
        return {**props, **self.site}

    def write_config(self, overrides: Mapping[str, str] | None = None) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        site = site_xml({**self.site_properties(), **(overrides or {})}, "written by `simhash-index hbase start`")
        (self.conf_dir / "hbase-site.xml").write_text(site)
        (self.conf_dir / "log4j2.properties").write_text(log4j2_properties())

    def java_command(self, proc: Process) -> list[str]:
        return [
            java_binary(),
            f"-Xms{proc.heap_mb}m",
            f"-Xmx{proc.heap_mb}m",
            GARBAGE_COLLECTORS[self.gc],
            *JIT_FLAGS,
            *self._direct_memory(proc),
            # Every pause, kept small: what an operator reads first when latency jumps.
            f"-Xlog:gc,safepoint:file={self.gc_log(proc.name)}:time,uptime:filecount=3,filesize=10M",
            *JDK17_FLAGS,
            "-Dzookeeper.admin.enableServer=false",
            f"-Dhbase.log.dir={self.log_dir}",
            f"-Dhbase.log.file={proc.name}.log",
            f"-Dlog4j2.configurationFile=file:{self.conf_dir / 'log4j2.properties'}",
            f"-Dsimhash.var={self.var_dir}",  # marks the process as ours (see _alive)
            "-cp",
            f"{self.conf_dir}:{self.lib_dir}/*",
            proc.main_class,
            *proc.args,
        ]

    def _direct_memory(self, proc: Process) -> list[str]:
        """The region server's direct memory: the BucketCache, plus room for its RPC buffers (netty's)."""
        if proc.name != "master" or not self.offheap_cache_mb:
            return []
        return [f"-XX:MaxDirectMemorySize={self.offheap_cache_mb + 512}m"]

    # -- state ----------------------------------------------------------------
    def _saved_ports(self) -> Ports | None:
        try:
            return Ports(**json.loads(self.state_file.read_text())["ports"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def gc_log(self, name: str) -> Path:
        """The JVM's log of garbage collections and safepoints (the pauses of every thread)."""
        return self.log_dir / f"{name}-gc.log"

    def _pid_file(self, proc: Process) -> Path:
        return self.run_dir / f"{proc.name}.pid"

    def _pid(self, proc: Process) -> int | None:
        """The pid of a live process of ours; a stale pid file is removed."""
        pid_file = self._pid_file(proc)
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            return None
        if alive(pid, f"-Dsimhash.var={self.var_dir}") and alive(pid, proc.main_class):
            return pid
        pid_file.unlink(missing_ok=True)
        return None

    def status(self) -> dict[str, dict[str, object]]:
        report: dict[str, dict[str, object]] = {}
        for proc in self.processes():
            pid = self._pid(proc)
            report[proc.name] = {
                "pid": pid,
                "running": pid is not None,
                "port": proc.port,
                "listening": pid is not None and port_open(proc.port),
                "log": str(self.log_dir / f"{proc.name}.log"),
            }
        return report

    def is_running(self) -> bool:
        return all(entry["listening"] for entry in self.status().values())

    # -- lifecycle ------------------------------------------------------------
    def start(self, timeout: float = 240.0) -> bool:
        """Start whatever is not running and wait until Thrift lists tables; False if all already ran."""
        if self.is_running() and self._tables_answer():
            return False
        running = [proc.name for proc in self.processes() if self._pid(proc) is not None]
        saved = self._saved_ports()
        if running and saved is not None and saved != self.ports:  # else: a second HBase on the same files
            raise HBaseError(
                f"HBase already runs under {self.var_dir} ({', '.join(running)}) on ports {saved}, not on the "
                f"{self.ports} asked for: use its ports, or stop it first (simhash-index hbase stop --var-dir "
                f"{self.var_dir})"
            )
        self.fetch_jars()
        self.write_config()
        for directory in (self.log_dir, self.run_dir):
            directory.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps({"ports": asdict(self.ports)}, indent=2) + "\n")
        for proc in self.processes():
            if self._pid(proc) is None:
                self._launch(proc)
        self._wait_ready(timeout)
        return True

    def _launch(self, proc: Process) -> None:
        if port_open(proc.port):
            raise HBaseError(
                f"port {proc.port} for the {proc.name} is already taken by another program; "
                "choose other ports (see `simhash-index hbase start --help`)"
            )
        out = open(self.log_dir / f"{proc.name}.out", "ab")  # noqa: SIM115 - handed to the child
        with out:
            child = subprocess.Popen(
                self.java_command(proc),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.var_dir,
                start_new_session=True,  # survives the launcher; stop() signals the whole group
            )
        self._children[proc.name] = child
        self._pid_file(proc).write_text(f"{child.pid}\n")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # Judge by the children we hold: the java launcher may re-exec, so /proc/PID/cmdline can
            # briefly read empty right after the start.
            for name, child in self._children.items():
                if child.poll() is not None:
                    raise HBaseError(
                        f"the {name} exited with status {child.returncode} during start-up:\n{self.log_tail(name)}"
                    )
            if all(port_open(p.port) for p in self.processes()) and self._tables_answer():
                # Listing tables succeeds while the master still initialises; a write proves the region server.
                self._probe_round_trip(timeout_ms=int(max(deadline - time.monotonic(), 5) * 1000))
                return
            time.sleep(1.0)
        raise HBaseError(f"HBase did not answer through Thrift within {timeout:.0f} s:\n{self.log_tail('master')}")

    def _tables_answer(self) -> bool:
        import happybase  # the server extra; imported late so `hbase status` works without it

        try:
            conn = happybase.Connection("127.0.0.1", self.ports.thrift, timeout=5000, autoconnect=True)
            try:
                conn.tables()
            finally:
                conn.close()
        except Exception:  # noqa: BLE001 - any failure means "not ready yet"
            return False
        return True

    def _probe_round_trip(self, timeout_ms: int) -> None:
        import happybase

        name = PROBE_TABLE.encode()
        conn = happybase.Connection("127.0.0.1", self.ports.thrift, timeout=timeout_ms)
        try:
            if name not in conn.tables():
                conn.create_table(PROBE_TABLE, {"f": {"max_versions": 1}})
            table = conn.table(PROBE_TABLE)
            table.put(b"probe", {b"f:q": b"1"})
            if table.row(b"probe") != {b"f:q": b"1"}:
                raise HBaseError("the start-up probe row did not read back")
            conn.delete_table(PROBE_TABLE, disable=True)
        except HBaseError:
            raise
        except Exception as exc:
            raise HBaseError(f"the start-up probe (create, put, get, drop) failed: {exc!r}") from exc
        finally:
            conn.close()

    def stop(self, timeout: float = 60.0) -> list[str]:
        """Stop the gateways, then the master; SIGKILL what outlives ``timeout``.  Returns what was stopped."""
        stopped = []
        for proc in reversed(self.processes()):
            pid = self._pid(proc)
            if pid is None:
                continue
            self._terminate(pid, proc, timeout)
            self._pid_file(proc).unlink(missing_ok=True)
            stopped.append(proc.name)
        return stopped

    def flush(self, tables: list[str], timeout: float = 300.0, compact: bool = False) -> None:
        """Flush the tables' memstores into store files (HBase's Admin.flush, through jshell).

        With ``compact``, major-compact them too, returning once each region holds one store file: at full
        speed, the compaction throughput limit lifted meanwhile (the region servers reread hbase-site.xml)."""
        unthrottled = compact and bool(self.compaction_mib_per_s)
        if unthrottled:
            self.write_config(dict.fromkeys(COMPACTION_BOUNDS, str(1 << 50)))  # HBase logs it as unlimited
        try:
            self._admin(tables, timeout, compact=compact, reload=unthrottled)
        finally:
            if unthrottled:
                self.reload_config(timeout=timeout)
        if compact:
            self._wait_discharged(tables, timeout)

    def reload_config(self, overrides: Mapping[str, str] | None = None, timeout: float = 300.0) -> None:
        """Rewrite hbase-site.xml (with ``overrides``) and have the running servers reread it
        (Admin.updateConfiguration): the settings HBase takes online, such as the compaction throughput bounds."""
        self.write_config(overrides)
        self._admin([], timeout, reload=True)

    def _admin(self, tables: list[str], timeout: float, compact: bool = False, reload: bool = False) -> None:
        admin.run_script(self.home, self.conf_dir, self.lib_dir, self.log_dir, tables, timeout, compact, reload)

    def _wait_discharged(self, tables: list[str], timeout: float) -> None:
        admin.wait_discharged(self.var_dir, tables, timeout)

    def table_bytes(self, table: str) -> int:
        """Bytes of the table's store files on disk (after a flush)."""
        return admin.table_bytes(self.var_dir, table)

    def stop_process(self, name: str, timeout: float = 60.0) -> bool:
        """Stop one process (say a Thrift gateway, to rehearse an outage); start() brings it back."""
        proc = next((p for p in self.processes() if p.name == name), None)
        if proc is None:
            raise ValueError(f"no process {name!r}; choose one of {[p.name for p in self.processes()]}")
        pid = self._pid(proc)
        if pid is None:
            return False
        self._terminate(pid, proc, timeout)
        self._pid_file(proc).unlink(missing_ok=True)
        return True

    def _terminate(self, pid: int, proc: Process, timeout: float) -> None:
        terminate(pid, f"-Dsimhash.var={self.var_dir}", proc.name, timeout)

    def exited(self) -> dict[str, int]:
        """The processes this object started that have since exited, with their exit status."""
        return {name: child.returncode for name, child in self._children.items() if child.poll() is not None}

    def log_tail(self, name: str, lines: int = 30) -> str:
        chunks = []
        for suffix in (".out", ".log"):
            path = self.log_dir / f"{name}{suffix}"
            if path.is_file():
                chunks.extend(path.read_text(errors="replace").splitlines()[-lines:])
        return "\n".join(chunks[-lines:]) or "(no log written)"

    def java_pids(self) -> Iterator[int]:
        """Every live process started for this ``var_dir`` (used to prove stop() left nothing behind)."""
        return marked_pids(f"-Dsimhash.var={self.var_dir}")
