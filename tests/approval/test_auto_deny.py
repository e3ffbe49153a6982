"""The runtime's refusal of a scheduled run's call: the model is told the real reason, the
run's conversation gets one line per run (not per call), and the audit names the reason."""

from __future__ import annotations

import dataclasses

from structlog.testing import capture_logs

from bot.approval.auto_deny import TOLD_RUNS_KEPT
from bot.approval.gate import ApprovalRequest
from bot.approval.reasons import BACKGROUND_NOTICE, RuntimeReason
from bot.envelope import ChannelRef, DeliveryTarget
from bot.store import Store
from bot.store.audit import Decision
from bot.turn import TurnIdentity
from tests.approval.conftest import SLACK, make_envelope, make_request, make_settings, service_for
from tests.fakes.channel import FakeChannel

OTHER = ChannelRef(kind="slack", alias="ops")


def in_run(
    turn_id: str,
    *,
    call_id: str = "call-1",
    announce: bool = True,
    reply_target: DeliveryTarget | None = None,
) -> ApprovalRequest:
    """A request of the scheduled run ``turn_id`` (a background envelope)."""
    request = make_request(call_id=call_id)
    env = make_envelope(background=True)
    env = dataclasses.replace(env, announce=announce, reply_target=reply_target or env.reply_target)
    turn = TurnIdentity(turn_id=turn_id, session_key="slack.team:C1:T1", envelope=env)
    return dataclasses.replace(request, turn=turn)


def test_the_model_is_told_scheduled_runs_cannot_ask_and_what_an_admin_can_do() -> None:
    wording = RuntimeReason.BACKGROUND.wording
    assert "scheduled runs cannot ask anyone" in wording
    assert "An admin can add a grant or `auto_approve` for this tool." in wording
    assert "The tool did NOT run." in wording
    # never a setting path or a file: those are the log's
    assert "approval." not in wording and "hatchway.toml" not in wording


async def test_one_line_per_run_not_per_call(store: Store, channel: FakeChannel) -> None:
    service = service_for(make_settings(), store, channel)
    first = [await service.ask(in_run("run-1", call_id=f"c{i}")) for i in range(3)]
    assert {(d.verdict, d.runtime_reason) for d in first} == {
        (Decision.AUTO_DENIED, RuntimeReason.BACKGROUND)
    }
    assert channel.texts == [BACKGROUND_NOTICE.format(tool="shell")]
    target = channel.sent[0][0]
    assert (target.conversation_id, target.thread_id) == ("C1", "T1")

    await service.ask(in_run("run-2"))  # the next run of the job is told again
    assert channel.texts == [BACKGROUND_NOTICE.format(tool="shell")] * 2
    assert channel.posted == []  # never a card: nobody could answer it
    rows = await store.audit.since()
    assert [(r.decision, r.decided_by, r.reason) for r in rows] == [
        ("auto_denied", "runtime", "background turn")
    ] * 4


async def test_the_line_goes_where_the_run_answers(store: Store, channel: FakeChannel) -> None:
    ops = FakeChannel(OTHER)
    service = service_for(make_settings(), store, channel, ops)
    elsewhere = DeliveryTarget(channel=OTHER, conversation_id="C9")
    await service.ask(in_run("run-1", reply_target=elsewhere))
    assert channel.texts == []
    assert ops.sent == [(elsewhere, BACKGROUND_NOTICE.format(tool="shell"))]


async def test_a_silent_job_posts_nothing(store: Store, channel: FakeChannel) -> None:
    service = service_for(make_settings(), store, channel)
    with capture_logs() as logs:
        decision = await service.ask(in_run("run-1", announce=False))
    assert decision.runtime_reason is RuntimeReason.BACKGROUND
    assert channel.texts == []
    assert [e["event"] for e in logs if "notice" in e["event"]] == [
        "background_approval_notice_silent"
    ]
    assert [r.reason for r in await store.audit.since()] == ["background turn"]


async def test_a_platform_failure_does_not_fail_the_call(store: Store) -> None:
    down = FakeChannel(SLACK, down=True)
    service = service_for(make_settings(), store, down)
    with capture_logs() as logs:
        decision = await service.ask(in_run("run-1"))
    assert (decision.verdict, decision.runtime_reason) == (
        Decision.AUTO_DENIED,
        RuntimeReason.BACKGROUND,
    )
    failed = [e for e in logs if e["event"] == "background_approval_notice_failed"]
    assert [e["error"] for e in failed] == ["platform down"]


async def test_runs_told_are_remembered_within_a_bound(store: Store, channel: FakeChannel) -> None:
    service = service_for(make_settings(), store, channel)
    for n in range(TOLD_RUNS_KEPT + 1):
        await service.ask(in_run(f"run-{n}"))
    assert len(channel.texts) == TOLD_RUNS_KEPT + 1
    await service.ask(in_run(f"run-{TOLD_RUNS_KEPT}"))  # the newest is still remembered
    assert len(channel.texts) == TOLD_RUNS_KEPT + 1
