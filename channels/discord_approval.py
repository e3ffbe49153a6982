"""Approval cards on Discord: message text, persistent buttons, and reaction choices.

Buttons are ``discord.ui.DynamicItem`` s whose ``custom_id`` carries only the opaque approval
id and a choice code (``hatchway:ap:<id>:<a|d|w|e>``: approve, deny, always, reply instead).
The item classes are registered with ``client.add_dynamic_items``, so discord.py routes a
click by matching the ``custom_id`` against the template — no in-memory view is needed, and
cards posted before a restart are still routed after it (the approvals core then says whether
the request is still pending). "✏️ Reply instead" opens the modal of
:mod:`channels.discord_reply` (see :mod:`channels.discord_clicks`), not here.
"""

from __future__ import annotations

import re
from typing import Any, Self

import discord

from bot.channel import ApprovalCard, ApprovalChoice, CardState
from bot.errors import ChannelError
from channels.discord_client import GatewayClient

CUSTOM_ID_PREFIX = "hatchway:ap:"
_ID = r"(?P<id>[A-Za-z0-9_.\-]+)"
CUSTOM_ID_TEMPLATE = rf"hatchway:ap:{_ID}:(?P<choice>[adw])"
REPLY_ID_TEMPLATE = rf"hatchway:ap:{_ID}:e"
MAX_CUSTOM_ID = 100  # Discord's limit for component custom ids
MAX_CONTENT = 2000
REPLY_LABEL = "✏️ Reply instead"

_CHOICE_CODES: dict[ApprovalChoice, str] = {
    ApprovalChoice.APPROVE: "a",
    ApprovalChoice.DENY: "d",
    ApprovalChoice.ALWAYS: "w",
}
_CODE_CHOICES = {code: choice for choice, code in _CHOICE_CODES.items()}

_BUTTONS: tuple[tuple[ApprovalChoice, str, discord.ButtonStyle], ...] = (
    (ApprovalChoice.APPROVE, "Approve", discord.ButtonStyle.success),
    (ApprovalChoice.DENY, "Deny", discord.ButtonStyle.danger),
    (ApprovalChoice.ALWAYS, "Always", discord.ButtonStyle.secondary),
)

REACTION_CHOICES: dict[str, ApprovalChoice] = {
    "✅": ApprovalChoice.APPROVE,
    "❌": ApprovalChoice.DENY,
    "♾️": ApprovalChoice.ALWAYS,
    "♾": ApprovalChoice.ALWAYS,
}
CARD_REACTIONS: tuple[str, ...] = ("✅", "❌", "♾️")


def _carried(custom_id: str, template: str, approval_id: str) -> str:
    if len(custom_id) > MAX_CUSTOM_ID or not re.fullmatch(template, custom_id):
        raise ChannelError(f"approval id {approval_id!r} cannot be carried in a Discord button")
    return custom_id


def approval_custom_id(approval_id: str, choice: ApprovalChoice) -> str:
    """The button ``custom_id`` for one choice; fails loudly if the id cannot be carried."""
    custom_id = f"{CUSTOM_ID_PREFIX}{approval_id}:{_CHOICE_CODES[choice]}"
    return _carried(custom_id, CUSTOM_ID_TEMPLATE, approval_id)


def reply_custom_id(approval_id: str) -> str:
    """The ``custom_id`` of the "Reply instead" button, and of the modal it opens."""
    return _carried(f"{CUSTOM_ID_PREFIX}{approval_id}:e", REPLY_ID_TEMPLATE, approval_id)


def parse_custom_id(custom_id: str) -> tuple[str, ApprovalChoice] | None:
    """``(approval_id, choice)`` from a button ``custom_id``, or None if it is not ours."""
    match = re.fullmatch(CUSTOM_ID_TEMPLATE, custom_id)
    if match is None:
        return None
    return match["id"], _CODE_CHOICES[match["choice"]]


def parse_reply_id(custom_id: str) -> str | None:
    """The approval id from a "Reply instead" button or modal ``custom_id``, or None."""
    match = re.fullmatch(REPLY_ID_TEMPLATE, custom_id)
    return match["id"] if match is not None else None


class ApprovalButton(
    discord.ui.DynamicItem[discord.ui.Button[discord.ui.View]], template=CUSTOM_ID_TEMPLATE
):
    """One Approve / Deny / Always button. A click is handed to the client's listener."""

    def __init__(self, approval_id: str, choice: ApprovalChoice) -> None:
        label, style = next((lbl, sty) for ch, lbl, sty in _BUTTONS if ch is choice)
        super().__init__(
            discord.ui.Button(
                label=label, style=style, custom_id=approval_custom_id(approval_id, choice)
            )
        )
        self.approval_id = approval_id
        self.choice = choice

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
        client = interaction.client
        if isinstance(client, GatewayClient):
            await client.listener.approval_button(interaction, self.approval_id, self.choice)


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
        client = interaction.client
        if isinstance(client, GatewayClient):
            await client.listener.reply_button(interaction, self.approval_id)


def card_content(card: ApprovalCard) -> str:
    """The card's message text: the shared rendering with a bold headline, within 2,000."""
    head, _, rest = card.render_text().partition("\n")
    text = f"**{head}**\n{rest}" if rest else f"**{head}**"
    if len(text) > MAX_CONTENT:
        text = text[: MAX_CONTENT - 1] + "…"
    return text


def card_view(card: ApprovalCard) -> discord.ui.View | None:
    """Buttons while the card is pending; None (buttons removed) once it is decided."""
    if card.state is not CardState.PENDING:
        return None
    view = discord.ui.View(timeout=None)
    for choice, _, _ in _BUTTONS:
        view.add_item(ApprovalButton(card.approval_id, choice))
    view.add_item(ReplyButton(card.approval_id))
    return view
