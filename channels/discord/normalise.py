"""Discord message → :class:`~bot.envelope.IngressEnvelope`.

Two steps: :func:`facts_from_message` reads the few values hatchway needs off a
``discord.Message`` into :class:`MessageFacts` (plain, frozen data), and
:func:`envelope_from_facts` is a pure function from facts to an envelope, easy to test and
fuzz without a gateway.

Conversation model: ``conversation_id`` is the text channel (the parent channel for a thread,
the DM channel for a DM); ``thread_id`` is the thread channel, and answers go there. With
``thread_per_request`` a guild message outside a thread gets a thread opened from it on the
first answer; Discord gives such a thread the id of its starter message, so ``thread_id`` is
the message id from the start and follow-ups in the thread share the session.

Attachments are metadata (name, content type, size); each ref is a
:class:`~channels.discord.cdn.AttachmentRef`: the channel, message and attachment ids with the
signed URL, so :mod:`~channels.discord.downloads` can renew the URL once it has expired.

Chat commands: a typed ``/new`` and a server's ``@bot stop`` get the text ``/new`` /
``/stop`` (:mod:`channels.discord.commands`) and never open a thread of their own, so they
act on the session they were typed in. An application command (:class:`CommandFacts`,
:func:`envelope_from_command`) is addressed to the bot wherever it is used; its envelope's
``message_id`` and ``reply_to_message_id`` are the interaction's id, which is how the
answer finds the interaction (:mod:`channels.discord.command_replies`).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

import discord

from bot.envelope import (
    Attachment,
    Capabilities,
    ChannelRef,
    DeliveryTarget,
    IngressEnvelope,
    Sender,
)
from channels.discord.cdn import AttachmentRef
from channels.discord.commands import mentioned_command, typed_command
from channels.discord.roles import author_roles, role_keys

MAX_MESSAGE_CHARS = 2000
_USER_MENTION = re.compile(r"<@!?(\d+)>")
_ROLE_MENTION = re.compile(r"<@&(\d+)>")
_CONVERSATIONAL_TYPES = (discord.MessageType.default, discord.MessageType.reply)


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageFacts:
    """What hatchway reads off one Discord message. Ids are decimal strings."""

    message_id: str
    channel_id: str
    guild_id: str | None = None
    thread_parent_id: str | None = None  # set when the message is in a thread
    thread_owner_id: str | None = None
    bot_posted_in_thread: bool = False  # the adapter has answered in this thread before
    author_id: str
    author_name: str = ""
    author_is_bot: bool = False
    author_roles: tuple[str, ...] = ()  # role ids and names, from the event (role_keys)
    content: str = ""
    mentioned_users: tuple[tuple[str, str], ...] = ()  # (id, display name)
    mentioned_roles: tuple[tuple[str, str], ...] = ()  # (id, name)
    bot_role_id: str | None = None  # the bot's managed role in this guild
    replied_to_author_id: str | None = None
    attachments: tuple[Attachment, ...] = ()
    channel_name: str = ""  # the text channel's name (a thread's parent's), from the cache
    thread_name: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class NormaliseOptions:
    """Per-channel settings the envelope depends on."""

    channel: ChannelRef
    bot_user_id: str
    thread_per_request: bool = False
    thread_counts_as_mention: bool = True
    approval_backchannel: bool = False


def is_conversational(message: discord.Message) -> bool:
    """True for user-written messages (plain or replies); false for joins, pins, etc."""
    return message.type in _CONVERSATIONAL_TYPES


def _attachment(item: discord.Attachment, *, channel_id: str, message_id: str) -> Attachment:
    """The attachment's metadata; its ref keeps the ids that renew its expiring URL."""
    mime = item.content_type or ""
    major = mime.split("/", 1)[0]
    kind = major if major in ("image", "audio", "video") else "file"
    ref = AttachmentRef(
        channel_id=channel_id, message_id=message_id, attachment_id=str(item.id), url=item.url
    )
    # a voice message: the message's IS_VOICE_MESSAGE flag, and its one attachment's
    # duration_secs and waveform (what discord.py's is_voice_message reads)
    voice = item.is_voice_message()
    return Attachment(
        kind="audio" if voice else kind,
        name=item.filename,
        mime_type=mime,
        size=item.size,
        ref=ref.encode(),
        voice=voice,
        duration_s=item.duration,
    )


def _names(channel: object, in_guild: bool) -> tuple[str, str]:
    """The names of a server's text channel and thread a message or command came from, as
    the gateway's cache holds them (a DM has none); ("", "") when unknown."""
    if not in_guild:
        return "", ""
    if isinstance(channel, discord.Thread):
        parent = channel.parent
        return (parent.name if parent is not None else ""), channel.name
    name = getattr(channel, "name", None)
    return (name if isinstance(name, str) else ""), ""


def facts_from_message(
    message: discord.Message, *, bot_threads: Collection[str] = ()
) -> MessageFacts:
    """Read a ``discord.Message`` into :class:`MessageFacts` (no network access).
    ``bot_threads`` are the thread ids the adapter has posted in."""
    channel = message.channel
    thread = channel if isinstance(channel, discord.Thread) else None
    guild = message.guild
    bot_role = guild.self_role if guild is not None else None
    replied = message.reference.resolved if message.reference is not None else None
    channel_name, thread_name = _names(channel, guild is not None)
    return MessageFacts(
        message_id=str(message.id),
        channel_id=str(channel.id),
        guild_id=str(guild.id) if guild is not None else None,
        thread_parent_id=str(thread.parent_id) if thread is not None else None,
        thread_owner_id=str(thread.owner_id) if thread is not None and thread.owner_id else None,
        bot_posted_in_thread=thread is not None and str(thread.id) in bot_threads,
        author_id=str(message.author.id),
        author_name=message.author.display_name,
        author_is_bot=message.author.bot,
        author_roles=author_roles(message),
        content=message.content,
        mentioned_users=tuple((str(u.id), u.display_name) for u in message.mentions),
        mentioned_roles=tuple((str(r.id), r.name) for r in message.role_mentions),
        bot_role_id=str(bot_role.id) if bot_role is not None else None,
        replied_to_author_id=(
            str(replied.author.id) if isinstance(replied, discord.Message) else None
        ),
        attachments=tuple(
            _attachment(a, channel_id=str(channel.id), message_id=str(message.id))
            for a in message.attachments
        ),
        channel_name=channel_name,
        thread_name=thread_name,
    )


def clean_text(facts: MessageFacts, bot_user_id: str) -> str:
    """The message text with the bot's own mentions removed and other mentions as @names."""
    users = dict(facts.mentioned_users)
    roles = dict(facts.mentioned_roles)

    def user(match: re.Match[str]) -> str:
        uid = match[1]
        if uid == bot_user_id:
            return ""
        return f"@{users[uid]}" if uid in users else match[0]

    def role(match: re.Match[str]) -> str:
        rid = match[1]
        if rid == facts.bot_role_id:
            return ""
        return f"@{roles[rid]}" if rid in roles else match[0]

    text = _ROLE_MENTION.sub(role, _USER_MENTION.sub(user, facts.content))
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def is_addressed(facts: MessageFacts, bot_user_id: str, *, threads_count: bool = True) -> bool:
    """A DM, a mention of the bot (or its managed role), a reply to the bot, or — when
    ``threads_count`` (``thread_counts_as_mention``) — a message in a thread the bot opened
    or has answered in."""
    if facts.guild_id is None:
        return True
    if any(uid == bot_user_id for uid, _ in facts.mentioned_users):
        return True
    if facts.bot_role_id is not None and any(
        rid == facts.bot_role_id for rid, _ in facts.mentioned_roles
    ):
        return True
    if facts.replied_to_author_id == bot_user_id:
        return True
    in_bot_thread = facts.thread_owner_id == bot_user_id or facts.bot_posted_in_thread
    return threads_count and facts.thread_parent_id is not None and in_bot_thread


def message_text(facts: MessageFacts, bot_user_id: str) -> str:
    """The envelope text: a chat command normalised to ``/name``, else :func:`clean_text`."""
    text = clean_text(facts, bot_user_id)
    if facts.guild_id is not None:
        mentioned = mentioned_command(
            facts.content, bot_user_id=bot_user_id, bot_role_id=facts.bot_role_id
        )
        if mentioned is not None:
            return mentioned
    return typed_command(text) or text


def envelope_from_facts(facts: MessageFacts, options: NormaliseOptions) -> IngressEnvelope:
    """The envelope for one message. Pure: same facts and options, same envelope fields."""
    is_direct = facts.guild_id is None
    text = message_text(facts, options.bot_user_id)
    is_command = typed_command(text) is not None
    if facts.thread_parent_id is not None:
        conversation_id, thread_id = facts.thread_parent_id, facts.channel_id
    elif options.thread_per_request and not is_direct and not is_command:
        conversation_id, thread_id = facts.channel_id, facts.message_id
    else:
        conversation_id, thread_id = facts.channel_id, None
    reply_target = DeliveryTarget(
        channel=options.channel,
        conversation_id=conversation_id,
        thread_id=thread_id,
        reply_to_message_id=facts.message_id,
    )
    return IngressEnvelope(
        channel=options.channel,
        message_id=facts.message_id,
        conversation_id=conversation_id,
        thread_id=thread_id,
        sender=Sender(
            id=facts.author_id,
            display_name=facts.author_name,
            is_bot=facts.author_is_bot,
            roles=facts.author_roles,
        ),
        text=text,
        attachments=facts.attachments,
        is_direct=is_direct,
        is_group=not is_direct,
        addressed_to_bot=is_addressed(
            facts, options.bot_user_id, threads_count=options.thread_counts_as_mention
        ),
        reply_target=reply_target,
        capabilities=capabilities(options),
        guild_id=facts.guild_id,
        conversation_title=facts.channel_name,
        thread_title=facts.thread_name if facts.thread_parent_id is not None else "",
    )


def capabilities(options: NormaliseOptions) -> Capabilities:
    return Capabilities(
        can_edit=True,
        can_react=True,
        inline_buttons=True,
        typing=True,
        max_message_chars=MAX_MESSAGE_CHARS,
        approval_backchannel=options.approval_backchannel,
        terminal_prompt=False,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandFacts:
    """What hatchway reads off one application command interaction. Ids are decimal
    strings; ``text`` is ``/<name>``."""

    interaction_id: str
    channel_id: str
    guild_id: str | None = None
    thread_parent_id: str | None = None  # set when the command was used in a thread
    user_id: str
    user_name: str = ""
    user_roles: tuple[str, ...] = ()  # role ids and names, from the interaction (role_keys)
    text: str
    channel_name: str = ""
    thread_name: str = ""


def facts_from_interaction(
    interaction: discord.Interaction[discord.Client], name: str
) -> CommandFacts:
    """Read an application command's interaction into :class:`CommandFacts` (no network)."""
    channel, user = interaction.channel, interaction.user
    channel_name, thread_name = _names(channel, interaction.guild_id is not None)
    return CommandFacts(
        interaction_id=str(interaction.id),
        channel_id=str(interaction.channel_id),
        guild_id=str(interaction.guild_id) if interaction.guild_id is not None else None,
        thread_parent_id=(str(channel.parent_id) if isinstance(channel, discord.Thread) else None),
        user_id=str(interaction.user.id),
        user_name=interaction.user.display_name,
        user_roles=role_keys(user if isinstance(user, discord.Member) else None),
        text=f"/{name}",
        channel_name=channel_name,
        thread_name=thread_name,
    )


def envelope_from_command(facts: CommandFacts, options: NormaliseOptions) -> IngressEnvelope:
    """The envelope for an application command: addressed to the bot, in the thread it was
    used in (never one of its own), answered through the interaction. Pure."""
    is_direct = facts.guild_id is None
    if facts.thread_parent_id is not None:
        conversation_id, thread_id = facts.thread_parent_id, facts.channel_id
    else:
        conversation_id, thread_id = facts.channel_id, None
    return IngressEnvelope(
        channel=options.channel,
        message_id=facts.interaction_id,
        conversation_id=conversation_id,
        thread_id=thread_id,
        sender=Sender(id=facts.user_id, display_name=facts.user_name, roles=facts.user_roles),
        text=facts.text,
        is_direct=is_direct,
        is_group=not is_direct,
        addressed_to_bot=True,
        reply_target=DeliveryTarget(
            channel=options.channel,
            conversation_id=conversation_id,
            thread_id=thread_id,
            reply_to_message_id=facts.interaction_id,
            private_to=None if is_direct else facts.user_id,  # ephemeral in a server
        ),
        capabilities=capabilities(options),
        private_reply=True,  # answered through the interaction, ephemeral in a server
        guild_id=facts.guild_id,
        conversation_title=facts.channel_name,
        thread_title=facts.thread_name,
    )
