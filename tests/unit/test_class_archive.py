"""The job JVM's class archive: which flags a run gets, and what is kept after it (no JVM here; the archive a
real JVM writes and maps is in tests/integration/test_class_archive_jvm.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simhash_server.bulk.class_archive import KEEP, LOG_FLAGS, ClassArchive


@pytest.fixture
def jars(tmp_path: Path) -> list[Path]:
    made = []
    for name in ("job.jar", "lib-a.jar", "lib-b.jar"):
        path = tmp_path / name
        path.write_bytes(name.encode())
        made.append(path)
    return made


@pytest.fixture
def java(tmp_path: Path) -> str:
    path = tmp_path / "java"
    path.write_bytes(b"#!")
    return str(path)


def _written(flags: list[str]) -> Path:
    (flag,) = [f for f in flags if f.startswith("-XX:ArchiveClassesAtExit=")]
    return Path(flag.split("=", 1)[1])


def test_the_first_run_writes_the_archive_and_the_next_maps_it(tmp_path: Path, java: str, jars: list[Path]) -> None:
    folder = tmp_path / "cache"
    first = ClassArchive(java, jars, folder)
    flags = first.flags({})
    assert flags[: len(LOG_FLAGS)] == LOG_FLAGS
    written = _written(flags)
    assert written.parent == folder and not written.exists()
    written.write_bytes(b"archive")  # what the JVM does as it exits
    assert first.keep(0)
    assert first.path.read_bytes() == b"archive" and not written.exists()
    second = ClassArchive(java, jars, folder)
    assert second.path == first.path
    assert second.flags({}) == [*LOG_FLAGS, f"-XX:SharedArchiveFile={first.path}"]


def test_a_changed_jar_or_jvm_is_another_key(tmp_path: Path, java: str, jars: list[Path]) -> None:
    folder = tmp_path / "cache"
    key = ClassArchive(java, jars, folder).key
    assert ClassArchive(java, jars, folder).key == key
    jars[1].write_bytes(b"rebuilt, longer")
    assert ClassArchive(java, jars, folder).key != key
    assert ClassArchive(java, jars[:2], folder).key != ClassArchive(java, jars, folder).key
    other = tmp_path / "java-other"
    other.write_bytes(b"#!!")
    assert ClassArchive(str(other), jars, folder).key != ClassArchive(java, jars, folder).key


def test_nothing_is_kept_when_the_jvm_wrote_nothing(tmp_path: Path, java: str, jars: list[Path]) -> None:
    archive = ClassArchive(java, jars, tmp_path / "cache")
    archive.flags({})
    assert not archive.keep(1)
    assert not archive.path.exists()
    _written(ClassArchive(java, jars, tmp_path / "cache").flags({})).write_bytes(b"")
    assert not list((tmp_path / "cache").glob("*.jsa"))


def test_only_the_newest_archives_are_kept(tmp_path: Path, java: str, jars: list[Path]) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    for n in range(KEEP + 2):
        old = folder / f"old{n}.jsa"
        old.write_bytes(b"x")
        os.utime(old, ns=(n * 10**9, n * 10**9))
    archive = ClassArchive(java, jars, folder)
    _written(archive.flags({})).write_bytes(b"new")
    assert archive.keep(0)
    left = sorted(p.name for p in folder.glob("*.jsa"))
    assert archive.path.name in left and len(left) == KEEP
    assert "old0.jsa" not in left and f"old{KEEP + 1}.jsa" in left


@pytest.mark.parametrize(
    "variable, value",
    [
        ("JAVA_TOOL_OPTIONS", "-XX:StartFlightRecording=filename=x.jfr"),
        ("JDK_JAVA_OPTIONS", "-javaagent:/opt/otel/opentelemetry-javaagent.jar"),
        ("_JAVA_OPTIONS", "-agentpath:/opt/profiler/libasyncProfiler.so=start"),
    ],
)
def test_no_archive_under_a_class_file_hook(
    tmp_path: Path, java: str, jars: list[Path], variable: str, value: str
) -> None:
    folder = tmp_path / "cache"
    archive = ClassArchive(java, jars, folder)
    _written(archive.flags({})).write_bytes(b"archive")
    archive.keep(0)
    assert ClassArchive(java, jars, folder).flags({variable: value}) == LOG_FLAGS
    assert ClassArchive(java, jars, folder).flags({variable: "-Xss2m"})[-1].startswith("-XX:SharedArchiveFile=")


def test_an_archive_whose_jvm_crashed_is_set_aside(tmp_path: Path, java: str, jars: list[Path]) -> None:
    folder = tmp_path / "cache"
    archive = ClassArchive(java, jars, folder)
    _written(archive.flags({})).write_bytes(b"archive")
    archive.keep(0)
    used = ClassArchive(java, jars, folder)
    assert used.flags({})[-1].startswith("-XX:SharedArchiveFile=")
    assert not used.keep(-6)  # SIGABRT: the JVM's own abort
    assert not used.path.exists()
    assert ClassArchive(java, jars, folder).flags({}) == LOG_FLAGS  # never written again for this key
    failed = ClassArchive(java, jars, tmp_path / "other")
    _written(failed.flags({})).write_bytes(b"archive")
    assert failed.keep(1)  # a job's failure is not the archive's


def test_an_unwritable_cache_runs_without(tmp_path: Path, java: str, jars: list[Path]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    assert ClassArchive(java, jars, blocker / "cache").flags({}) == LOG_FLAGS


def test_jars_must_be_named(tmp_path: Path, java: str) -> None:
    with pytest.raises(ValueError, match="jars"):
        ClassArchive(java, [], tmp_path)
