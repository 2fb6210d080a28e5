"""A real JDK writes the job's class archive as its first run exits, and the next run maps the job's own
classes from it (the jars of `make jars`; no HBase needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from simhash_server.bulk.class_archive import ClassArchive
from simhash_server.bulk.hfile_job import MAIN_CLASS, JobRunner


def _run(runner: JobRunner, archive: ClassArchive, extra: list[str]) -> int:
    jar = runner.jar
    argv = [runner.java_binary(), *archive.flags({}), *extra, "-cp", f"{jar}:{jar.parent / 'lib'}/*", MAIN_CLASS]
    code = subprocess.run(argv, capture_output=True, timeout=120).returncode
    archive.keep(code)
    return code


def test_the_second_run_maps_the_job_classes_from_the_archive(tmp_path: Path) -> None:
    runner = JobRunner()
    jars = [runner.jar, *sorted((runner.jar.parent / "lib").glob("*.jar"))]
    java = runner.java_binary()
    first = ClassArchive(java, jars, tmp_path / "cache")
    assert _run(runner, first, []) == 2  # Main without a command: its usage, exit 2
    assert first.path.stat().st_size > 1 << 20
    loads = tmp_path / "loads.txt"
    second = ClassArchive(java, jars, tmp_path / "cache")
    assert _run(runner, second, [f"-Xlog:class+load=info:file={loads}"]) == 2
    (line,) = [line for line in loads.read_text().splitlines() if f" {MAIN_CLASS} " in line]
    assert "shared objects file (top)" in line  # the dynamic archive, above the JDK's own
