"""The access findings: enabled channels where nobody (or nobody in groups) may talk to the
bot, because ``allowed_users`` is empty.

``allowed_users`` lists the platform user ids the bot answers; ``"*"`` means everyone and an
empty list nobody (:mod:`bot.gateway.access`). An empty list is the default, so a channel set
up with a token alone stays silent. Per enabled channel alias with an empty list:

* ``dm_policy`` ``allowlist`` or ``disabled``: nobody can talk to the bot there;
* ``dm_policy = "open"``: anyone in direct messages, nobody in groups (unless groups are
  ``disabled`` anyway, which is then no finding);
* ``dm_policy = "pairing"``: no finding, since strangers get a code an approver approves.

Each finding is a ``⚠`` line naming ``channels.<kind>.<alias>.allowed_users``; it does not
change the exit status (a bot that talks to nobody yet is a valid configuration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult

if TYPE_CHECKING:
    from bot.config import ChannelCommon, Settings

FIX = (
    "list the user ids in {key} (each person gets theirs by sending the bot {command}), or "
    'set {key} = ["*"] to let everyone talk to the bot'
)


def access_findings(settings: Settings) -> list[CheckResult]:
    """A warning for each enabled channel whose empty ``allowed_users`` shuts people out."""
    found: list[CheckResult] = []
    for kind, alias, cfg in settings.channels.all():
        if not cfg.enabled or cfg.allowed_users or cfg.dm_policy == "pairing":
            continue
        if cfg.dm_policy == "open":
            if cfg.group_policy == "disabled":
                continue
            problem = (
                "allowed_users is empty: anyone is answered in direct messages "
                '(dm_policy = "open"), nobody in groups'
            )
        else:
            problem = "allowed_users is empty: nobody can talk to the bot here"
        found.append(
            CheckResult(
                name=f"access {kind}.{alias}",
                ok=True,
                warning=True,
                detail=problem,
                fix=FIX.format(
                    key=f"channels.{kind}.{alias}.allowed_users", command=_id_command(kind, cfg)
                ),
            )
        )
    return found


def _id_command(kind: str, cfg: ChannelCommon) -> str:
    """How a user asks the bot for their id there: ``/id``; on Slack, the slash command."""
    if kind == "slack":
        return f"{getattr(cfg, 'slash_command', '/hatchway')} id"
    return "/id"
