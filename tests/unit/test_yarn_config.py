"""The YARN configuration the container cluster's daemons write, and its clients copy, without starting it."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree

from simhash_deploy.yarn import write_yarn_config


def _props(path: Path) -> dict[str, str]:
    return {p.findtext("name") or "": p.findtext("value") or "" for p in ElementTree.parse(path).getroot()}


def test_every_task_jvm_fits_its_container_and_collects_with_one_thread(tmp_path: Path) -> None:
    write_yarn_config(tmp_path, tmp_path / "data", tmp_path / "lib", "resourcemanager")
    mapred = _props(tmp_path / "mapred-site.xml")
    for opts, memory in (
        ("mapreduce.map.java.opts", "mapreduce.map.memory.mb"),
        ("mapreduce.reduce.java.opts", "mapreduce.reduce.memory.mb"),
        ("yarn.app.mapreduce.am.command-opts", "yarn.app.mapreduce.am.resource.mb"),
    ):
        heap = re.search(r"-Xmx(\d+)m", mapred[opts])
        assert heap is not None, opts
        assert int(heap.group(1)) < int(mapred[memory]), opts  # room for the JVM's own memory
        assert "-XX:+UseSerialGC" in mapred[opts].split(), opts
        assert "--add-opens" in mapred[opts], opts  # JDK 17's flags for HBase's classes
    yarn = _props(tmp_path / "yarn-site.xml")
    largest = max(int(mapred[m]) for m in ("mapreduce.map.memory.mb", "yarn.app.mapreduce.am.resource.mb"))
    assert largest <= int(yarn["yarn.scheduler.maximum-allocation-mb"])
