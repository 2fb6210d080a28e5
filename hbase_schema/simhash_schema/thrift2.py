"""HBase's Thrift2 API through thriftpy2.

The IDL is HBase 2.6.1's ``org/apache/hadoop/hbase/thrift2/hbase.thrift`` (Apache-2.0, from the
``hbase-thrift`` jar on Maven Central), shipped in this package as ``hbase2.thrift`` the way happybase ships
Thrift1's, so an installed package needs no checkout and no jars.  tests/unit/test_thrift2_idl.py holds it
equal to the jar's.  To speak another HBase's Thrift2, point ``$SIMHASH_HBASE_THRIFT2_IDL`` at its
hbase.thrift or its hbase-thrift jar, or set ``$HBASE_HOME``.
"""

from __future__ import annotations

import io
import os
import zipfile
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "PACKAGED_IDL",
    "SchemaError",
    "connect",
    "hbase2",
    "read_idl",
]

IDL_IN_JAR = "org/apache/hadoop/hbase/thrift2/hbase.thrift"


class SchemaError(RuntimeError):
    """The index's tables or meta record are missing, different, or cannot be reached."""


PACKAGED_IDL = Path(__file__).with_name("hbase2.thrift")


def _candidates() -> list[Path]:
    found: list[Path] = []
    if env := os.environ.get("SIMHASH_HBASE_THRIFT2_IDL"):
        found.append(Path(env))
    if home := os.environ.get("HBASE_HOME"):
        found.extend(sorted(Path(home, "lib").glob("hbase-thrift-*.jar")))
    found.append(PACKAGED_IDL)
    return found


def read_idl(path: Path) -> str:
    """The Thrift2 IDL text in a .thrift file, or inside an hbase-thrift jar."""
    if path.suffix == ".jar":
        with zipfile.ZipFile(path) as jar:
            return jar.read(IDL_IN_JAR).decode("utf-8")
    return path.read_text(encoding="utf-8")


@cache
def hbase2() -> ModuleType:
    """The Thrift2 IDL as a thriftpy2 module (THBaseService, TScan, TColumnFamilyDescriptor, ...)."""
    import thriftpy2

    for path in _candidates():
        if path.is_file():
            return thriftpy2.load_fp(io.StringIO(read_idl(path)), module_name="hbase2_thrift")
    raise SchemaError(  # only when an explicit location is wrong and the packaged copy is gone
        f"cannot find HBase's Thrift2 IDL (looked at {', '.join(map(str, _candidates()))}): set "
        "SIMHASH_HBASE_THRIFT2_IDL to an hbase.thrift or an hbase-thrift jar, or reinstall simhash-index"
    )


# A table's creation or alteration returns once the master's procedure is done: its regions opened on the
# region servers, their files written to the cluster's filesystem.  That takes a second on an idle cluster and
# much longer on a busy or recovering one (a master just restarted, a NameNode leaving safe mode): a data
# call's 10 s would call that a failure, so schema changes wait minutes, as HBase's own admin client does.
DDL_TIMEOUT_MS = 300_000


def connect(host: str, port: int, timeout_ms: int = 10_000) -> Any:
    """A Thrift2 client (binary protocol, buffered transport: the gateway's -threadpool defaults)."""
    from thriftpy2.protocol import TBinaryProtocolFactory
    from thriftpy2.rpc import make_client
    from thriftpy2.transport import TBufferedTransportFactory

    return make_client(
        hbase2().THBaseService,
        host,
        port,
        timeout=timeout_ms,
        trans_factory=TBufferedTransportFactory(),
        proto_factory=TBinaryProtocolFactory(),
    )
