"""Telegram payloads → hatchway values, as pure functions over python-telegram-bot objects.

Contracts:

- :func:`normalise_message` turns one new (or edited) message into a complete
  :class:`IngressEnvelope`, or ``None`` when the message is not one to answer (the bot's own
  messages, service messages without text or media, channel posts). Other bots' messages are
  kept with ``is_bot=True``; the gateway drops them.
- ``message_id`` is ``"{chat_id}:{message_id}"`` because Telegram numbers messages per chat.
  :func:`parse_message_id` accepts that form or a bare message number.
- Chat commands (``/stop``, ``/stop@thisbot``, ``/STOP``) become ``/stop`` and count as
  addressed in groups; ``/stop@otherbot`` is left as typed and not addressed
  (:mod:`channels.telegram.commands`). Mentions and replies: :mod:`channels.telegram.addressing`.
- Forum topics: ``message_thread_id`` becomes ``thread_id`` (only for topic messages; reply
  chains in ordinary groups also carry the field and are not threads), and the reply target
  keeps it so the answer lands in the same topic.
- Callback data is ``ap:<approval_id>:<code>`` (Telegram allows 64 bytes): ``a`` / ``d`` /
  ``w`` approve, deny, always from a card; ``fa`` / ``fd`` / ``fw`` the same from a full view
  (the message showing the whole request, so the choice carries ``full_view``); ``s`` "show
  full and decide"; ``r`` "reply instead". The data alone says all of it, so a button from
  before a restart still works. Ids too long for the limit are replaced by a short digest
  that :class:`CallbackCodec` remembers for this process (the service's ids always fit).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from telegram import (
    InlineKeyboardMarkup,
    Message,
    MessageReactionUpdated,
    ReactionTypeEmoji,
)
from telegram.constants import ChatType

from bot.channel import ApprovalChoice
from bot.envelope import (
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from channels.telegram.addressing import BotIdentity, mentions_bot, replies_to_bot, strip_mention
from channels.telegram.commands import typed_command
from channels.telegram.media import attachments_of

CALLBACK_PREFIX = "ap"
CALLBACK_MAX_BYTES = 64
_CHOICE_CODES = {ApprovalChoice.APPROVE: "a", ApprovalChoice.DENY: "d", ApprovalChoice.ALWAYS: "w"}
_FULL_VIEW_MARK = "f"  # before a choice code: chosen on a view that showed the whole request
_CODE_CHOICES = {
    **{code: (choice, False) for choice, code in _CHOICE_CODES.items()},
    **{_FULL_VIEW_MARK + code: (choice, True) for choice, code in _CHOICE_CODES.items()},
}
_REPLY_CODE = "r"  # the "reply instead" button: decides nothing, explains how to reply
_SHOW_FULL_CODE = "s"  # "show full and decide": posts the full view, decides nothing
_CODES = frozenset({*_CODE_CHOICES, _REPLY_CODE, _SHOW_FULL_CODE})

APPROVE_REACTIONS = frozenset({"✅", "👍", "👌"})
DENY_REACTIONS = frozenset({"❌", "👎"})


@dataclass(frozen=True, slots=True, kw_only=True)
class ButtonChoice:
    """A decision button's data: which approval, what choice, and whether the button sat on a
    full view (:attr:`bot.channel.ApprovalClick.full_view`)."""

    approval_id: str
    choice: ApprovalChoice
    full_view: bool


class CallbackCodec:
    """Encodes approval ids into callback data and back.

    Ids that fit are carried verbatim, so buttons keep working after a restart; longer ids
    are carried as a digest known only to this process (a tap after a restart then reports an
    unknown approval, which is the right answer for a card from before the restart).
    """

    def __init__(self) -> None:
        self._long_ids: dict[str, str] = {}

    def encode(self, approval_id: str, choice: ApprovalChoice, *, full_view: bool = False) -> str:
        """The data of a decision button; ``full_view`` for the buttons of a full view."""
        code = _CHOICE_CODES[choice]
        return self._encode(approval_id, _FULL_VIEW_MARK + code if full_view else code)

    def encode_reply(self, approval_id: str) -> str:
        """The data of the "reply instead" button of ``approval_id``'s card."""
        return self._encode(approval_id, _REPLY_CODE)

    def encode_show_full(self, approval_id: str) -> str:
        """The data of the "show full and decide" button of a cut card."""
        return self._encode(approval_id, _SHOW_FULL_CODE)

    def _encode(self, approval_id: str, code: str) -> str:
        data = f"{CALLBACK_PREFIX}:{approval_id}:{code}"
        if len(data.encode()) <= CALLBACK_MAX_BYTES and ":" not in approval_id:
            return data
        digest = "#" + hashlib.sha256(approval_id.encode()).hexdigest()[:24]
        self._long_ids[digest] = approval_id
        if len(self._long_ids) > 4096:  # bounded: the oldest cards are long decided
            self._long_ids.pop(next(iter(self._long_ids)))
        return f"{CALLBACK_PREFIX}:{digest}:{code}"

    def _split(self, data: str | None) -> tuple[str, str] | None:
        if not data:
            return None
        parts = data.split(":")
        if len(parts) != 3 or parts[0] != CALLBACK_PREFIX or not parts[1]:
            return None
        approval_id = parts[1]
        if approval_id.startswith("#"):
            approval_id = self._long_ids.get(approval_id, approval_id)
        return approval_id, parts[2]

    def decode(self, data: str | None) -> ButtonChoice | None:
        """The decision ``data`` carries, or ``None`` for data that is not a decision button."""
        split = self._split(data)
        if split is None or split[1] not in _CODE_CHOICES:
            return None
        choice, full_view = _CODE_CHOICES[split[1]]
        return ButtonChoice(approval_id=split[0], choice=choice, full_view=full_view)

    def reply_request(self, data: str | None) -> str | None:
        """The approval id when ``data`` is a "reply instead" button, else ``None``."""
        split = self._split(data)
        return split[0] if split is not None and split[1] == _REPLY_CODE else None

    def show_full_request(self, data: str | None) -> str | None:
        """The approval id when ``data`` is a "show full and decide" button, else ``None``."""
        split = self._split(data)
        return split[0] if split is not None and split[1] == _SHOW_FULL_CODE else None

    def approval_in(self, markup: InlineKeyboardMarkup | None) -> str | None:
        """The approval id a card's inline keyboard carries, if ``markup`` is one."""
        for row in markup.inline_keyboard if markup is not None else ():
            for button in row:
                data = button.callback_data if isinstance(button.callback_data, str) else None
                split = self._split(data)
                if split is not None and split[1] in _CODES:
                    return split[0]
        return None


def message_key(chat_id: int | str, message_id: int | str) -> str:
    return f"{chat_id}:{message_id}"


def parse_message_id(value: str) -> int:
    """The Telegram message number of ``"{chat}:{message}"`` or of a bare ``"{message}"``."""
    return int(value.rsplit(":", 1)[-1])


def thread_of(message: Message) -> int | None:
    """The forum topic of ``message``, or ``None`` outside forum topics."""
    return message.message_thread_id if message.is_topic_message else None


def _display_name(message: Message) -> str:
    user = message.from_user
    if user is None:
        return ""
    return user.full_name or (f"@{user.username}" if user.username else str(user.id))


def _text_and_addressing(message: Message, text: str, me: BotIdentity) -> tuple[str, bool]:
    """The text the gateway gets, and whether a group message is addressed to the bot.

    A command of ours is normalised (``/stop@thisbot`` → ``/stop``) and a plain chat command
    counts as addressed; ``/cmd@otherbot`` is another bot's and never addressed to us."""
    command = typed_command(message, me)
    if command is not None and not command.for_us:
        return strip_mention(text, me), False
    named = mentions_bot(message, me) or replies_to_bot(message, me)
    if command is not None:
        return command.text, command.addressed or named
    return strip_mention(text, me), named


def normalise_message(
    message: Message, *, ref: ChannelRef, me: BotIdentity, capabilities: Capabilities
) -> IngressEnvelope | None:
    """The envelope for a new message, or ``None`` if it is not one to hand to the gateway.
    An edited message gives the envelope it would give had it been sent as it reads now."""
    user = message.from_user
    if user is None or user.id == me.id:
        return None
    chat = message.chat
    if chat.type == ChatType.CHANNEL:
        return None
    text = message.text or message.caption or ""
    attachments = attachments_of(message)
    if not text and not attachments:
        return None
    is_direct = chat.type == ChatType.PRIVATE
    thread = thread_of(message)
    thread_id = str(thread) if thread is not None else None
    conversation_id = str(chat.id)
    text, addressed = _text_and_addressing(message, text, me)
    return IngressEnvelope(
        channel=ref,
        message_id=message_key(chat.id, message.message_id),
        conversation_id=conversation_id,
        thread_id=thread_id,
        sender=Sender(id=str(user.id), display_name=_display_name(message), is_bot=user.is_bot),
        text=text,
        attachments=attachments,
        is_direct=is_direct,
        is_group=chat.type in (ChatType.GROUP, ChatType.SUPERGROUP),
        addressed_to_bot=is_direct or addressed,
        reply_target=DeliveryTarget(
            channel=ref,
            conversation_id=conversation_id,
            thread_id=thread_id,
            reply_to_message_id=None if is_direct else str(message.message_id),
        ),
        capabilities=capabilities,
    )


def reaction_choice(update: MessageReactionUpdated) -> ApprovalChoice | None:
    """The approval choice a newly added reaction expresses, if any."""
    old = {r.emoji for r in update.old_reaction if isinstance(r, ReactionTypeEmoji)}
    for reaction in update.new_reaction:
        if not isinstance(reaction, ReactionTypeEmoji) or reaction.emoji in old:
            continue
        emoji = reaction.emoji.replace("\ufe0f", "")
        if emoji in APPROVE_REACTIONS:
            return ApprovalChoice.APPROVE
        if emoji in DENY_REACTIONS:
            return ApprovalChoice.DENY
    return None
