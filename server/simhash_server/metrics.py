"""Prometheus metrics, served on their own port by `simhash-index serve --metrics-address`."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

__all__ = [
    "BATCH_CALLS",
    "BELOW_SIMILARITY",
    "CANDIDATES",
    "DEDUP_DUPLICATE_SHARE",
    "HBASE_CALL_SECONDS",
    "QUERY_HITS",
    "RPC_CALLS",
    "RPC_IN_FLIGHT",
    "RPC_SECONDS",
]

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_COUNT_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 500, 1000, 10_000)

RPC_CALLS = Counter("simhash_rpc_calls_total", "gRPC calls by method and status code", ["method", "code"])
RPC_IN_FLIGHT = Gauge("simhash_rpc_in_flight", "gRPC calls being handled now, by method", ["method"])
DEDUP_DUPLICATE_SHARE = Gauge(
    "simhash_dedup_duplicate_share",
    "Recent share of Deduplicate documents found to be duplicates (whether it queries before claiming)",
)
RPC_SECONDS = Histogram("simhash_rpc_seconds", "gRPC call latency by method", ["method"], buckets=_LATENCY_BUCKETS)
HBASE_CALL_SECONDS = Histogram(
    "simhash_hbase_call_seconds",
    "Latency of one Thrift call to HBase, by gateway",
    ["gateway"],
    buckets=_LATENCY_BUCKETS,
)
CANDIDATES = Histogram(
    "simhash_query_candidates", "Distinct fingerprints the 10 drawer scans of a query returned", buckets=_COUNT_BUCKETS
)
QUERY_HITS = Histogram("simhash_query_hits", "Documents a query answered with", buckets=_COUNT_BUCKETS)
BELOW_SIMILARITY = Histogram(
    "simhash_query_below_similarity",
    "Candidates a verified query left out because their sketch fell below min_similarity",
    buckets=_COUNT_BUCKETS,
)
BATCH_CALLS = Histogram(
    "simhash_store_batch_calls",
    "Concurrent calls one batch of HBase calls served, by kind (queries, writes, deletes)",
    ["kind"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
