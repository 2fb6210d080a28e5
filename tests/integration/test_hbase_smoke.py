"""The real HBase answers: table lifecycle, puts, prefix scans and deletes through happybase/Thrift1."""

from __future__ import annotations

import uuid

import pytest


@pytest.fixture
def table_name() -> str:
    return f"smoke_{uuid.uuid4().hex[:12]}"


def test_create_put_scan_delete_drop(hbase, table_name: str) -> None:
    conn = hbase.connection()
    try:
        conn.create_table(table_name, {"f": {"max_versions": 1}})
        assert table_name.encode() in conn.tables()
        table = conn.table(table_name)
        rows = {b"ab\x00\x01": b"1", b"ab\x00\x02": b"2", b"ab\xff": b"3", b"ac\x00": b"4", b"a": b"5"}
        with table.batch() as batch:
            for key, value in rows.items():
                batch.put(key, {b"f:v": value})

        scanned = [(k, d[b"f:v"]) for k, d in table.scan(row_prefix=b"ab")]
        assert scanned == [(b"ab\x00\x01", b"1"), (b"ab\x00\x02", b"2"), (b"ab\xff", b"3")]

        table.delete(b"ab\x00\x02")
        assert [k for k, _ in table.scan(row_prefix=b"ab")] == [b"ab\x00\x01", b"ab\xff"]
        assert table.row(b"ab\x00\x02") == {}
        assert table.row(b"ac\x00") == {b"f:v": b"4"}
    finally:
        if table_name.encode() in conn.tables():
            conn.delete_table(table_name, disable=True)
        assert table_name.encode() not in conn.tables()
        conn.close()


def test_thrift2_gateway_puts_gets_and_scans(hbase, table_name: str) -> None:
    """The second gateway serves the calls the index makes through it: put, get, one-call scan, regions."""
    from simhash_schema import connect, hbase2

    if hbase.thrift2_port is None:
        pytest.skip("HBASE_THRIFT2_PORT not given for the external HBase")
    conn = hbase.connection()
    conn.create_table(table_name, {"f": {"max_versions": 1}})
    client = connect(hbase.host, hbase.thrift2_port)
    t = hbase2()
    name = table_name.encode()
    try:
        for row in (b"k1", b"k2", b"l1"):
            client.put(name, t.TPut(row=row, columnValues=[t.TColumnValue(b"f", b"v", row + b"!")]))
        got = client.get(name, t.TGet(row=b"k2"))
        assert [(cv.family, cv.qualifier, cv.value) for cv in got.columnValues] == [(b"f", b"v", b"k2!")]
        scanned = client.getScannerResults(name, t.TScan(startRow=b"k", stopRow=b"l"), 10)
        assert [r.row for r in scanned] == [b"k1", b"k2"]
        assert len(client.getAllRegionLocations(name)) == 1
    finally:
        client.close()
        conn.delete_table(table_name, disable=True)
        conn.close()
