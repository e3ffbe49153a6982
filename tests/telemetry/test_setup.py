"""``[telemetry]`` at start-up: free when off (OpenTelemetry never imported by a turn), a
clear error naming the ``otel`` extra when a package is missing, the collector's headers
read from the environment without ever showing them, and the endpoint's rules."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bot.config import load_settings
from bot.config.telemetry import TelemetryConfig
from bot.errors import ConfigError
from bot.telemetry.setup import collector_headers

ROOT = Path(__file__).resolve().parents[2]

TURN_WITHOUT_TRACES = textwrap.dedent(
    """
    import asyncio, sys, tempfile
    from bot.app import App
    from bot.config import parse_settings
    from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
    from tests.fakes.channel import FakeChannel
    from tests.fakes.scripted_provider import ScriptedProvider, call, reply

    CONSOLE = ChannelRef(kind="console", alias="main")

    async def main():
        with tempfile.TemporaryDirectory() as folder:
            settings = parse_settings(
                {"state_dir": folder, "channels": {"console": {"main": {}}}},
                environ={}, require_provider=False,
            )
            channel = FakeChannel(CONSOLE)
            provider = ScriptedProvider(
                [reply("", call("calculator", {"expression": "6*7"})), reply("it is 42")]
            )
            async with App(settings, provider=provider, channels={"console.main": channel}):
                await channel.running.wait()
                await channel.host.deliver(IngressEnvelope(
                    channel=CONSOLE, message_id="m1", conversation_id="local",
                    sender=Sender(id="me"), text="six times seven?",
                    reply_target=DeliveryTarget(channel=CONSOLE, conversation_id="local"),
                    is_direct=True, addressed_to_bot=True,
                ))
                await channel.wait_for("it is 42")
        loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "bot.telemetry.")))
        print("loaded", loaded)

    asyncio.run(main())
    """
)


def test_a_turn_with_traces_off_imports_nothing_of_opentelemetry() -> None:
    done = subprocess.run(
        [sys.executable, "-c", TURN_WITHOUT_TRACES],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # the no-op spans only; neither the live spans nor the setup's lazy imports
    assert done.stdout.splitlines()[-1] == "loaded ['bot.telemetry.setup', 'bot.telemetry.spans']"


#: Runs ``hatchway run`` with the named modules made unimportable, as when they are not
#: installed (in this environment the OTLP exporter is not; with the extra installed the
#: test still means the same).
WITHOUT = textwrap.dedent(
    """
    import sys
    for module in sys.argv[1].split(","):
        sys.modules[module] = None
    from bot.cli import main
    sys.exit(main(["run", "--config", sys.argv[2]]))
    """
)


@pytest.mark.parametrize(
    ("blocked", "named"),
    [
        (
            ["opentelemetry.exporter.otlp.proto.http.trace_exporter"],
            "opentelemetry-exporter-otlp-proto-http is not installed",
        ),
        (
            ["opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"],
            "opentelemetry-sdk, opentelemetry-exporter-otlp-proto-http are not installed",
        ),
    ],
)
def test_traces_on_without_the_extra_stop_the_start_naming_it(
    tmp_path: Path, blocked: list[str], named: str
) -> None:
    config = tmp_path / "hatchway.toml"
    state = tmp_path / "state"
    config.write_text(
        textwrap.dedent(
            f"""
            state_dir = "{state}"
            [telemetry]
            enabled = true
            [providers.default]
            kind = "openai"
            base_url = "http://127.0.0.1:9/v1"
            model = "m"
            api_key_env = "HATCHWAY_TEST_KEY"
            """
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT, ",".join(blocked), str(config)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HATCHWAY_TEST_KEY": "k", "HOME": str(tmp_path)},
        check=False,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    [line] = [line for line in done.stderr.splitlines() if line.startswith("hatchway:")]
    assert line == (
        f"hatchway: configuration error: telemetry.enabled is true, but {named}: "
        "pip install 'hatchway[otel]' (or set telemetry.enabled = false)"
    )
    assert not (state / "hatchway.db").exists()  # stopped before the database was opened


def test_the_collectors_headers_come_from_the_variable_the_config_names() -> None:
    config = TelemetryConfig(enabled=True, headers_env="OTEL_AUTH")
    environ = {"OTEL_AUTH": "Authorization=Bearer%20s3cr3t-token , x-team = ops,"}
    assert collector_headers(config, environ) == {
        "authorization": "Bearer s3cr3t-token",
        "x-team": "ops",
    }
    assert collector_headers(config, {}) == {}
    assert collector_headers(TelemetryConfig(headers_env=""), environ) == {}


def test_a_malformed_headers_variable_is_named_without_its_value() -> None:
    config = TelemetryConfig(enabled=True, headers_env="OTEL_AUTH")
    with pytest.raises(ConfigError) as caught:
        collector_headers(config, {"OTEL_AUTH": "authorization=Bearer x,s3cr3t-token"})
    message = str(caught.value)
    assert message == (
        "telemetry.headers_env: the variable OTEL_AUTH must hold key=value pairs separated "
        "by commas; entry 2 is not one"
    )
    assert "s3cr3t" not in message


@pytest.mark.parametrize(
    ("endpoint", "says"),
    [
        ("https://ops:hunter2@collector.example/v1/traces", "credentials do not belong"),
        ("collector.example:4318", "must be an http(s) URL with a host"),
        ("grpc://collector.example:4317", "must be an http(s) URL with a host"),
    ],
)
def test_an_endpoint_that_cannot_take_traces_is_refused_naming_the_key(
    tmp_path: Path, endpoint: str, says: str
) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text(f'[telemetry]\nenabled = true\nendpoint = "{endpoint}"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(config, environ={}, require_provider=False)
    message = str(caught.value)
    assert "telemetry.endpoint" in message
    assert says in message
    assert "hunter2" not in message


def test_traces_are_off_unless_asked_for(tmp_path: Path) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text("")
    settings = load_settings(config, environ={}, require_provider=False)
    assert settings.telemetry == TelemetryConfig()
    assert settings.telemetry.enabled is False
    assert settings.telemetry.sample_ratio == 1.0
