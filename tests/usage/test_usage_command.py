"""``hatchway usage`` on a real database: a daemon answers a few turns (the OpenAI-compatible
fake on loopback reporting its usage), stops, and the command (the real parser and handler,
on a thread of its own as a separate process would be) prints the table from its file."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from bot.app import App
from bot.cli import main
from bot.config import load_settings
from bot.providers.base import Usage
from bot.store import Store, UsageRecord
from tests.fakes.channel import FakeChannel
from tests.fakes.openai_server import OpenAIFake
from tests.usage.harness import CHANNEL, ask, message, settled

Hatchway = Callable[..., Awaitable[tuple[int, str, str]]]


@pytest.fixture
def hatchway(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, kept_logging: None
) -> Hatchway:
    monkeypatch.delenv("HATCHWAY_CONFIG", raising=False)

    async def run(*args: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = await asyncio.to_thread(main, list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def write_config(folder: Path, base_url: str) -> Path:
    path = folder / "hatchway.toml"
    path.write_text(
        f'state_dir = "{folder}"\n'
        '[storage]\npath = "db/hatchway.db"\n'
        '[agent]\nprovider = "main"\n'
        f'[providers.main]\nkind = "openai"\nbase_url = "{base_url}"\nmodel = "fake-model"\n'
        "[channels.console.main]\n"
        '[pricing."fake-model"]\ninput = 2000\noutput = 8000\ncache_read = 500\n',
        encoding="utf-8",
    )
    return path


async def test_usage_by_user_and_by_model_from_a_stopped_daemons_file(
    tmp_path: Path, hatchway: Hatchway, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    async with OpenAIFake() as model:
        config = write_config(tmp_path, model.base_url)
        settings = load_settings(config, environ={})
        for n in range(3):
            model.queue_text(f"answer {n}")
        channel = FakeChannel(CHANNEL)
        async with App(settings, channels={str(CHANNEL): channel}) as app:
            await channel.running.wait()
            await ask(channel, message(user="ann"), "answer 0")
            await ask(channel, message(user="ann", conversation="c2"), "answer 1")
            await ask(channel, message(user="bob"), "answer 2")
            await settled(app)
    async with await Store.open(settings.database_path()) as store:
        old = time.time() - 30 * 86400  # before --since: not counted
        estimated = Usage(input_tokens=100, output_tokens=10, estimated=True)
        await store.usage.record(
            [
                row("ann", "fake-model", Usage(input_tokens=10**6), at=old),
                row("bob", "local-model", estimated, at=time.time() - 60),
            ]
        )

    code, out, _ = await hatchway("usage", "--by", "user", "--since", "7d", "-c", str(config))
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("model usage since ") and lines[0].endswith(", by user")
    table = [line.split() for line in lines[1:]]
    header, ann, bob, rule, total, note = table
    assert header == ["user", "calls", "input", "output", "cache", "write", "cache", "read",
                      "cost", "estimated"]  # fmt: skip
    # each call: 11 prompt tokens of which 4 cached, 7 output (the fake's report), which at
    # these prices cost (7 * 2000 + 7 * 8000 + 4 * 500) / 10**6 = 0.072
    assert ann == ["console.main", "ann", "2", "14", "14", "0", "8", "0.1440", "0", "%"]
    assert bob == ["console.main", "bob", "2", "107", "17", "0", "4", "0.0720*", "50", "%"]
    assert set("".join(rule)) == {"-"}
    assert total == ["total", "4", "121", "31", "0", "12", "0.2160*", "25", "%"]
    assert " ".join(note).startswith("* some of these calls have no price")

    code, out, _ = await hatchway("usage", "--by", "model", "--since", "1h", "-c", str(config))
    assert code == 0
    rows = [line.split() for line in out.splitlines()[2:4]]
    assert rows == [
        ["fake-model", "3", "21", "21", "0", "12", "0.2160", "0", "%"],
        ["local-model", "1", "100", "10", "0", "0", "-", "100", "%"],
    ]


def row(user: str, model: str, usage: Usage, *, at: float) -> UsageRecord:
    return UsageRecord(
        at=at,
        turn_id="t-old",
        session_key=f"console.main:{user}",
        channel="console.main",
        conversation_id="c9",
        user_id=user,
        agent="default",
        provider="main",
        model=model,
        usage=usage,
        latency_ms=10,
        cost=None if model != "fake-model" else 2.0,
    )


async def test_usage_refuses_a_bad_since_and_a_missing_database(
    tmp_path: Path, hatchway: Hatchway
) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9/v1")
    code, _, err = await hatchway("usage", "--since", "last tuesday", "-c", str(config))
    assert code == 2 and "--since 'last tuesday'" in err
    code, _, err = await hatchway("usage", "-c", str(config))
    assert code == 1 and "no database at" in err
    assert not (tmp_path / "db").exists()  # a read-only command creates nothing


async def test_usage_with_no_calls_in_the_period(tmp_path: Path, hatchway: Hatchway) -> None:
    config = write_config(tmp_path, "http://127.0.0.1:9/v1")
    settings = load_settings(config, environ={})
    async with await Store.open(settings.database_path()):
        pass
    code, out, _ = await hatchway("usage", "--by", "agent", "-c", str(config))
    assert code == 0
    assert out.splitlines()[1] == "no model calls recorded in this period"
