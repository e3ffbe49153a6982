"""Pure parts of the Discord adapter: normalisation from facts, markup and chunking (the
approval cards' payloads are tests/channels/discord/test_card_payloads.py's)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.envelope import Attachment, ChannelRef
from channels.discord.markup import render_chunks, render_single, to_discord
from channels.discord.normalise import (
    MessageFacts,
    NormaliseOptions,
    clean_text,
    envelope_from_facts,
    is_addressed,
)

BOT = "900"
REF = ChannelRef(kind="discord", alias="main")
GUILD_MESSAGE = MessageFacts(
    message_id="55",
    channel_id="10",
    guild_id="1",
    author_id="7",
    author_name="alice",
    content=f"<@{BOT}> hi <@8> and <@&30>",
    mentioned_users=((BOT, "hatchway"), ("8", "bob")),
    mentioned_roles=(("30", "ops"),),
    bot_role_id="31",
)
OPTIONS = NormaliseOptions(channel=REF, bot_user_id=BOT)


def facts(**changes: object) -> MessageFacts:
    return dataclasses.replace(GUILD_MESSAGE, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "addressed"),
    [
        ({}, True),  # mentions the bot
        ({"mentioned_users": ()}, False),
        ({"mentioned_users": (), "guild_id": None}, True),  # a DM
        ({"mentioned_users": (), "mentioned_roles": (("31", "hatchway"),)}, True),  # bot role
        ({"mentioned_users": (), "replied_to_author_id": BOT}, True),
        ({"mentioned_users": (), "replied_to_author_id": "8"}, False),
        ({"mentioned_users": (), "thread_parent_id": "10", "thread_owner_id": BOT}, True),
        ({"mentioned_users": (), "thread_parent_id": "10", "thread_owner_id": "8"}, False),
        ({"mentioned_users": (), "thread_parent_id": "10", "bot_posted_in_thread": True}, True),
    ],
)
def test_addressed_to_bot(changes: dict[str, object], addressed: bool) -> None:
    assert is_addressed(facts(**changes), BOT) is addressed


@pytest.mark.parametrize(
    "changes",
    [
        {"thread_parent_id": "10", "thread_owner_id": BOT},
        {"thread_parent_id": "10", "bot_posted_in_thread": True},
    ],
)
def test_bot_threads_count_only_when_configured(changes: dict[str, object]) -> None:
    quiet = facts(mentioned_users=(), **changes)
    assert not is_addressed(quiet, BOT, threads_count=False)
    options = dataclasses.replace(OPTIONS, thread_counts_as_mention=False)
    assert not envelope_from_facts(quiet, options).addressed_to_bot


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (f"<@{BOT}> hi <@8> and <@&30>", "hi @bob and @ops"),
        (f"<@!{BOT}>   what  now", "what now"),
        ("<@&31> deploy", "deploy"),  # the bot's managed role
        ("<@999> unknown stays", "<@999> unknown stays"),
        ("```\n<@8>\n```", "```\n@bob\n```"),
    ],
)
def test_clean_text(content: str, expected: str) -> None:
    assert clean_text(facts(content=content), BOT) == expected


@pytest.mark.parametrize(
    ("changes", "thread_per_request", "conversation", "thread"),
    [
        ({}, False, "10", None),
        ({}, True, "10", "55"),  # the thread opened from the message has the message's id
        ({"channel_id": "12", "thread_parent_id": "10"}, True, "10", "12"),
        ({"guild_id": None, "channel_id": "40"}, True, "40", None),  # no threads in DMs
    ],
)
def test_conversation_and_thread(
    changes: dict[str, object], thread_per_request: bool, conversation: str, thread: str | None
) -> None:
    options = dataclasses.replace(OPTIONS, thread_per_request=thread_per_request)
    envelope = envelope_from_facts(facts(**changes), options)
    assert (envelope.conversation_id, envelope.thread_id) == (conversation, thread)
    assert envelope.reply_target.conversation_id == conversation
    assert envelope.reply_target.thread_id == thread
    assert envelope.reply_target.reply_to_message_id == "55"


def test_envelope_fields() -> None:
    attachment = Attachment(kind="file", name="a.txt", mime_type="text/plain", size=3, ref="u")
    envelope = envelope_from_facts(
        facts(attachments=(attachment,), author_is_bot=True),
        dataclasses.replace(OPTIONS, approval_backchannel=True),
    )
    assert envelope.channel == REF and envelope.message_id == "55"
    assert envelope.sender.id == "7" and envelope.sender.is_bot
    assert envelope.attachments == (attachment,)
    assert envelope.is_group and not envelope.is_direct
    assert envelope.capabilities.approval_backchannel
    assert envelope.capabilities.max_message_chars == 2000


@pytest.mark.parametrize(
    ("markdown", "discord_text"),
    [
        ("#### Deep heading", "**Deep heading**"),
        ("## Kept heading", "## Kept heading"),
        ("---", "───"),
        ("![chart](https://x.example/c.png)", "chart https://x.example/c.png"),
        ("```md\n#### not a heading\n---\n```", "```md\n#### not a heading\n---\n```"),
        ("**bold** and `code`", "**bold** and `code`"),
    ],
)
def test_markup(markdown: str, discord_text: str) -> None:
    assert to_discord(markdown) == discord_text


@given(
    st.lists(
        st.one_of(
            st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300),
            st.just("```python"),
            st.just("```"),
            st.just("#### heading"),
            st.just("x" * 2500),
        ),
        max_size=30,
    )
)
def test_chunks_fit_and_keep_fences_closed(lines: list[str]) -> None:
    chunks = render_chunks("\n".join(lines))
    assert chunks
    for chunk in chunks:
        assert 0 < len(chunk) <= 2000
    assert len(render_single("\n".join(lines))) <= 2000


def test_balanced_input_gives_balanced_chunks() -> None:
    text = "intro\n```python\n" + "\n".join(f"print({i})" for i in range(400)) + "\n```\nend"
    chunks = render_chunks(text)
    assert len(chunks) > 1
    assert all(chunk.count("```") % 2 == 0 for chunk in chunks)
