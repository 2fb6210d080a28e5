"""The import contracts in pyproject.toml ([tool.importlinter]) hold: the layers point one way."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is in the test extra: `make install`"
    result = subprocess.run(
        [lint, "--config", "pyproject.toml", "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " 0 broken" in result.stdout


def test_the_fingerprint_layer_and_the_client_read_and_write_hex_alike() -> None:
    from simhash_client import types
    from simhash_server.fingerprint import hexform

    for value in (0, 1, 2**63, 2**64 - 1, 0x45EF3E4F1F80DE90):
        assert hexform.to_hex(value) == types.to_hex(value)
        assert hexform.from_hex(types.to_hex(value)) == types.from_hex(hexform.to_hex(value)) == value
    for bad in ("", "12", "0x45ef3e4f1f80de9", "45ef3e4f1f80de9g", " 45ef3e4f1f80de9"):
        for parse in (hexform.from_hex, types.from_hex):
            try:
                parse(bad)
            except ValueError as error:
                assert "16 hex digits" in str(error)
            else:
                raise AssertionError(f"{parse.__module__} accepted {bad!r}")


def test_every_name_the_client_exports_resolves() -> None:
    import simhash_client

    assert sorted(simhash_client.__all__) == sorted(simhash_client._WHERE)
    for name in simhash_client.__all__:
        assert getattr(simhash_client, name).__name__ == name
