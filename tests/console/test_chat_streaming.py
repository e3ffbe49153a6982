"""``hatchway chat`` at a pseudo-terminal shows the answer as the model writes it: the
OpenAI-compatible provider's SSE deltas land on the line "… thinking" held, and the answer
sent once the turn ends adds nothing twice. A stream the model stalls in is stopped cleanly
by ``/stop`` and by Ctrl-C: the text written so far stays, "⏹ Stopped." follows on a line of
its own, and the next message is answered. The LLM is the loopback fake; a stalled stream
is one whose next event never comes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.console.chat_process import (
    CTRL_C,
    CTRL_D,
    ChatProcess,
    chat_environ,
    settled,
    start_on_terminal,
)
from tests.fakes.openai_server import chunk
from tests.ops.conftest import HeldOpenAI

PROMPT = "> "
THINKING = "… thinking"


async def test_an_answer_streams_onto_the_thinking_line_and_is_shown_once(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    llm.queue_text("Once upon a time there was a terminal.")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        chat.type("tell me a story\n")
        await chat.wait_for("a terminal.")
        await chat.wait_for(PROMPT, count=2)
        await settled(tmp_path / "state")
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    assert llm.requests[0].body.get("stream") is True  # asked as a stream
    # the fake sends four characters an event: the answer came in pieces, shown once
    assert chat.shown.count("Once upon a time there was a terminal.") == 1
    assert "Once upon a time there was a terminal.\n" in chat.shown


async def stalled_answer(chat: ChatProcess, llm: HeldOpenAI) -> None:
    """Ask, and return once the first part of the answer is on the screen while the model
    holds back the rest."""
    llm.queue_stream(
        [
            chunk(content="The first part"),
            chunk(content=" and the rest"),
            chunk(finish_reason="stop"),
        ],
        stall_after=1,
    )
    chat.type("go on\n")
    await chat.wait_for("The first part")


@pytest.mark.parametrize("stop", ["/stop\n", CTRL_C], ids=["slash-stop", "ctrl-c"])
async def test_a_stalled_stream_is_stopped_cleanly(
    tmp_path: Path, llm: HeldOpenAI, stop: str
) -> None:
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        await stalled_answer(chat, llm)
        chat.type(stop)
        await chat.wait_for("⏹ Stopped.")
        await settled(tmp_path / "state")
        llm.queue_text("Next answer.")
        chat.type("and now?\n")
        await chat.wait_for("Next answer.")
        await settled(tmp_path / "state")
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    shown = chat.shown
    assert " and the rest" not in shown
    assert shown.index("The first part") < shown.index("⏹ Stopped.") < shown.index("Next answer.")
    # what was written of the answer keeps its line; the stop's lines follow on their own
    between = shown[shown.index("The first part") : shown.index("⏹ stopping…")]
    assert between.count("\n") == 1, between
    assert shown.count("The first part") == 1
