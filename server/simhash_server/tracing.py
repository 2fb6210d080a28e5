"""OpenTelemetry traces of each call, exported by OTLP: off unless the standard ``OTEL_*`` variables ask.

Each RPC is a server span made by opentelemetry-instrumentation-grpc's interceptor, continuing the caller's
W3C ``traceparent``; the spans made here are its children: fingerprinting, each HBase call, the claim steps,
the sketch check.  Tracing is on when ``OTEL_TRACES_EXPORTER`` names an exporter or an OTLP endpoint is set
(``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``_TRACES_ENDPOINT``), and ``OTEL_SDK_DISABLED`` is not ``true``; the
SDK then reads every other standard variable itself (sampler, headers, batching).  Off, OpenTelemetry is
never imported, and ``span`` hands out one shared no-op context: an untraced server pays a global read per
span it would make.  On, a call the sampler leaves out skips the instrumentation (``sampled``), and spans are
made only under a recording one, so an unsampled call costs about what an untraced one does.

A process has one tracer: the last server started with tracing owns it (``start``/``stop``).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "annotate",
    "bound",
    "carried",
    "linked_span",
    "on",
    "record",
    "sampled",
    "span",
    "start",
    "stop",
    "use",
    "wanted",
]

R = TypeVar("R")
EXPORTERS = ("otlp", "console")  # OTEL_TRACES_EXPORTER's values this server knows
_NO_SPAN = contextlib.nullcontext()
_tracer: Any = None  # an opentelemetry Tracer while tracing is on
_provider: Any = None
_trace: Any = None  # the opentelemetry.trace and .propagate modules, imported once tracing is on
_propagate: Any = None


def wanted(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` configures tracing (ValueError naming the variable if it asks for what we lack)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = _exporters(environ)
    if exporters is None:  # unset: OTLP when an endpoint is given
        endpoint = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        exporters = ["otlp"] if endpoint else []
    if "otlp" in exporters:
        protocol = environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL") or environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        if protocol and protocol.strip() != "grpc":
            raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL: this server exports OTLP over grpc only, not {protocol!r}")
    return bool(exporters)


def _exporters(environ: Mapping[str, str]) -> list[str] | None:
    value = environ.get("OTEL_TRACES_EXPORTER")
    if value is None or not value.strip():
        return None
    names = [name.strip().lower() for name in value.split(",") if name.strip() and name.strip().lower() != "none"]
    unknown = [name for name in names if name not in EXPORTERS]
    if unknown:
        raise ValueError(f"OTEL_TRACES_EXPORTER: unknown exporter {unknown[0]!r} (known: {', '.join(EXPORTERS)}, none)")
    return names


def start(environ: Mapping[str, str], version: str) -> Any:
    """Turn tracing on as ``environ`` says (the SDK reads the rest from the process's environment); returns
    the TracerProvider, or None when ``environ`` configures no tracing."""
    if not wanted(environ):
        return None
    try:
        from opentelemetry.sdk.resources import SERVICE_NAME, Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError as exc:  # the server extra brings them; a hand-made environment may not
        raise ValueError(f"OTEL_* variables ask for tracing, but OpenTelemetry's SDK is not installed: {exc}") from exc
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: "simhash-index"}))
    provider = TracerProvider(resource=resource)  # the sampler: OTEL_TRACES_SAMPLER (parent-based by default)
    for name in _exporters(environ) or ["otlp"]:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        else:
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
    use(provider, version)
    return provider


def use(provider: Any, version: str = "") -> None:
    """Trace with ``provider``, an opentelemetry TracerProvider (``start`` makes one from OTEL_*; a program
    that embeds the server may hand over its own); ``stop`` shuts it down."""
    global _propagate, _trace, _tracer, _provider
    from opentelemetry import propagate, trace

    if _provider is not None and _provider is not provider:
        _provider.shutdown()

    _propagate, _trace, _provider, _tracer = (
        propagate,
        trace,
        provider,
        provider.get_tracer("simhash_server", version or None),
    )


def stop() -> None:
    """Export what is queued and turn tracing off."""
    global _tracer, _provider
    provider, _provider, _tracer = _provider, None, None
    if provider is not None:
        provider.shutdown()


def span(name: str, attributes: Mapping[str, Any] | None = None) -> contextlib.AbstractContextManager[Any]:
    """A child span of the current one for the block: a no-op while tracing is off, and under no recording
    span (an unsampled call's work, or work of no call)."""
    if _tracer is None or not _trace.get_current_span().is_recording():
        return _NO_SPAN
    return _tracer.start_as_current_span(name, attributes=attributes)


def on() -> bool:
    """Whether spans are being made here (so that a caller times its work for ``record`` only then)."""
    return _tracer is not None and _trace.get_current_span().is_recording()


def record(name: str, start_ns: int, end_ns: int, attributes: Mapping[str, Any]) -> None:
    """A finished child span of the current one, for work the caller timed itself (epoch nanoseconds): one
    of several requests in flight at once on one thread."""
    if on():
        _tracer.start_span(name, start_time=start_ns, attributes=attributes).end(end_time=end_ns)


def sampled(metadata: Iterable[tuple[str, str | bytes]] | None, name: str) -> bool:
    """Whether the sampler records a call that sent ``metadata``, asked before the instrumentation makes its
    span, so that an unsampled call skips it altogether (it cost a Query 25% more CPU, to record nothing).
    Under the caller's trace context this is the decision the SDK makes for the call's span; without one,
    False only when the sampler records no new trace at all (always_off, a ratio of 0)."""
    if _provider is None:
        return False
    parent = _propagate.extract({key: value for key, value in metadata or () if isinstance(value, str)})
    caller = _trace.get_current_span(parent).get_span_context()
    trace_id = caller.trace_id if caller.is_valid else 0  # a ratio sampler keeps trace id 0 unless its ratio is 0
    decision = _provider.sampler.should_sample(parent, trace_id, name, _trace.SpanKind.SERVER).decision
    return decision.is_recording()


def annotate(**attributes: Any) -> None:
    """Set attributes on the current span (the call's own, in a handler)."""
    if _tracer is None:
        return
    current = _trace.get_current_span()
    if current.is_recording():
        current.set_attributes({f"simhash.{key}": value for key, value in attributes.items()})


def bound(call: Callable[..., R]) -> Callable[..., R]:
    """``call``, to run in another thread within the caller's context (so its spans join the caller's
    trace); ``call`` itself while tracing is off."""
    return call if _tracer is None else functools.partial(contextvars.copy_context().run, call)


def carried() -> contextvars.Context | None:
    """The caller's context, for work another thread does on its behalf (None while tracing is off)."""
    return None if _tracer is None else contextvars.copy_context()


@contextlib.contextmanager
def linked_span(
    name: str, contexts: Sequence[contextvars.Context | None], attributes: Mapping[str, Any]
) -> Iterator[Any]:
    """A span for work done at once for several calls (a coalesced batch): the child of the first call's
    span, linked to the others', so each call's trace leads to it."""
    if _tracer is None:
        yield None
        return
    trace = _trace
    callers = [ctx.run(trace.get_current_span) for ctx in contexts if ctx is not None]
    # the parent: the first caller recording its call, so that a sampled call keeps its HBase children when
    # an unsampled one happens to lead the batch; none recording: nothing to record
    recording = [c for c in callers if c.is_recording()]
    if not recording:
        yield None
        return
    links = [
        trace.Link(c.get_span_context()) for c in callers if c is not recording[0] and c.get_span_context().is_valid
    ]
    parent = trace.set_span_in_context(recording[0])
    with _tracer.start_as_current_span(name, context=parent, links=links, attributes=attributes) as batch:
        yield batch
