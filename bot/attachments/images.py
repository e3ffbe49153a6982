"""Images a user sent, made fit for every provider the model may be behind.

One limit suits them all: the long side at most :data:`MAX_LONG_SIDE` pixels (what Anthropic
scales larger images down to anyway) and the encoded file at most :data:`MAX_ENCODED_BYTES`
(Anthropic's 5 MB per image, once base64 has grown it by a third). An image already within
both, in one of the four formats every provider takes (PNG, JPEG, GIF, WebP), with one frame
and no rotation to apply, is sent as it is; any other is decoded (its first frame only),
scaled down, turned upright and encoded again: PNG when it was lossless and stays small
enough, else JPEG, smaller each time until it fits.

Everything here reads untrusted bytes, so nothing is decoded in the daemon:
:mod:`bot.attachments.image_child` does it in a child process limited to
:data:`CHILD_MEMORY_BYTES` of address space and :data:`TIMEOUT_S` of CPU time, at most
:data:`DECODE_CHILDREN` at a time in the whole daemon (parallel downloads wait for a slot,
so their decoders cannot add up). Before a pixel is decoded the child checks the header: an
image that would decode into more than :data:`MAX_DECODED_PIXELS` pixels (a JPEG counted at
the reduced scale it is decoded at) is refused with a sentence that says so, as is one
claiming more than :data:`MAX_CLAIMED_PIXELS`. Pillow is never imported by the daemon for this.
"""

from __future__ import annotations

import asyncio
import math
import weakref
from dataclasses import dataclass
from pathlib import Path

from bot.errors import AttachmentError, AttachmentTooLarge
from bot.limited_child import ChildWords, ask_child
from bot.providers.base import ImagePart

CHILD = Path(__file__).with_name("image_child.py")
MAX_LONG_SIDE = 1568
MAX_ENCODED_BYTES = 3_750_000
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
"""The formats every provider accepts, as Pillow names them, and their media types."""
READABLE_FORMATS = (*MEDIA_TYPES, "BMP", "TIFF")
"""What is decoded at all: the four, and two more that are converted to one of them."""
MAX_DECODED_PIXELS = 24_000_000
"""The most pixels decoded of one image (6000×4000): far below Pillow's own limit (about
89 million), which would let one PNG take over a gigabyte. A JPEG counts at the scale it
is decoded at (``draft()``: down to an eighth of each side), so a 48-megapixel photo passes."""
CHILD_MEMORY_BYTES = 512 * 1024 * 1024
"""The address-space limit of one decoding child."""
MAX_CLAIMED_PIXELS = 89_478_485
"""The most pixels any image may claim (Pillow's own default limit): a JPEG between
:data:`MAX_DECODED_PIXELS` and this is decoded at a reduced scale; none beyond it is opened."""
DECODE_CHILDREN = 2
"""Decoding children at a time, in the whole daemon."""
TIMEOUT_S = 30.0
#: What the child writes at most: its answer line and an image within MAX_ENCODED_BYTES.
_MAX_OUTPUT = MAX_ENCODED_BYTES + 64 * 1024

_WORDS = ChildWords(
    error=AttachmentError,
    unstartable="the image decoder could not be started",
    took_too_long="decoding the image took longer than {timeout_s} s, so it was stopped",
    overran="decoding the image needed more memory or time than is allowed",
    log_event="image_decoder_failed",
)

_SIGNATURES = (
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"\xff\xd8\xff", "JPEG"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)

_BMP_HEADERS = frozenset(n.to_bytes(4, "little") for n in (12, 40, 52, 56, 64, 108, 124))

_SLOTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
    weakref.WeakKeyDictionary()
)


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


def too_many_pixels(
    width: int, height: int, *, most: int, jpeg: bool = False
) -> AttachmentTooLarge:
    """The refusal of an image of ``width`` × ``height`` pixels, over ``most``, as the user
    reads it."""
    megapixels = width * height / 1e6
    what = "a JPEG photo" if jpeg else "an image"
    return AttachmentTooLarge(
        f"it is {width:,}×{height:,} pixels ({megapixels:,.1f} megapixels), more than the "
        f"{most / 1e6:.0f} megapixels {what} may have to be shown"
    )


async def prepare_image(path: Path, *, name: str = "") -> PreparedImage:
    """The image file at ``path`` as an image the model can be shown, decoded in a limited
    child process (see the module doc). Raises :class:`~bot.errors.AttachmentError`, with a
    sentence the user can be shown, when it is not an image that can be read, is corrupt or
    truncated, or has too many pixels (:class:`~bot.errors.AttachmentTooLarge`)."""
    args = [str(path), str(MAX_DECODED_PIXELS), str(CHILD_MEMORY_BYTES), str(math.ceil(TIMEOUT_S))]
    async with _slot():
        answer, data = await ask_child(
            CHILD, args, timeout_s=TIMEOUT_S, words=_WORDS, max_output=_MAX_OUTPUT
        )
    if "error" in answer:
        raise _refusal(answer, path)
    if len(data) != answer["bytes"]:
        raise AttachmentError("decoding the image failed")
    width, height = answer["size"]
    shown_width, shown_height = answer["shown"]
    part = ImagePart(
        media_type=str(answer["media_type"]),
        data=data,
        name=name or path.name,
        width=shown_width,
        height=shown_height,
    )
    return PreparedImage(
        part=part,
        format=str(answer["format"]),
        size=(width, height),
        shown=(shown_width, shown_height),
        frames=int(answer["frames"]),
        resized=bool(answer["resized"]),
    )


async def load_image_part(path: Path, *, name: str = "") -> ImagePart:
    """The saved image at ``path`` as an :class:`ImagePart` within every provider's limits
    (see :func:`prepare_image` for what it raises)."""
    if not await asyncio.to_thread(path.is_file):
        raise AttachmentError("the saved file is no longer there")
    return (await prepare_image(path, name=name)).part


def _slot() -> asyncio.Semaphore:
    """This event loop's semaphore of :data:`DECODE_CHILDREN` decoding slots."""
    loop = asyncio.get_running_loop()
    slots = _SLOTS.get(loop)
    if slots is None:
        slots = _SLOTS[loop] = asyncio.Semaphore(DECODE_CHILDREN)
    return slots


def _refusal(answer: dict[str, object], path: Path) -> AttachmentError:
    error = answer["error"]
    size = answer.get("size")
    if error in ("pixels", "unsafe") and isinstance(size, list) and len(size) == 2:
        # the limit that matters for the format: a JPEG is decoded at a reduced scale, so
        # only the claimed size bounds it; any other is decoded whole
        jpeg = answer.get("format") == "JPEG"
        most = MAX_CLAIMED_PIXELS if jpeg else MAX_DECODED_PIXELS
        return too_many_pixels(int(size[0]), int(size[1]), most=most, jpeg=jpeg)
    if error == "memory":
        return AttachmentError("decoding the image needed more memory than is allowed")
    if error == "cannot_shrink":
        return AttachmentError("the image cannot be made small enough to show")
    if error == "unidentified" and _head_format(path) is None:
        return AttachmentError("it is not an image in a format that can be read")
    # an image's signature, and nothing readable after
    return AttachmentError("the image is corrupt or truncated")


def _head_format(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return sniff_image(handle.read(64))
    except OSError:
        return None
