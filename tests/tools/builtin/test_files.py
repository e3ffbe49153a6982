"""File tools on real files under tmp_path: reads, listings, searches, writes and edits, all
confined to the workspace, with sensitive files refused."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from bot.config import FileToolsConfig
from bot.tools.builtin.file_reading import file_list_tool, file_read_tool, file_search_tool
from bot.tools.builtin.file_writing import file_edit_tool, file_write_tool
from bot.tools.builtin.observation import ToolFailed, ToolRefused
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolKind, ToolOutput, ToolSpec

CFG = FileToolsConfig()


async def call(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler(arguments, context)
    return result.text if isinstance(result, ToolOutput) else result


@pytest.fixture
def tree(workspace_dir: Path, outside_dir: Path) -> Path:
    (workspace_dir / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (workspace_dir / "src" / "pkg").mkdir(parents=True)
    (workspace_dir / "src" / "app.py").write_text("def main():\n    return 'Hello'\n")
    (workspace_dir / "src" / "pkg" / "deep.py").write_text("HELLO = 1\n")
    (workspace_dir / ".env").write_text("API_TOKEN=hunter2hunter2\n")
    (workspace_dir / "blob.bin").write_bytes(b"\x00\x01\x02hello")
    (workspace_dir / "escape.txt").symlink_to(outside_dir / "secret.txt")
    (workspace_dir / "escape_dir").symlink_to(outside_dir, target_is_directory=True)
    (workspace_dir / "harmless.txt").symlink_to(workspace_dir / ".env")
    return workspace_dir


def test_policy_fields(workspace: Workspace) -> None:
    for factory in (file_read_tool, file_list_tool, file_search_tool):
        spec = factory(workspace, CFG)
        assert spec.requires_approval is False
        assert spec.kind is ToolKind.READ_ONLY
        assert spec.concurrency_safe is True
    for factory in (file_write_tool, file_edit_tool):
        spec = factory(workspace, CFG)
        assert spec.requires_approval is True
        assert spec.kind is ToolKind.WRITE
        assert spec.path_arguments == ("path",)


async def test_read_whole_file_and_range(
    workspace: Workspace, tree: Path, context: ToolContext
) -> None:
    spec = file_read_tool(workspace, CFG)
    whole = await call(spec, {"path": "notes.txt"}, context)
    assert whole.splitlines()[0] == "[notes.txt: lines 1-10 of 10]"
    assert whole.splitlines()[1:] == [f"line {n}" for n in range(1, 11)]
    part = await call(spec, {"path": "notes.txt", "start_line": 3, "end_line": 4}, context)
    assert part.splitlines() == ["[notes.txt: lines 3-4 of 10]", "line 3", "line 4"]


async def test_read_is_capped(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    (workspace_dir / "big.txt").write_text("x" * 99 + "\n" + "y" * 99 + "\n" + "z" * 2000 + "\n")
    spec = file_read_tool(workspace, FileToolsConfig(max_read_bytes=1000))
    text = await call(spec, {"path": "big.txt"}, context)
    assert "lines 1-2 of 3" in text and "read further with start_line=3" in text
    assert "z" not in text


@pytest.mark.parametrize(
    ("path", "message"),
    [("src", "is a directory"), ("missing.txt", "does not exist"), ("blob.bin", "binary")],
)
async def test_read_failures(
    workspace: Workspace, tree: Path, context: ToolContext, path: str, message: str
) -> None:
    with pytest.raises(ToolFailed, match=message):
        await call(file_read_tool(workspace, CFG), {"path": path}, context)


ESCAPES = [
    "../outside/secret.txt",
    "src/../../outside/secret.txt",
    "escape.txt",
    "escape_dir/secret.txt",
    "/etc/passwd",
]


@pytest.mark.parametrize("path", ESCAPES)
async def test_read_refuses_paths_outside(
    workspace: Workspace, tree: Path, context: ToolContext, path: str
) -> None:
    with pytest.raises(ToolRefused, match="outside the workspace"):
        await call(file_read_tool(workspace, CFG), {"path": path}, context)


async def test_absolute_path_outside_is_refused(
    workspace: Workspace, tree: Path, outside_dir: Path, context: ToolContext
) -> None:
    with pytest.raises(ToolRefused, match="outside the workspace"):
        await call(
            file_read_tool(workspace, CFG), {"path": str(outside_dir / "secret.txt")}, context
        )


async def test_absolute_path_inside_is_allowed(
    workspace: Workspace, tree: Path, context: ToolContext
) -> None:
    text = await call(file_read_tool(workspace, CFG), {"path": str(tree / "notes.txt")}, context)
    assert "line 10" in text


@pytest.mark.parametrize("path", ESCAPES)
async def test_write_refuses_paths_outside(
    workspace: Workspace, tree: Path, outside_dir: Path, context: ToolContext, path: str
) -> None:
    before = (outside_dir / "secret.txt").read_text()
    with pytest.raises(ToolRefused, match="outside the workspace"):
        await call(file_write_tool(workspace, CFG), {"path": path, "content": "pwned"}, context)
    assert (outside_dir / "secret.txt").read_text() == before


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        ".env.production",
        "certs/server.pem",
        "tls/server.key",
        "id_rsa",
        "id_ed25519.pub",
        ".git/config",
        ".ssh/config",
        ".aws/credentials",
        ".netrc",
        "harmless.txt",
    ],
)
async def test_sensitive_files_are_refused(
    workspace: Workspace, tree: Path, context: ToolContext, path: str
) -> None:
    target = tree / path
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("secret material\n")
    with pytest.raises(ToolRefused, match="holding secrets"):
        await call(file_read_tool(workspace, CFG), {"path": path}, context)
    with pytest.raises(ToolRefused, match="holding secrets"):
        await call(file_write_tool(workspace, CFG), {"path": path, "content": "x"}, context)


async def test_sensitive_files_allowed_when_configured(
    workspace_dir: Path, tree: Path, context: ToolContext
) -> None:
    (workspace_dir / ".env.local").write_text("NAME=bot\ntoken=hunter2hunter2\n")
    permissive = Workspace(root=workspace_dir, allow_sensitive_files=True)
    text = await call(file_read_tool(permissive, CFG), {"path": ".env.local"}, context)
    assert "NAME=bot" in text
    assert "hunter2hunter2" not in text  # output is still scrubbed


async def test_list_with_glob_and_depth(
    workspace: Workspace, tree: Path, context: ToolContext
) -> None:
    spec = file_list_tool(workspace, CFG)
    listing = (await call(spec, {}, context)).splitlines()
    assert "src/" in listing and "src/pkg/" in listing
    assert any(line.startswith("notes.txt  (") for line in listing)
    assert not any("deep.py" in line for line in listing)  # depth 2 by default
    assert not any(".env" in line or "escape" in line or "harmless" in line for line in listing)
    python = await call(spec, {"glob": "*.py", "depth": 5}, context)
    assert [line.split()[0] for line in python.splitlines()] == ["src/app.py", "src/pkg/deep.py"]


async def test_list_is_capped(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    for n in range(30):
        (workspace_dir / f"f{n:02}.txt").write_text("x")
    spec = file_list_tool(workspace, FileToolsConfig(max_list_entries=10))
    lines = (await call(spec, {}, context)).splitlines()
    assert len(lines) == 11 and lines[-1].startswith("[20 more entries")


async def test_search_substring_regex_and_case(
    workspace: Workspace, tree: Path, context: ToolContext
) -> None:
    spec = file_search_tool(workspace, CFG)
    found = await call(spec, {"pattern": "hello"}, context)
    assert sorted(found.splitlines()) == [
        "src/app.py:2: return 'Hello'",
        "src/pkg/deep.py:1: HELLO = 1",
    ]
    exact = await call(spec, {"pattern": "Hello", "case_sensitive": True}, context)
    assert exact.splitlines() == ["src/app.py:2: return 'Hello'"]
    regex = await call(spec, {"pattern": r"^line 1\d?$", "regex": True}, context)
    assert regex.splitlines() == ["notes.txt:1: line 1", "notes.txt:10: line 10"]


async def test_search_skips_sensitive_and_escaping_files(
    workspace: Workspace, tree: Path, context: ToolContext
) -> None:
    spec = file_search_tool(workspace, CFG)
    assert "no matches" in await call(spec, {"pattern": "API_TOKEN"}, context)
    assert "no matches" in await call(spec, {"pattern": "outside secret"}, context)


async def test_search_is_capped_and_bad_regex_fails(
    workspace: Workspace, tree: Path, context: ToolContext
) -> None:
    spec = file_search_tool(workspace, FileToolsConfig(max_search_results=3))
    lines = (await call(spec, {"pattern": "line"}, context)).splitlines()
    assert len(lines) == 4 and lines[-1].startswith("[stopped after 3 matches")
    with pytest.raises(ToolFailed, match="invalid regex"):
        await call(spec, {"pattern": "(", "regex": True}, context)


async def test_write_creates_parents_and_overwrites(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    spec = file_write_tool(workspace, CFG)
    first = await call(spec, {"path": "a/b/c.txt", "content": "one\n"}, context)
    assert first == "created a/b/c.txt (4 bytes)"
    (workspace_dir / "a/b/c.txt").chmod(0o600)
    second = await call(spec, {"path": "a/b/c.txt", "content": "two\n"}, context)
    assert second == "overwrote a/b/c.txt (4 bytes)"
    assert (workspace_dir / "a/b/c.txt").read_text() == "two\n"
    assert (workspace_dir / "a/b/c.txt").stat().st_mode & 0o777 == 0o600
    assert sorted(os.listdir(workspace_dir / "a/b")) == ["c.txt"]  # no temporary left


async def test_write_size_cap(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    spec = file_write_tool(workspace, FileToolsConfig(max_write_bytes=1000))
    with pytest.raises(ToolFailed, match="limit is 1000"):
        await call(spec, {"path": "big.txt", "content": "x" * 1001}, context)
    assert not (workspace_dir / "big.txt").exists()


async def test_edit_replaces_exactly_one_match(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    (workspace_dir / "cfg.ini").write_text("a = 1\r\nb = 2\r\n")
    spec = file_edit_tool(workspace, CFG)
    text = await call(spec, {"path": "cfg.ini", "old_text": "b = 2", "new_text": "b = 3"}, context)
    assert text == "replaced 1 occurrence in cfg.ini"
    assert (workspace_dir / "cfg.ini").read_bytes() == b"a = 1\r\nb = 3\r\n"


@pytest.mark.parametrize(
    ("old_text", "message"),
    [("absent", "was not found"), ("x = 1", "occurs 2 times")],
)
async def test_edit_refuses_zero_or_ambiguous_matches(
    workspace: Workspace, workspace_dir: Path, context: ToolContext, old_text: str, message: str
) -> None:
    (workspace_dir / "dup.py").write_text("x = 1\nx = 1\n")
    spec = file_edit_tool(workspace, CFG)
    with pytest.raises(ToolFailed, match=message):
        await call(spec, {"path": "dup.py", "old_text": old_text, "new_text": "y"}, context)
    assert (workspace_dir / "dup.py").read_text() == "x = 1\nx = 1\n"


async def test_edit_replace_all(
    workspace: Workspace, workspace_dir: Path, context: ToolContext
) -> None:
    (workspace_dir / "dup.py").write_text("x = 1\nx = 1\n")
    spec = file_edit_tool(workspace, CFG)
    arguments = {"path": "dup.py", "old_text": "x = 1", "new_text": "y = 2", "replace_all": True}
    assert await call(spec, arguments, context) == "replaced 2 occurrences in dup.py"
    assert (workspace_dir / "dup.py").read_text() == "y = 2\ny = 2\n"


async def test_context_workspace_takes_over(
    workspace: Workspace, tmp_path: Path, context: ToolContext
) -> None:
    other = tmp_path / "per-session"
    other.mkdir()
    (other / "here.txt").write_text("per session\n")
    from tests.tools.builtin.conftest import make_context

    text = await call(
        file_read_tool(workspace, CFG), {"path": "here.txt"}, make_context(workspace=str(other))
    )
    assert "per session" in text


async def test_unknown_argument_is_a_failed_call(
    workspace: Workspace, context: ToolContext
) -> None:
    with pytest.raises(ToolFailed, match="invalid arguments: mode"):
        await call(file_read_tool(workspace, CFG), {"path": "x", "mode": "w"}, context)
