"""Python client for the simhash-index gRPC service."""

__all__: list[str] = []
