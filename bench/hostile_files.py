"""What hostile files cost the daemon in memory: its peak rise over idle, per kind of file.

The real daemon (``hatchway run``, a subprocess with a fake ``NOTIFY_SOCKET``) polls a
loopback fake of the Telegram Bot API and asks a loopback fake of the OpenAI API (a model
that reads images), as in :mod:`bench.e2e_telegram`. For each kind of file the worst one of
its kind is sent ``attachments.parallel_downloads`` times at once (one message's worth: each
in a DM of its own, since a Telegram message carries one file, so the turns, downloads and
decoders all run together), and the daemon's peak resident memory over those turns is read
back from ``/proc``:

* rise: the daemon's ``VmHWM`` (peak RSS, reset before each kind through
  ``/proc/PID/clear_refs``) minus its RSS when idle just before;
* children: the highest sum of the RSS of its child processes (image decoders, PDF readers)
  sampled every 10 ms: they are capped (512 MiB of address space each for an image, 1 GiB
  for a PDF) and few at a time, and the figure shows what they took.

The kinds: a PNG of 9400×9400 px (a few hundred bytes that decode into a gigabyte: refused
from its header), a PNG at the decode budget (24 megapixels, decoded), a 48-megapixel JPEG
(decoded at a reduced scale), a text file of ``attachments.max_bytes`` of four-byte
characters, the same of random binary data, a PDF of many pages, and a workspace file of one
256 MB line read by ``file_read`` and ``file_search`` (the model asks for both).

    python bench/hostile_files.py [--smoke]

Target on a 2-core machine: every kind's rise under 128 MB. Printed, never asserted.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import io
import os
import random
import signal
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from bench.e2e_harness import wait_ready
from bench.machine import describe_machine
from bench.smoke import parse_args
from bot.tools.builtin.scopes import scope_folder
from tests.attachments.images import bomb_png
from tests.attachments.pdfs import text_pdf
from tests.fakes.openai_server import OpenAIFake
from tests.fakes.telegram_server import ApiCall, FakeTelegram, message, private_chat, user
from tests.ops.daemon_process import start_daemon

TOKEN = "616161:AAbench-token-for-the-fake-bot-api-abcdefg"
TOKEN_ENV = "BENCH_TELEGRAM_TOKEN"
REQUESTER = 5000
MB = 1024 * 1024
PARALLEL = 3  # attachments.parallel_downloads, the default
REPLY_WAIT_S = 300.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Kind:
    """One kind of hostile file: ``make`` builds it (``scale`` below 1 in a smoke run),
    ``tool`` when it is a workspace file the model reads with the file tools instead."""

    name: str
    make: Callable[[float], bytes]
    file_name: str
    mime: str
    tool: bool = False


def _png_at_budget(scale: float) -> bytes:
    # 24 megapixels, the most an image may decode into; every row the same noise, so the
    # file stays within what a bot may download while decoding costs all its pixels
    side = int(4898 * scale)
    row = Image.frombytes("RGB", (side, 1), random.Random(1).randbytes(side * 3))
    return _encoded(row.resize((side, side), Image.Resampling.NEAREST), "PNG")


def _jpeg_48mp(scale: float) -> bytes:
    width, height = int(8000 * scale), int(6000 * scale)
    return _encoded(Image.new("RGB", (width, height), (30, 90, 160)), "JPEG", quality=60)


def _encoded(image: Image.Image, fmt: str, **options: int) -> bytes:
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


def _wide_text(scale: float) -> bytes:
    # four bytes in UTF-8 and four in a Python string: the costliest text there is
    return ("🙂" * int(20 * MB * scale / 4)).encode()[: int(20 * MB * scale) - 8] + b"\n"


def _binary(scale: float) -> bytes:
    return b"\x01" + random.Random(2).randbytes(int(20 * MB * scale) - 1)


def _pdf(scale: float) -> bytes:
    return text_pdf([f"page {n} " + "words " * 400 for n in range(int(200 * scale) or 1)])


def _one_line(scale: float) -> bytes:
    return b"a" * int(256 * MB * scale)


KINDS = (
    Kind(
        name="PNG 9400×9400 (bomb)",
        make=lambda _: bomb_png(9400, 9400),
        file_name="bomb.png",
        mime="image/png",
    ),
    Kind(name="PNG 24 MP", make=_png_at_budget, file_name="budget.png", mime="image/png"),
    Kind(name="JPEG 48 MP", make=_jpeg_48mp, file_name="photo.jpg", mime="image/jpeg"),
    Kind(name="text 20 MB (4-byte chars)", make=_wide_text, file_name="w.txt", mime="text/plain"),
    Kind(name="binary 20 MB", make=_binary, file_name="blob.dat", mime="application/octet-stream"),
    Kind(name="PDF 200 pages", make=_pdf, file_name="long.pdf", mime="application/pdf"),
    Kind(
        name="workspace file, one 256 MB line (file_read, file_search)",
        make=_one_line,
        file_name="dump.txt",
        mime="text/plain",
        tool=True,
    ),
)


def _status(pid: int, field: str) -> int:
    """``field`` of ``/proc/PID/status`` in bytes (0 once the process is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak(pid: int) -> None:
    """Reset ``pid``'s ``VmHWM`` to its current RSS (Linux 4.0 and later)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def _children_rss(pid: int) -> int:
    total = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            total += _status(int(entry.name), "VmRSS")
    return total


class ChildWatch:
    """The highest RSS of ``pid``'s children together, sampled on a thread of its own."""

    def __init__(self, pid: int) -> None:
        self._pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ChildWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _children_rss(self._pid))


class Bench(FakeTelegram):
    def __init__(self) -> None:
        super().__init__(TOKEN)
        self.sent = 0

    async def ask(self, kind: Kind, data: bytes, llm: OpenAIFake, state: Path) -> None:
        """``PARALLEL`` DMs at once, each bringing the file (or asking for it to be read)."""
        pushes = []
        for _ in range(PARALLEL):
            self.sent += 1
            sender = REQUESTER + self.sent
            answer = f"done {self.sent}"
            fields: dict[str, Any] = {}
            if kind.tool:
                folder = (
                    state
                    / "workspace"
                    / scope_folder(
                        "conversation", channel="telegram.main", conversation_id=str(sender)
                    )
                )
                folder.mkdir(parents=True, exist_ok=True)
                (folder / kind.file_name).write_bytes(data)
                llm.queue_tool_calls(
                    [
                        ("file_read", {"path": kind.file_name}),
                        ("file_search", {"pattern": "needle"}),
                    ]
                )
            else:
                file_id = f"F{self.sent}"
                self.file_store.add(file_id, data)
                fields["document"] = {
                    "file_id": file_id,
                    "file_unique_id": "u" + file_id,
                    "file_name": kind.file_name,
                    "mime_type": kind.mime,
                    "file_size": len(data),
                }
            llm.queue_text(answer)
            payload = message(
                private_chat(sender),
                user(sender),
                "" if fields else "read it",
                message_id=100 + self.sent,
                **({"caption": "what is this?", **fields} if fields else {}),
            )
            pushes.append((payload, answer))
        for payload, _ in pushes:
            await self.push({"message": payload})
        for _, answer in pushes:
            await self.wait_for("sendMessage", text_is(answer), wait_s=REPLY_WAIT_S)


def text_is(text: str) -> Callable[[ApiCall], bool]:
    """Whether an API call sent exactly ``text``."""
    return lambda call: call.params.get("text") == text


async def run(args: argparse.Namespace) -> None:
    print(describe_machine(), flush=True)
    os.environ[TOKEN_ENV] = TOKEN
    os.environ.setdefault("BENCH_OPENAI_KEY", "sk-bench-not-a-real-key-000")
    tg, llm = Bench(), OpenAIFake(model="gpt-4o")
    async with tg, llm:
        with tempfile.TemporaryDirectory() as folder:
            state = Path(folder) / "state"
            config = Path(folder) / "hatchway.toml"
            config.write_text(
                f"""
state_dir = "{state}"

[agent]
system_prompt = "bench"

[providers.default]
kind = "openai"
base_url = "{llm.base_url}"
model = "gpt-4o"
max_retries = 0

[attachments]
parallel_downloads = {PARALLEL}

[channels.telegram.main]
token_env = "{TOKEN_ENV}"
api_base_url = "{tg.base_url}"
file_base_url = "{tg.file_base_url}"
allowed_users = ["*"]

[logging]
level = "warning"
format = "json"
""",
                encoding="utf-8",
            )
            async with start_daemon(config) as daemon:
                await wait_ready(daemon)
                pid = daemon.proc.pid
                warm = Kind(name="warm-up", make=lambda _: b"hello\n", file_name="a.txt", mime="")
                await tg.ask(warm, b"hello\n", llm, state)
                print(
                    f"{PARALLEL} at once per kind (attachments.parallel_downloads); "
                    f"scale {args.scale:g}; daemon pid {pid}"
                )
                print(f"{'kind':58} {'file':>10} {'rise':>9} {'children':>9}")
                for kind in KINDS:
                    data = kind.make(args.scale)
                    _reset_peak(pid)
                    idle = _status(pid, "VmRSS")
                    with ChildWatch(pid) as children:
                        await tg.ask(kind, data, llm, state)
                    rise = _status(pid, "VmHWM") - idle
                    print(
                        f"{kind.name:58} {len(data) / MB:8.2f}MB {rise / MB:7.1f}MB "
                        f"{children.peak / MB:7.1f}MB",
                        flush=True,
                    )
                print(f"daemon RSS at the end: {_status(pid, 'VmRSS') / MB:.1f} MB")
                daemon.signal(signal.SIGTERM)
                await daemon.wait_exit()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--scale", type=float, default=1.0, help="size of each file against the worst (1)"
    )
    args = parse_args(parser, smoke={"scale": 0.1})
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
