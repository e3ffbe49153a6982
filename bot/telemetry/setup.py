"""Turning traces on at start-up and off at the stop (``[telemetry]``).

:func:`install` imports OpenTelemetry only when ``telemetry.enabled`` is true: the SDK, and
the OTLP/HTTP exporter (protobuf) unless the caller hands it another exporter (tests, the
bench). The packages come with the ``otel`` extra; when one is missing the start-up fails at
once with :class:`~bot.errors.ConfigError` saying ``pip install 'hatchway[otel]'``, rather
than running without the traces the configuration asked for.

Spans are batched (the SDK's ``BatchSpanProcessor``: a thread of its own exports them, so an
unreachable collector never holds a turn up) and sampled per trace (``sample_ratio``; a
turn's spans are all kept or all dropped). The collector's headers (an API key, usually)
come from the environment variable ``headers_env`` names, as ``key=value`` pairs separated
by commas (the OTLP convention, values percent-encoded): they are a secret, so no error and
no log line ever shows a value.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit, urlunsplit

import structlog

from bot.config import Settings
from bot.config.telemetry import TelemetryConfig
from bot.errors import ConfigError
from bot.telemetry import spans

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

log = structlog.get_logger(__name__)

EXTRA_HINT = "pip install 'hatchway[otel]'"
#: The modules traces need, with the distribution each comes from.
SDK_MODULES = {
    "opentelemetry.trace": "opentelemetry-api",
    "opentelemetry.sdk.trace": "opentelemetry-sdk",
}
OTLP_MODULE = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
OTLP_DISTRIBUTION = "opentelemetry-exporter-otlp-proto-http"

_provider: TracerProvider | None = None


def missing_packages(*, exporter: bool = True) -> list[str]:
    """The distributions of the ``otel`` extra that cannot be imported (the OTLP exporter's
    only when ``exporter``)."""
    wanted = dict(SDK_MODULES)
    if exporter:
        wanted[OTLP_MODULE] = OTLP_DISTRIBUTION
    missing = []
    for module, distribution in wanted.items():
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(distribution)
    return missing


def collector_headers(
    config: TelemetryConfig, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The headers sent to the collector, read from ``config.headers_env`` (none when it is
    unset or empty). :class:`ConfigError` for a malformed value, naming the variable and
    the entry, never what it holds."""
    raw = Settings.secret(config.headers_env, environ) if config.headers_env else None
    headers: dict[str, str] = {}
    if raw is None:
        return headers
    for number, entry in enumerate(raw.split(","), start=1):
        if not entry.strip():
            continue
        key, sep, value = entry.partition("=")
        key = key.strip()
        if not sep or not key or any(c.isspace() for c in key):
            raise ConfigError(
                f"telemetry.headers_env: the variable {config.headers_env} must hold "
                f"key=value pairs separated by commas; entry {number} is not one"
            )
        headers[key.lower()] = unquote(value.strip())
    return headers


def install(
    config: TelemetryConfig,
    *,
    exporter: Any = None,
    environ: Mapping[str, str] | None = None,
) -> bool:
    """Turn traces on as ``config`` says (nothing when it is disabled; False then).
    ``exporter`` replaces the OTLP exporter (a ``SpanExporter``: an in-memory one in tests).
    Raises :class:`ConfigError` when a package of the ``otel`` extra is missing or the
    headers' variable is malformed."""
    global _provider
    if not config.enabled:
        return False
    missing = missing_packages(exporter=exporter is None)
    if missing:
        raise ConfigError(
            f"telemetry.enabled is true, but {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed: {EXTRA_HINT} "
            "(or set telemetry.enabled = false)"
        )
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    from bot.telemetry.live import Live

    otlp = exporter is None
    if otlp:
        exporter = _otlp_exporter(config, collector_headers(config, environ))
    shutdown()  # a second App in one process (tests) replaces the first one's tracer
    provider = TracerProvider(
        resource=Resource.create({"service.name": config.service_name}),
        sampler=ParentBased(TraceIdRatioBased(config.sample_ratio)),
    )
    provider.add_span_processor(BatchSpanProcessor(exporter))
    _provider = provider
    spans._live = Live(provider.get_tracer("hatchway"))
    log.info(
        "telemetry_started",
        endpoint=_shown(config.endpoint) if otlp else "",
        exporter=type(exporter).__name__,
        sample_ratio=config.sample_ratio,
        service_name=config.service_name,
    )
    return True


def _shown(url: str) -> str:
    """``url`` as logged: no query or fragment (a collector may take a key there)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _otlp_exporter(config: TelemetryConfig, headers: dict[str, str]) -> Any:
    module = importlib.import_module(OTLP_MODULE)
    return module.OTLPSpanExporter(
        endpoint=config.endpoint, headers=headers, timeout=config.export_timeout_s
    )


def shutdown() -> None:
    """Turn traces off: the spans still batched are exported (within the exporter's own
    timeout) and the instrumentation points are constants again."""
    global _provider
    spans._live = None
    provider, _provider = _provider, None
    if provider is not None:
        provider.shutdown()
