"""Deny with a reply on Discord: the modal behind "✏️ Reply instead", and its submission.

The modal carries the same ``custom_id`` as the button that opened it
(``hatchway:ap:<id>:e``) and one required paragraph field. Its submission (a MODAL_SUBMIT
interaction) is read here into a :class:`ReplySubmission`; the adapter answers it statelessly
from the gateway's ``on_interaction``, so a dialog opened before a restart still counts after
it, and two approvers with the dialog open at once do not displace each other (discord.py
would otherwise keep one in-memory modal per ``custom_id``).

Submission payloads are untrusted: validated with pydantic; anything malformed is None. The
text field is found both inside a Label (type 18, what this modal sends) and inside an action
row (type 1, the older layout).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import discord
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.channel import MAX_REPLY_CHARS

MODAL_TITLE = "Deny with a reply"
FIELD_LABEL = "What should the assistant be told instead?"
FIELD_ID = "hatchway:reply"


def reply_modal(custom_id: str) -> discord.ui.Modal:
    """The "Deny with a reply" modal. It is returned stopped: discord.py keeps an unfinished
    modal in memory until it is submitted (forever, if the dialog is dismissed), and this
    one is answered through ``on_interaction`` instead."""
    modal = discord.ui.Modal(title=MODAL_TITLE, custom_id=custom_id, timeout=None)
    field = discord.ui.TextInput[discord.ui.Modal](
        style=discord.TextStyle.paragraph,
        custom_id=FIELD_ID,
        required=True,
        max_length=MAX_REPLY_CHARS,
    )
    modal.add_item(discord.ui.Label(text=FIELD_LABEL, component=field))
    modal.stop()
    return modal


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplySubmission:
    """What a submitted modal said: its ``custom_id`` and the text field's value (as typed;
    ``text`` is empty when the field was missing)."""

    custom_id: str
    text: str


class _Field(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: int
    custom_id: str | None = None
    value: str | None = None
    component: _Field | None = None  # a Label's child
    components: list[_Field] = Field(default_factory=list)  # an action row's children

    def values(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.custom_id is not None and isinstance(self.value, str):
            found[self.custom_id] = self.value
        for child in [*self.components, *([self.component] if self.component else [])]:
            found.update(child.values())
        return found


class _Submit(BaseModel):
    model_config = ConfigDict(extra="ignore")
    custom_id: str = Field(min_length=1, max_length=100)
    components: list[_Field] = Field(default_factory=list)


def submitted_reply(data: Mapping[str, Any] | None) -> ReplySubmission | None:
    """The submission in a MODAL_SUBMIT interaction's ``data``, or None if malformed."""
    if data is None:
        return None
    try:
        submit = _Submit.model_validate(dict(data))
    except ValidationError:
        return None
    values: dict[str, str] = {}
    for component in submit.components:
        values.update(component.values())
    return ReplySubmission(custom_id=submit.custom_id, text=values.get(FIELD_ID, ""))
