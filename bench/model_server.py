"""The loopback OpenAI fake as a bench's model, in a process of its own.

A bench that drives the real provider code over HTTP needs a model server that answers at
once and whose CPU is not the daemon's: run on the bench's own event loop, the fake's request
parsing and JSON replies would be counted as the daemon's loop CPU and would slow the turns
it serves. :class:`ModelServer` starts ``python bench/model_server.py`` (the fake of
:mod:`tests.fakes.openai_server`, keeping no request records, answering by rule), reads the
base URL it prints, and reports the CPU time that process used (:meth:`ModelServer.cpu_s`).

The rule: a request whose last message is a tool result gets :data:`FINAL`; any other request
gets :data:`FINAL` too, or, with ``tool=True``, one call of the built-in ``calculator`` tool.

    python bench/model_server.py [--tool]    # prints the base URL; serves until stdin closes
    python bench/model_server.py --smoke     # starts itself as a bench does, asks it twice
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import argparse
import asyncio
import os
from types import TracebackType

import aiohttp

from bench.machine import process_cpu_s
from bench.smoke import parse_args
from tests.fakes.openai_server import JsonObject, OpenAIFake, Reply, ScriptItem

FINAL = "done"
TOOL_CALL = ("calculator", {"expression": "6*7"})
SCRIPT = Path(__file__).resolve()
ROOT = SCRIPT.parent.parent


def answer(body: JsonObject, *, tool: bool) -> ScriptItem:
    """The reply to one request (see the module doc)."""
    messages = body.get("messages") or [{}]
    if tool and messages[-1].get("role") != "tool":
        return Reply(tool_calls=(TOOL_CALL,))
    return Reply(text=FINAL)


async def serve(tool: bool) -> None:
    async with OpenAIFake(record=False, model="gpt-4o-mini") as fake:
        fake.answer_with(lambda body: answer(body, tool=tool))
        print(fake.base_url, flush=True)
        # serve until the parent closes our stdin (or dies)
        await asyncio.to_thread(sys.stdin.read)


class ModelServer:
    """The fake model in a child process, for ``async with`` in a bench."""

    def __init__(self, *, tool: bool) -> None:
        self.tool = tool
        self.base_url = ""
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> ModelServer:
        command = [str(SCRIPT), "--tool"] if self.tool else [str(SCRIPT)]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self._process = process
        assert process.stdout is not None
        line = (await process.stdout.readline()).decode()
        if not line.startswith("http://"):
            process.kill()
            await process.wait()
            raise RuntimeError(f"the model server did not start: {line!r}")
        self.base_url = line.strip()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        process = self._process
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()

    def cpu_s(self) -> float:
        """CPU time (user + system) the server process has used so far."""
        assert self._process is not None
        return process_cpu_s(self._process.pid)


async def ask(
    base_url: str, messages: list[JsonObject], *, tools: list[JsonObject] | None = None
) -> JsonObject:
    """The first choice's message of one chat completion request to ``base_url``."""
    body: JsonObject = {"model": "gpt-4o-mini", "messages": messages}
    if tools:
        body["tools"] = tools
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{base_url}/chat/completions", json=body) as response,
    ):
        response.raise_for_status()
        reply: JsonObject = (await response.json())["choices"][0]["message"]
        return reply


async def smoke() -> None:
    """The server as a bench runs it (a child process), asked a question and then given a
    tool result."""
    async with ModelServer(tool=True) as model:
        question = [{"role": "user", "content": "six times seven?"}]
        called = await ask(model.base_url, question)
        result = [*question, called, {"role": "tool", "tool_call_id": "c1", "content": "42"}]
        final = await ask(model.base_url, result)
        print(
            f"model server at {model.base_url}: a question -> {called['tool_calls'][0]['function']}"
            f", a tool result -> {final['content']!r}; its CPU {model.cpu_s() * 1000:.0f} ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tool", action="store_true", help="answer new questions with a tool call")
    arguments = parse_args(parser, smoke={})
    asyncio.run(smoke() if arguments.smoke else serve(arguments.tool))
