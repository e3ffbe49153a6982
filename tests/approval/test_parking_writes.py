"""The writes of a resumption (docs/approvals.md, "Parking and resumption"), counted with
SQLite's trace callback on a daemon's own connection: the parked record goes once, in the
transaction that records the resumed batch's outcomes (so a record still ``resuming`` after
a kill means none was recorded), and no statement looks for it again afterwards."""

from __future__ import annotations

from bot.channel import ClickVerdict
from bot.store import InboxStatus
from tests.approval.conftest import WAIT_S, parked_card, until_closed, until_inbox
from tests.approval.file_daemon import Daemons
from tests.approval.test_parking_gate import Trace


async def test_a_resumption_drops_the_parked_record_once_with_the_batchs_outcomes(
    daemons: Daemons,
) -> None:
    a = await daemons.start("a")
    card = await parked_card(a)
    approval_id = card.card.approval_id
    store = a.app.store
    trace = await Trace.installed(store)

    trace.on = True
    verdict = await a.app.approvals.decide_from_cli(approval_id, True, "operator:root")
    assert verdict is ClickVerdict.ACCEPTED
    await a.channel.wait_for("done: deployed v2", within_s=WAIT_S)
    await until_inbox(store, InboxStatus.DONE)
    await until_closed(store, approval_id)
    trace.on = False

    statements = trace.take()
    drops = [i for i, s in enumerate(statements) if s.startswith("DELETE FROM parked_turns")]
    assert [statements[i] for i in drops] == [
        f"DELETE FROM parked_turns WHERE approval_id = '{approval_id}'"
    ]
    # in one transaction with the call's row and the outcomes' history message
    [drop] = drops
    begin = max(i for i, s in enumerate(statements[:drop]) if s.startswith("BEGIN"))
    end = drop + next(i for i, s in enumerate(statements[drop:]) if s == "COMMIT")
    together = statements[begin:end]
    assert any(s.startswith("INSERT INTO tool_calls") for s in together), together
    assert any(s.startswith("INSERT INTO messages") for s in together), together
