"""The chat commands a user can type, as data: names, what each does, who may use it, and
how the abuse limits count it.

The gateway's router (:mod:`bot.gateway.commands`) answers them; adapters read this table to
offer them where the platform can (Telegram ``setMyCommands``, Discord application commands,
the Slack ``/hatchway`` subcommands). Names are lower-case ASCII, as Telegram and Discord
require. The gateway's command limits (:mod:`bot.gateway.command_limits`) read ``limit``
before any handler runs, so a command added here is limited like the others without a check
of its own.
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


class CommandLimit(StrEnum):
    """How the abuse limits count a command (:mod:`bot.gateway.command_limits`).

    ``messages``: a token of the sender's and the conversation's rate-limit buckets, like any
    message (``[rate_limits]``); a refused command is not run, and its sender is told when to
    try again at most once a minute. ``always``: always run (stopping must always work); only
    its answers are counted, by a generous bucket of their own, and past it it runs quietly.
    ``open``: for commands open to anyone (``access = anyone``): one answer per sender every
    few seconds, whoever asks, and a member's takes a token as for ``messages`` (a stranger
    has no bucket).
    """

    MESSAGES = "messages"
    ALWAYS = "always"
    OPEN = "open"


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatCommandSpec:
    name: str
    summary: str
    access: CommandAccess
    limit: CommandLimit = CommandLimit.MESSAGES
    #: What the command reads after its name, for a platform that asks for it in a field
    #: (a Discord application command's text option); empty: nothing.
    takes: str = ""

    def __post_init__(self) -> None:
        if (self.access is CommandAccess.ANYONE) != (self.limit is CommandLimit.OPEN):
            raise ValueError(f"/{self.name}: the open limit is for commands open to anyone")


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
        limit=CommandLimit.ALWAYS,
    ),
    ChatCommandSpec(
        name="forget",
        summary="Have the bot forget what you left on this channel (an approver confirms)",
        access=CommandAccess.MEMBER,
    ),
    ChatCommandSpec(
        name="usage",
        summary="Your own model usage today and this month, and what is left of your budgets",
        access=CommandAccess.MEMBER,
    ),
    ChatCommandSpec(
        name="status",
        summary="Which agent and model answer here, whether approvals work here, grants",
        access=CommandAccess.MEMBER,
    ),
    ChatCommandSpec(
        name="grants",
        summary="The grants that let tools run here without asking; approvers: grants revoke N",
        access=CommandAccess.MEMBER,
        takes="revoke N (approvers)",
    ),
    ChatCommandSpec(
        name="why",
        summary="Approvers: why a tool call would run, be asked about or be refused here",
        access=CommandAccess.MEMBER,
        takes="TOOL {JSON arguments}",
    ),
    ChatCommandSpec(
        name="id",
        summary="Show your user id and this chat's id (for allowed_users and approvers)",
        access=CommandAccess.ANYONE,
        limit=CommandLimit.OPEN,
    ),
    ChatCommandSpec(
        name="help",
        summary="List these commands",
        access=CommandAccess.ANYONE,
        limit=CommandLimit.OPEN,
    ),
)


def command_spec(name: str) -> ChatCommandSpec | None:
    """The command called ``name`` (without its ``/``), if there is one."""
    for spec in CHAT_COMMANDS:
        if spec.name == name:
            return spec
    return None


def command_of(text: str) -> str:
    """The command a message invokes, without its ``/`` and lower-cased; "" when the message
    is no command (its first word does not start with ``/``, or it has no word at all)."""
    words = text.split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return ""
    return words[0][1:].lower()
