"""The Java example (client/java/example) built with Maven, its stubs generated from proto/ by protoc and
grpc-java's plugin from Maven Central, and run unmodified against a real server on a real HBase: a Java
service's index, dedup, verified query, a batch with a refused document, and the BadRequest details of a
refused call read with StatusProto."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

JAVA_BUILD = Path(__file__).resolve().parents[2] / "client" / "java"


@pytest.fixture(scope="module")
def java_example() -> Path:
    mvn, java = shutil.which("mvn"), shutil.which("java")
    if mvn is None or java is None:
        pytest.skip("mvn and java are not installed (the Java example needs them: make deps)")
    # Built here, not taken from an earlier build: a proto change that breaks the Java stubs fails this test.
    built = subprocess.run(
        [mvn, "-B", "-q", "-f", str(JAVA_BUILD / "pom.xml"), "package"], capture_output=True, text=True, timeout=900
    )
    assert built.returncode == 0, built.stdout[-5000:] + built.stderr[-5000:]
    return JAVA_BUILD / "example" / "target" / "simhash-index-example.jar"


def test_the_java_example_runs_against_the_server(java_example: Path, server, ids: str) -> None:
    done = subprocess.run(
        ["java", "-jar", str(java_example), f"127.0.0.1:{server.port}", ids],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"indexed {ids}1 ")
    assert lines[1].startswith(f"duplicate of {ids}1 (similarity ")
    assert lines[2] == f"query found {ids}1 at distance 0"
    assert lines[3] == "batch indexed 1, rejected 1: documents[1].text"
    assert lines[4] == "refused: max_distance, limit"
    assert lines[5] == "deleted 2"
