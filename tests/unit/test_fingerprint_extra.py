"""`simhash-index[fingerprint]` is enough to fingerprint: the library, `simhash-index fingerprint` and the
hfile-load tasks' entry (file_task, whose PEX is built from that extra alone) import nothing that only the
`server` extra installs.  Each check runs in a fresh interpreter where those modules cannot be imported."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib.metadata import requires
from pathlib import Path

import pytest

from simhash_server.bulk import file_task
from simhash_server.fingerprint import FINGERPRINT_VERSION, fingerprint

# The top-level modules of the distributions only the `server` extra adds.
SERVER_ONLY = {
    "happybase": "happybase",
    "thriftpy2": "thriftpy2",
    "grpcio-reflection": "grpc_reflection",
    "uvloop": "uvloop",
    "prometheus-client": "prometheus_client",
    "rich": "rich",
    "opentelemetry-sdk": "opentelemetry.sdk",
    "opentelemetry-exporter-otlp-proto-grpc": "opentelemetry.exporter",
    "opentelemetry-instrumentation-grpc": "opentelemetry.instrumentation",
}

_BLOCK = f"""
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in {sorted(SERVER_ONLY.values())!r}):
            raise ImportError("server-only module imported: " + name)
sys.meta_path.insert(0, Block())
"""


def _distribution(requirement: str) -> str:
    for stop in "<>=!;[ ":
        requirement = requirement.split(stop, 1)[0]
    return requirement.lower()


def _run(code: str, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-c", _BLOCK + code, *args], input=stdin, capture_output=True, timeout=120)
    result.stderr = result.stderr.decode(errors="replace")
    return result


def _extra(name: str) -> list[str]:
    """The installed package's requirements under one extra (its metadata, as pip reads it), markers cut."""
    marker = re.compile(rf'\bextra\s*==\s*"{name}"')
    return [r.split(";", 1)[0].strip() for r in requires("simhash-index") or [] if marker.search(r)]


def test_every_server_only_distribution_is_blocked() -> None:
    fingerprint = {_distribution(r) for r in _extra("fingerprint")}
    server = {_distribution(r) for r in _extra("server")} - {"simhash-index"}
    assert "jieba" in fingerprint and "happybase" in server
    assert "simhash-index[fingerprint]" in _extra("server")  # the server has all the fingerprinting needs
    assert not fingerprint & server
    assert server == set(SERVER_ONLY)  # a distribution added to `server` needs its module named above


def test_the_blocker_blocks() -> None:
    result = _run("import happybase")
    assert result.returncode != 0
    assert "server-only module imported: happybase" in result.stderr


def test_the_library_fingerprints_and_sketches_as_the_full_install_does() -> None:
    text = "海量文本的近似重复检测：同一篇文章换了页眉页脚。"
    result = _run(
        "from simhash_server.fingerprint import fingerprint\n"
        f"made = fingerprint({text!r}, sketch=True)\n"
        "print(made.value, made.sketch.hex())"
    )
    assert result.returncode == 0, result.stderr
    made = fingerprint(text, sketch=True)  # here, with every module of the server importable
    assert result.stdout.decode().split() == [str(made.value), made.sketch.hex()]


def test_the_task_entry_probes_and_parses() -> None:
    probe = _run("from simhash_server.bulk import file_task; file_task.main(['--probe'])")
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.decode().startswith(file_task.pinned_probe(FINGERPRINT_VERSION))
    line = json.dumps({"id": "a", "text": "海量文本 near duplicate <b>x</b>"}) + "\n"
    parsed = _run("from simhash_server.bulk import file_task; file_task.main(['a.jsonl'])", stdin=line.encode())
    assert parsed.returncode == 0, parsed.stderr
    assert parsed.stdout.startswith(b"R")  # a record, not a reject ("X")


@pytest.mark.parametrize("sketch", [[], ["--sketch"]])
def test_the_fingerprint_command(tmp_path: Path, sketch: list[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "a", "text": "the same article in another site's template"}) + "\n")
    result = _run(
        "import sys; from simhash_server.cli import main; sys.argv[0] = 'simhash-index'; main()",
        "fingerprint",
        *sketch,
        "-i",
        str(source),
        "-o",
        "-",
    )
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout.decode())
    assert record["id"] == "a" and ("sketch" in record) == bool(sketch)
