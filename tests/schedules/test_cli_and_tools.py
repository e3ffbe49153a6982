"""``hatchway schedules list|remove`` and the tools' per-call approval."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bot.cli import main
from bot.envelope import ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.schedules.book import ScheduleBook
from bot.schedules.job import JobSpec, StoredTarget
from bot.schedules.tools import schedule_tools
from bot.store import Store
from bot.tools.builtin.observation import ToolRefused
from bot.tools.spec import ToolContext
from tests.tools.harness import make_context

ORIGIN = DeliveryTarget(channel=ChannelRef(kind="slack", alias="team"), conversation_id="C1")


def context(background: bool = False) -> ToolContext:
    envelope = IngressEnvelope(
        channel=ORIGIN.channel,
        message_id="m1",
        conversation_id="C1",
        sender=Sender(id="U1"),
        text="schedule it",
        reply_target=ORIGIN,
        background=background,
    )
    return make_context(envelope)


async def add_job(db: Path) -> str:
    async with await Store.open(db) as store:
        target = StoredTarget.of(ORIGIN)
        spec = JobSpec(
            prompt="post the report",
            cron="0 8 * * 1",
            origin=target,
            target=target,
            creator_id="U1",
            name="weekly",
        )
        job = await ScheduleBook(store.schedules).add(spec, now=1_900_000_000.0)
        return job.id


def test_cli_lists_and_removes_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "hatchway.toml"
    config.write_text('[storage]\npath = "state.db"\n', encoding="utf-8")
    job_id = asyncio.run(add_job(tmp_path / "state.db"))

    assert main(["schedules", "list", "--config", str(config)]) == 0
    listed = capsys.readouterr().out
    assert job_id in listed and '"weekly"' in listed and "slack.team:C1" in listed

    assert main(["schedules", "remove", job_id, "--config", str(config)]) == 0
    assert main(["schedules", "remove", job_id, "--config", str(config)]) == 1
    capsys.readouterr()
    assert main(["schedules", "list", "--config", str(config)]) == 0
    assert "no scheduled jobs" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arguments", "needs_approval"),
    [
        ({"channel": "slack.team", "to": "C1"}, False),
        ({"channel": "slack.team", "to": "C1", "thread": "T9"}, False),
        ({"channel": "slack.team", "to": "C2"}, True),
        ({"channel": "telegram.main", "to": "C1"}, True),
    ],
)
async def test_announcing_elsewhere_needs_approval(
    tmp_path: Path, arguments: dict[str, object], needs_approval: bool
) -> None:
    async with await Store.open(tmp_path / "db.sqlite") as store:
        add = schedule_tools(ScheduleBook(store.schedules))[0]
    assert add.name == "schedule_add" and add.channel_aware
    assert add.approval_check is not None
    assert add.approval_check({"prompt": "x", **arguments}, context()) is needs_approval


async def test_scheduled_turn_cannot_create_jobs(tmp_path: Path) -> None:
    async with await Store.open(tmp_path / "db.sqlite") as store:
        add = schedule_tools(ScheduleBook(store.schedules))[0]
        assert add.handler is not None
        with pytest.raises(ToolRefused, match="scheduled run cannot create"):
            await add.handler({"prompt": "again", "cron": "* * * * *"}, context(background=True))
        assert await store.schedules.list() == []
