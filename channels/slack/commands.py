"""Chat commands on Slack: the ``/hatchway`` slash command and the ``@bot new`` text form.

Slack's client keeps every message that starts with ``/`` for slash commands, so ``/new`` can
never be typed as a message. Commands come two ways instead, both normalised to the
envelope text ``/<name>`` (:mod:`bot.chat_commands`):

- **The slash command** (``/hatchway new|stop|help|id``, the name is the config's
  ``slash_command``): a payload with the channel but never the thread, so ``/hatchway stop``
  has ``command_scope = "conversation"`` (the turns that user started anywhere in the channel,
  threads included) and the others act at the channel's top level (``thread_id`` None).
  No word, or a word that is no command, is ``/help``. A payload for another command name,
  another workspace (``team_id`` against ``auth.test``) or another app (``api_app_id``
  against the app-level token's ``xapp-1-A…``) is refused by :func:`foreign_reason`.
- **The text form**: a message that is exactly the bot's mention and a command word
  (``@hatchway stop``, ``@hatchway /stop``), see :func:`text_command`. In a thread it acts on
  that thread; at the top level it acts like the slash command.

Pure functions over untrusted JSON, validated with pydantic; nothing here does I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.chat_commands import command_spec
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender

#: The envelope ``message_id`` (and reply target's ``reply_to_message_id``) of a slash
#: command starts with this: such a target is answered privately
#: (:mod:`channels.slack.command_replies`), and nothing can react to it.
SLASH_PREFIX = "slash:"

_DIRECT_CHANNEL_NAME = "directmessage"


class SlashCommand(BaseModel):
    """The fields of a slash command payload the adapter reads (Slack sends them as a form
    over HTTP and as the envelope's payload over Socket Mode)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    command: str = Field(min_length=1)
    text: str = ""
    channel_id: str = Field(min_length=1)
    channel_name: str = ""
    user_id: str = Field(min_length=1)
    user_name: str = ""
    team_id: str = ""
    api_app_id: str = ""
    response_url: str = ""
    trigger_id: str = Field(min_length=1)


def parse_slash(body: Mapping[str, object]) -> SlashCommand | None:
    """The slash command if ``body`` is a well-formed one, else None."""
    try:
        return SlashCommand.model_validate(body)
    except ValidationError:
        return None


def app_id_of(app_token: str | None) -> str:
    """The app id an app-level token belongs to (``xapp-1-A0123-…`` → ``A0123``), or ""."""
    parts = (app_token or "").split("-")
    if len(parts) > 3 and parts[0] == "xapp" and parts[2].startswith("A"):
        return parts[2]
    return ""


def foreign_reason(
    command: SlashCommand, *, expected_command: str, team_id: str, app_id: str
) -> str | None:
    """Why this slash command is not ours to answer, or None when it is. The workspace and
    app are checked when known (``auth.test`` gives the team; only Socket Mode's app-level
    token names the app, and over HTTP the signing secret already proves it)."""
    if command.command != expected_command:
        return "other_command"
    if team_id and command.team_id != team_id:
        return "other_team"
    if app_id and command.api_app_id != app_id:
        return "other_app"
    return None


def slash_text(text: str) -> str:
    """The envelope text of ``/hatchway <text>``: ``/<name>`` plus any further words for a
    known command, ``/help`` for nothing or anything else."""
    words = text.split()
    name = words[0].lower().removeprefix("/") if words else ""
    if command_spec(name) is None:
        return "/help"
    return " ".join([f"/{name}", *words[1:]])


def slash_message_id(user_id: str, trigger_id: str) -> str:
    """A fresh id per invocation (Slack gives each one a new ``trigger_id``); it names the
    user so that an answer can still reach them privately without the response URL."""
    return f"{SLASH_PREFIX}{user_id}:{trigger_id}"


def slash_user(message_id: str | None) -> str | None:
    """The user of a :func:`slash_message_id`, or None for any other id."""
    if not message_id or not message_id.startswith(SLASH_PREFIX):
        return None
    user, _, trigger = message_id.removeprefix(SLASH_PREFIX).partition(":")
    return user if user and trigger else None


def slash_envelope(
    command: SlashCommand,
    *,
    ref: ChannelRef,
    display_name: str,
    capabilities: Capabilities,
) -> IngressEnvelope:
    """The envelope of a slash command :func:`foreign_reason` accepted."""
    text = slash_text(command.text)
    is_direct = command.channel_id.startswith("D") or command.channel_name == _DIRECT_CHANNEL_NAME
    message_id = slash_message_id(command.user_id, command.trigger_id)
    return IngressEnvelope(
        channel=ref,
        message_id=message_id,
        conversation_id=command.channel_id,
        thread_id=None,
        sender=Sender(id=command.user_id, display_name=display_name or command.user_name),
        text=text,
        is_direct=is_direct,
        is_group=not is_direct,
        addressed_to_bot=True,
        reply_target=DeliveryTarget(
            channel=ref,
            conversation_id=command.channel_id,
            reply_to_message_id=message_id,
        ),
        capabilities=capabilities,
        command_scope=scope_of(text),
        private_reply=True,  # a slash command's answers are ephemeral (command_replies)
    )


def scope_of(text: str) -> Literal["session", "conversation"]:
    """What a command with no thread acts on: ``/stop`` on what the sender started in the
    whole conversation, the others on the conversation's top level."""
    return "conversation" if text.split(maxsplit=1)[0] == "/stop" else "session"


_TEXT_COMMAND = re.compile(r"^\s*<@(?P<user>[A-Z0-9]+)(?:\|[^<>]*)?>\s*/?(?P<word>[A-Za-z]+)\s*$")


def text_command(text: str, bot_user_id: str) -> str | None:
    """``/<name>`` when ``text`` is exactly the bot's mention followed by a command word
    (``<@UBOT> stop``, ``<@UBOT|hatchway> /Stop``), else None."""
    match = _TEXT_COMMAND.match(text)
    if match is None or match.group("user") != bot_user_id:
        return None
    name = match.group("word").lower()
    return f"/{name}" if command_spec(name) is not None else None
