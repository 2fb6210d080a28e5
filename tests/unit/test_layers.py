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
