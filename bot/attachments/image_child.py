"""An image made fit for the model, decoded in a child process:
``python -I image_child.py FILE MAX_PIXELS MEMORY_BYTES CPU_S``.

An image is a program of sorts too: a few hundred kilobytes of PNG can claim 9,400 × 9,400
pixels and decode into a gigabyte. Here it is decoded in a process of its own with an
address-space (``MEMORY_BYTES``) and CPU-time limit, after two checks made from the header
alone, before any pixel is decoded: :data:`MAX_CLAIMED_PIXELS` (Pillow's own default limit)
and ``MAX_PIXELS``, the pixels actually decoded (a JPEG counts at the scale
``draft()`` decodes it at, an eighth of each side at most, so a 48-megapixel photo passes).
Within both, the image is sent as it is when it already suits every provider, else its first
frame is turned upright, scaled down and encoded again (see :mod:`bot.attachments.images`).

This module imports nothing of hatchway (it runs without the daemon's environment) and
writes one JSON line to stdout, followed by the encoded image when it succeeded::

    {"format": "PNG", "size": [w, h], "shown": [w, h], "frames": n, "resized": b,
     "media_type": "image/png", "bytes": n}
    {"error": "unidentified" | "corrupt" | "memory" | "cannot_shrink"}
    {"error": "pixels" | "unsafe", "size": [w, h], "format": "PNG"}
"""

from __future__ import annotations

import io
import json
import resource
import sys

from PIL import Image, UnidentifiedImageError

MAX_LONG_SIDE = 1568
MAX_ENCODED_BYTES = 3_750_000
MEDIA_TYPES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
READABLE_FORMATS = (*MEDIA_TYPES, "BMP", "TIFF")
_LOSSLESS = frozenset({"PNG", "GIF", "BMP", "TIFF"})
_ORIENTATION = 0x0112
_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
_JPEG_QUALITIES = (85, 70)
#: The most pixels an image may claim at all (Pillow's own default limit), checked here so
#: that the refusal can say how many it claims; a JPEG within it may still be decoded at a
#: reduced scale.
MAX_CLAIMED_PIXELS = 89_478_485
_SMALLEST_SIDE = 64


class Refused(Exception):
    """The image is not prepared; ``answer`` says why (the JSON line)."""

    def __init__(self, answer: dict[str, object]) -> None:
        super().__init__(answer["error"])
        self.answer = answer


def _limit(memory_bytes: int, cpu_s: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))


def prepare(path: str, max_pixels: int) -> tuple[dict[str, object], bytes]:
    """The JSON answer and the encoded image for the file at ``path``; raises Refused."""
    try:
        with Image.open(path, formats=READABLE_FORMATS) as probe:
            width, height = probe.size
            if width * height > MAX_CLAIMED_PIXELS:
                raise Refused({"error": "unsafe", "size": [width, height], "format": probe.format})
            probe.verify()
        with Image.open(path, formats=READABLE_FORMATS) as image:
            return _prepare(image, path, max_pixels)
    except UnidentifiedImageError:
        raise Refused({"error": "unidentified"}) from None
    except MemoryError:
        raise Refused({"error": "memory"}) from None
    except Refused:
        raise
    except Exception:
        # untrusted bytes: whatever Pillow raises on them (OSError, SyntaxError,
        # struct.error, ValueError, …) is a damaged file
        raise Refused({"error": "corrupt"}) from None


def _prepare(image: Image.Image, path: str, max_pixels: int) -> tuple[dict[str, object], bytes]:
    fmt = image.format or ""
    width, height = image.size
    frames = int(getattr(image, "n_frames", 1))
    image.seek(0)
    orientation = image.getexif().get(_ORIENTATION, 1)
    with open(path, "rb") as handle:
        size_on_disk = handle.seek(0, io.SEEK_END)
    if (
        fmt in MEDIA_TYPES
        and frames == 1
        and orientation in (0, 1)
        and max(width, height) <= MAX_LONG_SIDE
        and size_on_disk <= MAX_ENCODED_BYTES
    ):
        image.load()  # decoded once, so a truncated body is found here, not by the provider
        with open(path, "rb") as handle:
            data = handle.read(MAX_ENCODED_BYTES + 1)
        answer = _answer(fmt, (width, height), (width, height), frames, MEDIA_TYPES[fmt], data)
        return {**answer, "resized": False}, data
    if fmt == "JPEG":
        # decoded at a reduced scale straight away: a huge JPEG never takes its full memory
        image.draft("RGB", (MAX_LONG_SIDE, MAX_LONG_SIDE))
    if image.width * image.height > max_pixels:
        raise Refused({"error": "pixels", "size": [width, height], "format": fmt})
    image.load()
    frame: Image.Image = image
    if frame.mode not in ("RGB", "RGBA", "L", "LA"):
        # palette and other modes: scaled in full colour (a palette scales without smoothing)
        frame = frame.convert("RGBA" if "transparency" in frame.info else "RGB")
    frame.thumbnail((MAX_LONG_SIDE, MAX_LONG_SIDE), Image.Resampling.LANCZOS)
    turn = _TRANSPOSE.get(int(orientation or 1))
    if turn is not None:  # turned upright once small: a rotation copies every pixel
        frame = frame.transpose(turn)
    media_type, encoded, shown = _encode(frame, lossless=fmt in _LOSSLESS)
    answer = _answer(fmt, (width, height), shown, frames, media_type, encoded)
    return {**answer, "resized": True}, encoded


def _answer(
    fmt: str,
    size: tuple[int, int],
    shown: tuple[int, int],
    frames: int,
    media_type: str,
    data: bytes,
) -> dict[str, object]:
    return {
        "format": fmt,
        "size": list(size),
        "shown": list(shown),
        "frames": frames,
        "media_type": media_type,
        "bytes": len(data),
    }


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
            raise Refused({"error": "cannot_shrink"})
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


def main(argv: list[str]) -> int:
    path, max_pixels, memory_bytes, cpu_s = argv[1], int(argv[2]), int(argv[3]), int(argv[4])
    _limit(memory_bytes, cpu_s)
    # the claimed size is checked here, with the size in the answer (MAX_CLAIMED_PIXELS)
    Image.MAX_IMAGE_PIXELS = None
    try:
        answer, data = prepare(path, max_pixels)
    except Refused as refused:
        answer, data = refused.answer, b""
    out = sys.stdout.buffer
    out.write(json.dumps(answer, ensure_ascii=True).encode() + b"\n")
    out.write(data)
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
