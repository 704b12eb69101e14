"""The spans of a run through the OpenTelemetry SDK: OTLP JSON, or OTLP/HTTP to a collector.

The SDK is an optional extra (``pip install 'tidegate[otel]'``: ``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-http``); without it ``require_sdk`` raises one
``UsageError`` naming the extra. The spans are made by the SDK's own tracer (so what a
collector receives is what any instrumented program would send) with ids derived from the
run: the trace id from the run id, each span id from its stable key (``spans.SpanRecord``),
so exporting a run twice gives the same trace.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from tidegate import __version__
from tidegate.errors import UsageError
from tidegate.export.records import SpanRecord

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

EXTRA = "otel"
MISSING = (
    f"OpenTelemetry export needs the '{EXTRA}' extra: pip install 'tidegate[{EXTRA}]' "
    "(opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http)"
)
SCOPE = "tidegate.export"
TRACES_PATH = "/v1/traces"


class ExportFailed(Exception):
    """The collector did not accept the spans."""


def require_sdk() -> None:
    """Raise one UsageError naming the extra when the OpenTelemetry SDK is not installed."""
    try:
        import opentelemetry.exporter.otlp.proto.http.trace_exporter
        import opentelemetry.sdk.trace  # noqa: F401
    except ImportError:
        raise UsageError(MISSING) from None


def trace_id(run_id: str) -> int:
    return int.from_bytes(hashlib.sha256(f"tidegate-trace\0{run_id}".encode()).digest()[:16])


def span_id(run_id: str, key: str) -> int:
    value = int.from_bytes(hashlib.sha256(f"tidegate-span\0{run_id}\0{key}".encode()).digest()[:8])
    return value or 1  # 0 is the invalid span id


def sdk_spans(
    run_id: str,
    records: Sequence[SpanRecord],
    *,
    exporter: SpanExporter | None = None,
    instance: str | None = None,
) -> list[ReadableSpan]:
    """``records`` made into finished SDK spans of one trace, each also
    handed to ``exporter`` when one is given. ``instance`` is the resource's
    ``service.instance.id`` (default: the run id)."""
    require_sdk()
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    collected = InMemorySpanExporter()
    provider, ids = _provider(run_id, instance or run_id, (collected, exporter))
    tracer = provider.get_tracer(SCOPE, __version__)
    started: dict[str, Span] = {}
    for record in records:
        ids.next = span_id(run_id, record.key)
        started[record.key] = _start_span(tracer, run_id, record)
    for record in records:
        end = record.end_ms if record.end_ms is not None else record.start_ms
        started[record.key].end(end_time=max(end, record.start_ms) * 1_000_000)
    provider.shutdown()
    return list(collected.get_finished_spans())


def _provider(
    run_id: str, instance: str, exporters: Sequence[SpanExporter | None]
) -> tuple[TracerProvider, Any]:
    """A tracer provider whose ids are the run's (the span id is set on the returned id
    generator before each span starts), each span handed to every exporter given."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    class RunIds(IdGenerator):
        """The run's trace id; each span's id is set just before the span starts."""

        def __init__(self) -> None:
            self.next = 1

        def generate_trace_id(self) -> int:
            return trace_id(run_id)

        def generate_span_id(self) -> int:
            return self.next

    ids = RunIds()
    resource = Resource.create(
        {
            "service.name": "tidegate",
            "service.version": __version__,
            "service.instance.id": instance,
        }
    )
    # no atexit hook: the caller shuts it down (and a live export makes one a poll)
    provider = TracerProvider(resource=resource, id_generator=ids, shutdown_on_exit=False)
    for exporter in exporters:
        if exporter is not None:
            provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, ids


def _start_span(tracer: Tracer, run_id: str, record: SpanRecord) -> Span:
    """``record`` started as a span, with its events and status, under its parent."""
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import (
        NonRecordingSpan,
        SpanContext,
        SpanKind,
        Status,
        StatusCode,
        TraceFlags,
    )

    # the parent by its derived id: it need not be among the records exported (a live
    # export sends a phase before the run that holds it has ended)
    ctx = (
        trace.set_span_in_context(
            NonRecordingSpan(
                SpanContext(
                    trace_id(run_id),
                    span_id(run_id, record.parent),
                    is_remote=False,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
            )
        )
        if record.parent is not None
        else otel_context.Context()  # the root: nothing from the caller's context
    )
    kinds = {"internal": SpanKind.INTERNAL, "client": SpanKind.CLIENT}
    span = tracer.start_span(
        record.name,
        context=ctx,
        kind=kinds[record.kind],
        attributes=record.attributes,
        start_time=record.start_ms * 1_000_000,
    )
    for event in record.events:
        span.add_event(event.name, attributes=event.attributes, timestamp=event.at_ms * 1_000_000)
    codes = {"ok": StatusCode.OK, "error": StatusCode.ERROR}
    if record.status in codes:
        message = record.status_message if record.status == "error" else None
        span.set_status(Status(codes[record.status], message or None))
    return span


def otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The OTLP/JSON ``ExportTraceServiceRequest`` of ``spans``, as a collector's
    ``/v1/traces`` takes it: camelCase fields, enums as numbers, ids as hex."""
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data: dict[str, Any] = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    _hex_ids(data)
    return data


def _hex_ids(value: Any) -> None:
    """protobuf's JSON writes bytes as base64; OTLP/JSON writes trace and span ids as hex."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                value[key] = base64.b64decode(item).hex()
            else:
                _hex_ids(item)
    elif isinstance(value, list):
        for item in value:
            _hex_ids(item)


def traces_url(endpoint: str) -> str:
    """``--otlp``'s URL: a bare collector address gets OTLP's ``/v1/traces`` path, a URL
    with a path is used as given. UsageError for anything but http(s)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise UsageError(
            f"--otlp wants an http(s) URL such as http://127.0.0.1:4318, not {endpoint!r}"
        )
    if parts.path in ("", "/"):
        return parts._replace(path=TRACES_PATH).geturl()
    return endpoint


def send(spans: Sequence[ReadableSpan], endpoint: str, timeout_s: float = 10.0) -> str:
    """POST ``spans`` to the collector over OTLP/HTTP (protobuf), with the SDK's exporter;
    returns the URL. ExportFailed, with the exporter's reason, when it was not accepted."""
    require_sdk()
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    url = traces_url(endpoint)
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout_s)
    with _quiet_exporter() as reasons:
        try:
            result = exporter.export(spans)
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]
    if result is not SpanExportResult.SUCCESS:
        why = f": {reasons[0]}" if reasons else ""
        raise ExportFailed(f"the OTLP endpoint {url} did not accept the spans{why}")
    return url


@contextmanager
def _quiet_exporter() -> Iterator[list[str]]:
    """The exporter logs its failures (one per retry); keep them for the one error line."""
    reasons: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            reasons.append(record.getMessage().splitlines()[0] if record.getMessage() else "")

    logger = logging.getLogger("opentelemetry.exporter.otlp.proto.http")
    handler, propagate = Keep(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        yield reasons
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
