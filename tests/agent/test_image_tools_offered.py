"""``view_attachment`` is offered only to an agent that can see an image: an App on a real
SQLite file, an OpenAI-compatible model on loopback, and the tool list of the request body
it was sent, with attachments on or off, a model that is or is not sent images, a fallback
chain, and a reload that turns attachments off. The lines about the images a message brings
promise only what the agent can do: ``view_attachment`` is named only to an agent offered it
(not left out by the agent's or the channel's ``excluded_tools``), and an agent that cannot
see images is told so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.attachments.ingest import MAX_IMAGES
from bot.attachments.lines import SEPARATELY
from bot.config import parse_settings
from bot.envelope import Attachment
from tests.agent.test_attachments_app import (
    KEY_ENV,
    TELEGRAM,
    ask,
    channel,
    image_urls,
    llm,
    message,
    settings_for,
    texts,
)
from tests.attachments.images import encoded, noise
from tests.fakes.channel import FileChannel
from tests.fakes.openai_server import OpenAIFake

__all__ = ["channel", "llm"]  # fixtures shared with the attachments tests


def offered(llm: OpenAIFake) -> set[str]:
    """The tool names of the last request the model got."""
    return {tool["function"]["name"] for tool in llm.requests[-1].body.get("tools", [])}


def chain(llm: OpenAIFake, tmp_path: Path, *models: str, attachments: bool = True) -> Any:
    """Settings whose agent runs on ``models`` in order (the first primary)."""
    providers = {
        f"p{n}": {
            "kind": "openai",
            "base_url": llm.base_url,
            "model": model,
            "api_key_env": KEY_ENV,
            "max_retries": 0,
        }
        for n, model in enumerate(models)
    }
    return parse_settings(
        {
            "state_dir": str(tmp_path),
            "agent": {
                "turn_timeout_s": 60.0,
                "provider": "p0",
                "fallback": [f"p{n}" for n in range(1, len(models))],
            },
            "attachments": {"enabled": attachments},
            "channels": {"telegram": {"main": {"allowed_users": ["4242"]}}},
            "providers": providers,
        },
        environ={KEY_ENV: "sk-test-not-a-real-key-000"},
    )


@pytest.mark.parametrize(
    ("models", "attachments", "shown"),
    [
        (("gpt-4o",), True, True),
        (("llama3.1:8b",), True, False),  # a text-only model
        (("gpt-4o",), False, False),  # [attachments] enabled = false
        (("llama3.1:8b", "gpt-4o"), True, True),  # a fallback that sees images
    ],
    ids=["vision", "text-only", "attachments-off", "fallback-sees"],
)
async def test_view_attachment_is_offered_only_when_it_can_work(
    llm: OpenAIFake,
    channel: FileChannel,
    tmp_path: Path,
    models: tuple[str, ...],
    attachments: bool,
    shown: bool,
) -> None:
    settings = chain(llm, tmp_path, *models, attachments=attachments)
    async with App(settings, channels={"telegram.main": channel}) as app:
        await ask(app, llm, channel, message(1))
    tools = offered(llm)
    assert "current_time" in tools  # the other tools are there either way
    assert ("view_attachment" in tools) is shown


async def test_images_false_hides_it_and_a_reload_applies(
    llm: OpenAIFake, channel: FileChannel, tmp_path: Path
) -> None:
    settings = settings_for(llm, tmp_path)
    async with App(settings, channels={"telegram.main": channel}) as app:
        await ask(app, llm, channel, message(1))
        assert "view_attachment" in offered(llm)
        app.reload(settings_for(llm, tmp_path, images=False))
        await ask(app, llm, channel, message(2))
        assert "view_attachment" not in offered(llm)
        app.reload(settings)
        await ask(app, llm, channel, message(3))
        assert "view_attachment" in offered(llm)


def many_images() -> FileChannel:
    """A channel whose user sends one image more than a message takes."""
    files = {f"i{n}": encoded(noise(30, 30), "PNG") for n in range(MAX_IMAGES + 1)}
    return FileChannel(TELEGRAM, files)


def with_exclusion(settings: Any, where: str) -> Any:
    """``settings`` with ``view_attachment`` taken away by the agent's or the channel's
    ``excluded_tools``."""
    if where == "agent":
        agent = settings.agent.model_copy(update={"excluded_tools": ["view_attachment"]})
        return settings.model_copy(update={"agent": agent})
    raw = settings.model_dump(mode="json", exclude_unset=True)
    raw["channels"]["telegram"]["main"]["excluded_tools"] = ["view_attachment"]
    return parse_settings(raw, environ={KEY_ENV: "sk-test-not-a-real-key-000"})


@pytest.mark.parametrize(
    ("model", "excluded", "shown", "viewer"),
    [
        ("gpt-4o", None, MAX_IMAGES, True),
        ("gpt-4o", "agent", MAX_IMAGES, False),
        ("gpt-4o", "channel", MAX_IMAGES, False),
        ("llama3.1:8b", None, 0, False),  # a text-only model
    ],
    ids=["offered", "agent-excludes", "channel-excludes", "text-only"],
)
async def test_the_lines_of_images_promise_only_what_the_agent_can_do(
    llm: OpenAIFake,
    tmp_path: Path,
    model: str,
    excluded: str | None,
    shown: int,
    viewer: bool,
) -> None:
    files = many_images()
    settings = chain(llm, tmp_path, model)
    if excluded is not None:
        settings = with_exclusion(settings, excluded)
    refs = [Attachment(kind="image", name=f"{ref}.png", ref=ref) for ref in files.attached]
    async with App(settings, channels={"telegram.main": files}) as app:
        messages = await ask(app, llm, files, message(1, *refs))
    assert len(image_urls(messages)) == shown
    assert ("view_attachment" in offered(llm)) is viewer
    content = texts(messages[-1]["content"])
    lines = [line for line in content.split("\n\n") if line.startswith("[image ")]
    assert len(lines) == MAX_IMAGES + 1
    # view_attachment is named only to an agent that is offered it
    assert ("view_attachment" in content) is viewer
    if not shown:
        assert all("is not shown: this assistant cannot see images" in line for line in lines)
        return
    [held] = [line for line in lines if "was not shown with this message" in line]
    assert held.startswith(f"[image i{MAX_IMAGES}.png ")
    assert (SEPARATELY in held) is not viewer
