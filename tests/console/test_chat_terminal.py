"""``hatchway chat`` at a real pseudo-terminal, as a person uses it: the banner, the input
prompt, Ctrl-D and Ctrl-C while a turn runs and while none does, an approval answered at the
terminal, and a provider that cannot be reached. The LLM is the loopback fake; a "slow" turn
is one whose request the fake holds until the test releases it."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.console.chat_process import (
    CTRL_C,
    CTRL_D,
    WAIT_S,
    ChatProcess,
    chat_environ,
    settled,
    start_on_terminal,
)
from tests.ops.conftest import HeldOpenAI
from tests.tools.workspace_files import files_named

FINISHING = "finishing the current turn… (Ctrl-D again to quit now)"
PROMPT = "> "


async def slow_turn(chat: ChatProcess, llm: HeldOpenAI, text: str) -> None:
    """Type ``text`` and return once its request reached the fake, which holds it."""
    llm.hold_next()
    chat.type(f"{text}\n")
    async with asyncio.timeout(WAIT_S):
        await llm.arrived.wait()


async def test_banner_prompt_and_ctrl_d_with_nothing_running(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    llm.queue_text("Hello Ana!")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        shown = await chat.wait_for(PROMPT)
        assert f"provider default: openai gpt-4o-mini at {llm.base_url}, tools native" in shown
        assert f"Log: {tmp_path / 'state' / 'hatchway-chat.log'}" in shown
        chat.type("hi\n")
        await chat.wait_for("Hello Ana!")
        await chat.wait_for(PROMPT, count=2)  # the prompt is back under the answer
        await settled(tmp_path / "state")
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    assert FINISHING not in chat.shown
    assert chat.raw.endswith("\r\x1b[K")  # the prompt line is cleared for the shell


async def test_ctrl_d_once_finishes_the_running_turn_then_quits(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        llm.queue_text("the slow answer")
        await slow_turn(chat, llm, "take your time")
        chat.type(CTRL_D)
        await chat.wait_for(FINISHING)
        chat.type("not a message any more\n")  # input after Ctrl-D is not sent
        await chat.wait_for("not sent")
        llm.release()
        await chat.wait_for("the slow answer")
        assert await chat.wait_exit() == 0
    assert len(llm.requests) == 1


async def test_ctrl_d_twice_cancels_the_running_turn_and_quits(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        await slow_turn(chat, llm, "take your time")
        chat.type(CTRL_D)
        await chat.wait_for(FINISHING)
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    assert "⏹ Stopped." in chat.shown


async def test_ctrl_c_cancels_the_running_turn_and_a_second_quits(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        await slow_turn(chat, llm, "take your time")
        chat.type(CTRL_C)
        await chat.wait_for("⏹ Stopped.")
        await chat.wait_for(PROMPT, count=2)  # still chatting
        llm.queue_text("still here")
        chat.type("are you there?\n")
        await chat.wait_for("still here")
        await settled(tmp_path / "state")
        chat.type(CTRL_C)
        assert await chat.wait_exit() == 130


async def test_an_approval_is_answered_at_the_terminal_and_nothing_breaks_its_line(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    """A file listing (auto-approved) leaves progress lines that are shown at the batch
    interval, while the shell call's approval prompt waits: they come after the answer,
    never inside the prompt's line."""
    workspace = tmp_path / "state" / "workspace"
    llm.queue_tool_calls([("file_list", {"path": "."})])
    llm.queue_tool_calls([("shell", {"command": "echo approved > ran.txt"})])
    llm.queue_text("done")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        chat.type("list, then write a file\n")
        await chat.wait_for("times out in")
        chat.type("y\n")
        await chat.wait_for("done")
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    raw = chat.raw
    question = raw.index("🔐 Approve shell?")
    answer_line = raw.index("): ", question) + len("): ")
    assert raw[answer_line : answer_line + 3] == "y\r\n"  # the typed answer, right after
    assert raw.index("✅ file_list") > 0
    assert raw.index("✅ shell") > answer_line
    (marker,) = files_named(workspace, "ran.txt")  # in the conversation's folder
    assert marker.read_text() == "approved\n"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_an_unreachable_provider_is_one_readable_line_and_no_log_lines(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    env = chat_environ(tmp_path / "state", llm_url=url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        chat.type("hello\n")
        shown = await chat.wait_for("hatchway doctor")
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    conversation = shown[shown.index("hello\n") + len("hello\n") :]
    (line,) = [ln for ln in conversation.splitlines() if ln.strip(PROMPT)]
    assert f"cannot reach default at {url}/chat/completions" in line
    assert "is the server running?" in line
    assert "run `hatchway doctor`" in line.lower()
    for log_word in ('"event"', "provider_retry", "provider_gave_up", "warning", "Traceback"):
        assert log_word not in chat.shown
    log = (tmp_path / "state" / "hatchway-chat.log").read_text()
    assert "provider_gave_up" in log


async def test_ctrl_d_at_an_approval_prompt_answers_no_and_finishes_the_turn(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    workspace = tmp_path / "state" / "workspace"
    llm.queue_tool_calls([("shell", {"command": "echo approved > ran.txt"})])
    llm.queue_text("not done then")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        chat.type("write a file\n")
        await chat.wait_for("times out in")
        chat.type(CTRL_D)
        await chat.wait_for(FINISHING)
        await chat.wait_for("not done then")
        assert await chat.wait_exit() == 0
    raw = chat.raw
    answer = raw.index("times out in 300s): ") + len("times out in 300s): ")
    assert raw[answer:].startswith("\r\n")  # the prompt's line ended, nothing inside it
    assert "🚫 shell: not approved, not run" in chat.shown
    assert not files_named(workspace, "ran.txt")


async def test_a_turn_at_work_shows_thinking_which_its_answer_replaces(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    llm.queue_text("Here it is.")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        await slow_turn(chat, llm, "think about it")
        await chat.wait_for("… thinking")
        llm.release()
        await chat.wait_for("Here it is.")
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    raw = chat.raw
    thinking = raw.index("… thinking")
    # the answer starts by clearing the line that said "thinking"
    assert raw.index("\r\x1b[KHere it is.", thinking) > thinking
