"""Flushes, major compactions and configuration reloads of the launcher's HBase, through HBase's own Admin
API (flush.jsh, run by jshell on the assembly's class path), and the table sizes they leave on disk."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from simhash_deploy.home import ASSEMBLY, HBaseError

__all__ = ["family_dirs", "run_script", "table_bytes", "wait_discharged"]


def run_script(
    home: Path,
    conf_dir: Path,
    lib_dir: Path,
    log_dir: Path,
    tables: list[str],
    timeout: float,
    compact: bool = False,
    reload: bool = False,
) -> None:
    """flush.jsh: reread hbase-site.xml (``reload``), then flush, and with ``compact`` major-compact, ``tables``."""
    jshell = shutil.which("jshell")
    if jshell is None:
        raise HBaseError("jshell (JDK 17) is needed to flush tables")
    script = home / ASSEMBLY / "flush.jsh"
    cmd = [
        jshell,
        "-R-Dtables=" + ",".join(tables),
        f"-R-Dcompact={str(compact).lower()}",
        f"-R-Dreload={str(reload).lower()}",
        # the log4j2 configuration names its file by these: without them it writes to ./${sys:...}
        f"-R-Dhbase.log.dir={log_dir}",
        "-R-Dhbase.log.file=flush.log",
        "--class-path",
        f"{conf_dir}:{lib_dir}/*",
        str(script),
    ]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    done = "compacted " if compact else "flushed "
    finished = [line for line in result.stdout.splitlines() if line.startswith(done)]
    if result.returncode != 0 or len(finished) != len(tables):
        raise HBaseError(f"flush of {tables} failed:\n{result.stdout[-2000:]}{result.stderr[-2000:]}")


def wait_discharged(var_dir: Path, tables: list[str], timeout: float) -> None:
    """Wait until the files a major compaction replaced are gone from the regions' directories.

    HBase archives them when its discharger next runs (every 10 s here, site.py); until then table_bytes
    would count the table about twice."""
    deadline = time.monotonic() + timeout
    while True:
        crowded = [t for t in tables for family in family_dirs(var_dir, t) if sum(1 for _ in family.iterdir()) > 1]
        if not crowded:
            return
        if time.monotonic() > deadline:
            raise HBaseError(f"compacted-away store files of {crowded} were not archived within {timeout:.0f} s")
        time.sleep(2)


def family_dirs(var_dir: Path, table: str) -> list[Path]:
    ns, _, name = table.rpartition(":")
    base = var_dir / "data" / "data" / (ns or "default") / name
    return [p for p in base.glob("*/*") if p.is_dir() and not p.name.startswith(".") and p.name != "recovered.edits"]


def table_bytes(var_dir: Path, table: str) -> int:
    """Bytes of the table's store files on disk (after a flush)."""
    ns, _, name = table.rpartition(":")
    base = var_dir / "data" / "data" / (ns or "default") / name
    return sum(
        p.stat().st_size
        for p in base.glob("*/*/*")
        if p.is_file() and not p.parent.name.startswith(".") and p.parent.name != "recovered.edits"
    )
