"""hbase-site.xml: the properties of the launcher's standalone HBase, and how they are written."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

__all__ = [
    "AIRCOMPRESSOR_CODECS",
    "COMPACTION_BOUNDS",
    "COMPACTION_MIB_PER_S",
    "site_xml",
    "standalone_properties",
]

# Pure-Java codecs (hbase-compression-aircompressor) for the families' compression.  HBase resolves them from
# the hbase-site.xml on its JVM's class path, so every JVM writing or reading HFiles needs these lines.
AIRCOMPRESSOR_CODECS = {
    "hbase.io.compress.snappy.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.SnappyCodec",
    "hbase.io.compress.lz4.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.Lz4Codec",
    "hbase.io.compress.zstd.codec": "org.apache.hadoop.hbase.io.compress.aircompressor.ZstdCodec",
}
# The region server's compaction throughput bounds (bytes/s).  HBase picks a rate between them by compaction
# pressure, 50-100 MiB/s by default: more than two cores compact, so a compaction takes the cores queries need.
# The launcher sets both to COMPACTION_MIB_PER_S
# (docs/decisions.md#compaction-throughput-limited-to-10-mibs-on-the-launchers-region-server).
COMPACTION_BOUNDS = (
    "hbase.hstore.compaction.throughput.lower.bound",
    "hbase.hstore.compaction.throughput.higher.bound",
)
COMPACTION_MIB_PER_S = 10


def site_xml(properties: dict[str, str], comment: str) -> str:
    body = "".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>\n" for k, v in properties.items()
    )
    return f'<?xml version="1.0"?>\n<!-- {comment} -->\n<configuration>\n{body}</configuration>\n'


def standalone_properties(
    data: Path,
    zookeeper_port: int,
    thrift_bind: str,
    thrift_idle_timeout_ms: int,
    offheap_cache_mb: int = 0,
    compaction_mib_per_s: int | None = COMPACTION_MIB_PER_S,
) -> dict[str, str]:
    """ZooKeeper, master and one region server in one JVM, data under ``data``, loopback only."""
    props = {
        "hbase.cluster.distributed": "false",
        "hbase.rootdir": (data / "data").as_uri(),
        "hbase.tmp.dir": str(data / "tmp"),
        "hbase.zookeeper.quorum": "127.0.0.1",
        "hbase.zookeeper.property.clientPort": str(zookeeper_port),
        "hbase.zookeeper.property.dataDir": str(data / "zk"),
        # The local filesystem has no hflush/hsync capability; standalone mode accepts that.
        "hbase.unsafe.stream.capability.enforce": "false",
        "hbase.wal.provider": "filesystem",
        "hbase.master.info.port": "-1",
        "hbase.regionserver.info.port": "-1",
        "hbase.localcluster.assign.random.ports": "true",
        "hbase.master.ipc.address": "127.0.0.1",
        "hbase.regionserver.ipc.address": "127.0.0.1",
        "hbase.master.hostname": "localhost",
        "hbase.unsafe.regionserver.hostname": "localhost",
        "hbase.thrift.info.port": "-1",
        "hbase.regionserver.thrift.ipaddress": thrift_bind,
        "hbase.thrift.server.socket.read.timeout": str(thrift_idle_timeout_ms),
        # Archive the store files a compaction replaced after 10 s, not HBase's 2 minutes: flush(compact=True)
        # waits for that, so sizes measured right after a major compaction count each row once.
        "hbase.hfile.compaction.discharger.interval": "10000",
        **AIRCOMPRESSOR_CODECS,
    }
    if offheap_cache_mb:  # data blocks in an off-heap BucketCache; index and bloom blocks stay on the heap
        props["hbase.bucketcache.ioengine"] = "offheap"
        props["hbase.bucketcache.size"] = str(offheap_cache_mb)
    if compaction_mib_per_s:
        props |= dict.fromkeys(COMPACTION_BOUNDS, str(compaction_mib_per_s << 20))
    return props
