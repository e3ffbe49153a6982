"""Files users attach, downloaded with the real discord.py against the loopback fake's CDN:
the bytes arrive with no bot token sent to the CDN; an expired or revoked signed URL is
renewed by fetching the message again and tried once more; an address that is not Discord's
CDN (or the configured API's origin), directly or by redirect, is refused without being
fetched; a file over the limit, or longer than it said, is cut off; errors name the file,
never its URL."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace

import pytest

from bot.envelope import Attachment
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge
from bot.store import Store
from channels.discord.adapter import DiscordChannel
from channels.discord.cdn import AttachmentRef
from channels.discord.downloads import DOWNLOAD_LIMIT
from tests.fakes.discord_payloads import JSON
from tests.fakes.discord_server import BOT_TOKEN, FakeDiscord
from tests.fakes.discord_setup import GENERAL, RecordingHost, make_channel, running, said

pytestmark = pytest.mark.usefixtures("discord_env")

CSV = b"name,score\nalice,3\nbob,5\n" * 200


@pytest.fixture
async def host() -> RecordingHost:
    return RecordingHost()


@pytest.fixture
async def channel(
    fake: FakeDiscord, store: Store, host: RecordingHost
) -> AsyncIterator[DiscordChannel]:
    """The adapter, connected, delivering to ``host``."""
    adapter = make_channel(fake, store)
    async with running(adapter, host):
        yield adapter


@pytest.fixture
def attach(fake: FakeDiscord, host: RecordingHost) -> Callable[[JSON], Awaitable[Attachment]]:
    """Attach an attachment object to a message alice posts (once per test); the
    envelope's attachment."""

    async def attached(item: JSON) -> Attachment:
        message = said(fake, "see the file", attachments=[item])
        await fake.dispatch("MESSAGE_CREATE", message)
        [envelope] = await host.wait_envelopes(1)
        [attachment] = envelope.attachments
        return attachment

    return attached


Attach = Callable[[JSON], Awaitable[Attachment]]


async def download(channel: DiscordChannel, attachment: Attachment) -> bytes:
    return b"".join([chunk async for chunk in channel.downloads.download_attachment(attachment)])


def message_fetches(fake: FakeDiscord) -> int:
    return len(fake.calls_to("GET", rf"/channels/{GENERAL}/messages/\d+"))


async def test_the_adapter_offers_downloads(channel: DiscordChannel) -> None:
    assert channel.downloads is not None
    assert channel.downloads.download_limit() == DOWNLOAD_LIMIT


async def test_a_file_arrives_without_the_bot_token_going_to_the_cdn(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "scores.csv", CSV, content_type="text/csv")
    attachment = await attach(item)
    assert await download(channel, attachment) == CSV
    [hit] = fake.cdn.hits
    assert (hit.attachment_id, hit.status, hit.authorization) == (item["id"], 200, None)
    assert message_fetches(fake) == 0
    assert all(BOT_TOKEN not in str(c.query) for c in fake.calls)


async def test_an_expired_url_is_renewed_through_the_message_then_downloaded(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "plot.png", b"\x89PNG...", expired=True)
    attachment = await attach(item)
    assert await download(channel, attachment) == b"\x89PNG..."
    assert message_fetches(fake) == 1
    [hit] = fake.cdn.hits  # the expired URL was not even tried
    assert hit.status == 200 and hit.authorization is None


async def test_a_url_the_cdn_no_longer_honours_is_renewed_and_tried_once_more(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "log.txt", b"line 1\nline 2\n")
    attachment = await attach(item)
    fake.cdn.revoke(item["id"])
    assert await download(channel, attachment) == b"line 1\nline 2\n"
    assert [hit.status for hit in fake.cdn.hits] == [404, 200]
    assert message_fetches(fake) == 1


async def test_a_url_still_refused_after_renewal_is_an_error_naming_the_file(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "log.txt", b"x")
    attachment = await attach(item)
    fake.cdn.revoke(item["id"])
    fake.failing[rf"/channels/{GENERAL}/messages/\d+"] = 503
    with pytest.raises(AttachmentError) as raised:
        await download(channel, attachment)
    assert "log.txt" in str(raised.value) and "HTTP 503" in str(raised.value)
    assert "hm=" not in str(raised.value) and "/attachments/" not in str(raised.value)
    assert [hit.status for hit in fake.cdn.hits] == [404]


async def test_a_file_whose_message_was_deleted_cannot_be_renewed(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "notes.md", b"# notes", expired=True)
    attachment = await attach(item)
    await fake.delete_message(AttachmentRef.decode(attachment.ref).message_id)
    with pytest.raises(AttachmentError, match=r"notes\.md .*its message was deleted"):
        await download(channel, attachment)
    assert fake.cdn.hits == []


@pytest.mark.parametrize(
    "url",
    [
        "https://evil.example/attachments/1/2/x.png",
        "https://cdn.discordapp.com.evil.example/attachments/1/2/x.png",
        "http://cdn.discordapp.com/attachments/1/2/x.png",  # not https
        "https://cdn.discordapp.com:8443/attachments/1/2/x.png",
        "https://user@cdn.discordapp.com/attachments/1/2/x.png",
        "file:///etc/passwd",
        "/attachments/1/2/x.png",
    ],
)
async def test_the_discord_cdn_check_refuses_a_foreign_host(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach, url: str
) -> None:
    item = fake.cdn.attachment(GENERAL, "x.png", b"png")
    attachment = await attach({**item, "url": url})
    with pytest.raises(AttachmentRefused, match=r"x\.png is not on Discord's own file servers"):
        await download(channel, attachment)
    assert fake.cdn.hits == [] and message_fetches(fake) == 0


async def test_a_foreign_host_reachable_from_here_is_never_fetched(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    """``localhost`` reaches the fake itself under another origin: a fetch would show."""
    item = fake.cdn.attachment(GENERAL, "x.png", b"png", host="localhost")
    attachment = await attach(item)
    with pytest.raises(AttachmentRefused):
        await download(channel, attachment)
    assert fake.cdn.hits == []


async def test_a_redirect_off_the_cdn_is_refused_before_it_is_followed(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    elsewhere = fake.cdn.attachment(GENERAL, "y.png", b"other", host="localhost")
    item = fake.cdn.attachment(GENERAL, "x.png", b"png", redirect_to=elsewhere["url"])
    attachment = await attach(item)
    with pytest.raises(AttachmentRefused):
        await download(channel, attachment)
    assert [(hit.attachment_id, hit.status) for hit in fake.cdn.hits] == [(item["id"], 302)]


async def test_a_redirect_within_the_cdn_is_followed(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    target = fake.cdn.attachment(GENERAL, "y.png", b"moved here")
    item = fake.cdn.attachment(GENERAL, "x.png", b"", redirect_to=target["url"])
    attachment = await attach(item)
    assert await download(channel, replace(attachment, size=None)) == b"moved here"
    assert [hit.status for hit in fake.cdn.hits] == [302, 200]


async def test_a_file_over_the_limit_is_refused_before_downloading(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "huge.zip", b"zip", size=DOWNLOAD_LIMIT + 1)
    attachment = await attach(item)
    with pytest.raises(AttachmentTooLarge, match=r"huge\.zip is larger than 500 MB"):
        await download(channel, attachment)
    assert fake.cdn.hits == []


async def test_a_body_longer_than_its_stated_size_is_cut_off(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "short.txt", b"x" * 200_000, size=10)
    attachment = await attach(item)
    received: list[bytes] = []
    with pytest.raises(AttachmentError, match="more arrived than"):
        async for chunk in channel.downloads.download_attachment(attachment):
            received.append(chunk)
    assert sum(map(len, received)) <= 10


async def test_a_reader_may_stop_early(
    fake: FakeDiscord, channel: DiscordChannel, attach: Attach
) -> None:
    item = fake.cdn.attachment(GENERAL, "big.log", b"y" * 500_000)
    attachment = await attach(item)
    stream = channel.downloads.download_attachment(attachment)
    first = await anext(stream)
    await stream.aclose()  # type: ignore[attr-defined]  # an async generator
    assert 0 < len(first) < 500_000


async def test_an_old_bare_url_ref_still_downloads(
    fake: FakeDiscord, channel: DiscordChannel
) -> None:
    item = fake.cdn.attachment(GENERAL, "old.txt", b"from before")
    attachment = Attachment(kind="file", name="old.txt", size=11, ref=item["url"])
    assert await download(channel, attachment) == b"from before"
