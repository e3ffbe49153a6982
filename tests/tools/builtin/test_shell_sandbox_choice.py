"""Which sandbox ``shell`` gets: ``tools.shell.sandbox`` against a bubblewrap that works, is
missing, or is refused by the kernel (a stand-in program that fails the way bubblewrap does
without user namespaces); what the daemon, its log and ``hatchway doctor`` say about it."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import structlog
from pydantic import ValidationError

from bot.app import App
from bot.commands.doctor.sandbox import sandbox_check
from bot.config import ShellToolConfig, ToolsConfig
from bot.errors import ConfigError
from bot.tools.builtin.sandbox_probe import bwrap_status, probe_ahead
from bot.tools.builtin.shell import shell_tool
from bot.tools.builtin.workspace import Workspace
from tests.fakes.openai_server import OpenAIFake
from tests.test_console import Terminal, settings_for
from tests.tools.builtin.conftest import make_context
from tests.tools.builtin.sandbox_rig import (
    DB_SECRET,
    DaemonLayout,
    needs_bwrap,
    run,
    scratch_folder,
)

REFUSED = "bwrap: setting up uid map: Permission denied"


@pytest.fixture
def refused_bwrap(tmp_path: Path) -> Path:
    """A ``bwrap`` that fails as bubblewrap does where user namespaces are not allowed."""
    folder = tmp_path / "bin"
    folder.mkdir()
    program = folder / "bwrap"
    program.write_text(f"#!/bin/sh\necho '{REFUSED}' >&2\nexit 1\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def layout() -> Iterator[DaemonLayout]:
    with scratch_folder() as base:
        yield DaemonLayout.create(base)


def build(layout: DaemonLayout, bwrap: str, **cfg: object) -> None:
    shell_tool(
        Workspace(root=layout.workspace_root),
        ShellToolConfig.model_validate(cfg),
        confinement=layout.confinement(),
        bwrap=bwrap,
    )


@pytest.mark.parametrize("missing", [False, True])
def test_required_bwrap_that_cannot_run_is_a_config_error(
    layout: DaemonLayout, refused_bwrap: Path, missing: bool
) -> None:
    program = "hatchway-test-no-such-bwrap" if missing else str(refused_bwrap)
    with pytest.raises(ConfigError) as caught:
        build(layout, program, sandbox="bwrap")
    message = str(caught.value)
    assert "not installed" in message if missing else REFUSED in message
    assert "apt-get install bubblewrap" in message
    assert 'tools.shell.sandbox = "none"' in message


async def test_auto_without_bwrap_warns_and_runs_as_before(
    layout: DaemonLayout, refused_bwrap: Path
) -> None:
    with structlog.testing.capture_logs() as logs:
        spec = shell_tool(
            Workspace(root=layout.workspace_root),
            ShellToolConfig(),
            confinement=layout.confinement(),
            bwrap=str(refused_bwrap),
        )
    (warning,) = [entry for entry in logs if entry["event"] == "shell_sandbox_unavailable"]
    assert warning["log_level"] == "warning"
    assert REFUSED in warning["problem"] and "apt-get install bubblewrap" in warning["fix"]
    assert "sandbox" not in spec.description
    text = await run(spec, f"cat {layout.database}", make_context())
    assert DB_SECRET in text


@pytest.fixture
async def fake() -> AsyncIterator[OpenAIFake]:
    async with OpenAIFake() as server:
        yield server


async def test_daemon_does_not_start_when_the_required_sandbox_cannot_run(
    fake: OpenAIFake, tmp_path: Path, refused_bwrap: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCHWAY_TEST_OPENAI_KEY", "sk-test-not-a-real-key-000")
    monkeypatch.setenv("PATH", f"{refused_bwrap.parent}:{os.environ['PATH']}")
    settings = settings_for(fake, tmp_path)
    settings = settings.model_copy(
        update={"tools": ToolsConfig.model_validate({"shell": {"sandbox": "bwrap"}})}
    )
    terminal = Terminal()
    try:
        with pytest.raises(ConfigError, match=r"tools\.shell\.sandbox = \"bwrap\""):
            async with App(settings, channels={"console.main": terminal.channel}):
                pass
    finally:
        terminal.close()
        terminal.channel_input.close()


@pytest.mark.parametrize(
    ("sandbox", "ok", "warning", "says"),
    [
        ("auto", True, True, "apt-get install bubblewrap"),
        ("bwrap", False, False, "apt-get install bubblewrap"),
        ("none", True, False, ""),
    ],
)
def test_doctor_without_bwrap(
    refused_bwrap: Path, sandbox: str, ok: bool, warning: bool, says: str
) -> None:
    cfg = ShellToolConfig.model_validate({"sandbox": sandbox})
    result = sandbox_check(cfg, bwrap=str(refused_bwrap))
    assert (result.ok, result.warning) == (ok, warning)
    rendered = result.render()
    assert says in rendered
    if sandbox != "none":
        assert REFUSED in rendered and 'tools.shell.sandbox = "none"' in rendered


@pytest.mark.parametrize(
    ("installed", "says"),
    [(True, "--security-opt unmask=/proc/*"), (False, "apt-get install bubblewrap")],
)
def test_doctor_in_a_container_names_the_option_bubblewrap_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, installed: bool, says: str
) -> None:
    """Installed in a container that masks /proc: the package is there, the option is what
    is missing (tests/artifact runs the image with and without it)."""
    monkeypatch.setenv("container", "podman")
    program = tmp_path / "bwrap"
    program.write_text(
        '#!/bin/sh\necho "bwrap: Can\'t mount proc on /newroot/proc: Operation not permitted" >&2\n'
        "exit 1\n"
    )
    program.chmod(0o755)
    bwrap = str(program) if installed else "hatchway-test-no-such-bwrap"
    result = sandbox_check(ShellToolConfig.model_validate({"sandbox": "auto"}), bwrap=bwrap)
    assert result.warning
    assert says in result.render()


@needs_bwrap
def test_doctor_with_bwrap() -> None:
    result = sandbox_check(ShellToolConfig.model_validate({"sandbox": "bwrap", "max_processes": 0}))
    assert result.ok and not result.warning
    assert result.detail.startswith("bubblewrap ") and result.detail.endswith(" works")


@pytest.mark.parametrize("entry", ["relative/path", "/", "//"])
def test_hidden_paths_must_be_absolute_and_not_the_root(entry: str) -> None:
    with pytest.raises(ValidationError, match=r"hidden_paths\[0\]"):
        ShellToolConfig.model_validate({"hidden_paths": [entry]})


def test_a_probe_started_ahead_is_the_one_the_shell_gets(tmp_path: Path) -> None:
    """``hatchway chat`` starts the probe before the app (``probe_ahead``): building
    ``shell`` then waits for that probe's answer instead of running bubblewrap again, and
    ``sandbox = "none"`` starts nothing."""
    runs = tmp_path / "runs"
    program = tmp_path / "bwrap"
    program.write_text(f"#!/bin/sh\necho \"$1\" >> '{runs}'\necho '{REFUSED}' >&2\nexit 1\n")
    program.chmod(0o755)
    probe_ahead(ShellToolConfig(sandbox="none"), bwrap=str(program))
    probe_ahead(ShellToolConfig(enabled=False), bwrap=str(program))
    assert not runs.exists()

    probe_ahead(ShellToolConfig(), bwrap=str(program))
    status = bwrap_status(str(program))  # waits for the probe started ahead
    assert REFUSED in status.problem
    assert bwrap_status(str(program)) is status
    lines = runs.read_text().splitlines()
    assert len(lines) == 2 and lines[1] == "--version"  # one probe: the sandbox, the version
