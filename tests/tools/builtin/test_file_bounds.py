"""File tools on hostile workspaces: a file of one enormous line, symlink loops, broken
links, pipes and sockets, folders of too many entries. Each call reads a bounded number of
bytes and entries, says what it left out, never fails for the whole folder because of one
odd entry, and never shows the daemon's absolute paths."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from bot.config import FileToolsConfig
from bot.tools.builtin import file_reading
from bot.tools.builtin.file_reading import file_list_tool, file_read_tool, file_search_tool
from bot.tools.builtin.file_writing import file_edit_tool, file_write_tool
from bot.tools.builtin.observation import ToolFailed
from bot.tools.builtin.workspace import Workspace
from bot.tools.spec import ToolContext, ToolOutput, ToolSpec

CFG = FileToolsConfig(max_read_bytes=1000, max_output_chars=100_000)


async def call(spec: ToolSpec, arguments: Mapping[str, object], context: ToolContext) -> str:
    assert spec.handler is not None
    result = await spec.handler(arguments, context)
    return result.text if isinstance(result, ToolOutput) else result


@pytest.fixture
def odd(workspace_dir: Path) -> Iterator[Path]:
    """A workspace with one plain file and every kind of odd entry next to it."""
    (workspace_dir / "notes.txt").write_text("needle here\nnothing\n")
    (workspace_dir / "sub").mkdir()
    (workspace_dir / "sub" / "more.txt").write_text("another needle\n")
    (workspace_dir / "loop").symlink_to(workspace_dir / "loop")
    (workspace_dir / "ping").symlink_to(workspace_dir / "pong")
    (workspace_dir / "pong").symlink_to(workspace_dir / "ping")
    (workspace_dir / "sub" / "up").symlink_to(workspace_dir, target_is_directory=True)
    (workspace_dir / "broken").symlink_to(workspace_dir / "gone.txt")
    os.mkfifo(workspace_dir / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(workspace_dir / "sock"))
    yield workspace_dir
    server.close()


async def test_a_line_longer_than_a_read_is_shown_cut_and_said_so(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    # 3 MB with no line break (a command's output, say): the first 1,000 bytes, said so
    (workspace_dir / "dump.txt").write_bytes(b"a" * 3_000_000)
    text = await call(file_read_tool(workspace, CFG), {"path": "dump.txt"}, context)
    header, body = text.split("\n", 1)
    assert header == (
        "[dump.txt: line 1 of 1, only its first 1,000 of 3,000,000 bytes (one read returns at "
        "most 1,000; the rest of this line cannot be shown by file_read)]"
    )
    assert body == "a" * 1000


async def test_lines_after_a_long_one_are_counted_and_offered(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    lines = ["short\n", "é" * 2000 + "\n", *(f"line {n}\n" for n in range(3, 100_001))]
    (workspace_dir / "mixed.txt").write_text("".join(lines))
    spec = file_read_tool(workspace, CFG)
    first = await call(spec, {"path": "mixed.txt"}, context)
    assert first == (
        "[mixed.txt: lines 1-1 of 100,000] [output capped at 1,000 bytes; read further with "
        "start_line=2]\nshort\n"
    )
    second = await call(spec, {"path": "mixed.txt", "start_line": 2}, context)
    header, body = second.split("\n", 1)
    assert header == (
        "[mixed.txt: line 2 of 100,000, only its first 1,000 of 4,001 bytes (one read returns "
        "at most 1,000; the rest of this line cannot be shown by file_read); read further with "
        "start_line=3]"
    )
    assert body == "é" * 500  # cut between characters, never inside one
    third = await call(spec, {"path": "mixed.txt", "start_line": 99_999}, context)
    assert third == "[mixed.txt: lines 99999-100000 of 100,000]\nline 99999\nline 100000\n"


async def test_listing_shows_odd_entries_as_what_they_are(
    odd: Path, workspace: Workspace, context: ToolContext
) -> None:
    text = await call(file_list_tool(workspace, CFG), {"path": "."}, context)
    assert text.splitlines() == [
        "broken  (broken link)",
        "loop  (symlink loop)",
        "notes.txt  (20 B)",
        "ping  (symlink loop)",
        "pipe  (named pipe)",
        "pong  (symlink loop)",
        "sock  (socket)",
        "sub/",
        "sub/more.txt  (15 B)",
        "sub/up/",
    ]


async def test_search_passes_over_odd_entries_and_finds_the_rest(
    odd: Path, workspace: Workspace, context: ToolContext
) -> None:
    text = await call(file_search_tool(workspace, CFG), {"pattern": "needle"}, context)
    assert text.splitlines() == ["notes.txt:1: needle here", "sub/more.txt:1: another needle"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("loop", "loop is a symlink loop (it leads back to itself)"),
        ("ping", "ping is a symlink loop (it leads back to itself)"),
        ("pipe", "pipe is not a regular file (a pipe, socket or device)"),
        ("sock", "sock is not a regular file (a pipe, socket or device)"),
        ("broken", "broken does not exist"),
    ],
)
async def test_reading_an_odd_entry_fails_without_the_daemons_paths(
    odd: Path, workspace: Workspace, context: ToolContext, path: str, message: str
) -> None:
    # a pipe is not opened for reading: that would wait for a writer for ever
    with pytest.raises(ToolFailed) as failed:
        await call(file_read_tool(workspace, CFG), {"path": path}, context)
    assert str(failed.value) == message
    assert str(odd) not in str(failed.value)


async def test_walks_stop_at_their_entry_limit_and_say_so(
    workspace_dir: Path, workspace: Workspace, context: ToolContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_reading, "WALK_MAX_ENTRIES", 50)
    for n in range(200):
        (workspace_dir / f"f{n:03}.txt").write_text("needle\n")
    listed = await call(file_list_tool(workspace, CFG), {"path": "."}, context)
    assert len(listed.splitlines()) == 51
    assert listed.endswith("[the listing stopped after 50 entries; list a folder further down]")
    found = await call(file_search_tool(workspace, CFG), {"pattern": "needle"}, context)
    assert len(found.splitlines()) == 51
    assert found.endswith("[only the first 50 entries were searched; search a folder further down]")


async def test_search_reads_long_lines_in_their_beginning_and_says_what_it_skipped(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    (workspace_dir / "long.txt").write_bytes(b"needle" + b"x" * 5_000_000 + b" needle\nneedle 2\n")
    (workspace_dir / "huge.txt").write_bytes(b"needle\n" * 2_000_000)  # over 10 MB
    text = await call(file_search_tool(workspace, CFG), {"pattern": "needle"}, context)
    lines = text.splitlines()
    assert lines[0] == "long.txt:1: needle" + "x" * 294
    assert lines[1:] == ["long.txt:2: needle 2", "[1 files over 10 MB not searched]"]


async def test_a_refused_write_names_no_daemon_path(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    # a file where the folder should be: the disk refuses, the model reads why, not where
    (workspace_dir / "reports").write_text("a file, not a folder")
    with pytest.raises(ToolFailed) as failed:
        await call(
            file_write_tool(workspace, CFG), {"path": "reports/q1.txt", "content": "x"}, context
        )
    assert str(failed.value) == "reports/q1.txt could not be written: File exists"
    assert str(workspace_dir) not in str(failed.value)


async def test_a_file_too_large_to_edit_is_refused_by_its_size(
    workspace_dir: Path, workspace: Workspace, context: ToolContext
) -> None:
    (workspace_dir / "big.log").write_bytes(b"needle\n" * 1_000)
    with pytest.raises(ToolFailed, match=r"big\.log is 7000 bytes; too large to edit"):
        await call(
            file_edit_tool(workspace, FileToolsConfig(max_write_bytes=1000)),
            {"path": "big.log", "old_text": "needle", "new_text": "pin", "replace_all": True},
            context,
        )
