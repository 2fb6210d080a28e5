"""Bulk load: files of fingerprints or texts straight into the index, from worker processes, resumable."""
