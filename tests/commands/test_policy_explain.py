"""``hatchway policy explain`` against the tool pipeline: one table of calls, each judged
twice, by the command over a real configuration and database, and by the real
:class:`~bot.tools.pipeline.ToolPipeline` with the real approval service over the same
database. The verdicts must agree, and the command must name the rule that decided.

The command runs through its real parser and handler (:func:`bot.cli.main`, on a thread of
its own with its own event loop, as a separate process would run it); one test runs it as
the process ``python -m bot.cli`` too, exit status and streams as a shell sees them."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.approval.grants import new_grant
from bot.approval.reasons import RuntimeReason
from bot.approval.service import ApprovalService
from bot.cli import main
from bot.config import Settings, load_settings
from bot.envelope import Capabilities, ChannelRef, DeliveryTarget, IngressEnvelope, Sender
from bot.outbox import ChannelOutbox
from bot.providers.base import ToolCallRequest
from bot.routing import Router
from bot.schedules.book import ScheduleBook
from bot.store import Store
from bot.tools.outcome import OutcomeReason
from bot.tools.spec import ToolSpec
from bot.wiring.tools import build_tools
from tests.tools.harness import Harness, Recorder

CONFIG = """
state_dir = "{state}"

[approval]
always_ask = ["file_write"]
auto_approve = ["current_time", "file_read", "file_edit"]

[approval.quorum]
rules = [{{ tools = ["shell"], arguments = {{ command = ["*kubectl delete*"] }}, approvals = 2 }}]

[channels.slack.team]
allowed_users = ["*"]
approvers = ["U_ADMIN", "U_ALICE"]
approval = {{ deny = ["shell"] }}

[channels.slack.open]
allowed_users = ["*"]
approvers = ["U_ADMIN"]
approval = {{ level = "full" }}

[channels.slack.ro]
allowed_users = ["*"]
approvers = ["U_ADMIN"]
approval = {{ level = "readonly" }}

[channels.slack.ops]
allowed_users = ["*"]
approvers = ["U_ADMIN"]

[channels.slack.keys]
allowed_users = ["*"]
approvers = ["U_ADMIN", "U_BOB", "U_ALICE"]
approval = {{ self_approval = true }}

[agents.ops.approval]
always_ask = ["file_edit"]
quorum = {{ rules = [{{ tools = ["shell"], approvals = 3 }}] }}

[[agents.ops.routes]]
channel = "slack.ops"
"""

POST = {"url": "https://example.com/hook", "method": "POST", "body": "x"}


@dataclass(frozen=True, slots=True)
class Case:
    channel: str
    conversation: str
    tool: str
    arguments: Mapping[str, object]
    verdict: str  # run / ask / refuse / quorum N (an ask of N distinct approvers)
    rule: str  # what the command's rule line says
    background: bool = False  # a scheduled job's turn: nobody is ever asked


#: Every rule kind of the policy's decision order.
CASES = [
    Case(
        "slack.keys",
        "C1",
        "shell",
        {"command": "kubectl  delete pod web-1"},
        "quorum 2",
        'quorum 2: rule 1 (tool "shell", command "*kubectl delete*") in approval.quorum.rules',
    ),
    Case(
        "slack.open",
        "C1",
        "shell",
        {"command": "cd /srv && kubectl delete ns x"},
        "quorum 2",
        'quorum 2: rule 1 (tool "shell", command "*kubectl delete*") in approval.quorum.rules',
    ),
    Case(
        "slack.keys",
        "C1",
        "shell",
        {"command": "kubectl get pods"},
        "ask",
        "side-effecting tool: no deny, always_ask, grant or auto_approve entry matched",
    ),
    Case(
        "slack.ops",
        "C1",
        "shell",
        {"command": "ls"},
        "quorum 3",
        'quorum 3: rule 1 (tool "shell") in agents.ops.approval.quorum.rules',
    ),
    Case(
        "slack.team",
        "C1",
        "shell",
        {"command": "ls"},
        "refuse",
        'deny list: entry "shell" in channels.slack.team.approval.deny',
    ),
    Case(
        "slack.ro",
        "C1",
        "file_write",
        {"path": "a.txt", "content": "x"},
        "refuse",
        'level "readonly" (channels.slack.ro.approval.level)',
    ),
    Case(
        "slack.open",
        "C1",
        "shell",
        {"command": "ls"},
        "run",
        'level "full" (channels.slack.open.approval.level)',
    ),
    Case(
        "slack.team",
        "C1",
        "file_write",
        {"path": "a.txt", "content": "x"},
        "ask",
        'always_ask: entry "file_write" in approval.always_ask',
    ),
    Case(
        "slack.ops",
        "C1",
        "file_edit",
        {"path": "a.txt", "old_text": "x", "new_text": "y"},
        "ask",
        'always_ask: entry "file_edit" in agents.ops.approval.always_ask',
    ),
    Case("slack.team", "C9", "http_fetch", POST, "run", "grant #1 (conversation slack.team:C9"),
    Case(
        "slack.team",
        "C1",
        "file_edit",
        {"path": "a.txt", "old_text": "x", "new_text": "y"},
        "run",
        'auto_approve: entry "file_edit" in approval.auto_approve',
    ),
    Case(
        "slack.team",
        "C1",
        "http_fetch",
        {"url": "https://example.com/"},
        "run",
        "read-only: the tool needs no approval for this call",
    ),
    Case(
        "slack.team",
        "C1",
        "http_fetch",
        POST,
        "ask",
        "side-effecting tool: no deny, always_ask, grant or auto_approve entry matched",
    ),
    Case(
        "slack.team",
        "C1",
        "http_fetch",
        POST,
        "ask",
        "side-effecting tool: no deny, always_ask, grant or auto_approve entry matched",
        background=True,
    ),
    Case(
        "slack.team",
        "C1",
        "file_edit",
        {"path": "a.txt", "old_text": "x", "new_text": "y"},
        "run",
        'auto_approve: entry "file_edit" in approval.auto_approve',
        background=True,
    ),
]


@pytest.fixture
async def configured(tmp_path: Path) -> tuple[Path, Settings]:
    path = tmp_path / "hatchway.toml"
    path.write_text(CONFIG.format(state=tmp_path), encoding="utf-8")
    settings = load_settings(path, require_provider=False, environ={})
    async with await Store.open(settings.database_path()) as store:
        await store.grants.create(
            new_grant(
                tool="http_fetch",
                scope="conversation",
                channel="slack.team",
                conversation_id="C9",
                granted_by="U_ADMIN",
                now=time.time(),
                ttl_s=None,
            )
        )
    return path, settings


def explain_process(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HATCHWAY_CONFIG": str(config)}
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", "policy", "explain", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


Explain = Callable[..., Awaitable[subprocess.CompletedProcess[str]]]


@pytest.fixture
def explain(capsys: pytest.CaptureFixture[str], kept_logging: None) -> Explain:
    """``hatchway policy explain ARGS --config CONFIG`` in this process: its exit status and
    what it printed."""

    async def run(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
        argv = ["policy", "explain", *args, "--config", str(config)]
        capsys.readouterr()
        code = await asyncio.to_thread(main, argv)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(argv, code, out, err)

    return run


def _envelope(settings: Settings, case: Case) -> IngressEnvelope:
    kind, _, alias = case.channel.partition(".")
    ref = ChannelRef(kind=kind, alias=alias)
    envelope = IngressEnvelope(
        channel=ref,
        message_id="m1",
        conversation_id=case.conversation,
        sender=Sender(id="U_ALICE"),
        text="",
        reply_target=DeliveryTarget(channel=ref, conversation_id=case.conversation),
        is_group=True,
        addressed_to_bot=True,
        # nobody can be asked here: an ask ends at once, auto-denied, so the test sees it
        capabilities=Capabilities(),
        background=case.background,
    )
    return Router(settings).routed(envelope)


async def pipeline_verdict(settings: Settings, store: Store, case: Case) -> str:
    """What the pipeline does with the call: runs it, asks about it, or refuses it."""
    recorder = Recorder()
    specs: list[ToolSpec] = [
        dataclasses.replace(spec, handler=recorder)
        for spec in build_tools(
            settings,
            store=store,
            outbox=ChannelOutbox(lambda: settings, lambda _ref: None),
            book=ScheduleBook(store.schedules),
            clock=time.time,
            config_file=None,
        )
    ]
    service = ApprovalService(settings, store, lambda _ref: None)
    harness = Harness(store, specs, gate=service, envelope=_envelope(settings, case))
    report = await harness.run(
        ToolCallRequest(id="c1", name=case.tool, arguments=json.dumps(case.arguments))
    )
    (outcome,) = report.outcomes
    if recorder.calls:
        return "run"
    if outcome.reason is OutcomeReason.POLICY_DENIED:
        return "refuse"
    assert outcome.reason is OutcomeReason.AUTO_DENIED, outcome
    # a scheduled turn is refused for being one, before any way of asking is looked at
    background = RuntimeReason.BACKGROUND.wording in outcome.observation
    assert background == case.background, outcome.observation
    return "ask"


@pytest.mark.parametrize(
    "case",
    CASES,
    ids=lambda c: f"{c.channel}-{c.tool}-{c.verdict}" + ("-background" if c.background else ""),
)
async def test_explain_agrees_with_the_pipeline(
    configured: tuple[Path, Settings], explain: Explain, case: Case
) -> None:
    config, settings = configured
    done = await explain(
        config,
        "--channel",
        case.channel,
        "--conversation",
        case.conversation,
        "--user",
        "U_ALICE",
        *(["--background"] if case.background else []),
        case.tool,
        json.dumps(case.arguments),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"decision:  {case.verdict}"
    assert lines[1].startswith(f"rule:      {case.rule}"), lines[1]
    if case.verdict == "quorum 3":  # one listed approver besides the requester: never enough
        assert "asked:     nobody: refused at once (quorum unreachable)" in lines
    if case.background and case.verdict == "ask":
        refused = "asked:     nobody: refused at once (background turn: scheduled runs never ask)"
        assert refused in lines
    async with await Store.open(settings.database_path()) as store:
        # a quorum is an ask the pipeline puts to several approvers
        expected = "ask" if case.verdict.startswith("quorum") else case.verdict
        assert await pipeline_verdict(settings, store, case) == expected


async def test_explain_names_approvers_and_what_the_card_shows(
    configured: tuple[Path, Settings], explain: Explain
) -> None:
    config, _settings = configured
    done = await explain(
        config,
        "--channel",
        "slack.team",
        "--conversation",
        "C1",
        "--user",
        "U_ALICE",
        "http_fetch",
        json.dumps({**POST, "headers": {"Authorization": "Bearer abcdefghijklmnop"}}),
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "U_ADMIN: sees the conversation: unknown (offline)" in out
    assert "U_ALICE (the requester; self_approval is off): not counted" in out
    assert "asked:     a card in the conversation" in out
    assert "url: https://example.com/hook" in out
    assert "abcdefghijklmnop" not in out  # the card's masking applies
    dm = await explain(
        config,
        "--channel",
        "slack.team",
        "--conversation",
        "D1",
        "--dm",
        "--user",
        "U_ALICE",
        "http_fetch",
        json.dumps(POST),
    )
    assert "U_ADMIN: sees the conversation: no (a direct message" in dm.stdout
    # the requester cannot approve their own call, nobody else sees a DM: the runtime refuses
    assert "asked:     nobody: refused at once (no approver reachable)" in dm.stdout


async def test_explain_shows_the_diff_and_refuses_a_path_outside_the_workspace(
    configured: tuple[Path, Settings], explain: Explain
) -> None:
    config, _settings = configured
    base = ["--channel", "slack.team", "--conversation", "C1", "--user", "U_ALICE"]
    done = await explain(
        config, *base, "file_write", json.dumps({"path": "new.txt", "content": "hi\n"})
    )
    assert done.returncode == 0, done.stderr
    assert "  new file: new.txt (3 bytes, 1 line)" in done.stdout.splitlines()
    assert "  +hi" in done.stdout.splitlines()
    done = await explain(
        config, *base, "file_write", json.dumps({"path": "../out.txt", "content": "x"})
    )
    assert done.stdout.splitlines() == [
        "decision:  refuse",
        "rule:      before any card, the tool says: refused by policy: path '../out.txt' is "
        "outside the workspace",
    ]


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--channel", "slack.nope", "--conversation", "C1", "--user", "U", "shell"], "no channel"),
        (["--channel", "slack", "--conversation", "C1", "--user", "U", "shell"], "no channel"),
        (
            ["--channel", "slack.team", "--conversation", "C1", "--user", "U", "nope", "{}"],
            "there is no tool named 'nope'",
        ),
        (
            ["--channel", "slack.team", "--conversation", "C1", "--user", "U", "shell", "{x"],
            "the arguments are not JSON",
        ),
        (
            ["--channel", "slack.team", "--conversation", "C1", "--user", "U", "shell", "[1]"],
            "must be a JSON object",
        ),
        (
            ["--channel", "slack.team", "--conversation", "C1", "--user", "U", "shell", "{}"],
            "Not executed",
        ),
    ],
)
async def test_a_bad_question_gets_a_clear_answer(
    configured: tuple[Path, Settings], explain: Explain, args: list[str], error: str
) -> None:
    config, _settings = configured
    done = await explain(config, *args)
    assert done.returncode == 2
    assert error in done.stdout
    assert "Traceback" not in done.stderr


async def test_the_command_as_a_process(configured: tuple[Path, Settings]) -> None:
    """``python -m bot.cli policy explain``, its configuration from ``HATCHWAY_CONFIG``: an
    answer on stdout with status 0, a bad question answered with status 2, no traceback."""
    config, _settings = configured
    base = ["--channel", "slack.keys", "--conversation", "C1", "--user", "U_ALICE"]
    done = await asyncio.to_thread(
        explain_process, config, *base, "shell", json.dumps({"command": "kubectl delete pod x"})
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[:2] == [
        "decision:  quorum 2",
        'rule:      quorum 2: rule 1 (tool "shell", command "*kubectl delete*") in '
        "approval.quorum.rules",
    ]
    assert "Traceback" not in done.stderr
    done = await asyncio.to_thread(explain_process, config, *base, "shell", "{x")
    assert done.returncode == 2
    assert "the arguments are not JSON" in done.stdout
    assert "Traceback" not in done.stderr
