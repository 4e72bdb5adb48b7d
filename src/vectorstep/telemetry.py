"""OpenTelemetry (optional): turning tracing on, and carrying the current trace context out.

Turned on by `telemetry.otlp_endpoint` or the standard `OTEL_EXPORTER_OTLP_ENDPOINT` /
`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` variables; the spans themselves come from `telemetry_spans`.
Nothing of OpenTelemetry is imported until tracing is on: a process that does not trace does not
pay for it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, MutableMapping

from vectorstep.spec.service import TelemetrySpec

log = logging.getLogger(__name__)
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
TRACER_NAME = "vectorstep"
_configured: list[bool] = []
_active: list[bool] = []


def wanted(endpoint: str | None, environ: Mapping[str, str] | None = None) -> bool:
    environ = os.environ if environ is None else environ
    return bool(endpoint) or any(environ.get(name) for name in ENDPOINT_VARIABLES)


def configure(settings: TelemetrySpec) -> bool:
    """Export spans over OTLP/HTTP when asked to; True when tracing is on. Done once per process."""
    endpoint, service_name, headers = settings.otlp_endpoint, settings.service_name, settings.headers
    if not wanted(endpoint):
        return False
    if _configured:
        return True
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: PLC0415
    from opentelemetry.sdk.resources import Resource  # noqa: PLC0415
    from opentelemetry.sdk.trace import TracerProvider  # noqa: PLC0415
    from opentelemetry.sdk.trace.export import BatchSpanProcessor  # noqa: PLC0415

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    exporter = OTLPSpanExporter(endpoint=_traces_url(endpoint), headers=dict(headers) or None)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    from opentelemetry import trace  # noqa: PLC0415

    trace.set_tracer_provider(provider)
    for handler in logging.getLogger().handlers:
        handler.addFilter(TraceIdFilter())
    _configured.append(True)
    activate()
    return True


def activate() -> None:
    """From now on, outgoing requests carry the current trace context."""
    _active.append(True)


def _traces_url(endpoint: str | None) -> str | None:
    if not endpoint:
        return None  # the exporter reads the OTEL_* variables itself
    return endpoint if endpoint.rstrip("/").endswith("/v1/traces") else endpoint.rstrip("/") + "/v1/traces"


def inject(carrier: MutableMapping[str, str]) -> None:
    """Add the current trace context (`traceparent`, `tracestate`) to outgoing headers or parameters."""
    if not _active:
        return
    from opentelemetry import propagate  # noqa: PLC0415

    propagate.inject(carrier)


class TraceIdFilter(logging.Filter):
    """Log lines written while a span is current name its trace."""

    def filter(self, record: logging.LogRecord) -> bool:
        from opentelemetry import trace  # noqa: PLC0415 - installed only once tracing is on

        span_context = trace.get_current_span().get_span_context()
        if span_context.is_valid and not getattr(record, "trace_id", None):
            trace_id = format(span_context.trace_id, "032x")
            record.trace_id = trace_id
            record.msg = f"{record.msg} [trace {trace_id}]"
        return True
