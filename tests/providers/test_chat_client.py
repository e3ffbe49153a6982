"""The Chat Completions client over real HTTP to the loopback fake: replies, streams, the keep-alive
pool, and every failure mapped to the retry ladder's own AttemptFailed."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.config import ProviderConfig
from bot.errors import ProviderError
from bot.providers.base import ChatMessage, CompletionRequest
from bot.providers.chat_client import ChatCompletionsClient
from bot.providers.retry import AttemptFailed
from tests.fakes.openai_server import Garbled, OpenAIFake, RawStream, chunk
from tests.providers.conftest import OpenAIFactory, make_retrier
from tests.providers.recorders import TEST_KEY, RecordedSleep
from tests.providers.test_retry import closed_port

HELLO = CompletionRequest(system="", messages=[ChatMessage(role="user", content="hi")])
PLAIN = b'{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"stream":false}'
STREAMED = b'{"model":"fake-model","messages":[{"role":"user","content":"hi"}],"stream":true}'

ClientFactory = Callable[..., ChatCompletionsClient]


@pytest.fixture(params=[True, False], ids=["http1", "aiohttp"])
async def make_client(
    openai_fake: OpenAIFake, sleep: RecordedSleep, request: pytest.FixtureRequest
) -> AsyncIterator[ClientFactory]:
    """Clients of the fake, each test run with both exchanges: HTTP/1.1 of the client's
    own (what a plain ``http://`` endpoint gets) and aiohttp (``https://`` or a proxy)."""
    made: list[ChatCompletionsClient] = []

    def make(**overrides: Any) -> ChatCompletionsClient:
        fields: dict[str, Any] = {
            "base_url": openai_fake.base_url,
            "api_key": TEST_KEY,
            "timeout_s": 10.0,
            "environ": {},
            "http1": request.param,
        }
        fields.update(overrides)
        config = ProviderConfig(base_url=fields["base_url"], model="fake-model")
        client = ChatCompletionsClient(retrier=make_retrier("primary", config, sleep), **fields)
        made.append(client)
        return client

    yield make
    for client in made:
        await client.aclose()


def _content(event: object) -> str:
    """A streamed chunk's text ("" for one without)."""
    assert isinstance(event, dict)
    choices = event["choices"]
    return str(choices[0]["delta"].get("content", "")) if choices else ""


class Events:
    """An event handler that records what it is handed."""

    def __init__(self) -> None:
        self.seen: list[object] = []

    async def __call__(self, data: object) -> None:
        self.seen.append(data)


async def test_a_reply_and_a_stream_share_one_kept_alive_connection(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_text("one")
    openai_fake.queue_text("two")
    openai_fake.queue_text("three")
    client = make_client()
    first = await client.complete(PLAIN)
    events = Events()
    await client.stream(STREAMED, events)
    third = await client.complete(PLAIN)

    assert isinstance(first, dict)
    assert first["choices"][0]["message"]["content"] == "one"
    assert "".join(_content(e) for e in events.seen) == "two"
    assert isinstance(third, dict)
    assert third["choices"][0]["message"]["content"] == "three"
    peers = {r.peer for r in openai_fake.requests}
    assert len(peers) == 1, "the stream was read to its end, so its connection was reused"
    headers = openai_fake.requests[0].headers
    assert headers["authorization"] == f"Bearer {TEST_KEY}"
    assert headers["content-type"] == "application/json"
    assert openai_fake.requests[1].body["stream"] is True


async def test_a_stream_given_up_by_its_reader_closes_its_connection(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_stream([chunk(content="a"), chunk(content="b")], stall_after=1)
    openai_fake.queue_text("next")
    client = make_client()

    async def refuse(data: object) -> None:
        raise RuntimeError("the reader stops")

    with pytest.raises(RuntimeError, match="the reader stops"):
        await client.stream(STREAMED, refuse)
    assert isinstance(await client.complete(PLAIN), dict)
    assert openai_fake.requests[0].peer != openai_fake.requests[1].peer, "a half-read reply"


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize(
    ("status", "headers", "retryable", "wait"),
    [
        (429, {"Retry-After": "7"}, True, 7.0),
        (503, {"retry-after-ms": "250"}, True, 0.25),
        (500, {}, True, None),
        (401, {}, False, None),
        (400, {"Retry-After": "3"}, False, 3.0),
    ],
)
async def test_an_error_status_becomes_the_ladders_failure(
    openai_fake: OpenAIFake,
    make_client: ClientFactory,
    streamed: bool,
    status: int,
    headers: dict[str, str],
    retryable: bool,
    wait: float | None,
) -> None:
    openai_fake.queue_error(status, headers=headers, message=f"bad key {TEST_KEY}")
    client = make_client()
    with capture_logs() as logs, pytest.raises(AttemptFailed) as caught:
        if streamed:
            await client.stream(STREAMED, Events())
        else:
            await client.complete(PLAIN)

    assert caught.value.status == status
    assert caught.value.retryable is retryable
    assert caught.value.retry_after_s == wait
    assert TEST_KEY not in str(caught.value)
    (logged,) = [entry for entry in logs if entry["event"] == "provider_http_error"]
    assert logged["detail"].startswith("bad key ")  # the error's message, scrubbed
    assert TEST_KEY not in logged["detail"]


async def test_a_stream_cut_mid_way_is_a_lost_connection(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_stream([chunk(content=c) for c in "abcdef"], cut_after=2)
    events = Events()
    with pytest.raises(AttemptFailed) as caught:
        await make_client().stream(STREAMED, events)
    assert str(caught.value) == (
        f"lost the connection to primary at {openai_fake.base_url}/chat/completions mid-reply"
    )
    assert caught.value.retryable
    assert [_content(e) for e in events.seen] == ["a", "b"]


async def test_a_stream_that_stops_sending_times_out(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_stream([chunk(content="a"), chunk(content="b")], stall_after=1)
    events = Events()
    with pytest.raises(AttemptFailed) as caught:
        await make_client(timeout_s=0.3).stream(STREAMED, events)
    assert str(caught.value) == "primary did not answer within 0.3s"
    assert caught.value.timed_out and caught.value.retryable
    assert len(events.seen) == 1


async def test_a_reply_that_never_comes_times_out(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_hang()
    with pytest.raises(AttemptFailed) as caught:
        await make_client(timeout_s=0.3).complete(PLAIN)
    assert caught.value.timed_out


async def test_nothing_listening_is_unreachable(make_client: ClientFactory) -> None:
    port = closed_port()
    client = make_client(base_url=f"http://127.0.0.1:{port}/v1/")
    with pytest.raises(AttemptFailed) as caught:
        await client.complete(PLAIN)
    assert str(caught.value) == (
        f"cannot reach primary at http://127.0.0.1:{port}/v1/chat/completions: "
        "is the server running? Run `hatchway doctor` to check"
    )


async def test_a_body_that_is_not_json_is_left_for_the_retrier(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_garbled()
    openai_fake.queue(Garbled(raw=b'{"choices": "\xff\xfe"}'))
    client = make_client()
    with pytest.raises(json.JSONDecodeError):
        await client.complete(PLAIN)
    with pytest.raises(AttemptFailed, match="not valid JSON") as caught:
        await client.complete(PLAIN)
    assert caught.value.retryable


async def test_a_stream_event_that_is_not_json_is_left_for_the_retrier(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue(RawStream(events=("data: {not json\n\n", "data: [DONE]\n\n")))
    with pytest.raises(json.JSONDecodeError):
        await make_client().stream(STREAMED, Events())


async def test_an_error_event_in_a_stream_fails_the_attempt(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    error = {"error": {"message": "overloaded", "type": "server_error"}}
    openai_fake.queue_stream([chunk(content="Hi"), error])
    events = Events()
    with capture_logs() as logs, pytest.raises(AttemptFailed) as caught:
        await make_client().stream(STREAMED, events)
    assert str(caught.value) == "primary reported an error mid-reply"
    assert caught.value.retryable
    assert len(events.seen) == 1
    assert [e["error_type"] for e in logs if e["event"] == "provider_stream_error"] == [
        "server_error"
    ]


async def test_sse_line_ends_comments_and_events_without_data(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    first, second = json.dumps(chunk(content="a")), json.dumps(chunk(content="b"))
    openai_fake.queue(
        RawStream(
            events=(
                ": keep-alive\r\n\r\n",
                "event: ping\r\n\r\n",
                f"data: {first}\r\n\r\n",
                f"event: message\rdata: {second}\r\r",
                "data: [DONE]\n\n",
                f"data: {first}\n\n",  # after [DONE]: read, not handed on
            )
        )
    )
    events = Events()
    await make_client().stream(STREAMED, events)
    assert events.seen == [json.loads(first), json.loads(second)]


async def test_credentials_in_the_url_and_the_organisation_from_the_environment(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_text("ok")
    url = openai_fake.base_url.replace("http://", "http://user:secret@")
    environ = {"OPENAI_ORG_ID": "org-1", "OPENAI_PROJECT_ID": "proj-2"}
    client = make_client(base_url=url, environ=environ)
    assert client.shown == f"{openai_fake.base_url}/chat/completions"
    await client.complete(PLAIN)

    headers = openai_fake.requests[0].headers
    assert headers["authorization"] == "Basic " + base64.b64encode(b"user:secret").decode()
    assert (headers["openai-organization"], headers["openai-project"]) == ("org-1", "proj-2")


async def test_openai_base_url_from_the_environment_when_none_is_configured(
    openai_fake: OpenAIFake, make_client: ClientFactory
) -> None:
    openai_fake.queue_text("ok")
    client = make_client(base_url=None, environ={"OPENAI_BASE_URL": openai_fake.base_url})
    assert isinstance(await client.complete(PLAIN), dict)
    assert openai_fake.requests[0].path == "/v1/chat/completions"


async def test_a_reply_that_is_not_an_object_is_not_retried(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue(Garbled(raw=b"[1, 2, 3]"))  # JSON, but not a reply
    with pytest.raises(ProviderError) as caught:
        await make_openai().complete(HELLO)
    assert str(caught.value) == "primary sent a reply we cannot read"
    assert not caught.value.retryable
    assert sleep.waits == []


async def test_an_error_event_mid_stream_is_retried_by_the_provider(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory, sleep: RecordedSleep
) -> None:
    openai_fake.queue_stream([chunk(content="Hi"), {"error": {"message": "overloaded"}}])
    openai_fake.queue_text("Hello again.")
    reply = await make_openai(stream=True).complete(HELLO)
    assert reply.text == "Hello again."
    assert len(sleep.waits) == 1


async def test_wrongly_typed_fields_count_as_missing(
    openai_fake: OpenAIFake, make_openai: OpenAIFactory
) -> None:
    openai_fake.queue_json(
        {
            "model": 7,
            "usage": {"prompt_tokens": None, "completion_tokens": "9"},
            "choices": [
                {
                    "message": {
                        "content": [{"type": "text", "text": "in "}, {"text": "parts"}],
                        "tool_calls": [{"function": "not an object"}, "nothing"],
                    },
                    "finish_reason": None,
                }
            ],
        }
    )
    reply = await make_openai().complete(HELLO)
    assert reply.text == "in parts"
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("", "{}"), ("", "{}")]
    assert reply.finish_reason == "tool_calls"
    assert reply.model == "fake-model"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (0, 0)
