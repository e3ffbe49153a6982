"""Images a user sent, made fit for every provider the model may be behind.

One limit suits them all: the long side at most :data:`MAX_LONG_SIDE` pixels (what Anthropic
scales larger images down to anyway) and the encoded file at most :data:`MAX_ENCODED_BYTES`
(Anthropic's 5 MB per image, once base64 has grown it by a third). An image already within
both, in one of the four formats every provider takes (PNG, JPEG, GIF, WebP), with one frame
and no rotation to apply, is sent as it is; any other is decoded (its first frame only),
turned upright, scaled down and encoded again: PNG when it was lossless and stays small
enough, else JPEG, smaller each time until it fits.

Everything here reads untrusted bytes: the file is verified before it is decoded, and an
image with more pixels than Pillow's ``Image.MAX_IMAGE_PIXELS`` (a decompression bomb: a few
kilobytes that decode into gigabytes) is refused before any is decoded. Pillow only warns
below twice that limit; the warning is made an error for the whole process here, the one
place that opens images.
"""

from __future__ import annotations

import asyncio
import io
import warnings
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from bot.errors import AttachmentError
from bot.providers.base import ImagePart

warnings.filterwarnings("error", category=Image.DecompressionBombWarning)

MAX_LONG_SIDE = 1568
MAX_ENCODED_BYTES = 3_750_000
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
"""The formats every provider accepts, as Pillow names them, and their media types."""
READABLE_FORMATS = (*MEDIA_TYPES, "BMP", "TIFF")
"""What is decoded at all: the four, and two more that are converted to one of them."""
_LOSSLESS = frozenset({"PNG", "GIF", "BMP", "TIFF"})
_ORIENTATION = 0x0112
_JPEG_QUALITIES = (85, 70)
_SMALLEST_SIDE = 64


_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)

_BMP_HEADERS = frozenset(n.to_bytes(4, "little") for n in (12, 40, 52, 56, 64, 108, 124))


def sniff_image(head: bytes) -> str | None:
    """The image format whose signature ``head`` (a file's first bytes) starts with, as
    Pillow names it (``PNG``, ``JPEG``, ``GIF``, ``WEBP``, ``BMP``, ``TIFF``), or None."""
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WEBP"
    if head[:2] == b"BM" and head[6:10] == bytes(4) and head[14:18] in _BMP_HEADERS:
        return "BMP"  # two letters alone would take any text starting "BM" for one
    for signature, fmt in _SIGNATURES:
        if head.startswith(signature):
            return fmt
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedImage:
    """An image ready for the model: ``part`` within every provider's limits (``shown``
    its size in pixels), ``format`` and ``size`` as the user sent it, ``resized`` when
    ``part`` is not the file's own bytes, ``frames`` how many it had (only the first is
    shown)."""

    part: ImagePart
    format: str
    size: tuple[int, int]
    shown: tuple[int, int]
    frames: int
    resized: bool

    def describe(self, *, shown_to_model: bool = True) -> str:
        """``PNG image, 2400×1600, shown at 1568×1045`` (what the model's line says); without
        the size it is shown at when the model is not shown it."""
        width, height = self.size
        resized = self.resized and shown_to_model
        shown = f", shown at {self.shown[0]}×{self.shown[1]}" if resized else ""
        animated = f", first of {self.frames} frames" if self.frames > 1 else ""
        return f"{self.format} image, {width}×{height}{shown}{animated}"


def prepare_image(data: bytes, *, name: str = "") -> PreparedImage:
    """``data`` (a whole image file) as an image the model can be shown. Raises
    :class:`~bot.errors.AttachmentError`, with a sentence the user can be shown, when it is
    not an image Pillow reads, is corrupt or truncated, or has too many pixels. CPU-bound:
    call it off the event loop (:func:`load_image_part` does)."""
    try:
        with Image.open(io.BytesIO(data), formats=READABLE_FORMATS) as probe:
            probe.verify()
        with Image.open(io.BytesIO(data), formats=READABLE_FORMATS) as image:
            return _prepare(image, data, name)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise AttachmentError(
            f"the image has more than {Image.MAX_IMAGE_PIXELS:,} pixels, too many to open safely"
        ) from None
    except UnidentifiedImageError:
        if sniff_image(data) is not None:  # an image's signature, and nothing readable after
            raise AttachmentError("the image is corrupt or truncated") from None
        raise AttachmentError("it is not an image in a format that can be read") from None
    except AttachmentError:
        raise
    except Exception:
        # Boundary for untrusted bytes: Pillow's parsers raise many kinds of error
        # (OSError, SyntaxError, struct.error, ValueError, …) on a damaged file.
        raise AttachmentError("the image is corrupt or truncated") from None


def _prepare(image: Image.Image, data: bytes, name: str) -> PreparedImage:
    fmt = image.format or ""
    width, height = image.size
    frames = int(getattr(image, "n_frames", 1))
    upright = image.getexif().get(_ORIENTATION, 1) in (0, 1)
    if (
        fmt in MEDIA_TYPES
        and frames == 1
        and upright
        and max(width, height) <= MAX_LONG_SIDE
        and len(data) <= MAX_ENCODED_BYTES
    ):
        image.load()  # decoded once, so a truncated body is found here, not by the provider
        part = ImagePart(
            media_type=MEDIA_TYPES[fmt], data=data, name=name, width=width, height=height
        )
        size = (width, height)
        return PreparedImage(
            part=part, format=fmt, size=size, shown=size, frames=frames, resized=False
        )
    if fmt == "JPEG":
        # decode at a reduced scale straight away: a huge JPEG never takes its full memory
        image.draft("RGB", (MAX_LONG_SIDE, MAX_LONG_SIDE))
    image.seek(0)
    image.load()
    frame = ImageOps.exif_transpose(image) or image
    if frame.mode not in ("RGB", "RGBA", "L", "LA"):
        # palette and other modes: scaled in full colour (a palette scales without smoothing)
        frame = frame.convert("RGBA" if "transparency" in frame.info else "RGB")
    frame.thumbnail((MAX_LONG_SIDE, MAX_LONG_SIDE), Image.Resampling.LANCZOS)
    media_type, encoded, shown = _encode(frame, lossless=fmt in _LOSSLESS)
    return PreparedImage(
        part=ImagePart(
            media_type=media_type, data=encoded, name=name, width=shown[0], height=shown[1]
        ),
        format=fmt,
        size=(width, height),
        shown=shown,
        frames=frames,
        resized=True,
    )


def _encode(frame: Image.Image, *, lossless: bool) -> tuple[str, bytes, tuple[int, int]]:
    """The smallest acceptable encoding tried in order: PNG for a lossless source, then
    JPEG at falling quality, then JPEG of ever smaller copies."""
    has_alpha = frame.mode in ("RGBA", "LA") or "transparency" in frame.info
    if lossless:
        png = _save(frame.convert("RGBA" if has_alpha else "RGB"), "PNG")
        if len(png) <= MAX_ENCODED_BYTES:
            return "image/png", png, frame.size
    flat = _flatten(frame) if has_alpha else frame.convert("RGB")
    while True:
        for quality in _JPEG_QUALITIES:
            jpeg = _save(flat, "JPEG", quality=quality)
            if len(jpeg) <= MAX_ENCODED_BYTES:
                return "image/jpeg", jpeg, flat.size
        smaller = (max(1, flat.width * 3 // 4), max(1, flat.height * 3 // 4))
        if max(smaller) < _SMALLEST_SIDE:
            raise AttachmentError("the image cannot be made small enough to show")
        flat = flat.resize(smaller, Image.Resampling.LANCZOS)


def _flatten(frame: Image.Image) -> Image.Image:
    """``frame`` over white (JPEG has no transparency; black would hide dark text)."""
    rgba = frame.convert("RGBA")
    background = Image.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background


def _save(frame: Image.Image, fmt: str, **options: int) -> bytes:
    out = io.BytesIO()
    frame.save(out, format=fmt, **options)
    return out.getvalue()


def image_part(path: Path, *, name: str = "") -> ImagePart:
    """The saved image at ``path`` as an :class:`ImagePart` within every provider's limits
    (see :func:`prepare_image` for what it raises). CPU-bound: off the event loop, use
    :func:`load_image_part`."""
    try:
        data = path.read_bytes()
    except OSError:
        raise AttachmentError("the saved file is no longer there") from None
    return prepare_image(data, name=name or path.name).part


async def load_image_part(path: Path, *, name: str = "") -> ImagePart:
    """:func:`image_part`, run on a worker thread (decoding and resizing take a while)."""
    return await asyncio.to_thread(image_part, path, name=name)
