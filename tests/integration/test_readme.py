"""README's examples run as written, against a real server on a real HBase."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _block(after: str, language: str) -> str:
    start = README.index(after)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(README, start)
    assert match, f"no ```{language} block after {after!r}"
    return match.group(1)


def test_python_example_prints_what_the_readme_says(server) -> None:
    code = _block("From Python", "python")
    env = {**os.environ, "SIMHASH_TARGET": f"127.0.0.1:{server.port}"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["True False [('article-1', 0)]", "True article-1"]


def _grpcurl() -> str | None:
    local = Path(__file__).resolve().parents[2] / "var" / "bin" / "grpcurl"
    return str(local) if local.is_file() else shutil.which("grpcurl")


def test_grpcurl_examples_run(server) -> None:
    grpcurl = _grpcurl()
    if grpcurl is None:
        pytest.skip("grpcurl is not installed (make tools installs it into var/bin)")
    lines = [line for line in _block("With grpcurl", "sh").splitlines() if line.startswith("grpcurl")]
    assert len(lines) == 4
    outputs = []
    for line in lines:
        args = line.replace("127.0.0.1:50051", f"127.0.0.1:{server.port}")
        result = subprocess.run(
            args.replace("grpcurl", grpcurl, 1), shell=True, capture_output=True, text=True, timeout=30
        )
        assert result.returncode == 0, (line, result.stderr)
        outputs.append(result.stdout)
    assert "simhash_index.v1.SimHashIndex" in outputs[0] and "grpc.health.v1.Health" in outputs[0]
    assert '"fingerprint_version": "simhash64/' in outputs[1] and '"features": 6' in outputs[1]
    assert outputs[2].startswith("{")  # a QueryResponse (this index has no hits for it)
    assert '"status": "SERVING"' in outputs[3]
