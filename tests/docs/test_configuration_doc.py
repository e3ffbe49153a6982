"""docs/configuration.md documents every configuration key the code accepts."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.config import Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def _keys(model: type[BaseModel], prefix: str = "") -> list[str]:
    keys: list[str] = []
    for name, info in model.model_fields.items():
        annotation = info.annotation
        args = typing.get_args(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            if name == "approval" and prefix.startswith("channels."):
                keys.append(prefix + name)  # per-channel override table, documented as one row
                continue
            keys.extend(_keys(annotation, f"{prefix}{name}."))
        elif typing.get_origin(annotation) is dict and args and isinstance(args[1], type):
            value = args[1]
            if issubclass(value, BaseModel):
                keys.extend(_keys(value, f"{prefix}{name}.<name>."))
            else:
                keys.append(prefix + name)
        else:
            keys.append(prefix + name)
    return keys


def _documented_names() -> set[str]:
    return set(re.findall(r"`([a-z_.<>]+)`", DOC.read_text(encoding="utf-8")))


@pytest.mark.parametrize("key", _keys(Settings))
def test_every_key_is_documented(key: str) -> None:
    names = _documented_names()
    leaf = key.rsplit(".", 1)[-1]
    # Tables document keys by their last part(s); a key counts when its leaf, or its
    # last two parts (e.g. `shell.timeout_s`, `servers.<name>.url`) appear in backticks.
    parts = key.split(".")
    candidates = {leaf, ".".join(parts[-2:]), ".".join(parts[-3:]), key}
    assert candidates & names, f"{key} is not documented in docs/configuration.md"
