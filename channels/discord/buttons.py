"""The persistent buttons of approval cards and full views on Discord, and reaction choices.

Buttons are ``discord.ui.DynamicItem`` s whose ``custom_id`` carries only the opaque approval
id, a code, and for a full view the card's message id:

- ``hatchway:ap:<id>:a|d|w``: Approve / Deny / Always on the card;
- ``hatchway:ap:<id>:e``: ✏️ Reply instead (opens the modal of
  :mod:`channels.discord.reply_instead`);
- ``hatchway:ap:<id>:f`` or ``…:f:<card>``: 🔎 Show full and decide (on the card, or on an
  ephemeral answer, where it names the card's message id);
- ``hatchway:ap:<id>:fa|fd|fw:<card>``: Approve / Deny / Always in the full view of that
  card; these answers carry ``full_view=True``.

The item classes are registered with ``client.add_dynamic_items``, so discord.py routes a
click by matching the ``custom_id`` against the templates — no in-memory view is needed, and
cards and full views shown before a restart are still routed after it (the approvals core
then says whether the request is still pending). The handling is
:mod:`channels.discord.card_surface`'; nothing here decides anything.
"""

from __future__ import annotations

import re
from typing import Any, Self

import discord

from bot.channel import SHOW_FULL_LABEL, ApprovalChoice
from bot.errors import ChannelError
from channels.discord.client import ButtonPress, GatewayClient

CUSTOM_ID_PREFIX = "hatchway:ap:"
_ID = r"(?P<id>[A-Za-z0-9_.\-]+)"
_CARD = r"(?::(?P<card>[0-9]{1,20}))?"
CUSTOM_ID_TEMPLATE = rf"hatchway:ap:{_ID}:(?P<choice>[adw])"
REPLY_ID_TEMPLATE = rf"hatchway:ap:{_ID}:e"
SHOW_FULL_TEMPLATE = rf"hatchway:ap:{_ID}:f{_CARD}"
FULL_VIEW_TEMPLATE = rf"hatchway:ap:{_ID}:f(?P<choice>[adw]){_CARD}"
MAX_CUSTOM_ID = 100  # Discord's limit for component custom ids
REPLY_LABEL = "✏️ Reply instead"

_CHOICE_CODES: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "a",
    ApprovalChoice.DENY: "d",
    ApprovalChoice.ALWAYS: "w",
}
_CODE_CHOICES = {code: choice for choice, code in _CHOICE_CODES.items()}

_BUTTONS: dict[ApprovalChoice, tuple[str, discord.ButtonStyle]] = {
    ApprovalChoice.APPROVE: ("Approve", discord.ButtonStyle.success),
    ApprovalChoice.DENY: ("Deny", discord.ButtonStyle.danger),
    ApprovalChoice.ALWAYS: ("Always", discord.ButtonStyle.secondary),
}
#: The order of the choice buttons, on a card and in a full view.
CHOICES: tuple[ApprovalChoice, ...] = tuple(_BUTTONS)

REACTION_CHOICES: dict[str, ApprovalChoice] = {
    "✅": ApprovalChoice.APPROVE,
    "❌": ApprovalChoice.DENY,
    "♾️": ApprovalChoice.ALWAYS,
    "♾": ApprovalChoice.ALWAYS,
}
#: The reactions the bot adds to a card whose buttons approve; a cut card gets only ❌.
CARD_REACTIONS: tuple[str, ...] = ("✅", "❌", "♾️")
CUT_CARD_REACTIONS: tuple[str, ...] = ("❌",)


def _carried(custom_id: str, template: str, approval_id: str) -> str:
    if len(custom_id) > MAX_CUSTOM_ID or not re.fullmatch(template, custom_id):
        raise ChannelError(f"approval id {approval_id!r} cannot be carried in a Discord button")
    return custom_id


def _card_suffix(card_message_id: int | None) -> str:
    return "" if card_message_id is None else f":{card_message_id}"


def _card_of(match: re.Match[str]) -> int | None:
    return int(match["card"]) if match["card"] else None


def approval_custom_id(approval_id: str, choice: ApprovalChoice) -> str:
    """The card button ``custom_id`` for one choice; fails loudly if the id cannot be
    carried."""
    custom_id = f"{CUSTOM_ID_PREFIX}{approval_id}:{_CHOICE_CODES[choice]}"
    return _carried(custom_id, CUSTOM_ID_TEMPLATE, approval_id)


def reply_custom_id(approval_id: str) -> str:
    """The ``custom_id`` of the "Reply instead" button, and of the modal it opens."""
    return _carried(f"{CUSTOM_ID_PREFIX}{approval_id}:e", REPLY_ID_TEMPLATE, approval_id)


def show_full_custom_id(approval_id: str, card_message_id: int | None = None) -> str:
    """The ``custom_id`` of "Show full and decide"; ``card_message_id`` when the button is
    not on the card itself (then it names the card)."""
    custom_id = f"{CUSTOM_ID_PREFIX}{approval_id}:f{_card_suffix(card_message_id)}"
    return _carried(custom_id, SHOW_FULL_TEMPLATE, approval_id)


def full_view_custom_id(press: ButtonPress) -> str:
    """The ``custom_id`` of a full view's Approve / Deny / Always button."""
    code = _CHOICE_CODES[press.choice]
    suffix = _card_suffix(press.card_message_id)
    custom_id = f"{CUSTOM_ID_PREFIX}{press.approval_id}:f{code}{suffix}"
    return _carried(custom_id, FULL_VIEW_TEMPLATE, press.approval_id)


def parse_custom_id(custom_id: str) -> tuple[str, ApprovalChoice] | None:
    """``(approval_id, choice)`` from a card button ``custom_id``, or None if it is not one."""
    match = re.fullmatch(CUSTOM_ID_TEMPLATE, custom_id)
    if match is None:
        return None
    return match["id"], _CODE_CHOICES[match["choice"]]


def parse_full_view_id(custom_id: str) -> ButtonPress | None:
    """The press a full view's button ``custom_id`` stands for, or None if it is not one."""
    match = re.fullmatch(FULL_VIEW_TEMPLATE, custom_id)
    return _full_view_press(match) if match is not None else None


def parse_reply_id(custom_id: str) -> str | None:
    """The approval id from a "Reply instead" button or modal ``custom_id``, or None."""
    match = re.fullmatch(REPLY_ID_TEMPLATE, custom_id)
    return match["id"] if match is not None else None


def _full_view_press(match: re.Match[str]) -> ButtonPress:
    return ButtonPress(
        approval_id=match["id"],
        choice=_CODE_CHOICES[match["choice"]],
        full_view=True,
        card_message_id=_card_of(match),
    )


def _listener(interaction: discord.Interaction[Any]) -> GatewayClient | None:
    client = interaction.client
    return client if isinstance(client, GatewayClient) else None


class ApprovalButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=CUSTOM_ID_TEMPLATE
):
    """One Approve / Deny / Always button on a card. A click is handed to the client's
    listener."""

    def __init__(self, approval_id: str, choice: ApprovalChoice) -> None:
        label, style = _BUTTONS[choice]
        super().__init__(
            discord.ui.Button(
                label=label, style=style, custom_id=approval_custom_id(approval_id, choice)
            )
        )
        self.press = ButtonPress(approval_id=approval_id, choice=choice)

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        return cls(match["id"], _CODE_CHOICES[match["choice"]])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if client := _listener(interaction):
            await client.listener.approval_button(interaction, self.press)


class FullViewButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=FULL_VIEW_TEMPLATE
):
    """One Approve / Deny / Always button in a full view: its answer carries
    ``full_view=True`` and names the card."""

    def __init__(self, press: ButtonPress) -> None:
        label, style = _BUTTONS[press.choice]
        super().__init__(
            discord.ui.Button(label=label, style=style, custom_id=full_view_custom_id(press))
        )
        self.press = press

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        return cls(_full_view_press(match))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if client := _listener(interaction):
            await client.listener.approval_button(interaction, self.press)


class ShowFullButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=SHOW_FULL_TEMPLATE
):
    """ "🔎 Show full and decide": a press is handed to the client's listener, which answers
    with the full view for a presser the host would let decide."""

    def __init__(self, approval_id: str, card_message_id: int | None = None) -> None:
        super().__init__(
            discord.ui.Button(
                label=SHOW_FULL_LABEL,
                style=discord.ButtonStyle.primary,
                custom_id=show_full_custom_id(approval_id, card_message_id),
            )
        )
        self.approval_id = approval_id
        self.card_message_id = card_message_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        return cls(match["id"], _card_of(match))

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if client := _listener(interaction):
            await client.listener.show_full_button(
                interaction, self.approval_id, self.card_message_id
            )


class ReplyButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=REPLY_ID_TEMPLATE
):
    """The "✏️ Reply instead" button: a press is handed to the client's listener, which opens
    the deny-with-a-reply modal for a presser the host would let decide."""

    def __init__(self, approval_id: str) -> None:
        super().__init__(
            discord.ui.Button(
                label=REPLY_LABEL,
                style=discord.ButtonStyle.secondary,
                custom_id=reply_custom_id(approval_id),
            )
        )
        self.approval_id = approval_id

    @classmethod
    async def from_custom_id(
        cls,
        interaction: discord.Interaction[Any],
        item: discord.ui.Item[Any],
        match: re.Match[str],
        /,
    ) -> Self:
        return cls(match["id"])

    async def callback(self, interaction: discord.Interaction[Any]) -> None:
        if client := _listener(interaction):
            await client.listener.reply_button(interaction, self.approval_id)


#: Every button class, for ``client.add_dynamic_items``.
DYNAMIC_ITEMS = (ApprovalButton, FullViewButton, ShowFullButton, ReplyButton)


def show_full_view(approval_id: str, card_message_id: int | None) -> discord.ui.View:
    """A view of one "Show full and decide" button, for an answer that is not on the card
    (it names the card). Stopped: discord.py keeps nothing; the button is routed by its id."""
    view = discord.ui.View(timeout=None)
    view.add_item(ShowFullButton(approval_id, card_message_id))
    view.stop()
    return view
