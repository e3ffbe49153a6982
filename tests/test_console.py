"""Walking skeleton, end to end in one process: the console channel, the gateway, the agent
loop, the real ``openai`` SDK against a scripted server on loopback, and a real SQLite file."""

from __future__ import annotations

import asyncio
import io
import os
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO

import pytest

from bot.app import App
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, IngressEnvelope, Sender
from channels.console.adapter import ConsoleChannel
from tests.fakes.openai_server import OpenAIFake

CONSOLE = ChannelRef(kind="console", alias="main")


class Screen(io.StringIO):
    """What the console printed; tests wait for text to appear."""

    def __init__(self) -> None:
        super().__init__()
        self._changed = asyncio.Event()

    def write(self, text: str) -> int:
        written = super().write(text)
        self._changed.set()
        return written

    async def wait_for(self, needle: str, *, count: int = 1, within_s: float = 20.0) -> str:
        async with asyncio.timeout(within_s):
            while self.getvalue().count(needle) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.getvalue()


class Terminal:
    """A console channel wired to a pipe the test types into."""

    def __init__(self) -> None:
        read_fd, self._write_fd = os.pipe()
        self.channel_input: IO[str] = os.fdopen(read_fd, "r")
        self.screen = Screen()
        self.channel = ConsoleChannel(
            CONSOLE, stdin=self.channel_input, stdout=self.screen, user="ana"
        )
        # The console does not close the stdin it reads; the read end goes with the terminal.
        weakref.finalize(self, self.channel_input.close)

    def type(self, line: str) -> None:
        os.write(self._write_fd, f"{line}\n".encode())

    def close(self) -> None:
        """End of input, as closing a pipe is."""
        if self._write_fd >= 0:
            os.close(self._write_fd)
            self._write_fd = -1


def settings_for(fake: OpenAIFake, tmp_path: Path, **agent: object) -> Settings:
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {"turn_timeout_s": 30.0, **agent},
            "channels": {"console": {"main": {}}},
            "providers": {
                "default": {
                    "kind": "openai",
                    "base_url": fake.base_url,
                    "model": "scripted",
                    "api_key_env": "HATCHWAY_TEST_OPENAI_KEY",
                    "max_retries": 2,
                    "tool_mode": "native",
                }
            },
        },
        environ={"HATCHWAY_TEST_OPENAI_KEY": "sk-test-not-a-real-key-000"},
    )


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HATCHWAY_TEST_OPENAI_KEY", "sk-test-not-a-real-key-000")


@pytest.fixture
async def fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as server:
        yield server


async def test_conversation_survives_a_restart(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    fake.queue_text("Hello Ana!")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("hi, I am Ana")
        await terminal.screen.wait_for("Hello Ana!")
        terminal.close()
    # a new process of the bot: same database, new app
    fake.queue_text("You are Ana.")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("who am I?")
        await terminal.screen.wait_for("You are Ana.")
        terminal.close()
    sent = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] != "system"]
    assert sent == ["hi, I am Ana", "Hello Ana!", "who am I?"]


async def test_new_session_forgets(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    fake.queue_text("one")
    fake.queue_text("two")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("first")
        await terminal.screen.wait_for("one")
        terminal.type("/new")
        await terminal.screen.wait_for("New session")
        terminal.type("second")
        await terminal.screen.wait_for("two")
        terminal.close()
    sent = [m["content"] for m in fake.requests[-1].body["messages"] if m["role"] != "system"]
    assert sent == ["second"]


async def test_provider_500_is_retried(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    fake.queue_error(500)
    fake.queue_text("after a retry")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("hello")
        await terminal.screen.wait_for("after a retry")
        terminal.close()
    assert len(fake.requests) == 2


async def test_provider_that_never_answers_hits_the_turn_budget(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    settings = settings_for(fake, tmp_path, turn_timeout_s=0.5)
    fake.queue_hang()
    fake.queue_text("still here")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("hello?")
        text = await terminal.screen.wait_for("took too long")
        assert "still here" not in text
        terminal.type("and now?")
        await terminal.screen.wait_for("still here")
        terminal.close()


async def test_provider_down_gets_a_clear_message(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    for _ in range(3):
        fake.queue_error(503)
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("hello")
        text = await terminal.screen.wait_for("not answering")
        terminal.close()
    assert "sk-test" not in text


async def test_duplicate_message_id_is_answered_once(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    fake.queue_text("only once")
    fake.queue_text("second answer must not happen")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}) as app:
        envelope = IngressEnvelope(
            channel=CONSOLE,
            message_id="platform-42",
            conversation_id="terminal",
            sender=Sender(id="ana"),
            text="hi",
            reply_target=terminal.channel.target,
            is_direct=True,
            addressed_to_bot=True,
        )
        await app.gateway.deliver(envelope)
        await app.gateway.deliver(envelope)
        await terminal.screen.wait_for("only once")
        # a redelivery after the answer is still a no-op
        await app.gateway.deliver(envelope)
        await app.gateway.drain(5.0)
        terminal.close()
    assert terminal.screen.getvalue().count("only once") == 1
    assert len(fake.requests) == 1


async def test_an_empty_model_answer_is_never_silent(fake: OpenAIFake, tmp_path: Path) -> None:
    settings = settings_for(fake, tmp_path)
    fake.queue_text("")
    terminal = Terminal()
    async with App(settings, channels={"console.main": terminal.channel}):
        terminal.type("hello")
        await terminal.screen.wait_for("empty answer")
        terminal.close()


async def test_the_terminal_prompt_shows_every_character_that_will_run(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    """A long command with a payload at its end, a secret-looking word before a
    metacharacter and a bidi override: the prompt shows all of it, escaped, and the answer
    decides the call that was shown."""
    marker = tmp_path / "ran.txt"
    command = (
        f"echo token=abcdefgh;echo ok\u202e > {marker} " + "#" * 3000 + f" ; echo tail >> {marker}"
    )
    fake.queue_tool_calls([("shell", {"command": command})])
    fake.queue_text("done")
    terminal = Terminal()
    async with App(settings_for(fake, tmp_path), channels={"console.main": terminal.channel}):
        terminal.type("run it")
        screen = await terminal.screen.wait_for("[y]es / [n]o")
        assert "\u202e" not in screen and "\\u202e" in screen
        assert "echo token=***;echo ok\\u202e > " in screen  # only the secret value masked
        assert "#" * 3000 + f" ; echo tail >> {marker}" in screen  # nothing cut
        terminal.type("n")
        await terminal.screen.wait_for("done")
        terminal.close()
    assert not marker.exists()


async def test_an_answer_cannot_drive_the_terminal(fake: OpenAIFake, tmp_path: Path) -> None:
    fake.queue_text("ok\x1b[2J\x1b]0;owned\x07\u202edone\n\tindented")
    terminal = Terminal()
    async with App(settings_for(fake, tmp_path), channels={"console.main": terminal.channel}):
        terminal.type("hi")
        screen = await terminal.screen.wait_for("indented")
        terminal.close()
    assert "\x1b" not in screen and "\x07" not in screen and "\u202e" not in screen
    assert "ok\\x1b[2J\\x1b]0;owned\\x07\\u202edone\n\tindented" in screen


class PtyTerminal:
    """A console channel on a real pseudo-terminal in this process: the test types on the
    master side and reads what the terminal shows (echo, prompts, escape sequences)."""

    def __init__(self) -> None:
        self._master, slave = os.openpty()
        self.channel_input: IO[str] = os.fdopen(slave, "r", encoding="utf-8", closefd=False)
        self.channel_output: IO[str] = os.fdopen(slave, "w", encoding="utf-8", closefd=True)
        self.channel = ConsoleChannel(
            CONSOLE, stdin=self.channel_input, stdout=self.channel_output, user="ana"
        )
        self.raw = ""
        self._changed = asyncio.Event()
        os.set_blocking(self._master, False)
        asyncio.get_running_loop().add_reader(self._master, self._readable)

    def _readable(self) -> None:
        try:
            self.raw += os.read(self._master, 65536).decode("utf-8", "replace")
        except BlockingIOError:
            return
        self._changed.set()

    def type(self, text: str) -> None:
        os.write(self._master, text.encode())

    async def wait_for(self, needle: str, *, count: int = 1, within_s: float = 20.0) -> str:
        async with asyncio.timeout(within_s):
            while self.raw.count(needle) < count:
                self._changed.clear()
                await self._changed.wait()
        return self.raw

    def dispose(self) -> None:
        asyncio.get_running_loop().remove_reader(self._master)
        self.channel_input.close()
        self.channel_output.close()
        os.close(self._master)


@pytest.fixture
async def pty_terminal() -> AsyncIterator[PtyTerminal]:
    terminal = PtyTerminal()
    yield terminal
    terminal.dispose()


async def test_a_message_shown_while_an_approval_prompt_waits_comes_after_its_answer(
    fake: OpenAIFake, tmp_path: Path, pty_terminal: PtyTerminal
) -> None:
    """What the channel is asked to show while the prompt waits (a progress flush, another
    turn's answer) never lands inside the prompt's line: the typed answer follows the
    prompt directly, and the held message comes after it."""
    terminal = pty_terminal
    fake.queue_tool_calls([("shell", {"command": "echo hi"})])
    fake.queue_text("done")
    async with App(settings_for(fake, tmp_path), channels={"console.main": terminal.channel}):
        await terminal.wait_for("> ")
        terminal.type("run it\n")
        await terminal.wait_for("times out in 300s): ")
        await terminal.channel.send(terminal.channel.target, "⏳ a line shown meanwhile")
        terminal.type("y\n")
        await terminal.wait_for("done")
    raw = terminal.raw
    answer = raw.index("times out in 300s): ") + len("times out in 300s): ")
    assert raw[answer:].startswith("y\r\n")  # the echo of the answer, nothing before it
    held = raw[answer:].split("⏳ shell")[0]  # shown after the answer, before the call runs
    assert "⏳ a line shown meanwhile\r\n" in held


async def test_the_input_prompt_stays_below_what_is_shown(
    fake: OpenAIFake, tmp_path: Path, pty_terminal: PtyTerminal
) -> None:
    terminal = pty_terminal
    fake.queue_text("first answer")
    async with App(settings_for(fake, tmp_path), channels={"console.main": terminal.channel}):
        await terminal.wait_for("> ")
        terminal.type("hello\n")
        await terminal.wait_for("first answer")
        await terminal.wait_for("> ", count=2)
        terminal.type("\n")  # an empty line is no message: a fresh prompt
        await terminal.wait_for("> ", count=3)
        terminal.channel.notice("a notice")  # erases the prompt, shows the line, prompts
        await terminal.wait_for("a notice")
    raw = terminal.raw
    # "… thinking" holds the answer's line while the turn works; the answer clears it
    assert raw.startswith(
        "> hello\r\n… thinking\r\x1b[Kfirst answer\r\n> \r\n> \r\x1b[Ka notice\r\n> "
    )
    assert len(fake.requests) == 1


async def test_piped_input_shows_no_prompt_and_no_escape_sequences(
    fake: OpenAIFake, tmp_path: Path
) -> None:
    terminal = Terminal()
    fake.queue_tool_calls([("shell", {"command": "echo hi"})])
    fake.queue_text("done")
    async with App(settings_for(fake, tmp_path), channels={"console.main": terminal.channel}):
        terminal.type("run it")
        await terminal.screen.wait_for("times out in 300s): ")
        await terminal.channel.send(terminal.channel.target, "shown meanwhile")
        terminal.type("y")
        screen = await terminal.screen.wait_for("done")
        terminal.close()
    assert "> " not in screen and "\x1b" not in screen
    assert not any(r.body.get("stream") for r in fake.requests)  # whole answers when piped
    # no echo on a pipe: the prompt's line is ended for it, then the held line is shown
    answer = screen.index("times out in 300s): ") + len("times out in 300s): ")
    assert screen[answer:].startswith("\n")
    assert "shown meanwhile\n" in screen[answer:].split("⏳ shell")[0]
