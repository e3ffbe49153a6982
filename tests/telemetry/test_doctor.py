"""``hatchway doctor`` with ``[telemetry]`` on: the otel extra's packages, and the collector
asked with an empty export over loopback (its headers from the environment, never printed)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from bot.cli import build_parser
from bot.telemetry.setup import OTLP_MODULE
from tests.fakes.otlp_collector import OtlpCollector

TOKEN = "t0k-collector-secret"
#: the provider is not what these tests check: its line fails, quickly (nothing listens)


def config_file(tmp_path: Path, **telemetry: object) -> Path:
    lines = "\n".join(f"{key} = {json.dumps(value)}" for key, value in telemetry.items())
    path = tmp_path / "hatchway.toml"
    path.write_text(
        f"""
state_dir = "{tmp_path / "state"}"

[providers.default]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "gpt-4o-mini"
api_key_env = "DOCTOR_TEST_KEY"

[telemetry]
{lines}
""",
        encoding="utf-8",
    )
    return path


async def doctor(config: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    args = build_parser().parse_args(["doctor", "--config", str(config)])
    await args.handler(args)
    out = capsys.readouterr().out
    assert TOKEN not in out
    return [line for line in out.splitlines() if "telemetry" in line or "fix:" in line]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCTOR_TEST_KEY", "sk-test")


async def test_the_collector_takes_an_empty_export_with_the_configured_headers(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TEST_HEADERS", f"authorization=Bearer%20{TOKEN}")
    async with OtlpCollector(required={"authorization": f"Bearer {TOKEN}"}) as collector:
        config = config_file(
            tmp_path,
            enabled=True,
            endpoint=collector.endpoint,
            headers_env="OTEL_TEST_HEADERS",
            sample_ratio=0.25,
        )
        lines = await doctor(config, capsys)
    assert (
        f"✓ telemetry collector: the collector at {collector.endpoint} takes traces "
        "(25% of turns sampled)"
    ) in lines
    [export] = collector.requests
    assert (export.content_type, export.body) == ("application/x-protobuf", b"")


async def test_a_collector_that_refuses_the_headers_names_their_variable(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_TEST_HEADERS", "authorization=Bearer%20wrong")
    async with OtlpCollector(required={"authorization": f"Bearer {TOKEN}"}) as collector:
        config = config_file(
            tmp_path,
            enabled=True,
            endpoint=collector.endpoint,
            headers_env="OTEL_TEST_HEADERS",
        )
        lines = await doctor(config, capsys)
    index = lines.index(
        f"✗ telemetry collector: the collector at {collector.endpoint} refused the headers "
        "(HTTP 401)"
    )
    assert (
        lines[index + 1] == "    fix: check the variable OTEL_TEST_HEADERS (telemetry.headers_env)"
    )
    assert collector.refused == 1
    assert "wrong" not in "\n".join(lines)


async def test_a_url_where_nothing_takes_traces_names_the_endpoint_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async with OtlpCollector() as collector:
        wrong = collector.endpoint.replace("/v1/traces", "/v1/logs")
        lines = await doctor(config_file(tmp_path, enabled=True, endpoint=wrong), capsys)
    index = lines.index(f"✗ telemetry collector: nothing takes OTLP traces at {wrong} (HTTP 404)")
    assert lines[index + 1].startswith("    fix: check telemetry.endpoint")
    assert collector.requests == []


async def test_without_the_extra_the_doctor_says_what_to_install(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, OTLP_MODULE, None)  # as when it is not installed
    async with OtlpCollector() as collector:
        config = config_file(tmp_path, enabled=True, endpoint=collector.endpoint)
        lines = await doctor(config, capsys)
    index = lines.index(
        "✗ telemetry: telemetry.enabled is true, but opentelemetry-exporter-otlp-proto-http "
        "not installed"
    )
    assert lines[index + 1] == (
        "    fix: pip install 'hatchway[otel]', or set telemetry.enabled = false"
    )


async def test_with_traces_off_the_doctor_checks_nothing_of_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = await doctor(config_file(tmp_path, enabled=False), capsys)
    assert [line for line in lines if "telemetry" in line] == []
