"""Chat commands on Telegram: reading ``/cmd[@bot] args`` and offering the commands to clients.

Reading (:func:`typed_command`): a command is a ``bot_command`` entity at offset 0 of the
message text, as Telegram marks it (never a guess from the text). ``/stop``, ``/STOP`` and
``/stop@thisbot now`` are this bot's and become ``/stop`` / ``/stop now`` (the name
lower-cased, our ``@username`` removed); ``/stop@otherbot`` belongs to another bot and is
reported as such, so the message stays as typed and is not addressed to us. A plain command
counts as addressed in a group only when it is one of ours (:data:`bot.chat_commands.
CHAT_COMMANDS`): a plain ``/deploy`` in a group with several bots is most likely another
bot's.

Offering (:class:`CommandMenu`): at start the channel calls ``setMyCommands`` for the default
scope with the names and summaries of :data:`~bot.chat_commands.CHAT_COMMANDS`. Telegram falls
back to the default scope in every chat (private, group, topic) that has no list of its own,
so one call covers them all. A failure is logged and left for the next start: the commands
work whether or not the menu shows them.
"""

from __future__ import annotations

from dataclasses import dataclass

import structlog
from telegram import Bot, BotCommand, BotCommandScopeDefault, Message, MessageEntity
from telegram.error import TelegramError

from bot.chat_commands import CHAT_COMMANDS, command_spec
from bot.envelope import ChannelRef
from bot.errors import ChannelError
from channels.telegram.addressing import BotIdentity, entity_text, strip_mention
from channels.telegram.ratelimit import with_retry_after

log = structlog.get_logger(__name__)

#: Tries of ``setMyCommands`` at start, and the longest flood-control wait worth delaying the
#: start for; past either the menu waits for the next start.
REGISTER_ATTEMPTS = 2
REGISTER_MAX_WAIT_S = 5.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TypedCommand:
    """A command at the start of a message.

    ``text`` is what the gateway gets: ``/<name>`` plus ``" <args>"`` when there are any.
    ``for_us`` is false for ``/cmd@otherbot``. ``addressed`` is true when the command is meant
    for this bot: ``@username`` names us, or it is plain and one of the chat commands.
    """

    text: str
    for_us: bool
    addressed: bool


def typed_command(message: Message, me: BotIdentity) -> TypedCommand | None:
    """The command ``message`` starts with, or ``None`` when it does not start with one."""
    if not message.text:
        return None
    entity = next(
        (e for e in message.entities if e.type == MessageEntity.BOT_COMMAND and e.offset == 0),
        None,
    )
    if entity is None:
        return None
    command = entity_text(message.text, entity)
    name, _, target = command.removeprefix("/").partition("@")
    if not command.startswith("/") or not name:
        return None  # not what Telegram marks as a command
    if target and target.lower() != me.username.lower():
        return TypedCommand(text=message.text, for_us=False, addressed=False)
    name = name.lower()
    args = strip_mention(message.text[len(command) :], me).strip()
    return TypedCommand(
        text=f"/{name} {args}" if args else f"/{name}",
        for_us=True,
        addressed=bool(target) or command_spec(name) is not None,
    )


def menu() -> list[BotCommand]:
    """The commands as Telegram's menu lists them (name and summary)."""
    return [BotCommand(spec.name, spec.summary) for spec in CHAT_COMMANDS]


class CommandMenu:
    """Registers the chat commands with ``setMyCommands`` (see the module docstring)."""

    def __init__(self, *, ref: ChannelRef, bot: Bot) -> None:
        self._ref = ref
        self._bot = bot

    async def register(self) -> bool:
        """Offer the commands in every chat; ``False`` (and a warning) when Telegram refused
        or could not be reached. Never raises for a Bot API failure."""
        commands = menu()
        try:
            await with_retry_after(
                "setMyCommands",
                lambda: self._bot.set_my_commands(commands, scope=BotCommandScopeDefault()),
                attempts=REGISTER_ATTEMPTS,
                max_wait_s=REGISTER_MAX_WAIT_S,
            )
        except (TelegramError, ChannelError) as exc:
            log.warning(
                "telegram_commands_not_registered",
                channel=str(self._ref),
                error=str(exc),
                retry="at the next start",
            )
            return False
        log.info(
            "telegram_commands_registered",
            channel=str(self._ref),
            commands=[c.command for c in commands],
        )
        return True
