"""Chat commands on Discord: the application commands offered, and the text forms.

Offering (:func:`command_tree`, :func:`sync_commands`): one slash command per entry of
:data:`bot.chat_commands.CHAT_COMMANDS` (``/new``, ``/stop``, ``/forget``, ``/id``,
``/help``, described by their summaries), in discord.py's ``app_commands.CommandTree``,
usable in servers and in the bot's DMs. At start the channel syncs them **globally** (one
``PUT /applications/{id}/commands``): global commands reach DMs and every server the bot is
in, where per-server commands would miss DMs and need one call per server. The sync replaces
the application's global commands with these (``sync_commands = false`` leaves the
registration alone), and clients may need a while, or a reload, to show a change. A failed
sync is logged and the start goes on: commands registered by an earlier start keep working.

An invoked command is handed to the ``on_command`` callback with its name; the adapter turns
it into an envelope whose text is ``/<name>`` (:mod:`channels.discord.inbound`). A command
that reads text after its name (:attr:`~bot.chat_commands.ChatCommandSpec.takes`: ``/why
TOOL {JSON}``) has one required string option, ``text``, and its envelope's text is
``/<name> <text>``.

Reading text (:func:`typed_command`): ``/new`` typed as a plain message (in a DM, where
Discord's client sends it as text) is a command with its name lower-cased; in a server a
message that is a mention of the bot followed by exactly one command word (``@bot stop``, or
``@bot /stop``) becomes ``/stop``. Any other text is left as it is.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord
import structlog
from discord import app_commands

from bot.chat_commands import CHAT_COMMANDS, ChatCommandSpec, command_spec
from bot.envelope import ChannelRef

log = structlog.get_logger(__name__)

#: How long the start waits for the sync before going on without it.
SYNC_TIMEOUT_S = 10.0
MAX_DESCRIPTION = 100  # Discord's limit for a command's description

CommandCallback = Callable[[discord.Interaction[discord.Client], str], Awaitable[None]]
"""Called with the interaction and the command's name (followed by a space and its text
for a command that takes one, such as ``why``), from discord.py's invoker task."""

_COMMAND = re.compile(r"/(?P<name>[A-Za-z0-9_-]+)(?:\s+(?P<args>.*))?", re.DOTALL)
_LEADING_MENTION = re.compile(r"\s*<@(?P<kind>[!&]?)(?P<id>\d+)>\s*(?P<rest>.*)", re.DOTALL)


def command_tree(client: discord.Client, on_command: CommandCallback) -> app_commands.CommandTree:
    """The client's (only) command tree, holding the chat commands; each invocation calls
    ``on_command``. Errors a command raises are logged, never shown to the user."""
    tree: app_commands.CommandTree = app_commands.CommandTree(
        client,
        allowed_contexts=app_commands.AppCommandContext(guild=True, dm_channel=True),
        allowed_installs=app_commands.AppInstallationType(guild=True),
    )
    for spec in CHAT_COMMANDS:
        tree.add_command(_command(spec, on_command))
    tree.error(_log_command_error)
    return tree


def _command(
    spec: ChatCommandSpec, on_command: CommandCallback
) -> app_commands.Command[Any, ..., None]:
    if spec.takes:
        return _command_with_text(spec, on_command)

    async def invoked(interaction: discord.Interaction[discord.Client]) -> None:
        await on_command(interaction, spec.name)

    return app_commands.Command(
        name=spec.name, description=spec.summary[:MAX_DESCRIPTION], callback=invoked
    )


def _command_with_text(
    spec: ChatCommandSpec, on_command: CommandCallback
) -> app_commands.Command[Any, ..., None]:
    """A command that reads what follows its name (``/why``): one required string option,
    ``text``, described by :attr:`ChatCommandSpec.takes`; handed on as ``name text``."""

    @app_commands.describe(text=spec.takes[:MAX_DESCRIPTION])
    async def invoked(interaction: discord.Interaction[discord.Client], text: str) -> None:
        await on_command(interaction, f"{spec.name} {text.strip()}".strip())

    return app_commands.Command(
        name=spec.name, description=spec.summary[:MAX_DESCRIPTION], callback=invoked
    )


async def _log_command_error(
    interaction: discord.Interaction[discord.Client], error: app_commands.AppCommandError
) -> None:
    command = interaction.command.name if interaction.command is not None else None
    log.error(
        "discord_command_failed",
        command=command,
        interaction_id=str(interaction.id),
        error=type(error.__cause__ or error).__name__,
    )


async def sync_commands(tree: app_commands.CommandTree, ref: ChannelRef) -> bool:
    """Register the tree's commands globally; True when Discord took them. A failure or a
    sync slower than :data:`SYNC_TIMEOUT_S` is logged and returns False."""
    try:
        async with asyncio.timeout(SYNC_TIMEOUT_S):
            synced = await tree.sync()
    except (
        discord.HTTPException,
        app_commands.AppCommandError,
        aiohttp.ClientError,
        OSError,  # TimeoutError included
    ) as exc:
        status = exc.status if isinstance(exc, discord.HTTPException) else None
        log.warning(
            "discord_commands_sync_failed",
            channel=str(ref),
            error=type(exc).__name__,
            status=status,
        )
        return False
    log.info("discord_commands_synced", channel=str(ref), commands=[c.name for c in synced])
    return True


def typed_command(text: str) -> str | None:
    """``/name args`` with the name lower-cased when ``text`` starts with one of the chat
    commands, else None (``/deploy`` is not ours and stays as typed)."""
    match = _COMMAND.fullmatch(text.strip())
    if match is None or command_spec(match["name"].lower()) is None:
        return None
    args = (match["args"] or "").strip()
    return f"/{match['name'].lower()}" + (f" {args}" if args else "")


def mentioned_command(content: str, *, bot_user_id: str, bot_role_id: str | None) -> str | None:
    """``/name`` when ``content`` is a mention of the bot (or its managed role) followed by
    exactly one command word, with or without its ``/``; else None."""
    match = _LEADING_MENTION.fullmatch(content)
    if match is None:
        return None
    ours = match["id"] == bot_role_id if match["kind"] == "&" else match["id"] == bot_user_id
    word = match["rest"].strip()
    if not ours or not word or len(word.split()) != 1:
        return None
    name = word.removeprefix("/").lower()
    return f"/{name}" if command_spec(name) is not None else None
