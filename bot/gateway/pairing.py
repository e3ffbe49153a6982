"""Pairing: how a stranger in a DM becomes a known user of one channel alias.

Under ``dm_policy = "pairing"`` an unknown DM gets a short one-time code. The code expires
after ``CODE_TTL_S``; while one is pending no new code is issued, and a user gets at most
``MAX_CODES_PER_DAY`` codes in 24 hours (further DMs are ignored). An admin approves the code
with ``hatchway pairing approve CODE``, by sending ``/pair CODE`` in chat as an approver, or
on the web console's pairing page (which can also reject it); from then on the user counts
as allowed on that alias.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from bot.envelope import ChannelRef, Sender
from bot.scrub import scrub_text
from bot.store import Store
from bot.store.pairings import PairingRecord

log = structlog.get_logger(__name__)

CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I
CODE_LENGTH = 8
CODE_TTL_S = 3600.0
MAX_CODES_PER_DAY = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class PairingOutcome:
    """The result of an approval attempt; ``message`` is safe to show the approver."""

    approved: bool
    message: str
    record: PairingRecord | None = None


def normalise_code(code: str) -> str:
    return code.strip().upper().replace("-", "").replace(" ", "")


class PairingBook:
    """Issues, approves and checks pairing codes."""

    def __init__(self, store: Store, clock: Callable[[], float]) -> None:
        self._store = store
        self._clock = clock

    async def is_paired(self, channel: ChannelRef, user_id: str) -> bool:
        return await self._store.pairings.is_paired(str(channel), user_id)

    async def issue(self, channel: ChannelRef, sender: Sender) -> PairingRecord | None:
        """A new code for ``sender``, or None while one is pending or the daily limit is
        spent."""
        now = self._clock()
        history = await self._store.pairings.for_user(str(channel), sender.id)
        if any(p.pending_at(now) for p in history):
            return None
        if sum(1 for p in history if p.created_at > now - 86400) >= MAX_CODES_PER_DAY:
            log.info("pairing_rate_limited", channel=str(channel), user_id=sender.id)
            return None
        record = PairingRecord(
            code="".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH)),
            channel=str(channel),
            user_id=sender.id,
            display_name=scrub_text(sender.display_name)[:100],
            status="pending",
            created_at=now,
            expires_at=now + CODE_TTL_S,
        )
        await self._store.pairings.create(record)
        log.info("pairing_code_issued", channel=str(channel), user_id=sender.id)
        return record

    async def approve(
        self, code: str, approver: str, *, channel: ChannelRef | None = None
    ) -> PairingOutcome:
        """Approve ``code``. With ``channel`` the code must belong to that alias (chat
        approvals); without, any alias (the operator's CLI)."""
        wanted = normalise_code(code)
        found = await self._store.pairings.get(wanted)
        now = self._clock()
        unknown = PairingOutcome(approved=False, message="No pending pairing with that code.")
        if found is None or not found.pending_at(now):
            return unknown
        if channel is not None and found.channel != str(channel):
            return unknown
        record = await self._store.pairings.approve(wanted, approver, now)
        if record is None:
            return unknown
        log.info(
            "pairing_approved", channel=record.channel, user_id=record.user_id, approved_by=approver
        )
        name = record.display_name or record.user_id
        return PairingOutcome(
            approved=True,
            message=f"Paired {name} ({record.user_id}) on {record.channel}.",
            record=record,
        )

    async def reject(self, code: str, rejecter: str) -> PairingOutcome:
        """Reject ``code`` (any alias: the web console's admins). ``approved`` is False
        either way; ``record`` is set when the code was rejected."""
        wanted = normalise_code(code)
        record = await self._store.pairings.reject(wanted, self._clock())
        if record is None:
            return PairingOutcome(approved=False, message="No pending pairing with that code.")
        log.info(
            "pairing_rejected", channel=record.channel, user_id=record.user_id, rejected_by=rejecter
        )
        name = record.display_name or record.user_id
        return PairingOutcome(
            approved=False,
            message=f"Rejected the pairing of {name} ({record.user_id}) on {record.channel}.",
            record=record,
        )
