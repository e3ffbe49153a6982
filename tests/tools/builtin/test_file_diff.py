"""File changes shown as a bounded diff, and the approval bound to the file's content: the
pure diff on the awkward inputs, then through the real pipeline, the real approval service
and the fake channel's card, on a real workspace folder and a real SQLite store."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bot.approval.audit import to_jsonl
from bot.approval.gate import call_fingerprint
from bot.approval.service import ApprovalService
from bot.approval.summary import MAX_DIFF_LINES, describe
from bot.config import FileToolsConfig
from bot.providers.base import ToolCallRequest
from bot.store import Store
from bot.store.audit import Decision
from bot.tools.builtin.file_diff import (
    ABSENT,
    HEAD_LINES,
    MAX_DIFF_BYTES,
    Snapshot,
    content_hash,
    snapshot,
)
from bot.tools.builtin.file_diff import change_lines as diff_of
from bot.tools.builtin.file_writing import file_edit_tool, file_write_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.outcome import OutcomeReason
from bot.webconsole.outcomes import call_outcome
from tests.approval.conftest import APPROVER, make_envelope, make_settings, until_waiting
from tests.fakes.channel import FakeChannel, clicked
from tests.tools.harness import Harness


def change_lines(path: str, old: bytes | None, new: bytes) -> tuple[str, ...]:
    return diff_of(path, Snapshot.of(old), new)


def test_a_change_is_a_unified_diff() -> None:
    lines = change_lines("a.txt", b"one\ntwo\nthree\n", b"one\n2\nthree\n")
    assert lines == (
        "--- a.txt (now)",
        "+++ a.txt (after)",
        "@@ -1,3 +1,3 @@",
        " one",
        "-two",
        "+2",
        " three",
    )


def test_a_new_file_says_so_and_shows_its_head() -> None:
    body = "".join(f"line {i}\n" for i in range(HEAD_LINES + 5))
    lines = change_lines("n.txt", None, body.encode())
    assert lines[0] == f"new file: n.txt ({len(body):,} bytes, {HEAD_LINES + 5} lines)"
    assert lines[1] == "+line 0"
    assert len(lines) == 1 + HEAD_LINES + 1
    assert lines[-1] == "… and 5 more line(s) of the new file"


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (b"a\xff\xfeb", b"text\n", "binary file: f, 4 bytes → 5 bytes (not shown as a diff)"),
        (b"text\n", b"a\0b", "binary content: f, 5 bytes → 3 bytes (not shown as a diff)"),
        (
            b"x" * (MAX_DIFF_BYTES + 1),
            b"y",
            f"too large to diff: f, {MAX_DIFF_BYTES + 1:,} bytes → 1 byte",
        ),
        (b"same\n", b"same\n", "no change: f already holds this content (5 bytes)"),
    ],
)
def test_what_is_not_diffed_says_what_it_is(old: bytes, new: bytes, expected: str) -> None:
    assert change_lines("f", old, new) == (expected,)


def test_crlf_and_a_missing_final_newline_are_visible_on_the_card() -> None:
    lines = change_lines("w.txt", b"a\r\nb\r\n", b"a\r\nc")
    assert "-b\r" in lines
    assert lines[-2:] == ("+c", "\\ No newline at end of file")
    shown = describe({"path": "w.txt"}, diff=lines)
    assert "-b\\r" in shown.lines  # escaped, not obeyed


def test_a_diff_is_masked_escaped_and_bounded_on_the_card() -> None:
    old = "".join(f"v{i}\n" for i in range(200)).encode()
    new = b"token=s3cr3tvalue \xe2\x80\xae evil\n" + old.replace(b"v", b"w")
    view = describe({"path": "f"}, diff=change_lines("f", old, new))
    assert "s3cr3tvalue" not in view.full and "\u202e" not in view.full
    assert "\\u202e" in view.full
    assert view.cut  # more than the card shows: approvable only from the full view
    assert len(view.lines) == 1 + MAX_DIFF_LINES + 1
    assert view.lines[-1].endswith("more line(s) below: the full view shows them all]")
    assert view.full.count("\n+w") == 200


def test_a_diff_past_its_deadline_says_so() -> None:
    lines = diff_of("f", Snapshot.of(b"a\n"), b"b\n", deadline=0.0)
    assert lines == ("too slow to diff (over 2 s): f, 2 bytes → 2 bytes",)


def test_a_large_file_is_hashed_whole_and_not_kept(tmp_path: Path) -> None:
    big = tmp_path / "big.log"
    data = b"x" * (3 * 1024 * 1024 + 5)
    big.write_bytes(data)
    shot = snapshot(big)
    assert (shot.size, shot.data, shot.digest) == (len(data), None, content_hash(data))
    assert diff_of("big.log", shot, b"y") == (
        f"too large to diff: big.log, {len(data):,} bytes → 1 byte",
    )
    assert snapshot(tmp_path / "none") == Snapshot(exists=False)


def test_a_call_without_a_binding_keeps_its_version_1_fingerprint() -> None:
    """A row written by the previous release still matches its call (a rolling upgrade)."""
    import hashlib

    expected = hashlib.sha256(b'shell\0{"command":"ls"}').hexdigest()
    assert call_fingerprint("shell", {"command": "ls"}) == expected


def test_a_binding_makes_a_versioned_fingerprint() -> None:
    arguments = {"path": "a", "content": "b"}
    plain = call_fingerprint("file_write", arguments)
    bound = call_fingerprint("file_write", arguments, content_hash(b"old"))
    assert not plain.startswith("2:") and bound.startswith("2:")
    assert bound != call_fingerprint("file_write", arguments, content_hash(b"other"))
    assert call_fingerprint("file_write", arguments, ABSENT) != bound


# -- through the pipeline ---------------------------------------------------------------------


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    root = tmp_path / "workspace"
    root.mkdir()
    return Workspace(root=root, allow_sensitive_files=False, scope="shared")


def _harness(store: Store, channel: FakeChannel, workspace: Workspace) -> Harness:
    cfg = FileToolsConfig()
    service = ApprovalService(
        make_settings(), store, {channel.ref: channel}.get, poll_interval_s=0.02
    )
    specs = [file_write_tool(workspace, cfg), file_edit_tool(workspace, cfg)]
    return Harness(store, specs, gate=service, envelope=make_envelope())


def _call(tool: str, **arguments: object) -> ToolCallRequest:
    return ToolCallRequest(id="c1", name=tool, arguments=json.dumps(arguments))


async def test_an_edit_card_shows_the_diff_and_the_approved_edit_runs(
    store: Store, workspace: Workspace
) -> None:
    channel = FakeChannel(make_envelope().channel)
    target = workspace.root / "notes.txt"
    target.write_text("alpha\nbeta\n", encoding="utf-8")
    harness = _harness(store, channel, workspace)
    task = harness.run_task(_call("file_edit", path="notes.txt", old_text="beta", new_text="gamma"))
    posted = await channel.next_card()
    await until_waiting(store, posted.card.approval_id)
    assert posted.card.lines[-6:] == (
        "--- notes.txt (now)",
        "+++ notes.txt (after)",
        "@@ -1,2 +1,2 @@",
        " alpha",
        "-beta",
        "+gamma",
    )
    service = harness.gate
    assert isinstance(service, ApprovalService)
    await clicked(service, channel.click(posted, APPROVER))
    report = await task
    assert report.outcomes[0].reason is OutcomeReason.NONE
    assert target.read_text(encoding="utf-8") == "alpha\ngamma\n"
    row = await store.approvals.get(posted.card.approval_id)
    assert row is not None and row.fingerprint.startswith("2:")


@pytest.mark.parametrize("tool", ["file_edit", "file_write"])
async def test_a_file_changed_after_the_card_is_not_written(
    store: Store, workspace: Workspace, tool: str
) -> None:
    channel = FakeChannel(make_envelope().channel)
    target = workspace.root / "notes.txt"
    target.write_text("alpha\nbeta\n", encoding="utf-8")
    harness = _harness(store, channel, workspace)
    arguments: dict[str, object] = (
        {"path": "notes.txt", "old_text": "alpha", "new_text": "ALPHA"}
        if tool == "file_edit"
        else {"path": "notes.txt", "content": "replaced\n"}
    )
    task = harness.run_task(_call(tool, **arguments))
    posted = await channel.next_card()
    await until_waiting(store, posted.card.approval_id)
    # someone else changes the file while the card waits
    await asyncio.to_thread(target.write_text, "alpha\nbeta\nsomeone else's line\n")
    service = harness.gate
    assert isinstance(service, ApprovalService)
    await clicked(service, channel.click(posted, APPROVER))
    (outcome,) = (await task).outcomes
    assert outcome.reason is OutcomeReason.FILE_CHANGED
    assert outcome.observation.startswith(f"Not executed: {tool!r} was approved, but the file")
    assert "Read the file again" in outcome.observation
    assert target.read_text(encoding="utf-8") == "alpha\nbeta\nsomeone else's line\n"
    # the audit log has the person's yes and then the runtime's refusal, with its reason
    approved, refused = (e for e in await store.audit.since() if e.tool == tool)
    assert (approved.decision, approved.decided_by) == (Decision.APPROVED, APPROVER)
    assert (refused.decision, refused.decided_by) == (Decision.AUTO_DENIED, "runtime")
    assert refused.reason == "file changed"
    assert refused.fingerprint == approved.fingerprint and refused.call_id == "c1"
    assert refused.turn_id == approved.turn_id
    # the call's row keeps the refusal, which the console words
    (row,) = await store.tool_calls.for_turn(harness.turn_id)
    assert call_outcome(row).label == (
        "refused by the runtime: the file changed after the card showed its diff"
    )
    assert json.loads(to_jsonl([refused]))["reason"] == "file changed"  # hatchway audit


async def test_a_path_outside_the_workspace_is_refused_with_no_card(
    store: Store, workspace: Workspace
) -> None:
    channel = FakeChannel(make_envelope().channel)
    harness = _harness(store, channel, workspace)
    report = await harness.run(_call("file_write", path="../escape.txt", content="x"))
    (outcome,) = report.outcomes
    assert outcome.reason is OutcomeReason.BAD_ARGUMENTS
    assert "outside the workspace" in outcome.observation
    assert channel.posted == []
    assert not (workspace.root.parent / "escape.txt").exists()


async def test_a_new_file_card_says_so(store: Store, workspace: Workspace) -> None:
    channel = FakeChannel(make_envelope().channel)
    harness = _harness(store, channel, workspace)
    task = harness.run_task(_call("file_write", path="new.txt", content="hello\nworld\n"))
    posted = await channel.next_card()
    await until_waiting(store, posted.card.approval_id)
    assert "new file: new.txt (12 bytes, 2 lines)" in posted.card.lines
    assert posted.card.lines[-2:] == ("+hello", "+world")
    service = harness.gate
    assert isinstance(service, ApprovalService)
    await clicked(service, channel.click(posted, APPROVER))
    await task
    assert (workspace.root / "new.txt").read_text(encoding="utf-8") == "hello\nworld\n"


# -- a file to be sent ------------------------------------------------------------------------


async def test_a_sent_file_shows_its_type_size_and_head(workspace: Workspace) -> None:
    from bot.tools.builtin.file_diff import SENT_HEAD_LINES, current_hash, preview_sent
    from tests.tools.harness import make_context

    context = make_context()
    body = "".join(f"row {i}, token=abcdef{i}\n" for i in range(SENT_HEAD_LINES + 3))
    (workspace.root / "report.csv").write_text(body, encoding="utf-8")
    shown = await preview_sent(workspace, context, "report.csv")
    assert shown.diff[0] == (
        f"content: text/csv, text, {len(body):,} bytes, {SENT_HEAD_LINES + 3} lines; its head:"
    )
    assert shown.diff[1] == "| row 0, token=abcdef0"
    assert shown.diff[-1] == "… and 3 more line(s)"
    view = describe({"path": "report.csv"}, diff=shown.diff)
    assert "abcdef0" not in view.full  # masked on the card like any argument
    assert shown.binding == current_hash(workspace, context, "report.csv")
    (workspace.root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0")
    assert (await preview_sent(workspace, context, "image.png")).diff == (
        "content: image/png, binary, 10 bytes",
    )
    assert (await preview_sent(workspace, context, "../x")).refusal
    assert current_hash(workspace, context, "../x").startswith("unresolvable:")


# -- bad input: what a card says of files a diff cannot or should not show -----------------------

_MB = 1024 * 1024


@pytest.mark.parametrize(
    ("before", "call", "expected"),
    [
        pytest.param(
            b"caf\xe9\nline two\n",
            {"old_text": "line", "new_text": "row"},
            ("f.txt is not UTF-8 text (14 bytes): no diff",),
            id="edit-of-invalid-utf8",
        ),
        pytest.param(
            b"caf\xe9\n",
            {"content": "caf\u00e9\n"},
            ("binary file: f.txt, 5 bytes → 6 bytes (not shown as a diff)",),
            id="write-over-invalid-utf8",
        ),
        pytest.param(
            b"one\r\ntwo\r\n",
            {"old_text": "two", "new_text": "2"},
            ("@@ -1,2 +1,2 @@", " one\r", "-two\r", "+2\r"),
            id="edit-keeps-crlf-visible",
        ),
        pytest.param(
            b"one\ntwo",
            {"old_text": "two", "new_text": "2"},
            ("-two", "\\ No newline at end of file", "+2", "\\ No newline at end of file"),
            id="edit-without-final-newline",
        ),
        pytest.param(
            b"x\n" * (3 * _MB),
            {"content": "y\n" * _MB},
            (f"too large to diff: f.txt, {6 * _MB:,} bytes → {2 * _MB:,} bytes",),
            id="write-of-megabytes-over-megabytes",
        ),
        pytest.param(
            b"x\n" * (3 * _MB),
            {"old_text": "x", "new_text": "y", "replace_all": True},
            (f"f.txt is too large to diff ({6 * _MB:,} bytes): no diff",),
            id="edit-of-megabytes",
        ),
        pytest.param(
            b"a\n" * 6_000,
            {"old_text": "a", "new_text": "b", "replace_all": True},
            ("too large to diff: f.txt, 12,000 bytes → 12,000 bytes",),
            id="edit-over-the-line-limit",
        ),
    ],
)
async def test_a_bad_file_gets_a_clear_line_on_the_card(
    workspace: Workspace, before: bytes, call: dict[str, object], expected: tuple[str, ...]
) -> None:
    """The preview the card gets, from the file on disk: never a crash, never more than the
    diff limit held, and what it could not diff said in one line with the sizes."""
    from bot.tools.builtin.file_diff import preview, preview_edit
    from tests.tools.harness import make_context

    context = make_context()
    (workspace.root / "f.txt").write_bytes(before)
    if "content" in call:
        shown = await preview(workspace, context, "f.txt", str(call["content"]))
    else:
        change = (str(call["old_text"]), str(call["new_text"]), bool(call.get("replace_all")))
        shown = await preview_edit(workspace, context, "f.txt", change)
    lines = shown.diff or shown.notes
    assert lines[-len(expected) :] == expected
    assert shown.binding == content_hash(before)  # bound to the file as it was read
    view = describe({"path": "f.txt"}, notes=shown.notes, diff=shown.diff)
    assert "\r" not in view.full and len(view.full) < 10_000  # escaped and bounded
