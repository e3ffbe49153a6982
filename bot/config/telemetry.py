"""``[telemetry]``: OpenTelemetry traces of turns, sent over OTLP/HTTP (protobuf).

Off by default. Turning it on needs the ``otel`` extra (``pip install 'hatchway[otel]'``);
:mod:`bot.telemetry.setup` reads this table at start-up. ``endpoint`` is the collector's
traces URL (OTLP/HTTP's ``/v1/traces``); credentials never go in it: the collector's headers
(an API key, usually) are read from the environment variable ``headers_env`` names, as
``key=value`` pairs separated by commas. ``sample_ratio`` is the share of turns traced
(each turn's spans are kept or dropped together). See docs/operations.md, "Traces".
"""

from __future__ import annotations

from urllib.parse import urlsplit

from pydantic import Field, field_validator

from bot.config_model import ConfigModel

DEFAULT_ENDPOINT = "http://127.0.0.1:4318/v1/traces"


class TelemetryConfig(ConfigModel):
    """``[telemetry]``; see the module docstring."""

    enabled: bool = False
    endpoint: str = DEFAULT_ENDPOINT
    headers_env: str = "HATCHWAY_OTEL_HEADERS"
    service_name: str = Field(default="hatchway", min_length=1, max_length=200)
    sample_ratio: float = Field(default=1.0, ge=0.0, le=1.0)
    export_timeout_s: float = Field(default=10.0, gt=0, le=300)

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.username is not None or parts.password is not None:
            raise ValueError(
                "credentials do not belong in the URL (it is logged): put them in the "
                "variable headers_env names, e.g. authorization=Bearer%20<token>"
            )
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "must be an http(s) URL with a host; OTLP/HTTP collectors take traces at "
                f"e.g. {DEFAULT_ENDPOINT}"
            )
        return value
