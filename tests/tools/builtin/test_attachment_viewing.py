"""``view_attachment``: a file sent earlier in this conversation, found by its id or name in
the real ``attachments`` table, an image read again from the bot's copy and made fit for the
model, any other file described with where the workspace has it; another session's files are
out of reach."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import pytest
from PIL import Image

from bot.attachments.lines import IMAGE_AGAIN
from bot.attachments.naming import human_size
from bot.store import Store
from bot.store.attachments import AttachmentKind, AttachmentRecord
from bot.tools.builtin.attachment_viewing import view_attachment_tool
from bot.tools.builtin.observation import ToolFailed
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolKind, ToolOutput, ToolResult, ToolSpec
from tests.fakes.scripted_provider import call
from tests.tools.harness import Harness, make_envelope

SESSION = "slack.team:C-ORIGIN"  # the session of the conftest's context
_ids = itertools.count(1)
_clock = itertools.count(1_000)


def png(size: tuple[int, int], colour: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, format="PNG")
    return out.getvalue()


def _overwrite(path: str, data: bytes | None) -> None:
    """Write ``data`` at ``path``, or delete the file for None (a tool or a sweep did)."""
    if data is None:
        Path(path).unlink()
    else:
        Path(path).write_bytes(data)


def _loop_in_place(path: str) -> None:
    """A symlink to itself where the file at ``path`` was (a tool left it)."""
    Path(path).unlink()
    Path(path).symlink_to(path)


class Saved:
    """Files saved as the turn that received them saves them: the bot's copy under the state
    directory, another in the workspace, and a row."""

    def __init__(self, store: Store, state: Path, workspace: Path) -> None:
        self.store = store
        self.state = state
        self.workspace = workspace
        (state / "attachments").mkdir(parents=True)
        (workspace / "attachments").mkdir(parents=True)

    async def add(
        self,
        name: str,
        data: bytes,
        kind: AttachmentKind,
        mime: str,
        *,
        session: str = SESSION,
        in_workspace: bool = True,
    ) -> AttachmentRecord:
        attachment_id = f"{next(_ids):012x}"
        path = self.state / "attachments" / f"{attachment_id}-{name}"
        path.write_bytes(data)
        copy = self.workspace / "attachments" / f"{attachment_id}-{name}"
        if in_workspace:
            copy.write_bytes(data)
        record = AttachmentRecord(
            id=attachment_id,
            session_key=session,
            turn_id="turn-1",
            channel=session.split(":")[0],
            conversation_id=session.split(":")[1],
            user_id="U_ALICE",
            name=name,
            kind=kind,
            mime_type=mime,
            size=len(data),
            path=str(path),
            workspace_path=str(copy) if in_workspace else None,
            created_at=float(next(_clock)),
        )
        await self.store.attachments.record(record)
        return record


@pytest.fixture
def saved(store: Store, tmp_path: Path, workspace_dir: Path) -> Saved:
    return Saved(store, tmp_path / "state", workspace_dir)


@pytest.fixture
def tool(store: Store, workspace: Workspace) -> ToolSpec:
    return view_attachment_tool(store.attachments, workspace)


async def view(spec: ToolSpec, wanted: str, context: ToolContext) -> ToolResult:
    assert spec.handler is not None
    return await spec.handler({"attachment": wanted}, context)


def test_policy_fields(tool: ToolSpec) -> None:
    assert tool.requires_approval is False
    assert tool.kind is ToolKind.READ_ONLY and tool.concurrency_safe


async def test_an_image_named_by_its_id_is_shown_again(
    tool: ToolSpec, saved: Saved, context: ToolContext
) -> None:
    record = await saved.add("screen.png", png((40, 30)), AttachmentKind.IMAGE, "image/png")
    result = await view(tool, record.id, context)
    assert await view(tool, f"attachment {record.id}", context) == result

    assert isinstance(result, ToolOutput)
    assert result.text == (
        f"image screen.png (attachment {record.id}; image/png, {record.size} bytes) is "
        "attached to this result (a model that reads no images gets this line alone); "
        f"saved in the workspace as attachments/{record.id}-screen.png"
    )
    (image,) = result.images
    assert image.media_type == "image/png" and image.name == "screen.png"
    with Image.open(io.BytesIO(image.data)) as shown:
        assert shown.size == (40, 30)


async def test_the_bots_own_copy_is_read_and_made_fit_for_the_model(
    tool: ToolSpec, saved: Saved, context: ToolContext
) -> None:
    record = await saved.add("wide.png", png((3200, 100)), AttachmentKind.IMAGE, "image/png")
    assert record.workspace_path is not None
    _overwrite(record.workspace_path, b"changed by a tool")
    result = await view(tool, record.id, context)

    assert isinstance(result, ToolOutput)
    with Image.open(io.BytesIO(result.images[0].data)) as shown:
        assert max(shown.size) == 1568  # the helper's long side


async def test_by_name_the_newest_of_that_name(
    tool: ToolSpec, saved: Saved, context: ToolContext
) -> None:
    await saved.add("chart.png", png((4, 4), "blue"), AttachmentKind.IMAGE, "image/png")
    newer = await saved.add("chart.png", png((6, 6), "green"), AttachmentKind.IMAGE, "image/png")
    result = await view(tool, "Chart.PNG", context)

    assert isinstance(result, ToolOutput)
    assert f"attachment {newer.id};" in result.text
    with Image.open(io.BytesIO(result.images[0].data)) as shown:
        assert shown.size == (6, 6)


async def test_another_sessions_file_is_out_of_reach(
    tool: ToolSpec, saved: Saved, context: ToolContext
) -> None:
    mine = await saved.add("mine.csv", b"a,b\n", AttachmentKind.TEXT, "text/csv")
    theirs = await saved.add(
        "theirs.png", png((4, 4)), AttachmentKind.IMAGE, "image/png", session="slack.team:C-X"
    )
    for wanted in (theirs.id, "theirs.png"):
        with pytest.raises(ToolFailed, match=f"its files: mine.csv \\({mine.id}\\)$"):
            await view(tool, wanted, context)


async def test_a_conversation_without_files_says_so(tool: ToolSpec, context: ToolContext) -> None:
    with pytest.raises(ToolFailed, match="no file was sent in this conversation"):
        await view(tool, "anything", context)


async def test_a_text_file_points_to_file_read(
    tool: ToolSpec, saved: Saved, context: ToolContext
) -> None:
    record = await saved.add("log.txt", b"line\n" * 500, AttachmentKind.TEXT, "text/plain")
    result = await view(tool, record.id, context)

    assert result == (
        f"file log.txt (attachment {record.id}; text/plain, {human_size(2500)}) is not an "
        "image; saved in "
        f"the workspace as attachments/{record.id}-log.txt; read it with file_read"
    )


@pytest.mark.parametrize(
    ("kind", "in_workspace", "ending"),
    [
        (AttachmentKind.BINARY, True, "is not an image or text: nothing to show; saved in"),
        (AttachmentKind.PDF, False, "is not an image; it could not be saved in the workspace"),
    ],
)
async def test_other_files_are_described(
    tool: ToolSpec,
    saved: Saved,
    context: ToolContext,
    kind: AttachmentKind,
    in_workspace: bool,
    ending: str,
) -> None:
    record = await saved.add(
        "blob.bin", b"\x00\x01" * 10, kind, "application/octet-stream", in_workspace=in_workspace
    )
    result = await view(tool, record.id, context)
    assert isinstance(result, str) and ending in result and "file_read" not in result


async def test_a_symlink_loop_in_place_of_the_copy_names_no_daemon_path(
    tool: ToolSpec, saved: Saved, context: ToolContext, workspace_dir: Path
) -> None:
    record = await saved.add("log.txt", b"line\n", AttachmentKind.TEXT, "text/plain")
    _loop_in_place(str(record.workspace_path))
    result = await view(tool, record.id, context)
    assert result == (
        f"file log.txt (attachment {record.id}; text/plain, 5 bytes) is not an image; its "
        "copy in the workspace is gone (a symlink loop is in its place)"
    )
    assert str(workspace_dir) not in str(result)


async def test_an_image_that_cannot_be_read_is_a_clear_failure(
    tool: ToolSpec, saved: Saved, context: ToolContext
) -> None:
    broken = await saved.add(
        "broken.png", b"\x89PNG\r\n\x1a\nnot", AttachmentKind.IMAGE, "image/png"
    )
    gone = await saved.add("gone.png", png((4, 4)), AttachmentKind.IMAGE, "image/png")
    _overwrite(gone.path, None)

    with pytest.raises(ToolFailed, match=f"broken.png \\(attachment {broken.id}.*cannot be shown"):
        await view(tool, broken.id, context)
    with pytest.raises(
        ToolFailed, match=f"cannot be shown: the saved file is no longer there; .*; {IMAGE_AGAIN}$"
    ):
        await view(tool, gone.id, context)


async def test_through_the_pipeline_the_image_rides_with_the_result(
    store: Store, saved: Saved, workspace: Workspace, workspace_dir: Path
) -> None:
    harness = Harness(
        store,
        [view_attachment_tool(store.attachments, workspace)],
        envelope=make_envelope(),
        session_key="console.main:c1",
        workspace=str(workspace_dir),
    )
    record = await saved.add(
        "dot.png", png((2, 2)), AttachmentKind.IMAGE, "image/png", session="console.main:c1"
    )
    report = await harness.run(call("view_attachment", {"attachment": record.id}))

    (outcome,) = report.outcomes
    assert outcome.ok and len(outcome.images) == 1
    assert report.messages[1].images == outcome.images
    assert (await store.history.load("console.main:c1"))[1].images == ()
