"""Retries, backoff, Retry-After and error mapping, through the real SDK to a loopback fake."""

from __future__ import annotations

import email.utils
import socket

import pytest

from bot.errors import ProviderError, ProviderTimeout
from bot.providers.base import ChatMessage, CompletionRequest
from bot.providers.retry import RetryPolicy, parse_retry_after
from tests.fakes.anthropic_server import AnthropicFake
from tests.fakes.openai_server import OpenAIFake
from tests.providers.conftest import BASE_DELAY_S, AnthropicFactory, OpenAIFactory
from tests.providers.recorders import TEST_KEY, RecordedSleep

HELLO = CompletionRequest(system="", messages=[ChatMessage(role="user", content="hi")])
NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": " 1.5 "}, 1.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": email.utils.formatdate(NOW + 12, usegmt=True)}, 12.0),
        ({"retry-after": email.utils.formatdate(NOW - 50, usegmt=True)}, 0.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == expected


def test_provider_retries_back_off_from_half_a_second_to_eight() -> None:
    policy = RetryPolicy()
    assert policy.backoff.delay(0, jitter=1.0) == pytest.approx(0.5)
    assert policy.backoff.delay(10, jitter=1.0) == pytest.approx(8.0)


async def test_429_waits_as_long_as_retry_after_says(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_error(429, headers={"Retry-After": "7"})
    openai_fake.queue_text("ok")
    reply = await make_openai().complete(HELLO)

    assert reply.text == "ok"
    assert sleep.waits == [7.0]
    assert len(openai_fake.requests) == 2


async def test_429_with_an_http_date_uses_the_injected_clock(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_error(
        429, headers={"Retry-After": email.utils.formatdate(NOW + 5, usegmt=True)}
    )
    openai_fake.queue_text("ok")
    await make_openai(clock=lambda: NOW).complete(HELLO)
    assert sleep.waits == [5.0]


async def test_retry_after_is_capped(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_error(503, headers={"Retry-After": "3600"})
    openai_fake.queue_text("ok")
    await make_openai().complete(HELLO)
    assert sleep.waits == [RetryPolicy().retry_after_cap_s]


async def test_500_then_success_backs_off_once(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_error(500)
    openai_fake.queue_text("recovered")
    reply = await make_openai().complete(HELLO)

    assert reply.text == "recovered"
    assert sleep.waits == [pytest.approx(0.75 * BASE_DELAY_S)]  # jitter fixed at 0.5


async def test_gives_up_after_max_retries(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    for _ in range(3):
        openai_fake.queue_error(502)
    openai_fake.queue_text("never reached")
    with pytest.raises(ProviderError) as caught:
        await make_openai(max_retries=2).complete(HELLO)

    assert str(caught.value) == "primary had a server error (HTTP 502)"
    assert caught.value.retryable
    assert len(openai_fake.requests) == 3
    assert sleep.waits == pytest.approx([0.75 * BASE_DELAY_S, 1.5 * BASE_DELAY_S])
    assert openai_fake.pending == 1


@pytest.mark.parametrize(
    ("status", "message"),
    [
        (401, "primary rejected the API key (HTTP 401)"),
        (403, "primary rejected the API key (HTTP 403)"),
        (400, "primary rejected the request (HTTP 400)"),
        (404, "primary does not know this model or endpoint (HTTP 404)"),
    ],
)
async def test_client_errors_are_not_retried_and_stay_short(
    openai_fake: OpenAIFake,
    make_openai: OpenAIFactory,
    sleep: RecordedSleep,
    status: int,
    message: str,
) -> None:
    openai_fake.queue_error(status, message=f"Incorrect API key provided: {TEST_KEY}")
    with pytest.raises(ProviderError) as caught:
        await make_openai().complete(HELLO)

    assert str(caught.value) == message
    assert TEST_KEY not in str(caught.value)
    assert caught.value.__cause__ is None
    assert not caught.value.retryable
    assert sleep.waits == []
    assert len(openai_fake.requests) == 1


async def test_a_hung_server_times_out_per_attempt(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_hang()
    openai_fake.queue_hang()
    with pytest.raises(ProviderTimeout) as caught:
        await make_openai(timeout_s=0.3, max_retries=1).complete(HELLO)

    assert str(caught.value) == "primary did not answer within 0.3s"
    assert len(openai_fake.requests) == 2
    assert len(sleep.waits) == 1


async def test_timeout_then_success(openai_fake: OpenAIFake, make_openai: OpenAIFactory) -> None:
    openai_fake.queue_hang()
    openai_fake.queue_text("late but fine")
    reply = await make_openai(timeout_s=0.3).complete(HELLO)
    assert reply.text == "late but fine"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_unreachable_server_is_a_retryable_connection_error(
    make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    """One line a person can act on: where, whether the server runs, what to run. The URL
    loses its credentials."""
    port = closed_port()
    provider = make_openai(base_url=f"http://user:{TEST_KEY}@127.0.0.1:{port}/v1", max_retries=2)
    with pytest.raises(ProviderError) as caught:
        await provider.complete(HELLO)
    assert str(caught.value) == (
        f"cannot reach primary at http://127.0.0.1:{port}/v1/chat/completions: "
        "is the server running? Run `hatchway doctor` to check"
    )
    assert caught.value.retryable
    assert len(sleep.waits) == 2


async def test_unreachable_anthropic_endpoint_names_its_url(
    make_anthropic: AnthropicFactory, sleep: RecordedSleep
) -> None:
    port = closed_port()
    with pytest.raises(ProviderError) as caught:
        await make_anthropic(base_url=f"http://127.0.0.1:{port}", max_retries=0).complete(HELLO)
    assert str(caught.value) == (
        f"cannot reach claude at http://127.0.0.1:{port}/v1/messages: "
        "is the server running? Run `hatchway doctor` to check"
    )


async def test_a_connection_cut_before_the_reply_is_not_called_unreachable(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_text("never sent", cut_after=0)
    with pytest.raises(ProviderError) as caught:
        await make_openai(max_retries=0).complete(HELLO)
    assert str(caught.value) == (
        f"lost the connection to primary at {openai_fake.base_url}/chat/completions mid-reply"
    )


async def test_openai_reply_that_is_not_json_is_retried(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_garbled()
    openai_fake.queue_text("recovered")
    reply = await make_openai().complete(HELLO)

    assert reply.text == "recovered"
    assert len(sleep.waits) == 1


async def test_anthropic_reply_that_is_not_json_is_retried(
    anthropic_fake: AnthropicFake, make_anthropic: AnthropicFactory, sleep: RecordedSleep
) -> None:
    anthropic_fake.queue_garbled()
    anthropic_fake.queue_text("recovered")
    reply = await make_anthropic().complete(HELLO)

    assert reply.text == "recovered"
    assert len(sleep.waits) == 1
