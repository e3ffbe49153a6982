"""What a file is, judged by its content; and what its name claims it is.

The content decides: an image by its signature (:func:`bot.attachments.images.sniff_image`),
a PDF by its ``%PDF-`` header, text by decoding cleanly (UTF-8, or UTF-16 with its byte
order mark, or Windows-1252) with no NUL and almost no control characters, and anything else
is binary, named from a short table of signatures where one matches. The name only serves
to say when it disagrees (``report.png`` that is text): the model is told, and the file is
treated as what it is.
"""

from __future__ import annotations

import codecs
import mimetypes
import re
from dataclasses import dataclass

from bot.attachments.images import MEDIA_TYPES, sniff_image
from bot.store.attachments import AttachmentKind

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
    names it for an image; ``text`` the decoded content of a text file."""

    kind: AttachmentKind
    mime_type: str
    label: str
    image_format: str = ""
    text: str | None = None


def detect(data: bytes, *, name: str = "") -> Detected:
    """What ``data`` (a whole file) is; ``name`` only picks a text file's media type."""
    image = sniff_image(data[:64])
    if image is not None:
        mime = MEDIA_TYPES.get(image, f"image/{image.lower()}")
        return Detected(
            kind=AttachmentKind.IMAGE, mime_type=mime, label=f"{image} image", image_format=image
        )
    if b"%PDF-" in data[:1024]:
        return Detected(kind=AttachmentKind.PDF, mime_type="application/pdf", label="PDF")
    text = decode_text(data)
    if text is not None:
        claimed = _MIMES.guess_type(name, strict=False)[0] or ""
        mime = claimed if kind_by_name(name) is AttachmentKind.TEXT and claimed else "text/plain"
        return Detected(kind=AttachmentKind.TEXT, mime_type=mime, label="text", text=text)
    return _binary(data)


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


def decode_text(data: bytes) -> str | None:
    """``data`` as text, or None when it is not text (see the module doc)."""
    for bom, encoding in ((codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if data.startswith(bom):
            return _clean(data, encoding)
    if b"\x00" in data:
        return None
    return _clean(data, "utf-8-sig") or _clean(data, "cp1252")


def _clean(data: bytes, encoding: str) -> str | None:
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    if "\x00" in text:
        return None
    if text and len(_CONTROL.findall(text)) > CONTROL_SHARE * len(text):
        return None
    return text


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
