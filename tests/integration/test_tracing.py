"""Traces on real HBase: a traced call arrives at a real OTLP receiver as one trace, continuing the caller's.

The server exports with OpenTelemetry's own OTLP exporter, configured only by OTEL_* variables, to an
in-process implementation of the OTLP trace service (otlp_receiver.py); the caller's context travels in the
W3C traceparent header the Python client sends.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from otlp_receiver import OtlpReceiver, ReceivedSpan

from simhash_client import SimHashClient

TEXT = (
    "据新华社报道，今年全国粮食总产量再创新高，达到一万三千亿斤以上。农业农村部表示，"
    "这得益于高标准农田建设和良种推广。专家认为，稳定粮食生产对保障国家粮食安全具有重要意义。"
) * 3
DEDUPLICATE = "/simhash_index.v1.SimHashIndex/Deduplicate"


@pytest.fixture
def receiver(monkeypatch) -> OtlpReceiver:
    with OtlpReceiver() as found:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", found.endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
        monkeypatch.setenv("OTEL_TRACES_SAMPLER", "parentbased_always_on")
        monkeypatch.setenv("OTEL_SERVICE_NAME", "simhash-index-under-test")
        monkeypatch.delenv("OTEL_SDK_DISABLED", raising=False)
        monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
        yield found


def _rpc_spans(spans: list[ReceivedSpan], name: str) -> list[ReceivedSpan]:
    return [s for s in spans if s.name == name]


def _descendants(spans: list[ReceivedSpan], root: ReceivedSpan) -> list[ReceivedSpan]:
    """Every span under ``root`` in its trace, followed by parent ids (a batch span counts under each call
    it links to, as well as under the call it is the child of)."""
    children: dict[bytes, list[ReceivedSpan]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id, []).append(span)
        for linked in span.links:
            children.setdefault(linked, []).append(span)
    found, todo = [], [root.span_id]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.span_id)
    return found


def _served(make_index, **config: object):
    from simhash_server.rpc.server import ServerConfig, SimHashServer

    server = SimHashServer(
        ServerConfig(address="127.0.0.1:0", metrics_address=None, store=make_index().config, **config)
    )
    server.start()
    return server


def test_a_traced_deduplicate_arrives_as_one_trace_with_its_hbase_spans(receiver, make_index):
    server = _served(make_index, tracing=True)
    caller = TracerProvider().get_tracer("a calling service")
    try:
        with SimHashClient(f"127.0.0.1:{server.port}") as client, caller.start_as_current_span("request") as mine:
            first = client.deduplicate("trace-1", text=TEXT)
            again = client.deduplicate("trace-2", text=TEXT + "（完）")
            assert client.health()  # not traced: a load balancer's probes would drown the rest
    finally:
        server.stop(grace=1)  # exports every span still queued, before it returns
    assert first.stored and not again.stored and again.hits
    trace_id = mine.get_span_context().trace_id.to_bytes(16, "big")
    spans = receiver.spans()
    calls = _rpc_spans(spans, DEDUPLICATE)
    assert {s.service for s in spans} == {"simhash-index-under-test"}
    assert len(calls) == 2
    for call in calls:  # each continues the caller's trace, as the child of its span
        assert call.trace_id == trace_id
        assert call.parent_span_id == mine.get_span_context().span_id.to_bytes(8, "big")
        assert call.attributes["rpc.method"] == "Deduplicate"
        assert call.attributes["simhash.fingerprint_version"] == "v7"  # a new index's
    assert not [s for s in spans if "Health" in s.name]

    stored, duplicate = sorted(calls, key=lambda c: c.attributes["simhash.hits"])
    assert stored.attributes["simhash.hits"] == 0 and duplicate.attributes["simhash.hits"] == 1
    for call in calls:
        under = _descendants(spans, call)
        names = [s.name for s in under]
        assert "fingerprint" in names
        assert all(s.trace_id == trace_id for s in under)  # one trace
        # every drawer-scan call is an HBase span of its own, under a query batch of this call
        batches = [s for s in under if s.name == "near_many"]  # NearLookup.near_many, coalesced
        assert batches
        for batch in batches:
            (scans,) = [s for s in _descendants(spans, batch) if s.name == "HBase scan drawers"]
            assert scans.attributes["db.system"] == "hbase"
            assert str(scans.attributes["hbase.table"]).endswith("drawers")
            # the drawers' prefixes, grouped by region: one getScannerResults call each, a span each
            calls = [s for s in spans if s.parent_span_id == scans.span_id]
            assert len(calls) == scans.attributes["simhash.scans"] >= 1
            assert {s.name for s in calls} == {"HBase getScannerResults"}
            assert all(s.attributes["hbase.start_row"] <= s.attributes["hbase.stop_row"] for s in calls)
    stored_names = [s.name for s in _descendants(spans, stored)]
    assert {"claim", "HBase claims", "HBase write"} <= set(stored_names)
    duplicate_names = [s.name for s in _descendants(spans, duplicate)]
    assert "verify sketches" in duplicate_names  # the stored document's sketch, read and checked
    assert any(n.startswith("HBase get") and n.endswith("fp2docs") for n in duplicate_names)


def test_without_otel_variables_tracing_stays_off(monkeypatch, make_index):
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"):
        monkeypatch.delenv(name, raising=False)
    from simhash_server import tracing

    server = _served(make_index, tracing=True)
    try:
        assert server._tracer_provider is None and not tracing.on()
        assert tracing.carried() is None and tracing.span("x") is tracing.span("y")  # the one shared no-op
        with SimHashClient(f"127.0.0.1:{server.port}") as client:
            assert client.deduplicate("untraced-1", text=TEXT).stored
    finally:
        server.stop(grace=1)


def test_a_call_its_caller_did_not_sample_exports_nothing(receiver, make_index):
    """The caller's traceparent says "not sampled" (the default sampler follows it): the call is answered,
    and no span of its trace, nor any other, reaches the receiver."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    server = _served(make_index, tracing=True)
    caller = TracerProvider(sampler=ALWAYS_OFF).get_tracer("a calling service")
    try:
        with SimHashClient(f"127.0.0.1:{server.port}") as client, caller.start_as_current_span("request") as mine:
            assert mine.get_span_context().is_valid and not mine.get_span_context().trace_flags.sampled
            assert client.deduplicate("quiet-1", text=TEXT).stored
            assert client.query(text=TEXT + "（完）")
    finally:
        server.stop(grace=1)  # exports every span still queued, before it returns
    assert receiver.spans() == []
