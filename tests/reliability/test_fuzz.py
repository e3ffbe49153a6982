"""Bad input, hypothesis-driven: platform payload normalisers, the text-protocol parser, tool
argument validation, the message splitter and the per-platform markup converters.

The properties: no exception escapes; every envelope is complete; every rendered chunk fits its
platform's limit and is valid on its own (balanced code fences; for Telegram, balanced HTML with
only the tags Telegram accepts).

Already fuzzed elsewhere (not repeated here): Slack event parsing
(tests/channels/slack/test_normalise.py::test_parsing_never_raises), Telegram chunks from
markdown pieces (tests/channels/telegram/test_markup.py), Discord chunks
(tests/channels/discord/test_units.py), tool-call argument parsing
(tests/tools/test_parsing.py::test_parse_call_never_raises), history trimming
(tests/agent/test_context_window.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from telegram import Message

from bot.config import ToolsConfig
from bot.envelope import Capabilities, ChannelRef
from bot.providers.text_protocol import CLOSE_TAG, OPEN_TAG, parse_tool_calls
from bot.store import Store
from bot.tools.builtin import builtin_tools
from bot.tools.outcome import ToolOutcome
from bot.tools.parsing import parse_call
from bot.tools.registry import ToolEntry, ToolRegistry
from bot.tools.validation import resolve
from channels.discord import markup as discord_markup
from channels.discord.normalise import MessageFacts, NormaliseOptions, envelope_from_facts
from channels.render.chunking import open_fence, split_chunks
from channels.slack import markup as slack_markup
from channels.telegram import markup as telegram_markup
from channels.telegram.normalise import BotIdentity, normalise_message
from tests.fakes.telegram_html import well_formed as telegram_html_ok

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=120)
ME = BotIdentity(id=7000001, username="hatchbot")
TG_REF = ChannelRef(kind="telegram", alias="main")

# -- Telegram updates ---------------------------------------------------------------------------

_entity = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["mention", "text_mention", "bot_command", "bold", "url", "code"]),
        "offset": st.integers(min_value=-5, max_value=300),
        "length": st.integers(min_value=-2, max_value=300),
    }
)
_sender = st.fixed_dictionaries(
    {
        "id": st.one_of(st.just(ME.id), st.integers(min_value=1, max_value=10**12)),
        "is_bot": st.booleans(),
        "first_name": TEXT,
    },
    optional={"username": st.one_of(st.just(ME.username), TEXT), "last_name": TEXT},
)
_chat = st.fixed_dictionaries(
    {
        "id": st.integers(min_value=-(10**13), max_value=10**13),
        "type": st.sampled_from(["private", "group", "supergroup", "channel"]),
    },
    optional={"is_forum": st.booleans(), "title": TEXT},
)


@st.composite
def telegram_message(draw: st.DrawFn, depth: int = 1) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "message_id": draw(st.integers(min_value=1, max_value=2**31)),
        "date": 1_700_000_000,
        "chat": draw(_chat),
    }
    optional: dict[str, st.SearchStrategy[Any]] = {
        "from": _sender,
        "text": st.one_of(TEXT, st.just("@hatchbot hi"), st.just("/start@hatchbot")),
        "caption": TEXT,
        "message_thread_id": st.integers(min_value=1, max_value=10**6),
        "is_topic_message": st.booleans(),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            payload[key] = draw(strategy)
    # Telegram sends entities only along with the text they index (caption_entities likewise)
    if payload.get("text") and draw(st.booleans()):
        payload["entities"] = draw(st.lists(_entity, max_size=4))
    if payload.get("caption") and draw(st.booleans()):
        payload["caption_entities"] = draw(st.lists(_entity, max_size=4))
    if depth and draw(st.booleans()):
        payload["reply_to_message"] = draw(telegram_message(depth=0))
    return payload


@FUZZ
@given(telegram_message())
def test_telegram_message_normaliser_never_raises(payload: dict[str, Any]) -> None:
    message = Message.de_json(payload, None)
    assert message is not None
    envelope = normalise_message(message, ref=TG_REF, me=ME, capabilities=Capabilities())
    if envelope is None:
        return
    assert envelope.message_id.endswith(f":{payload['message_id']}")
    assert envelope.sender.id and envelope.sender.id != str(ME.id)
    assert envelope.conversation_id == str(payload["chat"]["id"])
    assert envelope.reply_target.conversation_id == envelope.conversation_id


# -- Discord messages ---------------------------------------------------------------------------

DISCORD_BOT = "900000000000000001"
_snowflake = st.integers(min_value=1, max_value=2**63).map(str)


@st.composite
def discord_facts(draw: st.DrawFn) -> MessageFacts:
    mentioned = draw(
        st.lists(st.tuples(st.one_of(st.just(DISCORD_BOT), _snowflake), TEXT), max_size=3)
    )
    pieces = [TEXT, st.just(f"<@{DISCORD_BOT}>"), st.just(f"<@!{DISCORD_BOT}>"), st.just("<@&1>")]
    content = "".join(draw(st.lists(st.one_of(*pieces), max_size=6)))
    in_thread = draw(st.booleans())
    return MessageFacts(
        message_id=draw(_snowflake),
        channel_id=draw(_snowflake),
        guild_id=draw(st.one_of(st.none(), _snowflake)),
        thread_parent_id=draw(_snowflake) if in_thread else None,
        thread_owner_id=draw(st.one_of(st.none(), st.just(DISCORD_BOT), _snowflake)),
        bot_posted_in_thread=draw(st.booleans()),
        author_id=draw(_snowflake),
        author_name=draw(TEXT),
        author_is_bot=draw(st.booleans()),
        content=content,
        mentioned_users=tuple(mentioned),
        mentioned_roles=tuple(draw(st.lists(st.tuples(_snowflake, TEXT), max_size=2))),
        bot_role_id=draw(st.one_of(st.none(), _snowflake)),
        replied_to_author_id=draw(st.one_of(st.none(), st.just(DISCORD_BOT), _snowflake)),
    )


@FUZZ
@given(discord_facts(), st.booleans(), st.booleans())
def test_discord_normaliser_never_raises(
    facts: MessageFacts, per_request: bool, threads_count: bool
) -> None:
    options = NormaliseOptions(
        channel=ChannelRef(kind="discord", alias="main"),
        bot_user_id=DISCORD_BOT,
        thread_per_request=per_request,
        thread_counts_as_mention=threads_count,
    )
    envelope = envelope_from_facts(facts, options)
    assert envelope.message_id == facts.message_id
    assert envelope.is_direct == (facts.guild_id is None)
    assert f"<@{DISCORD_BOT}>" not in envelope.text
    assert envelope.capabilities.max_message_chars == 2000


# -- the text protocol --------------------------------------------------------------------------

_protocol_piece = st.one_of(
    TEXT,
    st.sampled_from([OPEN_TAG, CLOSE_TAG, "```json", "```", '{"name": "x"', "}", '"arguments":']),
    st.builds(
        lambda name, args: json.dumps({"name": name, "arguments": args}),
        TEXT,
        st.dictionaries(TEXT, st.one_of(TEXT, st.integers(), st.none()), max_size=3),
    ),
)


@FUZZ
@given(st.lists(_protocol_piece, max_size=12))
def test_text_protocol_parser_never_raises(pieces: list[str]) -> None:
    text = "".join(pieces)
    visible, calls = parse_tool_calls(text)
    assert OPEN_TAG not in visible
    # a block opened inside another block is part of the first one's arguments
    assert (len(calls) > 0) == (OPEN_TAG in text) and len(calls) <= text.count(OPEN_TAG)
    assert len({c.id for c in calls}) == len(calls)
    for index, call in enumerate(calls):
        assert isinstance(call.name, str) and isinstance(call.arguments, str)
        parsed = parse_call(call, index)  # the pipeline's next step takes any of these
        assert parsed is not None


# -- argument validation of every built-in ------------------------------------------------------

_json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)


async def test_argument_validation_of_every_builtin_never_raises(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "state.db") as store:
        specs = builtin_tools(ToolsConfig(), store=store, outbox=None, workspace=tmp_path / "ws")
    executor = ToolRegistry(specs).executor()
    names = [spec.name for spec in specs]
    fields = sorted({key for spec in specs for key in spec.parameters.get("properties", {})})

    @FUZZ
    @given(
        st.one_of(st.sampled_from(names), TEXT),
        st.dictionaries(st.one_of(st.sampled_from(fields), TEXT), _json_value, max_size=5),
    )
    def check(name: str, arguments: dict[str, Any]) -> None:
        result = resolve(executor, call_id="c1", name=name, arguments=arguments)
        assert isinstance(result, ToolEntry | ToolOutcome)
        if isinstance(result, ToolEntry):
            assert result.validator.problem(arguments) is None

    check()


# -- the splitter and the markup converters -----------------------------------------------------

_markdown_piece = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "```",
            "```python",
            "\n```\n",
            "\n",
            "\n\n",
            "**",
            "__",
            "`",
            "~~",
            "[a](http://x/?a=1&b=<2>)",
            "<b>",
            "&amp;",
            "> quote",
            "# head",
            "- item",
            "<@U123>",
            "🙂",
            "é",
        ]
    ),
    st.integers(min_value=50, max_value=5000).map(lambda n: "x" * n),
)


def fences_balanced(chunk: str) -> bool:
    """No code fence left open, by the CommonMark rule the splitter and the converters share
    (``channels.render.chunking.open_fence``, tested on its own in
    ``tests/channels/test_chunking.py``): a line such as ```` ```ls``` ```` is inline code,
    not a fence."""
    return open_fence(chunk) is None


def test_a_long_first_line_in_a_fence_splits_into_few_chunks_within_the_limit() -> None:
    # code written on the fence line itself used to be re-opened in full in every chunk,
    # leaving room for one character each: ~1,500 chunks over the limit for 3,000 characters
    text = "see:\n```" + '{"k": 1}' * 400 + "```\ndone"
    for render, limit in (
        (discord_markup.render_chunks, discord_markup.MESSAGE_LIMIT),
        (slack_markup.render_chunks, 1000),
        (telegram_markup.render_chunks, 1000),
    ):
        chunks = render(text, limit)
        assert 2 <= len(chunks) <= 10
        assert all(len(c) <= limit for c in chunks)


@FUZZ
@given(st.lists(_markdown_piece, max_size=40), st.integers(min_value=40, max_value=4096))
def test_splitter_chunks_fit_and_close_their_fences(pieces: list[str], limit: int) -> None:
    text = "".join(pieces)
    chunks = split_chunks(text, limit)
    assert chunks
    for chunk in chunks:
        assert len(chunk.text) <= limit
        # the rest of a line cut at the previous chunk's end is text, never a fence opener
        # (the platform converters read it so): only what follows it counts
        body = chunk.text.partition("\n")[2] if chunk.continues_line else chunk.text
        assert fences_balanced(body)


@FUZZ
@given(st.lists(_markdown_piece, max_size=40))
def test_platform_renderers_give_valid_chunks_within_limits(pieces: list[str]) -> None:
    text = "".join(pieces)
    for name, render, limit in (
        ("slack", slack_markup.render_chunks, slack_markup.SLACK_CHUNK_LIMIT),
        ("discord", discord_markup.render_chunks, discord_markup.MESSAGE_LIMIT),
        ("telegram", telegram_markup.render_chunks, telegram_markup.TELEGRAM_LIMIT),
    ):
        chunks = render(text)
        if text.strip():
            assert chunks, name
        for chunk in chunks:
            assert 0 < len(chunk) <= limit, name
            if name == "telegram":
                assert telegram_html_ok(chunk), chunk[:200]
            else:
                assert fences_balanced(chunk), (name, chunk[:200])
    assert len(discord_markup.render_single(text)) <= discord_markup.MESSAGE_LIMIT
