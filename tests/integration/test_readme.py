"""The examples of README and docs/security.md run as written, against a real server on a real HBase."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _block(after: str, language: str, document: str = "README.md") -> str:
    text = (ROOT / document).read_text(encoding="utf-8")
    start = text.index(after)
    match = re.compile(rf"```{language}\n(.*?)```", re.S).search(text, start)
    assert match, f"no ```{language} block after {after!r}"
    return match.group(1)


def test_python_example_prints_what_the_readme_says(server) -> None:
    code = _block("From Python", "python")
    env = {**os.environ, "SIMHASH_TARGET": f"127.0.0.1:{server.port}"}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "True False [('article-1', 0)]",
        "True article-1",
        "[('article-1', True)]",
        "[False, True, False, 'documents[3].doc_id'] article-4",
        "True ['archive-1', 'article-6']",
    ]


def test_shell_examples_run_as_written(server, tmp_path: Path) -> None:
    """README's command-line block, line by line, in a directory holding the files it names."""
    lines = [line.split("  #")[0].strip() for line in _block("From the shell", "sh").splitlines()]
    assert len(lines) == 6 and all(line.startswith("simhash-index ") for line in lines)
    article = "近似重复检测把一篇文章变成六十四位的指纹，再在索引里找汉明距离不超过三的指纹。" * 8
    (tmp_path / "article.txt").write_text(article, encoding="utf-8")
    (tmp_path / "a.txt").write_text(article, encoding="utf-8")
    cli = str(Path(sys.executable).with_name("simhash-index"))
    env = {**os.environ, "SIMHASH_TARGET": f"127.0.0.1:{server.port}"}
    outputs = []
    for line in lines:
        result = subprocess.run(
            line.replace("simhash-index", cli), shell=True, cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, (line, result.stderr)
        outputs.append(result.stdout)
    assert outputs[0].startswith('{"doc_id": "doc-1", "simhash": "')
    assert '"doc_id": "doc-1"' in outputs[3] and '"similarity"' in outputs[3]  # the verified query finds it
    assert '"doc_id": "doc-1"' in outputs[4]  # stored just now: within any window
    assert '"documents"' in outputs[5]  # get, delete and stats, the last printing what the index holds


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
    # v3: 近似 / 重复 / 检测 are three tokens, one word 3-shingle
    assert '"fingerprint_version": "minhash64/' in outputs[1] and '"features": 1' in outputs[1]
    assert outputs[2].startswith("{")  # a QueryResponse (this index has no hits for it)
    assert '"status": "SERVING"' in outputs[3]


def test_security_example_serves_tls_with_tokens(index, tmp_path: Path) -> None:
    """The Security section as written: openssl makes the certificate and tokens, serve uses them, the
    Python example calls with the write token."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    lines = _block("# Security", "sh", "docs/security.md").strip().splitlines()
    for line in lines[:2]:
        subprocess.run(line, shell=True, cwd=tmp_path, check=True, capture_output=True, timeout=60)
    from simhash_deploy import Ports

    port = Ports.free().thrift
    serve = lines[2].replace("simhash-index", str(Path(sys.executable).with_name("simhash-index")), 1)
    serve = serve.replace("0.0.0.0:50051", f"0.0.0.0:{port}") + " --metrics-address ''"
    env = {
        **os.environ,
        "SIMHASH_HBASE_THRIFT_PORT": str(index.config.thrift_port),
        "SIMHASH_HBASE_THRIFT2_PORT": str(index.config.thrift2_port),
        "SIMHASH_TABLE_PREFIX": index.config.table_prefix,
    }
    proc = subprocess.Popen(serve, shell=True, cwd=tmp_path, env=env, start_new_session=True)
    try:
        write_token = (tmp_path / "tokens").read_text().split()[1]
        code = _block("A caller with the write token", "python", "docs/security.md")
        run_env = {**os.environ, "SIMHASH_TARGET": f"127.0.0.1:{port}", "SIMHASH_TOKEN": write_token}
        for _ in range(60):  # until the server listens
            result = subprocess.run(
                [sys.executable, "-c", code], cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=60
            )
            if result.returncode == 0 or "Unavailable" not in result.stderr:
                break
            time.sleep(1)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "True\n"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
