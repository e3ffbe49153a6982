"""No secret reaches logs, audit rows, stored approvals, cards or terminal prompts."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
import structlog

from bot.channel import ApprovalChoice
from bot.config import Settings, parse_settings
from bot.scrub import register_secret
from bot.store import Store
from bot.store.audit import Decision
from tests.approval.conftest import APPROVER, SLACK, make_envelope, make_request, service_for
from tests.fakes.channel import FakeChannel, FakeTerminal, clicked

BOT_TOKEN = "xoxb-1111111111-2222222222-abcdefghijklmnopqrstuvwx"
SECRETS = (
    BOT_TOKEN,
    "sk-proj-abcdefghijklmnopqrstuvwxyz0123",
    "hunter2-is-my-password",
    "eyJhbGciOiJIUzI1NiJ9.secretbearer",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
)
ARGUMENTS: dict[str, object] = {
    "path": "/srv/deploy.sh",
    "api_key": SECRETS[1],
    "password": SECRETS[2],
    "headers": {"Authorization": f"Bearer {SECRETS[3]}"},
    "command": f"curl -H 'token: {SECRETS[4]}' https://example.org --data {BOT_TOKEN}",
}


def settings_with(*, timeout_s: float) -> Settings:
    return parse_settings(
        {
            "approval": {"timeout_s": timeout_s},
            "channels": {
                "slack": {
                    "team": {
                        "allowed_users": ["*"],
                        "approvers": [APPROVER],
                        "bot_token_env": "HATCHWAY_SLACK_BOT_TOKEN",
                    }
                }
            },
        },
        environ={"HATCHWAY_SLACK_BOT_TOKEN": BOT_TOKEN},
        require_provider=False,
    )


async def test_no_secret_in_logs_audit_cards_or_prompts(
    db_path: Path, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    register_secret(BOT_TOKEN)  # the daemon registers every token it loads
    settings = settings_with(timeout_s=60.0)  # the clicks come well within it, however busy
    expiring = settings_with(timeout_s=0.05)  # nobody answers: the request expires
    channel = FakeChannel(SLACK)
    service = service_for(settings, store, channel)
    caplog.set_level(logging.DEBUG)
    with structlog.testing.capture_logs() as events:
        await service.assess(make_request(arguments=ARGUMENTS))
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(service.ask(make_request(arguments=ARGUMENTS)))
            posted = await channel.next_card()
            await clicked(service, channel.click(posted, "U_STRANGER"))
            await clicked(service, channel.click(posted, APPROVER, ApprovalChoice.ALWAYS))
        assert task.result().verdict is Decision.ALWAYS
        unanswered = service_for(expiring, store, channel)
        timed_out = await unanswered.ask(make_request(arguments=ARGUMENTS, tool="deploy"))
        assert timed_out.verdict is Decision.EXPIRED
        background = make_request(arguments=ARGUMENTS, envelope=make_envelope(background=True))
        await service.ask(background)
        terminal = FakeTerminal(SLACK, ["n"])
        console = service_for(settings, store, terminal)
        await console.ask(make_request(arguments=ARGUMENTS, envelope=make_envelope(terminal=True)))
        await console.expire_pending()

    seen: list[str] = [repr(e) for e in events]
    seen += [r.getMessage() + repr(r.__dict__) for r in caplog.records]
    seen += [repr(r) for r in await store.audit.since()]
    seen += [repr(r) for r in await store.approvals.list()]
    seen += [p.card.render_text() + repr(p.card) for p in channel.posted]
    seen += [card.render_text() for _, card in channel.edits]
    seen += terminal.prompts
    rows = await store.db.fetchall("SELECT * FROM audit")
    seen += [repr(tuple(r)) for r in rows]
    blob = "\n".join(seen)
    assert "approval_requested" in blob and "/srv/deploy.sh" in blob  # the capture worked
    for secret in SECRETS:
        assert secret not in blob
    assert "hunter2" not in blob
