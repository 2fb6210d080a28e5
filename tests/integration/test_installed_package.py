"""The package runs outside the checkout: a wheel installed into a fresh venv applies the schema from an
unrelated directory (the Thrift2 IDL comes from the package, not from deploy/ or the working directory), and
runs the local HBase (its Maven assembly comes from the package too) beside the suite's, and stops it leaving
no process."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
import venv
from pathlib import Path

import pytest

from simhash_schema import DRAWER_REGIONS, index_tables

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv holding simhash-index[server], built as a wheel from this checkout."""
    base = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(base), str(ROOT)],
        check=True,
    )
    (wheel,) = base.glob("simhash_index-*.whl")
    env_dir = base / "venv"
    venv.create(env_dir, with_pip=True)
    # --no-compile: the tests run each module once, so compiling every dependency's bytecode first is CPU spent
    # for nothing while the other suites run beside this one.
    subprocess.run([env_dir / "bin" / "pip", "install", "-q", "--no-compile", f"{wheel}[server]"], check=True)
    return env_dir / "bin"


def test_an_installed_wheel_applies_the_schema_from_another_directory(
    installed: Path, hbase, drop, tmp_path: Path
) -> None:
    if hbase.thrift2_port is None:
        pytest.skip("HBASE_THRIFT2_PORT not given for the external HBase")
    prefix = f"wheel{uuid.uuid4().hex[:8]}"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ports = ["--hbase-host", hbase.host, "--thrift-port", str(hbase.thrift_port)]
    ports += ["--thrift2-port", str(hbase.thrift2_port), "--table-prefix", prefix]
    clean = {"PATH": str(installed), "HOME": str(tmp_path)}  # no PYTHONPATH, no HBASE_HOME: nothing of the checkout
    try:
        applied = subprocess.run(
            [installed / "simhash-index", "schema", "apply", *ports],  # the default regions
            cwd=elsewhere,
            env=clean,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert applied.returncode == 0, applied.stderr
        assert f"{prefix}_drawers: created" in applied.stdout
        shown = subprocess.run(
            [installed / "simhash-index", "schema", "show", *ports],
            cwd=elsewhere,
            env=clean,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert shown.returncode == 0, shown.stderr
        report = json.loads(shown.stdout)
        assert report[f"{prefix}_drawers"]["regions"] == DRAWER_REGIONS == 1
        location = subprocess.run(
            [installed / "python", "-c", "import simhash_schema.thrift2 as t; print(t.PACKAGED_IDL)"],
            cwd=elsewhere,
            env=clean,
            capture_output=True,
            text=True,
            check=True,
        )
        assert not location.stdout.strip().startswith(str(ROOT))  # the installed copy, not the checkout's
    finally:
        drop(index_tables(prefix))


@pytest.mark.slow(
    "builds and installs the wheel in a new venv, then Maven fetches HBase's jars and a real HBase starts"
)
def test_an_installed_wheel_runs_the_local_hbase_outside_the_checkout(installed: Path, tmp_path: Path) -> None:
    """`simhash-index hbase start` from the wheel alone: its Maven assembly is seeded into a home under the
    user's data directory, Maven fetches the jars there, and a real HBase answers on the ports asked for."""
    from simhash_deploy import LocalHBase, Ports

    tools = [shutil.which(name) for name in ("java", "mvn")]
    if not all(tools):
        pytest.skip("java and mvn are needed (make deps)")
    ports = Ports.free()
    var = tmp_path / "var"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {
        "PATH": ":".join([str(installed), *(str(Path(t).parent) for t in tools if t)]),  # type: ignore[arg-type]
        "HOME": str(tmp_path),  # the data directory falls under it: ~/.local/share/simhash-index
        "MAVEN_OPTS": f"-Dmaven.repo.local={Path.home() / '.m2' / 'repository'}",  # the jars make jars cached
        **({"JAVA_HOME": os.environ["JAVA_HOME"]} if "JAVA_HOME" in os.environ else {}),
    }
    where = ["--var-dir", str(var)]
    start = [*where, "--zk-port", str(ports.zookeeper), "--thrift-port", str(ports.thrift)]
    start += ["--thrift2-port", str(ports.thrift2), "--master-heap-mb", "768"]

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [str(installed / "simhash-index"), "hbase", *args]
        return subprocess.run(command, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=600)

    # This HBase runs beside the suite's (a second instance on ports of its own); the launcher's object for the
    # same var dir sees its processes.
    seen = LocalHBase(home=tmp_path / ".local" / "share" / "simhash-index", var_dir=var)
    try:
        started = run("start", *start)
        assert started.returncode == 0, started.stdout + started.stderr
        home = tmp_path / ".local" / "share" / "simhash-index" / "deploy" / "hbase-local"
        assert (home / "pom.xml").read_bytes() == (ROOT / "deploy" / "hbase-local" / "pom.xml").read_bytes()
        assert (home / "target" / "lib" / ".complete").is_file()
        status = run("status", *where)
        assert status.returncode == 0, status.stdout + status.stderr
        assert str(ports.thrift) in status.stdout and str(ports.thrift2) in status.stdout
        assert len(list(seen.java_pids())) == 3
    finally:
        stopped = run("stop", *where)
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.strip() == "stopped: thrift2, thrift, master"  # the gateways first
    assert list(seen.java_pids()) == []
    # A pid file that names a dead process is stale: status drops it and reports nothing running.
    pid_file = var / "run" / "thrift.pid"
    pid_file.write_text("999999\n")
    assert run("status", *where).returncode == 1  # nothing left running
    assert not pid_file.exists()
    assert run("stop", *where).stdout.strip() == "HBase was not running"
