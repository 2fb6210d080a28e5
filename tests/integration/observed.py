"""What an in-process store or server has reported in its metrics so far: how its coalescers batched calls,
and which calls its handlers have ended."""

from __future__ import annotations

from simhash_server.metrics import BATCH_CALLS, RPC_CALLS


def batches_observed(kind: str) -> tuple[float, float]:
    """(batches, calls) the store's ``kind`` coalescer ("queries", "writes", "deletes") has reported so far."""
    samples = {s.name: s.value for metric in BATCH_CALLS.collect() for s in metric.samples if s.labels["kind"] == kind}
    return samples.get("simhash_store_batch_calls_count", 0.0), samples.get("simhash_store_batch_calls_sum", 0.0)


def calls_ended(method: str) -> dict[str, float]:
    """The calls of ``method`` ("IndexBatch") whose handlers have ended so far, by status code name."""
    return {
        s.labels["code"]: s.value
        for metric in RPC_CALLS.collect()
        for s in metric.samples
        if s.name == "simhash_rpc_calls_total" and s.labels["method"] == method
    }
