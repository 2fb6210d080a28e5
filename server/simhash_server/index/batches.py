"""Steps sent to HBase: each a Thrift1 batch per table, at one timestamp (the writes' order is writes.py's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import happybase

from simhash_server.index.writes import Step

__all__ = ["delete_cells", "send_plan"]


def send_plan(
    conn: happybase.Connection, tables: Mapping[str, bytes], plan: Sequence[tuple[int | None, Step]], wal: bool
) -> None:
    """The steps in order, each at its timestamp (None: HBase's clock)."""
    for stamp, step in plan:
        with conn.table(tables[step.table]).batch(wal=wal, timestamp=stamp) as batch:
            for row, columns in step.deletes:
                batch.delete(row, columns=columns)
            for row, data in step.puts:
                batch.put(row, data)


def delete_cells(conn: happybase.Connection, table: bytes, cells: list[tuple[bytes, bytes, int]], wal: bool) -> None:
    """Each (row, column, timestamp) cell's version at that timestamp, and older ones, deleted."""
    by_stamp: dict[int, list[tuple[bytes, bytes]]] = {}
    for row, column, stamp in cells:
        by_stamp.setdefault(stamp, []).append((row, column))
    for stamp, group in by_stamp.items():
        with conn.table(table).batch(wal=wal, timestamp=stamp) as batch:
            for row, column in group:
                batch.delete(row, columns=[column])
