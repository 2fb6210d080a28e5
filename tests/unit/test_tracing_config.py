"""tracing.py without a server: which OTEL_* settings turn it on or are refused, and the spans a coalesced
batch makes for its callers (recorded by the SDK's own in-memory exporter)."""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ALWAYS_ON, ParentBased, TraceIdRatioBased

from simhash_server import tracing
from simhash_server.index.coalesce import AsyncCoalescer


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({}, False),
        ({"OTEL_SERVICE_NAME": "x"}, False),  # naming the service exports nothing
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317"}, True),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, True),
        ({"OTEL_TRACES_EXPORTER": "console"}, True),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, False),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, False),
        ({"OTEL_SDK_DISABLED": "false", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317"}, True),
    ],
)
def test_tracing_is_on_only_when_an_exporter_is_configured(environ, expected):
    assert tracing.wanted(environ) is expected


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, "OTEL_TRACES_EXPORTER"),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, "PROTOCOL"),
        (
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
            "PROTOCOL",
        ),
    ],
)
def test_a_setting_the_server_cannot_honour_is_refused_by_name(environ, named):
    with pytest.raises(ValueError, match=named):
        tracing.wanted(environ)


def test_off_it_makes_nothing_and_carries_no_context():
    tracing.stop()
    assert not tracing.on() and tracing.carried() is None
    assert tracing.span("a") is tracing.span("b")  # one shared no-op, nothing allocated per span
    tracing.record("x", 1, 2, {})  # a no-op too


@pytest.fixture
def exported():
    spans = InMemorySpanExporter()
    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracing.use(provider, "test")
    yield spans
    tracing.stop()


def test_a_coalesced_batch_is_a_child_of_a_sampled_caller_and_linked_to_the_others(exported):
    """Two callers' items share one batch call in a worker thread: its span (and the HBase span under it)
    belongs to the sampled caller's trace although the unsampled one leads the batch, and each caller gets
    its own result."""
    release = threading.Event()

    def run_batch(items: list[int], deadline: float | None) -> list[int]:
        if items == [0]:
            release.wait(60)  # holds the only lane until both callers have queued behind it
        with tracing.span("HBase call"):
            return [item * 10 for item in items]

    sampled = trace.get_tracer("caller", tracer_provider=tracing._provider)
    unsampled = TracerProvider(sampler=ALWAYS_OFF).get_tracer("caller")

    async def call(tracer: trace.Tracer, name: str, item: int) -> int:
        with tracer.start_as_current_span(name):
            return await coalescer.submit(item)

    async def main() -> list[int]:
        first = asyncio.create_task(coalescer.submit(0))
        await asyncio.sleep(0)  # it runs, and takes the lane
        calls = [asyncio.create_task(call(unsampled, "quiet", 1)), asyncio.create_task(call(sampled, "traced", 2))]
        await asyncio.sleep(0)  # both queue, in that order
        assert coalescer._busy == 1 and len(coalescer._queue) == 2
        release.set()
        return [await first, *[await c for c in calls]]

    coalescer: AsyncCoalescer[int, int] = AsyncCoalescer(run_batch, max_size=8, lanes=1)
    try:
        assert asyncio.run(main()) == [0, 10, 20]
    finally:
        coalescer.close()
    spans = exported.get_finished_spans()
    (caller,) = [s for s in spans if s.name == "traced"]
    (batch,) = [s for s in spans if s.name == "run_batch" and s.attributes["simhash.batch.calls"] == 2]
    assert batch.parent.span_id == caller.context.span_id
    assert batch.context.trace_id == caller.context.trace_id
    assert len(batch.links) == 1  # to the unsampled caller
    (hbase,) = [s for s in spans if s.name == "HBase call" and s.parent.span_id == batch.context.span_id]
    assert hbase.context.trace_id == caller.context.trace_id


def test_record_makes_a_finished_child_with_the_callers_times(exported):
    with trace.get_tracer("caller", tracer_provider=tracing._provider).start_as_current_span("call") as parent:
        tracing.record("HBase getScannerResults", 1_000, 5_000, {"simhash.rows": 3})
    (child,) = [s for s in exported.get_finished_spans() if s.name == "HBase getScannerResults"]
    assert (child.start_time, child.end_time) == (1_000, 5_000)
    assert child.parent.span_id == parent.get_span_context().span_id
    assert child.attributes["simhash.rows"] == 3


def test_in_an_unsampled_trace_no_child_span_is_made(exported):
    """A call the sampler left out costs its server span alone: under it, span() is the shared no-op and
    record() and a batch of unsampled callers export nothing."""
    quiet = TracerProvider(sampler=ALWAYS_OFF).get_tracer("caller")
    with quiet.start_as_current_span("call"):
        assert tracing.span("fingerprint") is tracing.span("other")
        assert not tracing.on()
        tracing.record("HBase getScannerResults", 1, 2, {})
        context = contextvars.copy_context()
    with tracing.linked_span("near_many", [context, context], {}) as batch:
        assert batch is None
    assert exported.get_finished_spans() == ()


TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.mark.parametrize(
    ("sampler", "metadata", "expected"),
    [
        (ParentBased(ALWAYS_ON), [("traceparent", f"00-{TRACE}-00f067aa0ba902b7-01")], True),
        (ParentBased(ALWAYS_ON), [("traceparent", f"00-{TRACE}-00f067aa0ba902b7-00")], False),  # caller's "no"
        (ParentBased(ALWAYS_ON), [], True),  # a new trace
        (ParentBased(ALWAYS_ON), [("traceparent", "garbage"), ("x-bin", b"\x00")], True),  # unreadable: new
        (ParentBased(ALWAYS_OFF), [], False),
        (ALWAYS_OFF, [("traceparent", f"00-{TRACE}-00f067aa0ba902b7-01")], False),
        (ALWAYS_ON, [("traceparent", f"00-{TRACE}-00f067aa0ba902b7-00")], True),  # not parent-based
        (TraceIdRatioBased(0.01), [], True),  # the SDK decides, by the id it makes
        (TraceIdRatioBased(0.0), [], False),
    ],
)
def test_a_call_is_traced_when_the_sampler_would_record_it(sampler, metadata, expected):
    tracing.use(TracerProvider(sampler=sampler))
    try:
        assert tracing.sampled(metadata, "/simhash_index.v1.SimHashIndex/Query") is expected
    finally:
        tracing.stop()
    assert tracing.sampled(metadata, "/simhash_index.v1.SimHashIndex/Query") is False  # off: nothing is


def test_bound_work_runs_in_the_callers_trace_in_another_thread(exported):
    def inner() -> None:
        with tracing.span("HBase call"):
            pass

    tracer = trace.get_tracer("caller", tracer_provider=tracing._provider)
    with tracer.start_as_current_span("call") as call:
        worker = threading.Thread(target=tracing.bound(inner))
        worker.start()
        worker.join()
    (child,) = [s for s in exported.get_finished_spans() if s.name == "HBase call"]
    assert child.parent.span_id == call.get_span_context().span_id
    tracing.stop()
    assert tracing.bound(inner) is inner  # off: the call itself, nothing wrapped
