"""Handler choice: terminal, backchannel, or the runtime's auto-deny."""

from __future__ import annotations

from typing import Any

import pytest

from bot.approval.reasons import RuntimeReason
from bot.approval.terminal import TerminalAnswer, parse_answer
from bot.store import Store
from bot.store.audit import Decision
from tests.approval.conftest import SLACK, make_envelope, make_request, make_settings, service_for
from tests.fakes.channel import FakeChannel, FakeTerminal


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("y", TerminalAnswer.YES),
        (" YES ", TerminalAnswer.YES),
        ("n", TerminalAnswer.NO),
        ("no", TerminalAnswer.NO),
        ("a", TerminalAnswer.ALWAYS),
        ("always", TerminalAnswer.ALWAYS),
        ("", TerminalAnswer.NO),
        ("sure", TerminalAnswer.NO),
        (None, TerminalAnswer.NO),
    ],
)
def test_parse_answer(line: str | None, expected: TerminalAnswer) -> None:
    assert parse_answer(line) is expected


@pytest.mark.parametrize(
    ("answer", "verdict", "grants"),
    [
        ("y", Decision.APPROVED, 0),
        ("n", Decision.DENIED, 0),
        ("a", Decision.ALWAYS, 1),
        ("", Decision.DENIED, 0),
        (None, Decision.DENIED, 0),
    ],
)
async def test_terminal_answers(
    store: Store, answer: str | None, verdict: Decision, grants: int
) -> None:
    terminal = FakeTerminal(SLACK, [answer])
    service = service_for(make_settings(), store, terminal)
    envelope = make_envelope(terminal=True, backchannel=False)
    request = make_request(
        arguments={"path": "/srv/app.py", "api_token": "tok-123456789", "body": "x" * 500},
        envelope=envelope,
    )
    decision = await service.ask(request)
    assert decision.verdict is verdict
    assert len(await store.grants.list(now=0)) == grants
    (prompt,) = terminal.prompts
    lines = prompt.splitlines()
    assert lines[0] == "🔐 Approve shell?"
    assert lines[1] == "  path: /srv/app.py"  # paths first
    assert "tok-123456789" not in prompt and "api_token: ***" in prompt
    # the terminal has no length limit: every character that will run is shown
    assert "  body: " + "x" * 500 in lines
    assert terminal.posted == []


async def test_terminal_timeout(store: Store) -> None:
    terminal = FakeTerminal(SLACK, [])
    service = service_for(make_settings({"timeout_s": 0.05}), store, terminal)
    decision = await service.ask(make_request(envelope=make_envelope(terminal=True)))
    assert (decision.verdict, decision.runtime_reason) == (Decision.EXPIRED, RuntimeReason.TIMEOUT)
    rows = await store.audit.since()
    assert [(r.decision, r.decided_by, r.reason) for r in rows] == [
        ("expired", "runtime", "timeout")
    ]


@pytest.mark.parametrize(
    ("envelope_kwargs", "settings_kwargs", "audit_reason", "wording"),
    [
        pytest.param(
            {"backchannel": False},
            {},
            "no backchannel",
            RuntimeReason.NO_BACKCHANNEL.wording,
            id="no backchannel",
        ),
        pytest.param(
            {},
            {"approvers": []},
            "no approver configured",
            RuntimeReason.NO_APPROVER.wording,
            id="no approver",
        ),
        pytest.param(
            {"background": True},
            {},
            "background turn",
            RuntimeReason.BACKGROUND.wording,
            id="background",
        ),
        pytest.param(
            {"background": True, "terminal": True},
            {},
            "background turn",
            RuntimeReason.BACKGROUND.wording,
            id="background beats terminal",
        ),
    ],
)
async def test_auto_deny_at_once(
    store: Store,
    channel: FakeChannel,
    envelope_kwargs: dict[str, Any],
    settings_kwargs: dict[str, list[str]],
    audit_reason: str,
    wording: str,
) -> None:
    # A long timeout: the test would hang if the service waited.
    service = service_for(make_settings({"timeout_s": 300}, **settings_kwargs), store, channel)
    request = make_request(envelope=make_envelope(**envelope_kwargs))
    decision = await service.ask(request)
    assert decision.verdict is Decision.AUTO_DENIED
    assert decision.decided_by == "runtime"
    assert decision.runtime_reason is not None
    assert decision.runtime_reason.wording == wording
    assert "did NOT run" in wording and "denied by user" not in wording
    assert channel.posted == []
    rows = await store.audit.since()
    assert [(r.decision, r.decided_by, r.reason) for r in rows] == [
        ("auto_denied", "runtime", audit_reason)
    ]


async def test_channel_not_running_auto_denies(store: Store) -> None:
    service = service_for(make_settings(), store)  # no channel objects at all
    decision = await service.ask(make_request())
    assert decision.verdict is Decision.AUTO_DENIED


async def test_model_approved_argument_does_not_skip_asking(store: Store) -> None:
    service = service_for(make_settings(), store)
    request = make_request(
        arguments={"command": "rm -rf /tmp/x", "approved": True},
        envelope=make_envelope(backchannel=False),
    )
    decision = await service.ask(request)
    assert decision.verdict is Decision.AUTO_DENIED
