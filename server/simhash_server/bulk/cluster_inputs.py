"""Inputs that hfile-load does not read itself: URIs of a Hadoop FileSystem (hdfs://, file://, s3a://...,
globs and directories too), read where they live by the first job's map tasks, and what those tasks need."""

from __future__ import annotations

import json
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from simhash_server.bulk.checkpoint import BulkLoadError

__all__ = ["ClusterInputs", "default_rejects_uri", "is_uri", "task_env_needs"]

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_GLOB = re.compile(r"[*?\[{]")


def is_uri(path: str) -> bool:
    """Whether an input names a Hadoop FileSystem URI (hdfs://..., file:///..., s3a://...), not a local path."""
    return bool(_SCHEME.match(path))


def default_rejects_uri(first: str) -> str:
    """Where a URI load's rejects go unless told: beside the first input, its glob part cut off."""
    head = first.rstrip("/")
    glob = _GLOB.search(head)
    if glob:
        head = head[: head.rfind("/", 0, glob.start())]
    return head + ".rejects"


@dataclass(frozen=True)
class ClusterInputs:
    """Inputs read where they live, by the job's map tasks: URIs (a glob, or a directory's files at any
    depth), each file one task, in the order given and sorted within each."""

    uris: tuple[str, ...]
    rejects: str  # a directory on the cluster's filesystem: part-m-NNNNN files of input, line, reason, line
    fmt: str | None = None  # None: by each file's name
    compression: str | None = None
    fingerprint_format: str = "auto"
    python: str = sys.executable  # the tasks' interpreter: this one for the local runner, python3 on YARN
    env: Path | None = None  # the tasks' environment, a PEX (YARN): None runs -m in ``python``'s own

    def task_args(self, version: str, retention_seconds: int | None) -> list[str]:
        args = ["--fingerprint-version", version, "--fingerprint-format", self.fingerprint_format]
        if self.fmt:
            args += ["--format", self.fmt]
        if self.compression:
            args += ["--compression", self.compression]
        if retention_seconds is not None:
            args += ["--retention-seconds", str(retention_seconds)]
        return args


def task_env_needs(pex: Path) -> str:
    """What a NodeManager needs to run the tasks' PEX, from its PEX-INFO: BulkLoadError if it is no PEX."""
    try:
        with zipfile.ZipFile(pex) as archive:
            info = json.loads(archive.read("PEX-INFO"))
    except (OSError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise BulkLoadError(f"{pex} is not a PEX ({exc}): build the tasks' environment with `make pex`") from exc
    tags = sorted({name.rsplit("-", 3)[-2] for name in info.get("distributions", {}) if name.count("-") >= 4})
    pythons = [t for t in tags if t.startswith("cp3")]
    minor = f"{pythons[0][2]}.{pythons[0][3:]}" if pythons else "3"
    return f"python{minor} on the PATH of every NodeManager (the PEX's wheels: {', '.join(tags) or 'pure Python'})"
