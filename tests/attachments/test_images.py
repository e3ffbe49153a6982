"""Images made fit for every provider: real Pillow on generated files."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from PIL import Image

from bot.attachments import images
from bot.attachments.images import (
    MAX_DECODED_PIXELS,
    MAX_ENCODED_BYTES,
    MAX_LONG_SIDE,
    PreparedImage,
    load_image_part,
)
from bot.errors import AttachmentError, AttachmentTooLarge
from tests.attachments.images import bomb_png, encoded, noise, png


@pytest.fixture
def prepare_image(tmp_path: Path) -> Callable[..., Awaitable[PreparedImage]]:
    """``prepare_image`` of bytes: saved to a file, then decoded by the real child."""
    count = iter(range(1_000))

    async def prepare(data: bytes, *, name: str = "") -> PreparedImage:
        path = tmp_path / f"image-{next(count)}"
        path.write_bytes(data)
        return await images.prepare_image(path, name=name)

    return prepare


Prepare = Callable[..., Awaitable[PreparedImage]]


def _opened(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


async def test_small_png_is_sent_as_it_is(prepare_image: Prepare) -> None:
    data = png(300, 200)
    prepared = await prepare_image(data, name="shot.png")
    assert prepared.part.data == data
    assert prepared.part.media_type == "image/png"
    assert prepared.part.name == "shot.png"
    assert (prepared.size, prepared.shown, prepared.resized) == ((300, 200), (300, 200), False)
    assert prepared.describe() == "PNG image, 300×200"


async def test_large_png_is_scaled_to_the_long_side_and_stays_png(prepare_image: Prepare) -> None:
    prepared = await prepare_image(png(3000, 1500, alpha=True), name="wide.png")
    assert prepared.resized
    assert prepared.part.media_type == "image/png"
    image = _opened(prepared.part.data)
    assert image.size == prepared.shown == (MAX_LONG_SIDE, MAX_LONG_SIDE // 2)
    assert image.mode == "RGBA"
    assert (
        prepared.describe()
        == f"PNG image, 3000×1500, shown at {MAX_LONG_SIDE}×{MAX_LONG_SIDE // 2}"
    )


async def test_photo_too_heavy_as_png_becomes_jpeg_within_the_byte_limit(
    prepare_image: Prepare,
) -> None:
    data = encoded(noise(1500, 1400), "PNG")
    assert len(data) > MAX_ENCODED_BYTES  # small enough in pixels, too big in bytes
    prepared = await prepare_image(data)
    assert prepared.resized
    assert prepared.part.media_type == "image/jpeg"
    assert len(prepared.part.data) <= MAX_ENCODED_BYTES
    assert max(_opened(prepared.part.data).size) <= MAX_LONG_SIDE


async def test_jpeg_is_turned_upright_from_its_exif_orientation(prepare_image: Prepare) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    data = encoded(Image.new("RGB", (400, 100), (200, 10, 10)), "JPEG", exif=exif.tobytes())
    prepared = await prepare_image(data)
    assert prepared.resized
    assert _opened(prepared.part.data).size == (100, 400)


async def test_animated_gif_shows_its_first_frame(prepare_image: Prepare) -> None:
    frames = [Image.new("RGB", (50, 40), (c, 255 - c, 0)) for c in (0, 120, 240)]
    out = io.BytesIO()
    frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=100)
    prepared = await prepare_image(out.getvalue())
    assert prepared.frames == 3
    assert prepared.resized
    assert _opened(prepared.part.data).size == (50, 40)
    assert prepared.describe().endswith("first of 3 frames")


async def test_webp_and_bmp(prepare_image: Prepare) -> None:
    webp = await prepare_image(encoded(Image.new("RGB", (64, 64), (9, 9, 9)), "WEBP"))
    assert (webp.part.media_type, webp.resized) == ("image/webp", False)
    bmp = await prepare_image(encoded(Image.new("RGB", (64, 64), (9, 9, 9)), "BMP"))
    assert bmp.resized
    assert bmp.part.media_type == "image/png"  # converted to a format every provider takes


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (png(100, 100)[:-40], "corrupt or truncated"),
        (png(100, 100)[:60], "corrupt or truncated"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 50, "corrupt or truncated"),
        (b"plain text, not an image", "not an image"),
        (bomb_png(20_000, 20_000), "20,000×20,000 pixels .400.0 megapixels., more than the 24"),
    ],
    ids=["truncated-png", "header-only", "jpeg-garbage", "text", "bomb"],
)
async def test_unreadable_images_get_a_plain_sentence(
    prepare_image: Prepare, data: bytes, words: str
) -> None:
    with pytest.raises(AttachmentError, match=words):
        await prepare_image(data)


async def test_bomb_just_over_pillows_limit_is_refused_not_warned(prepare_image: Prepare) -> None:
    # between MAX_IMAGE_PIXELS and twice that Pillow only warns: refused all the same
    side = int(Image.MAX_IMAGE_PIXELS**0.5) + 100
    with pytest.raises(AttachmentTooLarge, match="more than the 24 megapixels an image"):
        await prepare_image(bomb_png(side, side))


async def test_load_image_part_reads_a_saved_file(tmp_path: Path) -> None:
    saved = tmp_path / "a.png"
    saved.write_bytes(png(2000, 1000))
    part = await load_image_part(saved, name="chart.png")
    assert part.name == "chart.png"
    assert _opened(part.data).size == (MAX_LONG_SIDE, MAX_LONG_SIDE // 2)
    with pytest.raises(AttachmentError, match="no longer there"):
        await load_image_part(tmp_path / "gone.png")


async def test_png_over_the_pixel_budget_is_refused_before_decoding(prepare_image: Prepare) -> None:
    # 9400×9400: under Pillow's own limit, but it would decode into a gigabyte
    with pytest.raises(AttachmentTooLarge) as refused:
        await prepare_image(bomb_png(9400, 9400))
    assert str(refused.value) == (
        "it is 9,400×9,400 pixels (88.4 megapixels), more than the 24 megapixels an image "
        "may have to be shown"
    )


async def test_48_megapixel_jpeg_is_decoded_at_a_reduced_scale(prepare_image: Prepare) -> None:
    photo = Image.new("RGB", (8000, 6000), (30, 90, 160))
    assert MAX_DECODED_PIXELS < 8000 * 6000
    prepared = await prepare_image(encoded(photo, "JPEG", quality=60), name="camera.jpg")
    assert prepared.size == (8000, 6000)
    assert prepared.shown == (MAX_LONG_SIDE, MAX_LONG_SIDE * 3 // 4)
    assert prepared.part.media_type == "image/jpeg"


async def test_the_decoding_child_runs_under_its_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the real child, wrapped to write down the limits it ran under as it exits
    limits = tmp_path / "limits"
    wrapper = tmp_path / "reporting_child.py"
    wrapper.write_text(
        "import atexit, resource, runpy, sys\n"
        "def report():\n"
        f"    with open({str(limits)!r}, 'w') as out:\n"
        "        out.write(f'{resource.getrlimit(resource.RLIMIT_AS)[0]} '\n"
        "                  f'{resource.getrlimit(resource.RLIMIT_CPU)[0]}')\n"
        "atexit.register(report)\n"
        f"sys.argv[0] = {str(images.CHILD)!r}\n"
        f"runpy.run_path({str(images.CHILD)!r}, run_name='__main__')\n"
    )
    monkeypatch.setattr(images, "CHILD", wrapper)
    saved = tmp_path / "a.png"
    saved.write_bytes(png(2000, 1000))
    await images.prepare_image(saved)
    memory, cpu = limits.read_text().split()
    assert int(memory) == images.CHILD_MEMORY_BYTES == 512 * 1024 * 1024
    assert int(cpu) == images.TIMEOUT_S


async def test_over_the_memory_limit_the_child_answers_with_a_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a child given too little memory for a large (but allowed) PNG: a sentence, no crash
    monkeypatch.setattr(images, "CHILD_MEMORY_BYTES", 40 << 20)
    saved = tmp_path / "big.png"
    saved.write_bytes(png(4000, 4000))
    with pytest.raises(AttachmentError, match="needed more memory"):
        await images.prepare_image(saved)


async def test_decoding_children_are_few_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a child that records how many of its kind run at once, then decodes as usual
    seen = tmp_path / "seen"
    seen.mkdir()
    wrapper = tmp_path / "counting_child.py"
    wrapper.write_text(
        "import os, sys, time, runpy\n"
        f"seen = {str(seen)!r}\n"
        "mine = os.path.join(seen, str(os.getpid()))\n"
        "open(mine, 'w').close()\n"
        "running = [n for n in os.listdir(seen) if n.isdigit()]\n"
        "open(os.path.join(seen, f'peak-{len(running)}'), 'w').close()\n"
        "time.sleep(0.3)\n"
        "os.unlink(mine)\n"
        f"sys.argv[0] = {str(images.CHILD)!r}\n"
        f"runpy.run_path({str(images.CHILD)!r}, run_name='__main__')\n"
    )
    monkeypatch.setattr(images, "CHILD", wrapper)
    paths = []
    for n in range(5):
        path = tmp_path / f"{n}.png"
        path.write_bytes(png(2000, 1000))
        paths.append(path)
    prepared = await asyncio.gather(*(images.prepare_image(p) for p in paths))
    assert all(p.resized for p in prepared)
    peaks = {int(name.split("-")[1]) for name in os.listdir(seen) if name.startswith("peak-")}
    assert max(peaks) <= images.DECODE_CHILDREN


async def test_a_jpeg_claiming_more_than_any_photo_has_is_refused(prepare_image: Prepare) -> None:
    # a small JPEG whose frame header claims 12000×9000 (108 megapixels)
    data = bytearray(encoded(Image.new("RGB", (16, 16), (1, 2, 3)), "JPEG"))
    frame = data.index(b"\xff\xc0")
    data[frame + 5 : frame + 9] = (9000).to_bytes(2, "big") + (12000).to_bytes(2, "big")
    with pytest.raises(AttachmentTooLarge) as refused:
        await prepare_image(bytes(data))
    assert str(refused.value) == (
        "it is 12,000×9,000 pixels (108.0 megapixels), more than the 89 megapixels a JPEG "
        "photo may have to be shown"
    )
