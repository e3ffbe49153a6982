"""Image files made with Pillow for the attachment tests (real encoders, no fixtures on disk)."""

from __future__ import annotations

import io
import random
import struct
import zlib

from PIL import Image


def encoded(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def png(width: int, height: int, *, alpha: bool = False) -> bytes:
    """A PNG of a plain colour (half transparent with ``alpha``)."""
    colour = (40, 120, 200, 128) if alpha else (40, 120, 200)
    return encoded(Image.new("RGBA" if alpha else "RGB", (width, height), colour), "PNG")


def noise(width: int, height: int) -> Image.Image:
    """An image of random-looking pixels: it compresses badly, as photos do."""
    raw = random.Random(width * height).randbytes(width * height * 3)
    return Image.frombytes("RGB", (width, height), raw)


def bomb_png(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims ``width`` × ``height`` pixels (its data is a few
    bytes of a compressed, mostly empty image): a decompression bomb."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)  # 1-bit greyscale
    row = b"\x00" + b"\x00" * ((width + 7) // 8)
    data = zlib.compress(row * 16, 9)  # a few rows only: decoding would fail long after
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data) + chunk(b"IEND", b"")
    )
