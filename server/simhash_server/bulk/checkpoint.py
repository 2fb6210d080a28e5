"""Bulk load's durable state: the checkpoint file (how far the input is written) and the lock that keeps one
load per checkpoint.

The checkpoint is replaced atomically and fsynced, with its directory: a crash leaves the old one or the new
one, never a torn file.  Its ``identity`` (inputs with path, size and mtime; table prefix; formats) ties it to
one load, and a resume onto anything else is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CHECKPOINT_VERSION", "BulkLoadError", "Position", "lock", "read_checkpoint", "write_checkpoint"]

CHECKPOINT_VERSION = 1


class BulkLoadError(RuntimeError):
    """The load cannot go on; the checkpoint holds what is durably written."""


@dataclass
class Position:
    source: int = 0  # index into the inputs
    offset: int = 0  # decompressed bytes of that input consumed
    line: int = 1  # next line (or binary record) number


def read_checkpoint(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise BulkLoadError(f"checkpoint {path} is unreadable: {exc}") from exc
    if data.get("version") != CHECKPOINT_VERSION:
        raise BulkLoadError(f"checkpoint {path} has version {data.get('version')}, expected {CHECKPOINT_VERSION}")
    return data


def write_checkpoint(path: Path, data: dict[str, Any]) -> None:
    """Replace the checkpoint atomically and durably: a crash leaves the old one or the new one."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def lock(path: Path, shared: bool, timeout: float) -> int:
    """A flock on ``path``, waited for up to ``timeout`` seconds; the fd holds it until closed."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise BulkLoadError(
                    f"{path} is locked: another load, or the workers of a killed one, still runs on this checkpoint"
                ) from None
            time.sleep(0.2)
