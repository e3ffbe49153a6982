"""A parked turn that no longer fits the configuration because its file was edited while
the daemon was stopped (docs/approvals.md, "Parking and resumption";
bot/gateway/parked_config.py): a daemon on a real ``hatchway.toml`` and SQLite file parks a
turn and stops, the file is edited, and the next daemon, started on the same file and
database, expires the card at its start with the reason ``… removed while stopped``. Nothing
of the turn runs; a removed tool's turn resumes so that the model is told why, a removed
agent's requester is told to ask again, and a removed channel's or access's turn ends with
its entry failed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bot.agent.loop import AGENT_REMOVED_MESSAGE
from bot.approval.reasons import RuntimeReason
from bot.channel import CardState
from bot.gateway.parked_config import ENDS_THE_TURN
from bot.store import InboxStatus
from bot.store.approvals import ApprovalStatus
from tests.approval.conftest import (
    KEY,
    WAIT_S,
    answers,
    assert_nothing_ran,
    parked_card,
    status_of,
    until_closed,
    until_inbox,
)
from tests.approval.file_daemon import OTHER, Daemons
from tests.fakes.replica_apps import SLACK

TEAM = "[channels.slack.team]\n"
OPS = '\n[agents.ops]\nroutes = [{ conversation = "C1" }]\n'


@dataclass(frozen=True)
class Edit:
    """An edit of the file while the daemon is stopped (``old`` becomes ``new``), after
    ``before`` was added to the file the turn parked under."""

    old: str
    new: str
    reason: RuntimeReason
    before: str = ""


EDITS = {
    "channel": Edit(TEAM, TEAM + "enabled = false\n", RuntimeReason.CHANNEL_GONE),
    "access": Edit(
        TEAM + 'allowed_users = ["*"]',
        TEAM + 'allowed_users = ["U_SOMEONE_ELSE"]',
        RuntimeReason.ACCESS_GONE,
    ),
    "agent": Edit(OPS, "", RuntimeReason.AGENT_GONE, before=OPS),
    "tool": Edit(TEAM, TEAM + 'excluded_tools = ["deploy"]\n', RuntimeReason.TOOL_GONE),
}


@pytest.mark.parametrize("kind", list(EDITS))
async def test_an_edit_made_while_stopped_expires_the_parked_card_at_the_start(
    daemons: Daemons, kind: str
) -> None:
    edit = EDITS[kind]
    daemons.append(edit.before)
    a = await daemons.start("a")
    card = await parked_card(a)
    approval_id = card.card.approval_id
    await daemons.stop(a)

    daemons.edit(edit.old, edit.new)
    b = await daemons.start("b")
    store = b.app.store
    # expired by the start itself, before any channel ran a turn
    assert await status_of(store, approval_id) == (ApprovalStatus.EXPIRED, edit.reason)
    if edit.reason in ENDS_THE_TURN:
        # the conversation is not one the bot answers any more: the turn does not resume
        await until_inbox(store, InboxStatus.FAILED)
        entry = await store.inbox.get(KEY)
        assert entry is not None and entry.error == edit.reason
    elif kind == "agent":
        # not taken over by another agent: the requester is told to ask again
        await b.channel.wait_for(AGENT_REMOVED_MESSAGE, within_s=WAIT_S)
    else:
        # the model is told why the call did not run, and answers
        await b.channel.wait_for("done: Not executed", within_s=WAIT_S)
    await until_closed(store, approval_id)
    if kind == "channel":
        # its adapter runs no more: nothing can be edited or sent there, nor is elsewhere
        assert SLACK not in b.channels
        assert b.channels[OTHER].sent == [] and b.channels[OTHER].edits == []
        await assert_nothing_ran(daemons)
        return
    # the card shows the expiry, and a late click on it runs nothing
    assert [(mid, c.state) for mid, c in b.channel.edits] == [(card.message_id, CardState.EXPIRED)]
    await assert_nothing_ran(daemons, b, card, answered=kind == "tool")
    if kind == "tool":
        # told why, not that the tool does not exist
        [told] = answers(b)
        assert "the tool is no longer configured" in told, told
