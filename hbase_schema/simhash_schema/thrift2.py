"""HBase's Thrift2 API through thriftpy2, with the IDL taken from the HBase you run.

The IDL (``org/apache/hadoop/hbase/thrift2/hbase.thrift``) ships inside the ``hbase-thrift`` jar; it is
read from there, so client and gateway always agree.  Where it is looked for, in order:
``$SIMHASH_HBASE_THRIFT2_IDL`` (a .thrift file or a .jar), ``$HBASE_HOME/lib/hbase-thrift-*.jar``, then the
jars ``deploy/hbase-local`` fetched in this checkout.
"""

from __future__ import annotations

import io
import os
import zipfile
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["SchemaError", "connect", "hbase2"]

IDL_IN_JAR = "org/apache/hadoop/hbase/thrift2/hbase.thrift"


class SchemaError(RuntimeError):
    """The index's tables or meta record are missing, different, or cannot be reached."""


def _candidates() -> list[Path]:
    found: list[Path] = []
    if env := os.environ.get("SIMHASH_HBASE_THRIFT2_IDL"):
        found.append(Path(env))
    if home := os.environ.get("HBASE_HOME"):
        found.extend(sorted(Path(home, "lib").glob("hbase-thrift-*.jar")))
    for base in (Path.cwd(), *Path.cwd().parents, Path(__file__).resolve().parents[2]):
        found.extend(sorted((base / "deploy" / "hbase-local" / "target" / "lib").glob("hbase-thrift-*.jar")))
    return found


@cache
def hbase2() -> ModuleType:
    """The Thrift2 IDL as a thriftpy2 module (THBaseService, TScan, TColumnFamilyDescriptor, ...)."""
    import thriftpy2

    for path in _candidates():
        if not path.is_file():
            continue
        if path.suffix == ".jar":
            with zipfile.ZipFile(path) as jar:
                text = jar.read(IDL_IN_JAR).decode("utf-8")
        else:
            text = path.read_text(encoding="utf-8")
        return thriftpy2.load_fp(io.StringIO(text), module_name="hbase2_thrift")
    raise SchemaError(
        "cannot find HBase's Thrift2 IDL: set SIMHASH_HBASE_THRIFT2_IDL to hbase.thrift or an hbase-thrift jar, "
        "or HBASE_HOME, or run `make jars` in the checkout"
    )


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
