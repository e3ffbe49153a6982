"""Two keys: which calls need several distinct approvers, and how far a request has come.

``[approval.quorum]`` (or a channel's or an agent's ``quorum`` table, which replaces it
whole) lists rules. A rule matches a call when the tool is one of its ``tools`` (names or
shell-style patterns, as every policy list) and,
for each name in its ``arguments``, that argument is present and its value matches one of
the name's patterns. A value is matched whole, as text: a string with every run of
whitespace folded to one space and the ends stripped (``kubectl   delete`` reads as
``kubectl delete``), anything else as its canonical JSON. Patterns are ``fnmatch``'s
(``*``, ``?``, ``[...]``), case-sensitive; ``fnmatch`` compiles them to atomic groups, so a
match takes time linear in the value whatever the pattern (and the config bounds their
length and stars). The largest ``approvals`` of the rules that match is what the call needs.

Text matching reads words, not what a shell will run: ``kube"ctl" delete`` runs
``kubectl delete`` and matches no ``*kubectl delete*``. A rule on arguments narrows a tool's
quorum to the calls that look dangerous; a tool whose every call must take two keys is
named without arguments.

The requester never counts, whatever ``self_approval`` says; each approver counts once (the
store keeps one vote per person, :meth:`~bot.store.approvals.Approvals.vote`); any deny
denies; a grant lets the call run without the quorum only with ``grants_satisfy = true``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bot.approval.gate import canonical_json
from bot.channel_config import QuorumConfig
from bot.visible_text import visible

#: The approvals an ordinary request needs.
SINGLE = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class QuorumNeed:
    """What a call needs: ``approvals`` distinct approvers, by rule ``index`` of the table
    (0-based), whose ``entry`` is the tool pattern (and argument pattern) that matched."""

    approvals: int
    index: int
    entry: str


def first_match(text: str, patterns: tuple[str, ...]) -> str | None:
    """The first of ``patterns`` that ``text`` is or matches (the policy's own rule)."""
    return next((p for p in patterns if text == p or fnmatchcase(text, p)), None)


def _text(value: object) -> str:
    if isinstance(value, str):
        return " ".join(value.split())
    return canonical_json(value)


def quorum_for(
    quorum: QuorumConfig, tool: str, arguments: Mapping[str, object]
) -> QuorumNeed | None:
    """The quorum ``tool`` called with ``arguments`` needs under ``quorum``; None: none."""
    need: QuorumNeed | None = None
    for index, rule in enumerate(quorum.rules):
        if need is not None and rule.approvals <= need.approvals:
            continue
        tool_entry = first_match(tool, tuple(rule.tools))
        if tool_entry is None:
            continue
        matched: list[str] = []
        for name, patterns in rule.arguments.items():
            if name not in arguments:
                break
            entry = first_match(_text(arguments[name]), tuple(patterns))
            if entry is None:
                break
            matched.append(f'{name} "{entry}"')
        else:
            entry = f'tool "{tool_entry}"' + "".join(f", {m}" for m in matched)
            need = QuorumNeed(approvals=rule.approvals, index=index, entry=entry)
    return need


def approvals_word(count: int) -> str:
    return "approval" if count == 1 else "approvals"


def progress_line(
    needed: int, voters: tuple[str, ...], others: tuple[str, ...], roles: tuple[str, ...]
) -> str:
    """What a pending quorum card says: ``1 of 2 approvals: Alex ✓ · may approve: U2, U3 or
    role ops``. ``voters`` are the names already counted, ``others`` the listed approvers
    who may still approve (the requester and the voters left out), ``roles`` the approver
    roles."""
    given = f"{len(voters)} of {needed} approvals"
    if voters:
        given += ": " + ", ".join(f"{visible(v)} ✓" for v in voters)
    who = [visible(o) for o in others] + [f"role {visible(r)}" for r in roles]
    if who:
        given += " · may approve: " + ", ".join(who)
    return given


def waiting_for(needed: int, position: int, given: int) -> str:
    """``approval 1 of 2 recorded; waiting for one more``: what the ``position``-th approval
    of ``needed`` is told when ``given`` are counted in all (``… recorded; complete`` once
    they are enough)."""
    left = needed - given
    if left <= 0:
        return f"approval {position} of {needed} recorded; complete"
    more = "one more" if left == 1 else f"{left} more"
    return f"approval {position} of {needed} recorded; waiting for {more}"


def quorum_possible(
    needed: int,
    *,
    requester: str,
    approvers: tuple[str, ...],
    escalate_to: tuple[str, ...],
    roles: tuple[str, ...],
    terminal: bool,
) -> bool:
    """Whether ``needed`` distinct approvers besides ``requester`` could ever answer a card:
    never at a terminal (whoever is there is one person); with approver ``roles``, the
    platform knows how many hold them; else the listed approvers and the escalation's."""
    if terminal:
        return False
    if roles:
        return True
    return len({*approvers, *escalate_to} - {requester}) >= needed
