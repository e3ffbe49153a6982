"""Files the bot posts on Discord (``send_file``), with the real discord.py against the
loopback fake: a multipart attachment with the right name and bytes, replying to the request
with the caption rendered like an answer (a long caption's rest after it), the reply key's
nonce (a repeat is not doubled) and found again by the delivery check; in a thread opened
for the request; through an application command's interaction; the guild's upload limit
checked before anything is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.envelope import IngressEnvelope
from bot.errors import ChannelError
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from channels.discord.delivery_check import reply_nonce
from channels.discord.markup import render_chunks
from tests.fakes.discord_commands import invoke
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_setup import (
    ALICE,
    BOT,
    BOT_ID,
    DM,
    GENERAL,
    RecordingHost,
    make_channel,
    running,
    said,
)

pytestmark = pytest.mark.usefixtures("discord_env")

KEY = "0f1e2d3c4b5a69788796a5b4"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
MIB = 1024 * 1024


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "workspace" / "out.png"
    path.parent.mkdir()
    path.write_bytes(PNG)
    return path


@pytest.fixture
async def connected(
    fake: FakeDiscord, store: Store
) -> AsyncIterator[tuple[DiscordChannel, IngressEnvelope]]:
    """The adapter, connected, and a message from alice mentioning it in #general."""
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, f"<@{BOT_ID}> plot it", mentions=[BOT]))
        [envelope] = await host.wait_envelopes(1)
        yield channel, envelope


async def test_a_file_arrives_with_its_name_and_bytes_replying_to_the_request(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope], report: Path
) -> None:
    channel, envelope = connected
    assert channel.files is not None
    sent = await channel.files.send_file(
        envelope.reply_target, report, name="plot.png", caption="Here is **the plot**.", key=KEY
    )
    [post] = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    assert post.files == {"plot.png": PNG}
    assert post.body is not None and post.body["content"] == "Here is **the plot**."
    assert str(post.body["message_reference"]["message_id"]) == envelope.message_id
    assert post.body["nonce"] == reply_nonce(KEY, 0, "Here is **the plot**.")
    [message] = sent
    stored = fake.messages[message.message_id]
    assert [a["filename"] for a in stored["attachments"]] == ["plot.png"]
    assert message.target == envelope.reply_target


async def test_a_file_of_several_megabytes_arrives_whole(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope], tmp_path: Path
) -> None:
    channel, envelope = connected
    data = bytes(range(256)) * (3 * MIB // 256)
    path = tmp_path / "dump.bin"
    path.write_bytes(data)
    await channel.files.send_file(envelope.reply_target, path, name="dump.bin")
    [post] = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    assert post.files == {"dump.bin": data}


async def test_a_file_without_a_caption_has_no_text(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope], report: Path
) -> None:
    channel, envelope = connected
    await channel.files.send_file(envelope.reply_target, report, name="data.bin")
    [post] = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    assert post.files == {"data.bin": PNG}
    assert post.body is not None and post.body["content"] is None


async def test_a_long_caption_goes_with_the_file_first_and_the_rest_after(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope], report: Path
) -> None:
    channel, envelope = connected
    caption = "\n\n".join(f"Paragraph {n}: " + "words " * 120 for n in range(6))
    chunks = render_chunks(caption)
    sent = await channel.files.send_file(
        envelope.reply_target, report, name="plot.png", caption=caption, key=KEY
    )
    posts = fake.calls_to("POST", f"/channels/{GENERAL}/messages")
    assert len(sent) == len(posts) == len(chunks) >= 2
    assert [p.body["content"] for p in posts if p.body is not None] == chunks
    assert [bool(p.files) for p in posts] == [True] + [False] * (len(chunks) - 1)
    assert [p.body is not None and "message_reference" in p.body for p in posts] == [True] + [
        False
    ] * (len(chunks) - 1)
    nonces = [p.body["nonce"] for p in posts if p.body is not None]
    assert nonces == [reply_nonce(KEY, i, chunk) for i, chunk in enumerate(chunks)]


async def test_a_repeated_send_under_the_same_key_is_not_doubled(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope], report: Path
) -> None:
    channel, envelope = connected
    first = await channel.files.send_file(
        envelope.reply_target, report, name="plot.png", caption="the plot", key=KEY
    )
    again = await channel.files.send_file(
        envelope.reply_target, report, name="plot.png", caption="the plot", key=KEY
    )
    assert first == again
    assert sum(1 for m in fake.messages.values() if m["attachments"]) == 1


@pytest.mark.parametrize("caption", ["the plot", ""])
async def test_the_delivery_check_finds_a_file_reply_by_its_caption(
    connected: tuple[DiscordChannel, IngressEnvelope], report: Path, caption: str
) -> None:
    channel, envelope = connected
    target = envelope.reply_target
    sent = await channel.files.send_file(target, report, name="plot.png", caption=caption, key=KEY)
    found = await channel.delivery.find_delivered(
        target, key=KEY, text=caption, after_message_id=envelope.message_id
    )
    assert found == sent


async def test_in_a_thread_opened_for_the_request(
    fake: FakeDiscord, store: Store, report: Path
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store, thread_per_request=True)
    async with running(channel, host):
        message = said(fake, f"<@{BOT_ID}> plot it", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
        await channel.files.send_file(
            envelope.reply_target, report, name="plot.png", caption="done"
        )
    [opened] = fake.calls_to("POST", r"/channels/\d+/messages/\d+/threads")
    assert opened.path == f"/channels/{GENERAL}/messages/{message['id']}/threads"
    [post] = fake.calls_to("POST", f"/channels/{message['id']}/messages")
    assert post.files == {"plot.png": PNG}
    assert post.body is not None and "message_reference" not in post.body


async def test_through_an_application_commands_interaction(
    fake: FakeDiscord, store: Store, report: Path
) -> None:
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        interaction_id, _ = await invoke(fake, "help", ALICE, DM)
        [envelope] = await host.wait_envelopes(1)
        [sent] = await channel.files.send_file(envelope.reply_target, report, name="plot.png")
    [follow_up] = fake.calls_to("POST", rf"/webhooks/\d+/itoken{interaction_id}")
    assert follow_up.files == {"plot.png": PNG}
    assert [m["id"] for m in fake.follow_ups[interaction_id]] == [sent.message_id]
    assert fake.calls_to("POST", r"/channels/\d+/messages") == []


async def test_the_upload_limit_is_the_guilds(fake: FakeDiscord, store: Store) -> None:
    boosted = fake.add_guild(channels={"800000000000000020": "boosted"})
    boosted.premium_tier = 2
    host = RecordingHost()
    channel = make_channel(fake, store)
    async with running(channel, host):
        await fake.dispatch("MESSAGE_CREATE", said(fake, "hi", mentions=[BOT]))
        await fake.dispatch("MESSAGE_CREATE", said(fake, "hi", channel_id=DM))
        await fake.dispatch(
            "MESSAGE_CREATE", said(fake, "hi", channel_id="800000000000000020", mentions=[BOT])
        )
        general, dm, boosted_one = await host.wait_envelopes(3)
        limits = [channel.files.upload_limit(e.reply_target) for e in (general, dm, boosted_one)]
    assert limits == [10 * MIB, 10 * MIB, 50 * MIB]


async def test_a_file_over_the_limit_is_refused_before_sending(
    fake: FakeDiscord, connected: tuple[DiscordChannel, IngressEnvelope], tmp_path: Path
) -> None:
    channel, envelope = connected
    big = tmp_path / "big.bin"
    with big.open("wb") as out:
        out.truncate(10 * MIB + 1)  # sparse: nothing is written
    with pytest.raises(ChannelError, match=r"big\.bin is larger than 10 MiB"):
        await channel.files.send_file(envelope.reply_target, big, name="big.bin")
    assert fake.calls_to("POST", f"/channels/{GENERAL}/messages") == []


async def test_a_missing_file_is_a_plain_error(
    connected: tuple[DiscordChannel, IngressEnvelope], tmp_path: Path
) -> None:
    channel, envelope = connected
    with pytest.raises(ChannelError, match=r"gone\.txt cannot be read"):
        await channel.files.send_file(envelope.reply_target, tmp_path / "gone.txt", name="gone.txt")


async def test_discords_own_refusal_of_a_large_file_is_a_plain_error(
    fake: FakeDiscord, store: Store, tmp_path: Path
) -> None:
    """The server lost its boosts after discord.py read its limit: Discord answers 413."""
    boosted = fake.add_guild(channels={"800000000000000020": "boosted"})
    boosted.premium_tier = 2
    host = RecordingHost()
    channel = make_channel(fake, store)
    big = tmp_path / "big.bin"
    with big.open("wb") as out:
        out.truncate(10 * MIB + 1)
    async with running(channel, host):
        message = said(fake, "hi", channel_id="800000000000000020", mentions=[BOT])
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
        boosted.premium_tier = 0
        with pytest.raises(ChannelError, match=r"Discord refused big\.bin: it is larger"):
            await channel.files.send_file(envelope.reply_target, big, name="big.bin")
    assert len(fake.calls_to("POST", "/channels/800000000000000020/messages")) == 1
    assert not any(m["attachments"] for m in fake.messages.values())
