"""Access policy: who may talk to the bot, checked before anything else.

Per channel alias (``[channels.KIND.ALIAS]``):

* ``allowed_users``: platform user ids; empty means nobody, ``"*"`` means everyone. Users
  paired on the alias count as allowed.
* Direct messages follow ``dm_policy``: ``allowlist`` (allowed users only), ``pairing``
  (allowed users; strangers get a one-time code), ``open`` (anyone), ``disabled`` (nobody).
* Group messages need the conversation to pass ``group_policy`` (``allowlist`` of
  ``allowed_conversations``, ``open``, ``disabled``), the message to be addressed to the bot
  when ``require_mention`` is on (the adapter sets ``addressed_to_bot`` for mentions, replies
  to the bot and, when ``thread_counts_as_mention``, threads the bot is in), and the sender
  to be allowed. Every group refusal is silent.
* Other bots are ignored when ``ignore_other_bots`` (the default).

A stranger's DM gets at most one polite line per ``REFUSAL_INTERVAL_S``. ``/pair CODE`` from
an approver of the alias approves a pairing and is answered here, never reaching the model;
from another member it is refused, with one line per ``REFUSAL_INTERVAL_S`` at most.

:class:`AccessStep` is the admission step that applies a policy (:class:`AccessCheck`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import structlog

from bot.config import ChannelCommon, ChannelsConfig
from bot.envelope import ChannelRef, IngressEnvelope
from bot.gateway.admission import Admit, Arrival
from bot.gateway.pairing import CODE_TTL_S, PairingBook, PairingOutcome
from bot.gateway.sending import Replies
from bot.store import Store

log = structlog.get_logger(__name__)

REFUSAL_INTERVAL_S = 3600.0
STRANGER_REPLY = "Sorry, I only talk to people I've been set up for. Please ask an admin."
DM_DISABLED_REPLY = "Sorry, I don't take direct messages here."
PAIRING_REPLY = (
    "Hi! I don't know you yet. Ask an admin to approve pairing code {code} "
    "(valid for {minutes} min)."
)
PAIR_NOT_AUTHORISED = "Only an approver can approve pairings."


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessDecision:
    """Whether a message may reach the agent; ``reply`` is a line to send back (if any)."""

    allowed: bool
    reply: str | None
    reason: str


def _allowed_user(cfg: ChannelCommon, user_id: str) -> bool:
    return "*" in cfg.allowed_users or user_id in cfg.allowed_users


class AccessPolicy:
    """Who may talk to the bot, per envelope. Holds only rate-limit state."""

    def __init__(
        self,
        channels_config: ChannelsConfig,
        store: Store,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._channels = channels_config
        self._clock = clock
        self._pairing = PairingBook(store, clock)
        self._last_refusal: dict[tuple[str, str], float] = {}

    def update_settings(self, channels_config: ChannelsConfig) -> None:
        """Swap in reloaded channel settings (SIGHUP); later checks use them."""
        self._channels = channels_config

    async def check(self, envelope: IngressEnvelope) -> AccessDecision:
        cfg = self._channels.get(envelope.channel.kind, envelope.channel.alias)
        if cfg is None:
            return self._deny("unknown channel", envelope)
        if envelope.sender.is_bot and cfg.ignore_other_bots:
            return self._deny("other bot", envelope)
        pair_code = _pair_command(envelope.text)
        if pair_code is not None and (envelope.is_direct or envelope.addressed_to_bot):
            return await self._pair_from_chat(envelope, cfg, pair_code)
        if envelope.is_direct:
            return await self._check_direct(envelope, cfg)
        return await self._check_group(envelope, cfg)

    async def is_member(self, envelope: IngressEnvelope) -> bool:
        """Whether the sender is someone this alias lets talk (listed in ``allowed_users``,
        which ``"*"`` opens to all, paired, or in a DM of an ``open`` DM policy), with no
        effect at all: no pairing code, no refusal line. The conversation's own rules (group
        allow-list, mentions) are not asked. The command limits count a member's ``/id`` and
        ``/help`` (:mod:`bot.gateway.command_limits`)."""
        cfg = self._channels.get(envelope.channel.kind, envelope.channel.alias)
        if cfg is None or (envelope.sender.is_bot and cfg.ignore_other_bots):
            return False
        if _allowed_user(cfg, envelope.sender.id):
            return True
        if envelope.is_direct and cfg.dm_policy == "open":
            return True
        return await self._pairing.is_paired(envelope.channel, envelope.sender.id)

    async def approve_pairing(
        self, code: str, approver: str, *, channel: ChannelRef | None = None
    ) -> PairingOutcome:
        """Approve a pairing code. The caller vouches for ``approver`` (the CLI's operator);
        in chat, :meth:`check` verifies the sender is an approver before calling this."""
        return await self._pairing.approve(code, approver, channel=channel)

    async def _check_direct(self, env: IngressEnvelope, cfg: ChannelCommon) -> AccessDecision:
        if cfg.dm_policy == "disabled":
            return self._polite(env, DM_DISABLED_REPLY, "dm disabled")
        if cfg.dm_policy == "open" or _allowed_user(cfg, env.sender.id):
            return AccessDecision(allowed=True, reply=None, reason="allowed")
        if await self._pairing.is_paired(env.channel, env.sender.id):
            return AccessDecision(allowed=True, reply=None, reason="paired")
        if cfg.dm_policy == "pairing":
            issued = await self._pairing.issue(env.channel, env.sender)
            if issued is None:
                return self._deny("pairing pending or rate-limited", env)
            minutes = round(CODE_TTL_S / 60)
            return AccessDecision(
                allowed=False,
                reply=PAIRING_REPLY.format(code=issued.code, minutes=minutes),
                reason="pairing code issued",
            )
        return self._polite(env, STRANGER_REPLY, "not in allowed_users")

    async def _check_group(self, env: IngressEnvelope, cfg: ChannelCommon) -> AccessDecision:
        if cfg.group_policy == "disabled":
            return self._deny("groups disabled", env)
        if cfg.group_policy == "allowlist" and env.conversation_id not in (
            cfg.allowed_conversations
        ):
            return self._deny("conversation not allowed", env)
        if cfg.require_mention and not env.addressed_to_bot:
            return self._deny("not addressed to the bot", env)
        if _allowed_user(cfg, env.sender.id):
            return AccessDecision(allowed=True, reply=None, reason="allowed")
        if await self._pairing.is_paired(env.channel, env.sender.id):
            return AccessDecision(allowed=True, reply=None, reason="paired")
        return self._deny("not in allowed_users", env)

    async def _pair_from_chat(
        self, env: IngressEnvelope, cfg: ChannelCommon, code: str
    ) -> AccessDecision:
        if not cfg.is_approver(env.sender):
            if not _allowed_user(cfg, env.sender.id):
                # a stranger's "/pair" is an ordinary message from a stranger
                if env.is_direct:
                    return await self._check_direct(env, cfg)
                return self._deny("pair from non-approver", env)
            # a member's: told once an hour, like a stranger's refusal, never once per try
            return self._polite(env, PAIR_NOT_AUTHORISED, "pair from non-approver")
        outcome = await self._pairing.approve(
            code, f"{env.channel}:{env.sender.id}", channel=env.channel
        )
        return AccessDecision(
            allowed=False,
            reply=outcome.message,
            reason="pairing approved" if outcome.approved else "pairing failed",
        )

    def _polite(self, env: IngressEnvelope, line: str, reason: str) -> AccessDecision:
        key = (str(env.channel), env.sender.id)
        now = self._clock()
        last = self._last_refusal.get(key)
        if last is not None and now - last < REFUSAL_INTERVAL_S:
            return self._deny(reason, env)
        if len(self._last_refusal) > 10_000:  # bound the memory strangers can make us hold
            cutoff = now - REFUSAL_INTERVAL_S
            self._last_refusal = {k: t for k, t in self._last_refusal.items() if t > cutoff}
        self._last_refusal[key] = now
        log.info(
            "access_refused",
            channel=str(env.channel),
            user_id=env.sender.id,
            reason=reason,
            replied=True,
        )
        return AccessDecision(allowed=False, reply=line, reason=reason)

    def _deny(self, reason: str, env: IngressEnvelope) -> AccessDecision:
        log.debug(
            "access_refused",
            channel=str(env.channel),
            user_id=env.sender.id,
            reason=reason,
            replied=False,
        )
        return AccessDecision(allowed=False, reply=None, reason=reason)


def _pair_command(text: str) -> str | None:
    parts = text.strip().split()
    # In groups the mention may come first ("@bot /pair CODE").
    while parts and parts[0].startswith(("@", "<@")):
        parts = parts[1:]
    if len(parts) == 2 and parts[0].lower() in ("/pair", "!pair"):
        return parts[1]
    return None


class AccessOutcome(Protocol):
    @property
    def allowed(self) -> bool: ...

    @property
    def reply(self) -> str | None: ...

    @property
    def reason(self) -> str: ...


class AccessCheck(Protocol):
    """Who may talk to the bot (:class:`AccessPolicy`, or a test's fake)."""

    async def check(self, envelope: IngressEnvelope) -> AccessOutcome: ...

    async def is_member(self, envelope: IngressEnvelope) -> bool:
        """Whether the sender is one the alias lets talk, asked without any effect
        (:meth:`AccessPolicy.is_member`)."""
        ...


class AccessStep:
    """Admission step: a refused message gets no turn, at most one polite line."""

    def __init__(self, access: AccessCheck, replies: Replies) -> None:
        self._access = access
        self._replies = replies

    async def __call__(self, arrival: Arrival, call_next: Admit) -> None:
        decision = await self._access.check(arrival.envelope)
        if not decision.allowed:
            envelope = arrival.envelope
            # the ids an admin needs to let this sender or conversation in
            log.info(
                "envelope_refused",
                reason=decision.reason,
                conversation_id=envelope.conversation_id,
                user_id=envelope.sender.id,
                group=not envelope.is_direct,
            )
            if decision.reply:
                await self._replies.send(arrival.envelope, decision.reply)
            return
        await call_next(arrival)
