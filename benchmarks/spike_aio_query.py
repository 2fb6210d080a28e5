"""A spike for issue #5, not the product: Query served by grpc.aio with an asyncio coalescer.

It measures what the sync server's per-call thread hand-off and Condition wait cost. Only Query by
fingerprint, with max_distance 3 and none of the service's validation, metrics or deadlines; the
batches are IndexStore._near_many, as in the product. Compared with ghz against `simhash-index serve`
over the same index, one after the other (docs/benchmarks.md, gRPC):

    .venv/bin/python benchmarks/spike_aio_query.py 127.0.0.1:50092 &
    var/bin/ghz --insecure --protoset var/simhash_index.protoset \\
        --call simhash_index.v1.SimHashIndex.Query --data-file PROBES.json -c 32 -n 10000 \\
        --connections 4 127.0.0.1:50092
"""

from __future__ import annotations

import asyncio
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc

from simhash_index.v1 import simhash_index_pb2 as pb
from simhash_index.v1 import simhash_index_pb2_grpc as pb_grpc
from simhash_server.store import IndexStore, StoreConfig

LANES, MAX_BATCH = 2, 32


class AsyncCoalescer:
    """Queued probes run as one _near_many batch in a worker thread, at most LANES batches at once."""

    def __init__(self, store: IndexStore) -> None:
        self.store = store
        self.queue: list[tuple[tuple[int, int], asyncio.Future[Any]]] = []
        self.busy = 0
        self.pool = ThreadPoolExecutor(LANES)

    async def submit(self, probe: tuple[int, int]) -> Any:
        future = asyncio.get_running_loop().create_future()
        self.queue.append((probe, future))
        if self.busy < LANES:
            self._start()
        return await future

    def _start(self) -> None:
        batch, self.queue = self.queue[:MAX_BATCH], self.queue[MAX_BATCH:]
        self.busy += 1
        probes = [probe for probe, _ in batch]
        done = asyncio.get_running_loop().run_in_executor(self.pool, self.store._near_many, probes, None)
        done.add_done_callback(lambda result: self._finish(batch, result))

    def _finish(self, batch: list[tuple[tuple[int, int], asyncio.Future[Any]]], result: asyncio.Future[Any]) -> None:
        self.busy -= 1
        error = result.exception()
        for i, (_, future) in enumerate(batch):
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result.result()[i])
        if self.queue and self.busy < LANES:
            self._start()


class QueryOnly(pb_grpc.SimHashIndexServicer):
    def __init__(self, coalescer: AsyncCoalescer) -> None:
        self.coalescer = coalescer

    async def Query(self, request: pb.QueryRequest, context: Any) -> pb.QueryResponse:
        near = await self.coalescer.submit((request.simhash, 3))
        near.sort(key=lambda n: (n.distance, n.doc_id))
        hits = [pb.Hit(doc_id=n.doc_id, simhash=n.simhash, distance=n.distance) for n in near]
        return pb.QueryResponse(hits=hits, simhash=request.simhash)


async def main(address: str) -> None:
    store = IndexStore(StoreConfig(table_prefix="bench_q1000000_r2"))
    store.open()
    server = grpc.aio.server()
    pb_grpc.add_SimHashIndexServicer_to_server(QueryOnly(AsyncCoalescer(store)), server)
    server.add_insecure_port(address)
    await server.start()
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "127.0.0.1:50092"))
