"""``shell`` under real bubblewrap, each check beside the same command without the sandbox
(``sandbox = "none"``, which behaves as before the sandbox existed): the daemon's files,
another conversation's folder, the daemon's processes, a ``setsid`` escape, the read-only
filesystem, the allow-listed environment, timeouts, cancellation and output caps.

Everything lives under ``/var/tmp`` (see :mod:`tests.tools.builtin.sandbox_rig`), and the
suite runs as root in CI: without the sandbox every one of these files is readable.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.tools.builtin.observation import ToolFailed
from tests.tools.builtin.conftest import make_context
from tests.tools.builtin.sandbox_rig import (
    CONFIG_SECRET,
    DB_SECRET,
    ENV_SECRET,
    PYTHON,
    DaemonLayout,
    host_processes,
    needs_bwrap,
    run,
    scratch_folder,
    shell_in,
)

pytestmark = needs_bwrap
MODES = ["bwrap", "none"]
USR = Path("/usr")
HOST_TMP = Path("/tmp")
SECRETS = (DB_SECRET, ENV_SECRET, CONFIG_SECRET)


@pytest.fixture
def layout() -> Iterator[DaemonLayout]:
    with scratch_folder() as base:
        yield DaemonLayout.create(base)


@pytest.fixture
def outside_db_layout() -> Iterator[DaemonLayout]:
    """The database outside the state directory (``storage.path`` absolute elsewhere)."""
    with scratch_folder() as base:
        yield DaemonLayout.create(base, database=base / "db" / "hatchway.db")


def unique_sleep() -> str:
    """A ``sleep`` duration no other process on the host has in its command line."""
    return f"1000.{secrets.randbelow(10**9)}"


@pytest.mark.parametrize("sandbox", MODES)
async def test_database_config_and_env_file_are_hidden(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox)
    command = (
        f"cat {layout.database} {layout.config_file} {layout.env_file}; "
        f"ls -a {layout.state} {layout.env_file.parent}"
    )
    text = await run(spec, command, make_context())
    seen = [secret for secret in SECRETS if secret in text]
    if sandbox == "bwrap":
        assert seen == []
        assert "hatchway.db" not in text.replace(str(layout.database), "")
        assert "hatchway.env" not in text.replace(str(layout.env_file), "")
    else:
        assert seen == list(SECRETS)


@pytest.mark.parametrize("sandbox", MODES)
async def test_database_outside_the_state_directory_is_hidden(
    outside_db_layout: DaemonLayout, sandbox: str
) -> None:
    layout = outside_db_layout
    assert not layout.database.is_relative_to(layout.state)
    spec = shell_in(layout, sandbox=sandbox)
    text = await run(spec, f"cat {layout.database}", make_context())
    assert (DB_SECRET in text) is (sandbox == "none")


@pytest.mark.parametrize("sandbox", MODES)
async def test_another_conversation_folder_is_invisible(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox)
    alice = make_context(conversation="C-ALICE")
    bob = make_context(conversation="C-BOB")
    first = await run(spec, "echo ALICE-NOTES > notes.txt; pwd", alice)
    alice_folder = Path(first.splitlines()[1])
    assert (alice_folder / "notes.txt").read_text() == "ALICE-NOTES\n"
    read = await run(spec, f"cat {alice_folder}/notes.txt", bob)
    listing = await run(spec, f"ls -R {layout.workspace_root}", bob)
    if sandbox == "bwrap":
        assert "ALICE-NOTES" not in read and "No such file or directory" in read
        assert "C-ALICE" not in listing and "C-BOB" in listing
    else:
        assert "ALICE-NOTES" in read and "C-ALICE" in listing


@pytest.mark.parametrize("sandbox", MODES)
async def test_the_daemon_processes_are_invisible(layout: DaemonLayout, sandbox: str) -> None:
    spec = shell_in(layout, sandbox=sandbox)
    text = await run(spec, f"test -d /proc/{os.getpid()} && echo DAEMON-VISIBLE", make_context())
    assert ("DAEMON-VISIBLE" in text) is (sandbox == "none")


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_setsid_process_does_not_survive_the_call(
    layout: DaemonLayout, sandbox: str
) -> None:
    """The escapee writes its pid file only once it left the group, so the call cannot end
    before the escape happened."""
    spec = shell_in(layout, sandbox=sandbox)
    duration = unique_sleep()
    command = (
        f"setsid sh -c 'echo $$ > escaped.pid; exec sleep {duration}' > /dev/null 2>&1 & "
        "while [ ! -s escaped.pid ]; do sleep 0.01; done; echo started"
    )
    text = await run(spec, command, make_context())
    assert text.splitlines()[:2] == ["exit code 0", "started"]
    left = host_processes(f"sleep {duration}")
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    if sandbox == "bwrap":
        assert left == []
    else:
        assert len(left) == 1  # the gap the sandbox closes


@needs_bwrap
async def test_only_the_workspace_and_a_private_tmp_are_writable(layout: DaemonLayout) -> None:
    """Only under the sandbox: without it, root would write where this command tries."""
    spec = shell_in(layout, sandbox="bwrap")
    name = f"hatchway-sandbox-{uuid.uuid4().hex}"
    command = (
        f"touch {layout.state.parent}/{name}; touch /usr/{name}; "
        f"echo kept > {name}; echo private > /tmp/{name}; cat /tmp/{name}"
    )
    context = make_context()
    text = await run(spec, command, context)
    assert text.count("Read-only file system") == 2
    assert "private" in text
    for folder in (layout.state.parent, USR, HOST_TMP):
        assert not (folder / name).exists()
    assert len(list(layout.workspace_root.rglob(name))) == 1
    again = await run(spec, f"cat /tmp/{name}", context)
    assert "No such file or directory" in again


@pytest.mark.parametrize("sandbox", MODES)
async def test_environment_is_allow_listed_in_both_modes(
    layout: DaemonLayout, sandbox: str
) -> None:
    environ = {
        "PATH": os.environ["PATH"],
        "LANG": "C.UTF-8",
        "SOME_RANDOM": "value-random",
        "HATCHWAY_STATE_DIR": str(layout.state),
        "PIP_INDEX_URL": "https://pypi.internal.example/simple",
    }
    spec = shell_in(layout, sandbox=sandbox, environ=environ, env_passthrough=["PIP_INDEX_URL"])
    text = await run(spec, "env", make_context())
    names = {line.split("=", 1)[0] for line in text.splitlines()[1:] if "=" in line}
    assert {"PATH", "LANG", "PIP_INDEX_URL", "PWD"} <= names
    assert "SOME_RANDOM" not in names and "HATCHWAY_STATE_DIR" not in names


@pytest.mark.parametrize("sandbox", MODES)
async def test_a_home_in_the_state_directory_moves_to_the_private_tmp(
    layout: DaemonLayout, sandbox: str
) -> None:
    """The shipped unit's HOME is the state directory, which the sandbox hides: a command
    gets the private /tmp instead, where caches and configs can be written."""
    environ = {"PATH": os.environ["PATH"], "HOME": str(layout.state)}
    spec = shell_in(layout, sandbox=sandbox, environ=environ)
    name = f"home-{uuid.uuid4().hex}"
    text = await run(spec, f'echo "$HOME"; touch "$HOME/{name}" && echo WROTE', make_context())
    home = "/tmp" if sandbox == "bwrap" else str(layout.state)
    assert text.splitlines()[1:] == [home, "WROTE"]
    assert (layout.state / name).exists() is (sandbox == "none")


async def test_timeout_ends_every_process_of_the_sandbox(layout: DaemonLayout) -> None:
    spec = shell_in(layout, sandbox="bwrap", timeout_s=1.0)
    duration = unique_sleep()
    command = f"sleep {duration} & setsid sleep {duration} & echo started; wait"
    with pytest.raises(ToolFailed, match="timed out after 1s") as caught:
        await run(spec, command, make_context())
    assert "started" in str(caught.value)
    assert host_processes(f"sleep {duration}") == []


async def test_cancellation_ends_every_process_of_the_sandbox(layout: DaemonLayout) -> None:
    spec = shell_in(layout, sandbox="bwrap")
    duration = unique_sleep()
    task = asyncio.create_task(
        run(spec, f"setsid sleep {duration} & sleep {duration}; wait", make_context())
    )
    async with asyncio.timeout(30):
        while len(host_processes(f"sleep {duration}")) < 2:  # noqa: ASYNC110 (host state)
            await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert host_processes(f"sleep {duration}") == []


async def test_output_is_bounded_while_read_in_the_sandbox(layout: DaemonLayout) -> None:
    spec = shell_in(layout, sandbox="bwrap", max_output_chars=1000)
    command = "echo FIRST; yes filler | head -c 20000000; echo; echo LAST"
    text = await run(spec, command, make_context())
    assert text.startswith("exit code 0") and "FIRST" in text and "LAST" in text
    assert "bytes of output omitted" in text and len(text) < 1500


async def test_exit_status_and_stderr_come_through(layout: DaemonLayout) -> None:
    spec = shell_in(layout, sandbox="bwrap")
    text = await run(
        spec,
        f"{PYTHON} -c 'import sys; sys.exit(7)'; echo oops >&2; exit 3",
        make_context(),
    )
    assert text.splitlines() == ["exit code 3", "oops"]
