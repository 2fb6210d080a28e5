"""Local infrastructure for development, tests and `make run`: a real HBase from Maven Central jars."""

from simhash_deploy.hbase_local import LocalHBase
from simhash_deploy.home import HBaseError, project_root
from simhash_deploy.processes import Ports

__all__ = ["HBaseError", "LocalHBase", "Ports", "project_root"]
