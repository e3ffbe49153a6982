"""What a file is, judged by its content; and what its name claims it is.

The content decides: an image by its signature (:func:`bot.attachments.images.sniff_image`),
a PDF by its ``%PDF-`` header, text by decoding cleanly (UTF-8, or UTF-16 with its byte
order mark, or Windows-1252) with no NUL and almost no control characters, and anything else
is binary, named from a short table of signatures where one matches. The name only serves
to say when it disagrees (``report.png`` that is text): the model is told, and the file is
treated as what it is.

A file is never held whole to find out: its beginning names an image or a PDF, and text is
checked (and later copied, and its beginning shown) a piece of :data:`PIECE_BYTES` at a time,
so a 20 MB text of four-byte characters costs no 80 MB string.
"""

from __future__ import annotations

import codecs
import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from bot.attachments.images import MEDIA_TYPES, sniff_image
from bot.store.attachments import AttachmentKind

#: What is read of a file to name an image, a PDF or a binary format by its signature.
HEAD_BYTES = 64 * 1024
#: What is read at a time to check the whole of a file for text.
PIECE_BYTES = 1024 * 1024
#: The share of control characters (other than tab, line breaks, form feed and escape)
#: above which decoded bytes are not taken for text.
CONTROL_SHARE = 0.01
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_MIMES = mimetypes.MimeTypes()  # the built-in table only: the same answer on every host
_TEXT_APPLICATIONS = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-sh",
        "application/x-csh",
        "application/x-tex",
        "application/x-latex",
        "application/x-python-code",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/sql",
    }
)
_TEXT_EXTENSIONS = frozenset(
    """md markdown rst log yaml yml toml ini cfg conf env properties csv tsv json jsonl ndjson
    sql go rs ts tsx jsx kt kts swift rb php pl lua r scala cs fs dart vue svelte gradle
    dockerfile makefile tf hcl proto graphql diff patch srt vtt""".split()  # noqa: SIM905
)
_BINARY_SIGNATURES = (
    (b"PK\x03\x04", "ZIP archive", "application/zip"),
    (b"\x1f\x8b", "gzip archive", "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive", "application/x-7z-compressed"),
    (b"Rar!\x1a\x07", "RAR archive", "application/vnd.rar"),
    (b"\xfd7zXZ\x00", "XZ archive", "application/x-xz"),
    (b"BZh", "bzip2 archive", "application/x-bzip2"),
    (b"\x7fELF", "ELF executable", "application/x-executable"),
    (b"MZ", "Windows executable", "application/vnd.microsoft.portable-executable"),
    (b"SQLite format 3\x00", "SQLite database", "application/vnd.sqlite3"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "Office document (legacy)", "application/x-ole-storage"),
    (b"OggS", "Ogg media", "application/ogg"),
    (b"fLaC", "FLAC audio", "audio/flac"),
    (b"ID3", "MP3 audio", "audio/mpeg"),
    (b"\x1aE\xdf\xa3", "Matroska/WebM video", "video/webm"),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Detected:
    """What the content is: its ``kind``, ``mime_type`` and a ``label`` for the model's
    line (``PNG image``, ``text``, ``PDF``, ``ZIP archive``); ``image_format`` as Pillow
    names it for an image; for a text file its ``encoding`` (a Python codec), how many
    ``chars`` and ``lines`` it has (a file is never held whole: :func:`detect_file`)."""

    kind: AttachmentKind
    mime_type: str
    label: str
    image_format: str = ""
    encoding: str = ""
    chars: int = 0
    lines: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class TextScan:
    """A file that decodes cleanly as ``encoding``: its ``chars`` and ``lines``."""

    encoding: str
    chars: int
    lines: int


def detect_file(path: Path, *, name: str = "") -> Detected:
    """What the file at ``path`` is, read in pieces of at most :data:`PIECE_BYTES` (see
    :func:`detect_stream`). Raises OSError when it cannot be read."""
    with path.open("rb") as handle:
        return detect_stream(handle, name=name)


def detect_stream(handle: BinaryIO, *, name: str = "") -> Detected:
    """What the file open as ``handle`` is: its first :data:`HEAD_BYTES` name an image or a
    PDF, else the whole is checked for text a piece at a time (memory bounded whatever its
    size), else it is binary."""
    head = handle.read(HEAD_BYTES)
    image = sniff_image(head[:64])
    if image is not None:
        mime = MEDIA_TYPES.get(image, f"image/{image.lower()}")
        return Detected(
            kind=AttachmentKind.IMAGE, mime_type=mime, label=f"{image} image", image_format=image
        )
    if b"%PDF-" in head[:1024]:
        return Detected(kind=AttachmentKind.PDF, mime_type="application/pdf", label="PDF")
    scan = scan_text(handle)
    if scan is not None:
        claimed = _MIMES.guess_type(name, strict=False)[0] or ""
        mime = claimed if kind_by_name(name) is AttachmentKind.TEXT and claimed else "text/plain"
        return Detected(
            kind=AttachmentKind.TEXT,
            mime_type=mime,
            label="text",
            encoding=scan.encoding,
            chars=scan.chars,
            lines=scan.lines,
        )
    return _binary(head)


def _binary(data: bytes) -> Detected:
    head = data[:64]
    if head[4:12] in (b"ftypheic", b"ftypheix", b"ftypmif1"):
        return Detected(kind=AttachmentKind.BINARY, mime_type="image/heic", label="HEIC image")
    if head[4:8] == b"ftyp":
        return Detected(kind=AttachmentKind.BINARY, mime_type="video/mp4", label="MP4 video")
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return Detected(kind=AttachmentKind.BINARY, mime_type="audio/wav", label="WAV audio")
    for signature, label, mime in _BINARY_SIGNATURES:
        if head.startswith(signature):
            return Detected(kind=AttachmentKind.BINARY, mime_type=mime, label=label)
    return Detected(
        kind=AttachmentKind.BINARY, mime_type="application/octet-stream", label="binary data"
    )


def scan_text(handle: BinaryIO) -> TextScan | None:
    """Whether the file open as ``handle`` is text (see the module doc), read from its start
    a piece at a time; None when it is not."""
    handle.seek(0)
    start = handle.read(2)
    if start in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return _scan(handle, "utf-16", nul_bytes=True)
    return _scan(handle, "utf-8-sig", nul_bytes=False) or _scan(handle, "cp1252", nul_bytes=False)


def _scan(handle: BinaryIO, encoding: str, *, nul_bytes: bool) -> TextScan | None:
    handle.seek(0)
    decoder = codecs.getincrementaldecoder(encoding)("strict")
    chars = controls = newlines = 0
    last = ""
    while True:
        block = handle.read(PIECE_BYTES)
        if not nul_bytes and b"\x00" in block:
            return None
        try:
            text = decoder.decode(block, final=not block)
        except UnicodeDecodeError:
            return None
        if "\x00" in text:
            return None
        chars += len(text)
        controls += len(_CONTROL.findall(text))
        newlines += text.count("\n")
        last = text[-1:] or last
        if not block:
            break
    if chars and controls > CONTROL_SHARE * chars:
        return None
    return TextScan(encoding=encoding, chars=chars, lines=newlines + (last not in ("", "\n")))


def text_beginning(path: Path, encoding: str, chars: int) -> str:
    """The first ``chars`` characters of the text file at ``path``, decoded as
    ``encoding`` (read no further than they need)."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    parts: list[str] = []
    have = 0
    with path.open("rb") as handle:
        while have < chars:
            block = handle.read(min(PIECE_BYTES, 4 * (chars - have) + 4))
            text = decoder.decode(block, final=not block)
            parts.append(text)
            have += len(text)
            if not block:
                break
    return "".join(parts)[:chars]


def copy_as_utf8(source: Path, encoding: str, target: Path) -> None:
    """The text file at ``source`` (``encoding``) written to ``target`` as UTF-8, a piece
    at a time."""
    decoder = codecs.getincrementaldecoder(encoding)("replace")
    with source.open("rb") as inp, target.open("w", encoding="utf-8", newline="") as out:
        while True:
            block = inp.read(PIECE_BYTES)
            out.write(decoder.decode(block, final=not block))
            if not block:
                return


def kind_by_name(name: str) -> AttachmentKind | None:
    """What ``name``'s extension claims the file is; None when it claims nothing known."""
    extension = name.rpartition(".")[2].lower() if "." in name else ""
    if extension in _TEXT_EXTENSIONS:
        return AttachmentKind.TEXT
    mime = _MIMES.guess_type(name, strict=False)[0] if extension else None
    if mime is None:
        return None
    if mime == "application/pdf":
        return AttachmentKind.PDF
    if mime.startswith("text/") or mime in _TEXT_APPLICATIONS or mime.endswith(("+xml", "+json")):
        return AttachmentKind.TEXT  # SVG (image/svg+xml) among them: it is text
    if mime.startswith("image/"):
        return AttachmentKind.IMAGE
    return AttachmentKind.BINARY


def contradiction(name: str, detected: Detected) -> str:
    """``named .png, but its content is text`` when ``name`` claims another kind than the
    content is; empty when it agrees or claims nothing."""
    claimed = kind_by_name(name)
    if claimed is None or claimed is detected.kind:
        return ""
    if _MIMES.guess_type(name, strict=False)[0] == detected.mime_type:
        return ""  # a HEIC photo named .heic: an image the model is not shown, as named
    extension = name.rpartition(".")[2]
    return f"named .{extension}, but its content is {detected.label}"
