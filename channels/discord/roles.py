"""Who a Discord user is in a guild, as ``approver_roles`` sees them: their role ids and names.

The same keys are read on an approval card's click (:mod:`channels.discord.card_surface`)
and off each message and application command (:mod:`channels.discord.normalise`, carried
in :attr:`bot.envelope.Sender.roles`), so a role holder counts as an approver in the same
way in both places: for a card, and for the exemptions of ``budget_exempt = ["approvers"]``
and ``rate_limits.exempt_approvers``. Roles are read only from what Discord sent with the
event (or discord.py's cache of it), never from message text, and never with a request of
their own.
"""

from __future__ import annotations

import discord


def role_keys(member: discord.Member | None) -> tuple[str, ...]:
    """A member's role ids and names (without @everyone), as ``approver_roles`` is matched
    against them: on a card's click and, carried in :attr:`Sender.roles
    <bot.envelope.Sender.roles>`, on the member's messages. Only roles discord.py knows of
    the guild count (the event names role ids; a name comes from the guild's role list)."""
    if member is None:
        return ()
    roles = [r for r in member.roles if not r.is_default()]
    return tuple(dict.fromkeys([*(str(r.id) for r in roles), *(r.name for r in roles)]))


def author_roles(message: discord.Message) -> tuple[str, ...]:
    """The author's :func:`role_keys`. A gateway event carries the author as a member with
    its roles; a message fetched over REST (a catch-up) does not, so the member is taken
    from discord.py's cache when it is there, and otherwise the message carries no roles
    (no request is made for them)."""
    author = message.author
    if isinstance(author, discord.Member):
        return role_keys(author)
    guild = message.guild
    return role_keys(guild.get_member(author.id) if guild is not None else None)
