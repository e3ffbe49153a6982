"""The doctor's routing table: which agent each channel and each route leads to, and the
routes that can never match.

One ``✓`` line per enabled channel (its default agent) and per route, in the order routes are
tried (:func:`bot.routing.route_rules`), and a ``⚠`` line, with its fix, for a route that
never matches: it names a channel that is not configured (or not enabled), an identical
route is tried before it, it asks for direct messages where none are taken
(``dm_policy = "disabled"``) or for groups and threads where there are none (the console,
``group_policy = "disabled"``), or it names a Discord server with no Discord channel
configured. Two routes of equal weight that can match the same message are a ``⚠`` too:
the one declared first wins, which may not be what was meant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bot.commands.doctor.report import CheckResult

if TYPE_CHECKING:
    # the config models and the routing rules load with the doctor's run, not with the
    # command line (tests/ops/test_startup_imports.py)
    from bot.channel_config import ChannelCommon
    from bot.config import Settings
    from bot.routing import RouteRule

#: Channel kinds where every conversation is a direct one (no groups, no threads).
DIRECT_ONLY_KINDS = frozenset({"console"})

Channels = list[tuple[str, "ChannelCommon"]]


def _enabled(settings: Settings) -> Channels:
    """``kind.alias`` and config of each enabled channel (the console when none is, as
    ``hatchway run`` does)."""
    from bot.config import ChannelsConfig

    channels = settings.channels
    if not any(cfg.enabled for _, _, cfg in channels.all()):
        channels = ChannelsConfig.embedded_console()
    return [(f"{kind}.{alias}", cfg) for kind, alias, cfg in channels.all() if cfg.enabled]


def _kind(name: str) -> str:
    return name.partition(".")[0]


def _never(rule: RouteRule, channels: Channels, earlier: Sequence[RouteRule]) -> str:
    """Why ``rule`` can never match, or ``""``."""
    m = rule.match
    if m.channel is not None:
        channels = [(n, c) for n, c in channels if m.channel in (n, _kind(n))]
        if not channels:
            return f"no enabled channel is {m.channel}"
    if m.guild is not None:
        channels = [(n, c) for n, c in channels if _kind(n) == "discord"]
        if not channels:
            return "it names a Discord server, and no Discord channel is enabled"
    for other in earlier:
        if other.match == m:
            return f"{other.where} is the same route and is tried first"
    if m.dm is True:
        if not any(c.dm_policy != "disabled" for _, c in channels):
            return 'it asks for direct messages, and its channels have dm_policy = "disabled"'
    elif m.dm is False or m.thread is not None:
        with_groups = [
            n
            for n, c in channels
            if _kind(n) not in DIRECT_ONLY_KINDS and c.group_policy != "disabled"
        ]
        if not with_groups:
            what = "threads" if m.dm is not False else "groups"
            return f"it asks for {what}, and its channels have none"
    return ""


def _may_tie(a: RouteRule, b: RouteRule) -> bool:
    """Whether two routes of equal weight can both match one message."""
    if a.agent == b.agent or a.weight != b.weight or a.match == b.match:
        return False
    for key in ("conversation", "thread", "dm", "guild"):
        x, y = getattr(a.match, key), getattr(b.match, key)
        if x is not None and y is not None and x != y:
            return False
    x, y = a.match.channel, b.match.channel
    return x is None or y is None or x == y or x == _kind(y) or y == _kind(x)


def routing_findings(settings: Settings) -> list[CheckResult]:
    """The routing table as report lines, with a warning for each route that never
    matches or may tie."""
    channels = _enabled(settings)
    results = [
        CheckResult(name=f"routing {name}", ok=True, detail=f"agent {cfg.agent} by default")
        for name, cfg in channels
    ]
    from bot.routing import route_rules

    rules = route_rules(settings)
    for index, rule in enumerate(rules):
        earlier = rules[:index]
        name = f"routing {rule.where}"
        detail = f"{rule.match.describe()} → agent {rule.agent}"
        why = _never(rule, channels, earlier)
        if why:
            fix = f"fix or remove {rule.where} (docs/configuration.md, agents and routes)"
            never = f"{detail}; never matches: {why}"
            results.append(CheckResult(name=name, ok=True, warning=True, detail=never, fix=fix))
            continue
        ties = [other for other in earlier if _may_tie(other, rule)]
        if ties:
            first = ties[0]
            tie = (
                f"{detail}; ties with {first.where} (agent {first.agent}), which is declared "
                "first and wins where both match"
            )
            fix = "add a key to the route that should win, or declare it first"
            results.append(CheckResult(name=name, ok=True, warning=True, detail=tie, fix=fix))
            continue
        results.append(CheckResult(name=name, ok=True, detail=detail))
    return results
