"""Workspace scopes on real files: each conversation (or agent) works in its own folder under
the root, through the real file and shell handlers; escapes into a sibling folder are refused
like any other, hostile conversation ids stay inside, and ``shared`` is the root as before."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.config import FileToolsConfig, ShellToolConfig, ToolsConfig
from bot.store import Store
from bot.tools.builtin import builtin_tools
from bot.tools.builtin.file_reading import file_list_tool, file_read_tool, file_search_tool
from bot.tools.builtin.file_writing import file_edit_tool, file_write_tool
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.builtin.scopes import NAME_CHARS, WorkspaceScope, safe_name, scope_folder
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolEnvironmentError, ToolOutput, ToolSpec
from tests.tools.builtin.conftest import make_context

CFG = FileToolsConfig()
# The folder is chosen the same way with or without the OS sandbox; run without it here.
UNSANDBOXED = ShellToolConfig.model_validate(
    {"sandbox": "none"} if "sandbox" in ShellToolConfig.model_fields else {}
)
ALPHA = make_context(channel="slack.team", conversation="C-ALPHA")
BETA = make_context(channel="slack.team", conversation="C-BETA")


async def call(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler(arguments, context)
    return result.text if isinstance(result, ToolOutput) else result


def scoped(root: Path, scope: WorkspaceScope = "conversation") -> Workspace:
    return Workspace(root=root, scope=scope)


def folder_of(root: Path, context: ToolContext, scope: WorkspaceScope = "conversation") -> Path:
    relative = scope_folder(scope, channel=context.channel, conversation_id=context.conversation_id)
    return root / relative


def real(path: Path) -> Path:
    return path.resolve()


def files_named(root: Path, name: str) -> list[Path]:
    return sorted(root.rglob(name))


async def write(ws: Workspace, context: ToolContext, path: str, content: str) -> str:
    return await call(file_write_tool(ws, CFG), {"path": path, "content": content}, context)


async def read(ws: Workspace, context: ToolContext, path: str) -> str:
    return await call(file_read_tool(ws, CFG), {"path": path}, context)


async def test_two_conversations_writing_one_name_get_two_files(workspace_dir: Path) -> None:
    ws = scoped(workspace_dir)
    await write(ws, ALPHA, "notes.txt", "alpha's plan\n")
    await write(ws, BETA, "notes.txt", "beta's plan\n")
    alpha_file = folder_of(workspace_dir, ALPHA) / "notes.txt"
    beta_file = folder_of(workspace_dir, BETA) / "notes.txt"
    assert alpha_file.read_text() == "alpha's plan\n"
    assert beta_file.read_text() == "beta's plan\n"
    assert alpha_file.parent != beta_file.parent
    assert not (workspace_dir / "notes.txt").exists()
    assert "alpha's plan" in await read(ws, ALPHA, "notes.txt")
    assert "beta's plan" in await read(ws, BETA, "notes.txt")
    await call(
        file_edit_tool(ws, CFG),
        {"path": "notes.txt", "old_text": "plan", "new_text": "idea"},
        ALPHA,
    )
    assert alpha_file.read_text() == "alpha's idea\n"
    assert beta_file.read_text() == "beta's plan\n"


async def test_a_conversation_cannot_reach_a_sibling_folder(workspace_dir: Path) -> None:
    ws = scoped(workspace_dir)
    await write(ws, BETA, "secret.txt", "beta only\n")
    await write(ws, ALPHA, "mine.txt", "alpha\n")
    alpha, beta = folder_of(workspace_dir, ALPHA), folder_of(workspace_dir, BETA)
    sibling = f"../{beta.name}/secret.txt"
    escapes = [
        sibling,
        f"../../../{beta.relative_to(workspace_dir)}/secret.txt",
        str(beta / "secret.txt"),
        "../../../notes.txt",
        "..",
    ]
    for path in escapes:
        with pytest.raises(ToolRefused, match="outside the workspace"):
            await read(ws, ALPHA, path)
        with pytest.raises(ToolRefused, match="outside the workspace"):
            await write(ws, ALPHA, path, "overwritten")
    assert (beta / "secret.txt").read_text() == "beta only\n"

    # symlinks planted in alpha's folder (say by a command) lead nowhere either
    (alpha / "peek.txt").symlink_to(beta / "secret.txt")
    (alpha / "peek_dir").symlink_to(beta, target_is_directory=True)
    (alpha / "up").symlink_to("..", target_is_directory=True)
    for path in ("peek.txt", "peek_dir/secret.txt", f"up/{beta.name}/secret.txt"):
        with pytest.raises(ToolRefused, match="outside the workspace"):
            await read(ws, ALPHA, path)
        with pytest.raises(ToolRefused, match="outside the workspace"):
            await write(ws, ALPHA, path, "overwritten")
    assert (beta / "secret.txt").read_text() == "beta only\n"

    listing = await call(file_list_tool(ws, CFG), {"path": ".", "depth": 5}, ALPHA)
    assert "mine.txt" in listing and "secret" not in listing
    found = await call(file_search_tool(ws, CFG), {"pattern": "beta only"}, ALPHA)
    assert found.startswith("[no matches")


async def test_shared_is_the_root_as_before(workspace_dir: Path) -> None:
    ws = scoped(workspace_dir, "shared")
    await write(ws, ALPHA, "notes.txt", "one file for everyone\n")
    assert (workspace_dir / "notes.txt").read_text() == "one file for everyone\n"
    assert "one file for everyone" in await read(ws, BETA, "notes.txt")
    assert sorted(os.listdir(workspace_dir)) == ["notes.txt"]
    assert ws.for_call(BETA).real_root() == real(workspace_dir)
    with pytest.raises(ToolRefused, match="outside the workspace"):
        await read(ws, ALPHA, "../outside.txt")


async def test_agent_scope_is_one_folder_for_every_conversation(workspace_dir: Path) -> None:
    ws = scoped(workspace_dir, "agent")
    await write(ws, ALPHA, "todo.txt", "from alpha\n")
    assert "from alpha" in await read(ws, make_context(channel="telegram.main"), "todo.txt")
    (folder,) = (workspace_dir / "agents").iterdir()
    assert folder.name.startswith("default-")
    assert (folder / "todo.txt").exists() and not (workspace_dir / "todo.txt").exists()


async def test_threads_and_scheduled_runs_use_their_conversation_folder(
    workspace_dir: Path,
) -> None:
    ws = scoped(workspace_dir)
    await write(ws, make_context(conversation="C-ALPHA", thread="T-1"), "thread.txt", "t\n")
    same = [
        make_context(conversation="C-ALPHA"),
        make_context(conversation="C-ALPHA", thread="T-2"),
        make_context(conversation="C-ALPHA", background=True),
    ]
    for context in same:
        assert ws.for_call(context).root == folder_of(workspace_dir, ALPHA)
        assert await read(ws, context, "thread.txt")
    with pytest.raises(ToolFailed, match="does not exist"):
        await read(ws, BETA, "thread.txt")


HOSTILE_IDS = [
    "..",
    ".",
    "",
    "../../../../etc",
    "/etc/passwd",
    "a/../../b",
    "..\\..\\windows",
    "nul\0byte",
    "\u202eexe.txt",  # right-to-left override
    "Ｃ０１",  # fullwidth letters that NFKC would fold to C01
    "🙂" * 300,
    "-rf --no-preserve-root",
    ".hidden",
    "x" * 5000,
    "line\nbreak\ttab",
    "\udcff",  # a lone surrogate
]


@pytest.mark.parametrize("conversation", HOSTILE_IDS)
async def test_hostile_conversation_ids_stay_inside(workspace_dir: Path, conversation: str) -> None:
    ws = scoped(workspace_dir)
    context = make_context(channel="slack.../../x", conversation=conversation)
    text = await write(ws, context, "f.txt", "kept\n")
    assert text.startswith("created f.txt")
    (written,) = files_named(workspace_dir, "f.txt")
    relative = written.relative_to(workspace_dir).parts
    assert relative[0] == "conversations" and len(relative) == 4
    for part in relative[1:3]:
        assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", part), part
        assert len(part) <= NAME_CHARS + 13
    assert written.parent == ws.for_call(context).root


def test_names_that_clean_up_alike_stay_apart() -> None:
    ids = ["a/b", "a_b", "a b", "a\0b", "a..b", "A/B"]
    folders = {scope_folder("conversation", channel="slack.team", conversation_id=i) for i in ids}
    assert len(folders) == len(ids)
    same_id_other_channel = {
        scope_folder("conversation", channel=channel, conversation_id="C1")
        for channel in ("slack.team", "slack.other", "discord.team")
    }
    assert len(same_id_other_channel) == 3
    assert safe_name("C0123ABC") == "C0123ABC"
    assert safe_name("-100123") == "100123"


async def test_folders_are_made_on_first_use_private(workspace_dir: Path) -> None:
    ws = scoped(workspace_dir)
    assert os.listdir(workspace_dir) == []
    with pytest.raises(ToolFailed):
        await read(ws, ALPHA, "nothing-yet.txt")  # a read is a use too
    folder = folder_of(workspace_dir, ALPHA)
    assert folder.is_dir()
    level = folder
    while level != workspace_dir:
        assert stat.S_IMODE(level.stat().st_mode) == 0o700, level
        level = level.parent
    assert not folder_of(workspace_dir, BETA).exists()


async def test_a_symlink_in_the_folder_chain_is_refused(
    workspace_dir: Path, outside_dir: Path
) -> None:
    (workspace_dir / "conversations").symlink_to(outside_dir, target_is_directory=True)
    ws = scoped(workspace_dir)
    with pytest.raises(ToolEnvironmentError, match="not a directory"):
        await write(ws, ALPHA, "f.txt", "x")
    assert sorted(os.listdir(outside_dir)) == ["secret.txt"]


async def test_shell_runs_in_the_conversation_folder(workspace_dir: Path) -> None:
    ws = scoped(workspace_dir)
    shell = shell_tool(ws, UNSANDBOXED, grace_s=0.3)
    await call(shell, {"command": "echo alpha > mine.txt"}, ALPHA)
    text = await call(shell, {"command": "pwd; ls; echo $PWD"}, BETA)
    beta = real(folder_of(workspace_dir, BETA))
    assert text.splitlines() == ["exit code 0", str(beta), str(beta)]  # ls: empty
    assert (folder_of(workspace_dir, ALPHA) / "mine.txt").read_text() == "alpha\n"


async def test_the_catalog_passes_the_configured_scope(tmp_path: Path, store: Store) -> None:
    root = tmp_path / "ws"
    for scope, expected in (("conversation", "conversations"), ("shared", "notes.txt")):
        config = ToolsConfig.model_validate({"workspace": {"scope": scope}})
        specs = {s.name: s for s in builtin_tools(config, store=store, outbox=None, workspace=root)}
        await call(specs["file_write"], {"path": "notes.txt", "content": "x"}, ALPHA)
        assert expected in os.listdir(root)
    assert ToolsConfig().workspace.scope == "conversation"
