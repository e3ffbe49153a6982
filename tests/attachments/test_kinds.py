"""Files judged by their content, and names that say otherwise."""

from __future__ import annotations

import codecs
import io
from pathlib import Path

import pytest
from PIL import Image

from bot.attachments.kinds import (
    PIECE_BYTES,
    Detected,
    contradiction,
    copy_as_utf8,
    detect_file,
    detect_stream,
    kind_by_name,
    text_beginning,
)
from bot.store import AttachmentKind
from tests.attachments.images import encoded, png
from tests.attachments.pdfs import text_pdf


def detect(data: bytes, *, name: str = "") -> Detected:
    return detect_stream(io.BytesIO(data), name=name)


SMALL = Image.new("RGB", (8, 8), (1, 2, 3))


@pytest.mark.parametrize(
    ("data", "kind", "mime", "label"),
    [
        (png(8, 8), AttachmentKind.IMAGE, "image/png", "PNG image"),
        (encoded(SMALL, "JPEG"), AttachmentKind.IMAGE, "image/jpeg", "JPEG image"),
        (encoded(SMALL, "GIF"), AttachmentKind.IMAGE, "image/gif", "GIF image"),
        (encoded(SMALL, "WEBP"), AttachmentKind.IMAGE, "image/webp", "WEBP image"),
        (text_pdf(["x"]), AttachmentKind.PDF, "application/pdf", "PDF"),
        (b"a,b\n1,2\n", AttachmentKind.TEXT, "text/csv", "text"),
        (b"PK\x03\x04" + bytes(40), AttachmentKind.BINARY, "application/zip", "ZIP archive"),
        (
            b"\x7fELF\x02\x01\x01" + bytes(40),
            AttachmentKind.BINARY,
            "application/x-executable",
            "ELF executable",
        ),
        (bytes(range(256)) * 4, AttachmentKind.BINARY, "application/octet-stream", "binary data"),
        (b"BMW report, quarter 3\n", AttachmentKind.TEXT, "text/csv", "text"),
    ],
    ids=["png", "jpeg", "gif", "webp", "pdf", "csv", "zip", "elf", "bytes", "starts-BM"],
)
def test_the_content_decides(data: bytes, kind: AttachmentKind, mime: str, label: str) -> None:
    detected = detect(data, name="data.csv")
    assert (detected.kind, detected.mime_type, detected.label) == (kind, mime, label)


@pytest.mark.parametrize(
    ("data", "text"),
    [
        ("naïve café ✓\n".encode(), "naïve café ✓\n"),
        (codecs.BOM_UTF8 + b"with a BOM", "with a BOM"),
        (codecs.BOM_UTF16_LE + "wide text".encode("utf-16-le"), "wide text"),
        ("Grüße aus Köln".encode("cp1252"), "Grüße aus Köln"),
        (b"\x1b[31mred\x1b[0m log line\n", "\x1b[31mred\x1b[0m log line\n"),
    ],
    ids=["utf-8", "utf-8-bom", "utf-16", "windows-1252", "ansi-log"],
)
def test_text_in_its_encodings(data: bytes, text: str) -> None:
    detected = detect(data, name="notes.txt")
    assert detected.kind is AttachmentKind.TEXT
    assert data.decode(detected.encoding) == text


@pytest.mark.parametrize(
    "data",
    [b"text\x00with a NUL", b"\x01\x02\x03\x04 mostly control \x05\x06\x07\x08\x0e\x0f"],
    ids=["nul", "controls"],
)
def test_not_text(data: bytes) -> None:
    assert detect(data, name="notes.txt").kind is AttachmentKind.BINARY


def test_a_name_that_contradicts_the_content_is_named() -> None:
    as_text = detect(b"id,total\n1,2\n", name="chart.png")
    assert as_text.kind is AttachmentKind.TEXT
    assert as_text.mime_type == "text/plain"  # not the name's image/png
    assert contradiction("chart.png", as_text) == "named .png, but its content is text"
    as_png = detect(png(4, 4), name="notes.txt")
    assert contradiction("notes.txt", as_png) == "named .txt, but its content is PNG image"
    assert contradiction("photo.png", detect(png(4, 4))) == ""
    assert contradiction("no-extension", as_text) == ""
    assert contradiction("clip.heic", detect(b"\x00\x00\x00\x18ftypheic" + bytes(20))) == ""


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("a.CSV", AttachmentKind.TEXT),
        ("config.yaml", AttachmentKind.TEXT),
        ("main.rs", AttachmentKind.TEXT),
        ("logo.svg", AttachmentKind.TEXT),
        ("scan.pdf", AttachmentKind.PDF),
        ("photo.jpeg", AttachmentKind.IMAGE),
        ("bundle.zip", AttachmentKind.BINARY),
        ("README", None),
    ],
)
def test_kind_by_name(name: str, kind: AttachmentKind | None) -> None:
    assert kind_by_name(name) is kind


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [("utf-8", b""), ("utf-8", codecs.BOM_UTF8), ("utf-16-le", codecs.BOM_UTF16_LE)],
)
def test_a_file_is_checked_for_text_a_piece_at_a_time(
    tmp_path: Path, encoding: str, bom: bytes
) -> None:
    # characters of one to four bytes cut across every piece boundary, a last line with no
    # line break: counted and decoded as if the file were read whole
    text = "".join(f"{n} aé€🙂\n" for n in range(400_000)) + "end"
    path = tmp_path / "wide.txt"
    path.write_bytes(bom + text.encode(encoding))
    assert path.stat().st_size > 3 * PIECE_BYTES
    detected = detect_file(path, name="wide.txt")
    assert detected.kind is AttachmentKind.TEXT
    assert (detected.chars, detected.lines) == (len(text), 400_001)
    assert text_beginning(path, detected.encoding, 20_000) == text[:20_000]
    copy = tmp_path / "copy.txt"
    copy_as_utf8(path, detected.encoding, copy)
    assert copy.read_text("utf-8") == text


def test_a_nul_late_in_a_large_file_makes_it_binary(tmp_path: Path) -> None:
    path = tmp_path / "late.txt"
    path.write_bytes(b"plain text\n" * 500_000 + b"\x00")
    assert detect_file(path).kind is AttachmentKind.BINARY
