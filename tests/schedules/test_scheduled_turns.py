"""Scheduled jobs end to end: created in a (fake) Telegram conversation by the scripted
model, run by the scheduler on a clock the test moves, answered back into the chat."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.app import App
from bot.schedules.runner import job_message_id
from bot.store import InboxKey, InboxStatus
from tests.fakes.channel import FakeChannel
from tests.fakes.scripted_provider import ScriptedProvider, call, reply
from tests.schedules.conftest import (
    CHAT,
    TELEGRAM,
    AppFactory,
    Clock,
    message,
    wait_until,
)
from tests.tools.workspace_files import files_named

NINE_BERLIN_NEXT_DAY = datetime(2030, 4, 11, 7, 0, 30, tzinfo=UTC)  # 09:00:30 CEST


async def create_daily_job(
    app: App, provider: ScriptedProvider, channel: FakeChannel, **extra: object
) -> str:
    provider.add(
        reply(
            "",
            call(
                "schedule_add",
                {
                    "prompt": "Tell the team to stretch.",
                    "cron": "0 9 * * *",
                    "timezone": "Europe/Berlin",
                    **extra,
                },
            ),
        ),
        reply("Done, I'll remind you."),
    )
    await app.gateway.deliver(message("remind me to stretch every day at 9"))
    await channel.wait_for("Done, I'll remind you.")
    jobs = await app.schedule_book.jobs()
    assert len(jobs) == 1
    return jobs[0].id


async def test_job_from_a_conversation_announces_back_there(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    app = await start_app()
    job_id = await create_daily_job(app, provider, channel)
    job = await app.schedule_book.get(job_id)
    assert job is not None
    assert job.next_run_at == datetime(2030, 4, 11, 7, 0, tzinfo=UTC).timestamp()

    assert await app.scheduler.tick() == 0  # not due yet
    provider.add(reply("🧘 Time to stretch, everyone!"))
    clock.set(NINE_BERLIN_NEXT_DAY)
    assert await app.scheduler.tick() == 1

    target = await channel.wait_for("Time to stretch")
    assert target.channel == TELEGRAM
    assert target.conversation_id == CHAT
    scheduled_request = provider.requests[-1]
    assert "Tell the team to stretch." in str(scheduled_request.messages[-1].content)
    after = await app.schedule_book.get(job_id)
    assert after is not None
    assert after.last_run_at == clock.now
    assert after.next_run_at == datetime(2030, 4, 12, 7, 0, tzinfo=UTC).timestamp()
    assert await app.scheduler.tick() == 0  # the same occurrence does not run again


async def test_tool_needing_approval_is_auto_denied_and_audited(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    app = await start_app()
    await create_daily_job(app, provider, channel)
    provider.add(
        reply("", call("shell", {"command": "echo stretched > done.txt"})),
        reply("I could not run that: it needs an approval nobody can give now."),
    )
    clock.set(NINE_BERLIN_NEXT_DAY)
    assert await app.scheduler.tick() == 1
    await channel.wait_for("needs an approval")

    rows = await app.store.db.fetchall("SELECT tool, status FROM tool_calls WHERE tool='shell'")
    assert [(r["tool"], r["status"]) for r in rows] == [("shell", "not_executed")]
    audit = [e for e in await app.store.audit.since() if e.tool == "shell"]
    assert len(audit) == 1
    assert audit[0].decision == "auto_denied"
    assert audit[0].decided_by == "runtime"
    assert audit[0].requester == "4242"
    assert not files_named(app.settings.database_path().parent / "workspace", "done.txt")


async def test_grant_lets_a_scheduled_tool_run(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    from bot.approval.grants import new_grant

    app = await start_app()
    await create_daily_job(app, provider, channel)
    await app.store.grants.create(
        new_grant(
            tool="file_write",
            scope="conversation",
            channel=TELEGRAM,
            conversation_id=CHAT,
            granted_by="4242",
            now=clock.now,
            ttl_s=None,
        )
    )
    provider.add(
        reply("", call("file_write", {"path": "log.txt", "content": "stretched"})),
        reply("Logged the stretch."),
    )
    clock.set(NINE_BERLIN_NEXT_DAY)
    await app.scheduler.tick()
    await channel.wait_for("Logged the stretch.")
    rows = await app.store.db.fetchall("SELECT status FROM tool_calls WHERE tool='file_write'")
    assert [r["status"] for r in rows] == ["executed"]


async def test_delivery_none_records_without_posting(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    app = await start_app()
    job_id = await create_daily_job(app, provider, channel, delivery="none")
    sent_before = len(channel.sent)
    provider.add(reply("quiet result"))
    clock.set(NINE_BERLIN_NEXT_DAY)
    await app.scheduler.tick()
    occurrence = job_message_id(job_id, datetime(2030, 4, 11, 7, 0, tzinfo=UTC).timestamp())

    async def done() -> bool:
        entry = await app.store.inbox.get(InboxKey(channel=str(TELEGRAM), message_id=occurrence))
        return entry is not None and entry.status is InboxStatus.DONE

    await wait_until(done)
    assert len(channel.sent) == sent_before
    history = await app.store.history.load(f"{TELEGRAM}:{CHAT}")
    assert history[-1].content == "quiet result"


async def test_restart_preserves_jobs_and_never_repeats_an_occurrence(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel, clock: Clock
) -> None:
    first = await start_app()
    job_id = await create_daily_job(first, provider, channel)
    provider.add(reply("first stretch call"))
    clock.set(NINE_BERLIN_NEXT_DAY)
    await first.scheduler.tick()
    await channel.wait_for("first stretch call")
    occurrence = datetime(2030, 4, 11, 7, 0, tzinfo=UTC).timestamp()
    # a crash between delivering an occurrence and storing the next run
    stored = await first.schedule_book.get(job_id)
    assert stored is not None and stored.next_run_at is not None
    await first.store.schedules.mark_run(
        job_id, run_at=stored.next_run_at, last_run_at=None, next_run_at=occurrence
    )
    await first.stop()

    second = await start_app()
    jobs = await second.schedule_book.jobs()
    assert [j.id for j in jobs] == [job_id]
    requests_before = len(provider.requests)
    await second.scheduler.tick()  # re-delivers the same occurrence: the inbox refuses it
    assert len(provider.requests) == requests_before
    job = await second.schedule_book.get(job_id)
    assert job is not None and job.next_run_at is not None and job.next_run_at > clock.now

    provider.add(reply("second stretch call"))
    clock.set(datetime(2030, 4, 12, 7, 0, 5, tzinfo=UTC))
    assert await second.scheduler.tick() == 1
    await channel.wait_for("second stretch call")


async def test_schedule_list_and_remove_from_the_conversation(
    start_app: AppFactory, provider: ScriptedProvider, channel: FakeChannel
) -> None:
    app = await start_app()
    job_id = await create_daily_job(app, provider, channel)
    provider.add(
        reply("", call("schedule_list")),
        reply("", call("schedule_remove", {"id": job_id})),
        reply("Removed."),
    )
    await app.gateway.deliver(message("stop the stretch reminder", message_id="2"))
    await channel.wait_for("Removed.")
    observations = await app.store.db.fetchall(
        "SELECT tool, status, observation FROM tool_calls WHERE tool LIKE 'schedule_%' ORDER BY id"
    )
    listed = [r for r in observations if r["tool"] == "schedule_list"]
    assert job_id in listed[0]["observation"]
    assert "Europe/Berlin" in listed[0]["observation"]
    assert await app.schedule_book.jobs() == []
