"""The Thrift2 IDL shipped in simhash_schema is the one inside the hbase-thrift jar the launcher runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from simhash_schema.thrift2 import PACKAGED_IDL, hbase2, read_idl

JARS = Path(__file__).resolve().parents[2] / "deploy" / "hbase-local" / "target" / "lib"


def test_the_packaged_idl_is_the_jars() -> None:
    jars = sorted(JARS.glob("hbase-thrift-*.jar"))
    if not jars:
        pytest.skip("deploy/hbase-local/target/lib not fetched (`make jars`)")
    assert read_idl(PACKAGED_IDL) == read_idl(jars[0])


def test_the_packaged_idl_is_used_and_has_what_the_index_calls() -> None:
    module = hbase2()
    for name in ("getScannerResults", "getAllRegionLocations", "createTable", "checkAndPut", "tableExists"):
        assert name in module.THBaseService.thrift_services, name
    assert module.TReadType.PREAD == 3  # the value HBase 2.6.1 defines
