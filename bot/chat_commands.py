"""The chat commands a user can type, as data: names, what each does, who may use it.

The gateway's router (:mod:`bot.gateway.commands`) answers them; adapters read this table to
offer them where the platform can (Telegram ``setMyCommands``, Discord application commands,
the Slack ``/hatchway`` subcommands). Names are lower-case ASCII, as Telegram and Discord
require.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CommandAccess(StrEnum):
    """Who may use a command.

    ``anyone``: anyone who can reach the bot here, allowed or not (a stranger needs ``/id`` to
    be added); still nothing in a conversation whose policy is ``disabled``. ``member``: only
    senders the access policy lets talk to the bot.
    """

    ANYONE = "anyone"
    MEMBER = "member"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatCommandSpec:
    name: str
    summary: str
    access: CommandAccess


CHAT_COMMANDS: tuple[ChatCommandSpec, ...] = (
    ChatCommandSpec(
        name="new",
        summary="Start a new session: earlier messages here are forgotten",
        access=CommandAccess.MEMBER,
    ),
    ChatCommandSpec(
        name="stop",
        summary="Cancel the running turn and drop the messages queued behind it",
        access=CommandAccess.MEMBER,
    ),
    ChatCommandSpec(
        name="forget",
        summary="Have the bot forget what you left on this channel (an approver confirms)",
        access=CommandAccess.MEMBER,
    ),
    ChatCommandSpec(
        name="id",
        summary="Show your user id and this chat's id (for allowed_users and approvers)",
        access=CommandAccess.ANYONE,
    ),
    ChatCommandSpec(
        name="help",
        summary="List these commands",
        access=CommandAccess.ANYONE,
    ),
)


def command_spec(name: str) -> ChatCommandSpec | None:
    """The command called ``name`` (without its ``/``), if there is one."""
    for spec in CHAT_COMMANDS:
        if spec.name == name:
            return spec
    return None
