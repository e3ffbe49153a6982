"""Whether a Telegram bot with group context on can see the messages it is meant to keep.

Telegram delivers a group's messages not addressed to a bot only when the bot's privacy mode
is off (``getMe``'s ``can_read_all_group_messages``; the bot must have been removed and added
again after the change, which no API shows: a stale join reads as able) or when the bot is an
administrator of the group (``getChatMember`` of the bot in each of ``allowed_conversations``).
With ``context.group_messages`` on and neither true, the line is a ``⚠`` naming what to do.
The other platforms deliver every message of a conversation the bot is in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bot.commands.doctor.endpoint import json_object
from bot.commands.doctor.report import CheckResult

if TYPE_CHECKING:
    import aiohttp

    from bot.config import ChannelCommon

_ADMIN = ("administrator", "creator")


async def telegram_group_context(
    alias: str, cfg: ChannelCommon, http: aiohttp.ClientSession
) -> CheckResult | None:
    """The line for the Telegram channel ``alias``; None when it keeps no group context."""
    if not cfg.context.group_messages or cfg.group_policy == "disabled":
        return None
    from bot.config import Settings

    keys: Any = cfg
    token = Settings.secret(str(keys.token_env))
    if token is None:
        return None  # the credentials line says so
    base = f"{keys.api_base_url}{token}"
    name = f"group context telegram.{alias}"
    key = f"channels.telegram.{alias}"
    async with http.post(f"{base}/getMe") as response:
        me = await json_object(response)
    if response.status != 200 or not me.get("ok"):
        return None  # the credentials line says so
    result = me["result"]
    if result.get("can_read_all_group_messages"):
        return CheckResult(
            name=name,
            ok=True,
            detail="privacy mode is off: the bot reads every group message (once it was "
            "removed and added again after the change, which Telegram does not show)",
        )
    groups = [c for c in cfg.allowed_conversations if c not in cfg.context.off_in]
    blind: list[str] = []
    for chat in groups:
        chat_id: int | str = int(chat) if chat.lstrip("-").isdigit() else chat
        params = {"chat_id": chat_id, "user_id": result["id"]}
        async with http.post(f"{base}/getChatMember", json=params) as response:
            member = await json_object(response)
        status = member.get("result", {}).get("status") if member.get("ok") else None
        if status not in _ADMIN:
            blind.append(chat)
    fix = (
        "turn privacy mode off (@BotFather → /setprivacy → Disable) and remove and re-add the "
        f"bot, or make it an administrator of each group; or set {key}.context.group_messages "
        "= 0"
    )
    if cfg.group_policy == "open" or not groups:
        return CheckResult(
            name=name,
            ok=True,
            warning=True,
            detail="privacy mode is on: unaddressed messages reach the bot only in groups "
            "where it is an administrator (groups not listed in allowed_conversations cannot "
            "be checked)",
            fix=fix,
        )
    if blind:
        return CheckResult(
            name=name,
            ok=True,
            warning=True,
            detail="privacy mode is on and the bot is not an administrator of "
            + ", ".join(blind)
            + ": it never receives the messages group context keeps there",
            fix=fix,
        )
    return CheckResult(
        name=name, ok=True, detail="the bot is an administrator of every allowed group"
    )
