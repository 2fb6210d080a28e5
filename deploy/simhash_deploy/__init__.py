"""Local infrastructure for development, tests and `make run`: a real HBase from Maven Central jars."""

from simhash_deploy.hbase_local import HBaseError, LocalHBase, Ports, project_root

__all__ = ["HBaseError", "LocalHBase", "Ports", "project_root"]
