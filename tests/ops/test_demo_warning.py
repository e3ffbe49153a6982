"""Which configurations get the demo-model warning (:func:`demo_model_warning`)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.config import parse_settings
from bot.config.embedded import PACKAGED_MODEL_NAME
from bot.config.settings import demo_model_warning

TELEGRAM = {"telegram": {"main": {"allowed_users": ["1"]}}}
DEMO = {"default": {"kind": "embedded"}}  # the packaged model
OPENAI = {"default": {"kind": "openai", "model": "gpt-4o-mini"}}


@pytest.mark.parametrize(
    ("channels", "providers", "warned"),
    [
        (TELEGRAM, DEMO, True),
        ({"telegram": {"main": {"enabled": False}}}, DEMO, False),
        ({"console": {"main": {}}}, DEMO, False),  # hatchway chat's own use of it
        ({}, DEMO, False),
        (TELEGRAM, OPENAI, False),
        # a GGUF file of the operator's choice is not the demo model
        (TELEGRAM, {"default": {"kind": "embedded", "model_path": "/m/qwen.gguf"}}, False),
        # a fallback counts: the team is answered by it whenever the first fails
        (
            TELEGRAM,
            {**OPENAI, "local": DEMO["default"]},
            True,
        ),
    ],
)
def test_the_demo_model_is_named_when_it_answers_a_chat_channel(
    channels: dict[str, Any], providers: dict[str, Any], warned: bool
) -> None:
    agent = {"fallback": ["local"]} if "local" in providers else {}
    settings = parse_settings(
        {"channels": channels, "providers": providers, "agent": agent},
        environ={},
        require_provider=False,
    )
    warning = demo_model_warning(settings)
    if not warned:
        assert warning is None
        return
    assert warning is not None
    assert "telegram.main" in warning and PACKAGED_MODEL_NAME in warning
    assert "[providers]" in warning
