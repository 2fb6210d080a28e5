"""The launcher's processes: their ports, what each JVM is, and how a live one of ours is told apart."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from simhash_deploy.home import HBaseError

__all__ = ["Ports", "Process", "alive", "marked_pids", "port_open", "terminate"]


@dataclass(frozen=True)
class Ports:
    zookeeper: int = 2181
    thrift: int = 9090
    thrift2: int = 9091

    @classmethod
    def free(cls) -> Ports:
        """Three ports the kernel says are free now (for tests beside a running `make run`)."""
        socks = [socket.socket() for _ in range(3)]
        try:
            for s in socks:
                s.bind(("127.0.0.1", 0))
            zk, t1, t2 = (s.getsockname()[1] for s in socks)
        finally:
            for s in socks:
                s.close()
        return cls(zookeeper=zk, thrift=t1, thrift2=t2)


@dataclass(frozen=True)
class Process:
    """One of the three JVMs: its name, main class, arguments, heap and the port that proves it up."""

    name: str
    main_class: str
    args: tuple[str, ...]
    heap_mb: int
    port: int


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def alive(pid: int, marker: str) -> bool:
    """True if ``pid`` runs and its command line holds ``marker`` (a reused pid is not ours)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        status = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()
    except OSError:
        return False
    # cmdline is NUL-separated: match whole arguments, so /var/hbase does not match /var/hbase2.
    return bool(status) and status[0] != "Z" and f"\0{marker}\0".encode() in b"\0" + cmdline


def terminate(pid: int, marker: str, name: str, timeout: float) -> None:
    """SIGTERM the process group of ``pid``, SIGKILL it after ``timeout``; HBaseError if it survives."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not alive(pid, marker):
                return
            time.sleep(0.2)
    raise HBaseError(f"the {name} (pid {pid}) survived SIGKILL")


def marked_pids(marker: str) -> Iterator[int]:
    """Every live process whose command line holds the argument ``marker``."""
    wanted = f"\0{marker}\0".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if wanted in b"\0" + (entry / "cmdline").read_bytes():
                    yield int(entry.name)
            except OSError:
                continue
