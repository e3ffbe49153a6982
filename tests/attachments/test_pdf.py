"""A PDF's text read in a child process: pages, limits, damaged and hostile files."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.attachments.pdf import read_pdf
from bot.errors import AttachmentError
from tests.attachments.pdfs import bomb_pdf, corrupt_pdf, text_pdf


def _saved(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "file.pdf"
    path.write_bytes(data)
    return path


async def test_text_of_each_page_under_its_number(tmp_path: Path) -> None:
    path = _saved(tmp_path, text_pdf(["Quarterly (draft) report", "Revenue rose", "Annex"]))
    read = await read_pdf(path, max_pages=10, timeout_s=60)
    assert read.text == (
        "[page 1]\nQuarterly (draft) report\n\n[page 2]\nRevenue rose\n\n[page 3]\nAnnex"
    )
    assert (read.pages, read.read, read.truncated) == (3, 3, False)


async def test_pages_and_characters_are_capped(tmp_path: Path) -> None:
    path = _saved(tmp_path, text_pdf([f"page {n} " + "words " * 30 for n in range(1, 6)]))
    by_pages = await read_pdf(path, max_pages=2, timeout_s=60)
    assert (by_pages.pages, by_pages.read, by_pages.truncated) == (5, 2, True)
    assert "[page 3]" not in by_pages.text
    by_chars = await read_pdf(path, max_pages=10, timeout_s=60, max_chars=250)
    assert len(by_chars.text) == 250
    assert by_chars.truncated
    assert by_chars.read < 5


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (corrupt_pdf(), "corrupt or cannot be read"),
        (bomb_pdf(), "more data than can be read safely"),
    ],
    ids=["corrupt", "decompression-bomb"],
)
async def test_damaged_and_hostile_pdfs_get_a_sentence(
    tmp_path: Path, data: bytes, words: str
) -> None:
    with pytest.raises(AttachmentError, match=words):
        await read_pdf(_saved(tmp_path, data), max_pages=10, timeout_s=60)


async def test_a_reader_that_overruns_its_time_is_stopped(tmp_path: Path) -> None:
    # no Python starts and reads a PDF within a microsecond: the timeout always fires
    path = _saved(tmp_path, text_pdf(["slow"]))
    with pytest.raises(AttachmentError, match="took longer than 1e-06 s, so it was stopped"):
        await read_pdf(path, max_pages=10, timeout_s=0.000001)
