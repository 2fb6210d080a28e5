"""docs/deploy.md's testcontainers example, run as written: a user's conftest and test, in a directory of their own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow("the README's testcontainers example starts HBase's image, as a user's test would")

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")


def _containers_of(image: str) -> set[str]:
    listed = subprocess.run(["docker", "ps", "-aq", "--filter", f"ancestor={image}"], capture_output=True, text=True)
    return set(listed.stdout.split())


def _blocks_after(heading: str, count: int) -> list[str]:
    start = GUIDE.index(heading)
    return re.compile(r"```python\n(.*?)```", re.S).findall(GUIDE, start)[:count]


def test_the_readme_fixture_example_passes_as_written(images, tmp_path) -> None:
    from simhash_client.testing import HBASE_IMAGE, SERVER_IMAGE

    before = _containers_of(HBASE_IMAGE) | _containers_of(SERVER_IMAGE)
    conftest, test = _blocks_after("## Testing your service against simhash-index", 2)
    assert "pytest_plugins" in conftest and "def test_" in test
    (tmp_path / "conftest.py").write_text(conftest, encoding="utf-8")
    (tmp_path / "test_example.py").write_text(test, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "1 passed" in run.stdout
    after = _containers_of(HBASE_IMAGE) | _containers_of(SERVER_IMAGE)
    assert after == before, "the fixture left containers behind"
