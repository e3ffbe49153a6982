"""The Explain page: would this call run, be asked about, or be refused here, and why.

The console's form of ``hatchway policy explain`` (:mod:`bot.tools.policy_question`, the one
engine it shares with the command, ``/why`` and ``hatchway doctor``): a channel, a
conversation, a user with their roles, a tool and its arguments as JSON; the answer is the
decision, the rule and the table that decide it, the approvers and whether each can see the
conversation, how a person would be asked, and the lines the card would show (masked and
escaped as on the card). The daemon judges it with its own catalog (MCP servers' tools
included) over its own database (grants), and, the channel running, asks the platform
whether each approver can see a group, as the runtime does before a card.

A viewer explains calls on the channel aliases they may read (an admin: every one; an
approver: the ones they approve). The question is a POST (the CSRF check applies) answered
with the page; a question that cannot be answered (an unknown tool, arguments that are not a
JSON object, a channel not offered) is answered on the page with what is wrong, status 400.
The form shows the question again with its secrets masked as a card masks them. Nothing is
run and nothing is recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from bot.envelope import ChannelRef
from bot.scrub import scrub_mapping, scrub_text
from bot.tools.policy_question import (
    PolicyAnswer,
    Unanswerable,
    approver_lines,
    ask,
    imagined_envelope,
)
from bot.webconsole import display
from bot.webconsole.pages import Access, PageRequest, Pages
from bot.webconsole.sign_in import field

log = structlog.get_logger(__name__)

PATH = "/explain"
FIELDS = ("channel", "conversation", "user", "roles", "tool")
MAX_ARGUMENTS_FIELD = 20_000
EXAMPLE = '{"command": "kubectl get pods"}'


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """The answer as the page shows it (every value escaped and masked for showing)."""

    decision: str
    rule: str
    tool: str
    where: str
    agent: str
    level: str
    approvers: tuple[str, ...]
    asked: str
    card: tuple[str, ...]
    card_cut: bool
    asks: bool = False  # a person would be asked (one approver, or a quorum of them)


def register(pages: Pages) -> None:
    pages.add("GET", PATH, explain_page, access=Access.SIGNED_IN, nav="Explain")
    pages.add("POST", PATH, explain_call, access=Access.SIGNED_IN)


def _channels(page: PageRequest) -> list[str]:
    """The channel aliases the viewer may ask about."""
    every = (f"{kind}.{alias}" for kind, alias, _ in page.host.settings.channels.all())
    return [name for name in every if page.viewer.may_read(name)]


def _render(
    page: PageRequest,
    *,
    form: dict[str, str] | None = None,
    error: str = "",
    answer: Shown | None = None,
    status: int = 200,
) -> web.Response:
    context: dict[str, Any] = {
        "form": form or {"arguments": EXAMPLE},
        "channels": _channels(page),
        "error": error,
        "answer": answer,
        "path": PATH,
    }
    return page.render("explain.html", context, status=status)


async def explain_page(page: PageRequest) -> web.StreamResponse:
    return _render(page)


def _shown(answer: PolicyAnswer) -> Shown:
    envelope = answer.envelope
    kind = "direct message" if envelope.is_direct else "group"
    where = f"{envelope.channel}, conversation {display.text(envelope.conversation_id)} ({kind})"
    if answer.refused_before_card:
        return Shown(
            decision="refuse",
            rule=f"before any card, the tool says: {display.text(answer.refused_before_card)}",
            tool=display.text(answer.tool),
            where=where,
            agent=display.text(envelope.agent),
            level="",
            approvers=(),
            asked="",
            card=(),
            card_cut=False,
        )
    found = answer.explanation
    needs = "needs approval" if answer.side_effects else "read-only"
    return Shown(
        decision=found.decision,
        rule=display.text(found.rule, 400),
        tool=f"{display.text(answer.tool)} ({needs} for this call)",
        where=where,
        agent=f"{display.text(envelope.agent)} ({display.text(envelope.route or 'the default')})",
        level=display.text(found.level),
        approvers=tuple(display.text(line) for line in approver_lines(found))
        if found.verdict == "ask"
        else (),
        asked=display.text(found.asked) if found.verdict == "ask" else "",
        asks=found.verdict == "ask",
        # already masked, escaped and cut as the card shows them
        card=found.card,
        card_cut=found.card_cut,
    )


async def explain_call(page: PageRequest) -> web.StreamResponse:
    posted = await page.request.post()
    form = {name: field(posted, name) for name in FIELDS}
    form["arguments"] = field(posted, "arguments", limit=MAX_ARGUMENTS_FIELD) or "{}"
    form["dm"] = "on" if field(posted, "dm") else ""
    if form["channel"] not in _channels(page):
        form["arguments"] = _echoed(form["arguments"])
        return _render(page, form=form, error="Pick one of the channels offered.", status=400)
    roles = tuple(r.strip() for r in form["roles"].split(",") if r.strip())
    host = page.host
    envelope = imagined_envelope(
        host.settings,
        channel=form["channel"],
        conversation=form["conversation"],
        user=form["user"],
        roles=roles,
        dm=bool(form["dm"]),
    )
    if isinstance(envelope, Unanswerable):
        form["arguments"] = _echoed(form["arguments"])
        return _render(page, form=form, error=_sentence(envelope.message), status=400)
    kind, _, alias = form["channel"].partition(".")
    answer = await ask(
        envelope,
        form["tool"],
        form["arguments"],
        settings=host.settings,
        store=host.store,
        specs=host.tool_specs(),
        channel=host.channel_for(ChannelRef(kind=kind, alias=alias)),
        mcp_known=True,
    )
    form["arguments"] = _echoed(form["arguments"])
    if isinstance(answer, Unanswerable):
        return _render(page, form=form, error=_sentence(answer.message), status=400)
    log.info(
        "policy_explained",
        via="web",
        viewer=str(page.viewer.identity),
        channel=form["channel"],
        tool=answer.tool,
        verdict=answer.verdict,
    )
    return _render(page, form=form, answer=_shown(answer))


def _sentence(message: str) -> str:
    """An engine's message as the page says it (escaped, masked, capitalised)."""
    text = display.text(message, 600)
    return text[:1].upper() + text[1:]


def _echoed(arguments: str) -> str:
    """The arguments as the form shows them again: secrets masked as on a card (values
    under secret-looking keys, tokens in text), so a page never carries one back."""
    try:
        parsed = json.loads(arguments)
    except (ValueError, RecursionError):
        return scrub_text(arguments)
    if isinstance(parsed, dict):
        return json.dumps(scrub_mapping(parsed), ensure_ascii=False)
    return scrub_text(arguments)
