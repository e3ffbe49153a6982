"""docs/configuration.md documents every configuration key the code accepts, in the section
of the table it belongs to."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from bot.config import ChannelCommon, Settings

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
PLATFORM_HEADINGS = {"telegram": "Telegram", "slack": "Slack", "discord": "Discord"}


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


def _sections(level: str) -> dict[str, str]:
    """Heading text → body, for headings of the given level (``##`` or ``###``)."""
    text = DOC.read_text(encoding="utf-8")
    parts = re.split(rf"^{level} (.+)$", text, flags=re.M)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _section_for(key: str) -> str:
    """The part of the document where ``key`` must appear."""
    top = key.split(".", 1)[0]
    if "." not in key:
        return _sections("##")["Top level"]
    sections = _sections("##")
    if top == "channels":
        kind, _, field = key.split(".", 3)[1:]
        body = next(v for h, v in sections.items() if h.startswith("`[channels."))
        if field.split(".")[0] in ChannelCommon.model_fields or kind == "console":
            return body.split("### ", 1)[0]
        return _sections("###")[PLATFORM_HEADINGS[kind]]
    return "".join(v for h, v in sections.items() if f"[{top}" in h)


@pytest.mark.parametrize("key", _keys(Settings))
def test_every_key_is_documented_in_its_section(key: str) -> None:
    section = _section_for(key)
    assert section, f"no section of docs/configuration.md covers {key}"
    names = set(re.findall(r"`([a-z_.<>]+)`", section))
    parts = key.split(".")
    # Tables name a key by its last part(s): `timeout_s`, `shell.timeout_s`,
    # `servers.<name>.url`; any of them in the key's own section counts.
    candidates = {".".join(parts[-n:]) for n in range(1, len(parts) + 1)}
    assert candidates & names, f"{key} is not documented in its section of configuration.md"
