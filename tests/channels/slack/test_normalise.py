"""Slack message payloads → envelopes: pure normalisation rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.envelope import Capabilities, ChannelRef
from channels.slack.file_hosts import FileRef
from channels.slack.normalise import (
    BotIdentity,
    build_envelope,
    clean_text,
    conversation_kind,
    ignore_reason,
    is_addressed,
    parse_message,
)

REF = ChannelRef(kind="slack", alias="main")
BOT = BotIdentity(user_id="UBOT", bot_id="BBOT")


def body(**event: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"type": "message", "channel": "C1", "ts": "10.1", "user": "UANN"}
    return {"event_id": "Ev1", "event": {**base, **event}}


def parsed(**event: Any) -> Any:
    callback = parse_message(body(**event))
    assert callback is not None
    return callback


@pytest.mark.parametrize(
    ("event", "reason"),
    [
        ({}, None),
        ({"subtype": "file_share"}, None),
        ({"subtype": "thread_broadcast", "thread_ts": "9.9"}, None),
        ({"subtype": "bot_message", "user": None, "bot_id": "BOTHER"}, None),
        ({"user": "UBOT"}, "own_message"),
        ({"subtype": "bot_message", "user": None, "bot_id": "BBOT"}, "own_message"),
        ({"subtype": "message_changed"}, "edited"),
        ({"subtype": "message_deleted", "user": None}, "deleted"),
        ({"subtype": "channel_join"}, "subtype_channel_join"),
        ({"subtype": "channel_topic"}, "subtype_channel_topic"),
        ({"user": None}, "no_sender"),
    ],
)
def test_ignore_reasons(event: dict[str, Any], reason: str | None) -> None:
    assert ignore_reason(parsed(**event).event, BOT) == reason


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        ({"channel_type": "im", "channel": "D1"}, "im"),
        ({"channel_type": "mpim", "channel": "G1"}, "mpim"),
        ({"channel_type": "group", "channel": "G2"}, "group"),
        ({"type": "app_mention", "channel": "C9"}, "channel"),
        ({"type": "app_mention", "channel": "G9"}, "group"),
        ({"type": "app_mention", "channel": "D9"}, "im"),
    ],
)
def test_conversation_kind(event: dict[str, Any], kind: str) -> None:
    assert conversation_kind(parsed(**event).event) == kind


@pytest.mark.parametrize(
    ("event", "addressed"),
    [
        ({"text": "hello"}, False),
        ({"text": "<@UBOT> hello"}, True),
        ({"text": "hi <@UBOT|hatchway>"}, True),
        ({"text": "hi <@UOTHER>"}, False),
        ({"type": "app_mention", "text": "x"}, True),
        ({"channel_type": "im", "channel": "D1", "text": "x"}, True),
        ({"thread_ts": "1.0", "parent_user_id": "UBOT", "text": "more"}, True),
        ({"thread_ts": "1.0", "parent_user_id": "UANN", "text": "more"}, False),
    ],
)
def test_addressed_to_bot(event: dict[str, Any], addressed: bool) -> None:
    event_obj = parsed(**event).event
    assert is_addressed(event_obj, conversation_kind(event_obj), BOT) is addressed


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("<@UBOT> do it", "do it"),
        ("ask <@UANN> or <@UBEN|ben>", "ask @UANN or @ben"),
        ("in <#C123|general> and <#C456>", "in #general and #C456"),
        ("<!here> look", "@here look"),
        ("<!subteam^S1|@ops> help", "@ops help"),
        (
            "see <https://a.b/c?d=1&amp;e=2|docs> or <https://x.y>",
            "see docs (https://a.b/c?d=1&e=2) or https://x.y",
        ),
        ("mail <mailto:a@b.c|a@b.c>", "mail a@b.c"),
        ("1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"),
    ],
)
def test_clean_text(raw: str, plain: str) -> None:
    assert clean_text(raw, "UBOT") == plain


@pytest.mark.parametrize(
    ("event", "dm_in_thread", "thread_id"),
    [
        ({}, False, "10.1"),
        ({"thread_ts": "9.9"}, False, "9.9"),
        ({"channel": "D1", "channel_type": "im"}, False, None),
        ({"channel": "D1", "channel_type": "im"}, True, "10.1"),
        ({"channel": "D1", "channel_type": "im", "thread_ts": "9.9"}, False, "9.9"),
    ],
)
def test_threads(event: dict[str, Any], dm_in_thread: bool, thread_id: str | None) -> None:
    envelope = build_envelope(
        parsed(**event),
        ref=REF,
        bot=BOT,
        display_name="Ann",
        capabilities=Capabilities(),
        dm_replies_in_thread=dm_in_thread,
    )
    assert envelope.thread_id == thread_id
    assert envelope.reply_target.thread_id == thread_id
    assert envelope.reply_target.reply_to_message_id == "10.1"
    assert envelope.message_id == f"{envelope.conversation_id}:10.1"


def test_files_are_attachment_metadata() -> None:
    files = [
        {"id": "F1", "name": "log.txt", "mimetype": "text/plain", "size": 10, "url_private": "u"},
        {"id": "F2", "title": "clip", "mimetype": "video/mp4"},
    ]
    envelope = build_envelope(
        parsed(subtype="file_share", files=files),
        ref=REF,
        bot=BOT,
        display_name="",
        capabilities=Capabilities(),
    )
    first, second = envelope.attachments
    assert (first.kind, first.name, first.size) == ("file", "log.txt", 10)
    assert FileRef.decode(first.ref) == FileRef(file_id="F1", url="u")
    assert (second.kind, second.name) == ("video", "clip")
    assert FileRef.decode(second.ref) == FileRef(file_id="F2")


def test_the_download_url_is_preferred() -> None:
    file = {
        "id": "F1",
        "name": "a.png",
        "url_private": "https://files.slack.com/files-pri/T1-F1/a.png",
        "url_private_download": "https://files.slack.com/files-pri/T1-F1/download/a.png",
    }
    envelope = build_envelope(
        parsed(subtype="file_share", files=[file]),
        ref=REF,
        bot=BOT,
        display_name="",
        capabilities=Capabilities(),
    )
    (attachment,) = envelope.attachments
    assert FileRef.decode(attachment.ref).url == file["url_private_download"]


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"event": None},
        {"event": {"type": "message"}},
        {"event": {"type": "reaction_added", "channel": "C1", "ts": "1"}},
        {"event": {"type": "message", "channel": "", "ts": "1"}},
        {"event": {"type": "message", "channel": "C1", "ts": "1", "files": "nope"}},
    ],
)
def test_malformed_payloads_parse_to_none(payload: dict[str, Any]) -> None:
    assert parse_message(payload) is None


FIELDS = ["type", "channel", "ts", "user", "text", "subtype", "thread_ts", "bot_id", "files"]
VALUES = st.one_of(
    st.none(),
    st.text(max_size=20),
    st.sampled_from(["message", "app_mention", "im"]),
    st.integers(),
    st.lists(st.none()),
)


@given(st.dictionaries(st.sampled_from(FIELDS), VALUES))
def test_parsing_never_raises(event: dict[str, Any]) -> None:
    callback = parse_message({"event": event})
    if callback is not None and ignore_reason(callback.event, BOT) is None:
        build_envelope(callback, ref=REF, bot=BOT, display_name="", capabilities=Capabilities())
