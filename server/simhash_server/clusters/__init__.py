"""Near-duplicate clusters of a whole index: a MapReduce job over the drawer table (job.py), run by the same
job runner as `hfile-load` (simhash_server.bulk.hfile_job)."""

from simhash_server.clusters.job import ClustersOptions, ClustersStats, run_clusters

__all__ = ["ClustersOptions", "ClustersStats", "run_clusters"]
