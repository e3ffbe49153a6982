"""The fake model every bot in ``bench/peers.py`` talks to: the loopback OpenAI fake
(:class:`tests.fakes.openai_server.OpenAIFake`, JSON or SSE as asked, keeping no request
records) answering by rule (``answer_with``), so that many conversations can run through it
at once.

The rule, applied to each ``POST /v1/chat/completions``:

* the last message is a tool result → the answer ``done: <the first 80 characters of that
  result>`` (so the driver can check that the tool really ran);
* the last user message contains :data:`TOOL_WORD` and the request offers a file-reading tool
  (``file_read`` in hatchway, ``read_file`` in nanobot) → one call of it on :data:`NOTE`;
* anything else → :data:`ANSWER`.

Run as a process of its own (``python bench/peer_model.py``): it prints its base URL on the
first line of stdout and serves until its stdin closes, so its CPU is nobody else's.
``--smoke`` starts it in-process, asks it each kind of question once and prints the answers.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
from typing import Any

from bench.model_server import ask
from bench.smoke import parse_args
from tests.fakes.openai_server import OpenAIFake, Reply

ANSWER = "Hello! How can I help you today?"
TOOL_WORD = "note"
NOTE = "note.txt"
NOTE_TEXT = "the-note-says-hello\n"
READ_TOOLS = ("file_read", "read_file")


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def decide(body: dict[str, Any]) -> Reply:
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "tool":
        return Reply(text="done: " + text_of(messages[-1])[:80])
    users = [m for m in messages if m.get("role") == "user"]
    offered = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    tool = next((name for name in READ_TOOLS if name in offered), None)
    if users and TOOL_WORD in text_of(users[-1]) and tool:
        return Reply(tool_calls=((tool, {"path": NOTE}),))
    return Reply(text=ANSWER)


async def serve() -> None:
    async with OpenAIFake(record=False, model="gpt-4o-mini") as model:
        model.answer_with(decide)
        print(model.base_url, flush=True)
        await asyncio.to_thread(sys.stdin.read)


async def smoke() -> None:
    async with OpenAIFake(record=False, model="gpt-4o-mini") as model:
        model.answer_with(decide)
        tools = [{"type": "function", "function": {"name": "file_read", "parameters": {}}}]
        plain = await ask(model.base_url, [{"role": "user", "content": "hello"}])
        asked = [{"role": "user", "content": f"what does the {TOOL_WORD} say?"}]
        called = await ask(model.base_url, asked, tools=tools)
        result = {"role": "tool", "tool_call_id": "c1", "content": NOTE_TEXT}
        final = await ask(model.base_url, [*asked, called, result])
    print(
        f"plain -> {plain['content']!r}; the note -> {called['tool_calls'][0]['function']}; "
        f"its result -> {final['content']!r}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    asyncio.run(smoke() if parse_args(parser, smoke={}).smoke else serve())
