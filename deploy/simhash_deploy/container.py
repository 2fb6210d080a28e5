"""HBase in a container: the local launcher's HBase in the foreground, as the HBase image's entrypoint.

``python -m simhash_deploy.container run`` starts the same three JVMs as ``simhash-index hbase start``,
with the same site properties and JVM flags (site.py and jvm.py are the one source of both), except that the
Thrift gateways listen on 0.0.0.0 and the data lives in a volume.  It prints READY_LINE once a table round
trip through Thrift passes, stops everything on SIGTERM, and exits non-zero as soon as a JVM dies (the
container then stops, and its restart policy decides).  ``... check`` is the image's health check.

Settings, from the environment (defaults in brackets):
  SIMHASH_HBASE_DATA [/data]                  data, logs, configuration
  SIMHASH_THRIFT_IDLE_TIMEOUT_MS [60000]      the gateways close connections idle this long
  SIMHASH_HBASE_MASTER_HEAP_MB [1024]         the JVM running ZooKeeper, the master and the region server
  SIMHASH_HBASE_THRIFT_HEAP_MB [256]          each gateway
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from simhash_deploy.hbase_local import LocalHBase
from simhash_deploy.home import HBaseError
from simhash_deploy.processes import Ports

__all__ = ["READY_LINE", "configured", "main"]

READY_LINE = "simhash-index hbase: ready"
_SETTINGS = {  # variable -> default; every one an integer but the data directory
    "SIMHASH_THRIFT_IDLE_TIMEOUT_MS": 60_000,
    "SIMHASH_HBASE_MASTER_HEAP_MB": 1024,
    "SIMHASH_HBASE_THRIFT_HEAP_MB": 256,
}


def _setting(name: str) -> int:
    raw = os.environ.get(name, "")
    if not raw:
        return _SETTINGS[name]
    try:
        value = int(raw)
    except ValueError:
        raise HBaseError(f"{name} must be a whole number, got {raw!r}") from None
    if value <= 0:
        raise HBaseError(f"{name} must be positive, got {value}")
    return value


def configured() -> LocalHBase:
    """The HBase this container runs, as the environment configures it."""
    return LocalHBase(
        var_dir=Path(os.environ.get("SIMHASH_HBASE_DATA") or "/data"),
        ports=Ports(),
        master_heap_mb=_setting("SIMHASH_HBASE_MASTER_HEAP_MB"),
        thrift_heap_mb=_setting("SIMHASH_HBASE_THRIFT_HEAP_MB"),
        thrift_idle_timeout_ms=_setting("SIMHASH_THRIFT_IDLE_TIMEOUT_MS"),
        thrift_bind="0.0.0.0",  # inside the container; only the ports docker publishes reach it
    )


def _ready_marker(local: LocalHBase) -> Path:
    """Written once start() has seen a table round trip; the health check wants it, not just open ports
    (they open while the master still initialises, when creating a table fails)."""
    return local.var_dir / "ready"


def run() -> int:
    stopping = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.set())
    try:
        local = configured()
    except HBaseError as exc:
        print(f"simhash-index hbase: {exc}", file=sys.stderr, flush=True)
        return 2
    _ready_marker(local).unlink(missing_ok=True)  # left by a container killed before it could remove it
    try:
        local.start(timeout=600)
    except HBaseError as exc:
        print(f"simhash-index hbase: failed to start: {exc}", file=sys.stderr, flush=True)
        local.stop()
        return 1
    _ready_marker(local).write_text(f"{READY_LINE}\n")
    print(f"{READY_LINE} (Thrift1 :{local.ports.thrift}, Thrift2 :{local.ports.thrift2})", flush=True)
    status = 0
    while not stopping.wait(1.0):
        exited = local.exited()
        if exited:
            name, code = next(iter(exited.items()))
            print(f"simhash-index hbase: the {name} exited ({code}):\n{local.log_tail(name)}", file=sys.stderr)
            status = 1
            break
    print("simhash-index hbase: stopping", flush=True)
    _ready_marker(local).unlink(missing_ok=True)
    local.stop()
    return status


def check() -> int:
    """0 once run() has seen HBase answer a table round trip and its processes still listen, else 1."""
    try:
        local = configured()
        return 0 if _ready_marker(local).is_file() and local.is_running() else 1
    except HBaseError:
        return 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    commands = {"run": run, "check": check}
    if len(args) != 1 or args[0] not in commands:
        print(f"usage: python -m simhash_deploy.container {{{'|'.join(commands)}}}", file=sys.stderr)
        return 2
    return commands[args[0]]()


if __name__ == "__main__":
    sys.exit(main())
