"""Who is looking at a page: a platform identity and what the configuration lets it do.

A browser is signed in as a platform identity (``telegram:12345``), so the chat's approver
rules apply unchanged. The roles are worked out from the settings at every request (a reload
that removes an approver takes effect on their next click):

* an **approver** of a channel alias (its ``approvers`` holds the user id, on a channel of the
  identity's kind) may see and decide that alias's calls;
* an **admin** (``web.admins``) may read everything and manage grants, schedules and pairing;
* a person a request was **escalated to** (an ``escalate_to`` listed them:
  :mod:`bot.approval.reminders`) may see and decide that request while the configuration
  in force still escalates it to them, as in chat; being listed in some ``escalate_to``
  lets them sign in;
* anyone else signed in is refused every page (403), and is never sent a sign-in link.

``approver_roles`` (Discord roles) cannot be checked without the platform and do not count
here: such approvers decide in chat, or are listed by id.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.channel_config import ReminderOverride
from bot.config import Settings


@dataclass(frozen=True, slots=True, kw_only=True)
class Identity:
    """A platform user: ``kind`` (``telegram``, ``slack``, ``discord``) and the user id."""

    kind: str
    user_id: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.user_id}"

    @classmethod
    def parse(cls, text: str) -> Identity:
        kind, _, user_id = text.partition(":")
        return cls(kind=kind, user_id=user_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Viewer:
    """A signed-in identity and its roles under the current settings; ``csrf`` is the token
    every form of this session must carry."""

    identity: Identity
    admin: bool
    #: The channel aliases (``kind.alias``) whose calls this identity may decide.
    approves: frozenset[str]
    csrf: str
    #: Listed in some ``escalate_to``: may decide the requests escalated to them.
    escalation: bool = False

    @property
    def eligible(self) -> bool:
        """May use the console at all."""
        return self.admin or bool(self.approves) or self.escalation

    def may_read(self, channel: str) -> bool:
        """May see the calls and records of ``channel`` (``kind.alias``)."""
        return self.admin or channel in self.approves

    def may_decide(self, channel: str, escalated_to: Sequence[str] = ()) -> bool:
        """May decide a request of ``channel``: an approver of the alias, or one of
        ``escalated_to`` (the users the request was escalated to, and still would be),
        on the alias's platform."""
        if channel in self.approves:
            return True
        kind = channel.partition(".")[0]
        return kind == self.identity.kind and self.identity.user_id in escalated_to


def approved_channels(settings: Settings, identity: Identity) -> frozenset[str]:
    """The enabled channel aliases that list ``identity`` among their approvers."""
    return frozenset(
        f"{kind}.{alias}"
        for kind, alias, config in settings.channels.all()
        if config.enabled and kind == identity.kind and identity.user_id in config.approvers
    )


def escalation_targets(settings: Settings) -> frozenset[str]:
    """Every user id some ``escalate_to`` lists (``[approval]``, its tools, a channel's
    ``approval`` table, an agent's and its tools)."""
    tables: list[ReminderOverride | None] = [
        *settings.approval.tools.values(),
        *(config.approval for _, _, config in settings.channels.all()),
    ]
    for agent in settings.agents.values():
        tables += [agent.approval, *agent.approval.tools.values()]
    listed = [u for t in tables if t is not None for u in t.escalate_to or ()]
    return frozenset((*settings.approval.escalate_to, *listed))


def eligible(settings: Settings, identity: Identity) -> bool:
    """Whether ``identity`` may sign in: an admin, an approver of some channel alias, or a
    person some ``escalate_to`` lists."""
    return (
        str(identity) in settings.web.admins
        or bool(approved_channels(settings, identity))
        or identity.user_id in escalation_targets(settings)
    )


def viewer_for(settings: Settings, identity: Identity, *, csrf: str) -> Viewer:
    return Viewer(
        identity=identity,
        admin=str(identity) in settings.web.admins,
        approves=approved_channels(settings, identity),
        csrf=csrf,
        escalation=identity.user_id in escalation_targets(settings),
    )
