"""Logging and tracing shared by the services.

Tracing follows one job register through api -> broker -> worker -> planner: the trace context
(W3C traceparent) rides in the event's metadata in the log, in NATS headers on EVENTS and EVALS
messages, and in the plan request. Exporters are chosen by the standard OTEL_TRACES_EXPORTER
variable ("console" or "otlp"); by default nothing is exported.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()
log = logging.getLogger("drover.telemetry")


def setup_logging(service: str) -> None:
    logging.basicConfig(
        level=os.environ.get("DROVER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s {service} %(levelname)s %(name)s: %(message)s",
    )
    setup_tracing(service)


def setup_tracing(service: str) -> None:
    exporter = os.environ.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
    if exporter in ("", "none"):
        return
    name = os.environ.get("OTEL_SERVICE_NAME", f"drover-{service}")
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    if exporter == "console":
        provider.add_span_processor(
            SimpleSpanProcessor(
                ConsoleSpanExporter(out=sys.stdout, formatter=lambda span: span.to_json(indent=None) + "\n")
            )
        )
    elif exporter == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[import-not-found]
                OTLPSpanExporter,
            )
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        except ImportError:
            log.warning(
                "OTEL_TRACES_EXPORTER=otlp needs the opentelemetry-exporter-otlp package; not exporting"
            )
    else:
        log.warning("unknown OTEL_TRACES_EXPORTER %r; not exporting", exporter)
    trace.set_tracer_provider(provider)


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


def inject(carrier: dict[str, Any] | None = None, context: Context | None = None) -> dict[str, Any]:
    """The current (or given) trace context as headers/metadata (`traceparent`)."""
    out: dict[str, Any] = dict(carrier or {})
    _PROPAGATOR.inject(out, context=context)
    return out


def extract(carrier: Mapping[str, Any] | None) -> Context:
    return _PROPAGATOR.extract(dict(carrier or {}))
