"""Where the launcher finds HBase's Maven assembly (deploy/hbase-local: pom.xml, flush.jsh, target/lib).

In a checkout, the checkout; with $SIMHASH_HOME, there (the images set it).  Installed from a wheel, with
neither, a home of its own under the user's data directory, seeded from the copies the wheel carries: Maven
then fetches the jars there on the first `simhash-index hbase start`.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["ASSEMBLY", "HBaseError", "installed_home", "project_root"]

ASSEMBLY = Path("deploy") / "hbase-local"  # under a home: pom.xml, flush.jsh, and Maven's target/
SEEDED = ("pom.xml", "flush.jsh")
WHEEL_COPY = Path(__file__).resolve().parent / "assembly"  # in a wheel only (pyproject.toml's package data)


class HBaseError(RuntimeError):
    """The local HBase could not be fetched, started, or stopped."""


def project_root() -> Path:
    """The home holding ``deploy/hbase-local/pom.xml``: $SIMHASH_HOME, else the cwd or a parent, else the
    checkout this module lies in, else (installed from a wheel) ``installed_home()``."""
    env = os.environ.get("SIMHASH_HOME")
    candidates = [Path(env)] if env else [Path.cwd(), *Path.cwd().parents]
    candidates.append(Path(__file__).resolve().parents[2])  # editable install
    for path in candidates:
        if (path / ASSEMBLY / "pom.xml").is_file():
            return path.resolve()
    if not env and WHEEL_COPY.is_dir():
        return installed_home()
    raise HBaseError(
        f"cannot find {ASSEMBLY / 'pom.xml'}: run from the simhash-index checkout, or set SIMHASH_HOME to a "
        "directory holding it"
    )


def installed_home(source: Path = WHEEL_COPY, data_home: Path | None = None) -> Path:
    """``$XDG_DATA_HOME/simhash-index`` (``~/.local/share``), its assembly files refreshed from ``source``."""
    base = data_home or Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    home = base / "simhash-index"
    target = home / ASSEMBLY
    target.mkdir(parents=True, exist_ok=True)
    for name in SEEDED:
        given, kept = source / name, target / name
        if not given.is_file():
            raise HBaseError(f"the installed package lacks {given}: reinstall simhash-index[server]")
        if not kept.is_file() or kept.read_bytes() != given.read_bytes():
            shutil.copyfile(given, kept)  # a new release's pom names new jars: Maven fetches them again
            (target / "target" / "lib" / ".complete").unlink(missing_ok=True)
    return home
