"""The launcher's home when installed from a wheel: seeded from the copies the wheel carries, refreshed when a
new release brings another pom (tests/integration/test_installed_package.py starts HBase that way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simhash_deploy.home import ASSEMBLY, HBaseError, installed_home

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_a_home_is_seeded_and_refreshed(tmp_path: Path) -> None:
    source = ROOT / ASSEMBLY
    home = installed_home(source, data_home=tmp_path)
    assert home == tmp_path / "simhash-index"
    for name in ("pom.xml", "flush.jsh"):
        assert (home / ASSEMBLY / name).read_bytes() == (source / name).read_bytes()
    marker = home / ASSEMBLY / "target" / "lib" / ".complete"
    marker.parent.mkdir(parents=True)
    marker.write_text("fetched\n")
    installed_home(source, data_home=tmp_path)
    assert marker.is_file(), "an unchanged pom keeps the jars fetched"
    (home / ASSEMBLY / "pom.xml").write_text("<project/>")  # as an older release left it
    installed_home(source, data_home=tmp_path)
    assert (home / ASSEMBLY / "pom.xml").read_bytes() == (source / "pom.xml").read_bytes()
    assert not marker.exists(), "a new pom has Maven fetch its jars again"


def test_a_source_without_the_assembly_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(HBaseError, match="lacks"):
        installed_home(tmp_path / "empty", data_home=tmp_path)
