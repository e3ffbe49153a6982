"""The real approval service over one adapter, as the channel tests use it: a 30 s timeout,
settings holding only that channel, and a fast poll so decisions are noticed at once."""

from __future__ import annotations

from collections.abc import Mapping

from bot.approval.service import ApprovalService
from bot.channel import Channel
from bot.config import parse_settings
from bot.envelope import ChannelRef
from bot.store import Store


def approval_service(
    store: Store, channel: Channel, ref: ChannelRef, config: Mapping[str, object]
) -> ApprovalService:
    """``config`` is the channel's own section (``[channels.KIND.ALIAS]``)."""
    settings = parse_settings(
        {"approval": {"timeout_s": 30.0}, "channels": {ref.kind: {ref.alias: dict(config)}}},
        environ={},
        require_provider=False,
    )
    return ApprovalService(settings, store, {ref: channel}.get, poll_interval_s=0.02)
