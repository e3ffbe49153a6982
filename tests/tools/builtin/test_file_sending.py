"""``send_file``: a workspace file uploaded through the daemon's outbox (``ChannelOutbox``) to
the in-process channel, every check made before the upload, the caption scrubbed, approval
only for another conversation, and the approver shown the file, its size and the target."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.approval.summary import describe
from bot.channel import Channel
from bot.config import Settings, parse_settings
from bot.envelope import ChannelRef, DeliveryTarget
from bot.outbox import ChannelOutbox
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.tools.builtin.file_sending import send_file_tool
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.builtin.workspace import Workspace
from bot.tools.outcome import OutcomeStatus
from bot.tools.spec import ToolContext, ToolKind, ToolOutput, ToolSpec
from tests.fakes.channel import FakeChannel, UploadChannel
from tests.tools.builtin.conftest import ORIGIN
from tests.tools.gates import PolicyGate
from tests.tools.harness import Harness

SLACK = ChannelRef(kind="slack", alias="team")
CONSOLE = ChannelRef(kind="console", alias="main")
REPORT = b"day,count\n1,2\n"


def outbox_over(*channels: FakeChannel) -> ChannelOutbox:
    settings: Settings = parse_settings(
        {
            "channels": {
                "slack": {
                    "team": {"group_policy": "allowlist", "allowed_conversations": ["C-OTHER"]}
                }
            }
        },
        environ={},
        require_provider=False,
    )
    running: dict[ChannelRef, Channel] = {c.ref: c for c in channels}
    return ChannelOutbox(lambda: settings, running.get)


@pytest.fixture
def files(workspace_dir: Path) -> Path:
    (workspace_dir / "report.csv").write_bytes(REPORT)
    return workspace_dir


@pytest.fixture
def slack() -> UploadChannel:
    return UploadChannel(SLACK)


async def call(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler(arguments, context)
    return result.text if isinstance(result, ToolOutput) else result


def test_policy_fields(slack: UploadChannel, workspace: Workspace) -> None:
    spec = send_file_tool(outbox_over(slack), workspace)
    assert spec.channel_aware and spec.kind is ToolKind.WRITE
    assert spec.path_arguments == ("path",)
    assert spec.approval_check is not None
    properties = spec.parameters["properties"]
    assert isinstance(properties, Mapping)
    assert {"path", "caption", "name", "channel", "to", "thread"} <= set(properties)


async def test_a_file_goes_to_the_conversation_it_was_asked_in(
    slack: UploadChannel, workspace: Workspace, files: Path, context: ToolContext
) -> None:
    arguments = {"path": "report.csv", "caption": "the key sk-abcdefghijklmnopqrstuvwx"}
    text = await call(send_file_tool(outbox_over(slack), workspace), arguments, context)

    assert text == "sent report.csv (14 bytes) to slack.team:C-ORIGIN (thread T-1)"
    (upload,) = slack.uploads
    assert (upload.target, upload.name, upload.data) == (ORIGIN, "report.csv", REPORT)
    assert upload.caption == "the key ***"


async def test_the_name_shown_is_a_plain_file_name(
    slack: UploadChannel, workspace: Workspace, files: Path, context: ToolContext
) -> None:
    arguments = {"path": "report.csv", "name": "../../etc/passwd\nsummary.csv"}
    await call(send_file_tool(outbox_over(slack), workspace), arguments, context)
    (upload,) = slack.uploads
    assert upload.name == "_.._etc_passwd_summary.csv"


async def test_a_file_over_the_channels_limit_is_not_uploaded(
    workspace: Workspace, files: Path, context: ToolContext
) -> None:
    small = UploadChannel(SLACK, upload_max=10)
    spec = send_file_tool(outbox_over(small), workspace)
    with pytest.raises(ToolFailed, match=r"report\.csv is 14 bytes, over the 10 bytes slack\.team"):
        await call(spec, {"path": "report.csv"}, context)
    assert small.uploads == []


async def test_a_channel_that_posts_no_files_says_so(
    workspace: Workspace, files: Path, context: ToolContext
) -> None:
    text_only = FakeChannel(SLACK)
    spec = send_file_tool(outbox_over(text_only), workspace)
    with pytest.raises(ToolFailed, match=r"slack\.team cannot post files: nothing was sent"):
        await call(spec, {"path": "report.csv"}, context)
    assert text_only.sent == []


async def test_a_refused_upload_is_a_failed_call_with_the_platforms_sentence(
    slack: UploadChannel, workspace: Workspace, files: Path, context: ToolContext
) -> None:
    slack.refusing = "this file type is not allowed here"
    spec = send_file_tool(outbox_over(slack), workspace)
    with pytest.raises(ToolFailed, match=r"upload of report\.csv failed: this file type is not"):
        await call(spec, {"path": "report.csv"}, context)


@pytest.mark.parametrize(
    ("path", "error", "message"),
    [
        ("missing.csv", ToolFailed, r"missing\.csv does not exist"),
        ("folder", ToolFailed, "folder is a directory"),
        ("empty.txt", ToolFailed, r"empty\.txt is empty"),
        ("../outside/secret.txt", ToolRefused, "outside the workspace"),
        ("leak.txt", ToolRefused, "outside the workspace"),  # a symlink out of it
        (".env", ToolRefused, "holding secrets"),
    ],
)
async def test_what_cannot_be_sent_is_said_before_any_upload(
    slack: UploadChannel,
    workspace: Workspace,
    files: Path,
    outside_dir: Path,
    context: ToolContext,
    path: str,
    error: type[Exception],
    message: str,
) -> None:
    (files / "folder").mkdir()
    (files / "empty.txt").write_bytes(b"")
    (files / "leak.txt").symlink_to(outside_dir / "secret.txt")
    (files / ".env").write_text("TOKEN=1\n")
    spec = send_file_tool(outbox_over(slack), workspace)
    with pytest.raises(error, match=message):
        await call(spec, {"path": path}, context)
    assert slack.uploads == []


async def test_another_conversation_must_be_one_the_outbox_allows(
    slack: UploadChannel, workspace: Workspace, files: Path, context: ToolContext
) -> None:
    spec = send_file_tool(outbox_over(slack), workspace)
    with pytest.raises(ToolRefused, match="not a conversation this bot can post to"):
        await call(spec, {"path": "report.csv", "to": "C-SOMEWHERE"}, context)
    await call(spec, {"path": "report.csv", "to": "C-OTHER", "thread": "T-1"}, context)
    (upload,) = slack.uploads
    assert (upload.target.conversation_id, upload.target.thread_id) == ("C-OTHER", None)


def request(arguments: Mapping[str, object]) -> ToolCallRequest:
    return ToolCallRequest(id="c1", name="send_file", arguments=json.dumps(arguments))


async def test_the_pipeline_sends_here_without_asking(
    store: Store, workspace: Workspace, files: Path
) -> None:
    console = UploadChannel(CONSOLE)
    gate = PolicyGate()
    harness = Harness(
        store, [send_file_tool(outbox_over(console), workspace)], gate=gate, workspace=str(files)
    )
    report = await harness.run(request({"path": "report.csv"}))

    assert report.outcomes[0].ok
    assert gate.asked == []
    (upload,) = console.uploads
    here = DeliveryTarget(channel=CONSOLE, conversation_id="c1", thread_id="t1")
    assert (upload.target, upload.data) == (here, REPORT)


async def test_the_approver_sees_the_file_its_size_and_where_it_goes(
    store: Store, workspace: Workspace, files: Path
) -> None:
    console = UploadChannel(CONSOLE)
    gate = PolicyGate()
    harness = Harness(
        store, [send_file_tool(outbox_over(console), workspace)], gate=gate, workspace=str(files)
    )
    report = await harness.run(request({"path": "report.csv", "to": "c2"}))

    assert report.outcomes[0].status is OutcomeStatus.EXECUTED
    (asked,) = gate.asked
    lines = describe(asked.arguments, notes=asked.notes).lines
    assert "file: report.csv, 14 bytes" in lines
    assert "to: console.main:c2" in lines
    assert [u.target.conversation_id for u in console.uploads] == ["c2"]


async def test_the_approver_is_told_when_the_file_cannot_be_found(
    store: Store, workspace: Workspace, files: Path
) -> None:
    console = UploadChannel(CONSOLE)
    gate = PolicyGate()
    harness = Harness(
        store, [send_file_tool(outbox_over(console), workspace)], gate=gate, workspace=str(files)
    )
    report = await harness.run(request({"path": "nope.csv", "to": "c2"}))

    (asked,) = gate.asked
    assert "file: nope.csv (nope.csv does not exist in the workspace)" in asked.notes
    assert report.outcomes[0].failed and console.uploads == []
