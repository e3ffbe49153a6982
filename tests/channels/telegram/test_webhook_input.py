"""Malformed input at the Telegram webhook: a secret header holding non-ASCII or invalid UTF-8
bytes is just a wrong secret (403), and every bad header, body, encoding, size, type, method
or path gets a 4xx and exactly one log line without a traceback; the update is never handed
on. Raw bytes over loopback against the real receiver, and once through the whole channel
(python-telegram-bot against the loopback Telegram fake)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field

import pytest

from bot.ops.web import MAX_BODY_BYTES
from bot.store import Store
from channels.telegram.webhook import SECRET_HEADER, WebhookReceiver
from tests.fakes.channel_health import serving
from tests.fakes.recording_host import RecordingHost
from tests.fakes.telegram_server import FakeTelegram, message, private_chat, user
from tests.fakes.telegram_setup import REQUESTER, channel_for
from tests.ops.http_probe import (
    Header,
    LogLines,
    assert_one_refusal,
    logged_lines,
    raw_request,
    send_raw,
)

pytestmark = pytest.mark.usefixtures("telegram_env")

SECRET = "webhook-secret_123"
PATH = "/telegram"
GOOD: Header = (SECRET_HEADER, SECRET.encode())
JSON_TYPE: Header = ("Content-Type", b"application/json")
UPDATE = json.dumps({"update_id": 7, "message": {"message_id": 1, "text": "hi"}}).encode()
OVERSIZED = b"x" * (MAX_BODY_BYTES + 1)


@dataclass
class Updates:
    received: list[Mapping[str, object]] = field(default_factory=list)

    async def __call__(self, update: Mapping[str, object]) -> None:
        self.received.append(update)


@dataclass(frozen=True, slots=True)
class Receiver:
    port: int
    updates: Updates
    log: LogLines


@pytest.fixture
def log() -> Iterator[LogLines]:
    with logged_lines() as lines:
        yield lines


@pytest.fixture
async def receiver(log: LogLines) -> AsyncIterator[Receiver]:
    updates = Updates()
    webhook = WebhookReceiver(path=PATH, secret=SECRET, on_update=updates)
    await webhook.start("127.0.0.1", 0)
    try:
        yield Receiver(port=webhook.port, updates=updates, log=log)
    finally:
        await webhook.aclose()


def post(headers: list[Header], body: bytes = UPDATE) -> bytes:
    return raw_request("POST", PATH, headers=headers, body=body)


CASES: dict[str, tuple[bytes, int]] = {
    # the secret header: anything but the exact bytes is a wrong secret
    "secret of invalid UTF-8": (post([JSON_TYPE, (SECRET_HEADER, b"\xff\xfe")]), 403),
    "secret of non-ASCII UTF-8": (post([JSON_TYPE, (SECRET_HEADER, "sécret".encode())]), 403),
    "the secret plus a non-ASCII byte": (
        post([JSON_TYPE, (SECRET_HEADER, SECRET.encode() + b"\xe9")]),
        403,
    ),
    "no secret": (post([JSON_TYPE]), 403),
    "wrong secret": (post([JSON_TYPE, (SECRET_HEADER, b"guess")]), 403),
    "no secret and a body that is not JSON": (post([JSON_TYPE], b"\xff{"), 403),
    "secret with a control byte": (post([JSON_TYPE, (SECRET_HEADER, b"a\x01b")]), 400),
    "the secret, then another secret header": (
        post([JSON_TYPE, GOOD, (SECRET_HEADER, b"\xff")]),
        403,
    ),
    "the secret twice": (post([JSON_TYPE, GOOD, GOOD]), 403),
    # the body, once the secret is right
    "wrong content type": (post([("Content-Type", b"text/plain"), GOOD]), 415),
    "no content type": (post([GOOD]), 415),
    "charset other than UTF-8": (
        post([("Content-Type", b"application/json; charset=utf-16"), GOOD]),
        415,
    ),
    "body of invalid UTF-8": (post([JSON_TYPE, GOOD], b'{"update_id": "\xff"}'), 400),
    "body that is not JSON": (post([JSON_TYPE, GOOD], b"update_id=7"), 400),
    "a JSON array": (post([JSON_TYPE, GOOD], b"[" + UPDATE + b"]"), 400),
    "a JSON string": (post([JSON_TYPE, GOOD], b'"hello"'), 400),
    "JSON nested past the recursion limit": (post([JSON_TYPE, GOOD], b"[" * 100_000), 400),
    "body over the size limit": (post([JSON_TYPE, GOOD], OVERSIZED), 413),
    "chunked body over the size limit": (
        raw_request(
            "POST",
            PATH,
            headers=[JSON_TYPE, GOOD, ("Transfer-Encoding", b"chunked")],
            body=b"%x\r\n" % len(OVERSIZED) + OVERSIZED + b"\r\n0\r\n\r\n",
        ),
        413,
    ),
    # method, path, request line
    "GET": (raw_request("GET", PATH, headers=[GOOD]), 405),
    "PUT": (raw_request("PUT", PATH, headers=[JSON_TYPE, GOOD], body=UPDATE), 405),
    "another path": (raw_request("POST", "/telegram/../admin", headers=[JSON_TYPE, GOOD]), 404),
    "path of invalid UTF-8": (raw_request("POST", b"/telegram\xff", headers=[GOOD]), 400),
    "bad Content-Length": (post([JSON_TYPE, GOOD, ("Content-Length", b"-1")]), 400),
    "not HTTP at all": (b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + b"\x00" * 32, 400),
}


@pytest.mark.parametrize(("request_bytes", "status"), CASES.values(), ids=CASES.keys())
async def test_malformed_requests_get_a_4xx_and_one_log_line(
    receiver: Receiver, request_bytes: bytes, status: int
) -> None:
    response = await send_raw(receiver.port, request_bytes)
    assert response.status == status
    line = assert_one_refusal(await receiver.log.settle(), status)
    assert SECRET not in json.dumps(line)
    assert receiver.updates.received == []


async def test_a_good_update_is_handed_on_without_a_log_line(receiver: Receiver) -> None:
    response = await send_raw(receiver.port, post([JSON_TYPE, GOOD]))
    assert response.status == 200
    assert receiver.updates.received == [json.loads(UPDATE)]
    assert await receiver.log.settle() == []


async def test_the_channel_answers_a_non_ascii_secret_with_403(
    tg: FakeTelegram, store: Store
) -> None:
    host = RecordingHost()
    channel = channel_for(
        tg,
        store,
        secret=SECRET,
        mode="webhook",
        webhook_port=0,
        webhook_url="https://bot.example.test/telegram",
    )
    chat = private_chat(REQUESTER)
    update = {"update_id": 1, "message": message(chat, user(REQUESTER), "hook", message_id=9)}
    body = json.dumps(update).encode()
    with logged_lines() as log:
        async with serving(channel, host):
            log.new()
            for secret in (
                b"\xff\xfe\xfd",
                "wébhook-secret_123".encode(),
                SECRET.encode() + b"\x80",
            ):
                refused = await send_raw(
                    channel.webhook_port, post([JSON_TYPE, (SECRET_HEADER, secret)], body)
                )
                assert refused.status == 403
                assert_one_refusal(await log.settle(), 403)
            accepted = await send_raw(channel.webhook_port, post([JSON_TYPE, GOOD], body))
            assert accepted.status == 200
            (envelope,) = await host.wait_envelopes(1)
    assert envelope.text == "hook"
