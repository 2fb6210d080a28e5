"""Where the index lives and how it is reached: one dataclass, the single home of every default.

No HBase import here: the command line reads its defaults from this without loading happybase.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StoreConfig"]


@dataclass(frozen=True)
class StoreConfig:
    host: str = "127.0.0.1"
    thrift_port: int = 9090
    thrift2_port: int = 9091
    table_prefix: str = "simhash"
    pool_size: int = 32  # Thrift connections per gateway, and threads for one batch's drawer scans
    timeout_ms: int = 10_000
    retries: int = 2
    wal: bool = True
    # Concurrent calls share HBase calls (simhash_server.index.coalesce): at most this many batches at once, of
    # at most this many queries or documents each.  One query lane makes bigger batches, so fewer scans per
    # query; two write lanes keep the region server busy with large batches
    # (docs/decisions.md#a-grpcaio-server-whose-concurrent-calls-share-hbase-calls).
    query_lanes: int = 1
    write_lanes: int = 2
    batch_queries: int = 32
    batch_documents: int = 1_000
    # The recipe a new index is created with (None: the newest).  An existing index is served with the one it
    # records; naming another here refuses to open it.
    fingerprint_version: str | None = None
