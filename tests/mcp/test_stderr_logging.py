"""A stdio MCP server's stderr is logged as data: one ``mcp_server_stderr`` event per line,
the line cleaned of escape sequences and control characters, secrets masked, floods
rate-limited. The end-to-end case runs ``hatchway run`` with a real server printing forged
log events, and reads the daemon's JSON log."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from bot.mcp.server_stderr import LINE_CHARS, StderrLog, plain_line
from tests.fakes.openai_server import OpenAIFake
from tests.mcp import noisy_server
from tests.ops.conftest import write_config
from tests.ops.daemon_process import USER, DaemonProcess, start_daemon

NOISY = Path(__file__).with_name("noisy_server.py")
TOKEN = "noisy-handed-value-7Q2x9LkP"
FLOOD = 300


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"plain text", "plain text"),
        (b"\x1b[31;1mred\x1b[0m and \x1b[2Jcleared", "red and cleared"),
        (b"\x1b]0;window title\x07after the title", "after the title"),
        (b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "link"),
        (b"nul\x00here\x07bell", "nulherebell"),
        ("bidi \u202eevil\u200b zero\u2800width".encode(), "bidi evil zerowidth"),
        (b"tab\there\r", "tab here"),
        (b"bad \xff utf-8", "bad \ufffd utf-8"),
        (b"\x1b[0m   \t", ""),
    ],
)
def test_a_line_is_made_plain(raw: bytes, expected: str) -> None:
    assert plain_line(raw) == expected


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def events() -> Iterator[list[dict[str, Any]]]:
    with capture_logs() as logs:
        yield logs


def test_a_flood_is_cut_to_a_few_lines_per_window_and_counted(
    events: list[dict[str, Any]],
) -> None:
    clock = Clock()
    stderr = StderrLog("noisy", lines_per_window=5, window_s=1.0, clock=clock)
    for i in range(50):
        stderr.line(f"line {i}".encode())
    clock.now += 1.5
    stderr.line(b"after the flood")
    stderr.line(b"")  # blank lines are not logged, nor counted
    stderr.flush()

    assert [(e["event"], e.get("line"), e.get("lines")) for e in events] == [
        *[("mcp_server_stderr", f"line {i}", None) for i in range(5)],
        ("mcp_server_stderr_suppressed", None, 45),
        ("mcp_server_stderr", "after the flood", None),
    ]
    assert all(e["server"] == "noisy" for e in events)


def test_a_long_line_is_cut_and_marked(events: list[dict[str, Any]]) -> None:
    StderrLog("noisy").line(b"x" * (LINE_CHARS + 10))
    StderrLog("noisy").line(b"head of a line the reader cut", cut=True)
    assert [(len(e["line"]), e.get("cut")) for e in events] == [(LINE_CHARS, True), (29, True)]


@pytest.mark.slow
async def test_the_daemon_logs_a_servers_stderr_as_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NOISY_TEST_TOKEN", TOKEN)
    server = f'["{sys.executable}", "{NOISY}", "--flood", "{FLOOD}"]'
    mcp = f"""
[mcp.servers.noisy]
command = {server}
env_from = {{ NOISY_TOKEN = "NOISY_TEST_TOKEN" }}
"""
    async with OpenAIFake(model="gpt-4o-mini") as llm:
        config = write_config(
            tmp_path / "hatchway.toml",
            llm_url=llm.base_url,
            allowed_users=[USER],
            server=False,
            extra=mcp,
        )
        async with start_daemon(config) as daemon:
            await daemon.wait_event("mcp_server_ready")
            printed = len(noisy_server.LINES) + 1 + FLOOD  # and the invalid UTF-8 line
            await daemon.wait_until(
                lambda: logged(daemon) + suppressed(daemon) == printed,
                f"{printed} stderr lines logged or counted",
            )
            events = list(daemon.events)

    lines = [e["line"] for e in events if e.get("event") == "mcp_server_stderr"]
    assert all(e["server"] == "noisy" for e in events if e.get("event") == "mcp_server_stderr")
    # each line is one field of one event: the forged event is text, not an event
    assert lines[:6] == [
        noisy_server.FORGED,
        "red alert done",
        "nulhere evil tabbed",
        "I was given ***",
        "L" * LINE_CHARS,
        "bad \ufffd\ufffd utf-8",
    ]
    assert not [e for e in events if e.get("event") == "approval_decided"]
    assert not [e for e in events if e.get("event") == "raw"]  # nothing bypassed the log
    assert TOKEN not in str(events)
    long_line = next(e for e in events if e.get("line", "").startswith("LLL"))
    assert long_line["cut"] is True
    # the flood: most of it counted, not logged
    assert suppressed(daemon) > 0
    assert logged(daemon) < printed


def logged(daemon: DaemonProcess) -> int:
    return sum(1 for e in daemon.events if e.get("event") == "mcp_server_stderr")


def suppressed(daemon: DaemonProcess) -> int:
    return sum(
        int(e["lines"]) for e in daemon.events if e.get("event") == "mcp_server_stderr_suppressed"
    )
