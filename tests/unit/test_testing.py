"""simhash_client.testing without Docker: what it waits for, and that importing it starts nothing."""

from __future__ import annotations

import subprocess
import sys

from simhash_deploy.container import READY_LINE


def test_the_fixture_waits_for_the_line_the_hbase_image_prints() -> None:
    from simhash_client import testing

    assert testing.READY_LINE == READY_LINE


def test_importing_it_does_not_import_testcontainers() -> None:
    probe = "import sys, simhash_client.testing; print('testcontainers' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
