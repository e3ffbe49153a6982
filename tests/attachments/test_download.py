"""Downloads streamed from a channel to a file under a size cap."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.attachments.download import download
from bot.envelope import Attachment, ChannelRef
from bot.errors import AttachmentError, AttachmentRefused, AttachmentTooLarge
from tests.fakes.channel import FileChannel

REF = ChannelRef(kind="telegram", alias="main")
KB = 1024


def _file(ref: str, size: int | None = None) -> Attachment:
    return Attachment(kind="file", name="report.bin", ref=ref, size=size)


def _left(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


async def test_a_file_is_saved_whole_and_private(tmp_path: Path) -> None:
    data = os.urandom(200 * KB)
    channel = FileChannel(REF, {"f1": data}, chunk_bytes=16 * KB)
    dest = tmp_path / "saved.bin"
    size = await download(channel, _file("f1"), dest, limit=1024 * KB, timeout_s=60)
    assert size == len(data)
    assert dest.read_bytes() == data
    assert dest.stat().st_mode & 0o777 == 0o600
    assert _left(tmp_path) == ["saved.bin"]


async def test_a_declared_size_over_the_cap_is_refused_before_any_byte(tmp_path: Path) -> None:
    channel = FileChannel(REF, {"f1": b"x" * 10})
    with pytest.raises(AttachmentTooLarge, match="files over 1 KB are not accepted"):
        await download(channel, _file("f1", size=5000), tmp_path / "s", limit=KB, timeout_s=60)
    assert channel.served == {}
    assert _left(tmp_path) == []


async def test_reading_stops_past_the_cap_and_the_partial_file_goes(tmp_path: Path) -> None:
    channel = FileChannel(REF, {"big": b"y" * (1024 * KB)}, chunk_bytes=8 * KB)
    with pytest.raises(AttachmentTooLarge, match="files over 100 KB are not accepted"):
        # no size given in advance: only the stream tells
        await download(channel, _file("big"), tmp_path / "s", limit=100 * KB, timeout_s=60)
    assert channel.served["big"] <= 100 * KB + 8 * KB  # one chunk past the cap, no more
    assert "big" in channel.closed
    assert _left(tmp_path) == []


async def test_the_channels_error_passes_as_it_is(tmp_path: Path) -> None:
    channel = FileChannel(REF)
    channel.failures["f1"] = AttachmentRefused("the file's address is not Telegram's")
    with pytest.raises(AttachmentRefused, match="not Telegram's"):
        await download(channel, _file("f1"), tmp_path / "s", limit=KB, timeout_s=60)
    with pytest.raises(AttachmentError, match="no longer available"):
        await download(channel, _file("gone"), tmp_path / "s", limit=KB, timeout_s=60)


class BrokenChannel(FileChannel):
    """Breaks the AttachmentDownloads contract: raises a library's own error midway, with
    a signed URL in its text, or never sends the rest."""

    def __init__(self, *, hang: bool = False) -> None:
        super().__init__(REF)
        self.hang = hang

    async def download_attachment(self, attachment: Attachment) -> AsyncIterator[bytes]:
        yield b"first part"
        if self.hang:
            await _forever()
        raise ConnectionResetError("https://cdn.example/file?signature=SECRET reset")


async def _forever() -> None:
    await asyncio.Event().wait()


async def test_a_broken_download_becomes_a_plain_sentence(tmp_path: Path) -> None:
    with pytest.raises(AttachmentError) as caught:
        await download(BrokenChannel(), _file("f"), tmp_path / "s", limit=KB, timeout_s=60)
    assert str(caught.value) == "the download failed"
    assert "SECRET" not in repr(caught.value)
    assert _left(tmp_path) == []


async def test_a_download_that_stalls_ends_at_its_timeout(tmp_path: Path) -> None:
    with pytest.raises(AttachmentError, match=r"took longer than 0\.05 s"):
        await download(
            BrokenChannel(hang=True), _file("f"), tmp_path / "s", limit=KB, timeout_s=0.05
        )
    assert _left(tmp_path) == []


async def test_a_disk_that_refuses_is_named(tmp_path: Path) -> None:
    channel = FileChannel(REF, {"f1": b"data"})
    with pytest.raises(AttachmentError, match="could not be saved on the bot's disk"):
        await download(channel, _file("f1"), tmp_path / "no-such-dir" / "s", limit=KB, timeout_s=60)
