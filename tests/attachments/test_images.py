"""Images made fit for every provider: real Pillow on generated files."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from bot.attachments.images import (
    MAX_ENCODED_BYTES,
    MAX_LONG_SIDE,
    load_image_part,
    prepare_image,
)
from bot.errors import AttachmentError
from tests.attachments.images import bomb_png, encoded, noise, png


def _opened(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def test_small_png_is_sent_as_it_is() -> None:
    data = png(300, 200)
    prepared = prepare_image(data, name="shot.png")
    assert prepared.part.data == data
    assert prepared.part.media_type == "image/png"
    assert prepared.part.name == "shot.png"
    assert (prepared.size, prepared.shown, prepared.resized) == ((300, 200), (300, 200), False)
    assert prepared.describe() == "PNG image, 300×200"


def test_large_png_is_scaled_to_the_long_side_and_stays_png() -> None:
    prepared = prepare_image(png(3000, 1500, alpha=True), name="wide.png")
    assert prepared.resized
    assert prepared.part.media_type == "image/png"
    image = _opened(prepared.part.data)
    assert image.size == prepared.shown == (MAX_LONG_SIDE, MAX_LONG_SIDE // 2)
    assert image.mode == "RGBA"
    assert (
        prepared.describe()
        == f"PNG image, 3000×1500, shown at {MAX_LONG_SIDE}×{MAX_LONG_SIDE // 2}"
    )


def test_photo_too_heavy_as_png_becomes_jpeg_within_the_byte_limit() -> None:
    data = encoded(noise(1500, 1400), "PNG")
    assert len(data) > MAX_ENCODED_BYTES  # small enough in pixels, too big in bytes
    prepared = prepare_image(data)
    assert prepared.resized
    assert prepared.part.media_type == "image/jpeg"
    assert len(prepared.part.data) <= MAX_ENCODED_BYTES
    assert max(_opened(prepared.part.data).size) <= MAX_LONG_SIDE


def test_jpeg_is_turned_upright_from_its_exif_orientation() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    data = encoded(Image.new("RGB", (400, 100), (200, 10, 10)), "JPEG", exif=exif.tobytes())
    prepared = prepare_image(data)
    assert prepared.resized
    assert _opened(prepared.part.data).size == (100, 400)


def test_animated_gif_shows_its_first_frame() -> None:
    frames = [Image.new("RGB", (50, 40), (c, 255 - c, 0)) for c in (0, 120, 240)]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    prepared = prepare_image(out.getvalue())
    assert prepared.frames == 3
    assert prepared.resized
    assert _opened(prepared.part.data).size == (50, 40)
    assert prepared.describe().endswith("first of 3 frames")


def test_webp_and_bmp() -> None:
    webp = prepare_image(encoded(Image.new("RGB", (64, 64), (9, 9, 9)), "WEBP"))
    assert (webp.part.media_type, webp.resized) == ("image/webp", False)
    bmp = prepare_image(encoded(Image.new("RGB", (64, 64), (9, 9, 9)), "BMP"))
    assert bmp.resized
    assert bmp.part.media_type == "image/png"  # converted to a format every provider takes


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (png(100, 100)[:-40], "corrupt or truncated"),
        (png(100, 100)[:60], "corrupt or truncated"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 50, "corrupt or truncated"),
        (b"plain text, not an image", "not an image"),
        (bomb_png(20_000, 20_000), "too many to open safely"),
    ],
    ids=["truncated-png", "header-only", "jpeg-garbage", "text", "bomb"],
)
def test_unreadable_images_get_a_plain_sentence(data: bytes, words: str) -> None:
    with pytest.raises(AttachmentError, match=words):
        prepare_image(data)


def test_bomb_just_over_pillows_limit_is_refused_not_warned() -> None:
    # between MAX_IMAGE_PIXELS and twice that Pillow only warns: refused all the same
    side = int(Image.MAX_IMAGE_PIXELS**0.5) + 100
    with pytest.raises(AttachmentError, match="too many"):
        prepare_image(bomb_png(side, side))


async def test_load_image_part_reads_a_saved_file(tmp_path: Path) -> None:
    saved = tmp_path / "a.png"
    saved.write_bytes(png(2000, 1000))
    part = await load_image_part(saved, name="chart.png")
    assert part.name == "chart.png"
    assert _opened(part.data).size == (MAX_LONG_SIDE, MAX_LONG_SIDE // 2)
    with pytest.raises(AttachmentError, match="no longer there"):
        await load_image_part(tmp_path / "gone.png")
