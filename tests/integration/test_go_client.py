"""The Go example (client/go/example) built from the committed stubs and run unmodified against a real server
on a real HBase: a Go service's index, dedup, verified query, and the BadRequest details of a refused call."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

GO_MODULE = Path(__file__).resolve().parents[2] / "client" / "go"


@pytest.fixture(scope="module")
def go_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip("go is not installed (the Go example needs it)")
    binary = tmp_path_factory.mktemp("go") / "example"
    built = subprocess.run(
        [go, "build", "-o", str(binary), "./example"], cwd=GO_MODULE, capture_output=True, text=True, timeout=600
    )
    assert built.returncode == 0, built.stderr
    return binary


def test_the_go_example_runs_against_the_server(go_example: Path, server, ids: str) -> None:
    done = subprocess.run(
        [str(go_example), "-target", f"127.0.0.1:{server.port}", "-id-prefix", ids],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"indexed {ids}1 ")
    assert lines[1].startswith(f"duplicate of {ids}1 (similarity ")
    assert lines[2] == f"query found {ids}1 at distance 0"
    assert lines[3] == "refused: max_distance, limit"
    assert lines[4] == "deleted 1"
