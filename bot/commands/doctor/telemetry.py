"""The doctor's checks of ``[telemetry]`` (only when it is enabled): the packages of the
``otel`` extra are installed, and the collector takes traces at ``telemetry.endpoint`` with
the headers ``telemetry.headers_env`` names.

The collector is asked with an empty OTLP/HTTP export (a valid request holding no span: a
collector answers it 200), so nothing shows up in its traces. The headers go only to that
endpoint and are never printed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult, Outcome
from bot.config.telemetry import TelemetryConfig
from bot.providers.endpoint import shown_url
from bot.telemetry.setup import EXTRA_HINT, collector_headers, missing_packages

if TYPE_CHECKING:
    import aiohttp

#: How long the collector gets to answer.
TIMEOUT_S = 10.0


def packages_check() -> CheckResult:
    """Whether the daemon could start with traces on."""
    missing = missing_packages()
    if missing:
        return CheckResult(
            name="telemetry",
            ok=False,
            detail=f"telemetry.enabled is true, but {', '.join(missing)} not installed",
            fix=f"{EXTRA_HINT}, or set telemetry.enabled = false",
        )
    return CheckResult(name="telemetry", ok=True, detail="the otel extra is installed")


async def collector_check(config: TelemetryConfig, http: aiohttp.ClientSession) -> Outcome:
    """An empty export to the collector: accepted, or why not."""
    import aiohttp

    where = shown_url(config.endpoint)
    headers = {**collector_headers(config), "content-type": "application/x-protobuf"}
    async with http.post(
        config.endpoint,
        data=b"",
        headers=headers,
        timeout=aiohttp.ClientTimeout(total=TIMEOUT_S),
        allow_redirects=False,
    ) as response:
        status = response.status
    sampled = f"{config.sample_ratio:.0%} of turns sampled"
    if 200 <= status < 300:
        return True, f"the collector at {where} takes traces ({sampled})", ""
    if status in (401, 403):
        return (
            False,
            f"the collector at {where} refused the headers (HTTP {status})",
            f"check the variable {config.headers_env} (telemetry.headers_env)",
        )
    if status in (404, 405):
        return (
            False,
            f"nothing takes OTLP traces at {where} (HTTP {status})",
            "check telemetry.endpoint: an OTLP/HTTP collector's traces URL, e.g. "
            "http://127.0.0.1:4318/v1/traces",
        )
    return False, f"the collector at {where} answered HTTP {status}", "check the collector"
