"""The container path: these tests need a Docker engine and the images (`make test-containers` builds both).

They never skip: where this directory runs, a missing engine or image is a failure."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.containers)


@pytest.fixture(scope="session")
def docker() -> str:
    found = shutil.which("docker")
    assert found, "the container tests need the docker command (make deps, as root, installs it)"
    answer = subprocess.run([found, "info"], capture_output=True, text=True)
    assert answer.returncode == 0, f"no Docker engine answers (make deps, as root, starts one): {answer.stderr}"
    return found


@pytest.fixture(scope="session")
def images(docker: str) -> None:
    from simhash_client.testing import HBASE_IMAGE, SERVER_IMAGE

    for image in (HBASE_IMAGE, SERVER_IMAGE, "simhash-index/prometheus:bookworm"):
        present = subprocess.run([docker, "image", "inspect", image], capture_output=True)
        assert present.returncode == 0, f"image {image} is missing: run `make images`"


@pytest.fixture(scope="session")
def compose(docker: str) -> list[str]:
    """The compose command at hand: the Docker CLI's plugin, else docker-compose (1.29+)."""
    if subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    standalone = shutil.which("docker-compose")
    assert standalone, "neither `docker compose` nor docker-compose is installed (make deps, as root)"
    return [standalone]
