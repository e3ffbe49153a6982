"""Malformed input at the daemon's HTTP server: every bad header, body, encoding, size, type,
method or path gets a 4xx and exactly one log line without a traceback.

The real :class:`~bot.ops.web.HttpServer` serves the health routes and a Slack channel in HTTP
(Events API) mode, driven by the real slack-bolt against the loopback Slack fake; requests
are written as raw bytes over loopback.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.config import ServerConfig
from bot.metrics import Metrics
from bot.ops.health import HealthRoutes, add_health_routes
from bot.ops.web import MAX_BODY_BYTES, HttpServer
from bot.store import Store
from tests.fakes import slack_setup
from tests.fakes.channel_health import serving
from tests.fakes.recording_host import RecordingHost
from tests.fakes.slack_server import FakeSlack, event_callback, message_event, signed_headers
from tests.ops.http_probe import (
    Header,
    LogLines,
    assert_one_refusal,
    logged_lines,
    raw_request,
    send_raw,
)
from tests.ops.test_health import FakeDaemonState

EVENTS = "/slack/events"
JSON_TYPE: Header = ("Content-Type", b"application/json")
FORM_TYPE: Header = ("Content-Type", b"application/x-www-form-urlencoded")
OVERSIZED = b"x" * (MAX_BODY_BYTES + 1)


@dataclass(frozen=True, slots=True)
class Daemon:
    port: int
    host: RecordingHost
    log: LogLines


@pytest.fixture(autouse=True)
def _loopback_without_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def log() -> Iterator[LogLines]:
    with logged_lines() as lines:
        yield lines


@pytest.fixture
async def daemon(tmp_path: Path, log: LogLines) -> AsyncIterator[Daemon]:
    """The HTTP server with health routes and a running Slack channel in HTTP mode."""
    async with (
        FakeSlack(slack_setup.BOT_TOKEN, slack_setup.APP_TOKEN) as slack,
        await Store.open(tmp_path / "hatchway.db") as store,
    ):
        server = HttpServer(ServerConfig(enabled=True, host="127.0.0.1", port=0))
        add_health_routes(server.app, HealthRoutes(FakeDaemonState(), Metrics()))
        channel = slack_setup.channel_for(slack, store, web_app=server.app, mode="http")
        host = RecordingHost()
        await server.start()
        assert server.port is not None
        try:
            async with serving(channel, host):
                log.new()  # start-up lines
                yield Daemon(port=server.port, host=host, log=log)
        finally:
            await server.aclose()


def _signed(body: bytes, *, secret: str = slack_setup.SECRET, **kwargs: int) -> list[Header]:
    """Slack's headers for ``body`` (its content type included), signed with ``secret``."""
    headers = signed_headers(secret, body.decode(), **kwargs)
    return [(name, value.encode()) for name, value in headers.items()]


EVENT = json.dumps(event_callback(message_event("hi", channel="D0001", ts="4.1"))).encode()
NOW = str(int(time.time())).encode()

CASES: dict[str, tuple[bytes, int]] = {
    # headers the client libraries refuse to send
    "header of invalid UTF-8": (
        raw_request("GET", "/healthz", headers=[("X-Note", b"\xff\xfe")]),
        400,
    ),
    "header of non-ASCII UTF-8": (
        raw_request("GET", "/healthz", headers=[("X-Note", "é".encode())]),
        400,
    ),
    "header with a control byte": (
        raw_request("GET", "/healthz", headers=[("X-Note", b"a\x01b")]),
        400,
    ),
    "header line over 8 KiB": (
        raw_request("GET", "/healthz", headers=[("X-Big", b"a" * 20_000)]),
        400,
    ),
    "Slack signature of invalid UTF-8": (
        raw_request(
            "POST",
            EVENTS,
            headers=[
                JSON_TYPE,
                ("X-Slack-Request-Timestamp", NOW),
                ("X-Slack-Signature", b"v0=\xff"),
            ],
            body=EVENT,
        ),
        400,
    ),
    "duplicate Content-Type": (
        raw_request("POST", EVENTS, headers=[JSON_TYPE, JSON_TYPE], body=EVENT),
        400,
    ),
    "bad Content-Length": (raw_request("POST", EVENTS, headers=[("Content-Length", b"abc")]), 400),
    # request line
    "path of invalid UTF-8": (raw_request("GET", b"/health\xffz"), 400),
    "not HTTP at all": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 32, 400),
    "unknown path": (raw_request("GET", "/%ff%fe/admin"), 404),
    "wrong method on a health route": (
        raw_request("POST", "/healthz", headers=[JSON_TYPE], body=b"{}"),
        405,
    ),
    "wrong method on the events route": (raw_request("GET", EVENTS), 405),
    # bodies
    "wrong content type": (
        raw_request("POST", EVENTS, headers=[("Content-Type", b"text/plain")], body=EVENT),
        415,
    ),
    "no content type": (raw_request("POST", EVENTS, body=EVENT), 415),
    "charset other than UTF-8": (
        raw_request(
            "POST",
            EVENTS,
            headers=[("Content-Type", b"application/json; charset=latin-1")],
            body=EVENT,
        ),
        415,
    ),
    "body of invalid UTF-8": (
        raw_request("POST", EVENTS, headers=[JSON_TYPE], body=b'{"a": "\xff"}'),
        400,
    ),
    "body that is not JSON": (
        raw_request("POST", EVENTS, headers=[JSON_TYPE], body=b"{not json"),
        400,
    ),
    "a JSON array": (raw_request("POST", EVENTS, headers=[JSON_TYPE], body=b"[1, 2]"), 400),
    "JSON nested past the recursion limit": (
        raw_request("POST", EVENTS, headers=[JSON_TYPE], body=b"[" * 100_000),
        400,
    ),
    "body over the size limit": (
        raw_request("POST", EVENTS, headers=[JSON_TYPE], body=OVERSIZED),
        413,
    ),
    "chunked body over the size limit": (
        raw_request(
            "POST",
            EVENTS,
            headers=[JSON_TYPE, ("Transfer-Encoding", b"chunked")],
            body=b"%x\r\n" % len(OVERSIZED) + OVERSIZED + b"\r\n0\r\n\r\n",
        ),
        413,
    ),
    # Slack bodies that bolt would crash on, unsigned or badly signed
    "form payload that is not JSON": (
        raw_request("POST", EVENTS, headers=[FORM_TYPE], body=b"payload=notjson"),
        401,
    ),
    "form body that looks like JSON": (
        raw_request("POST", EVENTS, headers=[FORM_TYPE], body=b"{garbage"),
        401,
    ),
    "timestamp that is not a number": (
        raw_request(
            "POST",
            EVENTS,
            headers=[
                JSON_TYPE,
                ("X-Slack-Request-Timestamp", b"abc"),
                ("X-Slack-Signature", b"v0=00"),
            ],
            body=EVENT,
        ),
        401,
    ),
    "timestamp too long for int()": (
        raw_request(
            "POST",
            EVENTS,
            headers=[
                JSON_TYPE,
                ("X-Slack-Request-Timestamp", b"9" * 5000),
                ("X-Slack-Signature", b"v0=00"),
            ],
            body=EVENT,
        ),
        401,
    ),
    "signature from another secret": (
        raw_request("POST", EVENTS, headers=_signed(EVENT, secret="not-the-secret"), body=EVENT),
        401,
    ),
    "the signature sent twice": (
        raw_request(
            "POST",
            EVENTS,
            headers=[*_signed(EVENT), ("X-Slack-Signature", b"v0=" + b"0" * 64)],
            body=EVENT,
        ),
        401,
    ),
    "stale signature": (
        raw_request("POST", EVENTS, headers=_signed(EVENT, timestamp=1_600_000_000), body=EVENT),
        401,
    ),
}


@pytest.mark.parametrize(("request_bytes", "status"), CASES.values(), ids=CASES.keys())
async def test_malformed_requests_get_a_4xx_and_one_log_line(
    daemon: Daemon, request_bytes: bytes, status: int
) -> None:
    response = await send_raw(daemon.port, request_bytes)
    assert response.status == status
    assert_one_refusal(await daemon.log.settle(), status)
    assert daemon.host.envelopes == []


async def test_well_formed_requests_pass_the_screen_without_a_log_line(daemon: Daemon) -> None:
    health = await send_raw(daemon.port, raw_request("GET", "/healthz"))
    assert health.status == 200
    signed = await send_raw(
        daemon.port, raw_request("POST", EVENTS, headers=_signed(EVENT), body=EVENT)
    )
    assert signed.status == 200
    (envelope,) = await daemon.host.wait_envelopes(1)
    assert envelope.text == "hi"
    assert [line for line in daemon.log.new() if line["event"] == "http_request_refused"] == []


async def test_a_refusal_log_line_carries_no_header_value(daemon: Daemon) -> None:
    secretish = b"xoxb-1111-2222-not-for-the-log\xff"
    request = raw_request("GET", "/healthz", headers=[("Authorization", b"Bearer " + secretish)])
    assert (await send_raw(daemon.port, request)).status == 400
    line = assert_one_refusal(await daemon.log.settle(), 400)
    assert line["reason"] == "header Authorization is not ASCII"
    assert "not-for-the-log" not in json.dumps(line)
