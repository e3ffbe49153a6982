"""A scheduled run that needs a tool requiring approval, end to end through the App: the
model's tool result names the real reason, the job's conversation gets one line for the run
(not one per call), and the audit says ``auto_denied`` for ``background turn``."""

from __future__ import annotations

from bot.approval.reasons import BACKGROUND_NOTICE
from bot.store.audit import Decision
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.schedules.conftest import AppFactory, Clock
from tests.schedules.test_scheduled_turns import NINE_BERLIN_NEXT_DAY, create_daily_job
from tests.tools.workspace_files import files_named

REASON = "scheduled runs cannot ask anyone"
ADMIN = "An admin can add a grant or `auto_approve` for this tool."


async def test_each_refused_call_tells_the_model_and_the_run_tells_the_chat_once(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    app = await start_app()
    await create_daily_job(app, provider, channel)
    sent_before = len(channel.sent)
    asked_before = len(provider.requests)
    provider.add(
        reply("", call("shell", {"command": "echo one > one.txt"})),
        reply("", call("shell", {"command": "echo two > two.txt"})),
        reply("Could not write the stretch log: shell needs an approval."),
    )
    clock.set(NINE_BERLIN_NEXT_DAY)
    assert await app.scheduler.tick() == 1
    await channel.wait_for("Could not write the stretch log")

    # what the model saw as each call's result
    seen = [
        m.content
        for m in provider.requests[-1].messages[len(provider.requests[asked_before].messages) :]
        if m.role == "tool"
    ]
    assert len(seen) == 2
    for result in seen:
        assert REASON in result and ADMIN in result and "did NOT run" in result
        assert "no approver" not in result and "approval.auto_approve" not in result

    # the job's conversation: one line for the run, then the run's answer
    assert channel.texts[sent_before:] == [
        BACKGROUND_NOTICE.format(tool="shell"),
        "Could not write the stretch log: shell needs an approval.",
    ]
    audit = [(e.decision, e.decided_by, e.reason) for e in await app.store.audit.since()]
    assert audit == [(Decision.AUTO_DENIED, "runtime", "background turn")] * 2
    workspace = app.settings.database_path().parent / "workspace"
    assert not files_named(workspace, "one.txt") and not files_named(workspace, "two.txt")
